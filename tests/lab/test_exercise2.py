"""§1.20.2 exercise 2 (attnlab.lab.exercise2): every claim can PASS, FAIL and (where its rule
allows) be INCONCLUSIVE; the committed results, measured again without a run folder, judge as reported;
§1.8's four heads of d_head 64 judged on the fixed-d_model variant."""

import copy
import json
from pathlib import Path

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import exercise2 as X
from attnlab.lab.labbook import Context, NotAvailable
from attnlab.lab.runs import BOOK_SEED, Scale

COMMITTED = json.loads((REPO_ROOT / "data" / "lab_book" / "exercise2.json").read_text(encoding="utf-8"))["results"]
TINY = [0.01, 0.003, 0.002]  # d_head 32 as committed: "almost no difference"
BIG = [1.04, 0.88, 0.85]  # d_head 256 as committed


def results(main=None, fixed=None):
    """Hand-made results: {d_head: gaps per seed} for each variant (the rest of the grid left out)."""
    table: dict[str, dict] = {}
    for is_fixed, pts in ((False, main or {}), (True, fixed or {})):
        for d, gaps in pts.items():
            for i, g in enumerate(gaps):
                table.setdefault(str(BOOK_SEED + i), {})[X.key("gap", d, is_fixed)] = g
    return {"per_seed": table}


def verdicts(r):
    return {c["id"]: c["verdict"] for c in X.judge(r)}


def measured(previous=COMMITTED, root=None):
    ctx = Context(Scale(), "", Path(root or "/nonexistent"), {}, X.EXPERIMENT, train=False, previous=previous)
    return X.measure(ctx).results


@pytest.mark.parametrize(
    "d32, d256, expected",
    [
        (TINY, BIG, "PASS"),
        ([0.53, 0.55, 0.52], BIG, "FAIL"),  # d_head 32 already clearly worse: no rise inside the grid
        (TINY, [-0.2, -0.25, -0.22], "FAIL"),  # no gap at 256
        ([-0.2, 0.1, 0.25], BIG, "INCONCLUSIVE"),  # d_head 32 too noisy to call negligible
    ],
)
def test_critical_exists(d32, d256, expected):
    assert verdicts(results({32: d32, 256: d256}))["ex2_critical_exists"] == expected


def test_critical_d_head_is_reported_with_its_bracket():
    r = results({32: TINY, 64: [-0.15, 0.01, 0.014], 96: [0.07, 0.27, 0.13], 128: [0.46, 0.39, 0.37], 256: BIG})
    c = X.critical(r["per_seed"], False)
    assert (c["critical"], c["below"], c["undecided"]) == (128, 32, [64, 96])
    claim = next(x for x in X.judge(r) if x["id"] == "ex2_critical_d_head")
    assert claim["verdict"] == "REPORTED" and "critical d_head in (32, 128] (64, 96 undecided)" in claim["detail"]
    assert claim["kind"] == "question"  # §1.20.2 asks "找出这个差值开始明显上升的位置": answered, not the book's
    # clearly worse already at the grid's smallest d_head: the critical size lies below it
    low = X.critical(results({32: [0.53, 0.55, 0.52], 256: BIG})["per_seed"], False)
    assert (low["critical"], low["below"]) == (32, None)
    none = X.critical(results({32: TINY, 256: [0.01, 0.02, 0.0]})["per_seed"], False)
    assert none["critical"] is None and none["below"] == 256


@pytest.mark.parametrize(
    "d256, expected",
    [(BIG, "PASS"), ([0.01, 0.02, 0.0], "FAIL"), ([-0.3, -0.25, -0.2], "FAIL"), ([0.9, -0.2, 0.5], "INCONCLUSIVE")],
)
def test_big_gap(d256, expected):
    assert verdicts(results({32: TINY, 256: d256}))["ex2_big_gap"] == expected


@pytest.mark.parametrize(
    "d256, expected",
    [
        ([1.04, 0.88, 0.85], "PASS"),  # grows by 0.3–0.5 on every seed
        ([0.54, 0.55, 0.52], "FAIL"),  # unchanged: below the smallest effect of interest
        ([0.40, 0.42, 0.38], "FAIL"),  # shrinks
        ([1.2, 0.3, 0.9], "INCONCLUSIVE"),
    ],
)
def test_direction_fixed_d_model(d256, expected):
    r = results({32: TINY, 256: BIG}, fixed={32: [0.53, 0.55, 0.52], 256: d256})
    assert verdicts(r)["ex2_direction_fixed_d_model"] == expected


def test_committed_results_measure_and_judge_as_reported():
    res = measured()
    assert res["per_seed"] == COMMITTED["per_seed"] and res["diag_means"] == COMMITTED["diag_means"]
    assert res["seeds"] == res["fixed_seeds"] == COMMITTED["seeds"]
    old = {(f, x["d_head"]): x for f, pts in ((0, COMMITTED["summary"]), (1, COMMITTED["fixed_summary"])) for x in pts}
    new = {(f, x["d_head"]): x for f, pts in ((0, res["summary"]), (1, res["fixed_summary"])) for x in pts}
    assert old.keys() == new.keys()
    for k, x in old.items():  # the same numbers (means of the stored 4-digit gaps)
        assert new[k]["gaps"] == x["gaps"] and new[k]["gap_mean"] == pytest.approx(x["gap_mean"], abs=5e-4)
        assert all(new[k][d] == x[d] for d in X.DIAGS) and new[k]["val_curve"] == x["val_curve"]
    assert verdicts(res) == {
        "ex2_critical_exists": "PASS",
        "ex2_critical_d_head": "REPORTED",
        "ex2_big_gap": "PASS",
        "ex2_direction_fixed_d_model": "PASS",
        "four_heads_d64_no_collapse": "FAIL",  # §1.8: 4 heads of 64 collapse unscaled (mean entropy 0.00294)
    }
    assert (res["critical_d_head"], res["collapse_d_head"]) == (128, 128)
    assert verdicts(COMMITTED) == verdicts(res)
    assert (
        X.measure(  # measuring the results again changes nothing
            Context(Scale(), "", Path("/nonexistent"), {}, X.EXPERIMENT, train=False, previous=copy.deepcopy(res))
        ).results
        == res
    )


def test_a_seed_measured_now_joins_the_committed_means_weighted_by_seeds():
    old_seeds = [str(BOOK_SEED + i) for i in range(3)]
    table = {s: {X.key("gap", 32, False): 0.01} for s in old_seeds}
    table[str(BOOK_SEED + 3)] = {X.key("gap", 32, False): 0.02, X.key("entropy_end_unscaled", 32, False): 0.8}
    means = {X.key("point", 32, False): {"seeds": old_seeds, "entropy_end_unscaled": 0.4}}
    (pt,) = X.summarize(Scale(), table, means, {}, False)
    assert pt["entropy_end_unscaled"] == pytest.approx((3 * 0.4 + 0.8) / 4)
    assert pt["gaps"] == [0.01, 0.01, 0.01, 0.02] and pt["seeds"] == [*old_seeds, str(BOOK_SEED + 3)]


def test_whys_take_their_numbers_from_the_results():
    r = results({32: [0.53, 0.55, 0.52], 256: [0.01, 0.02, 0.0]}, fixed={32: [0.53, 0.55, 0.52], 256: [0.5] * 3})
    assert "+0.530" in X.WHY["ex2_critical_exists"](r) and "+0.020" in X.WHY["ex2_big_gap"](r)
    assert "-0.030" in X.WHY["ex2_direction_fixed_d_model"](r)


def test_nothing_measured_is_not_run():
    with pytest.raises(NotAvailable):
        measured(previous=None)


def test_quick_measure_end_to_end(tmp_path, one_thread):
    """At quick scale (20 steps), three points trained (the full grid is the lab-book test's): each is
    measured from its runs, the d_head 256 point is the case's big pair, the first seed's curves end at
    the measured validation loss, and the points not trained are left out (status partial)."""
    from attnlab.corpus import load_corpus
    from attnlab.runner import execute

    scale = Scale.make(True)
    trained = [(32, False), (256, False), (32, True)]
    runs = [r for d, f in trained for r in X.pair(scale, d, BOOK_SEED, f)]
    assert {r.name for r in X.pair(scale, 256, BOOK_SEED, True)} == {"big_unscaled", "big_scaled"}
    finished = execute(runs, load_corpus(), tmp_path / "runs", executor="serial", progress=False, log=lambda s: None)
    out = X.measure(Context(scale, load_corpus(), tmp_path, finished, X.EXPERIMENT))
    res = out.results
    assert out.status == "partial" and res["seeds"] == [] and res["fixed_seeds"] == []
    assert [x["d_head"] for x in res["summary"]] == [32, 256]
    assert [x["d_head"] for x in res["fixed_summary"]] == [32, 256]  # 256: the same case pair
    row = res["per_seed"][str(BOOK_SEED)]
    for x in res["summary"]:
        d = x["d_head"]
        assert x["gaps"] == [row[X.key("gap", d, False)]]
        assert row[X.key("gap", d, False)] == pytest.approx(
            row[X.key("val_unscaled", d, False)] - row[X.key("val_scaled", d, False)], abs=2e-3
        )
        assert x["val_curve"]["scaled"][-1][1] == pytest.approx(row[X.key("val_scaled", d, False)], rel=1e-3)
        assert 0 < x["entropy_end_unscaled"] <= 1 and x["logit_std_init_unscaled"] > 0
    assert not (tmp_path / "runs" / "exercise2" / "big_scaled").exists()
    assert {c["id"] for c in X.judge(res)} == {
        "ex2_critical_exists",
        "ex2_big_gap",
        "ex2_direction_fixed_d_model",
        X.FOUR_HEADS,
    }


# ------------------------------------------------ §1.8: four heads of d_head 64 (from lab/statements)
def four_heads(gaps, ents=None, mean=None):
    r = results(fixed={64: gaps})
    for i, e in enumerate(ents or []):
        r["per_seed"][str(BOOK_SEED + i)][X.key("entropy_end_unscaled", 64, True)] = e
    if mean is not None:
        r["fixed_summary"] = [
            {"d_head": 64, "seeds": [str(BOOK_SEED + i) for i in range(3)], "entropy_end_unscaled": mean}
        ]
    return verdicts(r)[X.FOUR_HEADS]


@pytest.mark.parametrize(
    "gaps, ents, expected",
    [
        ([0.01, 0.02, 0.0], [0.5, 0.4, 0.45], "PASS"),
        ([0.7, 0.8, 0.6], [0.5, 0.4, 0.45], "FAIL"),  # a gap beyond "almost no difference"
        ([0.01, 0.02, 0.0], [0.003, 0.4, 0.45], "FAIL"),  # one seed collapsed
        ([0.1, -0.1, 0.25], [0.5, 0.4, 0.45], "INCONCLUSIVE"),
    ],
)
def test_four_heads(gaps, ents, expected):
    assert four_heads(gaps, ents) == expected


def test_four_heads_from_a_mean_entropy_only():
    assert four_heads([0.01, 0.02, 0.0], mean=0.003) == "FAIL"  # every seed <= 3 x 0.003 < 0.01
    assert four_heads([0.01, 0.02, 0.0], mean=0.3) == "INCONCLUSIVE"  # the mean cannot say


def test_four_heads_committed_why_and_seed_runs():
    c = next(c for c in X.judge(COMMITTED) if c["id"] == X.FOUR_HEADS)
    assert c["inputs"]["gap_unscaled_minus_scaled"] == [0.686, 0.8068, 0.5966]
    assert c["inputs"]["logit_std_init_unscaled"] == pytest.approx(0.823)
    why = X.WHY[X.FOUR_HEADS](COMMITTED)
    assert "0.00294" in why and "1.64" in why and "stuck from the start" in why
    scale = Scale()
    assert X.EXPERIMENT.seed_runs(scale, BOOK_SEED + 5, X.FOUR_HEADS) == X.pair(scale, 64, BOOK_SEED + 5, True)
    assert X.EXPERIMENT.seed_runs(scale, BOOK_SEED + 5, "ex2_big_gap") == []
