"""§1.2 (attnlab.lab.case): the lab book's case entry judges exactly as the case's own judge.

The case's claims are check_claims' (their PASS / FAIL / INCONCLUSIVE examples are in
tests/test_claims.py); here: the subset the entry stores judges like the whole document,
an edit of the stored numbers changes the verdicts as it would in the source, and the
subset is a fraction of the source.
"""

import copy
import json
from pathlib import Path

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.experiments.book_runs import Scale
from attnlab.experiments.claims import check_claims
from attnlab.experiments.labbook import Context
from attnlab.lab import case as C

SOURCE = json.loads((REPO_ROOT / C.SOURCE).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """measure with a root that holds nothing: the committed source is found in the repository."""
    root = Path(tmp_path_factory.mktemp("case"))
    return C.measure(Context(Scale(), "", root, {}, C.EXPERIMENT, train=False))


def same(a, b):
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_judge_of_the_stored_subset_is_the_case_judge(measured):
    res = measured.results
    assert same(C.judge(res), [{**c, "kind": c.get("kind", "book")} for c in check_claims(SOURCE)])
    assert same(C.judge(SOURCE), C.judge(res))  # the source document itself is judged alike
    assert res["source"] == C.SOURCE == C.EXPERIMENT.source and len(res["source_sha256"]) == 64
    # a fraction of the source, measured (the report names the sizes)
    assert res["case_bytes"]["subset"] == len(json.dumps(res["case"]))
    assert res["case_bytes"]["subset"] < 0.5 * res["case_bytes"]["source"]


def test_an_edit_of_the_stored_numbers_judges_as_the_same_edit_of_the_source(measured):
    """A result whose collapsed big model trains as well as the scaled one: the stored subset and the
    whole document, edited alike, get the same verdicts, and they are not the committed ones."""
    sub, doc = copy.deepcopy(measured.results["case"]), copy.deepcopy(SOURCE)
    for d in (sub, doc):
        d["pairs"]["big_unscaled"]["val_loss_end"] = d["pairs"]["big_scaled"]["val_loss_end"]
        for u, s in zip(d["seed_runs"]["big_unscaled"], d["seed_runs"]["big_scaled"]):
            u["val_loss_end"] = s["val_loss_end"]
    edited = C.judge({**measured.results, "case": sub})
    assert same(edited, C.judge(doc))
    assert not same(edited, C.judge(measured.results))


def test_the_table_shows_each_seed(measured):
    rows = {r[0]: r for r in measured.results["table"]}
    big = next(r for k, r in rows.items() if k.startswith("d_head=256 差距"))
    assert big[1] == 0.95 and len(big[2].split(", ")) == 1 + len(SOURCE["seed_runs"]["big_unscaled"])
    assert measured.figures  # the case's own figures are committed


def test_read_subset_keeps_what_is_read_and_refuses_an_unrecorded_route():
    doc = {"a": {"x": [1, 2, 3], "y": 5}, "b": [{"u": 1, "v": 2}, {"u": 3, "v": 4}], "c": 9}
    sub = C.read_subset(lambda d: [d["a"]["x"][0], [r["u"] for r in d["b"]]], doc)
    assert sub == {"a": {"x": [1, 2, 3]}, "b": [{"u": 1}, {"u": 3}]}
    # dict.get called unbound bypasses the record: the check catches it
    with pytest.raises(ValueError, match="by a route"):
        C.read_subset(lambda d: dict.get(d, "c"), doc)


def test_results_without_the_case_numbers_say_how_to_bring_them_in():
    with pytest.raises(ValueError, match="--only case --no-train"):
        C.judge({"table": [], "source": C.SOURCE})


def test_a_subset_older_than_the_rules_says_how_to_store_it_again(measured):
    sub = copy.deepcopy(measured.results["case"])
    del sub["pairs"]
    with pytest.raises(ValueError, match="stores them again"):
        C.judge({**measured.results, "case": sub})
