"""Chinese on any machine: the fonts the package ships, and what they must cover.

Figures (matplotlib): a subset of Noto Sans CJK TC (SIL OFL 1.1, see OFL.txt)
holding every character of the corpus, GB 2312 and the labels, plus a tiny
supplement cut from HanaMinB (OFL 1.1) for the 14 CJK Extension B characters
of the corpus that Noto Sans CJK does not have. ``use_cjk_font()`` registers
both and puts them first in the sans-serif family (matplotlib falls back
glyph by glyph).

Pages (browser): the same two sources as WOFF2 in ``web/static/fonts``
(scripts/make_font_subset.py), covering the corpus, GB 2312 level 1 (what a
reader types in simplified Chinese) and the pages' own strings.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).parent
FONT_DIR = PACKAGE / "report" / "fonts"
FONT_FILE = FONT_DIR / "NotoSansCJKtc-subset.otf"
EXTB_FILE = FONT_DIR / "AttnlabCJKExtB-subset.ttf"  # cut from HanaMinB; renamed (OFL reserved names)
WEB_FONT_DIR = PACKAGE / "web" / "static" / "fonts"
WEB_FONT_FILE = WEB_FONT_DIR / "NotoSansCJKtc-subset.woff2"
WEB_EXTB_FILE = WEB_FONT_DIR / "AttnlabCJKExtB-subset.woff2"


def gb2312_level1() -> str:
    """The 3,755 common hanzi of GB 2312 level 1 (rows 16-55), in code order."""
    out = []
    for row in range(16, 56):
        for cell in range(1, 95):
            try:
                out.append(bytes([0xA0 + row, 0xA0 + cell]).decode("gb2312"))
            except UnicodeDecodeError:  # row 55 ends at cell 89
                pass
    return "".join(out)


@lru_cache(maxsize=1)
def use_cjk_font() -> str:
    """Register the shipped CJK fonts with matplotlib; returns the main family name."""
    import matplotlib
    from matplotlib import font_manager

    names = []
    for path in (FONT_FILE, EXTB_FILE):
        if path.is_file():
            font_manager.fontManager.addfont(str(path))
            names.append(font_manager.FontProperties(fname=str(path)).get_name())
    # a list of families: matplotlib falls back glyph by glyph along it (one "sans-serif" would not)
    matplotlib.rcParams["font.family"] = [*names, "sans-serif"]
    matplotlib.rcParams["font.sans-serif"] = [*names, "DejaVu Sans"]
    matplotlib.rcParams["axes.unicode_minus"] = False
    return names[0]


@lru_cache(maxsize=4)
def _cmap(paths: tuple[Path, ...]) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    covered: set[int] = set()
    for p in paths:
        if p.is_file():
            covered |= set(TTFont(str(p), lazy=True).getBestCmap())
    return frozenset(covered)


def missing_glyphs(text: str, fonts: tuple[Path, ...] = (FONT_FILE, EXTB_FILE)) -> set[str]:
    """Characters of ``text`` that none of ``fonts`` (default: the figures' two) has a glyph for."""
    covered = _cmap(tuple(fonts))
    return {c for c in text if not c.isspace() and ord(c) not in covered}


def web_missing_glyphs(text: str) -> set[str]:
    """Characters of ``text`` the pages' web fonts cannot draw."""
    return missing_glyphs(text, (WEB_FONT_FILE, WEB_EXTB_FILE))
