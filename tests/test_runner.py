"""The one runner: the same results from every executor, reuse, resume, set-aside, errors."""

import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from attnlab.errors import AttnlabError
from attnlab.runner import ExecutorOptions, Run, RunFailed, RunnerError, execute, train_one

pytestmark = pytest.mark.usefixtures("one_thread")


def runs(tiny_cfg, n=2, keep=()):
    return [
        Run(f"r{i}", tiny_cfg.replace(seed=100 + i, scaled=bool(i % 2)), group="g", keep_weights=keep) for i in range(n)
    ]


def kept(finished, step):
    from attnlab.checkpoint import read_checkpoint, weights_path

    return {name: read_checkpoint(weights_path(f.run_dir, step))["model"] for name, f in finished.items()}


def same_weights(a, b):
    return a.keys() == b.keys() and all(all(torch.equal(x, y) for x, y in zip(a[n].values(), b[n].values())) for n in a)


def losses(finished):
    return {name: [r["loss"] for r in f.history.records] for name, f in finished.items()}


def test_serial_and_local_give_identical_results(tmp_path, tiny_cfg, text):
    a = execute(runs(tiny_cfg, keep=(3,)), text, tmp_path / "a", executor="serial", progress=False)
    b = execute(runs(tiny_cfg, keep=(3,)), text, tmp_path / "b", executor="local", workers=2, progress=False)
    assert set(a) == set(b) == {"r0", "r1"}
    assert same_weights(kept(a, 3), kept(b, 3))  # weights kept at step 3 by every worker, equal
    assert not same_weights(kept(a, 3), {n: f.model.state_dict() for n, f in a.items()})
    assert losses(a) == losses(b)  # bit for bit, not approximately
    for name in a:
        for (k, va), vb in zip(a[name].model.state_dict().items(), b[name].model.state_dict().values()):
            assert torch.equal(va, vb), k
    assert a["r0"].run_dir == tmp_path / "a" / "g" / "r0"
    assert {f.status for f in b.values()} == {"trained"}


def test_finished_runs_are_reused_and_interrupted_ones_resume(tmp_path, tiny_cfg, text):
    from attnlab.train import train

    full = execute(runs(tiny_cfg, 1), text, tmp_path / "full", progress=False)
    # an interrupted run: 5 of 12 steps and a checkpoint on disk
    rs = runs(tiny_cfg, 1)
    with pytest.raises(KeyboardInterrupt):
        train(text, rs[0].cfg, out_dir=rs[0].dir(tmp_path / "part"), stop_after=5)
    seen = []
    resumed = execute(rs, text, tmp_path / "part", progress=False, on_result=seen.append)
    assert seen[0]["status"] == "resumed"
    assert losses(resumed) == losses(full)
    again = execute(rs, text, tmp_path / "part", progress=False)
    assert again["r0"].status == "reused"
    # a folder holding a run of another config is refused, and left as it was
    other = [Run("r0", rs[0].cfg.replace(lr=1e-3), group="g")]
    before = {p.name: p.read_bytes() for p in rs[0].dir(tmp_path / "part").iterdir()}
    with pytest.raises(RunFailed, match="different config"):
        execute(other, text, tmp_path / "part", progress=False)
    assert {p.name: p.read_bytes() for p in rs[0].dir(tmp_path / "part").iterdir()} == before


def test_kept_weights_survive_an_interruption(tmp_path, tiny_cfg, text):
    """Weights kept before a Ctrl-C stay; the resumed run keeps the rest; all equal an uninterrupted run's."""
    from attnlab.checkpoint import KeepWeights
    from attnlab.tokenizer import CharTokenizer
    from attnlab.train import train

    full = execute(runs(tiny_cfg, 1, keep=(3, 8)), text, tmp_path / "full", progress=False)
    rs = runs(tiny_cfg, 1, keep=(3, 8))
    keep = KeepWeights(rs[0].dir(tmp_path / "part"), (3, 8), CharTokenizer(text, tiny_cfg.vocab_size))
    with pytest.raises(KeyboardInterrupt):
        train(text, rs[0].cfg, out_dir=rs[0].dir(tmp_path / "part"), stop_after=5, callbacks=[keep])
    assert not (rs[0].dir(tmp_path / "part") / "weights" / "step8.pt").exists()
    part = execute(rs, text, tmp_path / "part", progress=False)
    assert part["r0"].status == "resumed"
    assert same_weights(kept(full, 3), kept(part, 3)) and same_weights(kept(full, 8), kept(part, 8))


def test_corrupt_checkpoint_is_set_aside_and_the_run_restarted(tmp_path, tiny_cfg, text):
    rs = runs(tiny_cfg, 1)
    ref = execute(rs, text, tmp_path / "ok", progress=False)
    d = rs[0].dir(tmp_path / "bad")
    d.mkdir(parents=True)
    (d / "ckpt.pt").write_bytes(b"not a checkpoint")
    (d / "summary.json").write_text("{}")
    logged = []
    out = execute(rs, text, tmp_path / "bad", progress=False, log=logged.append)
    assert losses(out) == losses(ref)
    assert len(list(d.glob("ckpt.pt.corrupt-*"))) == 1
    assert any("could not be read" in m for m in logged)


def test_a_failing_run_does_not_stop_the_others(tmp_path, tiny_cfg, text):
    bad = Run("huge", tiny_cfg.replace(block_size=4000))  # longer than the corpus
    good = runs(tiny_cfg, 1)
    with pytest.raises(RunFailed) as e:
        execute([bad, *good], text, tmp_path, progress=False)
    assert "huge" in str(e.value) and "r0" not in e.value.failures
    kept = execute([bad, *good], text, tmp_path, progress=False, keep_going=True)
    assert set(kept) == {"r0"} and kept["r0"].status == "reused"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"executor": "kubernetes"}, "unknown executor"),  # slurm is one now (slurm_executor)
        ({"workers": 0}, "at least 1"),
    ],
)
def test_bad_arguments(tmp_path, tiny_cfg, text, kwargs, message):
    with pytest.raises(RunnerError, match=message):
        execute(runs(tiny_cfg), text, tmp_path, progress=False, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"executor": "kubernetes"}, "unknown executor 'kubernetes'; use one of serial, local, ray, slurm"),
        ({"workers": 0}, "--workers must be at least 1, got 0"),
        ({"workers": "2"}, "--workers must be a whole number, got '2'"),
        ({"workers": True}, "--workers must be a whole number"),
        ({"ray_address": 6379}, "--ray-address must be an address"),
        ({"executor": "local", "slurm": {"cpus": 2}}, "slurm options belong to --executor slurm, not local"),
        ({"executor": "slurm", "slurm": {"cpus": 0}}, "slurm cpus must be a whole number >= 1"),
        ({"executor": "slurm", "slurm": {"parallelism": 10**18}}, "parallelism"),
    ],
)
def test_executor_options_are_checked_when_made(kwargs, message):
    """One line naming the option, when the object is made (and again when it is changed)."""
    with pytest.raises(AttnlabError, match=re.escape(message)) as e:
        ExecutorOptions(**kwargs)
    assert "\n" not in str(e.value)
    with pytest.raises(AttnlabError, match=re.escape(message)):
        ExecutorOptions("slurm" if "slurm" in kwargs else "serial").replace(**kwargs)


def test_executor_options_are_one_frozen_object():
    from dataclasses import FrozenInstanceError

    from attnlab.slurm_executor import SlurmOptions

    opts = ExecutorOptions("local", workers=2, progress=False)
    with pytest.raises(FrozenInstanceError):
        opts.workers = 0
    assert opts.replace(workers=3) == ExecutorOptions("local", workers=3, progress=False)
    assert opts.record() == {"executor": "local", "workers": 2, "ray_address": None}
    assert ExecutorOptions("slurm").slurm == SlurmOptions()  # --executor slurm's defaults, filled in once
    assert ExecutorOptions("slurm", slurm={"cluster": "local", "cpus": 2}).slurm.cpus == 2
    assert ExecutorOptions().slurm is None


def test_execute_takes_the_options_or_their_fields_not_both(tmp_path, tiny_cfg, text):
    with pytest.raises(TypeError, match="not both"):
        execute(runs(tiny_cfg), text, tmp_path, ExecutorOptions(progress=False), workers=2)
    with pytest.raises(TypeError, match="wrokers"):
        execute(runs(tiny_cfg), text, tmp_path, wrokers=2)
    assert not list(tmp_path.iterdir())  # refused before any folder


def test_the_command_line_builds_one_options_object():
    """cli.common.executor_options: --executor, --workers, --ray-address, --no-progress and the
    --slurm-* options become one ExecutorOptions; a --slurm-* option without --executor slurm is refused."""
    from argparse import Namespace

    from attnlab.cli.common import executor_options
    from attnlab.errors import UsageError

    slurm = {f"slurm_{k}": None for k in ("partition", "time", "cpus", "parallelism", "config")}
    args = Namespace(executor="slurm", workers=None, ray_address=None, no_progress=True, **slurm)
    args.slurm_partition, args.slurm_time, args.slurm_parallelism = "cpu", "90", 8
    opts = executor_options(args)
    assert (opts.executor, opts.progress, opts.slurm.partition, opts.slurm.time_min, opts.slurm.parallelism) == (
        "slurm",
        False,
        "cpu",
        90,
        8,
    )
    plain = executor_options(Namespace(executor="local", workers=2, ray_address="h:1"))  # sweep: no --slurm-*
    assert plain == ExecutorOptions("local", workers=2, ray_address="h:1", progress=True)
    with pytest.raises(UsageError, match="--slurm-cpus belongs to --executor slurm"):
        executor_options(Namespace(executor="local", workers=None, ray_address=None, **{**slurm, "slurm_cpus": 2}))


def test_duplicate_names_refused(tmp_path, tiny_cfg, text):
    with pytest.raises(RunnerError, match="unique"):
        execute([Run("x", tiny_cfg), Run("x", tiny_cfg)], text, tmp_path, progress=False)


def test_unreachable_ray_address_is_one_line(tmp_path, tiny_cfg, text):
    pytest.importorskip("ray")
    with pytest.raises(RunnerError, match="cannot reach a Ray cluster"):
        execute(runs(tiny_cfg), text, tmp_path, executor="ray", ray_address="127.0.0.1:9", progress=False)


def test_ray_executor_matches_serial(tmp_path, tiny_cfg, text):
    """A local Ray instance started on the fly; run folders travel with the tasks and back."""
    pytest.importorskip("ray")
    a = execute(runs(tiny_cfg, keep=(3,)), text, tmp_path / "a", executor="serial", progress=False)
    b = execute(runs(tiny_cfg, keep=(3,)), text, tmp_path / "b", executor="ray", progress=False)
    assert losses(a) == losses(b)
    assert same_weights(kept(a, 3), kept(b, 3))  # the kept weights come back from the workers
    assert (tmp_path / "b" / "g" / "r1" / "summary.json").is_file()


@pytest.mark.parametrize(
    "sig",
    [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM", marks=pytest.mark.slow)],
)
def test_one_ctrl_c_checkpoints_every_worker_and_a_rerun_finishes(tmp_path, tiny_cfg, text, sig):
    """SIGINT (or SIGTERM, handled alike) to the parent reaches each local worker once; every run
    checkpoints; the runs queued behind them never start (the pool had already taken one of them,
    past cancelling); rerun = uninterrupted."""
    long = tiny_cfg.replace(max_steps=200, ckpt_every=1000)
    script = tmp_path / "go.py"
    script.write_text(
        "import sys\nfrom attnlab.config import Config\nfrom attnlab.runner import Run, execute, RunsInterrupted\n"
        f"cfg = Config.from_dict({long.to_dict()!r})\n"
        "rs = [Run(f'r{i}', cfg.replace(seed=100 + i)) for i in range(4)]\n"
        "if __name__ == '__main__':\n"
        f"    try:\n        execute(rs, {text!r}, sys.argv[1], executor='local', workers=2, progress=False)\n"
        "    except RunsInterrupted:\n        print('INTERRUPTED', flush=True); sys.exit(130)\n"
    )
    root = tmp_path / "root"
    proc = subprocess.Popen([sys.executable, str(script), str(root)], stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not all(
        (root / f"r{i}" / "metrics.jsonl").is_file() and (root / f"r{i}" / "metrics.jsonl").stat().st_size > 0
        for i in range(2)
    ):
        time.sleep(0.2)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "INTERRUPTED" in out
    for i in range(2):
        assert (root / f"r{i}" / "ckpt.pt").is_file(), "each worker checkpointed its run"
        assert not (root / f"r{i}" / "summary.json").is_file()
    for i in (2, 3):
        assert not (root / f"r{i}" / "metrics.jsonl").exists(), f"r{i} started after the Ctrl-C"
    rs = [Run(f"r{i}", long.replace(seed=100 + i)) for i in range(2)]
    resumed = execute(rs, text, root, progress=False)
    fresh = execute(rs, text, tmp_path / "fresh", progress=False)
    assert {f.status for f in resumed.values()} == {"resumed"}
    assert losses(resumed) == losses(fresh)


def test_train_one_never_raises(tmp_path, tiny_cfg, text):
    r = train_one(
        {"name": "x", "dir": str(tmp_path / "x"), "config": tiny_cfg.replace(block_size=4000).to_dict(), "text": text}
    )
    assert r["status"] == "failed" and "block_size" in r["error"]


def test_a_label_function_is_asked_again_after_each_run(tmp_path, tiny_cfg, text, monkeypatch):
    """The case's bar says how many runs are done: its label follows the results, not the batch's start."""
    import attnlab.runner as R

    shown = []

    class Bar:
        def __init__(self, total, enabled, desc):
            shown.append(desc)

        def update(self, n):
            pass

        def set_description(self, desc):
            shown.append(desc)

        def close(self):
            pass

    monkeypatch.setattr(R, "_bar", Bar)
    done = []
    rs = [Run(f"r{i}", tiny_cfg.replace(seed=i)) for i in range(2)]
    execute(
        rs, text, tmp_path, progress=True, on_result=lambda r: done.append(r["name"]), desc=lambda: f"done {len(done)}"
    )
    assert shown == ["done 0", "done 1", "done 2"]


def test_every_timing_record_carries_cpu_time_and_load(tmp_path, tiny_cfg, text):
    """A run's session (RUN/timing.json) and the runner's result record the process's CPU time and the
    machine's load and CPU count, so a plan can tell idle cores from shared ones (runfolder.load_state)."""
    import os

    from attnlab.runfolder import load_state, training_conditions, training_sessions

    seen = []
    execute(runs(tiny_cfg, 2), text, tmp_path, executor="local", workers=2, progress=False, on_result=seen.append)
    for r in seen:
        assert r["status"] == "trained" and r["cpu_s"] > 0 and (r["load"] is None or r["load"] >= 0)
    for name in ("r0", "r1"):
        (s,) = training_sessions(tmp_path / "g" / name)
        assert s["cpus"] == os.cpu_count() and s["threads"] == 1  # 2 workers on this machine's cores
        assert s["cpu_s"] > 0 and (s["load_end"] is None or s["load_end"] >= 0)
        assert s["cpu_s"] <= s["seconds"] * s["threads"] * 1.05 + 0.05  # one thread cannot use more than its wall
        c = training_conditions(tmp_path / "g" / name)
        assert c["cpu_s"] == s["cpu_s"] and c["state"] == load_state(
            s["seconds"], s["cpu_s"], s["load_end"], s["cpus"], s["threads"]
        )
