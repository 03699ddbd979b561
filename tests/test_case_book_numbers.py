"""The case types none of the chapter's numbers: every one comes from reference_values.json through
attnlab.book (book_values). The scan reads the numeric literals of the case's modules (strings aside:
they quote the book's words) and looks for the numbers of the chapter's case tables."""

import ast
from pathlib import Path

import pytest

from attnlab.book import book_values

SRC = Path(__file__).resolve().parents[1] / "src" / "attnlab"
CASE_MODULES = (
    "lab/case/claims.py",
    "lab/case/run.py",
    "lab/case/settings.py",
    "lab/case/__init__.py",
    "report/case_report.py",
)
SECTIONS = (
    "case_loss_1_2_and_1_4",
    "init_sweep_1_3",
    "dynamics_big_1_12",
    "qk_scale_layer0_1_7_7",
    "small_model_diagnostics_1_13",
)
# numbers that are also our own sizes and thresholds (d_head, 0, a tenth, a power of ten): not the book's
GENERIC = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 0.1, 0.2, 0.05, 0.01, 0.001, 0.0001}


def _leaves(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, list):
        for v in x:
            yield from _leaves(v)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield x


BOOK = {x for s in SECTIONS for x in _leaves(book_values(s))} - GENERIC


def typed_book_numbers(source: str) -> list[tuple[int, float]]:
    """(line, value) of every numeric literal in ``source`` that is one of the chapter's case numbers."""
    return [
        (n.lineno, n.value)
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Constant)
        and isinstance(n.value, (int, float))
        and not isinstance(n.value, bool)
        and n.value in BOOK
    ]


def test_the_scan_finds_a_typed_book_number():
    assert {5477, 0.07, 0.17, 0.29, 0.95, 1.615, 222, 1480} <= BOOK
    found = typed_book_numbers('x = stats.value(v, 5477, tol=0.5 * 5477)\ny = "0.17 in words"\nz = 0.070\n')
    assert sorted(found) == [(1, 5477), (1, 5477), (3, 0.07)]


@pytest.mark.parametrize("module", CASE_MODULES)
def test_no_book_number_is_typed_in_the_case(module):
    found = typed_book_numbers((SRC / module).read_text(encoding="utf-8"))
    assert not found, f"{module} types the book's numbers at (line, value) {found}: read them with book_values"
