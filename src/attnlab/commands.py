"""The foundation's subcommands: train, generate, info, corpus-stats, build-corpus."""
from __future__ import annotations

import argparse
import json
from collections import OrderedDict
from pathlib import Path

from .config import Config
from .corpus import DEFAULT_CORPUS, corpus_stats, load_corpus, write_tang_corpus


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="train the tiny GPT / 训练模型")
    _corpus_arg(p)
    _set_arg(p)
    p.add_argument("--out", default="runs/default", help="output directory (default runs/default)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt")
    p.add_argument("--debug", action="store_true",
                   help="attach the AttentionDebugger (warnings on entropy, logit scale, Jacobian, NaN)")
    p.add_argument("--tensorboard", action="store_true",
                   help="also write TensorBoard event files to OUT (needs the tensorboard extra)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("generate", help="sample text from a checkpoint / 生成")
    p.add_argument("checkpoint")
    p.add_argument("--prompt", default="秦川雄帝宅")
    p.add_argument("--max-new-tokens", type=int, default=60)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("info", help="parameter table of a config / 参数账")
    _set_arg(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("corpus-stats", help="poems, characters, distinct characters, coverage")
    _corpus_arg(p)
    p.add_argument("--top", type=int, nargs="+", default=[1198],
                   help="coverage of the N most frequent characters (default 1198 = vocab 1200 - 2)")
    p.set_defaults(func=cmd_corpus_stats)

    p = sub.add_parser("build-corpus", help="build data/corpus.txt from the chinese-poetry JSON files")
    p.add_argument("--source", default="../shared/data/chinese-poetry")
    p.add_argument("--out", default=str(DEFAULT_CORPUS))
    p.set_defaults(func=cmd_build_corpus)


def _corpus_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", default=None, help=f"UTF-8 text file (default {DEFAULT_CORPUS.name} of the repo)")


def _set_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a Config field, e.g. --set scaled=false --set n_head=1")


def cmd_train(args) -> int:
    from .train import train

    cfg = Config.from_overrides(args.overrides)
    text = load_corpus(args.corpus, min_chars=cfg.block_size + 1)
    callbacks = []
    if args.debug:
        from .experiments.debugger import AttentionDebugger

        callbacks.append(AttentionDebugger(print_fn=print))
    model, tok, history = train(text, cfg, out_dir=args.out, resume=args.resume,
                                progress=not args.no_progress, callbacks=callbacks,
                                tensorboard=args.tensorboard)
    recs = history.records
    val = history.val
    print(f"steps {len(recs)}  loss {recs[0]['loss']:.3f} -> {recs[-1]['loss']:.3f}"
          + (f"  val {val[-1][1]:.3f}" if val else "")
          + (f"  DIVERGED at step {history.diverged_at}" if history.diverged_at is not None else ""))
    print(f"results: {args.out}/metrics.jsonl, {args.out}/summary.json, checkpoint {args.out}/ckpt.pt")
    return 0


def cmd_generate(args) -> int:
    from .checkpoint import load_checkpoint
    from .model import generate

    model, tok, _ = load_checkpoint(args.checkpoint)
    print(generate(model, tok, args.prompt, args.max_new_tokens, args.temperature, args.top_k, args.seed))
    return 0


def parameter_table(cfg: Config) -> "OrderedDict[str, int]":
    """Parameters per part, counted from the real model (shared weights once)."""
    from .model import TinyGPT

    model = TinyGPT(cfg)
    table: OrderedDict[str, int] = OrderedDict()
    table["token embedding (tied head)" if cfg.tie_weights else "token embedding"] = model.tok_emb.weight.numel()
    if not cfg.tie_weights:
        table["output head"] = model.head.weight.numel()
    table["positions"] = model.pos_emb.weight.numel() if cfg.pos == "learned" else 0
    for i, blk in enumerate(model.blocks):
        table[f"layer {i} attention"] = sum(p.numel() for p in blk.attn.parameters())
        table[f"layer {i} FFN"] = sum(p.numel() for p in blk.mlp.parameters())
        table[f"layer {i} norms"] = sum(p.numel() for p in blk.ln1.parameters()) + \
            sum(p.numel() for p in blk.ln2.parameters())
    table["final norm"] = sum(p.numel() for p in model.ln_f.parameters())
    table["total"] = model.num_params()
    return table


def cmd_info(args) -> int:
    cfg = Config.from_overrides(args.overrides)
    table = parameter_table(cfg)
    total = table["total"]
    print(f"d_model={cfg.d_model} n_head={cfg.n_head} d_head={cfg.d_head} n_layer={cfg.n_layer} "
          f"d_ff={cfg.d_ff} vocab={cfg.vocab_size} block={cfg.block_size} scaled={cfg.scaled}")
    print(f"{'部件 / part':<32}{'参数量 / params':>16}{'占比 / share':>14}")
    for name, n in table.items():
        print(f"{name:<32}{n:>16,}{n / total:>13.1%}")
    return 0


def cmd_corpus_stats(args) -> int:
    text = load_corpus(args.corpus)
    stats = corpus_stats(text, top=tuple(args.top))
    path = Path(args.corpus) if args.corpus else DEFAULT_CORPUS
    print(f"语料 / corpus: {path}")
    poems = _poem_count(path)
    if poems is not None:
        print(f"诗 / poems: {poems:,}")
    print(f"字符 / characters (incl. newlines): {stats['chars']:,}")
    print(f"行 / lines: {stats['lines']:,}")
    print(f"不同字符 / distinct characters (excl. newline): {stats['distinct']:,}")
    for k, c in stats["coverage"].items():
        print(f"前 {k} 个字的覆盖率 / coverage of the top {k}: {c:.1%}")
    return 0


def _poem_count(path: Path) -> int | None:
    """Poem counts are known for the shipped corpus (recorded at build time)."""
    meta = path.with_suffix(".json")
    if meta.is_file():
        try:
            return int(json.loads(meta.read_text(encoding="utf-8"))["poems"])
        except (ValueError, KeyError):
            return None
    return None


def cmd_build_corpus(args) -> int:
    from .io import write_json

    info = write_tang_corpus(args.source, args.out)
    write_json(Path(args.out).with_suffix(".json"),
               {"source": "chinese-poetry poet.tang.{0,1000,2000,3000}.json (MIT)", **info})
    print(f"wrote {info['path']}: {info['poems']} poems, {info['chars']:,} characters, "
          f"{info['distinct']:,} distinct")
    return 0
