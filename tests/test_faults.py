"""Faults of issue 24 that lost data or left a wrong result, one test each (and issue 26 item 2).

Records stay consistent (metrics.jsonl, summary.json and the checkpoint agree on the last step,
whatever stopped the run), many-run commands fail loudly and never let a partial result replace
a more complete one, and every message names the real problem. ``T`` is the issue's tiny config.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from attnlab import Config
from attnlab.cli import main
from attnlab.runner import Run, RunFailed, RunFoldersRefused, execute, set_aside, train_one
from attnlab.train import train

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_thread")

# the issue's $T: --set n_layer=1 --set d_model=32 --set n_head=2 --set block_size=32 --set batch_size=8
# --set max_steps=20 --set eval_batches=1 --set vocab_size=200
T = Config(
    n_layer=1, d_model=32, n_head=2, block_size=32, batch_size=8, max_steps=20, eval_batches=1, vocab_size=200
).replace(device="cpu")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _records(run: Path) -> tuple[list[dict], dict | None, dict]:
    """(metrics.jsonl rows, summary.json or None, the checkpoint) of a run folder."""
    summary = run / "summary.json"
    return (
        _lines(run / "metrics.jsonl"),
        json.loads(summary.read_text()) if summary.is_file() else None,
        torch.load(run / "ckpt.pt", weights_only=True),
    )


def _canon(rows: list[dict]) -> list[str]:
    """Records as JSON text: a diverged step's NaN equals itself there."""
    return [json.dumps(r, sort_keys=True) for r in rows]


def _agree(run: Path) -> list[str]:
    """metrics.jsonl, summary.json (when there is one) and the checkpoint's history tell one story:
    the checkpoint's history is a prefix of metrics.jsonl (steps after the last checkpoint may follow),
    and a summary (the finished run's) counts exactly the steps of both. Returns the metrics rows."""
    metrics, summary, ckpt = _records(run)
    saved = _canon(ckpt["history"]["records"])
    assert _canon(metrics)[: len(saved)] == saved and len(metrics) >= len(saved)
    if summary is not None:
        assert summary["steps"] == len(metrics) == len(saved)
        assert summary["diverged_at"] == ckpt["history"]["diverged_at"]
    return _canon(metrics)


def _spawn_script(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


# --------------------------------------------------------------------- records consistent
@pytest.mark.parametrize(
    "changes",
    [
        {"max_steps": 60, "lr": 1000.0, "warmup": 1, "grad_clip": 0.0},  # diverges after a few steps
        {"init_std": 1e10},  # diverges at the first step
    ],
    ids=["lr1000", "init_std1e10"],
)
def test_the_diverged_step_is_in_metrics_summary_and_checkpoint(tmp_path, text, changes, capsys):
    """Issue 24 #4: metrics.jsonl lacked the diverged step (4 lines vs 5; empty vs 1)."""
    run = tmp_path / "run"
    _, _, history = train(text, T.replace(**changes), out_dir=run)
    assert history.diverged_at is not None, "the probe's config must diverge"
    metrics = _agree(run)
    assert json.loads(metrics[-1])["step"] == history.diverged_at and len(metrics) == history.diverged_at + 1
    assert json.loads((run / "summary.json").read_text())["steps"] == len(metrics)
    # resuming a diverged run trains nothing and keeps all three as they are
    train(text, T.replace(**changes), out_dir=run, resume=True)
    assert _agree(run) == metrics
    # and generating from its checkpoint is one line, not torch.multinomial's traceback
    assert main(["generate", str(run / "ckpt.pt"), "--max-new-tokens", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "diverged" in err and len(err.splitlines()) == 1


def test_sampling_with_no_distribution_is_one_line(tmp_path, text):
    from attnlab.errors import AttnlabError
    from attnlab.model import generate

    model, tok, _ = train(text, T.replace(max_steps=2))
    with pytest.raises(AttnlabError, match="temperature 1e-300 is too small"):
        generate(model, tok, "床前", 3, temperature=1e-300)


def test_resume_repairs_a_truncated_metrics_tail(tmp_path, text):
    """Issue 24 #10: resuming a finished run whose metrics.jsonl lost its tail left it at 8 of 20 lines."""
    run = tmp_path / "run"
    train(text, T, out_dir=run)
    full = (run / "metrics.jsonl").read_text()
    lines = full.splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(lines[:8]) + lines[8][:15])  # 8 lines and a cut one
    train(text, T, out_dir=run, resume=True)
    assert (run / "metrics.jsonl").read_text() == full
    assert len(_agree(run)) == 20


EXTENSION = """
import os, signal, sys
from attnlab import Config
from attnlab.train import train
sys.path.insert(0, "tests")
from conftest import SAMPLE_TEXT
out, cfg, mode = sys.argv[1], Config.from_dict(__import__("json").loads(sys.argv[2])), sys.argv[3]

class Kill:
    def on_step_end(self, step, record, model):
        if step == 20:
            os.kill(os.getpid(), signal.SIGKILL)   # kill -9 in the middle of the extension

if mode == "kill":
    train(SAMPLE_TEXT, cfg, out_dir=out)
    train(SAMPLE_TEXT, cfg.replace(max_steps=30), out_dir=out, resume=True, extend=True, callbacks=[Kill()])
else:  # resume the killed run in OUT, and train the same extension, never killed, in OUT-ref
    train(SAMPLE_TEXT, cfg.replace(max_steps=30), out_dir=out, resume=True, extend=True)
    train(SAMPLE_TEXT, cfg, out_dir=out + "-ref")
    train(SAMPLE_TEXT, cfg.replace(max_steps=30), out_dir=out + "-ref", resume=True, extend=True)
"""


def test_kill_9_during_an_extension_leaves_no_stale_summary(tmp_path):
    """Issue 24 #10: after kill -9 during an extension summary.json said 150 steps while metrics had 230."""
    small = T.replace(d_model=16, block_size=16, batch_size=4, max_steps=10, ckpt_every=5, snapshot_every=0)
    run, cfg = tmp_path / "run", json.dumps(small.to_dict())
    r = _spawn_script(EXTENSION, str(run), cfg, "kill")
    assert r.returncode == -signal.SIGKILL, r.stderr
    metrics, summary, ckpt = _records(run)
    assert len(metrics) == 21 and ckpt["step"] == 20, (len(metrics), ckpt["step"])
    assert summary is None or summary["steps"] == len(metrics)  # never the 10-step summary beside 21 lines
    _agree(run)
    # the next resume finishes the extension, equal to one never killed (all in one-thread subprocesses)
    r = _spawn_script(EXTENSION, str(run), cfg, "resume")
    assert r.returncode == 0, r.stderr
    assert _agree(run) == _agree(tmp_path / "run-ref") and len(_lines(run / "metrics.jsonl")) == 30


SIGTERM_CFG = T.replace(d_model=16, block_size=16, batch_size=4, max_steps=300, ckpt_every=0, snapshot_every=0)


def _train_cli(corpus: Path, out: Path, *extra: str) -> subprocess.Popen:
    default = Config().to_dict()
    sets = [a for k, v in SIGTERM_CFG.to_dict().items() if v != default[k] for a in ("--set", f"{k}={v}")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "attnlab.cli", "train", "--corpus", str(corpus), "--out", str(out), "--no-progress",
         *sets, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip


def test_sigterm_checkpoints_like_ctrl_c(tmp_path, text):
    """Issue 24 #5: SIGTERM killed the run with no checkpoint (up to ckpt_every - 1 steps lost)."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    proc = _train_cli(corpus, tmp_path / "cut")
    metrics = tmp_path / "cut" / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (metrics.is_file() and len(metrics.read_text().splitlines()) >= 10):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted at step" in err and "Traceback" not in err
    ckpt = torch.load(tmp_path / "cut" / "ckpt.pt", weights_only=True)
    done = len(_lines(metrics))
    assert 10 <= done < 300 and ckpt["step"] == done  # no step lost
    resumed = _train_cli(corpus, tmp_path / "cut", "--resume")
    full = _train_cli(corpus, tmp_path / "full")
    assert resumed.wait(timeout=300) == 0 and full.wait(timeout=300) == 0
    assert _lines(metrics) == _lines(tmp_path / "full" / "metrics.jsonl")


def test_a_run_killed_before_its_first_checkpoint_resumes_from_step_0(tmp_path, text, capsys):
    """Issue 24 #5: the rerun said "add --resume", --resume said "start without --resume"."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    cfg = T.replace(ckpt_every=0)

    class Crash:
        def on_step_end(self, step, record, model):
            if step == 9:
                raise RuntimeError("the machine went away")

    run = tmp_path / "run"
    with pytest.raises(RuntimeError):
        train(text, cfg, out_dir=run, callbacks=[Crash()])
    assert not (run / "ckpt.pt").exists() and len(_lines(run / "metrics.jsonl")) == 10
    argv = ["train", "--corpus", str(corpus), "--out", str(run), "--no-progress"]
    argv += [a for k in ("n_layer", "d_model", "n_head", "block_size", "batch_size", "max_steps", "eval_batches",
                         "vocab_size", "ckpt_every", "device") for a in ("--set", f"{k}={cfg.to_dict()[k]}")]  # fmt: skip
    assert main(argv) == 2  # the plain rerun: refused, and told what works
    err = capsys.readouterr().err.strip()
    assert "no checkpoint yet" in err and "--resume" in err and "--overwrite" in err and not err.endswith(":")
    assert main([*argv, "--set", "lr=0.01", "--resume"]) == 2  # another config is not resumed over
    assert "different config" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0
    assert "starts again from step 0" in capsys.readouterr().out
    ref = tmp_path / "ref"
    train(text, cfg, out_dir=ref)
    assert _agree(run) == _agree(ref)


def test_set_aside_names_never_collide(tmp_path, monkeypatch):
    """Issue 24 #11: two checkpoints set aside in the same second; the second replaced the first."""
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20260101-000000")
    ck = tmp_path / "ckpt.pt"
    kept = []
    for i in range(3):
        ck.write_bytes(f"damaged {i}".encode())
        kept.append(set_aside(ck))
    assert len(set(kept)) == 3 and not ck.exists()
    assert [p.read_bytes() for p in kept] == [b"damaged 0", b"damaged 1", b"damaged 2"]


# ----------------------------------------------------------------------- many-run commands
def test_a_foreign_run_folder_is_found_before_any_training(tmp_path, text):
    """Issue 26 #2: the full case met a --quick run's folder (max_steps 250 vs 1500) only after
    training every other run. Now every folder is checked first and all problems named at once."""
    from attnlab.runfolder import RunFolder

    cfg = T.replace(max_steps=6, eval_every=0)
    runs = [Run("a", cfg.replace(seed=1)), Run("b", cfg.replace(seed=2)), Run("c", cfg.replace(seed=3))]
    root = tmp_path / "runs"
    train(text, runs[1].cfg.replace(max_steps=3), out_dir=runs[1].dir(root))  # a smaller run under b's name
    holder = RunFolder(runs[2].dir(root))  # c is being trained by another process
    holder.acquire()
    try:
        with pytest.raises(RunFoldersRefused) as e:
            execute(runs, text, root, progress=False, log=lambda m: None)
    finally:
        holder.release()
    msg = str(e.value)
    assert "nothing trained" in msg and "max_steps=3 vs 6" in msg and f"busy, process {os.getpid()}" in msg
    assert "b:" in msg and "c:" in msg and len(msg.splitlines()) == 1
    assert not runs[0].dir(root).exists()  # a was not trained first
    assert isinstance(e.value, RunFailed) and set(e.value.failures) == {"b"} and set(e.value.busy) == {"c"}


def test_a_run_held_by_another_process_is_busy_not_failed(tmp_path, text):
    """Issue 24 #2: runs locked by the other `book` counted as failed; now busy, naming the holder."""
    from attnlab.runfolder import RunFolder

    cfg = T.replace(max_steps=4)
    d = tmp_path / "r"
    with RunFolder(d):
        r = train_one({"name": "r", "dir": str(d), "config": cfg.to_dict(), "text": text})
    assert r["status"] == "busy" and f"process {os.getpid()}" in r["error"]


def _book(out: Path, *extra: str) -> list[str]:
    return ["book", "--quick", "--no-progress", "--out", str(out), "--only", "§1.18.5", *extra]


def test_book_with_a_failing_run_exits_non_zero_and_keeps_the_complete_book(tmp_path, monkeypatch, capsys):
    """Issue 24 #2: any failing run ended `book` with exit 0, and the partial book replaced the whole one."""
    import importlib

    assert main(_book(tmp_path)) == 0
    index = tmp_path / "data" / "lab_book.json"
    before = json.loads(index.read_text())
    deep_doc = (tmp_path / "data" / "lab_book" / "deep.json").read_text()
    assert before["status"]["deep"] == "done"
    capsys.readouterr()
    victim = next(p for p in (tmp_path / "runs" / "deep").iterdir() if p.name.startswith("deep4_s"))
    for p in victim.iterdir():
        p.unlink()
    victim.rmdir()
    train_mod = importlib.import_module("attnlab.train")
    real = train_mod.train

    def failing(text, cfg, **kw):
        if Path(kw["out_dir"]).name == victim.name:
            raise RuntimeError("injected: the disk went away")
        return real(text, cfg, **kw)

    monkeypatch.setattr(train_mod, "train", failing)
    assert main(_book(tmp_path)) == 1
    err = capsys.readouterr().err
    assert victim.name in err and "failed" in err and "injected: the disk went away" in err
    after = json.loads(index.read_text())
    assert after["status"]["deep"] == "done" and after["summary"]["claims"] == before["summary"]["claims"]
    assert (tmp_path / "data" / "lab_book" / "deep.json").read_text() == deep_doc


def test_two_books_into_one_out_the_second_is_refused_up_front(tmp_path):
    """Issue 24 #2, the concurrent-book probe: two `attnlab book --quick` into one --out both exited 0
    with a partial book. Now the second is refused at once, naming the first; the first's book is whole."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}

    def spawn():
        return subprocess.Popen(
            [sys.executable, "-m", "attnlab.cli", *_book(tmp_path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        )  # fmt: skip

    first = spawn()
    deadline = time.time() + 120
    while time.time() < deadline and not (tmp_path / "runs" / "deep").is_dir():
        time.sleep(0.05)
    second = spawn()
    out2, err2 = second.communicate(timeout=300)
    out1, err1 = first.communicate(timeout=300)
    assert first.returncode == 0, err1
    assert second.returncode == 2, (out2, err2)
    assert f"being written by process {first.pid}" in err2 and len(err2.strip().splitlines()) == 1
    book = json.loads((tmp_path / "data" / "lab_book.json").read_text())
    assert book["status"]["deep"] == "done"
    doc = json.loads((tmp_path / "data" / "lab_book" / "deep.json").read_text())
    assert all(r["done"] for r in doc["runs"])


def test_a_case_into_a_root_another_book_or_case_writes_is_refused(tmp_path, capsys):
    """The output-folder lock is shared by `book` and `case`: refused at once, nothing written."""
    from attnlab.runfolder import OutputLock

    with OutputLock(tmp_path, "attnlab book"):
        assert main(["case", "--quick", "--no-progress", "--out", str(tmp_path), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"being written by process {os.getpid()}" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".attnlab-out-lock"]


# ---------------------------------------------------------------------------- messages
def test_a_state_dict_mismatch_names_the_keys(tmp_path, text):
    """Issue 24 #12: the message ended in "TinyGPT:" and never named the mismatch."""
    from attnlab.checkpoint import load_checkpoint
    from attnlab.errors import CheckpointError

    run = tmp_path / "run"
    train(text, T.replace(max_steps=2), out_dir=run)
    payload = torch.load(run / "ckpt.pt", weights_only=True)
    key = next(k for k in payload["model"] if k.endswith("weight") and payload["model"][k].dim() == 2)
    payload["model"][key] = torch.zeros(3, 5)
    payload["model"]["stray.bias"] = torch.zeros(2)
    torch.save(payload, run / "ckpt.pt")
    resume = lambda: train(text, T.replace(max_steps=2), out_dir=run, resume=True)  # noqa: E731
    for action in (lambda: load_checkpoint(run / "ckpt.pt"), resume):
        with pytest.raises(CheckpointError) as e:
            action()
        msg = str(e.value)
        assert key in msg and "(3, 5)" in msg and "stray.bias" in msg
        assert "TinyGPT:" not in msg and not msg.rstrip().endswith(":")


def test_an_unreadable_checkpoint_is_not_called_corrupt_nor_set_aside(tmp_path, text, monkeypatch):
    """Issue 24 #12: an unreadable checkpoint was reported as "cannot write … free space"; the runner
    would set an intact checkpoint aside and retrain the run from scratch."""
    from attnlab import checkpoint
    from attnlab.errors import CheckpointError

    cfg = T.replace(max_steps=4)
    root = tmp_path / "runs"
    execute([Run("r", cfg)], text, root, progress=False, log=lambda m: None)
    real_load = torch.load

    def denied(path, *a, **k):
        if str(path).endswith("ckpt.pt"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_load(path, *a, **k)

    monkeypatch.setattr(checkpoint.torch, "load", denied)
    with pytest.raises(CheckpointError) as e:
        checkpoint.read_checkpoint(root / "r" / "ckpt.pt")
    assert "cannot read" in str(e.value) and "Permission denied" in str(e.value)
    assert "corrupt" not in str(e.value) and "delete" not in str(e.value) and "write" not in str(e.value)
    (root / "r" / "config.json").unlink()  # the runner must open the checkpoint to know the run
    with pytest.raises(RunFailed) as e:
        execute([Run("r", cfg)], text, root, progress=False, log=lambda m: None)
    assert "cannot read" in str(e.value)
    assert (root / "r" / "ckpt.pt").is_file() and not list((root / "r").glob("ckpt.pt.corrupt-*"))


def test_a_folder_made_read_only_mid_run_names_the_failing_write(tmp_path, text, monkeypatch):
    """Issue 24 #12: the checkpoint save failed, then timing.json failed too and masked it, with
    "free some space" for a permission error."""
    import errno
    import tempfile

    from attnlab.errors import OutputError

    real = tempfile.mkstemp
    state = {"ro": False}

    def mkstemp(*a, **k):
        if state["ro"]:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(*a, **k)

    class ReadOnlyAt:
        def on_step_end(self, step, record, model):
            if step == 5:
                state["ro"] = True  # chmod a-w on the run folder

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    with pytest.raises(OutputError) as e:
        train(text, T.replace(ckpt_every=10, snapshot_every=0), out_dir=tmp_path / "run", callbacks=[ReadOnlyAt()])
    msg = str(e.value)
    assert "ckpt.pt" in msg and "timing.json" not in msg and "Permission denied" in msg
    assert "free some space" not in msg and "writable" in msg


@pytest.mark.parametrize("command", ["failures", "ablate"])
def test_an_output_path_that_is_a_directory_is_refused_before_the_work(tmp_path, text, capsys, monkeypatch, command):
    """Issue 24 #12: refused only after the training, with "free some space"."""
    import attnlab.runner as runner

    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    monkeypatch.setattr(runner, "train_one", lambda *a, **k: pytest.fail("trained before checking --out"))
    argv = [command, "--corpus", str(corpus), "--out", str(tmp_path), "--steps", "1"]
    argv += ["--set", "n_layer=1", "--set", "d_model=16", "--set", "block_size=16", "--set", "device=cpu"]
    if command == "failures":
        argv += ["--seeds", "1", "--report", str(tmp_path / "f.md")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "is a folder" in err and "free" not in err and len(err.splitlines()) == 1 and not err.endswith(":")


def test_report_into_a_root_a_book_or_case_writes_is_refused(tmp_path, capsys):
    """`attnlab report` rewrites the JSON, figures and reports: it takes the same output lock."""
    import shutil

    from attnlab.runfolder import OutputLock

    (tmp_path / "data").mkdir()
    case = tmp_path / "data" / "ch1_case.json"
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "ch1_case.json", case)
    before = case.read_bytes()
    with OutputLock(tmp_path, "attnlab case"):
        assert main(["report", str(case)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"being written by process {os.getpid()}" in err and len(err.splitlines()) == 1
    assert case.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".attnlab-out-lock", "data"]
