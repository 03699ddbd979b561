"""docs/example_entry.py, the entry CONTRIBUTING.md points at, is a real entry: registered in a temporary
registry (no file of the repository changed), it passes the book's structural checks, every claim can
PASS, FAIL and be INCONCLUSIVE, and `attnlab book --quick --only temp_small` runs it and renders the
lab book with it."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

import attnlab.lab
import book_checks
from attnlab.cli import main
from attnlab.corpus import REPO_ROOT
from attnlab.lab import runs as R

PATH = REPO_ROOT / "docs" / "example_entry.py"


def _load():
    spec = importlib.util.spec_from_file_location("example_entry", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


X = _load()
E = X.EXPERIMENT
SEEDS = ("20261014", "20261015", "20261016")


def results(diffs, temps=(1.02, 0.97, 1.05, 0.93)) -> dict:
    """Three seeds: the baseline at 4.0, the temperature run ``diffs`` above it, every head at ``temps``."""
    return {
        "per_seed": {
            s: {"val_temp": 4.0 + d, "val_base": 4.0, "temperatures": list(temps)} for s, d in zip(SEEDS, diffs)
        }
    }


# results the judge reads, for the structural checks (tests/book_checks.examples_of reads EXAMPLES)
EXAMPLES = [results((0.004, -0.003, 0.001))]


def verdicts(r) -> dict:
    return {c["id"]: c["verdict"] for c in E.judge(r)}


def test_its_whys_name_claims_its_judge_makes():
    assert book_checks.stale_whys(E, EXAMPLES) == set()
    assert book_checks.claims_made(E, EXAMPLES) == set(E.why)


@pytest.mark.parametrize(
    "diffs, expected",
    [
        ((0.004, -0.003, 0.001), "PASS"),  # within ±0.085 on every seed
        ((0.20, 0.22, 0.21), "FAIL"),  # a real difference
        ((0.02, 0.15, -0.06), "INCONCLUSIVE"),  # the interval overlaps the margin
    ],
)
def test_changes_little(diffs, expected):
    assert verdicts(results(diffs))["temp_small_changes_little"] == expected


@pytest.mark.parametrize("temps, expected", [((1.02, 0.97), "PASS"), ((1.02, 2.5), "FAIL")])
def test_stays_near_one(temps, expected):
    assert verdicts(results((0.0, 0.0, 0.0), temps))["temp_small_stays_near_one"] == expected


def test_no_results_no_claims_and_each_fail_says_why():
    assert E.judge({}) == []
    r = results((0.20, 0.22, 0.21), (1.02, 2.5))
    assert "+0.200" in E.why["temp_small_changes_little"](r)
    assert "2.50" in E.why["temp_small_stays_near_one"](r)


def test_it_respects_the_layers_and_imports_no_other_entry():
    assert book_checks.import_problems("lab.temp_small", PATH, attnlab.lab.ORDER) == []


@pytest.mark.parametrize("quick", [False, True])
def test_no_run_is_trained_twice_under_two_names(quick):
    registry = [*attnlab.lab.EXPERIMENTS, E]
    assert book_checks.runs_named_twice(registry, R.Scale.make(quick)) == []
    assert R.baseline(R.Scale.make(quick), R.BOOK_SEED) in E.runs(R.Scale.make(quick))  # the case's run, shared


@pytest.mark.usefixtures("one_thread")
def test_book_quick_runs_it_and_renders_the_lab_book(tmp_path, monkeypatch):
    from attnlab.lab.labbook import rejudge_book

    registry = [*attnlab.lab.EXPERIMENTS, E]
    monkeypatch.setattr(attnlab.lab, "EXPERIMENTS", registry)
    monkeypatch.setattr(attnlab.lab, "BY_ID", {e.id: e for e in registry})
    out = tmp_path / "book"
    assert main(["book", "--quick", "--no-progress", "--only", "temp_small", "--out", str(out)]) == 0
    doc = json.loads((out / "data" / "lab_book" / "temp_small.json").read_text(encoding="utf-8"))
    assert doc["status"] == "done" and {c["id"] for c in doc["claims"]} == set(E.why)
    assert all(c["kind"] == "prediction" for c in doc["claims"])
    assert doc["figures"] == ["figures/lab_book/temp_small_temperatures.png"]
    assert (out / doc["figures"][0]).stat().st_size > 1000
    book = json.loads((out / "data" / "lab_book.json").read_text(encoding="utf-8"))
    assert book["status"]["temp_small"] == "done"
    md = (out / "reports" / "lab_book.md").read_text(encoding="utf-8")
    assert "temp_small_changes_little" in md and "小模型上的可学温度" in md
    assert "temp_small_temperatures.png" in md
    # `attnlab report` judges it again from its JSON alone
    assert rejudge_book(registry, out, log=lambda _: None)["status"]["temp_small"] == "done"
    assert not (REPO_ROOT / "data" / "lab_book" / "temp_small.json").exists()
    assert not (REPO_ROOT / "figures" / "lab_book" / "temp_small_temperatures.png").exists()
