"""One statistical judge for every claim of attnlab: pure functions of numbers.

A claim of the chapter is judged from per-seed numbers by one of a few rules,
each returning a :class:`Judgement` (verdict, the interval it rests on, n, the
seeds a decision would need, and the rule in words). Verdicts:

  PASS          the data support the statement
  FAIL          the data contradict it (or show the effect is below the smallest
                effect of interest)
  INCONCLUSIVE  neither, at this many seeds; ``n_needed`` says how many would do
  REPORTED      the chapter asks a question; we report the answer
  NA            not testable here (with the reason), e.g. a GPU statement on a CPU

The rules (every interval is a Student-t interval over seeds; alpha = 0.05):

  effect(values, direction, sesoi)   per-seed paired differences. PASS when the
      95% interval of the mean excludes 0 in the stated direction; FAIL when it
      lies wholly on the wrong side or wholly below the smallest effect of
      interest ``sesoi`` (fixed before looking); else INCONCLUSIVE.
  value(values, book, tol)           the book's number is one run: FAIL when it
      lies outside the 95% prediction interval for one run, mean ± t·sd·√(1+1/n);
      PASS when that whole interval lies within book ± ``tol`` (``tol`` fixed
      before looking: the largest uncertainty that still says something); inside
      but wider: INCONCLUSIVE. A wider spread can never turn a value claim into PASS.
  band(values, lo, hi)               the 95% interval of the mean against the
      book's band, never a widened band: inside PASS, wholly outside FAIL.
  every(values, lo, hi)              every seed's value inside the band (no widening); at fewer than
      MIN_SEEDS seeds INCONCLUSIVE like every other rule, unless ``one_run`` quotes the chapter's
      words that speak of one run (then one run decides, as the chapter's one run did).
  equivalence(values, margin)        two one-sided tests ("changes little"): the
      90% interval inside ±margin PASS, wholly outside it FAIL.
  exact(ok)                          deterministic arithmetic (formulas, byte counts).

Every rule that tests a hypothesis also gives ``p``, the p-value of the test whose rejection is
its PASS (each rule's docstring says which), and ``level``, the one-sided level that test is held
to alone: PASS implies ``p <= level`` (effect, value, band: 0.025; equivalence: 0.05). ``every``,
``exact``, ``reported`` and ``na`` test nothing (p None). :func:`holm` corrects a family of such
p-values (attnlab.verdicts.with_holm); :mod:`attnlab.sequential` judges a claim over its looks.

Seeds that disagree more widen every interval, so they can only move a verdict
towards INCONCLUSIVE, never towards PASS (tests/test_stats.py checks this by
simulation, with the rules' false-positive rate and power).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from scipy import stats as _st

PASS, FAIL, INCONCLUSIVE, REPORTED, NA = "PASS", "FAIL", "INCONCLUSIVE", "REPORTED", "NA"
VERDICTS = (PASS, FAIL, INCONCLUSIVE, REPORTED, NA)
ALPHA = 0.05
POWER = 0.80
MIN_SEEDS = 3  # the fewest seeds that estimate a spread worth an interval
ONE_SEED = "one seed has no spread: at least 3 seeds to judge it"
MAX_SEEDS = 1000  # n_needed beyond this is reported as None ("more seeds will not settle it")
ONE_SIDED = ALPHA / 2  # the level of a one-sided test behind a two-sided 95% interval

# levels(ks, full) -> the one-sided level a look at each of ``ks`` seeds is held to, for a test whose
# level alone is ``full`` (the fixed rule: ``full`` itself; attnlab.sequential: what its spending allows)
LevelOf = Callable[[np.ndarray, float], np.ndarray]

METHOD = (
    "判定规则 / how verdicts are reached: 每条论断用每个种子的一个数。效应（effect）：种子配对差的均值的 95% t 区间"
    "不含 0 且方向与书一致为 PASS；整个区间在反方向、或整个低于事先定下的最小有意义效应（SESOI）为 FAIL；否则 "
    "INCONCLUSIVE，并给出 80% 把握所需的种子数。数值（value）：书中的数是一次运行，落在单次运行的 95% 预测区间"
    "（均值 ± t·sd·√(1+1/n)）之外为 FAIL；整个预测区间落在书中值 ± 事先定下的容差之内为 PASS；其余为 INCONCLUSIVE。"
    "区间（band）：均值的 95% 区间与书中区间比较，不加宽。等价（equivalence）：两个单侧检验，90% 区间落在 ±margin 内"
    "为 PASS。种子之间越分散，区间越宽：只会让判定变成 INCONCLUSIVE，永远不会让它变成 PASS。 / Each claim uses one "
    "number per seed. effect: PASS when the 95% t-interval of the mean paired difference excludes 0 in the stated "
    "direction, FAIL when it lies wholly on the wrong side or below the smallest effect of interest fixed "
    "beforehand, else INCONCLUSIVE with the seeds 80% power would need. value: the book's number is one run; "
    "FAIL outside the 95% prediction interval for one run, PASS when that whole interval lies within the book's "
    "value ± a tolerance fixed beforehand, else INCONCLUSIVE. band: the mean's 95% interval against the book's band, never widened. "
    "equivalence: two one-sided tests at ±margin. More spread between seeds widens every interval: it can turn "
    "a verdict INCONCLUSIVE, never PASS."
)


@dataclass(frozen=True)
class Judgement:
    """What a rule concluded, and everything needed to see why."""

    verdict: str
    rule: str  # e.g. "effect", "value", "band", "equivalence", "exact", "reported", "na"
    n: int = 0
    estimate: float | None = None  # the mean (or the number judged)
    sd: float | None = None
    interval: tuple[float, float] | None = None  # the interval the verdict rests on
    n_needed: int | None = None  # seeds for a decision at 80% power (INCONCLUSIVE only)
    detail: str = ""  # the rule in words, with its numbers
    p: float | None = None  # p-value of the test whose rejection is this rule's PASS (None: no test)
    level: float | None = None  # the one-sided level that test is held to alone (PASS implies p <= level)
    # the rule again at other levels, for a look held to levels(...) (attnlab.sequential):
    # at_levels(levels) -> (verdict, seeds a decision would need); never stored
    at_levels: Callable[[LevelOf], tuple[str, int | None]] | None = field(default=None, compare=False, repr=False)
    # the specification the rule was called with, from code: {"rule", "params"} and the numbers it judged
    # ("values"), or for all_of its "parts"; attnlab.verdicts stores it in the claim (its ``spec``)
    spec: dict | None = field(default=None, compare=False, repr=False)
    # the verdict that n_needed prices: PASS, FAIL, or None (either, or unknown); all_of uses it
    toward: str | None = None

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def to_dict(self) -> dict:
        d = asdict(self)
        del d["at_levels"], d["spec"], d["toward"]
        d["interval"] = None if self.interval is None else [_r(self.interval[0]), _r(self.interval[1])]
        for k in ("estimate", "sd", "p"):
            d[k] = _r(d[k])
        return d


def _r(x: float | None, digits: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def _clean(values: Iterable[float | None]) -> list[float]:
    out = []
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool) or type(v).__name__ == "bool_" or not isinstance(v, numbers.Real):
            raise TypeError(f"a judged value is {type(v).__name__} ({v!r}), not a number")
        v = float(v)
        if not math.isfinite(v):
            raise ValueError(f"a judged value is not finite ({v}); a diverged run must be judged by its own claim")
        out.append(v)
    return out


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    xs = _clean(values)
    if not xs:
        raise ValueError("no values to judge")
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, sd


def t_crit(n: int, conf: float = 1 - ALPHA) -> float:
    """Two-sided Student-t critical value with n - 1 degrees of freedom."""
    return float(_st.t.ppf(0.5 + conf / 2, n - 1))


def mean_interval(values: Sequence[float], conf: float = 1 - ALPHA) -> tuple[float, float]:
    xs = _clean(values)
    m, sd = mean_sd(xs)
    h = mean_halfwidth(sd, len(xs), conf)
    return m - h, m + h


def power_t(n: int, d: float, alpha: float = ALPHA) -> float:
    """Chance that the (1 - alpha) t-interval of n values lies above 0 when the true standardised
    mean is d (noncentral t): the power of the effect rule."""
    if n < 2:
        return 0.0
    df = n - 1
    crit = _st.t.ppf(1 - alpha / 2, df)
    nc = abs(d) * math.sqrt(n)
    return float(1 - _st.nct.cdf(crit, df, nc))


def seeds_for(delta: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Smallest n whose 95% interval excludes 0 with ``power`` when the true mean is ``delta``."""
    if sd <= 0:
        return 2
    if delta <= 0:
        return None
    d = delta / sd
    n = 2
    while n <= MAX_SEEDS:
        if power_t(n, d, alpha) >= power:
            return n
        n = n + 1 if n < 50 else int(n * 1.1) + 1
    return None


def mean_halfwidth(sd: float, n: int, conf: float = 1 - ALPHA) -> float:
    """Half-width of the t-interval of the mean of n values with sample sd ``sd``."""
    return t_crit(n, conf) * sd / math.sqrt(n)


def _seeds_until(n: int, enough: Callable[[int], bool]) -> int | None:
    """The fewest seeds beyond ``n`` for which ``enough`` holds (None: not below MAX_SEEDS)."""
    return next((k for k in range(n + 1, MAX_SEEDS) if enough(k)), None)


def _spec(rule: str, xs: Sequence[float] | None = None, **params) -> dict:
    """A rule's specification: its name, its parameters (an unbounded end as "inf" / "-inf", since JSON
    has no infinity) and the numbers it judged."""
    out: dict = {"rule": rule, "params": {k: _param(v) for k, v in params.items()}}
    if xs is not None:
        out["values"] = [float(x) for x in xs]
    return out


def _param(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "inf", "-inf", "nan"
    return v


def param_value(v):
    """A stored parameter as the rule takes it ("inf" back to infinity)."""
    return float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v


def judge_spec(spec: dict, values: Sequence[float] | None = None) -> Judgement:
    """Judge ``values`` (default: the numbers the spec records) by the rule and parameters of ``spec``
    (a :class:`Judgement`'s ``spec``, or one stored with a claim or in the registry of claims). An
    all_of judges each part with its own. Raises ValueError for a spec that records no rule in code."""
    rule = spec.get("rule")
    params = {k: param_value(v) for k, v in (spec.get("params") or {}).items()}
    xs = list(values if values is not None else spec.get("values") or [])
    if rule == "all_of":
        parts = spec.get("parts") or []
        if not parts:
            raise ValueError("an all_of spec without parts")
        return all_of([judge_spec(p) for p in parts])
    if rule in RULE_FUNCTIONS:
        return RULE_FUNCTIONS[rule](xs, **params)
    if rule == "exact" and isinstance(spec.get("ok"), bool):  # arithmetic: the check it recorded
        return exact(spec["ok"], "recorded arithmetic check")
    if rule == "reported":
        return reported("reported")
    if rule == "na":
        return na("not testable here")
    raise ValueError(f"no rule in code to judge with: {rule!r}")


def _one_seed(rule: str, xs: list[float], level: float = ONE_SIDED) -> Judgement:
    """Fewer than two seeds: no spread to judge with; the fewest seeds that estimate one. Its test
    cannot reject, so its p is 1."""
    return Judgement(
        INCONCLUSIVE,
        rule,
        len(xs),
        xs[0] if xs else None,
        None,
        None,
        MIN_SEEDS,
        ONE_SEED,
        p=1.0,
        level=level,
        at_levels=lambda levels: (INCONCLUSIVE, MIN_SEEDS),
    )


# ------------------------------------------------------------------------------ p-values
def _z(x: float, se: float) -> float:
    """x / se as a test statistic; with no spread (se 0) the data say x's sign for certain."""
    if se > 0:
        return x / se
    return math.inf if x > 0 else -math.inf


def _sf(t: float, n: int) -> float:
    """P(T >= t) for Student's t with n - 1 degrees of freedom."""
    return float(_st.t.sf(t, n - 1))


def holm(ps: Sequence[float], level: float) -> list[bool]:
    """Holm's step-down procedure (Holm 1979): which of the hypotheses with p-values ``ps`` are
    rejected with the chance of rejecting any true one held to ``level``. The k-th smallest p is
    compared with level / (m - k + 1); the first that is not below stops the rejections."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [False] * len(ps)
    for k, i in enumerate(order):
        if ps[i] > level / (len(ps) - k):
            break
        out[i] = True
    return out


def seed_schedule(start: int, stop: int = MAX_SEEDS) -> np.ndarray:
    """The seed counts a price tries, as :func:`seeds_for` does: one by one to 50, then 10% steps."""
    out, n = [], max(2, start)
    while n <= stop:
        out.append(n)
        n = n + 1 if n < 50 else int(n * 1.1) + 1
    return np.array(out, dtype=int)


def effect_seeds(target, sd, ks: np.ndarray, levels: np.ndarray, power: float = POWER) -> np.ndarray:
    """For each (target, sd): the first of ``ks`` seeds at which the effect rule's one-sided test,
    held to ``levels`` (one per k), reaches ``power`` when the true mean is ``target``; 0 where none
    does. Vectorised (numpy): the decide loop and its simulation call this same function."""
    target = np.atleast_1d(np.asarray(target, dtype=float))
    sd = np.atleast_1d(np.asarray(sd, dtype=float))
    ks = np.asarray(ks, dtype=int)
    if ks.size == 0:
        return np.zeros(target.shape, dtype=int)
    df = ks - 1
    crit = _st.t.isf(np.asarray(levels, dtype=float), df)  # inf where nothing is left to spend
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(sd > 0, np.abs(target) / np.where(sd > 0, sd, 1.0), 0.0)
    pw = 1 - _st.nct.cdf(crit[None, :], df[None, :], d[:, None] * np.sqrt(ks)[None, :])
    ok = (pw >= power) & (target[:, None] > 0) & (sd[:, None] > 0) & np.isfinite(crit)[None, :]
    out = np.where(ok.any(axis=1), ks[ok.argmax(axis=1)], 0)
    return np.where((sd <= 0) & (target > 0), ks[0], out)


def seeds_for_many(delta, sd, limit: int = MAX_SEEDS) -> np.ndarray:
    """:func:`seeds_for` for arrays, searched up to ``limit`` seeds (0 for None): the fixed rule's
    price, vectorised for the decide loop's simulation (tests check it equals seeds_for)."""
    delta = np.atleast_1d(np.asarray(delta, dtype=float))
    sd = np.atleast_1d(np.asarray(sd, dtype=float))
    ks = seed_schedule(2, limit)
    out = effect_seeds(delta, sd, ks, np.full(ks.shape, ONE_SIDED))
    return np.where(sd <= 0, 2, np.where(delta <= 0, 0, out))


CODES = (INCONCLUSIVE, PASS, FAIL)  # effect_decide's verdict codes 0, 1, 2


def effect_decide(mean, sd, n: int, *, sesoi: float, level: float, ks: np.ndarray, ks_levels: np.ndarray, alpha=ALPHA):
    """The effect rule on arrays of per-claim (mean, sd) of n seeds, direction applied, its PASS held
    to the one-sided ``level``: (verdict codes of :data:`CODES`, p, seeds of a next look at one of
    ``ks`` held to ``ks_levels`` for 80% power, 0 where none). FAIL is the fixed rule's (95%
    interval wholly below the SESOI or 0). :func:`effect` judges a look through this function, and
    the decide loop's simulation calls it on 10,000 claims at once."""
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    sd = np.atleast_1d(np.asarray(sd, dtype=float))
    se = sd / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mean / np.where(sd > 0, se, 1.0), np.where(mean > 0, np.inf, -np.inf))
    p = _st.t.sf(t, n - 1)
    fail = mean + _st.t.isf(alpha / 2, n - 1) * se < sesoi
    passed = ~fail & (p <= level)
    code = np.where(passed, 1, np.where(fail, 2, 0))
    need = np.zeros(mean.shape, dtype=int)
    open_ = code == 0
    if open_.any():
        need[open_] = effect_seeds(np.maximum(mean[open_], sesoi), sd[open_], ks, ks_levels)
    return code, p, need


def _first(ks: np.ndarray, ok: np.ndarray) -> int | None:
    return int(ks[ok.argmax()]) if ok.any() else None


# ------------------------------------------------------------------------------ rules
def _specified(fn):
    """A rule that records its specification in its Judgement: its name, the parameters it was called
    with (alpha only when not the default) and the numbers it judged."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def rule(values, *args, **kwargs):
        values = list(values)
        j = fn(values, *args, **kwargs)
        bound = sig.bind(values, *args, **kwargs)
        bound.apply_defaults()
        params = {
            k: v
            for k, v in bound.arguments.items()
            if k != "values" and not (k == "alpha" and v == ALPHA) and not (k == "one_run" and v is None)
        }
        return replace(j, spec=_spec(fn.__name__, _clean(values), **params))

    return rule


@_specified
def effect(values: Sequence[float], *, direction: int = +1, sesoi: float, alpha: float = ALPHA) -> Judgement:
    """Per-seed paired differences; the statement says their mean is > 0 (direction +1) or < 0 (-1).

    ``p``: the one-sided t test of the paired differences against 0 in the stated direction
    (H0: mean <= 0), P(T >= mean / (sd / sqrt(n))) with n - 1 degrees of freedom; PASS is exactly
    p < alpha / 2 (the 95% interval excludes 0) unless the interval lies wholly below the SESOI
    (a FAIL). ``level`` alpha / 2 = 0.025."""
    if direction not in (+1, -1):
        raise ValueError("direction must be +1 or -1")
    if not sesoi > 0:  # also NaN
        raise ValueError(
            f"sesoi must be > 0 (got {sesoi}): with a SESOI of 0 no data can FAIL a true null; fix it from the "
            "chapter's words"
        )
    xs = [direction * x for x in _clean(values)]
    n = len(xs)
    if n < 2:
        return _one_seed("effect", [direction * x for x in xs], alpha / 2)
    m, sd = mean_sd(xs)
    lo, hi = mean_interval(xs, 1 - alpha)
    p = _sf(_z(m, sd / math.sqrt(n)), n)

    def judged(verdict: str, need: int | None, detail: str) -> Judgement:
        def at_levels(levels: LevelOf) -> tuple[str, int | None]:
            ks = seed_schedule(n + 1)
            now = float(levels(np.array([n]), alpha / 2)[0])
            code, _, need = effect_decide(
                m, sd, n, sesoi=sesoi, level=now, ks=ks, ks_levels=levels(ks, alpha / 2), alpha=alpha
            )
            return CODES[int(code[0])], int(need[0]) or None if code[0] == 0 else None

        # an undecided mean on the stated side at or above the SESOI heads for a PASS, one on the wrong side (or
        # at 0) for a FAIL; one between 0 and the SESOI can go either way
        toward = None if verdict != INCONCLUSIVE else PASS if m > 0 and m >= sesoi else FAIL if m <= 0 else None
        return Judgement(
            verdict,
            "effect",
            n,
            direction * m,
            sd,
            show,
            need,
            detail,
            p=p,
            level=alpha / 2,
            at_levels=at_levels,
            toward=toward,
        )

    words = "> 0" if direction > 0 else "< 0"
    show = (lo, hi) if direction > 0 else (-hi, -lo)
    base = f"mean {direction * m:+.3g}, 95% CI [{show[0]:+.3g}, {show[1]:+.3g}] over {n} seeds; stated {words}"
    if hi < 0:
        return judged(FAIL, None, base + ": wholly on the wrong side")
    if hi < sesoi:
        return judged(FAIL, None, base + f": wholly below the smallest effect of interest {sesoi:.3g}")
    if lo > 0:
        return judged(PASS, None, base + ": excludes 0")
    need = seeds_for(max(m, sesoi), sd, alpha)
    return judged(
        INCONCLUSIVE,
        need,
        base + f": includes 0; {need if need else 'no number of'} seeds for 80% power at the effect "
        f"{max(m, sesoi):.3g}",
    )


def prediction_halfwidth(sd: float, n: int, alpha: float = ALPHA) -> float:
    return t_crit(n, 1 - alpha) * sd * math.sqrt(1 + 1 / n)


@_specified
def value(values: Sequence[float], book: float, *, tol: float, alpha: float = ALPHA) -> Judgement:
    """The book's one run against our runs. FAIL when the book's value lies outside the 95% prediction
    interval for one run; PASS when that whole interval lies within book ± ``tol`` (so our runs pin a
    single run down to the precision the statement needs); otherwise INCONCLUSIVE. More spread can
    only widen the interval: it can never turn FAIL or INCONCLUSIVE into PASS.

    ``p``: the test behind the PASS: one run, predicted by the one-run predictive t distribution
    (mean, scale sd·√(1+1/n), n - 1 degrees of freedom), lies inside book ± tol: the larger of
    P(T >= (mean - (book - tol)) / scale) and P(T <= (mean - (book + tol)) / scale); PASS implies
    p <= alpha / 2 = ``level``. (The FAIL's own test is the book's value under that same predictive
    distribution, two-sided: FAIL is exactly that p below alpha.)"""
    if tol <= 0:
        raise ValueError("tol must be positive")
    xs = _clean(values)
    n = len(xs)
    if n < 2:
        return _one_seed("value", xs, alpha / 2)
    m, sd = mean_sd(xs)
    h = prediction_halfwidth(sd, n, alpha)
    pi = (m - h, m + h)
    scale = sd * math.sqrt(1 + 1 / n)
    p = max(_sf(_z(m - (book - tol), scale), n), _sf(_z((book + tol) - m, scale), n))
    off = abs(m - book)

    def judged(verdict: str, need: int | None, detail: str) -> Judgement:
        def at_levels(levels: LevelOf) -> tuple[str, int | None]:
            if verdict == FAIL:
                return FAIL, None
            if verdict == PASS and p <= float(levels(np.array([n]), alpha / 2)[0]):
                return PASS, None
            ks = seed_schedule(n + 1)
            half = _st.t.isf(levels(ks, alpha / 2), ks - 1) * sd * np.sqrt(1 + 1 / ks)
            return INCONCLUSIVE, _first(ks, off + half <= tol)

        toward = PASS if verdict == INCONCLUSIVE else None  # its price is the seeds that pin one run to ± tol
        return Judgement(
            verdict, "value", n, m, sd, pi, need, detail, p=p, level=alpha / 2, at_levels=at_levels, toward=toward
        )

    base = f"book {book:.4g}; one-run 95% PI {m:.4g} ± {h:.3g} over {n} seeds"
    if not pi[0] <= book <= pi[1]:
        return judged(FAIL, None, base + ": the book's value lies outside")
    if off + h <= tol:
        return judged(PASS, None, base + f": inside, and within the book's ± {tol:.3g}")
    need = None
    if off + t_crit(MAX_SEEDS) * sd <= tol:  # more seeds narrow the interval only down to ~1.96 sd
        need = _seeds_until(n, lambda k: off + prediction_halfwidth(sd, k, alpha) <= tol)
    why = (
        f"about {need} seeds would pin it to ± {tol:.3g}"
        if need
        else f"the seed spread (sd {sd:.3g}) and offset {off:.3g} exceed ± {tol:.3g}: more seeds cannot pin one run down"
    )
    return judged(INCONCLUSIVE, need, base + f": inside but wider than the book's ± {tol:.3g}; {why}")


@_specified
def band(values: Sequence[float], lo: float, hi: float, *, alpha: float = ALPHA) -> Judgement:
    """The 95% interval of the mean against the book's band [lo, hi] (not widened).

    ``p``: two one-sided t tests that the mean lies above lo and below hi, the larger of
    P(T >= (mean - lo) / se) and P(T <= (mean - hi) / se), se = sd / sqrt(n); PASS is exactly
    p <= alpha / 2 = ``level``."""
    xs = _clean(values)
    n = len(xs)
    if n < 2:
        return _one_seed("band", xs, alpha / 2)
    m, sd = mean_sd(xs)
    a, b = mean_interval(xs, 1 - alpha)
    se = sd / math.sqrt(n)
    p = max(_sf(_z(m - lo, se), n), _sf(_z(hi - m, se), n))

    def judged(verdict: str, need: int | None, detail: str) -> Judgement:
        def at_levels(levels: LevelOf) -> tuple[str, int | None]:
            if verdict == FAIL:
                return FAIL, None
            if verdict == PASS and p <= float(levels(np.array([n]), alpha / 2)[0]):
                return PASS, None
            if not (lo <= m <= hi and sd > 0):  # outside the band: only a FAIL can come, priced as before
                return INCONCLUSIVE, need
            ks = seed_schedule(n + 1)
            half = _st.t.isf(levels(ks, alpha / 2), ks - 1) * sd / np.sqrt(ks)
            return INCONCLUSIVE, _first(ks, half <= min(m - lo, hi - m))

        # a mean inside the band heads for a PASS, one outside it for a FAIL
        toward = None if verdict != INCONCLUSIVE else PASS if lo <= m <= hi else FAIL
        return Judgement(
            verdict, "band", n, m, sd, (a, b), need, detail, p=p, level=alpha / 2, at_levels=at_levels, toward=toward
        )

    base = f"mean {m:.4g}, 95% CI [{a:.4g}, {b:.4g}] over {n} seeds vs the book's [{lo:g}, {hi:g}]"
    if lo <= a and b <= hi:
        return judged(PASS, None, base + ": inside")
    if b < lo or a > hi:
        return judged(FAIL, None, base + ": wholly outside")
    need = None
    if lo <= m <= hi and sd > 0:  # the interval narrows around the mean
        room = min(m - lo, hi - m)
        need = _seeds_until(n, lambda k: mean_halfwidth(sd, k) <= room)
    elif sd > 0:
        room = lo - m if m < lo else m - hi
        need = _seeds_until(n, lambda k: mean_halfwidth(sd, k) < room)
    return judged(INCONCLUSIVE, need, base + ": overlaps an edge")


@_specified
def every(values: Sequence[float], lo: float, hi: float, *, one_run: str | None = None) -> Judgement:
    """Every seed's value inside [lo, hi]: for statements about each run ("都在 0.1–0.2 之间").

    At fewer than MIN_SEEDS seeds it is INCONCLUSIVE (n_needed MIN_SEEDS), as every other rule is:
    one or two runs inside a band say nothing of every run. Unless the chapter itself speaks of one
    run: ``one_run`` quotes its words (e.g. "如果继续训 10000 步会怎样"), shown in the detail, and then
    one run decides, PASS or FAIL, as the chapter's one run did. Tests nothing (p None)."""
    if one_run is not None and not (isinstance(one_run, str) and one_run.strip()):
        raise ValueError("one_run quotes the chapter's words that speak of one run: give them as text")
    xs = _clean(values)
    if not xs:
        raise ValueError("no values to judge")
    m, sd = mean_sd(xs)
    out = [x for x in xs if not lo <= x <= hi]
    detail = f"{len(xs) - len(out)} of {len(xs)} seeds inside [{lo:g}, {hi:g}]"
    if one_run is not None:
        detail += f" (the chapter speaks of one run: “{one_run.strip()}”)"
    elif len(xs) < MIN_SEEDS:
        return Judgement(
            INCONCLUSIVE,
            "every",
            len(xs),
            m,
            sd,
            (min(xs), max(xs)),
            MIN_SEEDS,
            detail + f": fewer than {MIN_SEEDS} seeds say nothing of every run; {MIN_SEEDS} seeds to judge it",
            toward=FAIL if out else None,
        )
    return Judgement(FAIL if out else PASS, "every", len(xs), m, sd, (min(xs), max(xs)), None, detail)


@_specified
def equivalence(values: Sequence[float], margin: float, *, alpha: float = ALPHA) -> Judgement:
    """Two one-sided tests: the difference lies within ±margin ("几乎一样 / unchanged").

    ``p``: the TOST p-value, the larger of P(T >= (mean + margin) / se) and
    P(T <= (mean - margin) / se), se = sd / sqrt(n); PASS is exactly p < alpha = ``level`` (0.05:
    the 90% interval inside ±margin)."""
    if margin <= 0:
        raise ValueError("margin must be positive")
    xs = _clean(values)
    n = len(xs)
    if n < 2:
        return _one_seed("equivalence", xs, alpha)
    m, sd = mean_sd(xs)
    a, b = mean_interval(xs, 1 - 2 * alpha)
    se = sd / math.sqrt(n)
    p = max(_sf(_z(m + margin, se), n), _sf(_z(margin - m, se), n))

    def judged(verdict: str, need: int | None, detail: str) -> Judgement:
        def at_levels(levels: LevelOf) -> tuple[str, int | None]:
            if verdict == FAIL:
                return FAIL, None
            if verdict == PASS and p <= float(levels(np.array([n]), alpha)[0]):
                return PASS, None
            if not (margin - abs(m) > 0 and sd > 0):
                return INCONCLUSIVE, None
            ks = seed_schedule(n + 1)
            half = _st.t.isf(levels(ks, alpha), ks - 1) * sd / np.sqrt(ks)
            return INCONCLUSIVE, _first(ks, half < margin - abs(m))

        toward = None if verdict != INCONCLUSIVE else PASS if margin - abs(m) > 0 else FAIL
        return Judgement(
            verdict, "equivalence", n, m, sd, (a, b), need, detail, p=p, level=alpha, at_levels=at_levels, toward=toward
        )

    base = f"mean {m:+.3g}, 90% CI [{a:+.3g}, {b:+.3g}] over {n} seeds vs ±{margin:.3g}"
    if -margin < a and b < margin:
        return judged(PASS, None, base + ": inside (equivalent)")
    if a >= margin or b <= -margin:
        return judged(FAIL, None, base + ": wholly outside (a real difference)")
    need = None
    room = margin - abs(m)
    if room > 0 and sd > 0:
        need = _seeds_until(n, lambda k: mean_halfwidth(sd, k, 1 - 2 * alpha) < room)
    return judged(INCONCLUSIVE, need, base + ": overlaps the margin")


def exact(ok: bool, detail: str = "", estimate: float | None = None) -> Judgement:
    """Deterministic arithmetic: a formula, a byte count, a bound computed from the weights."""
    return Judgement(
        PASS if ok else FAIL, "exact", 1, estimate, None, None, None, detail, spec={**_spec("exact"), "ok": bool(ok)}
    )


def reported(detail: str, estimate: float | None = None, n: int = 0) -> Judgement:
    return Judgement(REPORTED, "reported", n, estimate, None, None, None, detail, spec=_spec("reported"))


def na(reason: str) -> Judgement:
    return Judgement(NA, "na", 0, None, None, None, None, reason, spec=_spec("na"))


def all_of(parts: Sequence[Judgement], detail: str = "") -> Judgement:
    """A statement made of several parts: FAIL if any part fails, PASS if all pass, else INCONCLUSIVE.

    ``n_needed`` (INCONCLUSIVE only) is that of the part that decides the statement: a FAILing part
    decides a FAIL (n_needed None). Else the statement is decided at the first seed count at which it
    would be: a FAIL needs one part to FAIL, a PASS every part to PASS. So when an undecided part heads
    for a FAIL (its ``toward``), the fewest seeds among those that price one; otherwise the most seeds
    among the undecided parts (None if one of them has no price: more seeds will not settle it). A
    part heading for a FAIL with no price leaves the statement unpriced too. ``toward`` is FAIL when a
    FAIL decides it, PASS when every undecided part heads for a PASS.

    ``p``: the intersection-union test (Berger 1982): the statement holds only if every part does,
    so its p is the largest p of the parts that test something (None when none does); ``level``
    the smallest of theirs."""
    if not parts:
        raise ValueError("all_of needs at least one part")
    verdicts = [p.verdict for p in parts]
    if FAIL in verdicts:
        v = FAIL
    elif all(x == PASS for x in verdicts):
        v = PASS
    else:
        v = INCONCLUSIVE
    need, toward = _deciding([(p.verdict, p.n_needed, p.toward) for p in parts])
    words = detail or "; ".join(f"{p.verdict}: {p.detail}" for p in parts)
    # the seeds the statement stands on: an exact part (arithmetic, n = 1) counts no seeds
    n = min([p.n for p in parts if p.rule != "exact"] or [p.n for p in parts])
    tested = [p for p in parts if p.p is not None]
    spec = {"rule": "all_of", "parts": [p.spec or _spec(p.rule) for p in parts]}
    if not tested:
        return Judgement(v, "all_of", n, None, None, None, need, words, spec=spec, toward=toward)

    def at_levels(levels: LevelOf) -> tuple[str, int | None]:
        each = [p.at_levels(levels) if p.at_levels else (p.verdict, p.n_needed) for p in parts]
        vs = [x for x, _ in each]
        if FAIL in vs:
            return FAIL, None
        if all(x == PASS for x in vs):
            return PASS, None
        return INCONCLUSIVE, _deciding([(x, k, p.toward) for (x, k), p in zip(each, parts)])[0]

    return Judgement(
        v,
        "all_of",
        n,
        None,
        None,
        None,
        need,
        words,
        p=max(p.p for p in tested),
        level=min(p.level for p in tested if p.level is not None),
        at_levels=at_levels,
        spec=spec,
        toward=toward,
    )


def _deciding(parts: Sequence[tuple[str, int | None, str | None]]) -> tuple[int | None, str | None]:
    """(n_needed, toward) of an all_of from its parts' (verdict, n_needed, toward): see :func:`all_of`."""
    verdicts = [v for v, _, _ in parts]
    if FAIL in verdicts or all(v == PASS for v in verdicts):
        return None, None
    open_ = [(k, t) for v, k, t in parts if v == INCONCLUSIVE]
    if not open_:  # undecided only by parts that test nothing (REPORTED, NA): no seeds decide it
        return None, None
    failing = [k for k, t in open_ if t == FAIL]
    if failing:  # one part's FAIL decides the statement: the first of them to come
        priced = [k for k in failing if k is not None]
        return (min(priced) if priced else None), FAIL
    needs = [k for k, _ in open_]
    toward = PASS if all(t == PASS for _, t in open_) else None
    return (None if any(k is None for k in needs) else max(needs)), toward


# the rules a stored specification can name, to judge again with its parameters (judge_spec)
RULE_FUNCTIONS: dict[str, Callable[..., Judgement]] = {
    "effect": effect,
    "value": value,
    "band": band,
    "every": every,
    "equivalence": equivalence,
}
