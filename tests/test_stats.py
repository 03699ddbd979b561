"""The statistical judge: each verdict can happen, and the rules' operating characteristics.

Simulations use a fixed NumPy generator, so they are deterministic; their bounds
leave room for Monte-Carlo error (2,000 trials: sd of a 5% rate is 0.5%). The effect rule's are
run on 20,000 claims at once through ``stats.effect_decide``, the function ``stats.effect`` judges
with (tests/test_stats_family.py checks the two agree claim by claim).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab import stats as S
from attnlab import verdicts as V

TRIALS = 2000
EFFECT_TRIALS = 20_000


def effect_passes(rng, mean: float, n: int, sesoi: float = 1e-9) -> float:
    """The share of EFFECT_TRIALS claims of n seeds drawn from N(mean, 1) that the fixed effect rule PASSes."""
    xs = rng.normal(mean, 1.0, (EFFECT_TRIALS, n))
    none = np.array([], dtype=int)
    code, _, _ = S.effect_decide(
        xs.mean(axis=1), xs.std(axis=1, ddof=1), n, sesoi=sesoi, level=S.ONE_SIDED, ks=none, ks_levels=none
    )
    return float((code == 1).mean())


# ------------------------------------------------------------------ each verdict happens
def test_effect_pass_fail_inconclusive():
    assert S.effect([0.30, 0.32, 0.29, 0.31], sesoi=0.05).verdict == S.PASS
    assert S.effect([-0.30, -0.32, -0.29], sesoi=0.05).verdict == S.FAIL  # wrong side
    assert S.effect([0.001, 0.002, 0.0015, 0.0012], sesoi=0.05).verdict == S.FAIL  # below the SESOI
    j = S.effect([0.077, -0.014, 0.088], sesoi=0.01)  # MQA − MHA over three seeds
    assert j.verdict == S.INCONCLUSIVE and j.n_needed and j.n_needed > 3
    assert S.effect([0.3, 0.31, 0.29], direction=-1, sesoi=0.05).verdict == S.FAIL
    assert S.effect([-0.3, -0.31, -0.29], direction=-1, sesoi=0.05).verdict == S.PASS


def test_value_pass_fail_inconclusive():
    assert S.value([0.95, 0.96, 0.94, 0.95], 0.95, tol=0.1).verdict == S.PASS
    assert S.value([0.50, 0.51, 0.49], 0.95, tol=0.1).verdict == S.FAIL
    j = S.value([0.24, 0.05, 0.04], 0.17, tol=0.085)  # the small gap: the spread is wider than the question
    assert j.verdict == S.INCONCLUSIVE and j.n_needed is None
    j = S.value([0.93, 0.99, 0.90, 0.97], 0.95, tol=0.12)  # narrows with more seeds
    assert j.verdict == S.INCONCLUSIVE and j.n_needed and j.n_needed > 4


def test_band_and_every():
    assert S.band([0.60, 0.62, 0.61], 0.57, 0.68).verdict == S.PASS
    assert S.band([0.85, 0.86, 0.84], 0.57, 0.68).verdict == S.FAIL
    assert S.band([0.85, 0.67, 0.85], 0.57, 0.68).verdict == S.INCONCLUSIVE
    assert S.every([0.12, 0.15, 0.18], 0.1, 0.2).verdict == S.PASS
    assert S.every([0.24, 0.05, 0.04], 0.1, 0.2).verdict == S.FAIL


def test_equivalence():
    assert S.equivalence([0.01, -0.01, 0.005, 0.0], 0.1).verdict == S.PASS
    assert S.equivalence([0.30, 0.31, 0.29], 0.1).verdict == S.FAIL
    assert S.equivalence([0.10, -0.05, 0.2], 0.1).verdict == S.INCONCLUSIVE


def test_one_seed_is_inconclusive_and_all_of_combines():
    for j in (S.effect([0.5], sesoi=0.1), S.value([0.5], 0.5, tol=0.1), S.band([0.6], 0.5, 0.7)):
        assert j.verdict == S.INCONCLUSIVE
    p, f, i = S.exact(True), S.exact(False), S.effect([0.1, -0.1, 0.05], sesoi=0.01)
    assert S.all_of([p, p]).verdict == S.PASS
    assert S.all_of([p, f, i]).verdict == S.FAIL
    assert S.all_of([p, i]).verdict == S.INCONCLUSIVE
    # the seeds a statement stands on: an exact part (arithmetic, n = 1) counts none
    eight = S.effect([0.05, 0.04, 0.06, 0.05, 0.03, 0.07, 0.05, 0.04], sesoi=0.01)
    assert S.all_of([p, eight]).n == 8 and S.all_of([p, i, eight]).n == 3 and S.all_of([p, p]).n == 1


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="not finite"):
        S.effect([0.1, float("nan")], sesoi=0.1)
    with pytest.raises(ValueError, match="direction"):
        S.effect([0.1, 0.2], direction=0, sesoi=0.1)
    with pytest.raises(ValueError, match="tol"):
        S.value([0.1, 0.2], 0.1, tol=0)
    with pytest.raises(ValueError, match="verdict"):
        S.Judgement("MAYBE", "effect")


# ------------------------------------------------------------ operating characteristics
@pytest.mark.parametrize("n", [3, 5, 10])
def test_effect_false_positive_rate_at_most_five_percent(n):
    # the smallest SESOI is the worst case: a larger one turns some PASSes into FAILs, never a FAIL into a PASS
    rate = effect_passes(np.random.default_rng(n), 0.0, n)
    assert 0.018 <= rate <= 0.032  # the 95% two-sided interval: 2.5% in the stated direction (sd 0.11%)


def test_effect_power_at_d3_over_five_seeds():
    assert effect_passes(np.random.default_rng(7), 3.0, 5, sesoi=0.5) >= 0.9  # noncentral t: about 0.97


def test_value_false_fail_rate_near_five_percent():
    """The book's run drawn from our own distribution lies outside the one-run prediction interval 5% of the time."""
    rng = np.random.default_rng(3)
    fails = 0
    for _ in range(TRIALS):
        xs = rng.normal(0, 1, 4)
        fails += S.value(xs.tolist(), float(rng.normal(0, 1)), tol=100).verdict == S.FAIL
    assert 0.03 <= fails / TRIALS <= 0.07


def test_n_needed_reaches_the_promised_power():
    """Seeds proposed for an INCONCLUSIVE effect give about 80% power when the effect is as observed."""
    need = S.seeds_for(0.5, 1.0)
    assert 0.77 <= effect_passes(np.random.default_rng(11), 0.5, need) <= 0.84
    assert S.power_t(need - 1, 0.5) < S.POWER <= S.power_t(need, 0.5)


samples = st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=8).filter(
    lambda xs: np.std(xs) > 1e-6 * (1 + max(abs(x) for x in xs))
)


def _inflate(xs, k):
    m = sum(xs) / len(xs)
    return [m + k * (x - m) for x in xs]


@settings(max_examples=300, deadline=None)
@given(xs=samples, k=st.floats(1.0, 20.0), book=st.floats(-10, 10), tol=st.floats(0.01, 10), lo=st.floats(-10, 10))
def test_more_spread_never_turns_a_non_pass_into_pass(xs, k, book, tol, lo):
    hi = lo + tol
    rules = [
        lambda v: S.effect(v, sesoi=tol / 10),
        lambda v: S.effect(v, direction=-1, sesoi=tol / 10),
        lambda v: S.value(v, book, tol=tol),
        lambda v: S.band(v, lo, hi),
        lambda v: S.every(v, lo, hi),
        lambda v: S.equivalence(v, tol),
    ]
    wide = _inflate(xs, k)
    for rule in rules:
        if rule(xs).verdict != S.PASS:
            assert rule(wide).verdict != S.PASS


def test_a_run_that_does_not_collapse_cannot_help_a_collapse_claim():
    """The probe of issue 21: one seed far from the book (logit std 1.5 instead of thousands) widens the
    interval; the value claim must not pass because of it."""
    collapsed = [3541.0, 3000.0, 4100.0]
    with_dud = [1.5, 3000.0, 4100.0]
    before = S.value(collapsed, 5477, tol=0.25 * 5477)
    after = S.value(with_dud, 5477, tol=0.25 * 5477)
    assert before.verdict != S.PASS or after.verdict != S.PASS
    assert after.verdict != S.PASS


# ------------------------------------------------------------------------- the records
def test_claim_record_keeps_what_the_judge_used():
    j = S.effect([0.077, -0.014, 0.088], sesoi=0.01)
    c = V.claim("mqa", "§1.8.8", "MQA loses some quality", j, inputs={"MQA_minus_MHA": [0.077, -0.014, 0.088]})
    assert c["verdict"] == S.INCONCLUSIVE and c["pass"] is False and c["rule"] == "effect"
    assert c["inputs"]["MQA_minus_MHA"] == [0.077, -0.014, 0.088] and c["n"] == 3 and c["n_needed"] == j.n_needed
    assert "0.077" in c["measured"] and "mean" in c["measured"] and "95% CI" in c["measured"]
    assert c["interval"][0] < 0 < c["interval"][1]
    with pytest.raises(ValueError, match="kind"):
        V.claim("x", "§1", "s", j, kind="guess")


def test_counts_and_old_claims():
    claims = [
        {"kind": "book", "verdict": "PASS"},
        {"kind": "book", "verdict": "INCONCLUSIVE"},
        {"kind": "book", "pass": False},  # written before verdicts
        {"kind": "sanity", "pass": True},
    ]
    c = V.counts(claims)
    assert c["book"]["PASS"] == 1 and c["book"]["FAIL"] == 1 and c["book"]["INCONCLUSIVE"] == 1
    assert V.count_line(claims).startswith("书中论断 / book claims: 1 PASS, 1 FAIL, 1 INCONCLUSIVE")
    assert "sanity: 1 PASS" in V.count_line(claims)


def test_judgement_dict_is_json_ready():
    d = S.value([1.0, 1.1, 0.9], 1.0, tol=1.0).to_dict()
    assert d["verdict"] == S.PASS and isinstance(d["interval"], list) and all(math.isfinite(x) for x in d["interval"])
