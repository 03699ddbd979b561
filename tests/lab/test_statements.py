"""The chapter's statements about the case's runs (attnlab.lab.statements): every claim can PASS, FAIL and
(where its rule allows) be INCONCLUSIVE; the committed numbers judge as reported; the runs are new or
shared, never twice. (Its other statements moved to their entries: tests/lab/test_positions.py,
test_failures.py, test_deep.py, test_exercise2.py.)"""

import json

import pytest

from attnlab.corpus import REPO_ROOT
from attnlab.lab import EXPERIMENTS
from attnlab.lab import runs as R
from attnlab.lab import statements as M

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = [str(R.BOOK_SEED + i) for i in range(4)]


def _data(name):
    return json.loads((REPO_ROOT / "data" / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def committed():
    """The results ``measure`` builds from the committed JSON alone (no run folder, no model)."""
    return {"per_seed": M.committed_table(None, _data("ch1_case.json")), "pending": {}}


def results(**columns):
    """Hand-made results: each column a list of per-seed numbers (None leaves the seed out)."""
    table = {}
    for key, vals in columns.items():
        for s, v in zip(SEEDS, vals):
            if v is not None:
                table.setdefault(s, {})[key] = v
    return {"per_seed": table, "pending": {}}


def verdict(res, cid):
    return next(c for c in M.judge(res) if c["id"] == cid)["verdict"]


# ------------------------------------------------------------------------------- committed numbers
def test_committed_numbers_are_the_case(committed):
    t = committed["per_seed"]
    first = t[str(R.BOOK_SEED)]
    assert first["grad_min_big_unscaled"] == pytest.approx(0.19, abs=0.005)
    assert first["grad_median_big_unscaled"] == pytest.approx(0.645, abs=0.005)
    assert first["l1_entropy_end_big_unscaled"] == pytest.approx(0.081, abs=0.001)
    assert first["l1_jac_end_big_unscaled"] == pytest.approx(0.13, abs=0.001)
    # the case keeps gradient norms and layer 1 for the first seed only
    assert all("grad_min_big_unscaled" not in t[s] and "l1_entropy_end_big_unscaled" not in t[s] for s in SEEDS[1:3])
    assert [t[s]["val_small_scaled"] for s in SEEDS[:3]] == pytest.approx([4.046, 4.099, 4.055], abs=1e-3)


def test_committed_results_judge_as_reported(committed):
    v = {c["id"]: c["verdict"] for c in M.judge(committed)}
    assert v["unscaled_grad_norm_vanishes"] == "FAIL"
    assert v["attention_dead_in_layer1"] == "FAIL"
    assert v["small_unscaled_saturates"] == "FAIL"
    assert v["loss_1500_about_4_0"] == "PASS"
    for m in ("small_unscaled_4_17", "big_unscaled_5_18", "big_scaled_4_23"):
        assert v[f"loss_{m}"] == "INCONCLUSIVE"
    # ten seeds of the small scaled model (4.09 ± 0.03) put the book's one run at 4.00 outside the one-run interval
    assert v["loss_small_scaled_4_0"] == "FAIL"
    claims = {c["id"]: c for c in M.judge(committed)}
    # the 10000-step pair: one run decides it, and only --decide trains it, so it says that command
    long = claims["gap_after_10000_steps"]
    assert long["verdict"] == "INCONCLUSIVE" and long["n"] == 0 and long["n_needed"] == 1
    assert "`attnlab book --decide --only statements`" in long["detail"]
    from attnlab.lab.decide import questions

    asked = {q.claim: q for q in questions({"statements": {"claims": M.judge(committed)}})}
    assert asked["gap_after_10000_steps"].n_needed == 1


def test_every_why_names_a_claim_and_reads_its_numbers(committed):
    ids = {c["id"] for c in M.judge(committed)}
    assert set(M.WHY) <= ids and set(M.CLAIM_RUNS) == ids
    why = M.WHY["unscaled_grad_norm_vanishes"](committed)
    assert "0.19" in why and "20261014" in why
    assert "0.388" in M.WHY["small_unscaled_saturates"](committed)
    for cid, fn in M.WHY.items():
        assert isinstance(fn(committed), str), cid


# ----------------------------------------------------------------------------------- each claim
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
    [([4.05, 4.1, 4.05], "PASS"), ([5.1, 5.12, 5.11], "FAIL"), ([3.5, 4.5, 4.0], "INCONCLUSIVE")],
)
def test_loss_about_4(vals, expected):
    assert verdict(results(val_small_scaled=vals), "loss_1500_about_4_0") == expected


@pytest.mark.parametrize("gap, expected", [([0.9], "PASS"), ([0.3], "FAIL"), ([], "INCONCLUSIVE")])
def test_long_gap(gap, expected):
    assert verdict(results(long_gap=gap), "gap_after_10000_steps") == expected


# ------------------------------------------------------------------------------------- the runs
@pytest.mark.parametrize("quick", [False, True])
def test_runs_are_new_or_shared_never_twice(quick):
    scale, names, cfgs = R.Scale.make(quick), {}, {}
    for e in [*EXPERIMENTS, M.EXPERIMENT]:
        for r in e.runs(scale):
            assert names.setdefault(r.name, r) == r, f"{r.name} declared twice with different configs"
            assert cfgs.setdefault(repr(r.cfg), r.name) == r.name, f"{r.name} and {cfgs[repr(r.cfg)]} are one model"
    mine = {r.name: r for r in M.EXPERIMENT.runs(scale)}
    if not quick:
        assert not mine  # the 10000-step pair is not trained by a plain book
        long = {r.name: r for r in M.seed_runs(scale, R.BOOK_SEED, "gap_after_10000_steps")}
        assert long[f"stmt_big_unscaled_10000_s{R.BOOK_SEED}"].cfg.max_steps == 10000
        assert M.est_seconds(list(long.values())) > 60 * 60  # ~1.5 core-hours


def test_seed_runs_cover_every_claim():
    scale = R.Scale()
    for cid in M.CLAIM_RUNS:
        assert M.seed_runs(scale, R.BOOK_SEED + 5, cid), cid


def test_quick_entry_end_to_end(tmp_path, text):
    from attnlab.lab.labbook import run_book

    run_book([M.EXPERIMENT], text, tmp_path, scale=R.Scale.make(True), progress=False, log=lambda s: None)
    doc = json.loads((tmp_path / "data" / "lab_book" / "statements.json").read_text(encoding="utf-8"))
    assert doc["status"] == "done" and all(r["done"] for r in doc["runs"])
    assert "long_gap" in doc["results"]["per_seed"][str(R.BOOK_SEED)]
    assert {c["id"] for c in doc["claims"]} == set(M.CLAIM_RUNS)
    # judged again from its JSON alone, the same claims
    assert M.judge(doc["results"]) == doc["claims"]


def test_the_long_why_says_memorised_only_when_the_numbers_show_it():
    memorised = results(
        long_gap=[-2.41],
        long_val_unscaled=[5.0],
        long_val_scaled=[7.41],
        long_train_unscaled=[4.87],
        long_train_scaled=[0.83],
    )
    why = M.WHY["gap_after_10000_steps"](memorised)
    assert "memorises" in why and "on validation it reverses" in why
    plain = results(
        long_gap=[0.5],
        long_val_unscaled=[4.8],
        long_val_scaled=[4.3],
        long_train_unscaled=[4.7],
        long_train_scaled=[4.1],
    )
    why = M.WHY["gap_after_10000_steps"](plain)
    assert "0.5" in why and "memorises" not in why and "reverses" not in why
