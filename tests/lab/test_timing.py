"""§1.14.2 timing: the superlinear claim PASSes and FAILs on hand-made tables, the A6000 statement
is NA on this machine with its reason, and the committed measurement judges as reported (its table
and figure keys kept)."""

from __future__ import annotations

import json

from attnlab.corpus import REPO_ROOT
from attnlab.lab import timing as T


def table(ms: list[float], ns=(512, 1024, 2048, 4096, 8192)) -> dict:
    return T.tabulate(list(zip(ns, ms)), fit_from=1024)


def claims(res: dict) -> dict:
    return {c["id"]: c for c in T.judge(res)}


def test_superlinear_every_doubling_more_than_doubles():
    c = claims(table([50, 160, 580, 2200, 10300]))["timing_superlinear"]
    assert c["verdict"] == "PASS" and c["inputs"]["ratio_per_doubling"] == [3.2, 3.62, 3.79, 4.68]
    # one doubling at or below 2: not superlinear there
    assert claims(table([50, 90, 580, 2200, 10300]))["timing_superlinear"]["verdict"] == "FAIL"
    assert claims(table([50, 100, 200, 400, 800]))["timing_superlinear"]["verdict"] == "FAIL"  # linear
    assert claims(table([50]))["timing_superlinear"]["verdict"] == "INCONCLUSIVE"  # nothing doubled
    assert "2.00" in T.EXPERIMENT.why["timing_superlinear"](table([50, 100, 200, 400, 800]))


def test_the_a6000_statement_is_not_testable_here():
    c = claims(table([50, 160, 580, 2200, 10300]))["timing_book_exponent"]
    assert c["verdict"] == "NA" and c["rule"] == "na" and "A6000" in c["detail"]
    assert c["inputs"]["ratio_per_doubling_book"] == T.book_doubling() == [2.45, 2.89, 3.97, 3.58]


def test_the_committed_measurement_judges_as_reported_and_keeps_its_keys():
    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "timing.json").read_text(encoding="utf-8"))
    got = claims(doc["results"])
    assert {k: c["verdict"] for k, c in got.items()} == {"timing_superlinear": "PASS", "timing_book_exponent": "NA"}
    assert got["timing_superlinear"]["inputs"]["ratio_per_doubling"] == [3.06, 3.51, 3.76, 4.77]
    # what the timing figure (timing.draw) reads: n in column 0, our ms in column 2
    assert [row[0] for row in doc["results"]["rows"]] == [512, 1024, 2048, 4096, 8192]
    new = T.tabulate([(row[0], row[2]) for row in doc["results"]["rows"]], fit_from=1024)
    assert new["rows"] == doc["results"]["rows"] and new["exponent_ours"] == doc["results"]["exponent_ours"]


def test_measure_times_at_quick_scale(tmp_path):
    from attnlab.lab.labbook import Context
    from attnlab.lab.runs import Scale

    ctx = Context(Scale.make(True), "", tmp_path, {}, T.EXPERIMENT, train=False)
    out = T.measure(ctx)
    assert [row[0] for row in out.results["rows"]] == list(T.QUICK_N)
    assert out.figures == ["figures/lab_book/timing_timing.png"]
    assert {c["id"] for c in T.judge(out.results)} == {"timing_superlinear", "timing_book_exponent"}
