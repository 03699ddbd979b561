"""``attnlab case``: reproduce the chapter's case study (data/, figures/, reports/)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import UsageError
from . import common

MAX_SEEDS = 64  # a sane bound: 64 seeds of the case are days of training on one CPU
seed_count = common.int_range(1, MAX_SEEDS, "a number of seeds")


def add_parser(sub):
    p = sub.add_parser(
        "case",
        help="复现第 1 章案例：缩放与不缩放的对照 / reproduce the chapter's case study",
        description="复现本章的案例：缩放与不缩放的小模型和大模型对照（多个种子），量权重熵、雅可比范数与损失，"
        "写出 data/、figures/、reports/；中断后重跑即续跑。"
        "\nReproduce the chapter's case study: the small and big pairs with and without scaling (over "
        "several seeds), measuring weight entropy, Jacobian norm and loss, and write data/, figures/ and "
        "reports/; interrupt and rerun to resume.",
    )
    p.add_argument(
        "--steps",
        type=common.positive_steps,
        default=None,
        metavar="N",
        help="每次运行的训练步数（默认 1500；--quick 225）/ training steps per run (default 1500; 225 with --quick)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="几百步、一个种子（测试跑的就是它）；未给 --out 时写到 quick/case/（git 忽略），"
        "绝不写进 data/、figures/、reports/ 或 runs/case/"
        " / a few hundred steps, one seed (what the tests run); writes under quick/case/ (git-ignored) "
        "unless --out is given, never into data/, figures/, reports/ or runs/case/",
    )
    common.add_out(
        p,
        None,
        "data/、figures/、reports/ 和 runs/ 的根目录（默认：当前目录；--quick 时 quick/case）"
        " / root for data/, figures/, reports/ and runs/ (default: here; with --quick quick/case)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="允许替换更大规模（更多步数或种子）得到的 data/ch1_case.json，否则拒绝"
        " / replace a data/ch1_case.json made at a larger scale (more steps or seeds); refused without it",
    )
    common.add_corpus(p)
    common.add_device(p)
    common.add_executor(p, default="local")
    common.add_slurm(p)
    common.add_progress(p)
    p.add_argument(
        "--plan",
        action="store_true",
        help="不训练：列出要训练的运行、已完成的运行、核时与此执行方式下的墙钟时间"
        " / train nothing: print the runs to train, those finished, core-hours and wall time for this executor",
    )
    common.add_no_probe(p)
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="每次运行同时写 TensorBoard 事件文件（需要 tensorboard 扩展）"
        " / each run also writes TensorBoard event files (needs the tensorboard extra)",
    )
    p.add_argument(
        "--reuse-json",
        action="store_true",
        help="不训练：保留现有 data/ch1_case.json 的全部内容，加入 runs/case 下已完成的所需种子的运行"
        " / train nothing: keep everything the existing data/ch1_case.json holds and add the runs "
        "of the requested seeds found finished under runs/case",
    )
    for option, words in (  # the seed counts: each option a number of seeds (seed_count)
        (
            "--seeds",
            "小模型对照跑 N 个种子 20261014、20261015……（默认 3；--quick 时 1）"
            " / the small pair on N seeds 20261014, 20261015, ... (default 3; 1 with --quick)",
        ),
        (
            "--big-seeds",
            "大模型对照跑前 N 个种子（默认 3）/ the big pair on the first N seeds (default 3)",
        ),
        (
            "--big-unscaled-seeds",
            "不缩放的大模型单独跑前 N 个种子（默认：同 --big-seeds）"
            " / the big unscaled member alone on the first N seeds (default: --big-seeds)",
        ),
        (
            "--wd-seeds",
            "权重衰减对照跑前 N 个种子（默认 1；--quick 没有）"
            " / the weight-decay pairs on the first N seeds (default 1; --quick has none)",
        ),
    ):
        p.add_argument(option, type=seed_count, default=None, metavar="N", help=words)
    return p


def seed_settings(args, settings):
    """``settings`` with the seed counts the options ask for; a count beyond what it builds on is refused."""
    from ..lab.case.run import BOOK_SEED

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


def full_case_plan(args) -> dict | None:
    """What ``make case`` (``attnlab case --out mine``) would train, costed as ``case --plan`` costs it,
    for a quick run's summary; None where no estimate can be made."""
    from ..errors import AttnlabError
    from ..lab import EXPERIMENTS
    from ..lab.case.run import CaseSettings
    from ..lab.plan import case_plan, core_time, duration

    try:
        settings = replace(CaseSettings(), execution=common.executor_options(args))
        p = case_plan(settings, Path("mine"), EXPERIMENTS)
    except (AttnlabError, OSError, ValueError):
        return None
    return {"runs": len(p.todo) + len(p.finished), "wall": duration(p.wall_s), "core": core_time(p.core_s)}


def main(args) -> int:
    import time

    from ..lab.case.run import (
        CaseSettings,
        check_not_smaller,
        read_case_json,
        run_case,
        summary_lines,
    )
    from ..outputs import output_root
    from ..report.case_report import build_report, drop_partial_report, timing_lines
    from ..runfolder import OutputLock
    from ..verdicts import count_line

    started = time.perf_counter()
    common.check_device(args.device)
    settings = CaseSettings.quick(args.steps) if args.quick else CaseSettings(steps=args.steps or 1500)
    settings = replace(settings, device=args.device, execution=common.executor_options(args))  # checked once
    settings = seed_settings(args, settings)
    out = output_root(args.out, args.quick, "case")
    if args.plan:
        from ..lab import EXPERIMENTS
        from ..lab.plan import case_plan, render

        print(render(case_plan(settings, out, EXPERIMENTS, quick=args.quick, speed_probe=common.speed_probe(args))))
        return 0
    with OutputLock(out, "attnlab case"):  # a second case or book into this root is refused up front
        base = read_case_json(out / "data" / "ch1_case.json") if args.reuse_json else None
        if base is None:  # --reuse-json only adds to what the file holds
            check_not_smaller(out, settings, overwrite=args.overwrite)
        paths: list[Path] = []
        data = [out / "data" / "ch1_case.json"]  # the file the last batch was written to
        report_s = [0.0]  # the reports' and figures' wall time, every batch together

        def stage_done(res: dict, info: dict) -> None:
            """After each batch: the report of what finished, and one line saying what it shows."""
            t0 = time.perf_counter()
            data[:] = [info.get("data", data[0])]
            if data[0].name == "ch1_case.json":
                paths[:] = build_report(res, out)
                drop_partial_report(out)  # it held less than this one
            else:  # beside the judged result (partial or retrained), its report and figures stay as they are
                paths[:] = build_report(res, out, name=data[0].stem)
            report_s[0] += time.perf_counter() - t0
            prog = res.get("progress") or {}
            where = f"{prog['runs_done']}/{prog['runs_planned']} runs, " if prog else ""
            line = (
                f"attnlab: 报告已写出 / report written (batch {info['batch']}/{info['batches']}, {where}"
                f"{count_line(res['claims'])}): {paths[-1]}"
            )
            nxt = info.get("next")
            print(line + (f"; 接着训练 / training next: {nxt}" if nxt else ""), flush=True)

        result = run_case(
            settings,
            out,
            corpus=Path(args.corpus) if args.corpus else None,
            log=lambda m: print(f"attnlab: {m}", flush=True),
            base=base,
            tensorboard=args.tensorboard,
            on_stage=stage_done,
            overwrite=args.overwrite,
        )
    if not args.quick:  # a full case's verdicts are evidence: each one that did not pass, in full
        print(count_line(result["claims"]))
    for c in result["claims"] if not args.quick else []:
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
    for line in timing_lines(result["timings"]) if not args.quick else []:
        print(line)
    t = result["timings"]
    phases = {  # this invocation's (--reuse-json keeps the earlier run's timings in the result)
        "sweeps_s": 0.0 if base else t.get("init_sweep_s", 0.0) + t.get("init_sweep_fixed_s", 0.0),
        "train_s": 0.0 if base else t.get("train_wall_s", 0.0),
        "analysis_s": t.get("reuse_analysis_s", 0.0) if base else t.get("analysis_s", 0.0),
        "report_s": report_s[0],
    }
    plan = full_case_plan(args) if args.quick else None
    phases["total_s"] = time.perf_counter() - started
    for line in summary_lines(result, phases, quick=args.quick, full_plan=plan):
        print(line)
    print("结果 / results: " + ", ".join(str(p) for p in [*data, *paths]))
    return 0
