"""§1.2 (attnlab.lab.case): the lab book's case entry judges the case document with the case's own judge,
and the case's statements in other sections from its per-seed table.

The case's claims are check_claims' (their PASS / FAIL / INCONCLUSIVE examples are in
tests/test_claims.py); here: the entry's judge reads the source document (Experiment.source),
an edit of that document changes the lab book's verdicts when the book is re-judged, the entry
stores no second copy of the case's traces, and every statement it judges can PASS, FAIL and
(where its rule allows) be INCONCLUSIVE or NA.
"""

import copy
import json
import shutil
from pathlib import Path

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import case as C
from attnlab.lab import runs as R
from attnlab.lab.case.claims import check_claims
from attnlab.lab.labbook import Context, judge_input, rejudge
from attnlab.lab.runs import Scale
from attnlab.sequential import record

SOURCE = json.loads((REPO_ROOT / C.SOURCE).read_text(encoding="utf-8"))
COMMITTED = json.loads((REPO_ROOT / "data" / "lab_book" / "case.json").read_text(encoding="utf-8"))["results"]
SEEDS = [str(R.BOOK_SEED + i) for i in range(4)]


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
    assert same(doc["source"], SOURCE) and doc["results"] is measured.results
    case = [{**c, "kind": c.get("kind", "book")} for c in check_claims(SOURCE)]
    assert same(C.judge(doc)[: len(case)], case)
    assert {c["id"] for c in C.judge(doc)[len(case) :]} == set(C.CLAIM_RUNS)  # and the statements, after
    assert "pairs" not in measured.results and len(json.dumps(measured.results)) < 30_000  # no second copy


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
    assert same(edited, record(C.judge({"source": doc, "results": measured.results}), []))
    assert not same(edited, record(C.judge({"source": SOURCE, "results": measured.results}), []))


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


# ------------------------------------------------------------------ the case's statements in other sections
def results(**columns):
    """Hand-made results: each column a list of per-seed numbers (None leaves the seed out)."""
    table = {}
    for key, vals in columns.items():
        for s, v in zip(SEEDS, vals):
            if v is not None:
                table.setdefault(s, {})[key] = v
    return {"per_seed": table, "pending": {}}


def verdict(res, cid):
    return next(c for c in C.statements(res) if c["id"] == cid)["verdict"]


def test_the_committed_table_judges_as_reported(measured):
    v = {c["id"]: c["verdict"] for c in C.statements(COMMITTED)}
    assert v["unscaled_grad_norm_vanishes"] == v["attention_dead_in_layer1"] == "FAIL"
    assert v["small_unscaled_saturates"] == "FAIL" and v["loss_1500_about_4_0"] == "PASS"
    # 4_17 read the learning-rate map's retraining of the first seed once (4.269 for 4.2898): INCONCLUSIVE now
    assert v["loss_small_unscaled_4_17"] == "INCONCLUSIVE" and v["loss_small_scaled_4_0"] == "FAIL"
    assert v["loss_big_unscaled_5_18"] == v["loss_big_scaled_4_23"] == "INCONCLUSIVE"
    # §1.22.2 answers §1.4's "如果继续训 10000 步会怎样？" with 0.8–1.0: our validation gap reverses, a FAIL of that answer
    long = next(c for c in C.statements(COMMITTED) if c["id"] == "gap_after_10000_steps")
    assert (
        long["verdict"] == "FAIL"
        and long["kind"] == "book"
        and "memorises" in C.WHY["gap_after_10000_steps"](COMMITTED)
    )
    # the case document alone gives the first seed's gradient norm and layer 1 (measure, no run folder)
    first = measured.results["per_seed"][str(R.BOOK_SEED)]
    assert first["grad_min_big_unscaled"] == pytest.approx(0.19, abs=0.005)
    assert first["l1_entropy_end_big_unscaled"] == pytest.approx(0.081, abs=0.001)
    assert [measured.results["per_seed"][s]["val_small_scaled"] for s in SEEDS[:3]] == pytest.approx(
        [4.046, 4.099, 4.055], abs=1e-3
    )


def test_every_why_names_a_statement_and_reads_its_numbers():
    ids = {c["id"] for c in C.statements(COMMITTED)}
    assert set(C.WHY) <= ids and set(C.CLAIM_RUNS) == ids
    why = C.WHY["unscaled_grad_norm_vanishes"](COMMITTED)
    assert "0.19" in why and "20261014" in why
    first = COMMITTED["per_seed"][str(R.BOOK_SEED)]["l0_entropy_end_small_unscaled"]
    assert f"{first:.3g}" in C.WHY["small_unscaled_saturates"](COMMITTED)
    for cid, fn in C.WHY.items():
        assert isinstance(fn(COMMITTED), str), cid


@pytest.mark.parametrize(
    "mins, ends, expected",
    [([1e-5], [5e-5], "PASS"), ([0.19], [0.88], "FAIL"), ([1e-5], [0.3], "FAIL"), ([], [], "NA")],
)
def test_grad_norm(mins, ends, expected):
    r = results(grad_min_big_unscaled=mins, grad_end_median_big_unscaled=ends)
    assert verdict(r, "unscaled_grad_norm_vanishes") == expected


@pytest.mark.parametrize("l1, expected", [([0.001], "PASS"), ([0.081], "FAIL"), ([], "NA")])
def test_layer1(l1, expected):
    assert verdict(results(l1_entropy_end_big_unscaled=l1), "attention_dead_in_layer1") == expected


@pytest.mark.parametrize("ent, expected", [([0.001, 0.002, 0.0], "PASS"), ([0.39, 0.41, 0.5], "FAIL"), ([], "NA")])
def test_saturation(ent, expected):
    assert verdict(results(l0_entropy_end_small_unscaled=ent), "small_unscaled_saturates") == expected


@pytest.mark.parametrize(
    "vals, expected",
    [
        ([4.17, 4.18, 4.16, 4.17], "PASS"),
        ([4.5, 4.51, 4.49], "FAIL"),  # 4.17 outside what one run gives
        ([4.29, 4.15, 4.09], "INCONCLUSIVE"),  # the committed spread: wider than ±0.17
    ],
)
def test_absolute_loss(vals, expected):
    assert verdict(results(val_small_unscaled=vals), "loss_small_unscaled_4_17") == expected


@pytest.mark.parametrize(
    "vals, expected",
    [
        ([4.05, 4.1, 4.05], "PASS"),  # every run nearer 4.0 than the broken model's 5.18 (± 0.59)
        ([5.1, 5.12, 5.11], "FAIL"),
        ([4.05, 4.1, 4.7], "FAIL"),  # one run 0.7 off: "差得远"
        ([3.3, 4.5, 4.0], "FAIL"),  # a statement about every run: no seed spread to wait out
    ],
)
def test_loss_about_4(vals, expected):
    c = next(c for c in C.statements(results(val_small_scaled=vals)) if c["id"] == "loss_1500_about_4_0")
    assert c["kind"] == "sanity" and c["verdict"] == expected


@pytest.mark.parametrize("gap, expected", [([0.9], "PASS"), ([0.3], "FAIL"), ([-2.4, -2.5], "FAIL")])
def test_long_gap_is_judged_against_the_chapters_answer(gap, expected):
    c = next(c for c in C.statements(results(long_gap=gap)) if c["id"] == "gap_after_10000_steps")
    assert c["kind"] == "book" and c["verdict"] == expected and c["n"] == len(gap)
    assert f"{sum(0.8 <= g <= 1.0 for g in gap)} of {len(gap)} seeds inside" in c["detail"]


def test_the_long_pair_untrained_names_its_command():
    c = next(c for c in C.statements(results()) if c["id"] == "gap_after_10000_steps")
    assert c["verdict"] == "NA" and "`attnlab book --decide --only case`" in c["detail"]


def test_runs_the_book_declares_and_adds_per_seed():
    full, quick = R.Scale(), R.Scale.make(True)
    assert C.EXPERIMENT.runs(full) == []  # the case trains its own runs; the 10000-step pair is --decide's
    long = {r.name: r for r in C.seed_runs(full, R.BOOK_SEED, "gap_after_10000_steps")}
    assert long[f"stmt_big_unscaled_10000_s{R.BOOK_SEED}"].cfg.max_steps == 10000
    assert [r.cfg.max_steps for r in C.EXPERIMENT.runs(quick)] == [2 * quick.steps] * 2
    for cid in C.CLAIM_RUNS:
        assert C.seed_runs(full, R.BOOK_SEED + 5, cid), cid
    # the case's own claims read the seed's four case runs (what the confirmatory round trains for them)
    seed = R.BOOK_SEED + 5
    four = [f"{size}_{tag}_s{seed}" for size in ("small", "big") for tag in ("unscaled", "scaled")]
    assert [r.name for r in C.seed_runs(full, seed, "small_gap_small")] == four


def test_the_long_why_says_memorised_only_when_the_numbers_show_it():
    memorised = results(
        long_gap=[-2.41],
        long_val_unscaled=[5.0],
        long_val_scaled=[7.41],
        long_train_unscaled=[4.87],
        long_train_scaled=[0.83],
    )
    why = C.WHY["gap_after_10000_steps"](memorised)
    assert "memorises" in why and "on validation it reverses" in why
    plain = results(
        long_gap=[0.5],
        long_val_unscaled=[4.8],
        long_val_scaled=[4.3],
        long_train_unscaled=[4.7],
        long_train_scaled=[4.1],
    )
    why = C.WHY["gap_after_10000_steps"](plain)
    assert "0.5" in why and "memorises" not in why and "reverses" not in why
