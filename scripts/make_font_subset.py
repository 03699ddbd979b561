"""Cut Noto Sans CJK SC down to the characters the playground pages use.

The pages must not fetch fonts from anywhere, and a full CJK font is ~16 MB, so
the package ships a subset: printable ASCII plus every character that appears
in the static HTML/JS/CSS and in the messages server.py sends. Re-run this after
changing any Chinese text in those files (tests/test_web_api.py checks that the
font covers them):

    .venv/bin/python scripts/make_font_subset.py

Needs Debian's fonts-noto-cjk (scripts/ci_system_deps.sh installs it) and
fontTools. WOFF (zlib) rather than WOFF2, because WOFF2 needs the brotli module.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "src" / "attnlab" / "web"
OUT = WEB / "static" / "fonts" / "NotoSansCJKsc-subset.woff"
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
EXTRA = "—–−×·…√∞←→⏎‖²³Σ≈≤≥「」（）：；，。、！？“”‘’"


def page_chars(web: Path = WEB) -> set[str]:
    files = [p for p in (web / "static").iterdir() if p.suffix in (".html", ".js", ".css")]
    files += [web / "server.py", web / "timeline.py"]  # the messages both send
    chars = set()
    for p in files:
        chars |= set(p.read_text(encoding="utf-8"))
    chars |= {chr(c) for c in range(0x20, 0x7F)} | set(EXTRA)
    return {c for c in chars if c.isprintable() and c != "\ufeff"}


def sc_index(path: Path) -> int:
    names = [f["name"].getDebugName(1) for f in TTCollection(str(path)).fonts]
    return names.index("Noto Sans CJK SC")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if not args.source.is_file():
        print(f"error: {args.source} not found; install fonts-noto-cjk", file=sys.stderr)
        return 1
    text = "".join(sorted(page_chars()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    subset.main(
        [
            str(args.source),
            f"--font-number={sc_index(args.source)}",
            f"--text={text}",
            f"--output-file={args.out}",
            "--flavor=woff",
            "--layout-features+=tnum,vert",
            "--no-hinting",
            "--desubroutinize",
            "--name-IDs=0,1,2,3,4,5,6,7,13,14",
        ]
    )
    print(f"{args.out.relative_to(ROOT)}: {len(text)} characters, {args.out.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
