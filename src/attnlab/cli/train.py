"""``attnlab train``: train the tiny GPT into a run folder."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    p = sub.add_parser("train", help="train the tiny GPT / 训练模型")
    common.add_corpus(p)
    common.add_set(p)
    common.add_out(p, "runs/default", "run folder (default runs/default)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume", action="store_true", help="continue the run in OUT from OUT/ckpt.pt (a larger max_steps extends it)"
    )
    mode.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run in OUT (its files are replaced once the first step succeeds)",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="attach the AttentionDebugger (warnings on entropy, logit scale, Jacobian, NaN)",
    )
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write TensorBoard event files to OUT (needs the tensorboard extra)",
    )
    return p


def probe_lines(cfg, text: str) -> None:
    """Say what a reader's --set probe=... becomes: converted to traditional, <unk>, cropped."""
    from ..chinese import converted_line, prepare, unknown_line
    from ..tokenizer import CharTokenizer

    prep = prepare(cfg.probe, CharTokenizer(text, cfg.vocab_size).stoi)
    lines = [converted_line(prep), unknown_line(prep)]
    if len(prep.converted) > cfg.block_size:
        lines.append(
            f"探针只取前 {cfg.block_size} 个字（block_size）/ the probe is cropped to its first "
            f"{cfg.block_size} characters (block_size)"
        )
    for line in filter(None, lines):
        print(f"attnlab: probe: {line}")


def main(args) -> int:
    from ..config import Config
    from ..corpus import load_corpus
    from ..runfolder import holds_run
    from ..train import train

    cfg = Config.from_overrides(args.overrides)
    text = load_corpus(args.corpus, min_chars=cfg.block_size + 1)
    if any(o.split("=", 1)[0].strip() == "probe" for o in args.overrides or []):
        probe_lines(cfg, text)
    if args.overwrite and holds_run(args.out):
        print(f"attnlab: --overwrite: the run in {args.out} will be replaced once the first step succeeds")
    if args.resume and holds_run(args.out) and not (Path(args.out) / "ckpt.pt").is_file():
        print(
            f"attnlab: --resume: {args.out} has no checkpoint yet; the run starts again from step 0 "
            "(its seed repeats the same steps)"
        )
    callbacks = []
    if args.debug:
        from ..experiments.debugger import AttentionDebugger

        callbacks.append(AttentionDebugger(print_fn=print))
    model, tok, history = train(
        text,
        cfg,
        out_dir=args.out,
        resume=args.resume,
        overwrite=args.overwrite,
        extend=args.resume,
        progress=not args.no_progress,
        callbacks=callbacks,
        tensorboard=args.tensorboard,
    )
    recs = history.records
    val = history.val
    print(
        f"steps {len(recs)}  loss {recs[0]['loss']:.3f} -> {recs[-1]['loss']:.3f}"
        + (f"  val {val[-1][1]:.3f}" if val else "")
        + (f"  DIVERGED at step {history.diverged_at}" if history.diverged_at is not None else "")
    )
    print(f"results: {args.out}/metrics.jsonl, {args.out}/summary.json, checkpoint {args.out}/ckpt.pt")
    return 0
