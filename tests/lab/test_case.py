"""§1.2 (attnlab.lab.case): the lab book's case entry judges the case document with the case's own judge.

The case's claims are check_claims' (their PASS / FAIL / INCONCLUSIVE examples are in
tests/test_claims.py); here: the entry's judge reads the source document (Experiment.source),
an edit of that document changes the lab book's verdicts when the book is re-judged, and
the entry stores no second copy of the case's numbers.
"""

import copy
import json
import shutil
from pathlib import Path

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.experiments.claims import check_claims
from attnlab.lab import case as C
from attnlab.lab.labbook import Context, judge_input, rejudge
from attnlab.lab.runs import Scale
from attnlab.sequential import record

SOURCE = json.loads((REPO_ROOT / C.SOURCE).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """measure with a root that holds nothing: the committed source is found in the repository."""
    root = Path(tmp_path_factory.mktemp("case"))
    return C.measure(Context(Scale(), "", root, {}, C.EXPERIMENT, train=False))


def same(a, b):
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_the_judge_is_the_case_judge_on_the_source(measured, tmp_path):
    assert C.EXPERIMENT.source == C.SOURCE
    doc = judge_input(C.EXPERIMENT, tmp_path, measured.results)  # not under tmp_path: the repository's
    assert same(C.judge(doc), [{**c, "kind": c.get("kind", "book")} for c in check_claims(SOURCE)])
    assert "pairs" not in measured.results and len(json.dumps(measured.results)) < 20_000  # no second copy


def test_an_edit_of_the_source_is_what_the_lab_book_judges(measured, tmp_path):
    """A case result whose collapsed big model trains as well as the scaled one: re-judging the lab
    book's entry gives the edited verdicts, not the committed ones."""
    (tmp_path / "data").mkdir()
    doc = copy.deepcopy(SOURCE)
    doc["pairs"]["big_unscaled"]["val_loss_end"] = doc["pairs"]["big_scaled"]["val_loss_end"]
    for u, s in zip(doc["seed_runs"]["big_unscaled"], doc["seed_runs"]["big_scaled"]):
        u["val_loss_end"] = s["val_loss_end"]
    (tmp_path / C.SOURCE).write_text(json.dumps(doc), encoding="utf-8")
    entry = {"status": "done", "results": measured.results, "claims": [], "notes": []}
    edited = rejudge(C.EXPERIMENT, entry, tmp_path)["claims"]  # with their looks (attnlab.sequential)
    assert same(edited, record(C.judge(doc), []))
    assert not same(edited, record(C.judge(SOURCE), []))


def test_the_table_shows_each_seed(measured):
    rows = {r[0]: r for r in measured.results["table"]}
    big = next(r for k, r in rows.items() if k.startswith("d_head=256 差距"))
    assert big[1] == 0.95 and len(big[2].split(", ")) == 1 + len(
        SOURCE["seed_runs"]["big_scaled"]
    )  # a gap needs both members
    assert measured.figures  # the case's own figures are committed


def test_a_missing_source_says_which_command_makes_it(tmp_path, monkeypatch):
    import attnlab.corpus as corpus
    from attnlab.lab.labbook import NotAvailable

    monkeypatch.setattr(corpus, "REPO_ROOT", tmp_path / "nowhere")
    with pytest.raises(NotAvailable, match="attnlab case"):
        judge_input(C.EXPERIMENT, tmp_path, {})
    shutil.rmtree(tmp_path, ignore_errors=True)
