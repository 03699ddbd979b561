"""The training text: building the Tang-poem corpus and loading any UTF-8 corpus.

The default corpus ships inside the package (``attnlab/data/corpus.txt``, with its license
notice ``LICENSE.chinese-poetry`` and its build record ``corpus.json`` beside it), so an
installed attnlab finds it from any directory. It is built from the four ``poet.tang.*.json``
files of the chinese-poetry project (MIT): poems in file order 0, 1000, 2000, 3000, one line
per paragraph, lines joined by a newline (no trailing newline).
"""

from __future__ import annotations

from collections import Counter
from importlib.resources import files
from pathlib import Path

from .errors import AttnlabError, CorpusError
from .io import read_json, write_text

TANG_FILES = ("poet.tang.0.json", "poet.tang.1000.json", "poet.tang.2000.json", "poet.tang.3000.json")
REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout (an installed package has none)
PACKAGE_DATA = Path(str(files("attnlab") / "data"))  # installed with the package (pyproject package-data)
DEFAULT_CORPUS = PACKAGE_DATA / "corpus.txt"
CORPUS_LICENSE = PACKAGE_DATA / "LICENSE.chinese-poetry"
# attnlab holds a corpus in memory several times over (the text, its ids, the batches):
# 100 MB is about 140 times the book's 0.73 MB, and far below what would exhaust a laptop
MAX_CORPUS_BYTES = 100 * 10**6


def build_tang_corpus(source_dir: str | Path) -> tuple[str, int]:
    """Return (text, number of poems) built from the four JSON files in ``source_dir``."""
    source_dir = Path(source_dir)
    lines: list[str] = []
    poems = 0
    for name in TANG_FILES:
        path = source_dir / name
        if not path.is_file():
            raise CorpusError(
                f"missing source file {path}; expected the chinese-poetry files {', '.join(TANG_FILES)} in {source_dir}"
            )
        data = read_json(path, error=CorpusError, hint="; use the chinese-poetry files unchanged")
        if not isinstance(data, list):
            raise CorpusError(f"source file {path} holds a JSON {type(data).__name__}, not a list of poems")
        for i, poem in enumerate(data):
            paragraphs = poem.get("paragraphs") if isinstance(poem, dict) else None
            if not (isinstance(paragraphs, list) and all(isinstance(x, str) for x in paragraphs)):
                raise CorpusError(
                    f"source file {path}: poem {i} has no 'paragraphs' list of strings; not a chinese-poetry file"
                )
            poems += 1
            lines.extend(paragraphs)
    return "\n".join(lines), poems


def write_tang_corpus(source_dir: str | Path, out: str | Path) -> dict:
    """Write the corpus; the returned record names it relative to the repo (no
    machine-specific absolute path in committed provenance)."""
    text, poems = build_tang_corpus(source_dir)
    write_text(out, text)
    return {"path": repo_relative(out), "poems": poems, **corpus_stats(text)}


def repo_relative(path: str | Path) -> str:
    """``path`` as provenance names it: a file of the package as ``attnlab/data/...`` (the same
    name installed or in the checkout), else relative to the repository when inside it, else its
    file name."""
    path = Path(path).resolve()
    try:
        return "attnlab/data/" + path.relative_to(PACKAGE_DATA.resolve()).as_posix()
    except ValueError:
        pass
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.name


def poem_count(path: str | Path) -> int | None:
    """Poem count recorded beside a corpus at build time (``corpus.json``), if any."""
    meta = Path(path).with_suffix(".json")
    try:
        n = read_json(meta, max_bytes=10**6)["poems"]
    except (AttnlabError, KeyError, TypeError):
        return None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def load_corpus(path: str | Path | None = None, min_chars: int = 2) -> str:
    """Read a UTF-8 corpus, failing with a message that says what to do."""
    path = Path(path) if path is not None else DEFAULT_CORPUS
    if not path.exists():
        raise CorpusError(f"corpus not found: {path} (pass --corpus PATH to a UTF-8 text file)")
    if not path.is_file():
        raise CorpusError(f"corpus path is not a file: {path}")
    check_corpus_size(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise CorpusError(
            f"cannot read corpus {path}: {e.strerror or type(e).__name__}; "
            f"check its permissions or pass another --corpus"
        ) from None
    except UnicodeDecodeError as e:
        raise CorpusError(
            f"corpus {path} is not valid UTF-8 (byte {e.start}); convert it, e.g. iconv -f GBK -t UTF-8"
        ) from None
    if not text.strip():
        raise CorpusError(f"corpus {path} is empty; give a text file with some content")
    if len(text) < min_chars:
        raise CorpusError(
            f"corpus {path} has {len(text)} characters, fewer than the "
            f"{min_chars} needed (block_size + 1); use a longer text or a smaller block_size"
        )
    return text


def check_corpus_size(path: Path, limit: int = MAX_CORPUS_BYTES) -> None:
    """Refuse a corpus larger than ``limit`` bytes before reading it."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the read that follows names the problem
    if size > limit:
        raise CorpusError(
            f"corpus {path} is {size / 1e6:,.0f} MB, more than the {limit / 1e6:,.0f} MB attnlab reads "
            f"(the book's corpus is 0.73 MB); give a smaller text with --corpus"
        )


def corpus_stats(text: str, top: tuple[int, ...] = (1198,)) -> dict:
    """Characters (newlines included), distinct characters (newline excluded,
    as the book counts them) and the share of non-newline characters covered by
    the ``top`` most frequent ones."""
    counts = Counter(text.replace("\n", ""))
    total = sum(counts.values())
    ranked = [n for _, n in counts.most_common()]
    coverage = {int(k): (sum(ranked[:k]) / total if total else 0.0) for k in top}
    return {
        "chars": len(text),
        "distinct": len(counts),
        "lines": text.count("\n") + 1 if text else 0,
        "coverage": coverage,
    }
