"""Ctrl-C during `attnlab train` leaves a checkpoint; --resume finishes the run
exactly as an uninterrupted one would."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import set_args

ROOT = Path(__file__).resolve().parents[1]
SETS = set_args(max_steps=400, ckpt_every=0, eval_every=100, eval_batches=1)


def _train(corpus, out, *extra):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "attnlab.cli",
            "train",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--no-progress",
            *SETS,
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_ctrl_c_then_resume_equals_uninterrupted(tmp_path, text):
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    proc = _train(corpus, tmp_path / "cut")
    metrics = tmp_path / "cut" / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if metrics.is_file() and len(metrics.read_text().splitlines()) >= 20:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted at step" in err and "Traceback" not in err
    assert (tmp_path / "cut" / "ckpt.pt").is_file()
    done = len(metrics.read_text().splitlines())
    assert 20 <= done < 400

    resumed = _train(corpus, tmp_path / "cut", "--resume")
    full = _train(corpus, tmp_path / "full")
    assert resumed.wait(timeout=300) == 0 and full.wait(timeout=300) == 0
    a = [json.loads(l) for l in metrics.read_text().splitlines()]
    b = [json.loads(l) for l in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert len(a) == len(b) == 400 and a == b


def test_tiny_gpt_shim_imports_from_notebooks():
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tiny_gpt import Config, TinyGPT, CharTokenizer, train, "
            "lr_at, get_batch; print(TinyGPT(Config()).num_params())",
        ],
        cwd=ROOT / "notebooks",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "425984"
