"""``attnlab book --plan`` and ``attnlab case --plan``: what a run of the book will cost, before the spend.

For the chosen executor and worker count the plan lists the runs to train and those already
finished on disk (``runner.finished_history``; a checkpointed run counts only its steps left),
the core-hours they need and the wall time of packing them onto the executor's slots longest
first (the runner's own order). ``ray`` counts the cluster's advertised CPUs
(``ray.cluster_resources()`` at ``--ray-address`` / ``RAY_ADDRESS``; without one, the local Ray
this machine would start), ``slurm`` its ``--slurm-cpus`` x array parallelism.

Costs come from the committed timing records (``data/lab_book/<id>.json`` "timings": the seconds
``compute_s`` its ``timed_runs`` of ``runs`` took, one thread each, on the machines that trained
them; ``per_run`` names each timed run's seconds where the record has it) and the cost model of
``attnlab book --decide`` (attnlab.lab.decide): a run takes ``runner.train_cost(cfg)``
times a rate in seconds per unit of cost. The rate is the recorded seconds of every experiment
over the expected cost of its timed runs (without ``per_run`` the records do not say which runs
were timed: they count as runs of the experiment's mean cost, exact where its runs share one
shape), pooled over the experiments, so runs of one config cost the same whoever declares them;
a run that ``per_run`` names costs its own recorded seconds; without records, ``decide``'s
default rate. Per-run speed is that of one thread (the book's small models gain little from more).
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AttnlabError
from ..runner import SERIAL, ExecutorOptions, Run, finished_history, steps_on_disk, train_cost
from .decide import DEFAULT_S_PER_COST
from .labbook import DATA_DIR
from .runs import Scale


class PlanError(AttnlabError):
    pass


@dataclass(frozen=True)
class Record:
    """One experiment's committed timing record, as a rate."""

    experiment: str
    compute_s: float
    timed_runs: int
    runs: int
    rate: float  # seconds per unit of runner.train_cost, one thread
    per_run: dict = field(default_factory=dict)  # run name -> recorded seconds (timings.per_run), when named

    @property
    def expected_cost(self) -> float:
        """train_cost of the timed runs, each counted at the experiment's mean."""
        return self.compute_s / self.rate


@dataclass
class RunCost:
    run: Run
    seconds: float  # the whole run on one thread
    left_s: float  # what is left of it (0 when finished)
    finished: bool
    resumes: bool  # a checkpoint on disk: only the steps left are trained


@dataclass
class Plan:
    title: str
    executor: str
    slots: int  # runs at once
    cpus: int  # CPUs the executor has (advertised by the cluster, or this machine's)
    cpus_from: str
    costs: list[RunCost] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    records_from: str = ""
    rate: float = DEFAULT_S_PER_COST  # seconds per unit of train_cost (pooled_rate of the records)
    owner: dict[str, str] = field(default_factory=dict)  # run name -> first experiment declaring it

    @property
    def todo(self) -> list[RunCost]:
        return [c for c in self.costs if not c.finished]

    @property
    def finished(self) -> list[RunCost]:
        return [c for c in self.costs if c.finished]

    @property
    def core_s(self) -> float:
        return sum(c.left_s for c in self.todo)

    @property
    def wall_s(self) -> float:
        return pack([c.left_s for c in self.todo], self.slots)


def pack(seconds: Sequence[float], slots: int) -> float:
    """Wall time of running jobs of these durations on ``slots`` slots, longest first, each to the
    slot that frees first (the runner's order: longest first, next free worker)."""
    loads = [0.0] * max(1, min(slots, len(seconds)))  # more slots than jobs: the extra ones stay idle
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + s)
    return max(loads)


# ---------------------------------------------------------------------------- records
def read_records(experiments: Sequence, records_dir: Path) -> list[Record]:
    """The timing record of every experiment with a JSON under ``records_dir`` that timed some runs;
    each record's runs at the scale it was measured at."""
    from ..schemas import load

    out = []
    for e in experiments:
        p = Path(records_dir) / f"{e.id}.json"
        if not (p.exists() or p.is_symlink()):
            continue
        # read within bounds (a FIFO is refused, never waited on) and checked: attnlab.schemas.LabBookEntry
        doc = load("lab_book_entry", p, error=PlanError, id=e.id)
        t = doc.get("timings") or {}
        timed, secs = t.get("timed_runs") or 0, t.get("compute_s") or 0.0
        runs = e.runs(Scale.make(bool((doc.get("scale") or {}).get("quick", False))))
        by_name = {r.name: r for r in runs}
        per_run = {k: float(v) for k, v in (t.get("per_run") or {}).items() if k in by_name and float(v) > 0}
        if per_run:  # each timed run named: its own cost, no mean assumed
            cost = sum(train_cost(by_name[k].cfg) for k in per_run)
            out.append(
                Record(e.id, sum(per_run.values()), len(per_run), len(runs), sum(per_run.values()) / cost, per_run)
            )
            continue
        if timed <= 0 or secs <= 0 or not runs:
            continue
        mean_cost = sum(train_cost(r.cfg) for r in runs) / len(runs)
        out.append(Record(e.id, float(secs), int(timed), len(runs), secs / (timed * mean_cost)))
    return out


def pooled_rate(records: Sequence[Record]) -> float:
    """Seconds per unit of train_cost: every record's seconds over its timed runs' expected cost;
    decide's default without records."""
    cost = sum(r.expected_cost for r in records)
    return sum(r.compute_s for r in records) / cost if cost > 0 else DEFAULT_S_PER_COST


def cost_runs(
    runs: Sequence[Run], rate: float, runs_root: Path, recorded: Mapping[str, float] | None = None
) -> list[RunCost]:
    """Each run's cost: its own recorded seconds where a record names it, else train_cost x rate."""
    out, recorded = [], recorded or {}
    for run in runs:
        full = recorded.get(run.name) or train_cost(run.cfg) * rate
        d = run.dir(runs_root)
        try:
            done = finished_history(d, run.cfg)
        except AttnlabError:  # unreadable: the runner sets it aside and trains it again
            done = False
        steps = 0 if done else min(steps_on_disk(d), run.cfg.max_steps)
        left = 0.0 if done else full * (1 - steps / run.cfg.max_steps)
        out.append(RunCost(run, full, left, done, steps > 0))
    return out


def default_records_dir(root: Path) -> Path:
    """``root``'s records, else the checkout's committed ones (data/lab_book beside src/)."""
    mine = Path(root) / DATA_DIR
    if any(mine.glob("*.json")):
        return mine
    return Path(__file__).resolve().parents[3] / DATA_DIR


# ---------------------------------------------------------------------------- slots
def slots_for(options: ExecutorOptions, n_todo: int) -> tuple[int, int, str]:
    """(runs at once, CPUs, where the CPU count comes from) for an executor, as the runner uses it."""
    cores = os.cpu_count() or 1
    executor = options.executor
    if executor == "serial":
        return 1, cores, f"this machine's {cores} core(s), one run at a time"
    if executor == "local":
        w = max(1, min(options.workers or cores, max(1, n_todo)))
        return min(w, cores), cores, f"{w} local worker(s) on this machine's {cores} core(s)"  # more share cores
    if executor == "ray":
        cpus, where = ray_cpus(options.ray_address)
        return max(1, cpus), cpus, where  # one CPU per Ray task
    if executor == "slurm":
        opts = options.slurm  # SlurmOptions: ExecutorOptions fills them in for --executor slurm
        return (
            opts.parallelism,
            opts.total_cpus,
            f"--slurm-cpus {opts.cpus} x array parallelism {opts.parallelism}",
        )
    raise PlanError(f"unknown executor '{executor}'")


def ray_cpus(address: str | None) -> tuple[int, str]:
    """The CPUs a Ray cluster advertises (ray.cluster_resources()); without an address, this machine's."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    try:
        import ray
    except ImportError:
        raise PlanError("--executor ray needs Ray: pip install 'attnlab[ray]'") from None
    if ray.is_initialized():
        return int(ray.cluster_resources().get("CPU", 0)), "the Ray cluster's advertised CPUs"
    if not address:
        cores = os.cpu_count() or 1
        return cores, f"a local Ray on this machine ({cores} CPUs; set RAY_ADDRESS for a cluster)"
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise PlanError(f"cannot reach the Ray cluster at {address} to count its CPUs: {first}") from None
    try:
        return int(ray.cluster_resources().get("CPU", 0)), f"the Ray cluster at {address} (advertised CPUs)"
    finally:
        ray.shutdown()


# ---------------------------------------------------------------------------- plans
def make_plan(
    title: str,
    runs: Sequence[Run],
    runs_root: Path,
    *,
    registry: Sequence,
    records_dir: Path,
    scale: Scale,
    options: ExecutorOptions = SERIAL,
) -> Plan:
    """The plan of training ``runs`` under ``runs_root``, their costs from the records of ``registry``,
    executed as ``options`` say (attnlab.runner.ExecutorOptions)."""
    records = read_records(registry, records_dir)
    rate = pooled_rate(records)
    recorded = {k: v for r in records for k, v in r.per_run.items()}
    costs = cost_runs(runs, rate, Path(runs_root), recorded if not scale.quick else {})
    slots, cpus, where = slots_for(options, sum(not c.finished for c in costs))
    owner: dict[str, str] = {}
    for e in registry:
        for r in e.runs(scale):
            owner.setdefault(r.name, e.id)
    return Plan(title, options.executor, slots, cpus, where, costs, records, str(records_dir), rate, owner)


def book_plan(chosen: Sequence, root: Path, scale: Scale, registry: Sequence, **kw) -> Plan:
    """The runs of the chosen lab-book experiments (each once) under root/runs."""
    runs: dict[str, Run] = {}
    for e in chosen:
        for r in e.runs(scale):
            runs.setdefault(r.name, r)
    title = f"attnlab book{' --quick' if scale.quick else ''} ({len(chosen)} experiment(s))"
    records_dir = kw.pop("records_dir", None) or default_records_dir(root)
    return make_plan(
        title, list(runs.values()), Path(root) / "runs", registry=registry, records_dir=records_dir, scale=scale, **kw
    )


def case_plan(settings, out: Path, registry: Sequence, quick: bool = False, **kw) -> Plan:
    """The case study's runs (attnlab case) under out/runs, costed from the lab book's records
    (the case's runs are the book's by name), executed as ``settings.execution`` says."""
    from ..experiments.case import case_runs

    groups, _ = case_runs(settings)
    runs = [r for g in groups for r in g]
    records_dir = kw.pop("records_dir", None) or default_records_dir(out)
    plan = make_plan(
        f"attnlab case ({len(settings.seeds)} seed(s), {settings.steps} steps)",
        runs,
        Path(out) / "runs",
        registry=registry,
        records_dir=records_dir,
        scale=Scale.make(quick),
        options=settings.execution,
        **kw,
    )
    plan.owner = {}  # the breakdown by kind of run (small_scaled, big_unscaled, ...), not by experiment
    return plan


def _core(s: float) -> str:
    return f"{s / 3600:.2f} core-h" if s >= 360 else f"{s:.0f} core-s"


def _duration(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.0f} min"
    return f"{s:.0f} s"


def render(p: Plan) -> str:
    todo, done = p.todo, p.finished
    resumes = sum(c.resumes for c in todo)
    lines = [
        f"计划 / plan: {p.title}, executor {p.executor}: {p.slots} run(s) at once, {p.cpus} CPU(s) ({p.cpus_from})",
        f"  要训练 / to train: {len(todo)} run(s)"
        + (f" ({resumes} resume from a checkpoint)" if resumes else "")
        + f"; 已完成 / finished on disk: {len(done)} run(s)",
        f"  估计 / estimate: {_core(p.core_s)}; 墙钟 / wall ≈ {_duration(p.wall_s)} "
        f"(longest first onto {p.slots} slot(s), one thread per run)",
    ]
    per: dict[str, list[float]] = {}
    for c in todo:
        per.setdefault(p.owner.get(c.run.name) or re.sub(r"_s\d+$", "", c.run.name), []).append(c.left_s)
    if per:
        parts = sorted(per.items(), key=lambda kv: -sum(kv[1]))
        lines.append(
            f"  每{'个实验' if p.owner else '组运行'} / per {'experiment' if p.owner else 'kind of run'} (runs, cost): "
            + ", ".join(f"{k} {len(v)} {_core(sum(v))}" for k, v in parts)
        )
    if p.records:
        timed = sum(r.timed_runs for r in p.records)
        lo, hi = min(r.rate for r in p.records), max(r.rate for r in p.records)
        lines.append(
            f"  依据 / from: the timing records in {p.records_from} ({len(p.records)} experiment(s), {timed} timed "
            f"run record(s), {p.rate / DEFAULT_S_PER_COST:.2f} x the default rate, the experiments' own "
            f"{lo / DEFAULT_S_PER_COST:.2f}-{hi / DEFAULT_S_PER_COST:.2f} x)"
        )
    else:
        lines.append(f"  依据 / from: no timing records in {p.records_from}: the default rate (decide.py)")
    return "\n".join(lines)
