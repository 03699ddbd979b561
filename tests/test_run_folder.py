"""A run folder belongs to one run; faults injected during training lose nothing.

The two scenarios of issue 15 that lost data (two trains into one folder; a new
train into an existing run's folder) and the faults of its "what to build" 5:
kill -9 during a checkpoint save, a full disk during a save, a killed sweep parent.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from attnlab import io as attnlab_io
from attnlab.cli import main
from conftest import set_args

ROOT = Path(__file__).resolve().parents[1]
# one thread here as in the subprocesses (OMP_NUM_THREADS=1): resumed = uninterrupted is bit for bit
pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = set_args(eval_batches=1, eval_every=10)


@pytest.fixture
def corpus(tmp_path, text):
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _train_argv(corpus, out, steps, *extra):
    return [
        "train",
        "--corpus",
        corpus,
        "--out",
        str(out),
        "--no-progress",
        *SMALL,
        "--set",
        f"max_steps={steps}",
        *extra,
    ]


def _spawn(argv):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "attnlab.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _hashes(folder: Path) -> dict:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != ".attnlab-lock"
    }


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_second_writer_is_refused_and_named(tmp_path, corpus, capsys):
    """Two terminals, one --out: the second is refused with the first one's pid; the run stays whole."""
    out = tmp_path / "run"
    first = _spawn(_train_argv(corpus, out, 400, "--set", "lr=0.001"))
    deadline = time.time() + 120
    while time.time() < deadline and not (
        (out / "metrics.jsonl").is_file() and (out / "metrics.jsonl").stat().st_size > 0
    ):
        time.sleep(0.05)
    assert (out / "metrics.jsonl").is_file(), first.communicate()[1]
    assert main(_train_argv(corpus, out, 100, "--set", "lr=0.003")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"in use by process {first.pid}" in err
    assert main(_train_argv(corpus, out, 100, "--set", "lr=0.003", "--overwrite")) == 2  # not even so
    assert first.wait(timeout=300) == 0, first.stderr.read()
    cfg = json.loads((out / "config.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    ckpt = torch.load(out / "ckpt.pt", weights_only=True)
    assert cfg["lr"] == summary["config"]["lr"] == ckpt["config"]["lr"] == 0.001
    assert cfg["max_steps"] == summary["steps"] == len(_lines(out / "metrics.jsonl")) == ckpt["step"] == 400


def test_a_new_train_into_a_run_needs_resume_or_overwrite(tmp_path, corpus, capsys):
    """The run in a folder survives a failing rerun and a rerun without --overwrite."""
    out = tmp_path / "run"
    assert main(_train_argv(corpus, out, 30)) == 0
    before = _hashes(out)
    assert len(_lines(out / "metrics.jsonl")) == 30
    capsys.readouterr()
    # the probe's failing rerun, then the same with --overwrite: refused before anything is touched
    for extra in ([], ["--overwrite"]):
        assert (
            main(
                [
                    "train",
                    "--out",
                    str(out),
                    "--no-progress",
                    "--set",
                    "block_size=100000",
                    "--set",
                    "max_steps=2",
                    *extra,
                ]
            )
            == 2
        )
        assert "lower block_size" in capsys.readouterr().err
        assert _hashes(out) == before
    # a valid rerun without a flag: refused, says how to continue or replace
    assert main(_train_argv(corpus, out, 10, "--set", "lr=0.01")) == 2
    err = capsys.readouterr().err
    assert "already holds a run (30 steps recorded)" in err and "--resume" in err and "--overwrite" in err
    assert _hashes(out) == before
    # --overwrite replaces it, and says so
    assert main(_train_argv(corpus, out, 10, "--set", "lr=0.01", "--overwrite")) == 0
    assert "will be replaced" in capsys.readouterr().out
    assert len(_lines(out / "metrics.jsonl")) == 10
    assert json.loads((out / "config.json").read_text())["lr"] == 0.01


def test_overwrite_whose_first_step_fails_leaves_the_old_run(tmp_path, corpus, monkeypatch, text):
    """Nothing is written into the folder before the first step has succeeded."""
    import importlib

    from attnlab.config import Config

    train_mod = importlib.import_module("attnlab.train")

    out = tmp_path / "run"
    assert main(_train_argv(corpus, out, 12)) == 0
    before = _hashes(out)

    def broken_step(*a, **k):
        raise RuntimeError("the first step fails")

    monkeypatch.setattr(train_mod, "train_step", broken_step)
    cfg = Config(
        n_layer=1, n_head=2, d_model=16, block_size=16, vocab_size=40, batch_size=4, device="cpu", max_steps=5, lr=0.02
    )
    with pytest.raises(RuntimeError, match="first step fails"):
        train_mod.train(text, cfg, out_dir=out, overwrite=True)
    assert _hashes(out) == before
    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError):
        train_mod.train(text, cfg, out_dir=fresh)
    assert not fresh.exists()  # a run that never started leaves no folder


def test_resume_extends_a_finished_run_with_the_new_schedule(tmp_path, corpus):
    out = tmp_path / "run"
    assert main(_train_argv(corpus, out, 10, "--set", "warmup=2")) == 0
    assert main(_train_argv(corpus, out, 15, "--set", "warmup=2", "--resume")) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 15 and len(_lines(out / "metrics.jsonl")) == 15
    assert summary["schedule"] == [{"from_step": 0, "max_steps": 10}, {"from_step": 10, "max_steps": 15}]
    assert _lines(out / "metrics.jsonl")[10]["lr"] > _lines(out / "metrics.jsonl")[9]["lr"]  # new cosine


KILL_DURING_SAVE = """
import os, signal, sys, tempfile
from pathlib import Path
import attnlab.checkpoint as ck
from attnlab.cli import main

calls = []
real = ck.save_torch

def dying_save(path, obj):
    calls.append(path)
    if len(calls) < 2:
        return real(path, obj)
    fd, tmp = tempfile.mkstemp(prefix=f".{Path(path).name}.", suffix=".tmp", dir=Path(path).parent)
    os.write(fd, b"half a checkpoint")
    os.kill(os.getpid(), signal.SIGKILL)       # kill -9 in the middle of the save

ck.save_torch = dying_save
sys.exit(main(sys.argv[1:]))
"""


def test_kill_9_during_a_checkpoint_save_then_resume(tmp_path, corpus):
    """The old checkpoint survives, the next start removes the stale temporary file and
    the resumed run ends equal to one never interrupted."""
    cut, full = tmp_path / "cut", tmp_path / "full"
    argv = _train_argv(corpus, cut, 20, "--set", "ckpt_every=5")
    r = subprocess.run(
        [sys.executable, "-c", KILL_DURING_SAVE, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=ROOT,
    )
    assert r.returncode == -signal.SIGKILL, r.stderr
    stale = list(cut.glob(".ckpt.pt.*.tmp"))
    assert stale and torch.load(cut / "ckpt.pt", weights_only=True)["step"] == 5
    assert main(_train_argv(corpus, cut, 20, "--set", "ckpt_every=5", "--resume")) == 0
    assert not list(cut.glob(".*.tmp"))
    assert main(_train_argv(corpus, full, 20, "--set", "ckpt_every=5")) == 0
    assert _lines(cut / "metrics.jsonl") == _lines(full / "metrics.jsonl")


def test_full_disk_during_a_save_is_one_line_and_keeps_the_old_checkpoint(tmp_path, corpus, capsys, monkeypatch):
    out = tmp_path / "run"
    assert main(_train_argv(corpus, out, 10)) == 0
    old = (out / "ckpt.pt").read_bytes()
    real = attnlab_io._atomic

    def full_disk(path, write, mode):
        if Path(path).name != "ckpt.pt":
            return real(path, write, mode)

        def half_then_enospc(f):
            f.write(b"x" * 1000)
            raise OSError(errno.ENOSPC, "No space left on device")

        return real(path, half_then_enospc, mode)

    monkeypatch.setattr(attnlab_io, "_atomic", full_disk)
    capsys.readouterr()
    assert main(_train_argv(corpus, out, 20, "--resume")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "No space left on device" in err and "ckpt.pt" in err
    assert "previous file is unchanged" in err
    assert (out / "ckpt.pt").read_bytes() == old and not list(out.glob(".*.tmp"))


def _children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in cmd:
                kids.append(int(d.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_killed_sweep_parent_takes_its_workers_with_it(tmp_path, corpus):
    out = tmp_path / "sweep"
    parent = _spawn(
        [
            "sweep",
            "--out",
            str(out),
            "--corpus",
            corpus,
            "--executor",
            "local",
            "--workers",
            "2",
            "--grid",
            "lr=0.001,0.002",
            "--steps",
            "100000",
            *SMALL,
        ]
    )
    deadline = time.time() + 120
    workers: list[int] = []
    while time.time() < deadline and len(workers) < 2:
        time.sleep(0.2)
        workers = _children(parent.pid)
    assert len(workers) == 2, parent.communicate(timeout=30)
    parent.kill()  # kill -9: no cleanup code runs in the parent
    parent.wait(timeout=30)
    deadline = time.time() + 30
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "workers outlived their killed parent"
