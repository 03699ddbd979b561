"""Cut Noto Sans CJK TC down to what the figures need: every character of the
shipped corpus, GB 2312 (common simplified Chinese), the Chinese of the figure
and report labels, and ASCII.

The figures must show Chinese on a machine with no CJK font, so the package
ships this subset (SIL Open Font License, text beside the font). Traditional
glyph forms (TC) because the Tang corpus is in traditional characters.
Re-run after adding Chinese labels:

    .venv/bin/python scripts/make_report_font.py
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parents[1]
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
OUT = ROOT / "src" / "attnlab" / "report" / "fonts" / "NotoSansCJKtc-subset.otf"


def gb2312_chars() -> set[str]:
    """The 6,763 hanzi and the symbols of GB 2312, so text typed in simplified
    Chinese (床前明月光) renders too, not only the traditional corpus (牀)."""
    out = set()
    for hi in range(0xA1, 0xF8):
        for lo in range(0xA1, 0xFF):
            try:
                out.add(bytes([hi, lo]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return out


# numbering and notation the chapter and the reports use: ①–⑳, super- and subscript digits
NUMBERING = "".join(map(chr, range(0x2460, 0x2474))) + "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻₀₁₂₃₄₅₆₇₈₉"


def wanted_chars() -> str:
    chars = set((ROOT / "src" / "attnlab" / "data" / "corpus.txt").read_text(encoding="utf-8"))
    for p in (ROOT / "src" / "attnlab").rglob("*.py"):  # every label, title and message
        chars |= set(p.read_text(encoding="utf-8"))
    # the committed results the reports show (claims, notes, samples): the HTML reports embed
    # this font cut to each page's text (attnlab.report.selfcontained)
    for p in [*(ROOT / "data").glob("*.json"), *(ROOT / "data" / "lab_book").glob("*.json")]:
        chars |= set(p.read_text(encoding="utf-8"))
    chars |= gb2312_chars()  # what readers type: simplified Chinese
    chars |= {chr(c) for c in range(0x20, 0x7F)}
    chars |= set("—–−×·…√∞←→‖²³Σ≈≤≥「」（）：；，。、！？“”‘’") | set(NUMBERING)
    # every character but controls and unassigned ones (the ideographic space U+3000 of the
    # headings included: str.isprintable() would drop it)
    return "".join(sorted(c for c in chars if unicodedata.category(c)[0] != "C"))


FAMILY = "Attnlab CJK TC"


def rename_family(path: Path, family: str) -> None:
    """Give the subset its own family name, so matplotlib never confuses it with a
    full Noto Sans CJK installed on the machine (and its missing glyphs show up
    in tests instead of being silently filled in by the system font)."""
    from fontTools.ttLib import TTFont

    font = TTFont(str(path))
    for rec in font["name"].names:
        if rec.nameID in (1, 16):
            rec.string = family
        elif rec.nameID in (4,):
            rec.string = f"{family} Regular"
        elif rec.nameID == 6:
            rec.string = family.replace(" ", "") + "-Regular"
    if "CFF " in font:
        cff = font["CFF "].cff
        cff.fontNames = [family.replace(" ", "") + "-Regular"]
        top = cff.topDictIndex[0]
        top.FamilyName = family
        top.FullName = f"{family} Regular"
    font.save(str(path))


def main() -> int:
    if not SOURCE.is_file():
        print(f"error: {SOURCE} not found; apt-get install fonts-noto-cjk", file=sys.stderr)
        return 1
    names = [f["name"].getDebugName(1) for f in TTCollection(str(SOURCE)).fonts]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    subset.main(
        [
            str(SOURCE),
            f"--font-number={names.index('Noto Sans CJK TC')}",
            f"--text={wanted_chars()}",
            f"--output-file={OUT}",
            "--no-hinting",
            "--desubroutinize",
            "--layout-features=",
            "--name-IDs=0,1,2,3,4,5,6,7,13,14",
        ]
    )
    rename_family(OUT, FAMILY)
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
