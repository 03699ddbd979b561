import subprocess
import sys

import pytest

from attnlab.cli import main
from conftest import set_args

SMALL = set_args(max_steps=4)


def run(*args):
    return subprocess.run([sys.executable, "-m", "attnlab.cli", *args], capture_output=True, text=True, timeout=300)


def test_info_prints_the_books_table(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "425,984" in out and "153,600" in out and "65,536" in out and "65,920" in out


def test_corpus_stats(capsys):
    assert main(["corpus-stats"]) == 0
    out = capsys.readouterr().out
    assert "4,003" in out and "256,616" in out and "5,035" in out


def test_train_generate(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("春眠不覺曉，處處聞啼鳥。\n夜來風雨聲，花落知多少。\n" * 10, encoding="utf-8")
    out = tmp_path / "run"
    assert main(["train", "--corpus", str(corpus), "--out", str(out), "--no-progress", *SMALL]) == 0
    assert (out / "ckpt.pt").is_file() and (out / "metrics.jsonl").is_file()
    assert main(["generate", str(out / "ckpt.pt"), "--prompt", "春", "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("春")
    # a run folder works as `heads` takes one (issue 26)
    assert main(["generate", str(out), "--prompt", "春", "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("春")


def _columns(line: str) -> int:
    """Terminal columns of ``line``: wide and full-width (CJK) characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_info_and_heads_tables_line_up_with_cjk_headers(capsys):
    import json

    from attnlab.corpus import REPO_ROOT
    from attnlab.lab.heads import portrait_table

    assert main(["info"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()[1:] if line.strip()]
    assert len({_columns(line) for line in lines}) == 1, lines[:3]  # headers in Chinese, rows in ASCII
    doc = json.loads((REPO_ROOT / "data" / "head_portrait.json").read_text(encoding="utf-8"))
    table = portrait_table(doc).splitlines()
    assert len({_columns(line) for line in table}) == 1


@pytest.mark.parametrize(
    "args, msg",
    [
        (["train", "--corpus", "/nonexistent/c.txt"], "corpus not found"),
        (["train", "--set", "heads=2"], "unknown config key 'heads'"),
        (["train", "--set", "n_head=two"], "expects int"),
        (["train", "--set", "d_model=130"], "divisible by n_head"),
        (["generate", "/nonexistent.pt"], "checkpoint not found"),
    ],
)
def test_bad_input_is_one_line(args, msg, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_bad_corpora_via_subprocess(tmp_path):
    empty = tmp_path / "e.txt"
    empty.write_text("")
    gbk = tmp_path / "g.txt"
    gbk.write_bytes("床前明月光".encode("gbk"))
    short = tmp_path / "s.txt"
    short.write_text("床前明月光", encoding="utf-8")
    corrupt = tmp_path / "ckpt.pt"
    corrupt.write_bytes(b"not a checkpoint")
    for path, msg in [(empty, "empty"), (gbk, "UTF-8"), (short, "block_size")]:
        r = run("train", "--corpus", str(path), "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o" / "ckpt.pt").exists()
    r = run("generate", str(corrupt))
    assert r.returncode == 2 and "corrupt" in r.stderr
