"""``attnlab book``: the lab book (attnlab.lab.labbook), then its report."""

from __future__ import annotations

import sys
from pathlib import Path

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "book",
        help="实验手册：本章的全部实验 / the lab book: every experiment of the chapter",
        description="运行本章的每个实验（或用 --only 选几个），复用已完成的运行，写出 data/lab_book.json、"
        "data/lab_book/*.json、figures/lab_book/ 和 reports/lab_book.{md,html}；中断后重跑即续跑。"
        "\nRun every experiment of the chapter (or --only some), reusing every finished run, and write "
        "data/lab_book.json, data/lab_book/*.json, figures/lab_book/ and reports/lab_book.{md,html}. "
        "Interrupt and rerun to resume.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="每个实验都用很小的运行（测试跑的就是它）；未给 --out 时写到 quick/book/（git 忽略）"
        " / tiny runs of every experiment (what the tests run); writes under quick/book/ (git-ignored) unless --out",
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="SECTION",
        default=None,
        help="只跑这些实验 id 或章节，如 --only §1.7.8 markov 1.9（默认：全部）"
        " / experiment ids or chapter sections, e.g. --only §1.7.8 markov 1.9 (default: all)",
    )
    common.add_executor(p)
    p.add_argument(
        "--no-train",
        action="store_true",
        help="不训练：只分析磁盘上已有的运行，其余显示为尚未运行"
        " / train nothing: analyze the runs already on disk, the rest shows as not run yet",
    )
    p.add_argument(
        "--render",
        action="store_true",
        help="只由 JSON 重建 reports/lab_book.* / only rebuild reports/lab_book.* from the JSON",
    )
    common.add_out(
        p,
        None,
        "data/、figures/、reports/ 和 runs/ 的根目录（默认：当前目录；--quick 时 quick/book，"
        "小运行绝不碰全尺寸的）/ root for data/, figures/, reports/ and runs/ "
        "(default: here; with --quick quick/book, so tiny runs never touch full-size ones)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="允许替换更大规模（更多步数或种子）得到的 data/lab_book.json，否则拒绝"
        " / replace a data/lab_book.json made at a larger scale (more steps or seeds); refused without it",
    )
    p.add_argument(
        "--decide",
        action="store_true",
        help="为 INCONCLUSIVE 的断言补训所需的种子（先做最便宜的判定），再重新判定"
        " / train the seeds that INCONCLUSIVE claims need (cheapest verdict first), then judge again",
    )
    p.add_argument(
        "--budget",
        default=None,
        metavar="TIME",
        help="配合 --decide：可花的墙钟时间，如 2h、90m（默认：不限）"
        " / with --decide: wall time to spend, e.g. 2h, 90m (default: no limit)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="配合 --decide：只打印计划，不训练 / with --decide: print the plan, train nothing",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="不训练：列出要训练的运行、已完成的运行、核时与此执行方式下的墙钟时间"
        " / train nothing: print the runs to train, those finished, core-hours and wall time for this executor",
    )
    common.add_no_probe(p)
    common.add_slurm(p)
    common.add_corpus(p)
    common.add_progress(p)
    return p


def main(args) -> int:
    from ..corpus import load_corpus
    from ..lab import EXPERIMENTS
    from ..lab.labbook import BookError, Scale, select
    from ..outputs import output_root
    from ..report.lab_book import build_book_report
    from ..runfolder import OutputLock

    root = output_root(args.out, args.quick, "book")
    if args.render:
        if not (root / "data" / "lab_book.json").is_file():
            raise BookError(f"{root / 'data' / 'lab_book.json'} not found: run `attnlab book` first")
        from ..report.lab_book import load_book

        load_book(root)  # a damaged book is refused before anything (the lock file included) is written
        with OutputLock(root, "attnlab book --render"):
            try:
                paths = build_book_report(root)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
                raise BookError(
                    f"cannot render {root / 'data'}: a file of the wrong shape ({type(e).__name__} {e}); "
                    f"rebuild it with `attnlab book --no-train`"
                ) from None
        for p in paths:
            print(p)
        return 0
    chosen = select(EXPERIMENTS, args.only)
    options = common.executor_options(args)  # checked once, passed down whole
    scale = Scale.make(args.quick)
    _check_not_smaller(root, scale, args.overwrite)
    if (args.budget is not None or args.dry_run) and not args.decide:
        raise BookError("--budget and --dry-run belong to --decide: add --decide")
    if args.budget is not None:  # refused at the door: --budget '' is not "no budget"
        from ..lab.decide import parse_duration

        args.budget_s = parse_duration(args.budget)
    if args.plan:
        from ..lab.plan import book_plan, render

        print(
            render(book_plan(chosen, root, scale, EXPERIMENTS, options=options, speed_probe=common.speed_probe(args)))
        )
        return 0
    if args.decide:  # the stored claims it plans from, checked before anything (the lock included) is written
        from ..lab.labbook import read_entries

        read_entries(chosen, root / "data")
    if not scale.quick:  # the run store every entry reads, checked before anything (the lock included) is written
        from ..runstore import RunStore

        RunStore.load(root)
    text = load_corpus(args.corpus, min_chars=200)
    if args.decide and args.dry_run:  # prints a plan and writes nothing: no lock file, no new folder either
        return _decide(args, options, chosen, text, root, scale, EXPERIMENTS)
    with OutputLock(root, "attnlab book"):  # a second book or case into this root is refused up front
        return _book(args, options, chosen, text, root, scale)


def _book(args, options, chosen, text, root, scale) -> int:
    from ..lab import EXPERIMENTS
    from ..lab.labbook import run_book
    from ..report.lab_book import build_book_report, summary_line

    if args.decide:
        return _decide(args, options, chosen, text, root, scale, EXPERIMENTS)
    unfinished: dict[str, str] = {}
    book = run_book(
        chosen,
        text,
        root,
        scale=scale,
        train=not args.no_train,
        options=options,
        log=lambda m: print(f"attnlab: {m}"),
        registry=EXPERIMENTS,
        explicit=[e.id for e in chosen] if args.only else (),
        unfinished=unfinished,
    )
    paths = build_book_report(root)
    print(summary_line(book))
    for s in book["sections"]:
        for c in s["claims"]:
            if c.get("verdict", "FAIL" if c["pass"] is False else "PASS") == "FAIL":
                print(f"  FAIL {c['section']} {c['id']}: measured {c['measured']}, expected {c['expected']}")
    print("结果 / results: " + ", ".join(str(p) for p in [root / "data" / "lab_book.json", *paths]))
    return _unfinished(unfinished)


def _unfinished(unfinished: dict[str, str]) -> int:
    """Loudly, when runs did not finish: each one and why on stderr, and exit status 1."""
    if not unfinished:
        return 0
    n = len(unfinished)
    print(
        f"attnlab: {n} 个训练未完成，重新运行同一命令可继续 / {n} run(s) did not finish; rerun to finish them",
        file=sys.stderr,
    )
    for name, why in unfinished.items():
        print(f"  {name} — {why}", file=sys.stderr)
    return 1


def _check_not_smaller(root: Path, scale, overwrite: bool) -> None:
    """Refuse to replace a lab book recorded at more steps or seeds (one line), unless ``overwrite``."""
    from ..io import read_json
    from ..outputs import refuse_smaller_than_stored

    def stored(path: Path) -> dict[str, int]:
        old = read_json(path).get("scale") or {}  # bounded: a FIFO or a device in its place is never waited on
        return {"steps": int(old["steps"]), "seeds": int(old["seeds"])}

    path = root / "data" / "lab_book.json"
    refuse_smaller_than_stored(path, stored, {"steps": scale.steps, "seeds": scale.seeds}, overwrite)


def _decide(args, options, chosen, text, root, scale, registry) -> int:
    from ..lab.decide import run_decide
    from ..lab.labbook import run_book
    from ..report.lab_book import build_book_report, summary_line

    budget = getattr(args, "budget_s", None) if args.budget is not None else None

    def refresh(ids: set[str]) -> None:
        run_book(
            [e for e in chosen if e.id in ids],
            text,
            root,
            scale=scale,
            train=False,
            options=options,
            log=lambda m: print(f"attnlab: {m}"),
            registry=registry,
            explicit=sorted(ids),
        )

    decided = run_decide(
        chosen,
        text,
        root,
        scale=scale,
        budget_s=budget,
        options=options.replace(executor="local") if options.executor == "serial" else options,  # workers by default
        dry_run=args.dry_run,
        refresh=refresh,
        log=lambda m: print(m),
    )
    if not args.dry_run and (root / "data" / "lab_book.json").is_file():
        build_book_report(root)
        from ..report.lab_book import load_book

        print(summary_line(load_book(root)[0]))
    return _unfinished(decided.get("unfinished") or {})
