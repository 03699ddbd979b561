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
    assert ["ReportCJK", "loaded"] in [[f.strip("'\""), s] for f, s in fonts], fonts
    cjk = {c for c in text if "\u4e00" <= c <= "\u9fff"}
    assert len(cjk) > 50 and not missing_glyphs("".join(cjk))
    book = json.loads((built / "data" / "lab_book.json").read_text(encoding="utf-8"))
    assert len(sections) == len(book["sections"])
    assert sorted(toc) == sorted(f"#{s}" for s in sections)


# every word (letters, digits and underscores, a decimal number with its point) inside a table
# must lie on one line: a table that fits only by breaking words mid-word does not count
WORDS_AND_TABLES = r"""() => {
  const vw = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('table')]
    .map(t => [t.rows[0] ? t.rows[0].innerText.slice(0, 60) : '', Math.round(t.getBoundingClientRect().right)])
    .filter(([, right]) => right > vw);
  const broken = [];
  const word = /[A-Za-z0-9_]+(?:[.][A-Za-z0-9_]+)*/g;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.parentElement.closest('table')) continue;
    for (const m of n.data.matchAll(word)) {
      if (m[0].length < 2) continue;
      const r = document.createRange();
      r.setStart(n, m.index);
      r.setEnd(n, m.index + m[0].length);
      const lines = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
      if (lines.size > 1) broken.push(m[0]);
    }
  }
  return {width: document.documentElement.scrollWidth, wide, broken};
}"""


def _today(report: str) -> str:
    """The report rendered now from the committed JSON with today's code (figures as committed)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if report == "ch1_case.html":
        from attnlab.report.case_report import build_blocks, to_html

        res = json.loads((root / "data" / "ch1_case.json").read_text(encoding="utf-8"))
        return to_html(build_blocks(res, "../figures"), root / "figures")
    from attnlab.report.lab_book import load_book, render_html

    book, docs = load_book(root)
    return render_html(book, docs, root)


@pytest.mark.parametrize("source", ["committed", "today"])
@pytest.mark.parametrize("report", ["ch1_case.html", "lab_book.html"])
def test_reports_fit_a_1280_px_screen_without_breaking_words(browser, report, source):  # noqa: F811
    """No sideways scrolling, no table wider than the window, and no word broken mid-word to get
    there: long claim ids and numbers wrap at spaces, or move to a line of their own."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    html = (root / "reports" / report).read_text(encoding="utf-8") if source == "committed" else _today(report)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_content(html, wait_until="load")
    page.evaluate("document.fonts.ready.then(() => true)")  # measured in the embedded fonts
    got = page.evaluate(WORDS_AND_TABLES)
    context.close()
    assert got["width"] <= 1280, f"{report} is {got['width']} px wide at a 1280 px window"
    assert not got["wide"], f"{report}: tables wider than the window: {got['wide']}"
    assert not got["broken"], f"{report}: words broken mid-word: {got['broken'][:20]}"


def test_the_case_reports_claims_table_is_no_wider_than_the_lab_books(browser):  # noqa: F811
    """The case page shows the lab book's claims table with each claim's id; the id, which cannot
    break, goes on a line of its own across the table, so in a narrower window the case page is no
    wider than the lab book (an id inside the claim cell made it 1,251 px against the book's 1,192)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    widths = {}
    for report in ("ch1_case.html", "lab_book.html"):
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        page.set_content((root / "reports" / report).read_text(encoding="utf-8"), wait_until="load")
        page.evaluate("document.fonts.ready.then(() => true)")
        widths[report] = page.evaluate("document.documentElement.scrollWidth")
        context.close()
    assert widths["ch1_case.html"] <= widths["lab_book.html"], widths
