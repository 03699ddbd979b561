"""Every HTML report travels as one file: rendered into a folder, copied alone into an empty
one, it loads nothing from anywhere (only data: URIs, in-page anchors and plain hyperlinks),
its embedded fonts draw every character it shows (read with fontTools from the page itself),
and in Chromium from file:// every image and font face loads. The committed reports/*.html
pass the same checks."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from test_web_browser import browser  # noqa: F401  (fixture; skips without Chromium)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(p.name for p in (ROOT / "reports").glob("*.html"))
RENDERED = ("ch1_case.html", "lab_book.html")
PAGES = [("rendered", n) for n in RENDERED] + [("committed", n) for n in COMMITTED]
IDS = [f"{kind}-{name}" for kind, name in PAGES]


@pytest.fixture(scope="module")
def alone(tmp_path_factory) -> Path:
    """Both reports rendered from the committed JSON into a scratch root, then each HTML copied
    by itself into an empty folder (no figures/, no src/ beside it)."""
    from attnlab.report.case_report import build_report
    from attnlab.report.lab_book import build_book_report

    work = tmp_path_factory.mktemp("render")
    res = json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    build_report(res, work / "case")
    (work / "book" / "data").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "lab_book.json", work / "book" / "data")
    shutil.copytree(ROOT / "data" / "lab_book", work / "book" / "data" / "lab_book")
    build_book_report(work / "book")
    out = tmp_path_factory.mktemp("alone")
    shutil.copy(work / "case" / "reports" / "ch1_case.html", out)
    shutil.copy(work / "book" / "reports" / "lab_book.html", out)
    return out


@pytest.fixture(params=PAGES, ids=IDS)
def report(request) -> Path:
    kind, name = request.param
    return (request.getfixturevalue("alone") if kind == "rendered" else ROOT / "reports") / name


# ------------------------------------------------------------------------- reading a page
class Page(HTMLParser):
    """What a page loads and what it shows, read independently of attnlab's own helpers."""

    LOADS = {"src", "srcset", "poster", "data", "background", "xlink:href", "action", "formaction"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []
        self.shown: list[str] = []
        self.styles: list[str] = []
        self.images = 0
        self._stack: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self._stack.append(tag)
        self.images += tag == "img"
        for k, v in attrs:
            if v is None:
                continue
            if k in self.LOADS or k == "href":
                self.refs.append((tag, k, v.strip()))
            elif k == "style":
                self.styles.append(v)
            elif k in ("alt", "title"):
                self.shown.append(v)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self._stack.pop()

    def handle_endtag(self, tag):
        if tag in self._stack:
            while self._stack.pop() != tag:
                pass

    def handle_data(self, data):
        inside = self._stack[-1] if self._stack else ""
        if inside == "style":
            self.styles.append(data)
        elif inside != "script":
            self.shown.append(data)


def urls(css: str) -> list[str]:
    return [m.group(2).strip() for m in re.finditer(r"""url\(\s*(["']?)(.*?)\1\s*\)""", css, re.S)] + [
        m.group(1) for m in re.finditer(r"""@import\s+["']([^"']+)""", css)
    ]


def faces(css: str) -> dict[str, frozenset[int]]:
    """{family: its cmap} of every @font-face the CSS embeds."""
    from fontTools.ttLib import TTFont

    out = {}
    for block in re.findall(r"@font-face\s*\{(.*?)\}", css, re.S):
        family = re.search(r"""font-family\s*:\s*["']?([^"';]+)""", block).group(1).strip()
        m = re.search(r"url\(\s*[\"']?data:font/[\w+-]+;base64,([A-Za-z0-9+/=]+)", block)
        assert m, f"@font-face {family} is not embedded as a data: URI"
        font = TTFont(io.BytesIO(base64.b64decode(m.group(1))))
        out[family] = frozenset(font.getBestCmap())
    return out


def drawn(text: str) -> set[str]:
    """Characters a font must draw: all but line breaks, tabs and control characters."""
    return {c for c in text if c >= " " and not ("\x7f" <= c <= "\x9f")}


# ---------------------------------------------------------------------------------- tests
def test_a_report_loads_nothing_but_itself(report):
    page = Page(report.read_text(encoding="utf-8"))
    bad = [
        f"<{tag}> {attr}={value[:60]}"
        for tag, attr, value in page.refs
        if not (
            value.startswith("data:")
            or (attr == "href" and value.startswith("#"))
            or (tag == "a" and attr == "href" and re.match(r"(https?|mailto):", value))
        )
    ]
    bad += [u[:60] for css in page.styles for u in urls(css) if not u.startswith("data:")]
    assert not bad, f"{report.name} points outside itself: {bad}"
    assert "@font-face" in "".join(page.styles)
    if report.name in RENDERED:  # both have figures, each embedded
        srcs = [v for tag, attr, v in page.refs if tag == "img" and attr == "src"]
        assert page.images >= 3 and len(srcs) == page.images
        assert all(s.startswith(("data:image/png;base64,", "data:image/svg+xml")) for s in srcs)


def test_the_embedded_fonts_draw_every_character_the_page_shows(report):
    page = Page(report.read_text(encoding="utf-8"))
    css = "".join(page.styles)
    embedded = faces(css)
    wanted = drawn("".join(page.shown))
    covered = frozenset().union(*embedded.values())
    missing = sorted(c for c in wanted if ord(c) not in covered)
    assert len(wanted) > 300 and not missing, (
        f"{report.name}: {len(wanted) - len(missing)}/{len(wanted)} characters drawn by the embedded fonts; "
        f"missing {''.join(missing)!r}"
    )
    assert any("\u4e00" <= c <= "\u9fff" for c in wanted)
    # every font stack of the page reaches, through its embedded families, every character
    rules = re.sub(r"@font-face\s*\{.*?\}", "", css, flags=re.S)
    stacks = re.findall(r"font-family\s*:\s*([^;}]+)", rules)
    assert stacks
    for stack in stacks:
        names = [n.strip().strip("'\"") for n in stack.split(",")]
        reach = frozenset().union(*(embedded[n] for n in names if n in embedded))
        assert not [c for c in wanted if ord(c) not in reach], f"font-family: {stack} misses characters"
    # no face carries more than the page: each holds only characters of the page (and .notdef)
    for family, cmap in embedded.items():
        extra = {chr(c) for c in cmap} - wanted
        assert not extra, f"{family} holds characters the page does not show: {''.join(sorted(extra))[:40]!r}"


def test_the_lab_book_draws_its_first_sentence_and_circled_numbers():
    """The sentence that lost 邀 请 读 and the ⑬ that was blank, in the committed book."""
    text = (ROOT / "reports" / "lab_book.html").read_text(encoding="utf-8")
    page = Page(text)
    cmap = frozenset().union(*faces("".join(page.styles)).values())
    shown = "".join(page.shown)
    assert "书中邀请读者做的" in shown and "⑬" in shown
    assert all(ord(c) in cmap for c in "邀请读⑬")


@pytest.mark.browser
def test_a_copied_report_opens_from_file_with_every_image_and_font(report, browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    state = page.evaluate(
        """async () => {
        await document.fonts.ready;
        const faces = [...document.fonts].map(f => [f.family.replace(/["']/g, ''), f.status]);
        return {
          faces,
          checked: faces.map(([family]) => document.fonts.check(`16px "${family}"`)),
          images: [...document.images].map(i => [i.alt, i.complete, i.naturalWidth]),
        };
    }"""
    )
    context.close()
    assert all(u == report.as_uri() or u.startswith("data:") for u in requests), requests
    assert not errors, errors
    assert state["faces"] and all(status == "loaded" for _, status in state["faces"]), state["faces"]
    assert "ReportCJK" in [f for f, _ in state["faces"]] and all(state["checked"]), state
    assert all(ok and width > 0 for _, ok, width in state["images"]), state["images"]
    if report.name in RENDERED:
        assert len(state["images"]) >= 3


# ------------------------------------------------------------------------- the case's order
def _case_blocks():
    from attnlab.lab.case.claims import check_claims
    from attnlab.report.case_report import build_blocks

    res = json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    res["claims"] = check_claims(res)
    return res, build_blocks(res, "../figures")


def test_the_case_report_opens_with_its_results_and_the_method_after():
    res, blocks = _case_blocks()
    heads = [b[2] for b in blocks if b[0] == "h"]
    assert heads[1].startswith("结果 / results") and heads.index("判定方法 / method") == 3, heads[:5]
    tables = [i for i, b in enumerate(blocks) if b[0] == "table"]
    method = next(i for i, b in enumerate(blocks) if b[0] == "h" and b[2] == "判定方法 / method")
    every = next(i for i, b in enumerate(blocks) if b[0] == "rendered")  # the lab book's claims table
    assert tables[0] < every < method
    rows = [line for line in blocks[every][1].splitlines() if line.startswith("| §")]
    ids = [re.search(r"`([a-z0-9_]+)` \|", line).group(1) for line in rows]
    assert ids == [c["id"] for c in res["claims"]]  # every claim with its id, before the method
    assert all(f"<code class=id>{i}</code>" in blocks[every][2] for i in ids)
    assert len(blocks[tables[0]][2]) >= 8  # the headline claims, each with the book's number and ours


def test_every_claim_verdict_beside_a_number_names_its_claim():
    """A verdict in a table row names the claim it belongs to (the row of the claims table itself
    starts with the id); a ratio that no claim judges says so and whose claim judges what."""
    from attnlab.report.case_report import verdict_label

    res, blocks = _case_blocks()
    ids = {c["id"] for c in res["claims"]}
    labels = {verdict_label(c) for c in res["claims"]} - {"—"}
    assert labels >= {"✓ PASS", "✗ FAIL"}
    unnamed = []
    for b in (b for b in blocks if b[0] == "table"):
        for row in b[2]:
            for cell in map(str, row):
                if any(label in cell for label in labels):
                    named = re.findall(r"`([a-z0-9_]+)`", cell)
                    if not (row[0] in ids or (named and set(named) <= ids)):
                        unnamed.append((row[0], cell))
    assert not unnamed, unnamed
    ratio = [row for b in blocks if b[0] == "table" for row in b[2] if "ratio" in str(row[0])]
    assert ratio and all(str(row[-1]) not in ("—", "") for row in ratio)  # every ratio row says whose verdict
    assert any("reported, not judged" in str(row[-1]) for row in ratio)


def test_the_norm_bars_come_from_the_latin_face_not_the_cjk_one():
    """‖ in ‖J‖_F is drawn by DejaVu Sans: Noto Sans CJK's ‖ is full-width and pushes the J away."""
    from attnlab.report.selfcontained import LATIN_DRAWN, TEXT_FAMILIES, font_css

    css, missing = font_css("‖J‖ 熵 ✓")
    embedded = faces(css)
    assert not missing and LATIN_DRAWN == {"‖"}
    assert ord("‖") in embedded[TEXT_FAMILIES[2]]  # ReportSymbols (DejaVu Sans)
    assert ord("‖") not in embedded[TEXT_FAMILIES[0]] and ord("熵") in embedded[TEXT_FAMILIES[0]]
    page = Page((ROOT / "reports" / "ch1_case.html").read_text(encoding="utf-8"))
    committed = faces("".join(page.styles))
    assert ord("‖") in committed[TEXT_FAMILIES[2]] and ord("‖") not in committed[TEXT_FAMILIES[0]]


def test_a_case_of_ones_own_shows_no_verdicts_judged_on_other_numbers():
    """Holm and the confirmatory round judge the committed book's numbers: the committed case report,
    written beside that book, shows them; a case report built from a result alone leaves them empty."""
    res, blocks = _case_blocks()
    own = next(b for b in blocks if b[0] == "rendered")
    committed = (ROOT / "reports" / "ch1_case.md").read_text(encoding="utf-8")
    assert "fresh seeds" in committed and "differs from the exploratory verdict" in committed
    assert "fresh seeds" not in own[1] and "fresh seeds" not in own[2]
    rows = [line.split(" | ") for line in own[1].splitlines() if line.startswith("| §")]
    assert rows and all(cells[6] == "—" for cells in rows)  # the Holm column


@pytest.mark.parametrize("name", ["lab_book.md", "ch1_case.md"])
def test_every_markdown_table_row_has_its_headers_cells(name):
    """A | inside a cell (|Δ|, a judge's detail) is escaped: every row keeps its table's columns
    (at the lab book of be46134, 111 rows did not)."""
    lines = (ROOT / "reports" / name).read_text(encoding="utf-8").split("\n")
    width, broken = None, []
    for line in lines:
        if not line.startswith("|"):
            width = None
            continue
        n = len(re.split(r"(?<!\\)\|", line)) - 2
        width = n if width is None else width
        if n != width:
            broken.append(line[:80])
    assert not broken, broken[:5]
