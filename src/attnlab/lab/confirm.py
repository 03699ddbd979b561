"""The confirmatory round: the book's claims judged once, under frozen specifications, on fresh seeds.

Today's verdicts are exploratory: many specifications were written, or amended, after their numbers
were seen (data/claims_registry.json says which), and no rewording can make such a specification into
one written before its data. What can is new data. The round goes in four steps, each recorded before
the next begins:

1. **Freeze.** Every book claim's specification as the registry holds it (registration plus
   amendments, :func:`attnlab.claims_registry.effective_spec`), with the commit it was frozen at.
2. **Plan.** For each claim, the fresh seeds that give its frozen rule 80 % power at its registered
   smallest effect of interest or tolerance, with the spread of the exploratory seeds
   (:func:`seeds_needed`: the rule itself, simulated); for each entry, the price of one more seed
   (its ``seed_runs``, costed by ``attnlab book --plan``'s calibration). Within a compute budget,
   claims are bought cheapest per claim first; the claims beyond it are named with their price.
3. **Register.** The plan is written to data/confirmatory_plan.json and committed before any
   confirmatory run starts. From then on it only grows: :func:`plan_rewrites` refuses a plan whose
   seeds, counts or specifications differ from its first committed version.
4. **Judge once.** Each planned claim is judged with its frozen specification on the planned seeds'
   numbers only (:func:`judge_confirmatory`): a number from any other seed — an exploratory one
   above all — is refused, and Holm's correction runs within the family of confirmatory claims.

Seeds come from :data:`CONFIRM_SEED` upward, a range no committed run has used.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import verdicts as V
from ..claims_registry import effective_kind, effective_spec, git_output, spec_key
from ..errors import AttnlabError
from ..sequential import N_MAX
from ..stats import MIN_SEEDS, PASS, POWER, judge_spec, param_value

CONFIRM_SEED = 20270000  # the first confirmatory seed; every committed run used 20261014-20261023
PLAN_KIND = "confirmatory_plan"
REPS = 4000  # simulated replications per seed count (power to within about ±1 %)
# the numbers of a plan that registration fixes: a change to any is a tamper
FIXED_KEYS = ("frozen", "seed_start", "claims", "budget_core_s")


class ConfirmError(AttnlabError):
    pass


# ---------------------------------------------------------------- power of a frozen rule


def _alternative(spec: Mapping, mean: float) -> float:
    """The true mean at which a rule's power is asked: the registered effect (SESOI) for an effect
    rule, the book's value for a value rule, the band's middle for a band, no difference for an
    equivalence; an every rule has no alternative of its own (the exploratory mean)."""
    rule, p = spec.get("rule"), {k: param_value(v) for k, v in (spec.get("params") or {}).items()}
    if rule == "effect":
        return float(p.get("direction", 1)) * float(p["sesoi"])
    if rule == "value":
        return float(p["book"])
    if rule == "band":
        lo, hi = float(p["lo"]), float(p["hi"])
        return (lo + hi) / 2 if math.isfinite(lo) and math.isfinite(hi) else mean
    if rule == "equivalence":
        return 0.0
    return mean


def _passes(spec: Mapping, draws: np.ndarray) -> np.ndarray | None:
    """Whether each row of ``draws`` PASSes the interval rules of attnlab.stats, computed for all rows at
    once with the rules' own conditions (tests check it equals judge_spec row by row); None for a rule
    judged one row at a time."""
    from ..stats import ALPHA

    rule, p = spec.get("rule"), {k: param_value(v) for k, v in (spec.get("params") or {}).items()}
    n = draws.shape[1]
    m = draws.mean(axis=1)
    sd = draws.std(axis=1, ddof=1)
    if rule == "effect":
        x = float(p.get("direction", 1)) * m
        h = _t(n, 1 - ALPHA) * sd / math.sqrt(n)
        lo, hi = x - h, x + h
        return (lo > 0) & (hi >= float(p["sesoi"]))
    if rule == "value":
        h = _t(n, 1 - ALPHA) * sd * math.sqrt(1 + 1 / n)
        off = np.abs(m - float(p["book"]))
        return (off <= h) & (off + h <= float(p["tol"]))
    if rule == "band":
        h = _t(n, 1 - ALPHA) * sd / math.sqrt(n)
        return (float(p["lo"]) <= m - h) & (m + h <= float(p["hi"]))
    if rule == "equivalence":
        h = _t(n, 1 - 2 * ALPHA) * sd / math.sqrt(n)
        margin = float(p["margin"])
        return (-margin < m - h) & (m + h < margin)
    return None


def _t(n: int, conf: float) -> float:
    from ..stats import t_crit

    return t_crit(n, conf)


def power_at(spec: Mapping, mean: float, sd: float, n: int, rng: np.random.Generator, reps: int = REPS) -> float:
    """The chance that ``spec`` judges PASS on n seeds drawn from N(alternative, sd): the frozen rule
    itself simulated, so every rule (and its one-run or interval logic) is priced as it will judge."""
    mu = _alternative(spec, mean)
    draws = rng.normal(mu, max(sd, 1e-12), size=(reps, n))
    fast = _passes(spec, draws)
    if fast is not None:
        return float(fast.mean())
    return float(np.mean([judge_spec(dict(spec), list(row)).verdict == PASS for row in draws]))


def seeds_needed(
    spec: Mapping, values: Sequence[float], *, seed: int = 0, max_n: int = N_MAX
) -> tuple[int | None, float]:
    """(the fewest seeds with at least 80 % power, the power there) for one rule on one input, with the
    exploratory ``values``' mean and sd; (None, best power) when no count up to ``max_n`` reaches it."""
    xs = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if len(xs) < 2:
        return None, 0.0
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    rng = np.random.default_rng(seed)
    best = 0.0
    for n in range(MIN_SEEDS, max_n + 1):
        p = power_at(spec, mean, sd, n, rng)
        best = max(best, p)
        if p >= POWER:
            return n, p
        if spec.get("rule") == "every" and p < best - 0.1:  # every seed in a band: more seeds only lower it
            break
    return None, best


def part_values(spec: Mapping, judged: Mapping | None, inputs: Mapping[str, Sequence]) -> list[list]:
    """The exploratory numbers each part of a frozen ``spec`` judges: its ``reads`` input, or, for a part
    that judges a derived quantity (``reads`` None: a growth − 1, a same-seed difference), the values the
    claim's judgement now records for that part (``judged``: the spec of the claim judged now)."""
    parts = spec.get("parts") if spec.get("rule") == "all_of" else [spec]
    jparts = (judged or {}).get("parts") if (judged or {}).get("rule") == "all_of" else [judged or {}]
    out = []
    for i, part in enumerate(parts or []):
        key = part.get("reads")
        if key:
            out.append(list(inputs.get(key) or []))
        else:
            j = jparts[i] if jparts and i < len(jparts) and isinstance(jparts[i], Mapping) else {}
            out.append(list(j.get("values") or []))
    return out


def claim_seeds(
    spec: Mapping, inputs: Mapping[str, Sequence], judged: Mapping | None = None
) -> tuple[int | None, float, str]:
    """(seeds, power, why) a frozen claim needs: an all_of needs what its hungriest part needs;
    arithmetic needs no seed. ``judged``: the spec of the claim judged now, whose parts record the
    values a part without ``reads`` judged."""
    rule = spec.get("rule")
    if rule == "exact":
        return 0, 1.0, "精确算术，重算即可 / exact arithmetic: recomputed, no seed"
    if rule in (None, "reported", "na"):
        return None, 0.0, "没有可检验的规则 / no rule that tests something"
    parts = spec.get("parts") if rule == "all_of" else [spec]
    need, power = 0, 1.0
    for i, (part, values) in enumerate(zip(parts or [], part_values(spec, judged, inputs))):
        if part.get("rule") == "exact":
            continue
        n, p = seeds_needed(part, values, seed=i)
        if n is None:
            return (
                None,
                p,
                (
                    f"{part.get('reads') or f'part {i + 1}'}: 最多 {N_MAX} 个种子也达不到 80% 功效（最好 {p:.0%}）/ no seed count up to "
                    f"{N_MAX} gives 80 % power (best {p:.0%})"
                ),
            )
        need, power = max(need, n), min(power, p)
    return need, power, f"{need} 个种子时功效 {power:.0%} / power {power:.0%} at {need} seeds"


# ---------------------------------------------------------------- the plan


@dataclass
class Planned:
    claim: str
    experiment: str
    seeds: int | None
    power: float
    why: str
    core_s: float = 0.0  # the entry's price for that many seeds (shared runs priced once per entry)
    bought: bool = False


@dataclass
class ConfirmPlan:
    frozen: str  # the commit the specifications were frozen at
    budget_core_s: float
    seed_start: int
    claims: list[Planned] = field(default_factory=list)
    specs: dict[str, dict] = field(default_factory=dict)
    runs: dict[str, dict[str, float]] = field(default_factory=dict)  # experiment -> run name -> core-seconds

    def seeds_of(self, experiment: str) -> list[int]:
        n = max((c.seeds or 0 for c in self.claims if c.bought and c.experiment == experiment), default=0)
        return [self.seed_start + i for i in range(n)]

    @property
    def spent_core_s(self) -> float:
        return sum(sum(r.values()) for r in self.runs.values())

    def to_json(self) -> dict:
        return {
            "kind": PLAN_KIND,
            "frozen": self.frozen,
            "seed_start": self.seed_start,
            "budget_core_s": round(self.budget_core_s, 1),
            "spent_core_s": round(self.spent_core_s, 1),
            "runs": {exp: sorted(r) for exp, r in sorted(self.runs.items()) if r},
            "claims": {
                c.claim: {
                    "experiment": c.experiment,
                    "seeds": c.seeds,
                    "power": round(c.power, 3),
                    "core_s": round(c.core_s, 1),
                    "bought": c.bought,
                    "why": c.why,
                    "spec": self.specs.get(c.claim),
                    "spec_sha256": spec_digest(self.specs.get(c.claim)),
                }
                for c in self.claims
            },
        }


def spec_digest(spec: Mapping | None) -> str:
    """A short fingerprint of a frozen specification (what a tamper must change)."""
    text = json.dumps(spec_key(spec), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def frozen_claims(registry: Mapping, claims: Sequence[Mapping]) -> list[tuple[Mapping, dict]]:
    """(claim judged now, its frozen specification) for every book claim of the registry: the
    registration plus amendments, which ``attnlab claims --check`` holds equal to the code's."""
    entries = registry.get("claims") or {}
    out = []
    for c in claims:
        e = entries.get(c.get("id"))
        if e is None or effective_kind(e) != "book":
            continue
        out.append((c, effective_spec(e)))
    return out


def make_plan(
    frozen: str,
    registry: Mapping,
    claims: Sequence[Mapping],
    owner: Mapping[str, str],
    price: Callable[[str, int, str], Mapping[str, float] | float | None],
    budget_core_s: float,
    seed_start: int = CONFIRM_SEED,
) -> ConfirmPlan:
    """The confirmatory plan: every frozen book claim with the seeds it needs and the runs they take
    (``price(experiment, n, claim)``: {run name: core-seconds} of the runs n fresh seeds add for that
    claim — or one number when its runs are its own — None when its entry cannot train more seeds for
    it). Claims of one entry share runs: a claim costs what its runs add to those already bought, and
    buying it settles every claim of its entry whose runs are then all bought. Bought cheapest per
    claim first within ``budget_core_s``. Pure: numbers in."""
    plan = ConfirmPlan(frozen, float(budget_core_s), seed_start)
    own: dict[str, dict[str, float]] = {}
    for c, spec in frozen_claims(registry, claims):
        n, power, why = claim_seeds(spec, c.get("inputs") or {}, c.get("spec"))
        exp = owner.get(c["id"], "?")
        runs: dict[str, float] = {}
        if n:
            p = price(exp, n, c["id"])
            if p is None:
                n, why = None, "这个条目不能为它加种子 / its experiment cannot train more seeds for it"
            else:
                runs = dict(p) if isinstance(p, Mapping) else {f"{c['id']} × {n}": float(p)}
        own[c["id"]] = runs
        plan.specs[c["id"]] = spec_key(spec)
        plan.claims.append(Planned(c["id"], exp, n, power, why, sum(runs.values())))
    for c in plan.claims:  # exact ones are free
        c.bought = c.seeds == 0

    def extra(c: Planned) -> float:
        have = plan.runs.get(c.experiment, {})
        return sum(s for name, s in own[c.claim].items() if name not in have)

    while True:
        open_ = [c for c in plan.claims if c.seeds and not c.bought]
        offers = []
        for c in open_:
            cost = extra(c)
            if plan.spent_core_s + cost > budget_core_s:
                continue
            have = set(plan.runs.get(c.experiment, {})) | set(own[c.claim])
            got = [x for x in open_ if x.experiment == c.experiment and set(own[x.claim]) <= have]
            offers.append((cost / len(got), c.experiment, c.claim, got))
        if not offers:
            break
        _, exp, cid, got = min(offers, key=lambda o: (o[0], o[1], o[2]))
        bucket = plan.runs.setdefault(exp, {})
        for x in got:
            bucket.update(own[x.claim])
            x.bought = True
    for c in plan.claims:
        if c.seeds and not c.bought:
            c.why += (
                f"；超出预算，还要 {extra(c) / 3600:.2f} 核时 / beyond the budget: {extra(c) / 3600:.2f} more core-h"
            )
    return plan


# ---------------------------------------------------------------- registration holds


def plan_rewrites(first: Mapping, now: Mapping) -> list[str]:
    """What ``now`` changed of the plan as first committed (``first``): seeds, counts, budget or any
    frozen specification. Results may be added; nothing registered may change."""
    out = []
    for k in ("frozen", "seed_start", "budget_core_s"):
        if first.get(k) != now.get(k):
            out.append(f"{k}: {first.get(k)} → {now.get(k)}")
    fc, nc = first.get("claims") or {}, now.get("claims") or {}
    for cid, a in fc.items():
        b = nc.get(cid)
        if b is None:
            out.append(f"{cid}: removed from the plan")
            continue
        for k in ("experiment", "seeds", "bought", "spec", "spec_sha256"):
            if a.get(k) != b.get(k):
                out.append(f"{cid}: {k} changed ({a.get(k)} → {b.get(k)})")
        if spec_digest(b.get("spec")) != b.get("spec_sha256"):
            out.append(f"{cid}: its spec no longer matches its fingerprint")
    out += [f"{cid}: added after registration" for cid in nc if cid not in fc]
    return out


# ---------------------------------------------------------------- judging once


def judge_confirmatory(plan: Mapping, numbers: Mapping[str, Mapping[int, Mapping[str, float]]]) -> list[dict]:
    """Each bought claim judged once with its frozen specification on the planned seeds' numbers:
    ``numbers[experiment][seed][input] = value``. A seed outside the plan's (an exploratory one, or
    beyond its count) is refused, never used; a claim missing some planned seed is INCONCLUSIVE with
    the seeds it still lacks. Holm runs within the confirmatory family."""
    start = int(plan["seed_start"])
    out = []
    for cid, c in (plan.get("claims") or {}).items():
        if not c.get("bought") or not c.get("spec"):
            continue
        spec = c["spec"]
        exp, n = c["experiment"], int(c.get("seeds") or 0)
        have = numbers.get(exp) or {}
        wrong = sorted(s for s in have if not start <= int(s) < start + max(n, 1) and n)
        older = [s for s in wrong if int(s) < start]
        if older:
            raise ConfirmError(
                f"{cid}: seeds {older[:3]} are not confirmatory (the plan's start from {start}); exploratory data "
                "cannot confirm a claim — remove them from the confirmatory numbers"
            )
        seeds = [start + i for i in range(n)]
        if spec.get("rule") == "exact":
            continue  # recomputed by its entry: arithmetic has no seed to confirm
        lacking = [s for s in seeds if s not in have]
        inputs = {}
        parts = spec.get("parts") if spec.get("rule") == "all_of" else [spec]
        for part in parts:
            key = part.get("reads")
            if key:
                inputs[key] = [have[s].get(key) for s in seeds if s in have]
        if lacking:
            out.append(
                {
                    "id": cid,
                    "kind": "book",
                    "verdict": V.INCONCLUSIVE,
                    "reason": f"还缺 {len(lacking)} 个种子 / {len(lacking)} planned seed(s) not trained yet",
                    "inputs": inputs,
                    "p": None,
                }
            )
            continue
        filled = _filled(spec, inputs)
        j = judge_spec(filled)
        out.append(
            {
                "id": cid,
                "kind": "book",
                "verdict": j.verdict,
                "p": j.p,
                "inputs": inputs,
                "n": n,
                "reason": j.detail,
            }
        )
    return V.with_holm(out)


def _filled(spec: Mapping, inputs: Mapping[str, list]) -> dict:
    if spec.get("rule") == "all_of":
        return {"rule": "all_of", "parts": [_filled(p, inputs) for p in spec.get("parts") or []]}
    return {**spec, "values": [float(x) for x in inputs.get(spec.get("reads") or "") or [] if x is not None]}


# ---------------------------------------------------------------- this checkout's plan


def draft(data, budget_core_s: float, frozen: str) -> ConfirmPlan:
    """The plan for this checkout's book: its registry and committed entries in ``data``, each entry's
    price of n fresh seeds from the book's own cost calibration (``attnlab book --plan``)."""
    from ..claims_registry import find, load
    from . import EXPERIMENTS
    from .labbook import judged_now
    from .plan import calibration, default_records_dir
    from .runs import Scale

    data = Path(data)
    registry = load(find(Path("."), data))
    judged = judged_now(EXPERIMENTS, data)
    claims = [c for _, c in judged]
    owner = {c["id"]: e.id for e, c in judged}
    by_id = {e.id: e for e in EXPERIMENTS}
    scale = Scale.make(False)
    cal = calibration(EXPERIMENTS, default_records_dir(data.resolve().parent), scale)  # once, for every price

    def price(experiment: str, n: int, cid: str) -> dict[str, float] | None:
        e = by_id.get(experiment)
        if e is None or e.seed_runs is None:
            return None
        runs = {}
        for i in range(n):
            for r in e.seed_runs(scale, CONFIRM_SEED + i, cid):
                runs.setdefault(r.name, r)
        if len(runs) == 0:
            return None
        return {name: cal.seconds(r.cfg) for name, r in runs.items()}  # fresh seeds: nothing on disk

    return make_plan(frozen, registry, claims, owner, price, budget_core_s)


# ---------------------------------------------------------------- registering and training

PLAN_FILE = "confirmatory_plan.json"  # in the data folder, committed before any confirmatory run
LEDGER_FILE = "confirmatory/progress.json"  # what has been trained: one line of numbers per finished run
RUNS_DIR = "confirm/runs"  # the confirmatory runs (not committed: their numbers are, in the ledger)


def git(root: Path, *args: str) -> str:
    """``git -C root args`` (attnlab.claims_registry.git_output), a failure as one ConfirmError line."""
    import subprocess

    try:
        return git_output(root, *args)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        why = (getattr(e, "stderr", None) or "").strip() or str(e)
        raise ConfirmError(f"git {' '.join(args[:2])}: {why}") from None


def register(plan: ConfirmPlan, data: Path) -> Path:
    """Write the plan to ``data``/confirmatory_plan.json, refusing to replace one: a registered plan is
    never rewritten (commit it before the first run; ``attnlab claims --confirm-train`` checks)."""
    from ..io import write_json

    path = Path(data) / PLAN_FILE
    if path.exists() or path.is_symlink():
        raise ConfirmError(
            f"{path} exists: a registered plan is never replaced (results are added beside it; a new round "
            "needs a new seed range and its own file)"
        )
    return write_json(path, plan.to_json())


def registered(root: Path, data: Path) -> dict:
    """The plan as committed, checked: it is tracked by git, unchanged since HEAD, and nothing in it
    differs from its first committed version (:func:`plan_rewrites`). Raises ConfirmError otherwise."""
    from ..schemas import load as load_schema

    path = Path(data) / PLAN_FILE
    if not path.is_file():
        raise ConfirmError(
            f"no registered plan at {path}: draft it (`attnlab claims --confirm-plan 6h`), register it "
            "(`--confirm-register 6h`) and commit it before training"
        )
    rel = path.resolve().relative_to(Path(root).resolve()).as_posix()
    try:
        first = git(root, "log", "--diff-filter=A", "--format=%H", "--", rel).split()
    except ConfirmError:  # no commit at all yet
        first = []
    if not first:
        raise ConfirmError(f"{rel} is not committed: commit the plan before any confirmatory run starts")
    if git(root, "status", "--porcelain", "--", rel).strip():
        raise ConfirmError(f"{rel} differs from its committed version: restore it (`git checkout -- {rel}`)")
    now = load_schema("confirmatory_plan", path, error=ConfirmError)
    was = json.loads(git(root, "show", f"{first[-1]}:{rel}"))
    problems = plan_rewrites(was, now)
    if problems:
        raise ConfirmError(f"{rel} was changed after registration ({first[-1][:7]}): " + "; ".join(problems[:3]))
    return {**now, "registered_commit": first[-1]}


def planned_runs(plan: Mapping, experiments: Sequence, scale) -> dict[str, list]:
    """{experiment: its runs} for every bought claim, from the entries' ``seed_runs`` on the plan's seeds,
    checked against the run names the plan registered (a change of the code's runs is refused)."""
    by_id = {e.id: e for e in experiments}
    out: dict[str, dict] = {}
    for cid, c in (plan.get("claims") or {}).items():
        if not c.get("bought") or not c.get("seeds"):
            continue
        e = by_id.get(c["experiment"])
        if e is None or e.seed_runs is None:
            raise ConfirmError(f"{cid}: its experiment {c['experiment']!r} no longer trains seeds")
        runs = out.setdefault(e.id, {})
        for i in range(int(c["seeds"])):
            for r in e.seed_runs(scale, int(plan["seed_start"]) + i, cid):
                runs.setdefault(r.name, r)
    registered_names = plan.get("runs") or {}
    for exp, runs in out.items():
        if sorted(runs) != sorted(registered_names.get(exp) or []):
            extra = sorted(set(runs) ^ set(registered_names.get(exp) or []))[:3]
            raise ConfirmError(
                f"{exp}: the code's runs for the plan differ from the registered ones ({', '.join(extra)}): the runs "
                "are fixed at registration"
            )
    return {exp: list(runs.values()) for exp, runs in out.items()}


def seed_of(run) -> int:
    return int(run.cfg.seed)


def batches(runs: Mapping[str, list]) -> list[tuple[int, list[tuple[str, object]]]]:
    """The runs in batches of one seed each, lowest seed first: a batch finished is a seed every
    entry can judge."""
    by_seed: dict[int, list] = {}
    for exp, rs in sorted(runs.items()):
        for r in rs:
            by_seed.setdefault(seed_of(r), []).append((exp, r))
    return sorted(by_seed.items())


def ledger_line(exp: str, finished) -> dict:
    """What the ledger keeps of one finished confirmatory run: enough to see it was trained as planned
    (its config's hash, steps, end losses, the sha256 of its summary) — the numbers the claims read are
    measured from the run folders when the round is judged."""
    from ..io import read_json

    path = Path(finished.run_dir) / "summary.json"
    summary = read_json(path, max_bytes=10**7) if path.is_file() else {}  # finite numbers only
    raw = path.read_bytes() if path.is_file() else b""
    return {
        "experiment": exp,
        "seed": int(finished.run.cfg.seed),
        "config_sha256": hashlib.sha256(json.dumps(finished.run.cfg.to_dict(), sort_keys=True).encode()).hexdigest()[
            :16
        ],
        "steps": summary.get("steps"),
        "val_loss_end": summary.get("val_loss_end"),
        "train_loss_end": summary.get("loss_end"),
        "seconds": round(float(getattr(finished, "seconds", 0.0) or 0.0), 1),
        "summary_sha256": hashlib.sha256(raw).hexdigest(),
    }


def train(
    root: Path,
    data: Path,
    *,
    workers: int = 1,
    max_batches: int | None = None,
    log: Callable[[str], None] = print,
    scale=None,
) -> dict:
    """Train the registered plan's runs, one seed's batch at a time, into ``root``/confirm/runs, and
    keep a line per finished run in ``data``/confirmatory/progress.json (written after each batch, so an
    interrupted round resumes where it stopped: finished runs are reused, a cut one resumes from its
    checkpoint). Refuses a plan that is not committed or was changed. Returns the ledger."""
    from ..corpus import load_corpus
    from ..io import read_json, write_json
    from ..runner import ExecutorOptions, execute
    from . import EXPERIMENTS
    from .runs import Scale

    root, data = Path(root), Path(data)
    plan = registered(root, data)
    runs = planned_runs(plan, EXPERIMENTS, scale or Scale.make(False))
    ledger_path = data / LEDGER_FILE
    ledger = read_json(ledger_path, max_bytes=10**7) if ledger_path.is_file() else {}
    ledger.setdefault("kind", "confirmatory_progress")
    ledger["plan_commit"] = plan["registered_commit"]
    done = ledger.setdefault("runs", {})
    text = load_corpus(None, min_chars=200)
    every = batches(runs)
    todo = [(seed, items) for seed, items in every if any(r.name not in done for _, r in items)]
    total = len({r.name for _, items in every for _, r in items})  # a run two entries share counts once
    for seed, items in todo[: max_batches or None]:
        by_name: dict[str, tuple] = {}
        for exp, r in items:  # a run two entries share (the case's) is trained once
            was = by_name.setdefault(r.name, (exp, r))[1]
            if (was.group, was.cfg) != (r.group, r.cfg):
                raise ConfirmError(f"{r.name}: two entries plan different runs under one name ({was.group}, {r.group})")
        log(f"验证性训练 / confirmatory batch: seed {seed}, {len(by_name)} run(s); {len(done)} of {total} done")
        finished = execute(
            [r for _, r in by_name.values()],
            text,
            root / RUNS_DIR,
            options=ExecutorOptions("local", workers=workers, progress=False),
            keep_going=True,
            log=log,
            desc=f"confirm s{seed}",
        )
        for name, f in finished.items():
            done[name] = ledger_line(by_name[name][0], f)
        ledger["trained_core_s"] = round(sum(x.get("seconds") or 0.0 for x in done.values()), 1)
        write_json(ledger_path, ledger)
    left = total - len(done)
    log(f"验证性训练 / confirmatory runs: {len(done)} of {total} finished" + (f", {left} to go" if left else ""))
    return ledger


# ---------------------------------------------------------------- judging the round once

VERDICTS_FILE = "confirmatory/verdicts.json"


def _case_document(root: Path, start: int, n: int, steps: int, base: Path | None = None) -> Path:
    """The case's document over the first n confirmatory seeds, measured from the round's run folders
    (nothing trained: every run is finished), in ``root``/confirm/case_n<n>/data/ch1_case.json.

    ``base``: the document of fewer of the same seeds (the round's case claims ask for 3 to 18): it
    is kept as it is and only the seeds it lacks are measured (``run_case``'s ``base``), so each seed
    is measured once however many of the claims' seed counts include it."""
    import os

    from ..runner import ExecutorOptions
    from .case.run import read_case_json, run_case
    from .case.settings import CaseSettings

    out = root / "confirm" / f"case_n{n}"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    link = out / "runs" / "case"
    if not link.exists():
        os.symlink(os.path.relpath(root / RUNS_DIR / "case", link.parent), link)
    settings = CaseSettings(
        steps=steps,
        seeds=tuple(start + i for i in range(n)),
        big_seeds=n,
        wd_values=(),
        execution=ExecutorOptions("serial", progress=False),
        **({} if steps >= 1500 else {"init_samples": 8, "init_samples_fixed": 3, "val_batches": 2}),
    )
    earlier = read_case_json(base / "data" / "ch1_case.json") if base is not None else None
    run_case(settings, out, progress=False, log=lambda *a, **k: None, base=earlier, overwrite=True)
    return out


def _claims_of(
    e, base, start: int, n: int, root: Path, text: str, case_base: Path | None = None
) -> tuple[dict[str, dict], Path]:
    """Entry ``e``'s claims judged by its own measure and judge on the first n confirmatory seeds only
    (``base``: the scale of the round's runs; ``case_base``: the case's document of fewer seeds, grown
    by :func:`_case_document`), and the folder its numbers were read from."""
    from dataclasses import replace

    from .labbook import Context

    where = root / "confirm"
    if e.id == "case":
        where = _case_document(root, start, n, base.steps, case_base)
    scale = replace(base, seeds=n, first_seed=start)
    ctx = Context(scale=scale, text=text, root=where, finished={}, experiment=e, train=False, previous=None)
    outcome = e.measure(ctx)
    res = outcome.results
    allowed = {str(start + i) for i in range(n)}
    seen = set((res.get("per_seed") or {}).keys())
    if seen - allowed:
        raise ConfirmError(f"{e.id}: numbers of seeds {sorted(seen - allowed)[:3]} reached the confirmatory judge")
    from .labbook import judge_input

    inp = judge_input(e, where, res, data=where / "data")  # the entry's own document, never the repository's
    if e.source is not None:
        from ..schemas import PAIRS
        from .runs import member_runs

        used = {int((r.get("config") or {}).get("seed", -1)) for key in PAIRS for r in member_runs(inp["source"], key)}
        if not used <= {int(x) for x in allowed}:
            raise ConfirmError(f"{e.id}: its document holds seeds {sorted(used)[:3]}, not only the round's")
    return {c["id"]: c for c in e.judge(inp)}, where


def judge_round(root: Path, data: Path, log: Callable[[str], None] = print, scale=None) -> dict:
    """Judge the registered round once, when every planned run is finished: each bought claim by its
    entry's own measure and judge on exactly its planned seeds, its specification checked equal to the
    frozen one, Holm within the confirmatory family; written to ``data``/confirmatory/verdicts.json."""
    from ..corpus import load_corpus
    from ..io import read_json, write_json
    from . import EXPERIMENTS
    from .runs import Scale

    root, data = Path(root), Path(data)
    scale = scale or Scale.make(False)
    plan = registered(root, data)
    runs = planned_runs(plan, EXPERIMENTS, scale)
    ledger_path = data / LEDGER_FILE
    done = (read_json(ledger_path, max_bytes=10**7) if ledger_path.is_file() else {}).get("runs") or {}
    missing = sorted({r.name for rs in runs.values() for r in rs} - set(done))
    if missing:
        raise ConfirmError(
            f"{len(missing)} planned run(s) not finished ({', '.join(missing[:3])}…): the round is judged once, when "
            "every run is in (`bash scripts/confirm_train.sh`)"
        )
    start = int(plan["seed_start"])
    by_id = {e.id: e for e in EXPERIMENTS}
    want: dict[tuple[str, int], list[str]] = {}
    for cid, c in (plan.get("claims") or {}).items():
        if c.get("bought") and c.get("seeds"):
            want.setdefault((c["experiment"], int(c["seeds"])), []).append(cid)
    text = load_corpus(None, min_chars=200)
    judged: list[dict] = []
    grown: Path | None = None  # the case's document of the last, smaller seed count
    for (exp, n), cids in sorted(want.items()):  # seed counts ascending within an entry
        log(f"验证性判定 / judging {exp} on {n} confirmatory seed(s): {len(cids)} claim(s)")
        claims, where = _claims_of(by_id[exp], scale, start, n, root, text, grown if exp == "case" else None)
        grown = where if exp == "case" else grown
        for cid in cids:
            c = claims.get(cid)
            frozen = plan["claims"][cid]["spec"]
            if c is None:
                raise ConfirmError(f"{cid}: {exp} no longer judges it")
            if spec_digest(spec_key(c.get("spec"))) != spec_digest(frozen):
                raise ConfirmError(f"{cid}: its specification in code is not the frozen one ({plan['frozen'][:7]})")
            judged.append({**c, "confirm_seeds": n})
    out = V.with_holm([c for c in judged if c.get("kind") == "book"])
    doc = {
        "kind": "confirmatory_verdicts",
        "plan_commit": plan["registered_commit"],
        "frozen": plan["frozen"],
        "seed_start": start,
        "claims": {
            c["id"]: {
                k: c.get(k)
                for k in ("verdict", "holm", "p", "n", "confirm_seeds", "detail", "inputs", "spec", "statement")
            }
            for c in out
        },
    }
    write_json(data / VERDICTS_FILE, doc)
    return doc


# ---------------------------------------------------------------- what the reports show of the round

BEYOND_BUDGET, NO_POWER, NO_SEEDS, NO_RULE = "budget", "power", "seeds", "rule"
WHY_NOT = {  # why a book claim is not in the round, as the reports group it
    BEYOND_BUDGET: "超出预算 / beyond the budget",
    NO_POWER: "30 个种子内功效不足 80% / no 80 % power within 30 seeds",
    NO_SEEDS: "条目不能加种子 / its entry trains no more seeds",
    NO_RULE: "没有可检验的规则 / no rule that tests something",
}


def _why_not(c: Mapping) -> str:
    """The group of a claim the plan did not buy, from its registered reason."""
    if c.get("seeds"):
        return BEYOND_BUDGET
    why = str(c.get("why") or "")
    if "cannot train more seeds" in why:
        return NO_SEEDS
    if "no rule" in why:
        return NO_RULE
    return NO_POWER


def standing(data: Path) -> dict | None:
    """The confirmatory round as the reports show it, from ``data``'s registered plan, its ledger and
    (once judged) its verdicts; None when no plan is registered there. The claims' texts do not move
    with the training (a report rebuilt mid-round is the same page). Reading it needs no git: the
    trainer and the judge check the plan's commit, the reports only say where the round stands.

    Returns {"plan": {registered fields}, "trained": k, "trained_core_s": the ledger's (None without one), "runs": m,
    "judged": bool, "claims": {id: {"status":
    "judged" | "pending" | "exact" | one of :data:`WHY_NOT`, "seeds": n, "verdict": the confirmatory
    verdict after Holm or None, "text": one line for the claim's row}}}."""
    from ..io import read_json
    from ..schemas import load as load_schema

    data = Path(data)
    if not (data / PLAN_FILE).is_file():
        return None
    plan = load_schema("confirmatory_plan", data / PLAN_FILE, error=ConfirmError)
    ledger = read_json(data / LEDGER_FILE, max_bytes=10**7) if (data / LEDGER_FILE).is_file() else {}
    verdicts = read_json(data / VERDICTS_FILE, max_bytes=10**7) if (data / VERDICTS_FILE).is_file() else None
    if verdicts is not None and (
        verdicts.get("kind") != "confirmatory_verdicts" or not isinstance(verdicts.get("claims"), dict)
    ):
        raise ConfirmError(
            f"{data / VERDICTS_FILE} is not the round's verdicts; judge again (attnlab claims --confirm-judge)"
        )
    planned = {n for names in (plan.get("runs") or {}).values() for n in names}
    trained = len(planned & set((ledger.get("runs") or {}).keys()))
    judged = (verdicts or {}).get("claims") or {}
    claims: dict[str, dict] = {}
    for cid, c in (plan.get("claims") or {}).items():
        n = int(c.get("seeds") or 0)
        if c.get("bought") and n == 0:
            row = {
                "status": "exact",
                "verdict": None,
                "text": "精确算术，重算即可（无种子）/ exact arithmetic: recomputed, no seed",
            }
        elif c.get("bought") and cid in judged:
            v = judged[cid]
            shown = v.get("holm") or v.get("verdict")
            row = {
                "status": "judged",
                "verdict": shown,
                "tested": isinstance(v.get("p"), (int, float)),  # an every-seed check has no p: Holm does not touch it
                "text": f"{shown} · {n} 个新种子 / {n} fresh seeds",  # the verdict breaks apart from its count
            }
        elif c.get("bought"):  # how far the training is, `attnlab claims --confirm-status` says
            row = {"status": "pending", "verdict": None, "text": f"待判：{n} 个新种子 / pending: {n} fresh seeds"}
        else:
            group = _why_not(c)
            h = float(c.get("core_s") or 0) / 3600
            price = f"（{n} 个种子，{h:.2f} 核时 / {n} seeds, {h:.2f} core-h）" if group == BEYOND_BUDGET else ""
            row = {"status": group, "verdict": None, "text": f"未验证 / not confirmed：{WHY_NOT[group]}{price}"}
        claims[cid] = {**row, "seeds": n}
    return {
        "plan": {k: plan.get(k) for k in ("frozen", "seed_start", "budget_core_s", "spent_core_s")},
        "trained": trained,
        "trained_core_s": ledger.get("trained_core_s", 0) if ledger else None,  # the ledger's wall core-seconds
        "runs": len(planned),
        "judged": verdicts is not None,
        "claims": claims,
    }


def headline(stand: Mapping, exploratory: Mapping[str, str], short: bool = False) -> str:
    """One line for the headlines: the round's confirmatory verdicts of the book's claims (after Holm),
    the exact ones recomputed, how many exploratory PASSes were confirmed, and why the rest are not
    in it; while the round trains, that it does. ``exploratory``: {claim id: today's verdict};
    ``short``: the confirmatory counts alone (the README)."""
    rows = stand["claims"]
    seed0, frozen = stand["plan"]["seed_start"], str(stand["plan"]["frozen"])[:7]
    groups = {g: sum(r["status"] == g for r in rows.values()) for g in WHY_NOT}
    left = sum(groups.values())
    why = "；".join(f"{WHY_NOT[g].split(' / ')[0]}：{k}" for g, k in groups.items() if k)
    why_en = "; ".join(f"{WHY_NOT[g].split(' / ')[1]}: {k}" for g, k in groups.items() if k)
    exact = sum(r["status"] == "exact" for r in rows.values())
    bought = [cid for cid, r in rows.items() if r["status"] in ("judged", "pending")]
    if not stand["judged"]:
        if short:
            return (
                f"验证性一轮 / confirmatory round：{len(bought)} 条书中论断在新种子上训练中 / {len(bought)} book claims "
                "training on fresh seeds（`attnlab claims --confirm-status`）"
            )
        return (
            f"验证性一轮（新种子 {seed0} 起）在训练：{len(bought)} 条书中论断待判（进度：attnlab claims --confirm-status）；"
            f"{exact} 条精确算术重算；未纳入 {left} 条（{why}）/ the confirmatory round (fresh seeds from {seed0}) is "
            f"training: {len(bought)} book claims to judge; {exact} exact, recomputed; {left} not in it ({why_en})"
        )
    got = {v: sum(rows[c]["verdict"] == v for c in bought) for v in (PASS, "FAIL", "INCONCLUSIVE")}
    untested = sum(rows[c]["verdict"] == PASS and rows[c].get("tested") is False for c in bought)
    was = [c for c in bought if exploratory.get(c) == PASS]
    kept = sum(rows[c]["verdict"] == PASS for c in was)
    # "after Holm" counts only the tested PASSes; every-seed checks (no p) are their own count
    passes, holm_en = f"经 Holm 后 {got[PASS]} PASS", " after Holm"
    if untested:
        passes = f" {got[PASS]} PASS（Holm 后检验过的 {got[PASS] - untested}，逐种子 {untested}）"
        holm_en = f" ({got[PASS] - untested} after Holm, {untested} every-seed)"
    if short:
        return (
            f"验证性一轮 / confirmatory：新种子上 {len(bought)} 条书中论断{passes}、{got['FAIL']} FAIL、"
            f"{got['INCONCLUSIVE']} INCONCLUSIVE；探索性 PASS 中 {kept}/{len(was)} 条确认 / fresh seeds: "
            f"{got[PASS]} of {len(bought)} PASS{holm_en}, {kept} of {len(was)} exploratory PASSes confirmed"
        )
    return (
        f"验证性一轮（新种子 {seed0} 起，规格冻结于 {frozen}）：{len(bought)} 条书中论断{passes}、"
        f"{got['FAIL']} FAIL、{got['INCONCLUSIVE']} INCONCLUSIVE；探索性 PASS 的 {len(was)} 条中 {kept} 条得到确认；"
        f"{exact} 条精确算术重算；未纳入 {left} 条（{why}）/ the confirmatory round (fresh seeds from {seed0}, "
        f"specifications frozen at {frozen}): of {len(bought)} book claims, {got[PASS]} PASS{holm_en}, {got['FAIL']} "
        f"FAIL, {got['INCONCLUSIVE']} INCONCLUSIVE; {kept} of the {len(was)} exploratory PASSes confirmed; {exact} exact, "
        f"recomputed; {left} not in it ({why_en})"
    )
