"""--executor slurm through submitit, tested with submitit's local executor (no SLURM needed):
the same Finished results as serial, bit for bit at one thread; a preempted job checkpoints,
is requeued and resumes; a job that dies or a missing sbatch is one line."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from attnlab.runner import Run, RunFailed, RunnerError, execute
from attnlab.slurm_executor import SlurmConfigError, make_options, parse_time

pytest.importorskip("submitit")
pytestmark = pytest.mark.usefixtures("one_thread")

LOCAL = {"cluster": "local", "cpus": 1}


def runs(cfg, n=2):
    return [Run(f"r{i}", cfg.replace(seed=100 + i, scaled=bool(i % 2)), group="g") for i in range(n)]


def same_results(a, b) -> bool:
    if set(a) != set(b):
        return False
    for name in a:
        if [r["loss"] for r in a[name].history.records] != [r["loss"] for r in b[name].history.records]:
            return False
        sa, sb = a[name].model.state_dict(), b[name].model.state_dict()
        if not all(torch.equal(sa[k], sb[k]) for k in sa):
            return False
    return True


def test_local_slurm_equals_serial_and_a_rerun_reuses(tmp_path, tiny_cfg, text):
    a = execute(runs(tiny_cfg), text, tmp_path / "serial", executor="serial", progress=False)
    seen = []
    b = execute(
        runs(tiny_cfg), text, tmp_path / "slurm", executor="slurm", slurm=LOCAL, progress=False, on_result=seen.append
    )
    assert same_results(a, b)  # bit for bit: both at one thread
    assert {f.status for f in b.values()} == {"trained"}
    assert b["r0"].run_dir == tmp_path / "slurm" / "g" / "r0"
    assert sorted(r["name"] for r in seen) == ["r0", "r1"]
    assert list((tmp_path / "slurm" / "_slurm").glob("corpus-*.txt"))  # the corpus once, not in every pickle
    again = execute(runs(tiny_cfg), text, tmp_path / "slurm", executor="slurm", slurm=LOCAL, progress=False)
    assert {f.status for f in again.values()} == {"reused"}
    assert not same_results(a, {"r0": b["r1"], "r1": b["r0"]})  # another seed's run differs: the check can fail


def job_processes(folder: Path) -> list[int]:
    """The pids of submitit job processes (python -m submitit.core._submit <folder>/...) under ``folder``."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"submitit.core._submit" in cmd and any(str(folder).encode() in c for c in cmd):
            out.append(int(p.name))
    return out


def in_background(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def wait_for_steps(run_dir: Path, n: int, timeout: float = 120) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        m = run_dir / "metrics.jsonl"
        if m.is_file() and len(m.read_text().splitlines()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{run_dir} did not reach {n} steps")


@pytest.mark.slow  # ~40 s on the busy 2-core machine: two job starts (torch imports) and a serial reference
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the job process through /proc")
def test_a_preempted_job_checkpoints_is_requeued_and_resumes_bit_identically(tmp_path, tiny_cfg, text):
    from attnlab.runfolder import training_sessions

    # no periodic checkpoint: only the preemption's own checkpoint can make the requeued job resume
    cfg = tiny_cfg.replace(max_steps=150, ckpt_every=0, eval_every=50)
    run = [Run("long", cfg, group="g")]
    ref = execute(run, text, tmp_path / "serial", executor="serial", progress=False)
    seen = []
    t, box = in_background(
        lambda: execute(
            run, text, tmp_path / "slurm", executor="slurm", slurm=LOCAL, progress=False, on_result=seen.append
        )
    )
    run_dir = tmp_path / "slurm" / "g" / "long"
    wait_for_steps(run_dir, 5)
    pids = job_processes(tmp_path / "slurm" / "_slurm")
    assert len(pids) == 1
    os.kill(pids[0], signal.SIGUSR2)  # what SLURM sends before preempting (submitit's default signal)
    t.join(timeout=300)
    assert not t.is_alive() and "error" not in box, box.get("error")
    got = box["value"]
    assert seen[-1]["status"] == "resumed"  # the requeued job found the checkpoint
    sessions = training_sessions(run_dir)
    assert len(sessions) == 2, sessions  # stopped at a step, resumed from that very step
    assert 0 < sessions[0]["to_step"] == sessions[1]["from_step"] < cfg.max_steps, sessions
    assert same_results(ref, got)


@pytest.mark.slow  # ~25 s: submitit waits 15 s for the result a dead job never writes
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the job process through /proc")
def test_a_job_that_dies_is_one_line_with_its_log(tmp_path, tiny_cfg, text):
    cfg = tiny_cfg.replace(max_steps=400, ckpt_every=0, eval_every=100)
    t, box = in_background(
        lambda: execute(
            [Run("doomed", cfg, group="g")], text, tmp_path / "s", executor="slurm", slurm=LOCAL, progress=False
        )
    )
    wait_for_steps(tmp_path / "s" / "g" / "doomed", 3)
    (pid,) = job_processes(tmp_path / "s" / "_slurm")
    os.kill(pid, signal.SIGKILL)  # out of memory, a node lost: no result comes back
    t.join(timeout=120)
    err = box.get("error")
    assert isinstance(err, RunFailed), box
    line = str(err)
    assert "\n" not in line and "doomed" in line and "slurm job" in line
    log = Path(line.rsplit("log: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.suffix == ".err"


def test_no_sbatch_on_path_is_one_line_and_touches_nothing(tmp_path, tiny_cfg, text, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RunnerError, match="no `sbatch` on PATH") as e:
        execute(runs(tiny_cfg, 1), text, tmp_path / "r", executor="slurm", progress=False)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "r").exists()


def test_sbatch_without_srun_is_one_line_and_touches_nothing(tmp_path, tiny_cfg, text, monkeypatch):
    """submitit starts every job with srun: a PATH with sbatch but no srun was its RuntimeError."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho Submitted batch job 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(RunnerError, match="no `srun` on PATH") as e:
        execute(runs(tiny_cfg, 1), text, tmp_path / "r", executor="slurm", progress=False)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "bad, phrase",
    [
        ("9" * 5000, "5,000 characters"),  # int() of 5,000 digits: Python's ValueError
        ("600000", "more than a year"),
    ],
)
def test_absurd_slurm_time_is_refused(bad, phrase):
    with pytest.raises(SlurmConfigError, match=phrase):
        parse_time(bad)


@pytest.mark.parametrize(
    "given, phrase",
    [
        ({"parallelism": 10**18}, "parallelism"),  # the plan packed runs onto 10**18 slots: MemoryError
        ({"cpus": 10**6}, "cpus"),
        ({"mem_gb": float("inf")}, "mem_gb"),
        ({"mem_gb": True}, "mem_gb"),
    ],
)
def test_absurd_slurm_options_are_refused(given, phrase):
    with pytest.raises(SlurmConfigError, match=phrase):
        make_options(**given)


@pytest.mark.parametrize(
    "name, text, phrase",
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, "nested"),
        ("inf.toml", "mem_gb = inf\n", "mem_gb"),
        ("inf.json", '{"mem_gb": Infinity}', "mem_gb is NaN or infinite"),
        ("par.toml", "parallelism = 1000000000000000000\n", "parallelism"),
        ("extra.toml", 'extra = "abc"\n', "extra is str"),
        ("cpus.json", '{"cpus": true}', "cpus is a boolean"),
    ],
)
def test_a_hostile_slurm_config_is_refused(tmp_path, name, text, phrase):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(SlurmConfigError, match=phrase) as e:
        make_options(tmp_path / name)
    assert str(tmp_path / name) in str(e.value) and "\n" not in str(e.value)


def test_a_slurm_config_that_never_ends_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo.toml")
    for path, phrase in [(tmp_path / "fifo.toml", "FIFO"), ("/dev/zero", "device")]:
        with pytest.raises(SlurmConfigError, match=phrase):
            make_options(path)  # used to wait forever on the FIFO, or read /dev/zero until memory ran out


@pytest.mark.parametrize(
    "text, minutes",
    [("90", 90), ("1:30:00", 90), ("2-12", 3600), ("0-01:00", 60), ("2h", 120), ("90m", 90), ("1h30m", 90)],
)
def test_slurm_time_formats(text, minutes):
    assert parse_time(text) == minutes


@pytest.mark.parametrize("bad", ["", "soon", "1:2:3:4", "0", "-5"])
def test_bad_slurm_time_is_refused(bad):
    with pytest.raises(SlurmConfigError, match="--slurm-time"):
        parse_time(bad)


def test_options_from_a_file_and_the_command_line(tmp_path):
    toml = tmp_path / "slurm.toml"
    toml.write_text('partition = "gpu"\ntime = "4:00:00"\ncpus = 2\n[extra]\naccount = "lab"\n', encoding="utf-8")
    o = make_options(toml, cpus=4, partition=None)
    assert (o.partition, o.time_min, o.cpus, o.extra) == ("gpu", 240, 4, {"account": "lab"})
    assert o.total_cpus == 4 * o.parallelism
    js = tmp_path / "slurm.json"
    js.write_text('{"parallelism": 8, "colour": "red"}', encoding="utf-8")
    with pytest.raises(SlurmConfigError, match="unknown option.*colour"):
        make_options(js)
    with pytest.raises(SlurmConfigError, match="cpus"):
        make_options(None, cpus=0)


def test_book_cli_runs_on_the_local_slurm_executor(tmp_path, capsys):
    """attnlab book --executor slurm with the resources in a file (cluster = local: no SLURM needed)."""
    from attnlab.cli import main

    conf = tmp_path / "slurm.json"
    conf.write_text('{"cluster": "local", "time": "10"}', encoding="utf-8")
    args = ["book", "--quick", "--only", "dynamics", "--out", str(tmp_path / "b"), "--no-progress"]
    assert main([*args, "--executor", "slurm", "--slurm-config", str(conf)]) == 0
    jobs = list((tmp_path / "b" / "runs" / "_slurm").glob("*_submitted.pkl"))
    assert len(jobs) == 1  # the one run of the entry went through one job
    assert (tmp_path / "b" / "data" / "lab_book" / "dynamics.json").is_file()
    assert "结果 / results" in capsys.readouterr().out


def test_one_job_array_with_the_asked_resources(tmp_path, tiny_cfg, text, monkeypatch):
    """What a real cluster gets: one sbatch script for the batch, an array of one job per run
    (a stand-in sbatch records the script and answers like SLURM; the jobs never run here)."""
    import stat

    from attnlab.slurm_executor import executor_for, make_options

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sbatch", "srun"):
        (bin_dir / tool).write_text('#!/bin/sh\ncp "$1" "$1.sent" 2>/dev/null\necho "Submitted batch job 4242"\n')
        (bin_dir / tool).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    conf = tmp_path / "slurm.toml"
    conf.write_text('partition = "cpu"\ntime = "1:30:00"\n[extra]\naccount = "lab"\n', encoding="utf-8")
    opts = make_options(conf, cpus=2, parallelism=3)
    ex = executor_for(opts, tmp_path / "_slurm")
    jobs = ex.map_array(lambda t: t, [{"name": f"r{i}"} for i in range(5)])
    assert [j.job_id for j in jobs] == [f"4242_{i}" for i in range(5)]  # one array, one job per run
    (script,) = (tmp_path / "_slurm").glob("*.sh.sent")
    lines = set(script.read_text().splitlines())
    for want in ("--array=0-4%3", "--partition=cpu", "--cpus-per-task=2", "--time=90", "--account=lab"):
        assert f"#SBATCH {want}" in lines, want
    assert any(ln.startswith("#SBATCH --signal=USR2@") for ln in lines)  # the preemption signal RunJob catches


def test_a_job_sacct_never_learns_of_ends_in_one_line_after_a_grace_period(tmp_path, monkeypatch):
    """A stand-in sbatch accepts the array, a stand-in sacct never lists it: the driver gives the jobs up
    after UNKNOWN_AFTER_S (here 2 s) with one line naming each job, instead of waiting forever."""
    import stat

    import attnlab.slurm_executor as se

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {
        "sbatch": 'echo "Submitted batch job 777"',
        "srun": "exit 0",
        "sacct": 'echo "JobID|State|NodeList"',  # the header only: no record of job 777
    }
    for tool, body in tools.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(se, "UNKNOWN_AFTER_S", 2)
    monkeypatch.setattr(se, "POLL_S", 0.2)
    tasks = [{"name": f"r{i}", "dir": str(tmp_path / "runs" / f"r{i}"), "text": "春眠不覺曉"} for i in range(2)]
    got = []
    t0 = time.monotonic()
    se.run_slurm(tasks, got.append, slurm={"cluster": "slurm"}, root=tmp_path)
    took = time.monotonic() - t0
    assert 2 <= took < 30 and [r["status"] for r in got] == ["failed", "failed"]
    for r, job in zip(got, ("777_0", "777_1")):
        assert "\n" not in r["error"] and f"slurm job {job} is unknown to the scheduler" in r["error"], r["error"]
