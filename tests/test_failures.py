"""The four injected bugs show the chapter's signatures (§1.11.7) on a tiny model.

The corpus is random characters, each written twice ("春春花花..."): the second
of a pair is predictable from the previous position (attention has something
to learn), the first is not -- unless the mask leaks the next position.
"""

import json
import random

import pytest

from attnlab import Config
from attnlab.cli import main
from attnlab.lab.failures import run, symptoms_table
from attnlab.tools import ExperimentError

ALPHA = "春花秋月何時了往事知多少小樓昨夜又東風故國不堪回首明中"
CFG = Config(
    n_layer=2,
    n_head=2,
    d_model=32,
    block_size=16,
    vocab_size=40,
    batch_size=8,
    warmup=5,
    lr=1e-2,
    eval_every=0,
    eval_batches=2,
    device="cpu",
)


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def pairs_text(n=1500, seed=0):
    rng = random.Random(seed)
    return "".join(c * 2 for c in (rng.choice(ALPHA) for _ in range(n)))


@pytest.fixture(scope="module")
def result():
    return run(pairs_text(), CFG, steps=60)


def test_same_seed_same_start(result):
    v = result["variants"]
    assert set(v) == {"correct", "mask_zero", "scale_after_softmax", "no_max_subtraction", "divide_by_d_k"}
    starts = [x["loss_start"] for x in v.values()]
    assert max(starts) - min(starts) < 0.01  # same weights, same first batch


def test_mask_zero_leaks_to_the_future_and_lowers_the_loss(result):
    v = result["variants"]
    assert v["correct"]["future_weight_max"] == 0.0
    assert v["mask_zero"]["future_weight_max"] > 0.1
    assert v["mask_zero"]["loss_end"] < v["correct"]["loss_end"] - 0.2


def test_scale_after_softmax_rows_sum_to_one_over_sqrt_d_head(result):
    v = result["variants"]
    assert v["scale_after_softmax"]["row_sum_max"] == pytest.approx(CFG.d_head**-0.5, rel=1e-4)
    assert v["correct"]["row_sum_max"] == pytest.approx(1.0, abs=1e-5)


def test_divide_by_d_k_is_near_uniform(result):
    v = result["variants"]
    assert v["divide_by_d_k"]["weight_entropy"] > 0.99
    assert v["divide_by_d_k"]["weight_entropy"] > v["correct"]["weight_entropy"]


def test_no_max_subtraction_is_indistinguishable_at_this_scale(result):
    a, b = result["variants"]["correct"], result["variants"]["no_max_subtraction"]
    for k in ("loss_end", "final_grad_norm", "weight_entropy", "diag_weight", "row_sum_max"):
        assert b[k] == pytest.approx(a[k], abs=1e-3), k


def test_table_has_ours_and_the_books(result):
    t = symptoms_table(result)
    assert "掩码用 0" in t and "书 / book" in t and "0.1768" in t


def test_unknown_variant_is_an_error():
    with pytest.raises(ExperimentError, match="unknown variant"):
        run(pairs_text(100), CFG, steps=1, variants=["correct", "typo"])


def test_cli_failures(tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text(pairs_text(300), encoding="utf-8")
    out = tmp_path / "f.json"
    report = tmp_path / "f.md"  # never the committed reports/failure_symptoms.md
    args = ["failures", "--corpus", str(corpus), "--steps", "3", "--variants", "correct,mask_zero", "--out", str(out)]
    args += ["--report", str(report), "--seeds", "1", "--runs", str(tmp_path / "runs")]
    for kv in (
        "n_layer=1",
        "n_head=2",
        "d_model=16",
        "block_size=16",
        "vocab_size=40",
        "batch_size=4",
        "device=cpu",
        "eval_batches=1",
    ):
        args += ["--set", kv]
    assert main(args) == 0
    assert "loss 起 / start" in capsys.readouterr().out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert set(data["variants"]) == {"correct", "mask_zero"} and data["book"]["correct"][0] == 7.032
    assert report.is_file()
    # --runs keeps the run folders: the rerun trains nothing and reads the same runs
    import importlib

    monkeypatch.setattr(importlib.import_module("attnlab.train"), "train", lambda *a, **k: pytest.fail("retrained"))
    assert main(args) == 0
    again = json.loads(out.read_text(encoding="utf-8"))
    assert [again["variants"][v]["loss_curve"] for v in again["variants"]] == [
        data["variants"][v]["loss_curve"] for v in data["variants"]
    ]


def test_seeds_are_kept_and_the_claims_use_them():
    r = run(pairs_text(), CFG, steps=20, seeds=2, variants=["correct", "mask_zero"])
    first, second = (str(s) for s in r["seeds"])
    assert r["seeds"] == [CFG.seed, CFG.seed + 1] and r["variants"] == r["seed_variants"][first]
    curves = [r["seed_variants"][s]["correct"]["loss_curve"] for s in (first, second)]
    assert curves[0] != curves[1]  # a second seed is a second initialisation
    lower = next(c for c in r["claims"] if c["id"] == "bug1_loss_lower")
    assert len(lower["inputs"]["mask_zero_minus_correct_last50"]) == 2 and lower["rule"] == "effect"
    assert lower["n"] == 2 and r["overflow_control"]["rows"]  # bug ③'s control comes with every run


def _variant(level: float, leak: float = 0.0) -> dict:
    return {"loss_curve": [level] * 60, "future_weight_max": leak}


@pytest.mark.parametrize(
    ("shifts", "verdict"),
    [((-0.1, -0.12, -0.11), "PASS"), ((-0.1, 0.1, 0.0), "INCONCLUSIVE"), ((0.05, 0.06, 0.055), "FAIL")],
)
def test_the_loss_claim_over_seeds_can_fail(shifts, verdict):
    """'A zero mask lowers the loss' is judged by the effect rule over the seeds' paired differences."""
    from attnlab.lab.failures import failure_claims

    result = {
        "config": {"max_steps": 60, "d_model": 32, "n_head": 2},
        "variants": {},
        "seed_variants": {
            str(i): {"correct": _variant(4.0), "mask_zero": _variant(4.0 + d, 0.5)} for i, d in enumerate(shifts)
        },
    }
    claim = next(c for c in failure_claims(result) if c["id"] == "bug1_loss_lower")
    assert claim["verdict"] == verdict and claim["inputs"]["mask_zero_minus_correct_last50"] == pytest.approx(
        list(shifts)
    )


def test_an_older_one_seed_result_is_judged_but_never_passes_an_effect():
    from attnlab.lab.failures import failure_claims

    result = {
        "config": {"max_steps": 60, "d_model": 32, "n_head": 2, "seed": 7},
        "variants": {"correct": _variant(4.0), "mask_zero": _variant(3.7, 0.5)},
    }
    claims = {c["id"]: c for c in failure_claims(result)}
    assert (
        claims["bug1_loss_lower"]["verdict"] == "INCONCLUSIVE" and claims["bug1_leaks"]["verdict"] == "INCONCLUSIVE"
    )  # every: one seed is not enough


def test_renormalized_entropy():
    import torch

    from attnlab.lab.failures import renormalized_entropy

    T = 6
    causal = torch.ones(T, T).tril()
    uniform = causal / causal.sum(-1, keepdim=True)
    assert renormalized_entropy(uniform) == pytest.approx(1.0)
    # rows scaled by 1/sqrt(32) (bug ②) are renormalised first: same entropy as the correct rows
    assert renormalized_entropy(uniform / 32**0.5) == pytest.approx(1.0)
    # a leaking row spread over all T positions is normalised by log T, never above 1
    leak = torch.full((T, T), 1 / T)
    assert renormalized_entropy(leak) == pytest.approx(1.0)
    onehot = torch.eye(T)
    assert renormalized_entropy(onehot * 0.999 + uniform * 0.001) < 0.05
