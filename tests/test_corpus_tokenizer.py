import json
from pathlib import Path

import pytest

from attnlab import CharTokenizer
from attnlab.corpus import DEFAULT_CORPUS, build_tang_corpus, corpus_stats, load_corpus
from attnlab.errors import CorpusError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "chinese-poetry"


def test_shipped_corpus_numbers():
    text = load_corpus()
    stats = corpus_stats(text)
    assert stats["chars"] == 256_616
    assert stats["distinct"] == 5_035
    # book: 87.6 %; 0.87486 with the shipped newline convention (another convention gives 0.884)
    assert round(stats["coverage"][1198], 4) == 0.8749
    meta = json.loads(DEFAULT_CORPUS.with_suffix(".json").read_text(encoding="utf-8"))
    assert meta["poems"] == 4003
    assert (DEFAULT_CORPUS.parent / "LICENSE.chinese-poetry").read_text().startswith("The MIT License")


@pytest.mark.skipif(not SHARED.is_dir(), reason="source JSON not present (../shared)")
def test_corpus_rebuilds_identically():
    text, poems = build_tang_corpus(SHARED)
    assert poems == 4003
    assert text == load_corpus()


@pytest.mark.parametrize(
    "content, match",
    [
        (None, "not found"),
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\xff\xfe\x00abc", "UTF-8"),
    ],
)
def test_bad_corpus(tmp_path, content, match):
    p = tmp_path / "c.txt"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(CorpusError, match=match):
        load_corpus(p)


def test_short_corpus(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("abc", encoding="utf-8")
    with pytest.raises(CorpusError, match="block_size"):
        load_corpus(p, min_chars=65)


def test_tokenizer_layout_and_roundtrip(tmp_path, text):
    tok = CharTokenizer(text, 12)
    assert tok.itos[:2] == ["<pad>", "<unk>"] and len(tok) == 12
    assert all(tok.stoi[c] == i for i, c in enumerate(tok.itos))
    # most frequent first
    from collections import Counter

    cnt = Counter(text)
    freqs = [cnt[c] for c in tok.itos[2:]]
    assert freqs == sorted(freqs, reverse=True)
    assert "\n" in tok.stoi  # newlines are ordinary, frequent characters
    ids = tok.encode("月光\n龍")
    assert ids[-1] == 1  # unknown -> <unk>
    tok.save(tmp_path / "tok.json")
    tok2 = CharTokenizer.load(tmp_path / "tok.json")
    assert tok2.itos == tok.itos
    full = CharTokenizer(text, 100)
    assert full.decode(full.encode(text)) == text


def test_unknown_prompt_warns(text):
    tok = CharTokenizer(text, 40)
    with pytest.warns(UserWarning, match="<unk>"):
        tok.encode_warn("龍鳳")
