"""``attnlab build-corpus``: the packaged corpus (src/attnlab/data/corpus.txt) from the chinese-poetry JSON files."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    from ..corpus import DEFAULT_CORPUS

    p = sub.add_parser(
        "build-corpus",
        help="由 chinese-poetry 的 JSON 文件构建语料 / build the corpus from the chinese-poetry JSON files",
        description="从 chinese-poetry 的《全唐诗》JSON 文件构建语料文本（默认写到随包附带的那一份）及其 JSON 说明。"
        "\nBuild the corpus text (by default the one attnlab ships) and its JSON description from the "
        "chinese-poetry Tang-poem JSON files.",
    )
    p.add_argument(
        "--source",
        default="../shared/data/chinese-poetry",
        metavar="DIR",
        help="chinese-poetry 仓库的文件夹 / the folder of the chinese-poetry repository",
    )
    common.add_out(p, str(DEFAULT_CORPUS), "要写的语料文本 / corpus text to write")
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
