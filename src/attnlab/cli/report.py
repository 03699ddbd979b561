"""``attnlab report``: judge every claim again from the JSON alone and rebuild figures and reports.

No model is loaded and no run folder is needed: the case (data/ch1_case.json) and every
lab-book entry (data/lab_book/<id>.json) are re-judged from the numbers they store, the
verdicts are written back into the JSON, and the reports are rebuilt. A data folder with a lab
book and no case beside it (``attnlab book --quick``'s) has its book re-judged alone.

``--data DIR`` judges DIR's own files and writes the verdicts back into DIR. Every file is read
and checked against its schema (attnlab.schemas) and every claim judged before anything is
written; a lab-book entry the index records as measured but that is missing (or a FIFO) is
refused, never dropped from a smaller book. A file whose content does not change is not written
again, so a report on unchanged data leaves a checkout clean.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path


def add_parser(sub):
    p = sub.add_parser(
        "report",
        help="由 JSON 重新判定每条断言并重建图表与报告 / re-judge every claim from the JSON and rebuild figures and reports",
        description="不加载模型、不需要运行文件夹：案例（data/ch1_case.json）和实验手册的每一项（data/lab_book/<id>.json）"
        "都由其存下的数字重新判定，判定写回 JSON，再重建图表与报告。"
        "\nNo model is loaded and no run folder is needed: the case (data/ch1_case.json) and every lab-book "
        "entry (data/lab_book/<id>.json) are re-judged from the numbers they store, the verdicts are written "
        "back into the JSON, and the figures and reports are rebuilt.",
    )
    p.add_argument(
        "json",
        nargs="?",
        default=None,
        help="案例 JSON（默认：DATA/ch1_case.json）/ the case JSON (default: DATA/ch1_case.json)",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DATA",
        help="要判定的数据文件夹（默认：data/，或 JSON 所在的文件夹）"
        " / the data folder to judge (default: data/, or the JSON's folder)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="figures/ 和 reports/ 的根目录（默认：数据文件夹的上一级）"
        " / root for figures/ and reports/ (default: the folder above the data)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="允许用更小的案例（如 --quick）的图表覆盖 OUT/data 里更大案例的图表"
        " / write figures of a smaller case (e.g. --quick) over those of the larger one in OUT/data",
    )
    return p


def main(args) -> int:
    from .. import verdicts as V
    from ..errors import AttnlabError
    from ..io import check_writable, write_json_if_changed
    from ..lab.case.claims import check_claims
    from ..lab.case.run import CaseError, read_case_json
    from ..report.case_report import build_report
    from ..runfolder import OutputLock

    data = Path(args.data) if args.data else (Path(args.json).parent if args.json else Path("data"))
    path = Path(args.json) if args.json else data / "ch1_case.json"
    if args.data and not data.is_dir():
        what = "is not a folder" if data.exists() else "no such folder"
        raise AttnlabError(f"--data {data}: {what}; give the folder that holds ch1_case.json and lab_book/")
    out = Path(args.out) if args.out else data.resolve().parent
    index = data / "lab_book.json"
    has_book = index.exists() or index.is_symlink()  # a FIFO or a damaged book is refused, not skipped
    # a lab book without a case beside it (e.g. `attnlab book --quick`'s data) is re-judged alone
    has_case = args.json is not None or path.exists() or path.is_symlink() or not has_book
    # everything is read, checked and judged before anything is written
    result = read_case_json(path) if has_case else None
    book, changed = None, {}
    if has_book:
        from ..lab import EXPERIMENTS
        from ..lab.labbook import rejudged_book

        book, changed = rejudged_book(EXPERIMENTS, data.resolve().parent, data)
    if result is not None:
        try:  # every verdict is re-judged from the numbers in the file, never copied from it
            claims = check_claims(result)
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError) as e:
            raise CaseError(
                f"{path} cannot be judged: {type(e).__name__} {e}; it is not a complete case result"
            ) from None
        result["claims"] = claims
    _check_before_writing(path, result, changed)
    check_writable(out, "--out")
    if result is not None:
        _check_not_smaller(out, path, result, args.overwrite)
    roots = dict.fromkeys([out.resolve(), data.resolve().parent])  # the reports' root and the data's
    with ExitStack() as held:  # a book or case writing into the same root refuses this one, and back
        for root in roots:
            held.enter_context(OutputLock(root, "attnlab report"))
        if result is not None:
            write_json_if_changed(path, result)  # unchanged data leaves the file (and the checkout) as it was
            from ..lab.confirm import standing
            from ..report.lab_book import families

            beside = {"index": families(book), "confirm": standing(data)} if book else None
            for p in build_report(result, out, beside=beside):
                print(p)
            print("case:", V.count_line(result["claims"]))
        else:
            print(f"case: {path} 不在，只重新判定实验手册 / not there: the lab book is re-judged alone")
        if has_book:
            from ..report.lab_book import build_book_report

            for p, doc in changed.items():
                if write_json_if_changed(p, doc) and p.name != "lab_book.json":
                    print(f"lab book: {p.stem}: re-judged ({V.count_line(doc['claims'])})")
            for p in build_book_report(out, data):
                print(p)
            print("lab book:", book["summary"]["count_line"])
    return 0


def _check_before_writing(path: Path, result: dict | None, changed: dict) -> None:
    """Every document about to be written has the shape of its kind (attnlab.schemas): an impossible
    number judged into a NaN p-value is refused here, before the first file is written, never after."""
    from ..errors import AttnlabError
    from ..schemas import check

    if result is not None:
        check("case", result, path, error=AttnlabError)
    for p, doc in changed.items():
        check("lab_book" if p.name == "lab_book.json" else "lab_book_entry", doc, p, error=AttnlabError, id=p.stem)


def _check_not_smaller(out: Path, path: Path, result: dict, overwrite: bool) -> None:
    """The figures of a smaller case (a --quick one) never replace those of the larger case that
    ``out/data/ch1_case.json`` holds, unless ``overwrite``."""
    from ..lab.case.run import read_case_json, result_scale
    from ..outputs import refuse_smaller_than_stored

    there = out / "data" / "ch1_case.json"
    if there.resolve() == path.resolve():
        return
    try:
        new = result_scale(result)
    except (KeyError, TypeError):
        return
    refuse_smaller_than_stored(there, lambda p: result_scale(read_case_json(p)), new, overwrite)
