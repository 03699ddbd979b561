"""``attnlab sweep``: train every point of a grid (x seeds), resumable."""

from __future__ import annotations

import sys

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "sweep",
        help="网格扫描，如临界头维度 / grid sweep, e.g. the critical head size",
        description="训练网格上的每个点（× 种子），本机或在 Ray 上；重跑时跳过已完成的试验、续跑中断的。"
        "默认网格：d_head 32..256 × 缩放开/关（练习 2）。"
        "\nTrain every point of a grid (× seeds), locally or on Ray; rerunning skips finished trials and "
        "resumes interrupted ones. Default grid: d_head 32..256 × scaled on/off (exercise 2).",
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="一个配置字段或 d_head（此时 n_head=1、d_model=d_head），可重复（默认：上面的网格）"
        " / a Config field or d_head (sets n_head=1, d_model=d_head); repeatable (default: the grid above)",
    )
    p.add_argument(
        "--seeds",
        type=common.int_range(1, 1000, "a seed count"),
        default=1,
        metavar="N",
        help="每个网格点的种子数 / seeds per grid point",
    )
    p.add_argument(
        "--steps",
        type=common.positive_steps,
        default=None,
        metavar="N",
        help="每个试验的训练步数（默认：max_steps）/ training steps per trial (default max_steps)",
    )
    common.add_set(p, help="每个试验共用的基础配置，可重复 / base config shared by every trial (repeatable)")
    common.add_corpus(p)
    common.add_executor(p, default="local")
    common.add_out(
        p, None, "扫描文件夹（每个试验一个子文件夹）/ sweep directory (one subdirectory per trial)", required=True
    )
    return p


def main(args) -> int:
    from ..config import Config
    from ..io import check_writable
    from ..lab.sweep import DEFAULT_GRID, expand, parse_grid, sweep, sweep_table

    base = Config.from_overrides(args.overrides)
    grid = parse_grid(args.grid) if args.grid else DEFAULT_GRID
    for trial in expand(base, grid, args.seeds):  # every trial's config is checked before the folder is made
        common.check_trainable(Config.from_dict(trial["config"]))
    check_writable(args.out)

    def report(r: dict) -> None:
        extra = f"  {r['error']}" if r["status"] in ("failed", "busy") else ""
        print(f"  [{r['status']}] {r['name']}{extra}", flush=True)

    result = sweep(
        args.out,
        grid,
        base=base,
        seeds=args.seeds,
        steps=args.steps,
        corpus=args.corpus,
        options=common.executor_options(args, progress=False),  # each trial's line instead of a bar
        on_result=report,
    )
    print(sweep_table(result))
    failed = [r for r in result["runs"] if r["status"] in ("failed", "busy")]
    print(
        f"结果 / results: {args.out}/sweep.csv, {args.out}/sweep.json"
        + (f", {result['figure']}" if result.get("figure") else "")
    )
    if failed:
        print(
            f"{len(failed)} 个试验未完成 / trial(s) did not finish (rerun to finish them) — "
            + "; ".join(f"{r['name']} {r['status']}: {r['error']}" for r in failed),
            file=sys.stderr,
        )
        return 1
    return 0
