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
  every(values, lo, hi)              every seed's value inside the band (no widening).
  equivalence(values, margin)        two one-sided tests ("changes little"): the
      90% interval inside ±margin PASS, wholly outside it FAIL.
  exact(ok)                          deterministic arithmetic (formulas, byte counts).

Seeds that disagree more widen every interval, so they can only move a verdict
towards INCONCLUSIVE, never towards PASS (tests/test_stats.py checks this by
simulation, with the rules' false-positive rate and power).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from scipy import stats as _st

PASS, FAIL, INCONCLUSIVE, REPORTED, NA = "PASS", "FAIL", "INCONCLUSIVE", "REPORTED", "NA"
VERDICTS = (PASS, FAIL, INCONCLUSIVE, REPORTED, NA)
ALPHA = 0.05
POWER = 0.80
MIN_SEEDS = 3  # the fewest seeds that estimate a spread worth an interval
ONE_SEED = "one seed has no spread: at least 3 seeds to judge it"
MAX_SEEDS = 1000  # n_needed beyond this is reported as None ("more seeds will not settle it")

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

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def to_dict(self) -> dict:
        d = asdict(self)
        d["interval"] = None if self.interval is None else [_r(self.interval[0]), _r(self.interval[1])]
        for k in ("estimate", "sd"):
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


def _one_seed(rule: str, xs: list[float]) -> Judgement:
    """Fewer than two seeds: no spread to judge with; the fewest seeds that estimate one."""
    return Judgement(INCONCLUSIVE, rule, len(xs), xs[0] if xs else None, None, None, MIN_SEEDS, ONE_SEED)


# ------------------------------------------------------------------------------ rules
def effect(values: Sequence[float], *, direction: int = +1, sesoi: float, alpha: float = ALPHA) -> Judgement:
    """Per-seed paired differences; the statement says their mean is > 0 (direction +1) or < 0 (-1)."""
    if direction not in (+1, -1):
        raise ValueError("direction must be +1 or -1")
    if sesoi < 0:
        raise ValueError("sesoi is a size: give it as a non-negative number")
    xs = [direction * x for x in _clean(values)]
    n = len(xs)
    if n < 2:
        return _one_seed("effect", [direction * x for x in xs])
    m, sd = mean_sd(xs)
    lo, hi = mean_interval(xs, 1 - alpha)
    words = "> 0" if direction > 0 else "< 0"
    show = (lo, hi) if direction > 0 else (-hi, -lo)
    base = f"mean {direction * m:+.3g}, 95% CI [{show[0]:+.3g}, {show[1]:+.3g}] over {n} seeds; stated {words}"
    if hi < 0:
        return Judgement(FAIL, "effect", n, direction * m, sd, show, None, base + ": wholly on the wrong side")
    if hi < sesoi:
        return Judgement(
            FAIL,
            "effect",
            n,
            direction * m,
            sd,
            show,
            None,
            base + f": wholly below the smallest effect of interest {sesoi:.3g}",
        )
    if lo > 0:
        return Judgement(PASS, "effect", n, direction * m, sd, show, None, base + ": excludes 0")
    need = seeds_for(max(m, sesoi), sd, alpha)
    return Judgement(
        INCONCLUSIVE,
        "effect",
        n,
        direction * m,
        sd,
        show,
        need,
        base + f": includes 0; {need if need else 'no number of'} seeds for 80% power at the effect "
        f"{max(m, sesoi):.3g}",
    )


def prediction_halfwidth(sd: float, n: int, alpha: float = ALPHA) -> float:
    return t_crit(n, 1 - alpha) * sd * math.sqrt(1 + 1 / n)


def value(values: Sequence[float], book: float, *, tol: float, alpha: float = ALPHA) -> Judgement:
    """The book's one run against our runs. FAIL when the book's value lies outside the 95% prediction
    interval for one run; PASS when that whole interval lies within book ± ``tol`` (so our runs pin a
    single run down to the precision the statement needs); otherwise INCONCLUSIVE. More spread can
    only widen the interval: it can never turn FAIL or INCONCLUSIVE into PASS."""
    if tol <= 0:
        raise ValueError("tol must be positive")
    xs = _clean(values)
    n = len(xs)
    if n < 2:
        return _one_seed("value", xs)
    m, sd = mean_sd(xs)
    h = prediction_halfwidth(sd, n, alpha)
    pi = (m - h, m + h)
    base = f"book {book:.4g}; one-run 95% PI {m:.4g} ± {h:.3g} over {n} seeds"
    if not pi[0] <= book <= pi[1]:
        return Judgement(FAIL, "value", n, m, sd, pi, None, base + ": the book's value lies outside")
    off = abs(m - book)
    if off + h <= tol:
        return Judgement(PASS, "value", n, m, sd, pi, None, base + f": inside, and within the book's ± {tol:.3g}")
    need = None
    if off + t_crit(MAX_SEEDS) * sd <= tol:  # more seeds narrow the interval only down to ~1.96 sd
        need = _seeds_until(n, lambda k: off + prediction_halfwidth(sd, k, alpha) <= tol)
    why = (
        f"about {need} seeds would pin it to ± {tol:.3g}"
        if need
        else f"the seed spread (sd {sd:.3g}) and offset {off:.3g} exceed ± {tol:.3g}: more seeds cannot pin one run down"
    )
    return Judgement(
        INCONCLUSIVE, "value", n, m, sd, pi, need, base + f": inside but wider than the book's ± {tol:.3g}; {why}"
    )


def band(values: Sequence[float], lo: float, hi: float, *, alpha: float = ALPHA) -> Judgement:
    """The 95% interval of the mean against the book's band [lo, hi] (not widened)."""
    xs = _clean(values)
    n = len(xs)
    if n < 2:
        return _one_seed("band", xs)
    m, sd = mean_sd(xs)
    a, b = mean_interval(xs, 1 - alpha)
    base = f"mean {m:.4g}, 95% CI [{a:.4g}, {b:.4g}] over {n} seeds vs the book's [{lo:g}, {hi:g}]"
    if lo <= a and b <= hi:
        return Judgement(PASS, "band", n, m, sd, (a, b), None, base + ": inside")
    if b < lo or a > hi:
        return Judgement(FAIL, "band", n, m, sd, (a, b), None, base + ": wholly outside")
    need = None
    if lo <= m <= hi and sd > 0:  # the interval narrows around the mean
        room = min(m - lo, hi - m)
        need = _seeds_until(n, lambda k: mean_halfwidth(sd, k) <= room)
    elif sd > 0:
        room = lo - m if m < lo else m - hi
        need = _seeds_until(n, lambda k: mean_halfwidth(sd, k) < room)
    return Judgement(INCONCLUSIVE, "band", n, m, sd, (a, b), need, base + ": overlaps an edge")


def every(values: Sequence[float], lo: float, hi: float) -> Judgement:
    """Every seed's value inside [lo, hi]: for statements about each run ("都在 0.1–0.2 之间")."""
    xs = _clean(values)
    if not xs:
        raise ValueError("no values to judge")
    m, sd = mean_sd(xs)
    out = [x for x in xs if not lo <= x <= hi]
    detail = f"{len(xs) - len(out)} of {len(xs)} seeds inside [{lo:g}, {hi:g}]"
    return Judgement(FAIL if out else PASS, "every", len(xs), m, sd, (min(xs), max(xs)), None, detail)


def equivalence(values: Sequence[float], margin: float, *, alpha: float = ALPHA) -> Judgement:
    """Two one-sided tests: the difference lies within ±margin ("几乎一样 / unchanged")."""
    if margin <= 0:
        raise ValueError("margin must be positive")
    xs = _clean(values)
    n = len(xs)
    if n < 2:
        return _one_seed("equivalence", xs)
    m, sd = mean_sd(xs)
    a, b = mean_interval(xs, 1 - 2 * alpha)
    base = f"mean {m:+.3g}, 90% CI [{a:+.3g}, {b:+.3g}] over {n} seeds vs ±{margin:.3g}"
    if -margin < a and b < margin:
        return Judgement(PASS, "equivalence", n, m, sd, (a, b), None, base + ": inside (equivalent)")
    if a >= margin or b <= -margin:
        return Judgement(FAIL, "equivalence", n, m, sd, (a, b), None, base + ": wholly outside (a real difference)")
    need = None
    room = margin - abs(m)
    if room > 0 and sd > 0:
        need = _seeds_until(n, lambda k: mean_halfwidth(sd, k, 1 - 2 * alpha) < room)
    return Judgement(INCONCLUSIVE, "equivalence", n, m, sd, (a, b), need, base + ": overlaps the margin")


def exact(ok: bool, detail: str = "", estimate: float | None = None) -> Judgement:
    """Deterministic arithmetic: a formula, a byte count, a bound computed from the weights."""
    return Judgement(PASS if ok else FAIL, "exact", 1, estimate, None, None, None, detail)


def reported(detail: str, estimate: float | None = None, n: int = 0) -> Judgement:
    return Judgement(REPORTED, "reported", n, estimate, None, None, None, detail)


def na(reason: str) -> Judgement:
    return Judgement(NA, "na", 0, None, None, None, None, reason)


def all_of(parts: Sequence[Judgement], detail: str = "") -> Judgement:
    """A statement made of several parts: FAIL if any part fails, PASS if all pass, else INCONCLUSIVE."""
    if not parts:
        raise ValueError("all_of needs at least one part")
    verdicts = [p.verdict for p in parts]
    if FAIL in verdicts:
        v = FAIL
    elif all(x == PASS for x in verdicts):
        v = PASS
    else:
        v = INCONCLUSIVE
    needs = [p.n_needed for p in parts if p.verdict == INCONCLUSIVE]
    need = None if not needs or any(x is None for x in needs) else max(needs)
    words = detail or "; ".join(f"{p.verdict}: {p.detail}" for p in parts)
    # the seeds the statement stands on: an exact part (arithmetic, n = 1) counts no seeds
    n = min([p.n for p in parts if p.rule != "exact"] or [p.n for p in parts])
    return Judgement(v, "all_of", n, None, None, None, need if v == INCONCLUSIVE else None, words)
