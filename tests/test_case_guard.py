"""A partial case never replaces a complete one: the guard compares what a result holds (runs
measured, seeds judged per claim), not what it planned. A rerun where the runs are gone (a fresh
clone), interrupted after its first batch, writes data/ch1_case.partial.json and its report beside
the complete result, which stays byte for byte; once the rerun holds as much, it replaces it.

The tiny three-batch case of test_case_stages (20 steps, two seeds, one weight decay), through
`attnlab case` itself so the report written after each batch is checked too.
"""

import json
import shutil
from dataclasses import replace

import pytest

import attnlab.lab.case.run as case
from attnlab.cli import main
from attnlab.lab.case.run import CaseSettings, result_holds
from attnlab.lab.labbook import beside, holds_less
from attnlab.runner import RunsInterrupted
from test_case_stages import SETTINGS, tiny  # noqa: F401  (the tiny presets, a fixture)

KEPT = ("data/ch1_case.json", "reports/ch1_case.md", "reports/ch1_case.html")


@pytest.fixture()
def cli_case(tiny, monkeypatch):  # noqa: F811
    """`attnlab case --quick` running the tiny settings; returns (out, run)."""
    out, corpus = tiny
    monkeypatch.setattr(CaseSettings, "quick", classmethod(lambda cls, steps=None: SETTINGS))

    def run(*extra):
        argv = ["case", "--quick", "--out", str(out), "--corpus", str(corpus), "--executor", "serial"]
        return main([*argv, "--no-progress", "--device", "cpu", *extra])

    return out, run


def interrupt_after(monkeypatch, batches: int) -> None:
    """The runner is interrupted (Ctrl-C) once ``batches`` batches have trained."""
    real, calls = case.execute, []

    def execute(*a, **kw):
        calls.append(1)
        if len(calls) > batches:
            raise RunsInterrupted()
        return real(*a, **kw)

    monkeypatch.setattr(case, "execute", execute)


def snapshot(out) -> dict:
    return {p: (out / p).read_bytes() for p in KEPT} | {
        f"figures/{f.name}": f.read_bytes() for f in sorted((out / "figures").glob("*.png"))
    }


def test_an_interrupted_rerun_goes_beside_the_complete_case(cli_case, monkeypatch, capsys):
    out, run = cli_case
    assert run() == 0
    complete = json.loads((out / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    assert complete["progress"]["complete"] and len(case.stored_runs(complete)) == 10
    before = snapshot(out)
    assert len(before) == len(KEPT) + 3
    shutil.rmtree(out / "runs")  # a fresh clone: the result is committed, its runs are not

    with monkeypatch.context() as m:
        interrupt_after(m, 1)
        assert run() == 130
    assert snapshot(out) == before  # the complete result, its report and figures: byte for byte
    aside = out / "data" / "ch1_case.partial.json"
    part = json.loads(aside.read_text(encoding="utf-8"))
    assert part["progress"]["runs_done"] == 6 and not part["progress"]["complete"]
    assert holds_less(result_holds(part), result_holds(complete))  # it is the smaller one, and says why
    for name in ("ch1_case.partial.md", "ch1_case.partial.html"):
        assert (out / "reports" / name).is_file()
    md = (out / "reports" / "ch1_case.partial.md").read_text(encoding="utf-8")
    assert "6/10" in md and "../figures/ch1_case.partial/" in md  # its own figures, not the complete one's
    err = capsys.readouterr()
    assert "ch1_case.partial.json" in err.out + err.err

    # finished now: batch 1 is reused, the rest trained; as large as the stored one, it replaces it
    assert run() == 0
    again = json.loads((out / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    assert again["progress"]["complete"] and not holds_less(result_holds(again), result_holds(complete))
    assert not aside.exists() and not (out / "reports" / "ch1_case.partial.md").exists()
    assert not (out / "figures" / "ch1_case.partial").exists()


def test_holds_less_compares_what_is_held_not_what_was_planned():
    less = lambda new, old: holds_less(result_holds(new), result_holds(old))  # noqa: E731
    claim = lambda i, n: {"id": i, "n": n, "verdict": "PASS"}
    small = lambda n: [{"run": f"r{i}"} for i in range(n)]
    doc = lambda runs, claims, steps=20: {
        "config": {"settings": {"steps": steps}},
        "pairs": {},
        "seed_runs": {"small_scaled": small(runs)},
        "claims": claims,
    }
    old = doc(8, [claim("a", 3), claim("b", 10)])
    assert less(doc(8, [claim("a", 3), claim("b", 10)]), old) == []
    assert less(doc(9, [claim("a", 4), claim("b", 10)]), old) == []
    assert any("runs" in w for w in less(doc(6, [claim("a", 3), claim("b", 10)]), old))
    assert any("b" in w for w in less(doc(8, [claim("a", 3), claim("b", 2)]), old))
    assert any("steps" in w for w in less(doc(8, [claim("a", 3), claim("b", 10)], steps=10), old))
    # a claim the stored result does not have (or no longer has) does not count against either
    assert less(doc(8, [claim("a", 3)]), doc(8, [claim("a", 3), claim("gone", 5)])) == []
    assert less(doc(8, [claim("a", 3), claim("new", 1)]), doc(8, [claim("a", 3)])) == []


def test_partial_path_sits_beside(tmp_path):
    assert beside(tmp_path / "data" / "ch1_case.json", "partial") == tmp_path / "data" / "ch1_case.partial.json"


def test_overwrite_replaces_only_once_complete(cli_case, monkeypatch):
    """--overwrite lets a smaller case replace a larger one, but only a finished one: an interrupted
    --overwrite still goes beside."""
    out, run = cli_case
    assert run() == 0
    before = snapshot(out)
    shutil.rmtree(out / "runs")
    monkeypatch.setattr(CaseSettings, "quick", classmethod(lambda cls, steps=None: replace(SETTINGS, steps=16)))
    assert run() == 2  # fewer steps than the stored case: refused up front
    with monkeypatch.context() as m:
        interrupt_after(m, 1)
        assert run("--overwrite") == 130
    assert snapshot(out) == before and (out / "data" / "ch1_case.partial.json").is_file()
    assert run("--overwrite") == 0
    now = json.loads((out / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    assert now["config"]["settings"]["steps"] == 16 and now["progress"]["complete"]
    assert not (out / "data" / "ch1_case.partial.json").exists()
