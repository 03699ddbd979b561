"""Every bad input the hostile-user probe of issue 15 found, and more, through the real CLI.

One table: each row is a command line (with files prepared below) and a phrase
the message must contain. Every row must end the same way: exit status 2, one
line on stderr starting ``attnlab: error:``, no traceback, and nothing written
where the command would have written. ``main()`` runs in-process, so any
exception that escapes it fails the test with its traceback: this is the check
that no subcommand prints one.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnlab.cli import main
from conftest import set_args

SMALL = set_args(max_steps=4, eval_batches=1)
POEMS = "春眠不覺曉，處處聞啼鳥。\n夜來風雨聲，花落知多少。\n" * 10


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A corpus, a trained run and damaged copies of its checkpoint."""
    d = tmp_path_factory.mktemp("bad")
    corpus = d / "c.txt"
    corpus.write_text(POEMS, encoding="utf-8")
    run = d / "run"
    assert main(["train", "--corpus", str(corpus), "--out", str(run), "--no-progress", *SMALL]) == 0
    payload = torch.load(run / "ckpt.pt", weights_only=True)

    def damaged(name, **change):
        bad = dict(payload)
        for k, v in change.items():
            if v is None:
                bad.pop(k)
            else:
                bad[k] = v
        (d / name).mkdir()
        torch.save(bad, d / name / "ckpt.pt")
        return str(d / name / "ckpt.pt")

    (d / "empty.txt").write_text("")
    (d / "gbk.txt").write_bytes("床前明月光".encode("gbk"))
    (d / "blocker").write_text("a file where a folder should be")
    (d / "corrupt.pt").write_bytes(b"not a checkpoint")
    src = d / "src"
    src.mkdir()
    for i, name in enumerate(("poet.tang.0.json", "poet.tang.1000.json", "poet.tang.2000.json", "poet.tang.3000.json")):
        (src / name).write_text(json.dumps({"not": "a list"}) if i == 0 else "[]", encoding="utf-8")
    src2 = d / "src2"
    src2.mkdir()
    for name in ("poet.tang.0.json", "poet.tang.1000.json", "poet.tang.2000.json", "poet.tang.3000.json"):
        (src2 / name).write_text(json.dumps([{"title": "x", "paragraphs": "not a list"}]), encoding="utf-8")
    (d / "list.json").write_text("[1, 2]")
    (d / "shape.json").write_text(
        json.dumps({"init_sweep": [], "pairs": [], "seeds": {}, "qk_scale": {}, "claims": []})
    )
    (d / "badjson.json").write_text("{not json")
    other = d / "other.txt"
    other.write_text(POEMS.replace("春", "秋"), encoding="utf-8")
    return {
        "d": d,
        "corpus": str(corpus),
        "other": str(other),
        "run": str(run),
        "ckpt": str(run / "ckpt.pt"),
        "bad_itos": damaged("bad_itos", itos="abc"),
        "bad_history": damaged("bad_history", history=[1, 2, 3]),
        "bad_model": damaged("bad_model", model=[1]),
        "no_optimizer": damaged("no_optimizer", optimizer=None),
    }


def _cases():
    """(id, argv with {placeholders}, phrase in the message)."""
    c = "{corpus}"
    t = ["train", "--corpus", c, "--no-progress", "--out", "{d}/new"]
    return [
        # --set values: finite, in range, on a device this build has
        ("max_steps=0", t + SMALL + ["--set", "max_steps=0"], "nothing to train"),
        ("max_steps=-1", t + ["--set", "max_steps=-1"], "max_steps"),
        ("max_steps=1.5", t + ["--set", "max_steps=1.5"], "expects int"),
        ("lr=inf", t + ["--set", "lr=inf"], "finite"),
        ("lr=nan", t + ["--set", "lr=nan"], "finite"),
        ("lr=-1", t + ["--set", "lr=-1"], "positive"),
        ("weight_decay=-inf", t + ["--set", "weight_decay=-inf"], "finite"),
        ("init_std=inf", t + ["--set", "init_std=inf"], "finite"),
        ("grad_clip=nan", t + ["--set", "grad_clip=nan"], "finite"),
        ("val_fraction=1.5", t + ["--set", "val_fraction=1.5"], "between 0 and 1"),
        ("huge seed", t + ["--set", "seed=99999999999999999999999"], "seed"),
        ("negative seed", t + ["--set", "seed=-1"], "seed"),
        ("device=cuda:abc", t + ["--set", "device=cuda:abc"], "device"),
        ("device=tpu", t + ["--set", "device=tpu"], "device"),
        ("device=cuda:999", t + SMALL + ["--set", "device=cuda:999"], "not available"),
        ("block_size=100000", ["train", "--out", "{d}/new", "--set", "block_size=100000"], "lower block_size"),
        ("unknown key", t + ["--set", "heads=2"], "unknown config key 'heads'"),
        ("not an int", t + ["--set", "n_head=two"], "expects int"),
        ("indivisible", t + ["--set", "d_model=130"], "divisible by n_head"),
        ("no =", t + ["--set", "max_steps"], "key=value"),
        ("bad bug", t + ["--set", "bug=nope"], "bug"),
        ("bad pos", t + ["--set", "pos=absolute"], "pos"),
        ("info indivisible", ["info", "--set", "d_model=131"], "divisible"),
        # corpora and output paths
        ("missing corpus", ["train", "--corpus", "/nonexistent/c.txt", "--out", "{d}/new"], "corpus not found"),
        ("empty corpus", ["train", "--corpus", "{d}/empty.txt", "--out", "{d}/new"], "empty"),
        ("GBK corpus", ["train", "--corpus", "{d}/gbk.txt", "--out", "{d}/new"], "UTF-8"),
        ("corpus is a dir", ["train", "--corpus", "{d}", "--out", "{d}/new"], "not a file"),
        ("train out under a file", t[:-1] + ["{d}/blocker/run"] + SMALL, "cannot use run folder"),
        (
            "train into a run",
            ["train", "--corpus", c, "--out", "{run}", "--no-progress"] + SMALL,
            "already holds a run",
        ),
        ("resume and overwrite", t + ["--resume", "--overwrite"], "not allowed with"),
        ("resume nothing", t + SMALL + ["--resume"], "nothing to resume"),
        (
            "resume other corpus",
            ["train", "--corpus", "{other}", "--out", "{run}", "--resume", "--no-progress"] + SMALL,
            "different corpus",
        ),
        (
            "resume fewer steps",
            ["train", "--corpus", c, "--out", "{run}", "--resume", "--no-progress"] + SMALL + ["--set", "max_steps=2"],
            "max_steps >= 4",
        ),
        (
            "resume other config",
            ["train", "--corpus", c, "--out", "{run}", "--resume", "--no-progress"] + SMALL + ["--set", "lr=0.1"],
            "different config",
        ),
        # generate
        ("temperature 0", ["generate", "{ckpt}", "--temperature", "0"], "--temperature"),
        ("temperature -1", ["generate", "{ckpt}", "--temperature", "-1"], "--temperature"),
        ("temperature inf", ["generate", "{ckpt}", "--temperature", "inf"], "finite"),
        ("top-k 0", ["generate", "{ckpt}", "--top-k", "0"], "--top-k"),
        ("max-new-tokens -5", ["generate", "{ckpt}", "--max-new-tokens", "-5"], "--max-new-tokens"),
        ("huge generate seed", ["generate", "{ckpt}", "--seed", str(10**30)], "--seed"),
        ("missing checkpoint", ["generate", "/nonexistent.pt"], "checkpoint not found"),
        ("corrupt checkpoint", ["generate", "{d}/corrupt.pt"], "corrupt"),
        ("itos of wrong type", ["generate", "{bad_itos}"], "'itos'"),
        ("history of wrong type", ["generate", "{bad_history}"], "'history'"),
        ("model of wrong type", ["generate", "{bad_model}"], "'model'"),
        (
            "resume without optimizer",
            ["train", "--corpus", c, "--out", "{d}/no_optimizer", "--resume", "--no-progress"] + SMALL,
            "no optimizer state",
        ),
        # other commands' arguments
        ("corpus-stats --top -5", ["corpus-stats", "--top", "-5"], "--top"),
        ("corpus-stats --top 0", ["corpus-stats", "--top", "0"], "--top"),
        ("case --device tpu", ["case", "--quick", "--device", "tpu", "--out", "{d}/case"], "device"),
        ("case --device cuda:abc", ["case", "--quick", "--device", "cuda:abc", "--out", "{d}/case"], "device"),
        ("case --steps 0", ["case", "--steps", "0"], "positive whole number of steps"),
        ("bench attention --n 0", ["bench", "attention", "--n", "0"], "--n"),
        ("bench attention --repeats 0", ["bench", "attention", "--repeats", "0"], "--repeats"),
        ("bench attention --heads 0", ["bench", "attention", "--heads", "0"], "--heads"),
        ("bench attention --budget -1", ["bench", "attention", "--budget", "-1"], "--budget"),
        (
            "bench attention too big",
            ["bench", "attention", "--heads", "1024", "--d-head", "65536", "--n", "512"],
            "half of this machine",
        ),
        ("bench attention --device tpu", ["bench", "attention", "--device", "tpu"], "device"),
        (
            "bench attention json under a file",
            ["bench", "attention", "--n", "8", "--json", "{d}/blocker/b.json", "--figure", ""],
            "cannot write",
        ),
        ("bench train --repeats 0", ["bench", "train", "--repeats", "0"], "--repeats"),
        ("bench train --set lr=inf", ["bench", "train", "--set", "lr=inf"], "finite"),
        ("heads --ablate-batches 0", ["heads", "{ckpt}", "--ablate-batches", "0"], "--ablate-batches"),
        ("heads --dynamics --steps", ["heads", "--dynamics", "--steps", "0,a"], "--steps"),
        ("heads without checkpoint", ["heads"], "give a checkpoint"),
        (
            "heads maps under a file",
            ["heads", "{ckpt}", "--no-ablate", "--out", "{d}/rep/h.json", "--maps", "{d}/blocker/m.png"],
            "cannot write",
        ),
        ("ablate --steps 0", ["ablate", "--steps", "0"], "--steps"),
        (
            "ablate out under a file",
            ["ablate", "--corpus", c, "--out", "{d}/blocker/a.json", "--steps", "1"] + SMALL,
            "cannot write",
        ),
        ("failures --steps 0", ["failures", "--steps", "0"], "--steps"),
        ("failures --seeds 0", ["failures", "--seeds", "0"], "--seeds"),
        (
            "failures runs under a file",
            ["failures", "--corpus", c, "--runs", "{d}/blocker/runs", "--out", "{d}/f.json", "--report", "{d}/f.md"]
            + ["--steps", "1"]
            + SMALL,
            "choose another with --runs",
        ),
        (
            "ablate runs under a file",
            ["ablate", "--corpus", c, "--runs", "{d}/blocker/runs", "--out", "{d}/a.json", "--steps", "1"] + SMALL,
            "choose another with --runs",
        ),
        (
            "failures out under a file",
            ["failures", "--corpus", c, "--out", "{d}/blocker/f.json", "--steps", "1"] + SMALL,
            "cannot write",
        ),
        ("sweep without --out", ["sweep"], "--out"),
        ("sweep --seeds 0", ["sweep", "--seeds", "0", "--out", "{d}/sw"], "--seeds"),
        ("sweep unknown grid key", ["sweep", "--grid", "nope=1", "--out", "{d}/sw"], "unknown grid key"),
        ("sweep out under a file", ["sweep", "--out", "{d}/blocker/sw", "--corpus", c], "cannot write"),
        ("sweep --workers 0", ["sweep", "--workers", "0", "--out", "{d}/sw"], "--workers"),
        ("book --workers 0", ["book", "--plan", "--workers", "0", "--out", "{d}/bk"], "--workers"),
        ("book --workers x", ["book", "--plan", "--workers", "x", "--out", "{d}/bk"], "--workers"),
        ("book --out ''", ["book", "--plan", "--out", ""], "--out"),
        (
            "build-corpus wrong shape",
            ["build-corpus", "--source", "{d}/src", "--out", "{d}/bc.txt"],
            "not a list of poems",
        ),
        ("build-corpus no paragraphs", ["build-corpus", "--source", "{d}/src2", "--out", "{d}/bc.txt"], "paragraphs"),
        (
            "build-corpus missing source",
            ["build-corpus", "--source", "{d}/nope", "--out", "{d}/bc.txt"],
            "missing source file",
        ),
        ("report list JSON", ["report", "{d}/list.json", "--out", "{d}/rep"], "not a case result"),
        ("report wrong shape", ["report", "{d}/shape.json", "--out", "{d}/rep"], "shape of a case result"),
        ("report bad JSON", ["report", "{d}/badjson.json", "--out", "{d}/rep"], "not valid JSON"),
        ("report missing", ["report", "{d}/missing.json"], "not found"),
        ("memory --seq-len 0", ["memory", "kv-cache", "--seq-len", "0"], "seq_len"),
        ("serve --port 70000", ["serve", "--port", "70000"], "port"),
        ("unknown command", ["trian"], "invalid choice"),
    ]


CASES = _cases()
TOUCHED = {"new", "case", "sw", "rep", "bc.txt", "bc.json"}  # must not appear after a refusal


def _tree(path: Path) -> dict:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != ".attnlab-lock"
    }


@pytest.mark.parametrize("case_id, argv, phrase", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(lab, case_id, argv, phrase, capsys, monkeypatch):
    if case_id == "device=cuda:999" and torch.cuda.device_count() > 999:
        pytest.skip("a machine with 1000 GPUs")
    monkeypatch.chdir(lab["d"])  # relative defaults (runs/, data/) land in the tmp dir
    argv = [a.format(**lab) for a in argv]
    run_before = _tree(Path(lab["run"]))
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("attnlab: error: ") and "Traceback" not in err
    assert phrase in lines[0], lines[0]
    assert not lines[0].rstrip().endswith(":")
    assert _tree(Path(lab["run"])) == run_before  # the existing run is untouched
    for name in TOUCHED:
        assert not (lab["d"] / name).exists(), f"a refused command created {name}"


def test_unreadable_corpus(lab, capsys, monkeypatch):
    """A corpus the user may not read (PermissionError; root reads anything, so it is simulated)."""

    def deny(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", deny)
    assert main(["train", "--corpus", lab["corpus"], "--out", str(lab["d"] / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnlab: error: cannot read corpus") and "Permission denied" in err
    assert len(err.splitlines()) == 1


def test_info_counts_a_huge_model_without_allocating(capsys):
    """`info --set d_model=262144` used to allocate the model; now it is counted on the meta device."""
    from attnlab.config import Config
    from attnlab.model import TinyGPT, parameter_table

    small = Config(d_model=64)
    assert parameter_table(small)["total"] == TinyGPT(small).num_params()  # meta count = real count
    assert main(["info", "--set", "d_model=262144"]) == 0
    total = int(capsys.readouterr().out.splitlines()[-1].split()[1].replace(",", ""))
    assert total == parameter_table(Config(d_model=262144))["total"] > 10**12


def test_no_traceback_in_a_real_process(lab, tmp_path):
    """The same path in a fresh interpreter (the console script's), for a few rows."""
    for argv, phrase in [
        (["generate", lab["ckpt"], "--top-k", "0"], "--top-k"),
        (["train", "--corpus", lab["corpus"], "--set", "lr=inf", "--out", str(tmp_path / "x")], "finite"),
        (["bench", "attention", "--n", "0"], "--n"),
    ]:
        r = subprocess.run([sys.executable, "-m", "attnlab.cli", *argv], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and phrase in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_non_utf8_terminal_gets_replacement_characters():
    """Chinese output to a Latin-1 terminal is replaced, not a UnicodeEncodeError."""
    env = {**__import__("os").environ, "PYTHONIOENCODING": "latin-1"}
    r = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "precision", "--section", "limits"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert b"?" in r.stdout and b"float16" in r.stdout and b"Traceback" not in r.stderr


def test_generate_never_samples_an_id_the_tokenizer_lacks(lab, capsys):
    """vocab_size 40 on a corpus of ~24 characters: the untrained head rows are never sampled
    (an empty prompt used to end in IndexError)."""
    for seed in range(5):
        assert (
            main(
                [
                    "generate",
                    lab["ckpt"],
                    "--prompt",
                    "",
                    "--max-new-tokens",
                    "40",
                    "--seed",
                    str(seed),
                    "--temperature",
                    "5",
                ]
            )
            == 0
        )
