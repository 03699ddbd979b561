"""§1.12.4 head dynamics (attnlab.lab.dynamics): every claim PASS, FAIL and INCONCLUSIVE (or its
reported answer) from hand-made results; the committed results measured again and judged (the quick book
end to end: tests/test_labbook.py::test_dynamics_reads_the_weights_the_baseline_kept)."""

from __future__ import annotations

import json

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import dynamics as D
from attnlab.lab import runs as R
from attnlab.lab.labbook import Context


def results(*prevs) -> dict:
    """One seed per curve: layer 0's largest prev at steps 100, 500, 1500."""
    table = {
        str(20261014 + i): {"steps": [100, 500, 1500], "prev": list(p), "diag": [0.12] * 3} for i, p in enumerate(prevs)
    }
    return {"per_seed": table, "steps": [100, 500, 1500], "uniform_prev": 0.1207, "book_prev_head": 0.45}


def claims(res: dict) -> dict:
    return {c["id"]: c for c in D.judge(res)}


@pytest.mark.parametrize(
    "prevs, expected",
    [
        ([(0.125, 0.31, 0.51), (0.135, 0.21, 0.44), (0.126, 0.38, 0.49)], "PASS"),
        ([(0.125, 0.13, 0.14), (0.13, 0.13, 0.15), (0.12, 0.13, 0.13)], "FAIL"),  # no head forms
        ([(0.12, 0.3, 0.55), (0.13, 0.13, 0.10), (0.12, 0.2, 0.3)], "INCONCLUSIVE"),
    ],
)
def test_prev_head_forms(prevs, expected):
    assert claims(results(*prevs))["prev_head_forms"]["verdict"] == expected


@pytest.mark.parametrize(
    "prevs, answer",
    [
        ([(0.12, 0.30, 0.51), (0.13, 0.21, 0.44)], "gradual"),
        ([(0.12, 0.49, 0.51), (0.13, 0.43, 0.44)], "sudden"),
        ([(0.12, 0.49, 0.51), (0.13, 0.21, 0.44)], "disagree"),
    ],
)
def test_sudden_or_gradual_is_reported(prevs, answer):
    c = claims(results(*prevs))["specialisation_gradual_or_sudden"]
    assert c["verdict"] == "REPORTED" and answer in c["detail"]


def test_fail_says_why_with_numbers_from_the_results():
    res = results((0.125, 0.13, 0.14), (0.13, 0.13, 0.15), (0.12, 0.13, 0.13))
    assert claims(res)["prev_head_forms"]["verdict"] == "FAIL"
    assert "0.015" in D.EXPERIMENT.why["prev_head_forms"](res) and "0.165" in D.EXPERIMENT.why["prev_head_forms"](res)


def test_committed_results_measure_and_judge(tmp_path):
    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "dynamics.json").read_text(encoding="utf-8"))
    old = doc["results"]
    ctx = Context(R.Scale.make(False), "", tmp_path, {}, D.EXPERIMENT, train=False, previous=old)
    res = D.measure(ctx).results
    assert res["rows"] == old["rows"] and res["steps"] == old["steps"]
    assert [(p["seed"], p["prev"], p["diag"]) for p in res["seeds"]] == [
        (p["seed"], p["prev"], p["diag"]) for p in old["seeds"]
    ]
    c = claims(res)
    assert c["prev_head_forms"]["verdict"] == "PASS"  # rises 0.385, 0.305, 0.365 (was PASS)
    assert c["specialisation_gradual_or_sudden"]["verdict"] == "REPORTED"
    assert (
        c["specialisation_gradual_or_sudden"]["kind"] == "question"
    )  # §1.12.4 asks it (“是一次性出现的，还是逐渐形成的？”)
    assert "gradual" in c["specialisation_gradual_or_sudden"]["detail"]
    assert D.judge(json.loads(json.dumps(res))) == D.judge(res)


def test_no_run_and_no_committed_numbers_is_not_run(tmp_path):
    from attnlab.lab.labbook import NotAvailable

    ctx = Context(R.Scale.make(False), "", tmp_path, {}, D.EXPERIMENT, train=False, previous=None)
    with pytest.raises(NotAvailable, match="not run yet"):
        D.measure(ctx)
