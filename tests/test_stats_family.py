"""p-values of the judge's rules and Holm's correction within the lab book's families.

Each rule's ``p`` is checked against scipy's own test (``ttest_1samp``) and against the rule's
verdict: PASS implies p <= level, and for effect, band and equivalence p <= level is the PASS
(unless the effect lies wholly below its SESOI, a FAIL). Simulations use fixed generators.
"""

import json

import numpy as np
import pytest
from scipy import stats as st

from attnlab import stats as S
from attnlab import verdicts as V
from attnlab.corpus import REPO_ROOT


def samples(seed=0, count=300):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(2, 12))
        yield (rng.normal(rng.normal(0, 1), rng.uniform(0.05, 1.5), n)).tolist()


# ------------------------------------------------------------------ each rule's p
@pytest.mark.parametrize("direction", [+1, -1])
def test_effect_p_is_the_one_sided_t_test_against_zero(direction):
    for xs in samples(1):
        j = S.effect(xs, direction=direction, sesoi=1e-9)
        ref = st.ttest_1samp(xs, 0.0, alternative="greater" if direction > 0 else "less").pvalue
        assert j.p == pytest.approx(ref, rel=1e-9, abs=1e-15)
        assert j.level == 0.025
        # with a SESOI this small the FAIL is "wholly on the wrong side": PASS is exactly p < 2.5%
        assert (j.verdict == S.PASS) == (j.p < 0.025), (xs, j)


def test_effect_below_its_sesoi_fails_whatever_its_p():
    j = S.effect([0.001, 0.002, 0.0015, 0.0012], sesoi=0.05)
    assert j.verdict == S.FAIL and j.p < 0.025  # real, but too small to matter: the FAIL comes first


def test_equivalence_p_is_tost():
    for xs in samples(2):
        margin = 0.5
        j = S.equivalence(xs, margin)
        lo = st.ttest_1samp(xs, -margin, alternative="greater").pvalue
        hi = st.ttest_1samp(xs, margin, alternative="less").pvalue
        assert j.p == pytest.approx(max(lo, hi), rel=1e-9, abs=1e-15)
        assert j.level == 0.05 and (j.verdict == S.PASS) == (j.p < 0.05)


def test_band_p_is_two_one_sided_tests():
    for xs in samples(3):
        j = S.band(xs, -0.5, 0.8)
        lo = st.ttest_1samp(xs, -0.5, alternative="greater").pvalue
        hi = st.ttest_1samp(xs, 0.8, alternative="less").pvalue
        assert j.p == pytest.approx(max(lo, hi), rel=1e-9, abs=1e-15)
        assert (j.verdict == S.PASS) == (j.p <= 0.025)


def test_value_p_is_the_predictive_test_behind_its_pass():
    """PASS means one run is predicted within book ± tol at 2.5% each side; a FAIL is the book's value
    outside the one-run prediction interval, whatever this p."""
    seen = set()
    for xs in samples(4):
        book, tol = 0.2, 1.0
        j = S.value(xs, book, tol=tol)
        n, m, sd = len(xs), np.mean(xs), np.std(xs, ddof=1)
        scale = sd * np.sqrt(1 + 1 / n)
        ref = max(st.t.sf((m - (book - tol)) / scale, n - 1), st.t.cdf((m - (book + tol)) / scale, n - 1))
        assert j.p == pytest.approx(ref, rel=1e-9, abs=1e-15)
        if j.verdict != S.FAIL:
            assert (j.verdict == S.PASS) == (j.p <= 0.025)
        seen.add(j.verdict)
    assert seen == {S.PASS, S.FAIL, S.INCONCLUSIVE}


def test_rules_that_test_nothing_have_no_p_and_parts_combine():
    assert S.exact(True).p is None and S.every([1.0, 2.0], 0, 3).p is None
    assert S.reported("x").p is None and S.na("x").p is None
    assert S.effect([0.3], sesoi=0.01).p == 1.0  # one seed: no test can reject
    a, b = S.effect([0.3, 0.31, 0.29], sesoi=0.01), S.equivalence([0.01, -0.02, 0.0], 0.1)
    j = S.all_of([a, b, S.exact(True)])
    assert j.p == max(a.p, b.p) and j.level == 0.025  # intersection-union: the weakest part
    assert S.all_of([S.exact(True), S.every([1.0], 0, 2)]).p is None


def test_claim_records_p_and_json_is_ready():
    c = V.claim("x", "§1", "s", S.effect([0.3, 0.31, 0.29], sesoi=0.01), inputs={"d": [0.3, 0.31, 0.29]})
    assert c["p"] == float(f"{c['p']:.4g}") and 0 < c["p"] < 0.025
    json.dumps(c)
    assert "at_levels" not in S.effect([0.3, 0.31, 0.29], sesoi=0.01).to_dict()


# ------------------------------------------------------------------ Holm
def test_holm_by_hand():
    # sorted: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop
    assert S.holm([0.01, 0.04, 0.03, 0.005], 0.05) == [True, False, False, True]
    assert S.holm([], 0.05) == [] and S.holm([0.05], 0.05) == [True]


def test_holm_holds_the_family_wise_rate_and_beats_bonferroni():
    rng = np.random.default_rng(7)
    any_false, gained = 0, 0
    for _ in range(3000):
        ps = list(rng.uniform(size=20))  # 20 true nulls
        any_false += any(S.holm(ps, 0.025))
        mixed = list(rng.uniform(size=10)) + list(rng.uniform(0, 0.004, size=10))
        gained += sum(S.holm(mixed, 0.025)) - sum(p <= 0.025 / 20 for p in mixed)
    # binomial sd at 2.5% over 3000 families is 0.29%: the bound leaves 3 sd
    assert any_false / 3000 <= 0.025 + 3 * 0.0029
    assert gained > 0  # step-down rejects at least what Bonferroni does, and more


def claim_of(cid, kind, verdict, p):
    return {"id": cid, "kind": kind, "verdict": verdict, "pass": verdict == "PASS", "p": p}


def test_with_holm_families_and_what_it_may_change():
    claims = [
        claim_of("strong", "book", "PASS", 0.0001),
        claim_of("weak", "book", "PASS", 0.02),  # passes alone, not in a family of 3
        claim_of("fail", "book", "FAIL", 0.9),
        claim_of("arith", "book", "PASS", None),  # exact: no test, kept
        claim_of("pred", "prediction", "PASS", 0.02),  # its own family of one: survives
        claim_of("check", "sanity", "PASS", 0.02),  # in no family
    ]
    out = {c["id"]: c for c in V.with_holm(claims)}
    assert [out[k]["holm"] for k in ("strong", "weak", "fail", "arith", "pred")] == [
        "PASS",
        "INCONCLUSIVE",
        "FAIL",
        "PASS",
        "PASS",
    ]
    assert "holm" not in out["check"]
    assert all(out[c["id"]]["verdict"] == c["verdict"] for c in claims)  # the verdict itself stays
    assert "holm" not in claims[0]  # copies: the entries are not touched
    line = V.count_line(list(out.values()))
    # Holm counts the tested PASSes only: the untested one is its own count
    assert line.startswith("书中论断 / book claims: 3 PASS (检验过的 / tested 2，Holm 后 / after Holm 1；未检验 / untested 1")


def test_a_question_is_reported_counted_apart_and_in_no_family():
    q = V.claim("q", "§1.2", "what if we train 10000 steps?", S.reported("gap 0.3 at 10000 steps"), kind="question")
    assert q["verdict"] == "REPORTED" and q["kind"] == "question" and q["p"] is None
    out = V.with_holm([q, claim_of("b", "book", "PASS", 0.001)])
    assert "holm" not in out[0]  # a question tests nothing: in no family
    assert V.counts(out)["question"]["REPORTED"] == 1 and V.counts(out)["book"]["PASS"] == 1
    assert "问题 / questions: 1 REPORTED" in V.count_line(out)
    with pytest.raises(ValueError, match="REPORTED"):  # never a PASS or FAIL of the book
        V.claim("q", "§1.2", "what if …?", S.effect([1.0, 2.0, 3.0], sesoi=0.1), kind="question")


# ------------------------------------------------------------------ the vectorised rule the decide loop simulates
def test_effect_decide_and_seeds_for_many_are_the_rule_itself():
    rng = np.random.default_rng(11)
    for _ in range(200):
        n, sesoi = int(rng.integers(2, 12)), float(rng.choice([1e-9, 0.1, 0.5]))
        xs = rng.normal(rng.normal(0.2, 0.4), 1.0, n)
        j = S.effect(xs.tolist(), sesoi=sesoi)
        m, sd = xs.mean(), xs.std(ddof=1)
        none = np.array([], dtype=int)
        code, p, _ = S.effect_decide(m, sd, n, sesoi=sesoi, level=S.ONE_SIDED, ks=none, ks_levels=none)
        assert S.CODES[int(code[0])] == j.verdict and p[0] == pytest.approx(j.p, rel=1e-9, abs=1e-15)
        if j.verdict == S.INCONCLUSIVE:
            want = S.seeds_for(max(m, sesoi), sd)
            got = int(S.seeds_for_many(max(m, sesoi), sd, limit=40)[0])
            assert got == (want if want is not None and want <= 40 else 0)


# ------------------------------------------------------------------ the committed book
def test_the_committed_book_carries_p_and_holm():
    book = json.loads((REPO_ROOT / "data" / "lab_book.json").read_text(encoding="utf-8"))
    claims = [c for s in book["sections"] for c in s["claims"]]
    fam = [c for c in claims if c["kind"] in V.FAMILIES]
    assert fam and all("holm" in c for c in fam)
    assert all("holm" not in c for c in claims if c["kind"] == "sanity")
    tested = [c for c in fam if c.get("rule") in ("effect", "value", "band", "equivalence")]
    assert tested and all(isinstance(c["p"], float) and 0 <= c["p"] <= 1 for c in tested)
    # Holm only ever turns a PASS into INCONCLUSIVE, and the count line says how many survive
    assert all(c["holm"] == c["verdict"] or (c["verdict"], c["holm"]) == ("PASS", "INCONCLUSIVE") for c in fam)
    again = {c["id"]: c["holm"] for c in V.with_holm(claims) if "holm" in c}
    assert again == {c["id"]: c["holm"] for c in fam}
    # ... counting only the PASSes that faced the correction (a p), the untested ones apart
    book_pass = [c for c in fam if c["kind"] == "book" and c["verdict"] == "PASS"]
    tested_pass = [c for c in book_pass if isinstance(c.get("p"), float)]
    survive = sum(c["holm"] == "PASS" for c in tested_pass)
    line = book["summary"]["count_line"]
    assert f"tested {len(tested_pass)}，Holm 后 / after Holm {survive}；" in line
    assert f"untested {len(book_pass) - len(tested_pass)}；" in line
    md = (REPO_ROOT / "reports" / "lab_book.md").read_text(encoding="utf-8")
    assert "| p | Holm | 顺序 / sequential |" in md and "Holm" in md.split("## 判定规则")[1][:4000]


def test_headline_counts_tested_passes_and_shared_numbers_once():
    """Holm's count is of tested PASSes only; the untested (exact, every) are their own count; claims
    whose inputs hold the same per-seed numbers (to the 4 digits an entry may store) are one finding."""
    from attnlab import stats as S
    from attnlab import verdicts as V

    gaps = [1.0443, 0.8818, 0.8447, 1.0256, 0.9826, 0.846]
    a = V.claim("a", "§", "a", S.effect(gaps, direction=+1, sesoi=0.39), inputs={"gap": gaps})
    rounded = [float(f"{g:.4g}") for g in gaps]  # another entry storing the same seeds' gaps rounded
    b = V.claim("b", "§", "b", S.effect(rounded, direction=+1, sesoi=0.1), inputs={"gap_d256": rounded})
    other = [0.5, 0.6, 0.55]
    c = V.claim("c", "§", "c", S.effect(other, direction=+1, sesoi=0.1), inputs={"x": other})
    d = V.claim("d", "§", "d", S.exact(True))
    claims = V.with_holm([a, b, c, d])
    assert [V.verdict_of(x) for x in claims] == ["PASS"] * 4
    assert V.shared_findings(claims) == [["a", "b"], ["c"], ["d"]]
    n = V.pass_counts(claims)
    assert n == {"passed": 4, "tested": 3, "holm": 3, "untested": 1, "distinct": 3}
    # a list that differs beyond rounding is another finding
    shifted = [g + 0.01 for g in gaps]
    e = V.claim("e", "§", "e", S.effect(shifted, direction=+1, sesoi=0.1), inputs={"gap": shifted})
    assert V.shared_findings([a, e]) == [["a"], ["e"]]
    line = V.count_line(claims)
    assert "tested 3" in line and "untested 1" in line and "distinct 3" in line
