"""§1.8.7–§1.8.8 (attnlab.lab.kv_cache): every claim can PASS, FAIL and (where its rule allows) be INCONCLUSIVE."""

import copy
import json

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import kv_cache as K

COMMITTED = json.loads((REPO_ROOT / "data" / "lab_book" / "kv_cache.json").read_text(encoding="utf-8"))["results"]


def results(per_seed=None, **changes):
    r = copy.deepcopy(COMMITTED)
    if per_seed is not None:
        r["per_seed"] = {str(20261014 + i): row for i, row in enumerate(per_seed)}
    r.update(changes)
    return r


def verdicts(r):
    return {c["id"]: c["verdict"] for c in K.judge(r)}


def rows(mha, gqa, mqa):
    return [{"val_4": a, "val_2": b, "val_1": c} for a, b, c in zip(mha, gqa, mqa)]


def test_committed_results_judge_as_reported():
    v = verdicts(COMMITTED)
    assert v["kv_formula_MHA"] == v["kv_formula_GQA_g8"] == v["kv_formula_MQA"] == "PASS"
    assert v["kv_formula_matches_model"] == "PASS"
    assert v["mqa_costs_some_quality"] in ("INCONCLUSIVE", "PASS")


@pytest.mark.parametrize(
    "mqa, expected",
    [
        ([4.15, 4.16, 4.14, 4.15], "PASS"),  # 0.1 worse on every seed
        ([4.00, 4.01, 3.99, 4.00], "FAIL"),  # better than MHA: the wrong side
        ([4.051, 4.052, 4.050, 4.051], "FAIL"),  # worse by 0.001: below the smallest effect of interest
        ([4.20, 3.95, 4.12, 4.00], "INCONCLUSIVE"),
    ],
)
def test_mqa_costs_some_quality(mqa, expected):
    mha = [4.05, 4.05, 4.05, 4.05]
    assert verdicts(results(rows(mha, [4.07] * 4, mqa)))["mqa_costs_some_quality"] == expected


@pytest.mark.parametrize(
    "gqa, mqa, expected",
    [
        ([4.08, 4.09, 4.07], [4.15, 4.16, 4.14], "PASS"),  # GQA 0.03 above MHA: well below 0.17
        ([4.30, 4.31, 4.29], [4.35, 4.36, 4.34], "FAIL"),  # GQA 0.25 above MHA: not "很小"
        ([4.10, 4.00, 4.33], [4.15, 4.05, 4.14], "INCONCLUSIVE"),  # the interval reaches past 0.17
    ],
)
def test_gqa_loses_little(gqa, mqa, expected):
    # "质量损失很小": an upper bound on GQA − MHA, the chapter's 0.17 of "几乎没差别" (§1.2)
    assert verdicts(results(rows([4.05, 4.05, 4.05], gqa, mqa)))["gqa_small_loss"] == expected


def test_formula_claims_fail_on_a_wrong_number():
    r = results(llama2_70b_MB_per_token={"MHA": 5.2, "GQA_g8": 0.328, "MQA": 0.041})
    assert verdicts(r)["kv_formula_MHA"] == "FAIL" and verdicts(r)["kv_formula_GQA_g8"] == "PASS"
    bad = results()
    bad["ours"] = copy.deepcopy(bad["ours"])
    bad["ours"][1]["cache_bytes_measured"] += 4
    assert verdicts(bad)["kv_formula_matches_model"] == "FAIL"


def test_no_trained_runs_leave_only_the_formulas():
    assert set(verdicts(results(per_seed=[]))) == {
        "kv_formula_MHA",
        "kv_formula_GQA_g8",
        "kv_formula_MQA",
        "kv_formula_matches_model",
    }
