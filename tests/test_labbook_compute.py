"""The lab book's compute record: one number per run, merged across machines (runs/ is not in git)."""

from attnlab.config import Config
from attnlab.lab.labbook import compute_time
from attnlab.runfolder import record_session
from attnlab.runner import Run


def _run(name):
    return Run(name, Config(max_steps=5), group="g")


def test_per_run_seconds_add_up_and_untimed_runs_are_counted_apart(tmp_path):
    a, b, c = _run("a"), _run("b"), _run("c")
    for r, secs in ((a, 10.0), (b, 5.0)):
        record_session(r.dir(tmp_path), {"seconds": secs})
    record_session(a.dir(tmp_path), {"seconds": 2.5})  # a resumed run: both sessions count
    rec = compute_time([a, b, c], tmp_path)
    assert rec == {"compute_s": 17.5, "runs": 3, "timed_runs": 2, "per_run": {"a": 12.5, "b": 5.0}}


def test_a_run_trained_elsewhere_keeps_its_seconds_and_disk_wins(tmp_path):
    a, b = _run("a"), _run("b")
    record_session(a.dir(tmp_path), {"seconds": 7.0})
    before = {"per_run": {"a": 99.0, "b": 4.0, "gone": 1.0}}
    rec = compute_time([a, b], tmp_path, before)
    assert rec["per_run"] == {"a": 7.0, "b": 4.0}  # 'gone' is not one of these runs
    assert rec["compute_s"] == 11.0 and rec["timed_runs"] == 2
    book = compute_time([a], tmp_path, before, keep_unlisted=True)
    assert book["per_run"] == {"a": 7.0, "b": 4.0, "gone": 1.0} and book["runs"] == 3


def test_an_old_record_without_per_run_that_knew_more_is_kept(tmp_path):
    before = {"compute_s": 500.0, "runs": 3, "timed_runs": 3}
    assert compute_time([_run("a")], tmp_path, before) == before


def test_load_state_rule():
    """Busy: the process had its core less than 0.9 of the wall time per thread, or the end load exceeded
    the CPUs by more than 0.5; unknown without CPU time; idle otherwise."""
    from attnlab.runfolder import load_state

    assert load_state(100.0, 97.0, 1.9, 2, 1) == "idle"
    assert load_state(100.0, 97.0, 2.4, 2, 1) == "idle"  # 2 workers and a little noise
    assert load_state(100.0, 85.0, 1.0, 2, 1) == "busy"  # waited 15 % of its time for a core
    assert load_state(100.0, 97.0, 2.6, 2, 1) == "busy"  # more work than cores at its end
    assert load_state(100.0, 180.0, 1.8, 2, 2) == "idle" and load_state(100.0, 100.0, 1.8, 2, 2) == "busy"
    assert load_state(100.0, 97.0, None, None, 1) == "idle"  # no load average here: the CPU share decides
    assert load_state(100.0, None, 0.1, 2, 1) == "unknown"  # recorded before CPU time was
    assert load_state(0.0, 0.0, 0.1, 2, 1) == "unknown"


def test_the_record_says_each_runs_cores(tmp_path):
    """per_run_conditions: CPU time and load over a run's sessions, busy when any session was; runs
    whose sessions predate CPU time have none (their cores are unknown) and the record keeps its shape."""
    a, b, c = _run("a"), _run("b"), _run("c")
    record_session(a.dir(tmp_path), {"seconds": 10.0, "cpu_s": 9.8, "load_start": 0.4, "load_end": 1.1, "cpus": 2})
    record_session(a.dir(tmp_path), {"seconds": 5.0, "cpu_s": 2.0, "load_end": 3.5, "cpus": 2})  # resumed, shared
    record_session(b.dir(tmp_path), {"seconds": 4.0, "cpu_s": 3.9, "load_end": 0.2, "cpus": 2, "threads": 1})
    record_session(c.dir(tmp_path), {"seconds": 3.0})  # before CPU time was recorded
    rec = compute_time([a, b, c], tmp_path)
    cond = rec["per_run_conditions"]
    assert set(cond) == {"a", "b"}
    assert cond["a"] == {"state": "busy", "cpu_s": 11.8, "load": 3.5, "load_start": 0.4, "cpus": 2}
    assert cond["b"]["state"] == "idle" and cond["b"]["cpu_s"] == 3.9 and cond["b"]["load"] == 0.2
    assert rec["per_run"] == {"a": 15.0, "b": 4.0, "c": 3.0}
    # a run trained again here replaces the conditions of its earlier record; another keeps its own
    before = {
        "per_run": {"b": 8.0, "gone": 1.0},
        "per_run_conditions": {"b": {"state": "busy", "cpu_s": 2.0}, "gone": {"state": "idle", "cpu_s": 1.0}},
    }
    book = compute_time([b], tmp_path, before, keep_unlisted=True)
    assert book["per_run_conditions"]["b"]["state"] == "idle" and book["per_run_conditions"]["gone"]["state"] == "idle"
    from attnlab.schemas import check

    check("lab_book_entry", {"id": "x", "status": "done", "timings": rec}, "x.json")


def test_a_run_trained_on_an_accelerator_says_nothing_of_a_cores_speed(tmp_path):
    from attnlab.runfolder import training_conditions

    a = _run("a")
    record_session(a.dir(tmp_path), {"seconds": 10.0, "cpu_s": 9.9, "load_end": 0.5, "cpus": 2, "device": "cuda:0"})
    assert training_conditions(a.dir(tmp_path))["state"] == "unknown"
