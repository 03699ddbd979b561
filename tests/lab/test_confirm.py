"""The confirmatory round (attnlab.lab.confirm): power from the frozen rule itself, a plan bought
within its budget, a registered plan that cannot change, and a judge that sees only fresh seeds.

These are the three guarantees the round rests on: exploratory data can never confirm a claim (a
seed from the old range is refused), an effect zeroed in the confirmatory numbers never PASSes, and
a plan whose seeds, counts or specifications changed after registration is refused.
"""

import copy
from pathlib import Path

import numpy as np
import pytest

from attnlab import stats as S
from attnlab.claims_registry import register
from attnlab.lab import confirm as C
from attnlab.verdicts import claim

DATE = "2026-12-04T00:00:00+00:00"


def effect_claim(cid="gap", values=(0.9, 1.0, 0.95, 1.05), sesoi=0.4):
    xs = list(values)
    return claim(cid, "§1.4", "the big gap is large", S.effect(xs, direction=+1, sesoi=sesoi), inputs={"gap": xs})


def test_seeds_needed_matches_the_effect_rules_own_power():
    """Simulating the effect rule at its SESOI gives the seeds the t-test's noncentral power gives."""
    spec = {"rule": "effect", "params": {"direction": 1, "sesoi": 0.5}, "reads": "gap"}
    values = list(np.random.default_rng(1).normal(0.5, 0.5, size=8))
    n, power = C.seeds_needed(spec, values)
    sd = float(np.std(values, ddof=1))
    analytic = S.seeds_for(0.5, sd)
    assert n is not None and power >= 0.8
    assert abs(n - analytic) <= 2, (n, analytic)


@pytest.mark.parametrize(
    "spec",
    [
        {"rule": "effect", "params": {"direction": -1, "sesoi": 0.2}, "reads": "x"},
        {"rule": "value", "params": {"book": 0.0, "tol": 0.6}, "reads": "x"},
        {"rule": "band", "params": {"lo": -0.5, "hi": 0.4}, "reads": "x"},
        {"rule": "equivalence", "params": {"margin": 0.5}, "reads": "x"},
    ],
)
def test_the_vectorised_rules_judge_as_the_rules_do(spec):
    draws = np.random.default_rng(3).normal(-0.1, 0.3, size=(300, 5))
    fast = C._passes(spec, draws)
    slow = np.array([S.judge_spec(dict(spec), list(row)).verdict == "PASS" for row in draws])
    assert 0 < slow.sum() < len(slow)  # both outcomes occur, so equality means something
    assert (fast == slow).all()


def test_an_exact_claim_needs_no_seed_and_a_hopeless_one_says_so():
    assert C.claim_seeds({"rule": "exact", "params": {}}, {})[0] == 0
    # a value rule whose tolerance is below the seed noise can never PASS, at any count
    spec = {"rule": "value", "params": {"book": 0.17, "tol": 0.01}, "reads": "gap"}
    n, power, why = C.claim_seeds(spec, {"gap": [0.24, 0.05, 0.04, 0.03, 0.1]})
    assert n is None and power < 0.8 and "80" in why


def plan_for(claims, budget, price=lambda exp, n, cid: 100.0 * n):
    reg = {"claims": {}}
    for c in claims:
        register(reg, c, DATE)
    owner = {c["id"]: "entry_" + c["id"] for c in claims}
    return C.make_plan("abc123", reg, claims, owner, price, budget)


def test_the_plan_buys_within_its_budget_and_names_the_rest_with_a_price():
    cheap = effect_claim("cheap", (0.9, 1.0, 0.95, 1.05))
    dear = effect_claim("dear", (0.9, 0.3, 1.2, 0.5, 0.8), sesoi=0.4)
    p = plan_for([cheap, dear], budget=800)
    got = {c.claim: c for c in p.claims}
    assert got["cheap"].bought and got["cheap"].seeds >= 3
    assert not got["dear"].bought and "beyond the budget" in got["dear"].why
    assert p.spent_core_s <= 800
    j = p.to_json()
    assert j["claims"]["cheap"]["spec_sha256"] == C.spec_digest(j["claims"]["cheap"]["spec"])


def registered_plan():
    return plan_for([effect_claim()], budget=10_000).to_json()


def test_a_tampered_plan_is_refused():
    first = registered_plan()
    assert C.plan_rewrites(first, copy.deepcopy(first)) == []
    for tamper, expect in [
        (lambda p: p["claims"]["gap"].update(seeds=p["claims"]["gap"]["seeds"] + 2), "seeds changed"),
        (lambda p: p.update(seed_start=20261014), "seed_start"),
        (lambda p: p["claims"]["gap"]["spec"]["params"].update(sesoi=0.1), "spec changed"),
        (lambda p: p["claims"].pop("gap"), "removed from the plan"),
        (lambda p: p.update(budget_core_s=1e9), "budget_core_s"),
    ]:
        bad = copy.deepcopy(first)
        tamper(bad)
        assert any(expect in line for line in C.plan_rewrites(first, bad)), expect


def numbers(plan, values):
    start = plan["seed_start"]
    return {"entry_gap": {start + i: {"gap": v} for i, v in enumerate(values)}}


def test_confirmatory_verdicts_cannot_see_exploratory_seeds():
    plan = registered_plan()
    n = plan["claims"]["gap"]["seeds"]
    data = numbers(plan, [1.0] * n)
    data["entry_gap"][20261014] = {"gap": 5.0}  # an exploratory seed's number slipped in
    with pytest.raises(C.ConfirmError, match="not confirmatory"):
        C.judge_confirmatory(plan, data)


def test_a_zeroed_effect_never_passes():
    """The confirmatory numbers with the effect removed (each seed's gap minus their mean: mean 0,
    the same spread) never PASS, whatever the spread."""
    plan = registered_plan()
    n = plan["claims"]["gap"]["seeds"]
    rng = np.random.default_rng(7)
    for _ in range(50):
        xs = rng.normal(1.0, rng.uniform(0.01, 1.0), size=n)
        zeroed = list(xs - xs.mean())
        (verdict,) = [c["verdict"] for c in C.judge_confirmatory(plan, numbers(plan, zeroed))]
        assert verdict != "PASS"
    (real,) = C.judge_confirmatory(plan, numbers(plan, list(1.0 + 0.05 * rng.standard_normal(n))))
    assert real["verdict"] == "PASS" and real["holm"] == "PASS"


def test_a_claim_missing_planned_seeds_is_inconclusive_with_what_it_lacks():
    plan = registered_plan()
    (c,) = C.judge_confirmatory(plan, numbers(plan, [1.0]))
    assert c["verdict"] == "INCONCLUSIVE" and "not trained yet" in c["reason"]


def test_the_first_confirmatory_seed_is_above_every_committed_run():
    import json
    from pathlib import Path

    store = json.loads((Path(__file__).resolve().parents[2] / "data" / "run_store.json").read_text(encoding="utf-8"))
    used = [r["seed"] for r in store["runs"].values() if isinstance(r.get("seed"), int)]
    assert used and max(used) < C.CONFIRM_SEED


# ------------------------------------------------------------------ registration in git


def _git(root, *args):
    import subprocess

    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.org")
    _git(tmp_path, "config", "user.name", "t")
    data = tmp_path / "data"
    data.mkdir()
    plan = plan_for([effect_claim()], budget=10_000)
    C.register(plan, data)
    return tmp_path, data


def test_a_plan_must_be_committed_before_training_and_is_never_replaced(repo):
    root, data = repo
    with pytest.raises(C.ConfirmError, match="not committed"):
        C.registered(root, data)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "register")
    got = C.registered(root, data)
    assert got["claims"]["gap"]["bought"] and len(got["registered_commit"]) == 40
    with pytest.raises(C.ConfirmError, match="never replaced"):
        C.register(plan_for([effect_claim()], budget=1), data)


def test_a_plan_changed_after_registration_is_refused_even_when_committed(repo):
    import json

    root, data = repo
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "register")
    path = data / C.PLAN_FILE
    plan = json.loads(path.read_text(encoding="utf-8"))
    plan["claims"]["gap"]["seeds"] += 3  # more seeds after registration
    path.write_text(json.dumps(plan), encoding="utf-8")
    with pytest.raises(C.ConfirmError, match="differs from its committed version"):
        C.registered(root, data)
    _git(root, "commit", "-qam", "more seeds")
    with pytest.raises(C.ConfirmError, match="changed after registration"):
        C.registered(root, data)


def test_the_runs_are_fixed_at_registration():
    from attnlab.lab.runs import Run, Scale

    scale = Scale.make(True)

    class Entry:
        id = "e"

        def __init__(self, names):
            self.names = names

        def seed_runs(self, scale, seed, cid):
            return [Run(f"{n}_s{seed}", scale.cfg(seed=seed)) for n in self.names]

    plan = {
        "seed_start": C.CONFIRM_SEED,
        "claims": {"a": {"experiment": "e", "seeds": 2, "bought": True}},
        "runs": {"e": [f"x_s{C.CONFIRM_SEED}", f"x_s{C.CONFIRM_SEED + 1}"]},
    }
    runs = C.planned_runs(plan, [Entry(["x"])], scale)
    assert [r.name for r in runs["e"]] == plan["runs"]["e"]
    assert [s for s, _ in C.batches(runs)] == [C.CONFIRM_SEED, C.CONFIRM_SEED + 1]
    with pytest.raises(C.ConfirmError, match="differ from the registered"):
        C.planned_runs(plan, [Entry(["x", "y"])], scale)


@pytest.mark.slow
def test_the_round_trains_and_judges_once_on_its_own_seeds(tmp_path):
    """End to end on short runs (10 steps, full widths): register, train in one-seed batches, judge with
    the entries' own measure and judge. The case's claims come from a case document of the confirmatory
    seeds only; the KV-cache claim from its runs. (About 4 minutes on 2 cores.)"""
    import json
    import subprocess

    from attnlab.claims_registry import effective_spec, spec_key
    from attnlab.lab import EXPERIMENTS
    from attnlab.lab.runs import Scale

    root, data = tmp_path, tmp_path / "data"
    data.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.org")
    _git(root, "config", "user.name", "t")
    scale = Scale(quick=False, steps=10)
    reg = json.loads((Path(C.__file__).resolve().parents[3] / "data" / "claims_registry.json").read_text("utf-8"))
    by_id = {e.id: e for e in EXPERIMENTS}
    claims, runs = {}, {}
    for cid, exp, n in (("small_gap_small", "case", 2), ("gqa_small_loss", "kv_cache", 2)):
        spec = spec_key(effective_spec(reg["claims"][cid]))
        claims[cid] = {"experiment": exp, "seeds": n, "power": 0.9, "core_s": 1.0, "bought": True, "why": "",
                       "spec": spec, "spec_sha256": C.spec_digest(spec)}  # fmt: skip
        runs.setdefault(exp, set()).update(
            r.name for i in range(n) for r in by_id[exp].seed_runs(scale, C.CONFIRM_SEED + i, cid)
        )
    plan = {"kind": "confirmatory_plan", "frozen": "x", "seed_start": C.CONFIRM_SEED, "budget_core_s": 9.0,
            "spent_core_s": 2.0, "runs": {k: sorted(v) for k, v in runs.items()}, "claims": claims}  # fmt: skip
    (data / C.PLAN_FILE).write_text(json.dumps(plan), encoding="utf-8")
    with pytest.raises(C.ConfirmError, match="not committed"):
        C.train(root, data, scale=scale)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "register")
    C.train(root, data, scale=scale, max_batches=1)  # interrupted after one seed
    with pytest.raises(C.ConfirmError, match="not finished"):
        C.judge_round(root, data, scale=scale)
    ledger = C.train(root, data, scale=scale)  # resumes: the first seed's runs are reused
    assert len(ledger["runs"]) == len({n for v in runs.values() for n in v})
    doc = C.judge_round(root, data, scale=scale)
    assert set(doc["claims"]) == {"small_gap_small", "gqa_small_loss"}
    for c in doc["claims"].values():
        assert c["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE") and c["holm"] is not None
    assert len(doc["claims"]["small_gap_small"]["inputs"]["val_gap"]) == 2
    assert subprocess.run(["git", "-C", str(root), "status", "--porcelain", "data/confirmatory_plan.json"],
                          capture_output=True, text=True).stdout == ""  # fmt: skip


# ---------------------------------------------------------------- what the reports show


def _round_copy(tmp_path, ledger_runs=0):
    """The committed plan in a fresh data folder, with ``ledger_runs`` of its runs in the ledger."""
    import json

    from attnlab.corpus import REPO_ROOT

    data = tmp_path / "data"
    (data / "confirmatory").mkdir(parents=True)
    plan = json.loads((REPO_ROOT / "data" / C.PLAN_FILE).read_text(encoding="utf-8"))
    (data / C.PLAN_FILE).write_text(json.dumps(plan), encoding="utf-8")
    names = sorted({n for ns in plan["runs"].values() for n in ns})[:ledger_runs]
    (data / C.LEDGER_FILE).write_text(
        json.dumps({"kind": "confirmatory_progress", "runs": {n: {} for n in names}}), encoding="utf-8"
    )
    return data, plan


def test_the_reports_show_each_book_claim_in_the_round_or_why_not(tmp_path):
    data, plan = _round_copy(tmp_path, ledger_runs=5)
    got = C.standing(data)
    assert got["trained"] == 5 and got["runs"] == len({n for ns in plan["runs"].values() for n in ns})
    assert set(got["claims"]) == set(plan["claims"])
    for cid, c in plan["claims"].items():
        row = got["claims"][cid]
        if c["bought"] and c["seeds"]:
            assert row["status"] == "pending" and f"{c['seeds']} fresh seeds" in row["text"]
        elif c["bought"]:
            assert row["status"] == "exact"
        else:
            assert row["status"] in C.WHY_NOT and "not confirmed" in row["text"]
    assert got["claims"]["lr_book_converges_fastest"]["status"] == C.BEYOND_BUDGET
    assert got["claims"]["temp_goes_down"]["status"] == C.NO_SEEDS
    # the texts do not move with the training: a report rebuilt mid-round is the same page
    later, _ = _round_copy(tmp_path / "later", ledger_runs=40)
    assert {k: r["text"] for k, r in C.standing(later)["claims"].items()} == {
        k: r["text"] for k, r in got["claims"].items()
    }
    assert "is training" in C.headline(got, {}) and C.standing(tmp_path / "nowhere") is None


def test_the_headline_counts_the_confirmatory_verdicts(tmp_path):
    import json

    data, plan = _round_copy(tmp_path)
    bought = [cid for cid, c in plan["claims"].items() if c["bought"] and c["seeds"]]
    verdicts = {cid: {"verdict": "PASS", "holm": "PASS", "p": 0.001} for cid in bought}
    verdicts[bought[0]] = {"verdict": "PASS", "holm": "INCONCLUSIVE", "p": 0.03}  # Holm's, not the raw verdict, counts
    verdicts[bought[1]] = {"verdict": "FAIL", "holm": "FAIL", "p": 0.9}

    def judged(claims: dict) -> dict:
        (data / C.VERDICTS_FILE).write_text(
            json.dumps({"kind": "confirmatory_verdicts", "claims": claims}), encoding="utf-8"
        )
        return C.standing(data)

    got = judged(verdicts)
    exploratory = {cid: "PASS" for cid in bought}
    line = C.headline(got, exploratory)
    n = len(bought)
    assert f"{n - 2} PASS after Holm, 1 FAIL, 1 INCONCLUSIVE" in line
    assert f"{n - 2} of the {n} exploratory PASSes confirmed" in line
    assert f"{n - 2} of {n} PASS after Holm" in C.headline(got, exploratory, short=True)
    # an every-seed check has no p and never faced Holm: it is counted apart, not as surviving Holm
    verdicts[bought[2]] = {"verdict": "PASS", "holm": "PASS", "p": None}
    got = judged(verdicts)
    assert f"{n - 2} PASS ({n - 3} after Holm, 1 every-seed), 1 FAIL" in C.headline(got, exploratory)
    assert f"{n - 2} of {n} PASS ({n - 3} after Holm, 1 every-seed)" in C.headline(got, exploratory, short=True)

    from attnlab.report.lab_book import confirm_text

    assert "differs from the exploratory verdict" in confirm_text({"id": bought[1], "verdict": "PASS"}, got)
    assert "differs" not in confirm_text({"id": bought[2], "verdict": "PASS"}, got)
    assert "not in the confirmatory round" in confirm_text({"id": "nowhere", "kind": "book"}, got)
    (data / C.VERDICTS_FILE).write_text(json.dumps({"kind": "something else"}), encoding="utf-8")
    with pytest.raises(C.ConfirmError, match="confirm-judge"):
        C.standing(data)
