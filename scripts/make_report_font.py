"""Cut Noto Sans CJK TC down to what the figures need: every character of the
shipped corpus, the Chinese of the figure and report labels, and ASCII.

The figures must show Chinese on a machine with no CJK font, so the package
ships this subset (SIL Open Font License, text beside the font). Traditional
glyph forms (TC) because the Tang corpus is in traditional characters.
Re-run after adding Chinese labels:

    .venv/bin/python scripts/make_report_font.py
"""
from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parents[1]
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
OUT = ROOT / "src" / "attnlab" / "report" / "fonts" / "NotoSansCJKtc-subset.otf"


def wanted_chars() -> str:
    chars = set((ROOT / "data" / "corpus.txt").read_text(encoding="utf-8"))
    for folder in ("src/attnlab/report", "src/attnlab/experiments"):
        for p in (ROOT / folder).glob("*.py"):
            chars |= set(p.read_text(encoding="utf-8"))
    chars |= {chr(c) for c in range(0x20, 0x7F)}
    chars |= set("—–−×·…√∞←→‖²³Σ≈≤≥「」（）：；，。、！？“”‘’①②③④⑤")
    return "".join(sorted(c for c in chars if c.isprintable()))


def main() -> int:
    if not SOURCE.is_file():
        print(f"error: {SOURCE} not found; apt-get install fonts-noto-cjk", file=sys.stderr)
        return 1
    names = [f["name"].getDebugName(1) for f in TTCollection(str(SOURCE)).fonts]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    subset.main([str(SOURCE), f"--font-number={names.index('Noto Sans CJK TC')}",
                 f"--text={wanted_chars()}", f"--output-file={OUT}", "--no-hinting",
                 "--desubroutinize", "--layout-features=", "--name-IDs=0,1,2,3,4,5,6,7,13,14"])
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
