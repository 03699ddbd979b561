"""``attnlab case``: reproduce the chapter's case study (data/, figures/, reports/)."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

from ..errors import UsageError
from . import common

MAX_SEEDS = 64  # a sane bound: 64 seeds of the case are days of training on one CPU
seed_count = common.int_range(1, MAX_SEEDS, "a number of seeds")


def add_parser(sub):
    p = sub.add_parser("case", help="reproduce the chapter's case study / 复现第 1 章案例")
    p.add_argument("--steps", type=common.positive_steps, default=None, help="training steps per run (default 1500)")
    p.add_argument("--quick", action="store_true", help="a few hundred steps, one seed (what the tests run)")
    common.add_out(p, ".", "root for data/, figures/, reports/ and runs/ (default: here)")
    common.add_corpus(p)
    common.add_device(p)
    common.add_executor(p, default="local")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="each run also writes TensorBoard event files (needs the tensorboard extra)",
    )
    p.add_argument(
        "--reuse-json",
        action="store_true",
        help="train nothing: keep everything the existing data/ch1_case.json holds and add the runs "
        "of the requested seeds found finished under runs/case",
    )
    p.add_argument(
        "--seeds",
        type=seed_count,
        default=None,
        metavar="N",
        help="the small pair on N seeds 20261014, 20261015, ... (default 3; 1 with --quick)",
    )
    p.add_argument(
        "--big-seeds", type=seed_count, default=None, metavar="N", help="the big pair on the first N seeds (default 3)"
    )
    p.add_argument(
        "--big-unscaled-seeds",
        type=seed_count,
        default=None,
        metavar="N",
        help="the big unscaled member alone on the first N seeds (default: --big-seeds)",
    )
    p.add_argument(
        "--wd-seeds",
        type=seed_count,
        default=None,
        metavar="N",
        help="the weight-decay pairs on the first N seeds (default 1; --quick has none)",
    )
    return p


def seed_settings(args, settings):
    """``settings`` with the seed counts the options ask for; a count beyond what it builds on is refused."""
    from ..experiments.case import BOOK_SEED

    n = args.seeds or len(settings.seeds)
    big = args.big_seeds or min(settings.big_seeds, n)
    unscaled = args.big_unscaled_seeds or big
    wd = args.wd_seeds or min(settings.wd_seeds, n)
    for option, value in (("--big-seeds", big), ("--big-unscaled-seeds", unscaled), ("--wd-seeds", wd)):
        if value > n:
            raise UsageError(
                f"{option} {value} exceeds --seeds {n}: it runs on the first of those seeds; raise --seeds"
            )
    if unscaled < big:
        raise UsageError(f"--big-unscaled-seeds {unscaled} is below --big-seeds {big}: the pair needs both members")
    if args.wd_seeds and not settings.wd_values:
        raise UsageError("--wd-seeds: --quick trains no weight-decay pairs")
    seeds = tuple(BOOK_SEED + i for i in range(n)) if args.seeds else settings.seeds
    return replace(
        settings,
        seeds=seeds,
        big_seeds=big,
        big_unscaled_seeds=unscaled if unscaled != big else None,
        wd_seeds=wd,
    )


def main(args) -> int:
    from ..experiments.case import CaseSettings, claim_counts, read_case_json, run_case
    from ..report.case_report import build_report
    from ..runfolder import OutputLock

    common.check_device(args.device)
    settings = CaseSettings.quick(args.steps) if args.quick else CaseSettings(steps=args.steps or 1500)
    settings = CaseSettings(
        **{
            **asdict(settings),
            "device": args.device,
            "executor": args.executor,
            "workers": args.workers,
            "ray_address": args.ray_address,
        }
    )
    settings = seed_settings(args, settings)
    out = Path(args.out)
    with OutputLock(out, "attnlab case"):  # a second case or book into this root is refused up front
        base = read_case_json(out / "data" / "ch1_case.json") if args.reuse_json else None
        result = run_case(
            settings,
            out,
            corpus=Path(args.corpus) if args.corpus else None,
            progress=not args.no_progress,
            log=lambda m: print(f"attnlab: {m}"),
            base=base,
            tensorboard=args.tensorboard,
        )
        paths = build_report(result, out)
    print(claim_counts(result["claims"]))
    for c in result["claims"]:
        v = c.get("verdict", "PASS" if c["pass"] else "FAIL")
        if v in ("PASS", "REPORTED"):
            continue
        why = c.get("reason") or {}
        if v == "INCONCLUSIVE":
            tail = f" — needs about {c['n_needed']} seeds" if c.get("n_needed") else " — more seeds will not settle it"
        elif v == "NA":
            tail = f" — {c.get('detail', '')}"
        else:
            tail = f" — {why.get('category')}: {why.get('text')}" if why else ""
        print(f"  {v} [{c['kind']}] {c['section']} {c['id']}: measured {c['measured']}; rule {c['expected']}{tail}")
    t = result["timings"]
    print(
        f"训练耗时 / training wall {t['train_wall_s']:.0f} s = {t['train_wall_over_floor']:.2f} x 算力下限 / floor "
        f"({t['train_flops'] / 1e12:.1f} TFLOP at {t['matmul_rate_flops_per_s'] / 1e9:.0f} GFLOP/s)"
    )
    if "train_matmuls_only_s" in t:
        print(
            f"仅矩阵乘 / the same matmuls alone {t['train_matmuls_only_s']:.0f} s = "
            f"{t['matmuls_only_over_floor']:.2f} x floor"
        )
    print("结果 / results: " + ", ".join(str(p) for p in [out / "data" / "ch1_case.json", *paths]))
    return 0
