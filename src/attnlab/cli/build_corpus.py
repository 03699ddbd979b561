"""``attnlab build-corpus``: data/corpus.txt from the chinese-poetry JSON files."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    from ..corpus import DEFAULT_CORPUS

    p = sub.add_parser("build-corpus", help="build data/corpus.txt from the chinese-poetry JSON files")
    p.add_argument("--source", default="../shared/data/chinese-poetry")
    common.add_out(p, str(DEFAULT_CORPUS), f"corpus text to write (default {DEFAULT_CORPUS})")
    return p


def main(args) -> int:
    from ..corpus import write_tang_corpus
    from ..io import check_output_file, write_json

    out = Path(args.out)
    check_output_file(out)
    info = write_tang_corpus(args.source, out)
    write_json(out.with_suffix(".json"), {"source": "chinese-poetry poet.tang.{0,1000,2000,3000}.json (MIT)", **info})
    print(f"wrote {out}: {info['poems']} poems, {info['chars']:,} characters, {info['distinct']:,} distinct")
    return 0
