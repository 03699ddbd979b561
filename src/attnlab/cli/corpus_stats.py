"""``attnlab corpus-stats``: poems, characters, distinct characters, coverage."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "corpus-stats",
        help="语料统计：诗数、字数、不同字数、覆盖率 / poems, characters, distinct characters, coverage",
        description="统计语料的诗数、字符数、行数、不同字符数，以及最常见的 N 个字覆盖了多少文本。"
        "\nCount a corpus's poems, characters, lines and distinct characters, and how much of the text "
        "the N most frequent characters cover.",
    )
    common.add_corpus(p)
    p.add_argument(
        "--top",
        type=common.positive_int,
        nargs="+",
        default=[1198],
        metavar="N",
        help="最常见的 N 个字的覆盖率，可给多个（1198 = 词表 1200 - 2）"
        " / coverage of the N most frequent characters, one or more (1198 = vocab 1200 - 2)",
    )
    return p


def main(args) -> int:
    from ..corpus import DEFAULT_CORPUS, corpus_stats, load_corpus, poem_count

    text = load_corpus(args.corpus)
    stats = corpus_stats(text, top=tuple(args.top))
    path = Path(args.corpus) if args.corpus else DEFAULT_CORPUS
    print(f"语料 / corpus: {path}")
    poems = poem_count(path)
    if poems is not None:
        print(f"诗 / poems: {poems:,}")
    print(f"字符 / characters (incl. newlines): {stats['chars']:,}")
    print(f"行 / lines: {stats['lines']:,}")
    print(f"不同字符 / distinct characters (excl. newline): {stats['distinct']:,}")
    for k, c in stats["coverage"].items():
        print(f"前 {k} 个字的覆盖率 / coverage of the top {k}: {c:.1%}")
    return 0
