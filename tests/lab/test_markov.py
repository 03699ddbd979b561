"""§1.22.2 checkpoint ② (attnlab.lab.markov): every claim can PASS, FAIL and (where its rule allows)
be INCONCLUSIVE; the committed numbers (every seed of the case) judge as reported."""

import copy
import json
import math

import pytest

from attnlab import Config
from attnlab.corpus import REPO_ROOT
from attnlab.lab import markov as M
from attnlab.lab.labbook import Context
from attnlab.lab.runs import BOOK_SEED, Scale

COMMITTED = json.loads((REPO_ROOT / "data" / "lab_book" / "markov.json").read_text(encoding="utf-8"))["results"]
CASE = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
FLOOR = {"unigram": 5.54, "bigram": 4.80, "ln_vocab": math.log(1200)}


def results(big_unscaled=(), scaled=(), floor=FLOOR):
    table = {}
    for i, v in enumerate(big_unscaled):
        table.setdefault(str(BOOK_SEED + i), {})["big_unscaled"] = v
    for i, v in enumerate(scaled):
        table.setdefault(str(BOOK_SEED + i), {})["small_scaled"] = v
    return {"floor": dict(floor), "per_seed": table}


def verdicts(r):
    return {c["id"]: c["verdict"] for c in M.judge(r)}


def committed_numbers():
    """What measure stores from the committed numbers alone (no torch, no runs): the case's every seed
    and the committed floor."""
    return {"floor": COMMITTED["floor"], "per_seed": M.case_table(CASE)}


@pytest.mark.parametrize(
    "floor, expected", [(FLOOR, "PASS"), ({**FLOOR, "bigram": 5.6}, "FAIL"), ({**FLOOR, "bigram": 5.54}, "FAIL")]
)
def test_bigram_below_unigram(floor, expected):
    assert verdicts(results(floor=floor))["bigram_below_unigram"] == expected


@pytest.mark.parametrize(
    "big, expected",
    [
        ([4.85, 4.70, 4.92], "PASS"),  # every seed within 0.17 of the bigram
        ([5.17, 4.85, 4.90], "FAIL"),  # one seed 0.37 above
        ([4.58, 4.85, 4.90], "FAIL"),  # one seed far below: not "equivalent" either
    ],
)
def test_dead_attention_near_markov(big, expected):
    assert verdicts(results(big))["dead_attention_near_markov"] == expected


@pytest.mark.parametrize(
    "big, expected",
    [
        ([5.17, 5.20, 4.99], "PASS"),  # worse than the bigram on every seed
        ([4.60, 4.62, 4.58], "FAIL"),  # better: the wrong side
        ([4.81, 4.80, 4.82], "FAIL"),  # worse by 0.01: below the smallest effect of interest
        ([5.40, 4.70, 5.10], "INCONCLUSIVE"),
    ],
)
def test_collapsed_worse_than_bigram(big, expected):
    assert verdicts(results(big))["collapsed_worse_than_bigram"] == expected


@pytest.mark.parametrize("scaled, expected", [([4.05, 4.10, 4.06], "PASS"), ([4.05, 4.90, 4.06], "FAIL")])
def test_attention_beats_markov(scaled, expected):
    assert verdicts(results(scaled=scaled))["attention_beats_markov"] == expected


def test_only_the_floor_without_the_case():
    assert set(verdicts(results())) == {"bigram_below_unigram"}


def test_committed_results_judge_every_seed():
    res = committed_numbers()
    assert M.case_table(CASE)[str(BOOK_SEED)]["big_unscaled"] == pytest.approx(5.171, abs=1e-3)
    assert len(res["per_seed"]) == 1 + len(CASE["seed_runs"]["small_scaled"])  # every seed of the case
    claims = {c["id"]: c for c in M.judge(res)}
    assert {k: c["verdict"] for k, c in claims.items()} == {
        "bigram_below_unigram": "PASS",
        "dead_attention_near_markov": "FAIL",
        "collapsed_worse_than_bigram": "PASS",
        "attention_beats_markov": "PASS",
    }
    assert claims["dead_attention_near_markov"]["kind"] == "book"
    assert claims["collapsed_worse_than_bigram"]["kind"] == claims["attention_beats_markov"]["kind"] == "sanity"
    assert claims["dead_attention_near_markov"]["inputs"]["big_unscaled_minus_bigram"][:3] == pytest.approx(
        [0.375, 0.407, 0.193], abs=2e-3
    )


def test_why_names_every_seed_and_the_residual_stream():
    why = M.WHY["dead_attention_near_markov"](committed_numbers())
    n = 1 + len(CASE["seed_runs"]["big_unscaled"])
    assert "+0.375, +0.407, +0.193" in why and f"0 of {n}" in why and "residual stream" in why


def test_markov_floor_on_the_trainers_split(text):
    cfg = Config(vocab_size=40, block_size=16)
    f = M.markov_floor(text, cfg)
    assert f["bigram"] < f["unigram"] < math.log(40) == f["ln_vocab"]
    assert f["val_tokens"] + f["train_tokens"] == len(text)


def test_measure_reads_the_case_and_computes_the_floor(tmp_path, text, monkeypatch):
    """measure on a root that holds nothing: the committed case from the repository, the floor
    from the text with the trainer's own split and vocabulary, nothing from other run folders."""
    seen = []

    def floor(t, cfg):
        seen.append((t, cfg))
        return {**FLOOR, "unigram_alpha": 1.0, "val_tokens": 1, "train_tokens": 2}

    monkeypatch.setattr(M, "markov_floor", floor)
    ctx = Context(Scale(), text, tmp_path, {}, M.EXPERIMENT, train=False, previous=copy.deepcopy(COMMITTED))
    out = M.measure(ctx)
    res = out.results
    assert seen == [(text, Config())]
    assert res["per_seed"] == M.case_table(CASE) and res["floor"]["bigram"] == FLOOR["bigram"]
    assert {m["model"] for m in res["models"]} >= {f"case big_unscaled seed {BOOK_SEED}"}
    assert out.figures == ["figures/lab_book/markov_floor.png"]
    assert verdicts(res)["dead_attention_near_markov"] == "FAIL"
    # without the case's JSON the committed per-seed numbers are kept
    monkeypatch.setattr(M, "committed", lambda ctx, name: (_ for _ in ()).throw(M.NotAvailable(name)))
    again = M.measure(Context(Scale(), text, tmp_path, {}, M.EXPERIMENT, train=False, previous=res))
    assert again.results["per_seed"] == res["per_seed"]
