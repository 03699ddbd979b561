"""The lab book at /book in a real headless Chromium: nothing leaves 127.0.0.1, every figure
and the CJK font load, the table of contents links every section. Skips without Chromium
outside CI (see test_web_browser.py)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from test_web_browser import ServerThread, browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("one_thread")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from attnlab.cli import main

    root = tmp_path_factory.mktemp("labbook")
    assert main(["book", "--quick", "--no-progress", "--out", str(root), "--only", "markov", "§1.8.7"]) == 0
    return root


def test_book_page(built, browser):  # noqa: F811
    from attnlab.fonts import missing_glyphs
    from attnlab.web.server import create_app

    app = create_app(book_html=str(built / "reports" / "lab_book.html"))
    with ServerThread(app) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        requests, errors = [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(base + "/book")
        page.wait_for_load_state("load")
        fonts = page.evaluate("""async () => { await document.fonts.ready;
            return [...document.fonts].map(f => [f.family, f.status]); }""")
        images = page.evaluate("() => [...document.images].map(i => [i.alt, i.complete, i.naturalWidth])")
        sections = page.evaluate("() => [...document.querySelectorAll('section[id]')].map(s => s.id)")
        toc = page.evaluate("() => [...document.querySelectorAll('#toc a')].map(a => a.getAttribute('href'))")
        text = page.inner_text("body")
        context.close()
    hosts = {(urlsplit(u).scheme, urlsplit(u).hostname) for u in requests}
    assert all(scheme == "data" or host == "127.0.0.1" for scheme, host in hosts), hosts
    assert not errors, errors
    assert images and all(ok and w > 100 for _, ok, w in images), images
    assert ["BookCJK", "loaded"] in [[f.strip("'\""), s] for f, s in fonts], fonts
    cjk = {c for c in text if "\u4e00" <= c <= "\u9fff"}
    assert len(cjk) > 50 and not missing_glyphs("".join(cjk))
    book = json.loads((built / "data" / "lab_book.json").read_text(encoding="utf-8"))
    assert len(sections) == len(book["sections"])
    assert sorted(toc) == sorted(f"#{s}" for s in sections)


@pytest.mark.parametrize("report", ["ch1_case.html", "lab_book.html"])
def test_committed_reports_fit_a_1280_px_screen(browser, report):  # noqa: F811
    """No sideways scrolling: long claim ids and numbers wrap inside their table cells."""
    from pathlib import Path

    from attnlab.report.case_report import build_blocks, to_html

    root = Path(__file__).resolve().parents[1]
    if report == "ch1_case.html":  # rendered from the committed JSON with today's style
        res = json.loads((root / "data" / "ch1_case.json").read_text(encoding="utf-8"))
        html = to_html(build_blocks(res, "../figures"), "")
    else:
        html = (root / "reports" / report).read_text(encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_content(html, wait_until="load")
    width = page.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert width <= 1280, f"{report} is {width} px wide at a 1280 px window"
