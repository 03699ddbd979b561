"""§1.18.5 ③ four layers: every claim PASSes, FAILs and is INCONCLUSIVE on hand-made per-seed numbers
(where its rule allows), and the committed record (no run folder, no model) tabulates and judges to
the verdicts the module reports, with the figure's curves kept; §1.18.4's one layer beside two likewise."""

from __future__ import annotations

import json

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import deep as D

SEEDS = ("20261014", "20261015", "20261016")
W = (0.0, 0.012, -0.009)  # per-seed wobble


def short(i: int, **set_) -> dict:
    r = {
        "val_4": 4.09 + W[i],
        "val_2": 4.07 + W[i] / 2,
        "train_4": 3.86 + W[i],
        "train_2": 3.77 + W[i] / 3,
        "reach_4": 0.1 + W[i],
        "reach_2": 0.0 - W[i],
    }
    return r | {k: (v[i] if isinstance(v, (list, tuple)) else v) for k, v in set_.items()}


def long_(i: int, **set_) -> dict:
    r = {
        "steps": 3000,
        "val_4": 4.14 + W[i],
        "val_2": 4.15 - W[i],
        "train_4": 3.17 + W[i],
        "train_2": 3.25,
        "best_val_4": 4.07,
        "best_val_2": 4.08,
        "reach_4": 0.3 + W[i],
    }
    return r | {k: (v[i] if isinstance(v, (list, tuple)) else v) for k, v in set_.items()}


def results(n: int = 3, n_long: int = 3, s: dict | None = None, lg: dict | None = None) -> dict:
    return D.tabulate(
        {SEEDS[i]: short(i, **(s or {})) for i in range(n)},
        {SEEDS[i]: long_(i, **(lg or {})) for i in range(n_long)},
    )


def verdict(res: dict, cid: str) -> str:
    return next(c["verdict"] for c in D.judge(res) if c["id"] == cid)


def test_sesoi_is_half_the_books_two_layer_division():
    # §1.8.5's table: layer 0 mean distance 2.82, layer 1 3.83
    assert D.sesoi_reach() == pytest.approx((3.8275 - 2.8225) / 2)


def answer(res: dict, cid: str) -> tuple[str, str, str]:
    c = next(c for c in D.judge(res) if c["id"] == cid)
    return c["kind"], c["verdict"], c["detail"].split(" — ")[0]


def test_deep_better_answers_the_chapters_question_yes_no_or_undecided():
    # §1.18.5 ③ asks ("能不能学出更明显的层间分工"): a question, REPORTED with its answer, never a FAIL of the book
    assert answer(results(s={"reach_4": [1.1, 1.2, 1.05]}), "deep_better") == (
        "question",
        "REPORTED",
        "答 / answer: 是 / yes",
    )
    assert answer(results(s={"reach_4": [-0.5, -0.4, -0.6]}), "deep_better")[2] == "答 / answer: 否 / no"
    assert answer(results(s={"reach_4": [0.3, -0.2, 0.1]}), "deep_better")[2] == "答 / answer: 未定 / undecided"
    # the two-layer portrait missing for a seed: that seed does not pair
    res = results(s={"reach_4": [1.1, 1.2, 1.05], "reach_2": [0.0, None, None]})
    c = next(c for c in D.judge(res) if c["id"] == "deep_better")
    assert c["verdict"] == "REPORTED" and c["n"] == 1 and "未定 / undecided" in c["detail"]


def test_layer_division_of_labour_at_1500_steps_and_stretched_is_answered():
    for cid, key in (("layer_division_of_labour", "s"), ("layer_division_of_labour_long", "lg")):
        assert answer(results(**{key: {"reach_4": [1.0, 1.1, 0.9]}}), cid) == (
            "question",
            "REPORTED",
            "答 / answer: 是 / yes",
        )
        assert answer(results(**{key: {"reach_4": [-0.5, -0.6, -0.4]}}), cid)[2] == "答 / answer: 否 / no"
        # below half the book's own two-layer division: no
        assert answer(results(**{key: {"reach_4": [0.1, 0.12, 0.09]}}), cid)[2] == "答 / answer: 否 / no"
        assert answer(results(**{key: {"reach_4": [0.55, -0.17, -0.12]}}), cid)[2] == "答 / answer: 未定 / undecided"


def test_extra_long_seeds_join_the_stretched_claim_only():
    res = D.tabulate(
        {s: short(i) for i, s in enumerate(SEEDS)},
        {s: long_(i) for i, s in enumerate(SEEDS)} | {"20261017": long_(0), "20261018": long_(1)},
    )
    got = {c["id"]: c["n"] for c in D.judge(res)}
    assert got["layer_division_of_labour_long"] == 5 and got["layer_division_of_labour"] == 3
    assert res["long_seeds"] == [20261014, 20261015, 20261016, 20261017, 20261018]


def test_deep_trains_slower():
    assert verdict(results(), "deep_trains_slower") == "PASS"
    assert verdict(results(s={"train_4": [3.7, 3.71, 3.69]}), "deep_trains_slower") == "FAIL"
    assert verdict(results(s={"train_4": [3.9, 3.7, 3.8]}), "deep_trains_slower") == "INCONCLUSIVE"


def test_our_prediction_is_a_prediction_and_can_fail():
    res = results(s={"val_4": [4.2, 4.21, 4.19], "val_2": [4.2, 4.21, 4.2]}, lg={"val_4": [4.1, 4.09, 4.11]})
    c = next(c for c in D.judge(res) if c["id"] == "deep_better_long")
    assert c["kind"] == "prediction" and c["verdict"] == "PASS"
    assert verdict(results(), "deep_better_long") == "FAIL"  # 1500-step runs better than the stretched ones
    assert "没训够" in D.EXPERIMENT.why["deep_better_long"](results())
    # no stretched run yet: the prediction is not judged
    assert "deep_better_long" not in {c["id"] for c in D.judge(results(n_long=0))}


def test_whys_take_their_numbers_from_the_results():
    bad = results(s={"reach_4": [-0.5, -0.4, -0.6], "train_4": [3.7, 3.71, 3.69]}, lg={"reach_4": [-0.5, -0.6, -0.4]})
    fails = {c["id"] for c in D.judge(bad) if c["verdict"] == "FAIL"}
    # the questions are answered, never FAIL (no why); no one-layer numbers here (its own tests)
    assert fails == set(D.WHY) - {"one_layer_no_head_division"}
    assert not {"deep_better", "layer_division_of_labour", "layer_division_of_labour_long"} & set(D.WHY)
    assert "-0.070" in D.WHY["deep_trains_slower"](bad)


# ---------------------------------------------------------------------- the committed record
def _committed():
    data = REPO_ROOT / "data"
    doc = json.loads((data / "lab_book" / "deep.json").read_text(encoding="utf-8"))
    portrait = json.loads((data / "head_portrait.json").read_text(encoding="utf-8"))
    return doc, portrait


def test_the_committed_record_tabulates_to_its_numbers_and_curves():
    doc, _ = _committed()
    r = doc["results"]
    res = D.tabulate(r["per_seed"], r["long_per_seed"])
    assert list(res["per_seed"])[:3] == list(SEEDS) and list(res["long_per_seed"])[:3] == list(SEEDS)
    assert res["rows"] == r["rows"]  # the per-layer table
    old = {(c["n_layer"], c["steps"]): c["val"] for c in r["curves"]}
    new = {(c["n_layer"], c["steps"]): c["val"] for c in res["curves"]}
    assert new == old  # what deep.draw draws
    reach = [res["per_seed"][s]["reach_4"] for s in SEEDS]
    assert reach == pytest.approx([0.552, -0.171, -0.115], abs=1e-3)
    assert [res["long_per_seed"][s]["reach_4"] for s in SEEDS] == pytest.approx([0.435, 0.396, 0.0558], abs=1e-3)
    assert [res["per_seed"][s]["reach_2"] for s in SEEDS] == pytest.approx([0.259, -0.211, -0.0227], abs=1e-3)


def test_the_two_layer_reach_is_the_head_portraits():
    """The two-layer baseline's reach in the table is what the committed head portrait of the same
    run gives (the same protocol as `attnlab heads`)."""
    doc, portrait = _committed()
    t = doc["results"]["per_seed"]
    seen = 0
    for p in [portrait, *portrait.get("other_seeds", [])]:
        seed = str(p["config"]["seed"])
        if seed in t and f"small_scaled_s{seed}" in str(p.get("source", {}).get("checkpoint", "")):
            assert t[seed]["reach_2"] == pytest.approx(D.reach(p["heads"]), abs=1e-9)
            seen += 1
    assert seen >= 3


def test_measuring_again_without_runs_keeps_every_committed_seed(tmp_path):
    from attnlab.lab import runs as R
    from attnlab.lab.labbook import Context

    doc, _ = _committed()
    ctx = Context(R.Scale.make(False), "", tmp_path, {}, D.EXPERIMENT, train=False, previous=doc["results"])
    res = D.measure(ctx).results
    assert res == doc["results"]


def test_the_committed_record_judges_as_reported():
    got = {c["id"]: (c["kind"], c["verdict"]) for c in D.judge(_committed()[0]["results"])}
    assert got == {
        # the chapter's question ③, answered "no": 8 seeds (book --decide): −0.283, 95% CI [−0.86, +0.30] < sesoi 0.502
        "deep_better": ("question", "REPORTED"),
        "layer_division_of_labour": ("question", "REPORTED"),  # no: −0.229, 95% CI [−0.68, +0.23] < sesoi 0.502
        "layer_division_of_labour_long": ("question", "REPORTED"),  # no: +0.222, 95% CI [−0.03, +0.47], 5 seeds
        "deep_trains_slower": ("book", "PASS"),  # train loss +0.086, +0.058, +0.124
        "deep_better_long": ("prediction", "FAIL"),  # both overfit when stretched
        "one_layer_no_head_division": ("book", "FAIL"),  # one layer's heads span as much as two layers' layer 0
    }


def test_old_results_alone_judge_without_a_crash():
    doc, _ = _committed()
    claims = D.judge(doc["results"])
    assert {"deep_better", "layer_division_of_labour", "deep_trains_slower"} <= {c["id"] for c in claims}


# ---------------------------------------------------- §1.18.4: one layer (from lab/statements)
def one_layer(one, two=(2.0, 2.1, 2.05)) -> dict:
    t = {s: {"l1_distance_span": a, "l2_distance_span": b} for s, a, b in zip(SEEDS, one, two)}
    return {**results(), "one_layer_per_seed": t, "one_layer_pending": {}}


@pytest.mark.parametrize(
    "one, expected",
    [
        ([0.1, 0.2, 0.15], "PASS"),  # one layer's heads all alike: the division is missing
        ([1.9, 2.0, 2.05], "FAIL"),  # as wide as two layers': less than half of it missing, for sure
        ([0.3, 1.9, 1.0], "INCONCLUSIVE"),
    ],
)
def test_one_layer(one, expected):
    assert verdict(one_layer(one), "one_layer_no_head_division") == expected


def test_one_layer_not_trained_names_its_runs():
    r = {**results(), "one_layer_pending": {"runs": ["statements/stmt_layer1_s1"], "minutes_one_core": 1.3}}
    c = next(c for c in D.judge(r) if c["id"] == "one_layer_no_head_division")
    assert c["verdict"] == "INCONCLUSIVE" and "stmt_layer1_s1" in c["detail"]


def test_one_layer_committed_judges_as_reported():
    from attnlab.lab import runs as R
    from attnlab.lab.labbook import Context

    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "deep.json").read_text(encoding="utf-8"))
    c = next(c for c in D.judge(doc["results"]) if c["id"] == "one_layer_no_head_division")
    assert c["verdict"] == "FAIL" and c["inputs"]["one_layer_span"] == pytest.approx([2.69, 3.02, 1.87], abs=0.01)
    assert "2.69" in D.WHY["one_layer_no_head_division"](doc["results"])
    assert D.SESOI_DIVISION == pytest.approx((3.92 - 1.2) / 2, abs=0.01)
    # measured again from the committed JSON alone (no run folder): the same numbers
    ctx = Context(R.Scale(), "", REPO_ROOT / "no_runs_here", {}, D.EXPERIMENT, train=False, previous=doc["results"])
    assert D.measure(ctx).results["one_layer_per_seed"] == doc["results"]["one_layer_per_seed"]
    run = next(r for r in D.EXPERIMENT.runs(R.Scale()) if r.name.startswith("stmt_layer1"))
    assert run.cfg.n_layer == 1 and run.cfg.max_steps == 1500
    # a further seed: the one-layer model, and the two-layer baseline where its portrait is not committed
    assert [r.name for r in D.EXPERIMENT.seed_runs(R.Scale(), R.BOOK_SEED, "one_layer_no_head_division")] == [
        f"stmt_layer1_s{R.BOOK_SEED}"
    ]
    assert len(D.EXPERIMENT.seed_runs(R.Scale(), R.BOOK_SEED + 5, "one_layer_no_head_division")) == 2
