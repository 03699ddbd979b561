"""``attnlab failures``: train the four injected bugs of §1.11.7 and tabulate their symptoms."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    from ..config import BUGS

    p = sub.add_parser(
        "failures",
        help="训练 §1.11.7 的四个注入 bug，列出症状 / train the four injected bugs of §1.11.7",
        description="用同一种子、同一批次训练正确的注意力和每个注入的 bug，把症状与书中的并排列表。"
        "\nTrain the correct attention and each injected bug (same seed, same batches) and tabulate the "
        "symptoms beside the book's.",
    )
    common.add_corpus(p)
    common.add_set(p)
    p.add_argument(
        "--steps",
        type=common.positive_steps,
        default=300,
        metavar="N",
        help="每个变体的训练步数（书中 300）/ training steps per variant (book: 300)",
    )
    p.add_argument(
        "--seeds",
        type=common.positive_int,
        default=3,
        metavar="N",
        help="每个变体的种子数（损失与权重熵的断言在这些种子上判定）"
        " / seeds per variant (the loss and entropy claims are judged over them)",
    )
    p.add_argument(
        "--variants",
        default=",".join(("correct",) + BUGS),
        help="逗号分隔的子集 / comma-separated subset",
    )
    common.add_executor(p)
    common.add_runs(p)
    common.add_out(p, "data/failure_symptoms.json", "结果 JSON / result JSON")
    p.add_argument(
        "--report",
        default="reports/failure_symptoms.md",
        metavar="MD",
        help="Markdown 表格与断言 / Markdown table and claims",
    )
    p.add_argument(
        "--rejudge",
        action="store_true",
        help="不训练：重新判定 --out JSON 的断言，写回它并重写报告"
        " / train nothing: re-judge the claims of the --out JSON, write them into it and rewrite the report",
    )
    return p


def _print_claims(claims) -> None:
    from ..verdicts import count_line, verdict_of

    for c in claims:
        print(f"  {verdict_of(c)} [{c['kind']}] {c['section']} {c['id']}: {c['measured']}")
    print(f"  {count_line(claims)}")


def main(args) -> int:
    from ..config import Config
    from ..corpus import load_corpus
    from ..io import check_output_file, check_writable, write_json, write_text
    from ..lab.failures import LEAKS, VARIANTS, failures_markdown, rejudge, run, symptoms_table
    from ..tools import ExperimentError

    out = Path(args.out)
    if args.rejudge:
        from ..io import read_json

        hint = "; run `attnlab failures` without --rejudge"
        try:
            from ..schemas import check

            doc = read_json(out, error=ExperimentError, hint=hint)
            result = rejudge(check("failures", doc, out, error=ExperimentError))  # attnlab.schemas.FailuresResult
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ExperimentError(f"cannot re-judge {out}: {e}; run `attnlab failures` without --rejudge") from None
        write_json(out, result)  # the verdicts (and an overflow control it lacked) go back into the JSON
        write_text(Path(args.report), failures_markdown(result))
        print(symptoms_table(result))
        _print_claims(result["claims"])
        print(f"结果 / result: {out}; 报告 / report: {args.report}")
        return 0
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if not variants or unknown:
        raise ExperimentError(
            f"--variants {args.variants!r}: "
            + (f"unknown variant(s) {', '.join(unknown)}" if unknown else "no variant to train")
            + f"; give a comma-separated subset of {','.join(VARIANTS)}"
        )
    cfg = Config.from_overrides(args.overrides)
    common.check_trainable(cfg)
    check_output_file(out)  # before the training, not after it
    check_output_file(args.report, "--report")
    if args.runs:
        check_writable(Path(args.runs), "--runs")
    text = load_corpus(args.corpus, min_chars=cfg.block_size + 1)
    result = run(
        text,
        cfg,
        steps=args.steps,
        seeds=args.seeds,
        variants=variants,
        corpus=args.corpus,
        root=args.runs,
        options=common.executor_options(args, progress=False),
    )
    write_json(out, result)
    write_text(Path(args.report), failures_markdown(result))
    print(
        f"每个变体训练 {args.steps} 步、{args.seeds} 个种子，同一种子内数据相同；表中是第一个种子 / {args.steps} "
        f"steps each, {args.seeds} seed(s), same batches within a seed; the table shows the first seed; "
        f"d_head = {result['d_head']}, 1/sqrt(d_head) = "
        f"{result['expected_row_sum_after_softmax_scale']:.4f}"
    )
    print(symptoms_table(result))
    print("“书”行来自书中 §1.11.7 的表（默认配置）/ 'book' rows: the book's table (§1.11.7, default config)")
    print(f"① 与 ② 的权重熵（训练器的，书中那一列）：{LEAKS}")
    _print_claims(result["claims"])
    print(f"结果 / result: {out}")
    return 0
