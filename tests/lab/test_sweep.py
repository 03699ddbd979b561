"""§1.20.2 the one-seed sweep (attnlab.lab.sweep): each claim's verdicts, and the committed results."""

import json
from pathlib import Path

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import sweep as W
from attnlab.lab.labbook import Context, NotAvailable
from attnlab.lab.runs import Scale

COMMITTED = json.loads((REPO_ROOT / "data" / "lab_book" / "sweep.json").read_text(encoding="utf-8"))["results"]
GAPS = {32: 0.002, 64: -0.145, 96: -0.002, 128: 0.536, 192: 0.408, 256: 1.051}


def results(gaps=GAPS):
    return {"points": [{"d_head": d, "val_scaled": 4.2, "val_unscaled": 4.2 + g, "gap": g} for d, g in gaps.items()]}


def by_id(r):
    return {c["id"]: c for c in W.judge(r)}


@pytest.mark.parametrize("g64, expected", [(-0.145, "PASS"), (0.15, "PASS"), (0.05, "FAIL"), (-0.09, "FAIL")])
def test_one_seed_too_noisy(g64, expected):
    """Exact arithmetic on one stored number (one seed has no interval): PASS or FAIL, never undecided."""
    assert by_id(results({**GAPS, 64: g64}))["sweep_one_seed_too_noisy"]["verdict"] == expected


def test_critical_one_seed_is_reported():
    c = by_id(results())["sweep_critical_one_seed"]
    assert (
        c["verdict"] == "REPORTED"
        and c["kind"] == "question"  # §1.20.2 asks: 找出这个差值开始明显上升的位置
        and "d_head 128 (gap +0.536; d_head 96: -0.002)" in c["detail"]
    )
    assert "d_head 32 (gap +0.300)" in by_id(results({**GAPS, 32: 0.3}))["sweep_critical_one_seed"]["detail"]
    assert "no gap above" in by_id(results(dict.fromkeys(GAPS, 0.01)))["sweep_critical_one_seed"]["detail"]


def test_committed_results_measure_and_judge_as_reported(monkeypatch):
    ctx = Context(Scale(), "", Path("/nonexistent"), {}, W.EXPERIMENT, train=False, previous=COMMITTED)
    res = W.measure(ctx).results
    assert res["rows"] == COMMITTED["rows"] and res["seed"] == 20261014
    assert {k: c["verdict"] for k, c in by_id(res).items()} == {
        "sweep_one_seed_too_noisy": "PASS",
        "sweep_critical_one_seed": "REPORTED",
    }

    # without the sweep's JSON the committed rows are kept
    def absent(ctx, name):
        raise NotAvailable(name)

    monkeypatch.setattr(W, "committed", absent)
    assert W.measure(ctx).results["points"] == res["points"]
    with pytest.raises(NotAvailable):
        W.measure(Context(Scale(), "", Path("/nonexistent"), {}, W.EXPERIMENT, train=False))
