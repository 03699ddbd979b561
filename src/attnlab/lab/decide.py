"""``attnlab book --decide``: train the seeds that INCONCLUSIVE claims need, cheapest verdict first.

Every INCONCLUSIVE claim whose rule named ``n_needed`` (the seeds for 80% power at the
effect observed, attnlab.stats) is a question more seeds can settle. A claim that records its
looks is asked by its sequential verdict and price (``seq``, ``seq_n_needed``,
attnlab.sequential): each look spends part of the claim's level, so however many looks the loop
takes its false-PASS rate stays at the level (:func:`simulate` measures it). For each, the
planner lists the runs of the seeds it lacks (the experiment's ``seed_runs``), leaves
out every run already finished on disk or already recorded in the committed JSON,
estimates each run's training time from the runs' own timing records, and orders the
questions by claims settled per core-hour, shared runs counted once. Within the budget
(wall time with the given workers) it trains them through the runner, measures and
judges again, and repeats while something affordable is left.

The planning is pure (``plan``: numbers in, a :class:`Plan` out), so it is tested on
hand-made per-seed numbers; training and re-measuring are the caller's functions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import verdicts as V
from ..config import Config
from ..errors import AttnlabError
from ..io import read_json
from ..runfolder import training_seconds
from ..runner import ExecutorOptions, Run, train_cost
from ..sequential import N_MAX
from .runs import BOOK_SEED

MAX_BUDGET_S = 366 * 86400.0  # --budget: at most a year
MAX_SEEDS = N_MAX  # a question needing more seeds than this is reported, not planned (the design's maximum)
ROUNDS = 3  # plan, train, judge again: at most this many times per invocation
# seconds per unit of runner.train_cost on one thread when no run on disk has a timing record:
# the chapter's small model, 1500 steps, took ~110 s on one core of the 2-core development machine
DEFAULT_S_PER_COST = 110.0 / 1.378e12


class DecideError(AttnlabError):
    pass


@dataclass(frozen=True)
class Question:
    """An INCONCLUSIVE claim that ``n_needed`` seeds could settle."""

    experiment: str
    claim: str
    n_now: int
    n_needed: int
    recorded: tuple[int, ...] = ()  # seeds whose numbers the JSON already holds


@dataclass
class Plan:
    chosen: list[tuple[Question, list[Run]]] = field(default_factory=list)  # question, the new runs it adds
    runs: list[Run] = field(default_factory=list)  # every run to train, once
    core_s: float = 0.0
    workers: int = 1
    skipped: list[tuple[Question, str]] = field(default_factory=list)

    @property
    def wall_s(self) -> float:
        return self.core_s / max(1, self.workers)


def parse_duration(text: str) -> float:
    """'2h', '90m', '1h30m', '3600s' or '3600' -> seconds (a clear error otherwise)."""
    t = str(text).strip().lower()
    if len(t) > 40:
        raise DecideError(f"--budget {text[:20]!r}…: give a duration such as 2h, 90m, 1h30m or 3600s")
    if re.fullmatch(r"\d+(\.\d+)?", t) and 0 < float(t) <= MAX_BUDGET_S:
        return float(t)
    m = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?:in)?)?(?:(\d+(?:\.\d+)?)s)?", t)
    if not t or not m or not any(m.groups()):
        raise DecideError(f"--budget {text!r}: give a duration such as 2h, 90m, 1h30m or 3600s")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    secs = h * 3600 + mi * 60 + s
    if secs <= 0:
        raise DecideError(f"--budget {text!r}: must be positive")
    if secs > MAX_BUDGET_S:
        raise DecideError(f"--budget {text!r}: more than a year ({MAX_BUDGET_S:,.0f} s); give a shorter duration")
    return secs


def asked(c: Mapping) -> tuple[str, int | None]:
    """The verdict and price the loop decides a claim by: its sequential ones where it records its
    looks (attnlab.sequential.record), else (a claim judged before looks were kept) its own."""
    if c.get("seq") is not None:
        return c["seq"], c.get("seq_n_needed")
    return V.verdict_of(c), c.get("n_needed")


def next_look(verdict: str, need: int | None, n: int) -> int | None:
    """The seed count of a claim's next look, or None: it is decided, or more seeds will not decide it.
    (``plan`` then reports, not plans, a look beyond MAX_SEEDS.)"""
    return need if verdict == "INCONCLUSIVE" and isinstance(need, int) and need > n else None


def questions(docs: Mapping[str, dict]) -> list[Question]:
    """The INCONCLUSIVE claims of every experiment's JSON that name the seeds they need."""
    out = []
    for eid, doc in docs.items():
        for c in doc.get("claims", []):
            verdict, need = asked(c)
            if next_look(verdict, need, c.get("n") or 0):
                # a claim stands on its first n seeds (BOOK_SEED upward) unless it names them ("seeds")
                seeds = tuple(int(s) for s in c.get("seeds") or ())
                out.append(Question(eid, c["id"], int(c.get("n") or 0), need, seeds))
    return out


def new_seeds(q: Question) -> list[int]:
    """The seeds to add: from BOOK_SEED upward, skipping those already recorded, until n_needed."""
    have = set(q.recorded) if q.recorded else {BOOK_SEED + i for i in range(q.n_now)}
    out, i = [], 0
    while len(have) + len(out) < q.n_needed:
        s = BOOK_SEED + i
        if s not in have:
            out.append(s)
        i += 1
    return out


def plan(
    qs: Sequence[Question],
    seed_runs: Mapping[str, Callable[[int, str], Sequence[Run]]],
    *,
    finished: Callable[[Run], bool],
    cost_s: Callable[[Run], float],
    budget_s: float | None = None,
    workers: int = 1,
    max_seeds: int = MAX_SEEDS,
) -> Plan:
    """Choose questions, cheapest settled claim first, within ``budget_s`` of wall time.

    seed_runs[experiment](seed, claim_id) -> the runs that seed adds for that claim."""
    p = Plan(workers=max(1, workers))
    candidates = []
    for q in qs:
        if q.n_needed > max_seeds:
            p.skipped.append((q, f"needs {q.n_needed} seeds, more than the {max_seeds} planned at most"))
            continue
        fn = seed_runs.get(q.experiment)
        if fn is None:
            p.skipped.append((q, "this experiment has no runs per seed to add"))
            continue
        runs = [r for s in new_seeds(q) for r in fn(s, q.claim)]
        if not runs:  # e.g. the case's own claims: more seeds are `attnlab case`'s, not the book's
            p.skipped.append((q, "this claim has no runs per seed to add here"))
            continue
        candidates.append((q, [r for r in runs if not finished(r)]))
    chosen: dict[str, Run] = {}

    def marginal(c) -> float:
        return sum(cost_s(r) for r in c[1] if r.name not in chosen)

    while candidates:
        best = min(candidates, key=lambda c: (marginal(c), c[0].experiment, c[0].claim))
        candidates.remove(best)
        extra = marginal(best)
        if budget_s is not None and (p.core_s + extra) / p.workers > budget_s:
            p.skipped.append(
                (best[0], f"over the budget: {extra / 3600:.2f} core-h more ({extra / p.workers / 60:.0f} min wall)")
            )
            continue
        new = [r for r in best[1] if r.name not in chosen]
        for r in new:
            chosen[r.name] = r
        p.core_s += extra
        p.chosen.append((best[0], new))
    p.runs = list(chosen.values())
    return p


def cost_model(run_dirs: Iterable[tuple[Config, Path]]) -> Callable[[Run], float]:
    """Seconds a run will take on one thread: train_cost(cfg) times the median seconds-per-cost of the
    runs on disk with a timing record (their own machine, one thread each), else a default."""
    rates = []
    for cfg, d in run_dirs:
        s = training_seconds(d)
        if s and cfg.max_steps:
            rates.append(s / train_cost(cfg))
    rates.sort()
    rate = rates[len(rates) // 2] if rates else DEFAULT_S_PER_COST
    return lambda run: train_cost(run.cfg) * rate


def runs_on_disk(runs_root: Path) -> list[tuple[Config, Path]]:
    """(config, folder) of every run folder under ``runs_root`` (group/name/config.json)."""
    out = []
    for cfg_file in sorted(Path(runs_root).glob("*/*/config.json")):
        try:
            out.append((Config.from_dict(read_json(cfg_file, max_bytes=10**6)), cfg_file.parent))
        except (OSError, ValueError, TypeError, AttnlabError):
            continue
    return out


def run_decide(
    chosen: Sequence,
    text: str,
    root: Path,
    *,
    scale,
    budget_s: float | None,
    options: ExecutorOptions,
    dry_run: bool = False,
    refresh: Callable[[set[str]], None],
    log: Callable[[str], None] = print,
    rounds: int = ROUNDS,
) -> dict:
    """Plan, train, re-measure (``refresh(experiment ids)``) and repeat; returns {before, after, plans,
    unfinished} (unfinished: run name -> "failed: why" or "busy: holder", runs that did not finish).
    ``options``: how the runs are executed (attnlab.runner.ExecutorOptions, passed to the runner whole);
    the plan's wall time counts its workers (one per core when not given)."""
    import os

    from ..runner import execute, finished_history

    workers = options.workers or os.cpu_count() or 1

    root = Path(root)
    runs_root = root / "runs"
    with_runs = [e for e in chosen if e.seed_runs is not None]
    before = _docs(root, with_runs)
    plans, left = [], budget_s

    def finished(r: Run) -> bool:
        try:
            return finished_history(r.dir(runs_root), r.cfg)
        except AttnlabError:
            return False

    fns = {e.id: (lambda seed, cid, e=e: e.seed_runs(scale, seed, cid)) for e in with_runs}
    unfinished: dict[str, str] = {}  # runs that failed or were busy: the command exits non-zero
    for _ in range(rounds):
        docs = _docs(root, with_runs)
        p = plan(
            questions(docs),
            fns,
            finished=finished,
            cost_s=cost_model(runs_on_disk(runs_root)),
            budget_s=left,
            workers=workers,
        )
        plans.append(p)
        log(render_plan(p))
        if dry_run or not p.runs:
            break
        t0 = time.perf_counter()
        execute(
            p.runs,
            text,
            runs_root,
            options=options,
            keep_going=True,
            log=log,
            desc="decide",
            on_result=lambda r: (
                unfinished.__setitem__(r["name"], f"{r['status']}: {r.get('error')}")
                if r["status"] in ("failed", "busy")
                else unfinished.pop(r["name"], None)
            ),
        )
        if left is not None:
            left -= time.perf_counter() - t0
        refresh({q.experiment for q, _ in p.chosen})
        if left is not None and left <= 0:
            break
    after = _docs(root, with_runs)
    if dry_run:
        return {"before": before, "after": after, "plans": plans, "unfinished": unfinished}
    lines = summary(before, after)
    log("决策结果 / decided:" if lines else "决策结果 / decided: nothing changed")
    for line in lines:
        log(line)
    return {"before": before, "after": after, "plans": plans, "unfinished": unfinished}


def _docs(root: Path, experiments: Sequence) -> dict[str, dict]:
    """The stored entries the plan reads its claims from, each checked (attnlab.schemas.LabBookEntry:
    verdicts, n, n_needed and seeds of the right types and ranges) before any is planned from."""
    from .labbook import read_entries

    return read_entries(experiments, root / "data")


def render_plan(p: Plan) -> str:
    lines = ["决策计划 / decide plan:"]
    if not p.chosen:
        lines.append("  没有可用更多种子判定的论断 / nothing more seeds can settle within the budget")
    for q, new in p.chosen:
        lines.append(
            f"  {q.experiment}.{q.claim}: {q.n_now} -> {q.n_needed} seeds, {len(new)} new run(s)"
            + (f" ({', '.join(r.name for r in new[:4])}{' …' if len(new) > 4 else ''})" if new else " (shared)")
        )
    lines.append(
        f"  合计 / total: {len(p.runs)} runs, {p.core_s / 3600:.2f} core-h, about {p.wall_s / 60:.0f} min wall "
        f"with {p.workers} worker(s)"
    )
    for q, why in p.skipped:
        lines.append(f"  跳过 / skipped {q.experiment}.{q.claim} ({q.n_now} -> {q.n_needed} seeds): {why}")
    return "\n".join(lines)


def summary(before: Mapping[str, dict], after: Mapping[str, dict]) -> list[str]:
    """What was decided: each claim that was INCONCLUSIVE before, with its verdict now."""
    out = []
    for eid, doc in before.items():
        now = {c["id"]: c for c in after.get(eid, {}).get("claims", [])}
        for c in doc.get("claims", []):
            if asked(c)[0] != "INCONCLUSIVE":
                continue
            n = now.get(c["id"])
            if n is None:
                continue
            v, need = asked(n)
            tail = (
                ""
                if v != "INCONCLUSIVE"
                else (f" (needs ~{need} seeds)" if need else " (more seeds will not settle it)")
            )
            out.append(f"  {eid}.{c['id']}: INCONCLUSIVE ({c.get('n')} seeds) -> {v} ({n.get('n')} seeds){tail}")
    return out


# ------------------------------------------------------------------------------ the loop, simulated
def simulate(
    effect: float,
    *,
    rule: str = "sequential",
    reps: int = 10_000,
    n0: int = 3,
    sesoi: float = 0.0,
    rounds: int = ROUNDS,
    seed: int = 0,
) -> dict:
    """The decide loop on ``reps`` effect claims at once, each with seeds whose paired differences
    are N(effect, 1): judged at ``n0`` seeds (the book's first look), then, while INCONCLUSIVE and
    its next look is planned (:func:`next_look`, at most MAX_SEEDS), judged again at the seeds its
    price names, ``rounds`` times at most, as :func:`run_decide` does with an unlimited budget.

    rule "sequential": each look through :func:`attnlab.stats.effect_decide` at the nominal level
    attnlab.sequential gives it after the claim's earlier looks, priced at the next look's level
    (what a stored claim's ``seq`` and ``seq_n_needed`` are); "fixed": every look at the fixed
    rule's 2.5 % and priced by its own ``n_needed`` (stats.seeds_for), the loop before sequential
    verdicts. Returns the rates of PASS and FAIL, the mean seeds at the decision (or where the
    loop stopped) and the mean number of looks."""
    from .. import sequential as Q
    from .. import stats as S

    if rule not in ("sequential", "fixed"):
        raise ValueError(f"rule must be sequential or fixed, got {rule!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((reps, MAX_SEEDS)) + effect
    cs, css = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    n = np.full(reps, n0)
    prior: list[tuple[int, ...]] = [()] * reps
    code = np.zeros(reps, dtype=int)  # 0 open, 1 PASS, 2 FAIL, 3 stopped undecided
    looks = np.zeros(reps, dtype=int)
    for _ in range(rounds + 1):
        groups: dict[tuple, list[int]] = {}
        for i in np.flatnonzero(code == 0):
            groups.setdefault((prior[i], int(n[i])), []).append(i)
        for (ns, k), members in groups.items():
            idx = np.array(members)
            m = cs[idx, k - 1] / k
            sd = np.sqrt(np.maximum(css[idx, k - 1] - k * m * m, 0) / (k - 1))
            if rule == "sequential":
                ks = np.arange(k + 1, MAX_SEEDS + 1)
                now = Q.next_levels(ns, [k], S.ONE_SIDED)[0]
                later = Q.next_levels((*ns, k), ks, S.ONE_SIDED)
                c, _, need = S.effect_decide(m, sd, k, sesoi=sesoi, level=now, ks=ks, ks_levels=later)
            else:
                none = np.array([], dtype=int)
                c, _, _ = S.effect_decide(m, sd, k, sesoi=sesoi, level=S.ONE_SIDED, ks=none, ks_levels=none)
                need = np.where(c == 0, S.seeds_for_many(np.maximum(m, sesoi), sd, MAX_SEEDS), 0)
            looks[idx] += 1
            code[idx] = c
            for i, v, q in zip(idx, c, need):
                if v != 0:
                    continue
                nxt = next_look(S.CODES[v], int(q) or None, k)
                if nxt is None or nxt > MAX_SEEDS:
                    code[i] = 3  # not planned: reported as undecided
                else:
                    prior[i], n[i] = (*ns, k), nxt
    code[code == 0] = 3  # rounds used up
    return {
        "pass": float(np.mean(code == 1)),
        "fail": float(np.mean(code == 2)),
        "seeds": float(np.mean(n)),
        "looks": float(np.mean(looks)),
        "reps": reps,
    }
