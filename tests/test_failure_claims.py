"""§1.11.7's claims: one satisfying and one violating result per id, and the renormalised entropy."""

import copy
import math

import pytest
import torch

from attnlab.experiments.failures import failure_claims, renormalized_entropy


def _variant(end: float, **kw) -> dict:
    curve = [7.0 - (7.0 - end) * min(1, t / 200) + 0.02 * math.sin(t) for t in range(300)]
    v = {
        "loss_start": curve[0],
        "loss_end": curve[-1],
        "final_grad_norm": 1.0,
        "weight_entropy": 0.83,
        "weight_entropy_renorm": 0.83,
        "diag_weight": 0.15,
        "row_sum_max": 1.0,
        "future_weight_max": 0.0,
        "val_loss_end": end,
        "loss_curve": curve,
    }
    v.update(kw)
    return v


def book_like() -> dict:
    """The book's §1.11.7 table as a result (d_head 32)."""
    return {
        "d_head": 32,
        "config": {"d_model": 128, "n_head": 4, "max_steps": 300},
        "variants": {
            "correct": _variant(4.810),
            "mask_zero": _variant(
                4.634, future_weight_max=0.6, row_sum_max=1.0, weight_entropy=1.27, weight_entropy_renorm=0.949
            ),
            "scale_after_softmax": _variant(4.668, row_sum_max=0.1768, weight_entropy=0.16),
            "no_max_subtraction": _variant(4.810),
            "divide_by_d_k": _variant(4.708, weight_entropy=0.9989),
        },
    }


def _shift(res, name, d):
    v = res["variants"][name]
    v["loss_curve"] = [x + d for x in v["loss_curve"]]


BREAK = {
    "bug1_loss_lower": lambda r: _shift(r, "mask_zero", 0.3),
    "bug1_leaks": lambda r: r["variants"]["mask_zero"].update(future_weight_max=0.0),
    "bug1_entropy_higher": lambda r: r["variants"]["mask_zero"].update(weight_entropy_renorm=0.80),
    "bug2_row_sum": lambda r: r["variants"]["scale_after_softmax"].update(row_sum_max=1.0),
    "bug2_loss_slightly_lower": lambda r: _shift(r, "scale_after_softmax", 0.2),
    "bug3_invisible": lambda r: _shift(r, "no_max_subtraction", 0.05),
    "bug4_entropy_uniform": lambda r: r["variants"]["divide_by_d_k"].update(weight_entropy=0.947),
    "bug4_loss_unchanged": lambda r: _shift(r, "divide_by_d_k", 0.2),
}


def test_every_failure_claim_is_covered():
    assert {c["id"] for c in failure_claims(book_like())} == set(BREAK)


@pytest.mark.parametrize("cid", sorted(BREAK))
def test_failure_claim_passes_and_fails(cid):
    good = book_like()
    assert {c["id"]: c for c in failure_claims(good)}[cid]["pass"]
    bad = copy.deepcopy(good)
    BREAK[cid](bad)
    c = {c["id"]: c for c in failure_claims(bad)}[cid]
    assert not c["pass"]
    assert c["kind"] == "sanity" or c["reason"]["category"] in ("finding", "protocol", "unexplained")


def test_renormalized_entropy():
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
