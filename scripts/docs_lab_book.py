"""Rewrite the committed book's summary in docs/lab-book.md and README.md from data/lab_book.json.

The blocks between the markers (in docs/lab-book.md: counts, per-section verdicts, runs and
training time per experiment; in README.md: one paragraph, how many claims are decided and what
the book cost) are generated; everything else is prose. tests/test_docs.py checks that the
committed pages equal what this script would write, so they cannot drift from the book.

    python scripts/docs_lab_book.py            # rewrite docs/lab-book.md and README.md
    python scripts/docs_lab_book.py --check    # exit 1 when either page is stale
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnlab import verdicts as V  # noqa: E402

START, END = "<!-- lab-book-summary:start -->", "<!-- lab-book-summary:end -->"
PAGE = ROOT / "docs" / "lab-book.md"
README = ROOT / "README.md"
DECIDE_START, DECIDE_END = "<!-- decide-table:start -->", "<!-- decide-table:end -->"
# issue 22's questions, each answered by one claim (experiment id, claim id)
DECIDE_ROWS = [
    ("d_head 32：去掉缩放有没有代价 / does removing the scale cost anything (gap > 0)", "case", "small_gap_not_zero"),
    ("MQA 损失一点质量 / MQA costs some quality (§1.8.8)", "kv_cache", "mqa_costs_some_quality"),
    (
        "练习一：d_head 64 的差距大于 32 的 / exercise 1: the gap at 64 above the gap at 32",
        "exercise1",
        "ex1_gap_above_d32",
    ),
    ("缩放大模型的熵一直在降 / the big scaled entropy keeps falling", "case", "big_scaled_entropy_keeps_falling"),
    ("四层模型的层间分工 / four layers divide the labour", "deep", "layer_division_of_labour"),
    ("四层、3000 步的层间分工 / the same, 3000 steps", "deep", "layer_division_of_labour_long"),
    ("不缩放大模型的 logits 标准差到 5477 / unscaled big logits reach 5477", "case", "big_unscaled_logits_explode"),
    ("QK-norm 让小模型的差距出现 / QK-norm widens the small gap", "qk_norm", "qk_small_gap_appears"),
    ("10000 步后差距仍在 0.8–1.0 / the gap after 10000 steps", "statements", "gap_after_10000_steps"),
]
README_START, README_END = "<!-- lab-book-readme:start -->", "<!-- lab-book-readme:end -->"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def legacy_records(book: dict) -> dict[str, dict]:
    """Experiments whose timing record predates per-run timing: they hold only a sum."""
    per_exp = book.get("timings", {}).get("experiments", {})
    return {k: t for k, t in per_exp.items() if "per_run" not in t and t.get("compute_s")}


def summary_block(book: dict) -> str:
    s = book["summary"]
    timings = book.get("timings", {})
    per_exp = timings.get("experiments", {})
    total = timings.get("book", {})
    lines = [
        START,
        f"提交的这一版 / the committed book（2 核 CPU）：{s['experiments']} 个实验；{s['claims']} 条论断：",
        f"**{s['count_line']}**。每条 FAIL 写明原因，每条 INCONCLUSIVE 写明还需要多少个种子（或“再多种子也定不下来”）。",
        "",
        "训练时间来自每个运行目录自己的计时记录（单线程核时；和案例共用的运行在每个用到它的实验里都算，合计里只算一次；"
        "“有计时”少于运行数的，是计时功能出现之前训练的运行）。"
        "*Training time from each run's own timing record (one-thread core-hours; a run shared with the case counts in "
        "every experiment that uses it and once in the total; runs trained before timing existed are not timed).*",
        "",
        "| 节 / section | 实验 / experiment | PASS | FAIL | INCONCLUSIVE | REPORTED / NA | 运行 / runs（有计时 / timed） | 核时 / core-h |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sec in book["sections"]:
        c = [V.verdict_of(x) for x in sec["claims"]]
        other = len(c) - c.count("PASS") - c.count("FAIL") - c.count("INCONCLUSIVE")
        ts = [per_exp.get(i, {}) for i in sec["experiments"]]
        n_runs, n_timed = sum(t.get("runs", 0) for t in ts), sum(t.get("timed_runs", 0) for t in ts)
        secs = sum(t.get("compute_s", 0) for t in ts)
        runs = f"{n_runs} ({n_timed})" if n_runs else ""
        hours = _hours(secs) if secs else ""
        lines.append(
            f"| {sec['section']} | {sec['title']} | {c.count('PASS')} | {c.count('FAIL')} | "
            f"{c.count('INCONCLUSIVE')} | {other or ''} | {runs} | {hours} |"
        )
    if total:
        lines += [
            "",
            f"整本书 / the whole book：{total.get('runs', 0)} 个运行，其中 {total.get('timed_runs', 0)} 个有逐个运行的计时，"
            f"共 {_hours(total.get('compute_s', 0))} 核时 / {total.get('runs', 0)} runs, {total.get('timed_runs', 0)} "
            f"timed one by one, {_hours(total.get('compute_s', 0))} core-hours.",
        ]
        # experiments whose record predates per-run timing hold only a sum: said apart, never added in
        legacy = legacy_records(book)
        if legacy:
            secs, n = sum(t["compute_s"] for t in legacy.values()), sum(t.get("timed_runs", 0) for t in legacy.values())
            lines.append(
                f"另有 {', '.join(sorted(legacy))} 的记录早于逐个运行的计时，只存了总数（{n} 个有计时的运行，{_hours(secs)} 核时，"
                f"可能与上面的运行重叠；不计入合计；这些实验再测量一次就换成逐个运行的记录）/ the records of "
                f"{', '.join(sorted(legacy))} predate per-run timing and hold only sums ({n} timed runs, {_hours(secs)} "
                f"core-hours, possibly overlapping the runs above; not added to the total; measuring them again turns "
                f"them into per-run records)."
            )
    lines.append(END)
    return "\n".join(lines)


def readme_block(book: dict) -> str:
    """The README's paragraphs: the case's verdicts (data/ch1_case.json); the book's claims decided
    (PASS or FAIL), the rest, and the book's compute."""
    s, total = book["summary"], book.get("timings", {}).get("book", {})
    v = {
        k: sum(c.get(k, 0) for c in s["verdicts"].values()) for k in ("PASS", "FAIL", "INCONCLUSIVE", "REPORTED", "NA")
    }
    decided = v["PASS"] + v["FAIL"]
    cost = (
        f"训练共 {_hours(total['compute_s'])} 单线程核时（{total.get('runs', 0)} 个运行中逐个计时的 "
        f"{total.get('timed_runs', 0)} 个）/ training took {_hours(total['compute_s'])} one-thread core-hours "
        f"({total.get('timed_runs', 0)} of its {total.get('runs', 0)} runs timed one by one)"
        if total.get("compute_s")
        else "训练时间没有记录 / no training time recorded"
    )
    if legacy := legacy_records(book):
        secs, n = sum(t["compute_s"] for t in legacy.values()), sum(t.get("timed_runs", 0) for t in legacy.values())
        cost += (
            f"；另有 {len(legacy)} 个实验的旧记录只存了总数（{n} 个运行、{_hours(secs)} 核时，未计入）"
            f" / plus {len(legacy)} experiments whose older records hold only sums ({n} runs, {_hours(secs)} "
            "core-hours, not added in)"
        )
    case = json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    return "\n".join(
        [
            README_START,
            f"案例的论断 / the case's claims：{V.count_line(case['claims'])}。每个 FAIL 都写了原因"
            "（书的问题附证据、协议差异附实验，或“未解释”）。详见 [docs/case.md](docs/case.md)。",
            "",
            f"实验手册 / the lab book：{s['experiments']} 个实验、{s['claims']} 条论断，**已判定 {decided} 条**"
            f"（{v['PASS']} PASS、{v['FAIL']} FAIL），{v['INCONCLUSIVE']} 条 INCONCLUSIVE（各自写明还要什么），"
            f"{v['REPORTED'] + v['NA']} 条只报告或无法在此检验；{cost}。每个实验的明细见 [docs/lab-book.md](docs/lab-book.md)。"
            f" *{s['claims']} claims, {decided} decided ({v['PASS']} PASS, {v['FAIL']} FAIL), {v['INCONCLUSIVE']} "
            f"INCONCLUSIVE, {v['REPORTED'] + v['NA']} reported or not testable here.*",
            README_END,
        ]
    )


def _replace(page: str, start: str, end: str, block: str, where: Path) -> str:
    if start not in page or end not in page:
        raise SystemExit(f"{where} lost its markers {start} … {end}; put them back around the summary")
    a, z = page.index(start), page.index(end) + len(end)
    return page[:a] + block + page[z:]


def decide_block() -> str:
    """Issue 22's questions: each one's verdict now, the seeds it stands on, and what it would take."""
    lines = [
        DECIDE_START,
        "| 问题 / question | 论断 / claim | 判定 / verdict | 种子 / seeds | 还要什么 / what it would take |",
        "|---|---|---|---|---|",
    ]
    for question, eid, cid in DECIDE_ROWS:
        doc = json.loads((ROOT / "data" / "lab_book" / f"{eid}.json").read_text(encoding="utf-8"))
        c = next(x for x in doc["claims"] if x["id"] == cid)
        v = V.verdict_of(c)
        need = c.get("n_needed")
        if v != "INCONCLUSIVE":
            take = "—"
        elif need:
            take = f"约 {need} 个种子 / about {need} seeds"
        else:
            take = "再多种子也定不下 / more seeds will not settle it"
        if v == "FAIL" and (c.get("reason") or {}).get("text"):
            take = f"原因 / why ({c['reason'].get('category', '')}): " + c["reason"]["text"].replace("|", "/")
        lines.append(f"| {question} | `{eid}.{cid}` | **{v}** | {c.get('n') or 0} | {take} |")
    lines.append(DECIDE_END)
    return "\n".join(lines)


def render(page: str, book: dict) -> str:
    page = _replace(page, START, END, summary_block(book), PAGE)
    if DECIDE_START in page:
        page = _replace(page, DECIDE_START, DECIDE_END, decide_block(), PAGE)
    return page


def render_readme(page: str, book: dict) -> str:
    return _replace(page, README_START, README_END, readme_block(book), README)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/lab-book.md is stale")
    args = ap.parse_args(argv)
    book = json.loads((ROOT / "data" / "lab_book.json").read_text(encoding="utf-8"))
    pages = {PAGE: render, README: render_readme}
    stale = []
    for path, fn in pages.items():
        page = path.read_text(encoding="utf-8")
        new = fn(page, book)
        if new != page:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check:
        for path in stale:
            print(f"{path} is stale: run `python scripts/docs_lab_book.py`", file=sys.stderr)
        return 1 if stale else 0
    print(book["summary"]["count_line"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
