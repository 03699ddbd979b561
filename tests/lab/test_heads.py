"""§1.8.5–§1.8.6 (attnlab.lab.heads): every claim can PASS, FAIL and (where its rule allows) be
INCONCLUSIVE; the committed JSON judges as reported; the lab book judges with the heads
module's own judge."""

import copy
import json

import pytest

from attnlab.cli import main
from attnlab.corpus import REPO_ROOT
from attnlab.lab import heads as H
from attnlab.lab import heads as L
from attnlab.lab import runs as R
from attnlab.lab.labbook import Context

DOC = json.loads((REPO_ROOT / "data" / "head_portrait.json").read_text(encoding="utf-8"))
COMMITTED = L.results_of(DOC)

# the verdicts reported for the committed 3-seed portraits (issue 21)
REPORTED = {
    "self_head": "FAIL",
    "previous_token_head": "INCONCLUSIVE",
    "previous_token_head_forms": "PASS",
    "layer0_local_layer1_global": "INCONCLUSIVE",
    "most_heads_near_zero": "FAIL",
    "snippet_zeroes_one_head": "FAIL",
}


def with_cols(**cols) -> dict:
    """The committed results with per-seed numbers replaced (one value per seed; as many seeds as given)."""
    r = copy.deepcopy(COMMITTED)
    n = max(len(v) for v in cols.values())
    first = next(iter(COMMITTED["per_seed"].values()))
    r["per_seed"] = {str(20261014 + i): copy.deepcopy(first) for i in range(n)}
    for key, values in cols.items():
        for row, v in zip(r["per_seed"].values(), values):
            row[key] = v
    return r


def verdicts(r) -> dict:
    return {c["id"]: c["verdict"] for c in L.EXPERIMENT.judge(r)}


def test_the_lab_book_judges_with_the_heads_module_own_judge():
    assert L.EXPERIMENT.judge is H.judge
    assert H.head_claims([DOC, *DOC["other_seeds"]]) == H.judge(COMMITTED)


def test_committed_results_judge_as_reported():
    claims = H.judge(COMMITTED)
    assert {c["id"]: c["verdict"] for c in claims} == REPORTED
    assert all(c["kind"] == "book" and c["rule"] and c["inputs"] for c in claims)
    assert all(c["reason"]["text"] for c in claims if c["verdict"] == "FAIL")
    assert {c["id"]: c["reason"]["category"] for c in claims if c["verdict"] == "FAIL"}["snippet_zeroes_one_head"] == (
        "finding"
    )
    assert list(COMMITTED["per_seed"]) == ["20261014", "20261015", "20261016"]


@pytest.mark.parametrize(
    "cid, key, values, expected",
    [
        ("self_head", "diag_l0_max", [0.76, 0.78, 0.77], "PASS"),
        ("self_head", "diag_l0_max", [0.154, 0.139, 0.178], "FAIL"),  # the book's 0.769 outside one run's PI
        ("self_head", "diag_l0_max", [0.9, 0.5, 0.8], "INCONCLUSIVE"),
        ("previous_token_head", "prev_l0_max", [0.45, 0.46, 0.44], "PASS"),
        ("previous_token_head", "prev_l0_max", [0.10, 0.11, 0.12], "FAIL"),
        ("previous_token_head", "prev_l0_max", [0.511, 0.44, 0.491], "INCONCLUSIVE"),
        ("previous_token_head_forms", "prev_l0_max", [0.50, 0.44, 0.49], "PASS"),
        ("previous_token_head_forms", "prev_l0_max", [0.12, 0.13, 0.125], "FAIL"),  # an even spread
        ("previous_token_head_forms", "prev_l0_max", [0.6, 0.1, 0.3], "INCONCLUSIVE"),
        ("layer0_local_layer1_global", "dist_l1_mean", [4.9, 5.0, 4.95], "PASS"),  # layer 0 at 4.38
        ("layer0_local_layer1_global", "dist_l1_mean", [3.0, 2.9, 3.1], "FAIL"),
        ("layer0_local_layer1_global", "dist_l1_mean", [5.4, 4.0, 4.9], "INCONCLUSIVE"),
    ],
)
def test_each_claim_can_pass_fail_and_be_inconclusive(cid, key, values, expected):
    assert verdicts(with_cols(**{key: values}))[cid] == expected


FEW = [0.3, 0.25, 0.01, 0.0, 0.02, -0.01, 0.005, 0.03]  # two heads matter, six near 0
MANY = [0.3, 0.25, 0.2, 0.15, 0.02, -0.01, 0.005, 0.13]


@pytest.mark.parametrize(
    "deltas, expected",
    [
        ([FEW, FEW, FEW], "PASS"),
        ([FEW, MANY, FEW], "FAIL"),  # one seed where most heads matter
        ([[0.01] * 8] * 3, "FAIL"),  # no head changes it markedly: not "a few"
    ],
)
def test_most_heads_near_zero(deltas, expected):
    assert verdicts(with_cols(ablation_delta=deltas))["most_heads_near_zero"] == expected


def test_snippet_claim():
    right = [{"layer": L_, "head": h, "zeroed": [h], "delta_loss": 0.1} for L_ in (0, 1) for h in range(4)]
    assert verdicts(with_cols(snippet=[right] * 3))["snippet_zeroes_one_head"] == "PASS"
    assert verdicts(COMMITTED)["snippet_zeroes_one_head"] == "FAIL"


def test_claims_need_their_numbers():
    r = with_cols(ablation_delta=[None] * 3, snippet=[None] * 3)
    for row in r["per_seed"].values():
        del row["dist_l1_mean"]
    assert set(verdicts(r)) == {"self_head", "previous_token_head", "previous_token_head_forms"}
    one = with_cols(prev_l0_max=[0.45])
    assert verdicts(one)["previous_token_head"] == verdicts(one)["previous_token_head_forms"] == "INCONCLUSIVE"


def test_measure_reads_the_committed_json(tmp_path):
    out = L.measure(Context(R.Scale.make(True), "", tmp_path, {}, L.EXPERIMENT))
    assert out.results == COMMITTED
    assert {"headers", "rows", "ablation", "source"} <= set(out.results)  # what the report shows
    assert out.results["rows"][0][0] == "L0·H0" and len(out.results["rows"]) == 8


def test_rejudge_cli_writes_the_verdicts_back(tmp_path, capsys):
    old = copy.deepcopy(DOC)
    old["claims"] = []
    path = tmp_path / "h.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    assert main(["heads", "--rejudge", str(path)]) == 0
    assert {c["id"]: c["verdict"] for c in json.loads(path.read_text(encoding="utf-8"))["claims"]} == REPORTED
    assert "书中论断 / book claims: 1 PASS, 3 FAIL, 2 INCONCLUSIVE" in capsys.readouterr().out


def test_committed_json_is_regenerated():
    assert {c["id"]: c["verdict"] for c in DOC["claims"]} == REPORTED
    assert DOC["claims"] == H.judge(COMMITTED)
