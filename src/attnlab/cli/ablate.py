"""``attnlab ablate``: the ablation checklist of §1.13.4, one design element off at a time."""

from __future__ import annotations

from pathlib import Path

from ..config import ABLATIONS
from . import common


def add_parser(sub):
    p = sub.add_parser(
        "ablate",
        help="§1.13.4 的消融清单：一次去掉一个设计要素 / the ablation checklist of §1.13.4",
        description="基线和一次只改一个要素的变体（不缩放、无残差连接、无 LayerNorm、不共享权重、无位置编码、"
        "无 warmup、无梯度裁剪），同一种子与批次；报告验证损失的变化与是否发散。"
        "\nBaseline and one-variable changes (no scaling, no residual, no LayerNorm, untied weights, no "
        "positions, no warmup, no clipping), same seed and batches; Δ validation loss and divergence.",
    )
    common.add_corpus(p)
    common.add_set(p)
    p.add_argument(
        "--steps",
        type=common.positive_steps,
        default=None,
        metavar="N",
        help="每次运行的训练步数（默认：max_steps）/ training steps per run (default max_steps)",
    )
    p.add_argument(
        "--only",
        default=None,
        help=f"逗号分隔的子集（默认：全部）/ comma-separated subset (default: all) of: {', '.join(ABLATIONS)}",
    )
    common.add_executor(p)
    common.add_runs(p)
    common.add_out(p, "runs/ablate/ablate.json", "结果 JSON / result JSON")
    return p


def main(args) -> int:
    from ..config import Config
    from ..corpus import load_corpus
    from ..io import check_output_file, check_writable, write_json
    from ..lab.ablation import checklist_table, run

    cfg = Config.from_overrides(args.overrides)
    common.check_trainable(cfg)
    out = Path(args.out)
    check_output_file(out)  # before the training, not after it
    if args.runs:
        check_writable(Path(args.runs), "--runs")
    text = load_corpus(args.corpus, min_chars=cfg.block_size + 1)
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    result = run(
        text,
        cfg,
        steps=args.steps,
        changes=only,
        corpus=args.corpus,
        root=args.runs,
        options=common.executor_options(args, progress=False),
    )
    write_json(out, result)
    print(
        f"一次只改一个要素，同一种子与批次 / one change at a time, same seed and batches "
        f"({result['config']['max_steps']} steps)"
    )
    print(checklist_table(result))
    print(f"结果 / result: {out}")
    return 0
