"""Every character renders: the pages' web font covers the corpus, GB 2312 level 1 and the UI,
and Chromium with every system font hidden draws them from the web font (not as boxes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attnlab.fonts import WEB_EXTB_FILE, WEB_FONT_DIR, WEB_FONT_FILE, gb2312_level1, web_missing_glyphs

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "src" / "attnlab" / "web"
CORPUS = (ROOT / "src" / "attnlab" / "data" / "corpus.txt").read_text(encoding="utf-8")
POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"


def ui_chars() -> str:
    files = [p for p in (WEB / "static").iterdir() if p.suffix in (".html", ".js", ".css")]
    files += [WEB / "server.py", WEB / "timeline.py"]
    text = "".join(p.read_text(encoding="utf-8") for p in files)
    return "".join(sorted({c for c in text if c.isprintable() and c != "\ufeff"}))


def test_gb2312_level1_is_the_3755_common_hanzi():
    chars = gb2312_level1()
    assert len(chars) == len(set(chars)) == 3755
    assert chars[0] == "啊" and chars[-1] == "座"  # the first and last of level 1
    assert all("\u4e00" <= c <= "\u9fff" for c in chars)


def test_web_font_covers_every_corpus_character():
    corpus = {c for c in CORPUS if not c.isspace()}
    assert len(corpus) > 5000
    assert web_missing_glyphs("".join(corpus)) == set()
    # 14 of them are CJK Extension B characters that Noto lacks and only the supplement has
    from attnlab.fonts import missing_glyphs

    lacking = missing_glyphs("".join(corpus), (WEB_FONT_FILE,))
    assert len(lacking) == 14 and all(0x20000 <= ord(c) <= 0x2FFFF for c in lacking)
    assert missing_glyphs("".join(lacking), (WEB_EXTB_FILE,)) == set() and WEB_EXTB_FILE.stat().st_size < 20_000


def test_web_font_covers_gb2312_level1_and_the_ui():
    assert web_missing_glyphs(gb2312_level1()) == set()
    assert web_missing_glyphs(ui_chars()) == set(), "re-run scripts/make_font_subset.py"
    assert web_missing_glyphs(POEM) == set()


def test_web_fonts_are_woff2_licensed_and_not_too_large():
    from fontTools.ttLib import TTFont

    for path in (WEB_FONT_FILE, WEB_EXTB_FILE):
        assert TTFont(str(path), lazy=True).flavor == "woff2"
    assert WEB_FONT_FILE.stat().st_size < 2_600_000  # 2.1 MiB for ~7,000 characters
    ofl = (WEB_FONT_DIR / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE" in ofl and WEB_FONT_FILE.name in ofl and WEB_EXTB_FILE.name in ofl
    # a Modified Version must not use the Reserved Font Names of HanaMinB
    names = {str(r) for r in TTFont(str(WEB_EXTB_FILE))["name"].names if r.nameID in (1, 4, 6, 16)}
    assert names and not any("Hana" in n for n in names)
    css = (WEB / "static" / "style.css").read_text(encoding="utf-8")
    assert f"fonts/{WEB_FONT_FILE.name}" in css and f"fonts/{WEB_EXTB_FILE.name}" in css


# ----------------------------------------------------------------- Chromium, no CJK system font
# Only DejaVu Sans (Latin; from matplotlib's own data, so it is there on every machine): a
# machine without CJK fonts. (Chromium with no font at all crashes on its first canvas text.)
NO_CJK_CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{fonts}</dir><cachedir>{cache}</cachedir></fontconfig>
"""

# In the page: the ink of each character drawn with the web font, and whether its bitmap differs
# from the font's .notdef box (U+E000 is in no font). `control` is drawn with a family that does
# not exist: with the system fonts hidden it must leave no ink at all.
INK_JS = """async ([chars, family]) => {
  await document.fonts.load(`32px ${family}`, chars.join(""));
  const c = document.createElement("canvas"); c.width = 40; c.height = 40;
  const g = c.getContext("2d", { willReadFrequently: true });
  const bitmap = (ch, font) => {
    g.fillStyle = "#fff"; g.fillRect(0, 0, 40, 40);
    g.fillStyle = "#000"; g.font = font; g.textBaseline = "middle"; g.fillText(ch, 4, 20);
    const d = g.getImageData(0, 0, 40, 40).data; let ink = 0, key = "";
    for (let i = 0; i < d.length; i += 4) { const on = d[i] < 128; ink += on; key += on ? "1" : "0"; }
    return [ink, key];
  };
  const font = `32px ${family}`;
  const [, notdef] = bitmap("\\ue000", font);
  const bad = [];
  for (const ch of chars) {
    const [ink, key] = bitmap(ch, font);
    if (!ink || key === notdef) bad.push(ch);
  }
  const control = bitmap("舉", "32px sans-serif")[1] === bitmap("\\ue000", "32px sans-serif")[1];
  return { bad, control, checked: chars.length };
}"""


@pytest.fixture(scope="module")
def bare_browser(tmp_path_factory):
    """Chromium whose fontconfig knows no CJK font: only the web fonts can draw Chinese."""
    import shutil

    import matplotlib

    from test_web_browser import CHROMIUM_ARGS, find_chromium, unavailable

    exe = find_chromium()
    if exe is None:
        unavailable("no Chromium found")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    d = tmp_path_factory.mktemp("nocjk")
    (d / "fonts").mkdir()
    shutil.copy(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf", d / "fonts")
    conf = d / "fonts.conf"
    conf.write_text(NO_CJK_CONF.format(fonts=d / "fonts", cache=d / "cache"), encoding="utf-8")
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, env=env)
        yield b
        b.close()


@pytest.mark.browser
def test_chromium_without_cjk_system_fonts_draws_the_corpus_and_simplified_input(bare_browser, tmp_path):
    from attnlab.web.server import DEFAULT_RUN, create_app
    from test_web_browser import ServerThread
    from test_web_playground import corpus_run

    corpus_run(tmp_path / "runs" / DEFAULT_RUN)
    context = bare_browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    with ServerThread(create_app(None, runs_dir=str(tmp_path / "runs"))) as url:
        page.goto(f"{url}/exp1-2")
        page.get_by_test_id("map-L0H0").wait_for()
        page.get_by_test_id("text-input").fill(POEM)
        page.get_by_test_id("run-attention").click()
        from playwright.sync_api import expect

        expect(page.get_by_test_id("converted-note")).to_contain_text("已转换为繁体")
        expect(page.get_by_test_id("converted-text")).to_have_text("牀前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。")
        corpus = sorted({c for c in CORPUS if not c.isspace() and ord(c) <= 0xFFFF})
        extb = sorted({c for c in CORPUS if ord(c) > 0xFFFF})  # 4 in Noto, 14 in the supplement
        wanted = corpus + sorted(set(gb2312_level1()) - set(corpus))
        got = page.evaluate(INK_JS, [wanted, '"AttnlabCJK"'])
        assert got["control"], "a system font has CJK glyphs: the test would prove nothing"
        assert got["checked"] == len(wanted) > 6500 and got["bad"] == [], (
            f"drawn as boxes or blank: {''.join(got['bad'][:40])}"
        )
        got = page.evaluate(INK_JS, [extb, '"AttnlabCJK", "AttnlabCJKExtB"'])
        assert len(extb) == 18 and got["bad"] == []
        # the page itself uses the web font: the textarea's text has the web font's width, not zero
        width = page.evaluate(
            """() => { const s = document.createElement("span"); s.textContent = "舉頭望明月";
               s.style.fontSize = "20px"; document.body.append(s); const w = s.getBoundingClientRect().width;
               s.remove(); return w; }"""
        )
        assert 95 <= width <= 105  # five full-width glyphs of 20 px
    context.close()
    assert not errors, errors
