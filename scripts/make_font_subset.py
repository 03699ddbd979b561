"""Cut the playground's web fonts (WOFF2) from Noto Sans CJK TC and HanaMinB.

The pages must not fetch fonts from anywhere and a full CJK font is ~16 MB, so
the package ships a subset of Noto Sans CJK TC (traditional glyph forms: the
Tang corpus is traditional) holding

* every character of src/attnlab/data/corpus.txt (what a reader pastes from the corpus),
* GB 2312 level 1, the 3,755 common simplified hanzi (what a reader types
  before the page converts it to traditional),
* every character of the static HTML/JS/CSS and of the messages server.py and
  timeline.py send, printable ASCII and some punctuation,

plus a tiny supplement cut from HanaMinB for the corpus's CJK Extension B
characters that Noto Sans CJK lacks (14 today). Both are SIL OFL 1.1; HanaMinB's
names are Reserved Font Names, so the supplement is renamed "Attnlab CJK ExtB".
The same supplement is written as TrueType for the figures (attnlab.fonts).
Re-run after changing any Chinese text in those files or the corpus
(tests/test_fonts.py and tests/test_web_fonts.py check the coverage):

    PYTHONPATH=src .venv/bin/python scripts/make_font_subset.py

Needs Debian's fonts-noto-cjk and fonts-hanazono (scripts/ci_system_deps.sh),
fontTools and brotli (WOFF2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from attnlab.fonts import EXTB_FILE, WEB_EXTB_FILE, WEB_FONT_FILE, gb2312_level1  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from make_report_font import rename_family  # noqa: E402

WEB = ROOT / "src" / "attnlab" / "web"
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
EXTB_SOURCE = Path("/usr/share/fonts/truetype/hanazono/HanaMinB.ttf")
EXTB_FAMILY = "Attnlab CJK ExtB"
EXTRA = "—–−×·…√∞←→⏎‖²³Σ≈≤≥「」（）：；，。、！？“”‘’"


def page_chars(web: Path = WEB) -> set[str]:
    files = [p for p in (web / "static").iterdir() if p.suffix in (".html", ".js", ".css")]
    files += [web / "server.py", web / "timeline.py"]  # the messages both send
    chars = set()
    for p in files:
        chars |= set(p.read_text(encoding="utf-8"))
    chars |= {chr(c) for c in range(0x20, 0x7F)} | set(EXTRA)
    return {c for c in chars if c.isprintable() and c != "\ufeff"}


def corpus_chars() -> set[str]:
    return {
        c for c in (ROOT / "src" / "attnlab" / "data" / "corpus.txt").read_text(encoding="utf-8") if c.isprintable()
    }


def web_chars() -> str:
    return "".join(sorted(page_chars() | corpus_chars() | set(gb2312_level1())))


def face_index(path: Path, family: str) -> int:
    names = [f["name"].getDebugName(1) for f in TTCollection(str(path)).fonts]
    return names.index(family)


def cut(source: Path, text: str, out: Path, flavor: str | None, font_number: int = 0) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    subset.main(
        [
            str(source),
            f"--font-number={font_number}",
            f"--text={text}",
            f"--output-file={out}",
            *([f"--flavor={flavor}"] if flavor else []),
            "--layout-features+=tnum,vert",
            "--no-hinting",
            "--desubroutinize",
            "--name-IDs=0,1,2,3,4,5,6,7,13,14",
        ]
    )


def regular(path: Path) -> None:
    """Weight 400 (HanaMinB says 500): matplotlib then takes it as the regular face, silently."""
    font = TTFont(str(path))
    font["OS/2"].usWeightClass = 400
    font.save(str(path))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--extb-source", type=Path, default=EXTB_SOURCE)
    args = ap.parse_args(argv)
    for src, pkg in ((args.source, "fonts-noto-cjk"), (args.extb_source, "fonts-hanazono")):
        if not src.is_file():
            print(f"error: {src} not found; apt-get install {pkg}", file=sys.stderr)
            return 1
    text = web_chars()
    index = face_index(args.source, "Noto Sans CJK TC")
    cut(args.source, text, WEB_FONT_FILE, "woff2", index)
    noto = TTCollection(str(args.source)).fonts[index].getBestCmap()
    lacking = "".join(sorted(c for c in corpus_chars() if ord(c) not in noto))
    for out, flavor in ((WEB_EXTB_FILE, "woff2"), (EXTB_FILE, None)):
        cut(args.extb_source, lacking, out, flavor)
        rename_family(out, EXTB_FAMILY)
        regular(out)
    for out in (WEB_FONT_FILE, WEB_EXTB_FILE, EXTB_FILE):
        n = len(TTFont(str(out)).getBestCmap())
        print(f"{out.relative_to(ROOT)}: {n} characters, {out.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
