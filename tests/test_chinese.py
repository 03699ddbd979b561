"""Simplified input: converted to traditional (OpenCC) before tokenizing, <unk> named in one line."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from attnlab import Config
from attnlab.checkpoint import save_checkpoint
from attnlab.chinese import CONVERTED_NOTE, converted_line, prepare, to_traditional, unknown_line
from attnlab.cli import main
from attnlab.model import TinyGPT
from attnlab.tokenizer import CharTokenizer

CORPUS = (Path(__file__).resolve().parents[1] / "src" / "attnlab" / "data" / "corpus.txt").read_text(encoding="utf-8")
POEM_SIMPLIFIED = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
POEM_TRADITIONAL = "牀前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"  # as the corpus writes it


@pytest.fixture(scope="module")
def tok() -> CharTokenizer:
    """The vocabulary a model trained on the corpus has (the chapter's vocab_size)."""
    return CharTokenizer(CORPUS, Config().vocab_size)


def test_the_simplified_poem_becomes_the_corpus_s_traditional_with_no_unk(tok):
    assert sum(i == 1 for i in tok.encode(POEM_SIMPLIFIED)) == 5  # today's page: 5 <unk> of 24
    p = prepare(POEM_SIMPLIFIED, tok.stoi)
    assert p.converted == POEM_TRADITIONAL
    assert p.n_unknown == 0 and p.unknown == [] and unknown_line(p) == ""
    assert p.changes == [("床", "牀"), ("举", "舉"), ("头", "頭"), ("乡", "鄉")]
    assert converted_line(p).startswith(CONVERTED_NOTE) and "举→舉" in converted_line(p)


def test_known_characters_are_never_rewritten(tok):
    # s2t alone would rewrite characters the traditional corpus itself uses (里 -> 裏, 云 -> 雲)
    line = "故人西辭黃鶴樓，煙花三月下揚州。萬里云山"
    assert to_traditional(line) != line
    p = prepare(line, tok.stoi)
    assert p.converted == line and not p.was_converted
    # a whole stretch of the corpus comes through unchanged
    chunk = CORPUS[:3000]
    assert to_traditional(chunk, CharTokenizer(CORPUS, 6000).stoi) == chunk


def test_unknown_characters_are_counted_and_named_in_one_line(tok):
    p = prepare("明月Zq明月Z", tok.stoi)
    assert p.n_unknown == 3 and p.unknown == ["Z", "q"]
    line = unknown_line(p)
    assert "\n" not in line and line.startswith("3 个字不在字表里") and "Zq" in line and "<unk>" in line


def test_a_small_vocabulary_still_names_what_it_lacks():
    small = CharTokenizer(CORPUS, 200)
    p = prepare(POEM_SIMPLIFIED, small.stoi)
    assert p.converted == POEM_TRADITIONAL  # converted even where the result is rare
    assert p.n_unknown == len([c for c in POEM_TRADITIONAL if c not in small.stoi]) > 0


def test_probe_set_in_simplified_is_converted_for_the_snapshots(tok):
    from attnlab.snapshots import probe_ids

    cfg = Config(block_size=64).replace(probe=POEM_SIMPLIFIED)
    assert probe_ids(cfg, tok) == tok.encode(POEM_TRADITIONAL)


def test_generate_converts_the_prompt_without_a_raw_warning(tmp_path, tok, capsys):
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=32, device="cpu")
    torch.manual_seed(0)
    ckpt = save_checkpoint(tmp_path / "ckpt.pt", TinyGPT(cfg), tok, step=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any UserWarning reaching the user fails the test
        assert main(["generate", str(ckpt), "--prompt", "床前明月光举头Z", "--max-new-tokens", "3"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("牀前明月光舉頭<unk>")
    err = out.err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith(CONVERTED_NOTE)
    assert err[1].startswith("1 个字不在字表里") and "Z" in err[1]
    assert "UserWarning" not in out.err and ".py" not in out.err


def test_train_says_what_a_simplified_probe_becomes(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text(CORPUS[:20000], encoding="utf-8")
    args = ["train", "--corpus", str(corpus), "--out", str(tmp_path / "r"), "--no-progress"]
    sets = ["n_layer=1", "n_head=2", "d_model=16", "block_size=4", "max_steps=1", "batch_size=2", "device=cpu"]
    for s in [*sets, "probe=举头望明月Z"]:
        args += ["--set", s]
    assert main(args) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("attnlab: probe:")]
    assert len(lines) == 3, lines
    assert CONVERTED_NOTE in lines[0] and "举→舉" in lines[0] and "头→頭" in lines[0]
    assert "<unk>" in lines[1] and "Z" in lines[1]
    assert "block_size" in lines[2] and "4" in lines[2]  # 舉頭望明月Z has 6 characters
