"""``attnlab train``: train the tiny GPT into a run folder."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "train",
        help="训练小 GPT，写入运行文件夹 / train the tiny GPT into a run folder",
        description="训练本章的小 GPT（默认：缩放的注意力、唐诗语料），把指标、摘要和检查点写进 --out 运行文件夹。"
        "\nTrain the chapter's tiny GPT (by default scaled attention on the Tang-poem corpus) and write its "
        "metrics, summary and checkpoint into the --out run folder.",
    )
    common.add_corpus(p)
    common.add_set(p)
    common.add_out(p, "runs/default", "运行文件夹 / run folder")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume",
        action="store_true",
        help="从 OUT/ckpt.pt 接着训练 OUT 里的运行（更大的 max_steps 会延长它）"
        " / continue the run in OUT from OUT/ckpt.pt (a larger max_steps extends it)",
    )
    mode.add_argument(
        "--overwrite",
        action="store_true",
        help="替换 OUT 里的运行（第一步成功后才替换其文件）"
        " / replace the run in OUT (its files are replaced once the first step succeeds)",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="挂上 AttentionDebugger：权重熵、logit 尺度、雅可比范数异常或出现 NaN 时警告"
        " / attach the AttentionDebugger: warnings on weight entropy, logit scale, Jacobian norm, NaN",
    )
    p.add_argument("--no-progress", action="store_true", help="不显示进度条 / no progress bar")
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="同时把 TensorBoard 事件文件写进 OUT（需要 tensorboard 扩展）"
        " / also write TensorBoard event files to OUT (needs the tensorboard extra)",
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
        from ..lab.debugger import AttentionDebugger

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
