"""§1.6.3 exercise ⑬ (attnlab.lab.temperature): every claim PASS, FAIL and INCONCLUSIVE from
hand-made results; the committed results measured again and judged (the quick book: tests/test_labbook.py)."""

from __future__ import annotations

import json

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import runs as R
from attnlab.lab import temperature as T
from attnlab.lab.labbook import Context


def results(temps, vals=(5.1, 5.15, 5.2), scaled=(4.1, 4.2, 4.15), unscaled=(5.2, 5.15, 5.1)) -> dict:
    """One row per seed: the learned temperature of each layer, the val loss, the case's scaled and
    unscaled big models of the same seed (None: the case's number is absent)."""
    table = {}
    for i, (t, v, s, u) in enumerate(zip(temps, vals, scaled, unscaled)):
        row = {"val_loss": v, "temperature_per_layer": list(t), "entropy_end": [0.001, 0.1], "logit_std_end": [1e3] * 2}
        if s is not None:
            row |= {"case_val_big_scaled": s, "case_val_big_unscaled": u}
        table[str(20261014 + i)] = row
    return {"per_seed": table, "d_head": 256, "book_big_gap": 0.95}


def verdict(res: dict, cid: str) -> str:
    return next(c["verdict"] for c in T.judge(res) if c["id"] == cid)


SHARPER = [(0.4, 0.5), (0.3, 0.45), (0.35, 0.6)]  # every layer pushed well below 1


@pytest.mark.parametrize(
    "temps, expected",
    [
        (SHARPER, "PASS"),
        ([(2.1, 2.2), (2.98, 1.15), (2.48, 1.11)], "FAIL"),  # the committed run: layer 0 wholly above 1
        ([(0.95, 0.4), (0.97, 0.5), (0.96, 0.45)], "FAIL"),  # layer 0 moved under the sqrt(2) of §1.20.1
        ([(0.4, 0.3), (0.5, 1.6), (0.45, 0.9)], "INCONCLUSIVE"),  # layer 1 undecided
    ],
)
def test_temp_goes_down(temps, expected):
    assert verdict(results(temps), "temp_goes_down") == expected


@pytest.mark.parametrize(
    "vals, expected",
    [
        ((5.1, 5.15, 5.2), "PASS"),  # about 1 worse than scaled on every seed
        ((4.2, 4.25, 4.2), "FAIL"),  # within 0.1 of scaled: rescued (below half the book's 0.95)
        ((5.1, 4.1, 4.5), "INCONCLUSIVE"),
    ],
)
def test_temp_does_not_rescue(vals, expected):
    assert verdict(results(SHARPER, vals=vals), "temp_does_not_rescue") == expected


def test_rescue_needs_the_case():
    res = results(SHARPER, scaled=(None, None, None))
    assert verdict(res, "temp_does_not_rescue") == "NA"


def test_every_fail_says_why_with_numbers_from_the_results():
    res = results([(2.1, 2.2), (2.98, 1.15), (2.48, 1.11)], vals=(4.2, 4.25, 4.2))
    assert {c["id"] for c in T.judge(res) if c["verdict"] == "FAIL"} == {"temp_goes_down", "temp_does_not_rescue"}
    why = T.EXPERIMENT.why["temp_goes_down"](res)
    assert "6 个学到的温度中有 6 个大于 1" in why and "1.11–2.98" in why and "16" in why
    assert "%" in T.EXPERIMENT.why["temp_does_not_rescue"](res)


def test_committed_results_measure_and_judge(tmp_path):
    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "temperature.json").read_text(encoding="utf-8"))
    ctx = Context(R.Scale.make(False), "", tmp_path, {}, T.EXPERIMENT, train=False, previous=doc["results"])
    res = T.measure(ctx).results
    assert res["rows"] == doc["results"]["rows"]
    assert res["per_seed"] == doc["results"]["per_seed"]  # measuring the committed record again changes nothing
    claims = {c["id"]: c for c in T.judge(res)}
    assert claims["temp_goes_down"]["verdict"] == "FAIL"  # was FAIL: every temperature rose
    assert claims["temp_does_not_rescue"]["verdict"] == "PASS"  # was PASS: 0.96 ± 0.14 worse than scaled
    assert claims["temp_does_not_rescue"]["inputs"]["temp_minus_scaled"] == pytest.approx([1.038, 0.799, 1.033], 1e-3)
    assert T.judge(json.loads(json.dumps(res))) == T.judge(res)


def test_no_run_and_no_committed_numbers_is_not_run(tmp_path):
    from attnlab.lab.labbook import NotAvailable

    ctx = Context(R.Scale.make(False), "", tmp_path, {}, T.EXPERIMENT, train=False, previous=None)
    with pytest.raises(NotAvailable, match="not run yet"):
        T.measure(ctx)
