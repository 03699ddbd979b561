"""Rewrite the committed book's summary in docs/lab-book.md from data/lab_book.json.

The block between the two markers (counts, per-section verdicts, runs and training time per
experiment) is generated; everything else in the page is prose. tests/test_docs.py checks that
the committed page equals what this script would write, so the page cannot drift from the book.

    python scripts/docs_lab_book.py            # rewrite docs/lab-book.md
    python scripts/docs_lab_book.py --check    # exit 1 when the page is stale
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


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


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
        legacy = {k: t for k, t in per_exp.items() if "per_run" not in t and t.get("compute_s")}
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


def render(page: str, book: dict) -> str:
    if START not in page or END not in page:
        raise SystemExit(f"{PAGE} lost its markers {START} … {END}; put them back around the summary")
    a, z = page.index(START), page.index(END) + len(END)
    return page[:a] + summary_block(book) + page[z:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/lab-book.md is stale")
    args = ap.parse_args(argv)
    book = json.loads((ROOT / "data" / "lab_book.json").read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    new = render(page, book)
    if args.check:
        if new != page:
            print(f"{PAGE} is stale: run `python scripts/docs_lab_book.py`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(book["summary"]["count_line"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
