"""The workbook's data file: every item of the chapter, in order, and what is made from it."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab import workbook as wb
from attnlab.workbook.page import page_data_js

ROOT = Path(__file__).resolve().parents[2]
CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱"


def test_every_item_once():
    ids = wb.ids()
    assert sorted(ids) == sorted(
        [f"ex{i}" for i in range(1, 5)] + [f"q{i}" for i in range(1, 11)] + [f"cp{i}" for i in range(1, 19)]
    )


def test_chapter_order():
    """Sections never go backwards (the checkpoints are numbered out of order, the list is not)."""

    def key(sec: str) -> tuple:
        return tuple(int(x) for x in re.match(r"§([\d.]+)", sec).group(1).split("."))

    secs = [key(it["section"]) for it in wb.items()]
    assert secs == sorted(secs)
    assert wb.ids()[:3] == ["cp1", "cp2", "cp15"]  # ⑮ comes before ③ in the chapter


def test_items_say_what_where_how():
    for it in wb.items():
        assert it["quote"].strip() and it["do"].strip() and it["check"]["how"].strip(), it["id"]
        assert it["check"]["kind"] in wb.CHECKS, it["id"]
        if it["kind"] != "exercise":
            assert it["answer"]["text"].strip() and it["answer"]["section"].startswith("§"), it["id"]
    for i, c in enumerate(CIRCLED, 1):
        assert wb.item(f"cp{i}")["number"] == c


def test_code_and_measured_items_are_the_exercises():
    kinds = {it["id"]: it["check"]["kind"] for it in wb.items()}
    assert kinds["ex3"] == kinds["ex4"] == "code"
    assert kinds["ex1"] == kinds["ex2"] == "measured"
    assert {k for k, v in kinds.items() if v == "computed"} == {"q3", "q7", "q8", "q9", "q10"}


def test_docs_and_page_data_up_to_date():
    assert (ROOT / "docs" / "workbook.md").read_text(encoding="utf-8") == wb.render_markdown(), (
        "docs/workbook.md is stale: run python scripts/docs_workbook.py"
    )
    assert (ROOT / "src/attnlab/web/static/workbook_data.js").read_text(encoding="utf-8") == page_data_js(), (
        "workbook_data.js is stale: run python scripts/docs_workbook.py"
    )


def test_every_finding_about_the_book_is_linked_from_the_workbook():
    """Each claim the lab book files as a finding about the book is shipped (findings.json, up to date)
    and linked from the workbook item it concerns, so a student who does that item meets it."""
    assert json.loads(wb.FINDINGS.read_text(encoding="utf-8")) == wb.derive_findings(), (
        "findings.json is stale: run python scripts/docs_workbook.py"
    )
    linked = {cid for it in wb.items() for cid in it.get("findings", [])}
    assert set(wb.derive_findings()) == linked
    assert "big_unscaled_jacobian_drops" in wb.item("cp2")["findings"]
    assert "the lab book's finding" in wb.render_markdown()


def test_unknown_id_is_one_line():
    with pytest.raises(wb.WorkbookError, match="ex1–ex4"):
        wb.item("ex5")


def _cli(*argv):
    return subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "exercise", *argv], capture_output=True, text=True, timeout=60
    )


def test_cli_list_and_show():
    out = _cli("list")
    assert out.returncode == 0
    lines = out.stdout.strip().split("\n")
    assert [ln.split()[0] for ln in lines] == wb.ids()
    show = _cli("show", "ex3")
    assert show.returncode == 0 and "centroid(p)" in show.stdout and "§1.20.3" in show.stdout
    bad = _cli("show", "cp19")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "cp19" in bad.stderr


def test_data_file_is_json_with_items():
    assert isinstance(json.loads(wb.DATA.read_text(encoding="utf-8"))["items"], list)
