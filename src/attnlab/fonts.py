"""Chinese in matplotlib figures on any machine.

The package ships a subset of Noto Sans CJK TC (SIL OFL 1.1, see OFL.txt)
holding every character of the corpus and of the labels. ``use_cjk_font()``
registers it and puts it first in the sans-serif family.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

FONT_DIR = Path(__file__).parent / "report" / "fonts"
FONT_FILE = FONT_DIR / "NotoSansCJKtc-subset.otf"


@lru_cache(maxsize=1)
def use_cjk_font() -> str:
    """Register the shipped CJK font with matplotlib; returns its family name."""
    import matplotlib
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(FONT_FILE))
    name = font_manager.FontProperties(fname=str(FONT_FILE)).get_name()
    matplotlib.rcParams["font.family"] = "sans-serif"
    matplotlib.rcParams["font.sans-serif"] = [name, "DejaVu Sans"]
    matplotlib.rcParams["axes.unicode_minus"] = False
    return name


def missing_glyphs(text: str) -> set[str]:
    """Characters of ``text`` the shipped font has no glyph for."""
    from fontTools.ttLib import TTFont

    cmap = TTFont(str(FONT_FILE)).getBestCmap()
    return {c for c in text if not c.isspace() and ord(c) not in cmap}
