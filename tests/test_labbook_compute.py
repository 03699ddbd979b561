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
