"""The README is a front door and the docs stay true: every relative link resolves, the
README stays small, and the book-style code snippet in docs/commands.md runs as printed."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    missing = [target for target in LINK.findall(text) if "://" not in target and not (page.parent / target).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 10_000
    for command in ("make case", "make test"):
        assert command in text
    for page in ("docs/case.md", "docs/lab-book.md", "docs/playground.md", "docs/commands.md"):
        assert f"({page})" in text


def test_commands_snippet_runs():
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/commands.md lost its code snippet"
    scope: dict = {}
    exec(compile(blocks[0], "docs/commands.md", "exec"), scope)  # noqa: S102 - our own docs
    diag = scope["model"].blocks[0].attn.last_diag
    assert set(diag) >= {"weight_entropy", "jacobian_fro", "logit_std"}
    assert 0.0 < diag["weight_entropy"] <= 1.0


def test_lab_book_page_matches_the_committed_book():
    """docs/lab-book.md's counts and compute table are generated from data/lab_book.json."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_lab_book.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
