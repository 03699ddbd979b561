"""``attnlab case``: reproduce the chapter's case study (data/, figures/, reports/)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from . import common


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
        help="train nothing: keep the first seed's sections of the existing data/ch1_case.json "
        "and add the other seeds' and the weight-decay runs found finished under runs/case",
    )
    return p


def main(args) -> int:
    from ..experiments.case import CaseSettings, claim_counts, read_case_json, run_case
    from ..report.case_report import build_report

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
    out = Path(args.out)
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
