"""``attnlab report``: rebuild figures and the report from a case JSON alone."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub):
    p = sub.add_parser("report", help="rebuild figures and report from a case JSON / 由 JSON 重建图与报告")
    p.add_argument("json", nargs="?", default="data/ch1_case.json")
    p.add_argument("--out", default=None, help="root for figures/ and reports/ (default: two levels above JSON)")
    return p


def main(args) -> int:
    from ..experiments.case import CaseError, claim_counts, read_case_json
    from ..experiments.claims import check_claims
    from ..io import check_writable
    from ..report.case_report import build_report

    path = Path(args.json)
    result = read_case_json(path)
    # every verdict is re-judged from the numbers in the file, never copied from it
    try:
        result["claims"] = check_claims(result)
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as e:
        raise CaseError(f"{path} cannot be judged: {type(e).__name__} {e}; it is not a complete case result") from None
    out = Path(args.out) if args.out else path.resolve().parent.parent
    check_writable(out)
    for p in build_report(result, out):
        print(p)
    print(claim_counts(result["claims"]))
    if (out / "data" / "lab_book.json").is_file():  # the lab book is rebuilt from its JSON too
        from ..report.lab_book import build_book_report

        for p in build_book_report(out):
            print(p)
    return 0
