"""Sequential honesty: a claim judged again at every look keeps its false-PASS rate at its level.

``attnlab book --decide`` adds seeds to an undecided claim and judges it again, possibly several
times. Judging each look at the fixed rule's level (one-sided 2.5 %) lets chance cross the line at
any of them: under no effect the loop PASSes 5-6 % of claims (tests/test_decide_sequential.py).
This module holds the line at the level however many looks a claim takes, with group-sequential
alpha spending (Lan & DeMets 1983, "Discrete sequential boundaries for clinical trials",
Biometrika 70:659-663):

- the information of a look is its seed count n; the maximum is ``N_MAX`` = 30 seeds, the most
  ``--decide`` plans for one claim (attnlab.lab.decide.MAX_SEEDS), fixed before any look;
- by a look at n seeds the claim may have spent at most alpha(t) of its level, t = min(1, n/N_MAX),
  with the Pocock-type spending function alpha(t) = level * ln(1 + (e - 1) t) (Lan & DeMets 1983):
  it spends early, where the book's first look at 3-10 seeds is, more than O'Brien-Fleming's;
- the boundary of each look is found by the recursive numerical integration of Armitage, McPherson
  & Rowe (1969, J. R. Stat. Soc. A 132:235-244) for the normal score process with independent
  increments (information n), on a grid, and applied to the rule's own Student-t p-value at the
  same nominal level (the "significance level approach", Jennison & Turnbull 2000, *Group
  Sequential Methods with Applications to Clinical Trials*, section 11.4);
- a claim PASSes at the first look whose p lies at or below that look's nominal level (and its
  fixed rule PASSes there too); once it has, the decision stands. FAIL is the fixed rule's FAIL, a
  non-binding futility stop: it never adds a false PASS. Everything else is INCONCLUSIVE, with the
  seeds a next look would need for 80 % power at that next look's nominal level.

The first look counts: a claim judged at 3 seeds and then extended has spent alpha(3/30) at its
first look, not the whole level, or the extension would add its chance to a level already spent.
So the sequential verdict of a claim judged once can differ from its fixed verdict: it is the
verdict under the design that allows ``--decide`` to come back.

No maintained, light Python library does this: gsdesign (0.1.5, alpha) holds only the grid
routines, savvi needs cvxpy, confseq is a C++ build from 2023. The arithmetic here is ~60 lines of
numpy and scipy, checked against simulation (tests/test_decide_sequential.py).

A claim's looks (:func:`record`) are stored with it: the seed count of each look, its p, the
fixed verdict then, the level spent by then and that look's nominal level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats as _st
from scipy.special import ndtr

from .claims_registry import spec_key
from .stats import FAIL, INCONCLUSIVE, PASS

N_MAX = 30  # the information of a whole design, in seeds (decide plans no claim beyond it)
MIN_LOOK = 2  # a judgement on fewer seeds tests nothing: it is not a look
_GRID = 301  # points (odd: Simpson's rule) of the grid per look; a level to ~1e-5 of itself (tests check)
_LOW = -9.0  # the grid's lower end, in standard deviations: below it the density is < 1e-18


def spent(n, level: float, n_max: int = N_MAX):
    """The level a claim may have spent by a look at ``n`` seeds: level * ln(1 + (e - 1) t)."""
    t = np.minimum(np.asarray(n, dtype=float) / n_max, 1.0)
    return level * np.log1p((math.e - 1) * t)


def _cross(z: np.ndarray, w: np.ndarray, g: np.ndarray, i0: float, i1: np.ndarray, c: np.ndarray) -> np.ndarray:
    """P(continued to the last look and Z at information i1 >= c), for each (i1, c)."""
    arg = (c[:, None] * np.sqrt(i1)[:, None] - z[None, :] * math.sqrt(i0)) / np.sqrt(i1 - i0)[:, None]
    return ndtr(-arg) @ (w * g)


def _bound(z, w, g, i0: float, i1: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """The boundary c at each i1 that spends exactly ``pi`` there (bisection; inf where pi is 0)."""
    lo, hi = np.full(i1.shape, -4.0), np.full(i1.shape, 12.0)
    for _ in range(32):  # 16 / 2^32 in z: far below the grid's error
        mid = (lo + hi) / 2
        over = _cross(z, w, g, i0, i1, mid) > pi
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    return np.where(pi > 0, hi, np.inf)


@lru_cache(maxsize=8192)
def _state(ns: tuple[int, ...], level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, ...]]:
    """After looks at ``ns`` seeds: the grid, its trapezoid weights and the sub-density of Z at
    the last look on the region where no boundary was crossed, and each look's nominal level."""
    if len(ns) == 1:
        a = float(spent(ns[0], level))
        c = _st.norm.isf(a) if a > 0 else np.inf
        z = np.linspace(_LOW, min(c, -_LOW), _GRID)
        return z, _weights(z), _st.norm.pdf(z), (a,)
    z0, w0, g0, levels = _state(ns[:-1], level)
    i0, i1 = float(ns[-2]), float(ns[-1])
    pi = float(spent(i1, level) - spent(i0, level))
    c = float(_bound(z0, w0, g0, i0, np.array([i1]), np.array([pi]))[0])
    a = float(_st.norm.sf(c))
    z = np.linspace(_LOW, min(c, -_LOW), _GRID)
    dz = i1 - i0
    kern = np.sqrt(i1 / dz) * _st.norm.pdf((z[:, None] * math.sqrt(i1) - z0[None, :] * math.sqrt(i0)) / math.sqrt(dz))
    return z, _weights(z), kern @ (w0 * g0), (*levels, a)


def _weights(z: np.ndarray) -> np.ndarray:
    """Simpson's rule on an odd number of equally spaced points."""
    w = np.full(z.shape, 2.0)
    w[1::2] = 4.0
    w[[0, -1]] = 1.0
    return w * (z[1] - z[0]) / 3


def nominal(ns: Sequence[int], level: float) -> tuple[float, ...]:
    """The one-sided nominal level of each look at ``ns`` seeds (strictly increasing): a look PASSes
    when its p is at or below it. The first is the level spent by then; each later one spends the
    increment of the spending function given that no earlier look crossed."""
    ns = tuple(int(n) for n in ns)
    if any(b <= a for a, b in zip(ns, ns[1:])) or (ns and ns[0] < MIN_LOOK):
        raise ValueError(f"looks must be at increasing seed counts of at least {MIN_LOOK}: {ns}")
    return _state(ns, float(level))[3] if ns else ()


@lru_cache(maxsize=8192)
def _next(ns: tuple[int, ...], level: float, ks: tuple[int, ...]) -> np.ndarray:
    k = np.array(ks, dtype=float)
    if not ns:
        return spent(k, level)
    z, w, g, _ = _state(ns, level)
    pi = spent(k, level) - spent(ns[-1], level)
    return _st.norm.sf(_bound(z, w, g, float(ns[-1]), k, pi))


def next_levels(ns: Sequence[int], ks, level: float) -> np.ndarray:
    """The nominal level a next look at each of ``ks`` seeds (each above the last of ``ns``) would get."""
    ks = np.asarray(ks, dtype=int)
    return _next(tuple(int(n) for n in ns), float(level), tuple(int(k) for k in ks))


def levels_for(prior: Sequence[int], n: int):
    """The stats.LevelOf of a look at ``n`` seeds after looks at ``prior``: the current look's
    nominal level at k == n, a next look's beyond."""
    prior = tuple(prior)

    def levels(ks: np.ndarray, full: float) -> np.ndarray:
        ks = np.asarray(ks, dtype=int)
        out = np.empty(ks.shape)
        now = ks == n
        if now.any():
            out[now] = next_levels(prior, [n], full)[0] if n >= MIN_LOOK else 0.0
        if (~now).any():
            out[~now] = next_levels((*prior, n) if n >= MIN_LOOK else prior, ks[~now], full)
        return out

    return levels


# ------------------------------------------------------------------------------ a claim's looks
def record(claims: Sequence[dict], previous: Sequence[Mapping] | None) -> list[dict]:
    """Each claim that tests something (it has a ``p``) with its looks and its sequential verdict.

    ``previous``: the claims as stored before this judgement; their looks at fewer seeds than now
    are kept (a look at as many seeds is this one judged again). Adds to each claim ``looks`` (one
    per seed count: n, p, the fixed verdict then, ``spent`` the level spent by then, ``nominal`` the
    look's level), ``seq`` (the sequential verdict) and ``seq_n_needed`` (the seeds a next look
    needs, when ``seq`` is INCONCLUSIVE). The claims' verdicts are not touched."""
    before = {c.get("id"): c for c in previous or [] if isinstance(c, Mapping)}
    for c in claims:
        j = getattr(c, "judgement", None)
        if c.get("p") is None or j is None or j.level is None or not c.get("n") or c["n"] < MIN_LOOK:
            continue
        n, level = int(c["n"]), float(j.level)
        prev = before.get(c["id"], {})
        # a look taken under another specification (before an amendment) is not a look of this rule
        same_rule = spec_key(prev.get("spec")) == spec_key(c.get("spec"))
        old = [dict(x) for x in (prev.get("looks") or []) if int(x.get("n", 0)) < n] if same_rule else []
        old = [x for x in old if int(x["n"]) >= MIN_LOOK]
        ns = [int(x["n"]) for x in old] + [n]
        lv = nominal(ns, level)
        crossed = None
        for x, a in zip(old, lv):
            x.update(spent=_r(float(spent(int(x["n"]), level))), nominal=_r(a))
            if crossed is None and x.get("verdict") == PASS and x.get("p") is not None and x["p"] <= a:
                crossed = x
        verdict, need = j.at_levels(levels_for(ns[:-1], n))
        now = {"n": n, "p": c["p"], "verdict": c["verdict"], "spent": _r(float(spent(n, level))), "nominal": _r(lv[-1])}
        c["looks"] = [*old, now]
        if crossed is not None:  # decided at an earlier look: the decision stands
            c["seq"], c["seq_n_needed"] = PASS, None
        else:
            c["seq"], c["seq_n_needed"] = verdict, (need if verdict == INCONCLUSIVE else None)
    return list(claims)


def _r(x: float) -> float:
    return float(f"{x:.4g}")


def seq_verdict(c: Mapping) -> str | None:
    """A stored claim's sequential verdict (None: it tests nothing, or was judged before looks)."""
    v = c.get("seq")
    return v if v in (PASS, FAIL, INCONCLUSIVE) else None
