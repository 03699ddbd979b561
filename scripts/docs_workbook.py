"""Regenerate docs/workbook.md and the workbook page's data from src/attnlab/workbook/workbook.json, and
the lab's per-seed gaps the exercise 1 and 2 checks ship with (from data/lab_book).

Usage: python scripts/docs_workbook.py  (tests/workbook/test_data.py checks both are up to date)
"""

from pathlib import Path

from attnlab.io import json_text
from attnlab.workbook import FINDINGS, derive_findings, render_markdown
from attnlab.workbook.measured import LAB_GAPS, derive_lab_gaps
from attnlab.workbook.page import page_data_js

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    FINDINGS.write_text(json_text(derive_findings()), encoding="utf-8")
    (ROOT / "docs" / "workbook.md").write_text(render_markdown(), encoding="utf-8")
    (ROOT / "src" / "attnlab" / "web" / "static" / "workbook_data.js").write_text(page_data_js(), encoding="utf-8")
    LAB_GAPS.write_text(json_text(derive_lab_gaps()), encoding="utf-8")
    print(
        "wrote src/attnlab/workbook/findings.json, docs/workbook.md, src/attnlab/web/static/workbook_data.js, src/attnlab/workbook/lab_gaps.json"
    )
