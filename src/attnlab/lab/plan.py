"""``attnlab book --plan`` and ``attnlab case --plan``: what a run of the book will cost, before the spend.

For the chosen executor and worker count the plan lists the runs to train and those already
finished on disk (``runner.finished_history``; a checkpointed run counts only its steps left),
the core-hours they need and the wall time of packing them onto the executor's slots longest
first (the runner's own order). ``ray`` counts the cluster's advertised CPUs
(``ray.cluster_resources()`` at ``--ray-address`` / ``RAY_ADDRESS``; without one, the local Ray
this machine would start), ``slurm`` its ``--slurm-cpus`` x array parallelism.

Costs come from the committed timing records (``data/lab_book/<id>.json`` "timings": the seconds
``per_run`` each timed run took, one thread each, on the machines that trained them, and
``per_run_conditions``, what its sessions recorded of the machine; and ``data/plan_check.json``,
the runs ``scripts/plan_check.py`` timed) and the cost model of ``attnlab book --decide``
(attnlab.lab.decide): a run takes ``runner.train_cost(cfg)`` times a rate in seconds per unit of
cost, the rate of the records of its shape (``perf.shape_key``: the same matrices) where there are
some, else the rate pooled over every record that calibrates.

Only records taken on idle cores calibrate (:func:`attnlab.runfolder.load_state`: the process was
on the CPU at least 0.9 of its wall time and the load did not exceed the CPUs): the wall time of a
run on shared cores is the sharing's, and records older than the CPU-time record say nothing of
their cores. With at least ``MIN_RECORDS`` idle runs the plan calibrates on their wall time; with
fewer, on the CPU time of every run that recorded it (the time a run takes on a core of its own,
without the waits of shared ones; slightly short of an idle core's wall, which also counts I/O);
without either, on decide's default rate. The plan says which it did and how many records it set
aside. A run whose own record calibrates costs its own seconds (not in ``--quick``, whose runs
are not the records'). Per-run speed is that of one thread (the book's small models gain little
from more).

The records time a run's training loop only. The wall time adds what ``scripts/bench_case_plan.py``
measured beside it (``data/bench_case_plan.json``, :class:`Factors`, each a multiple of one
reference run that the calibration prices, so it follows the records' machine): each run's work
outside its timed loop (its worker process, the corpus and tokenizer, the summary), a run's speed
with others beside it (the records were timed two at once: a run alone is faster, and runs timed
alone would be slower two at once) and, for ``case --plan``, the case's init sweeps before the
first run and its report and figures after every batch, the batches trained one after another
(``case_stages``: each batch packed on its own, the next waits for the last run of the one before).
Not counted: the setup (pip install) and the case's measurement between batches. ``--quick`` plans
go without the factors (they price full-size runs).

The calibration speaks of its machine's speed. ``book --plan`` and ``case --plan`` therefore run a
speed probe on the reader's machine first (:func:`probe`: a few training steps of the reference
run's model on one thread, the least CPU time of a few repeats, a few seconds) and compare it with
the probe stored beside the calibration (data/plan_check.json "probe", recorded by
scripts/plan_check.py); every price is multiplied by the ratio (:func:`machine_speed`,
:func:`scaled`), and the printout says so (``--no-probe`` skips it). :func:`calibration` itself is
never scaled: the confirmatory round's registered prices come from it.
"""

from __future__ import annotations

import heapq
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..config import Config
from ..errors import AttnlabError
from ..perf import shape_key
from ..runfolder import BUSY, IDLE, IDLE_CPU_SHARE, LOAD_SLACK, UNKNOWN, load_state
from ..runner import SERIAL, ExecutorOptions, Run, check_ray_reachable, finished_history, steps_on_disk, train_cost
from .decide import DEFAULT_S_PER_COST
from .labbook import DATA_DIR
from .runs import Scale


class PlanError(AttnlabError):
    pass


MIN_RECORDS = 3  # idle runs (else runs with CPU time) needed to calibrate on them
PLAN_CHECK = "plan_check.json"  # scripts/plan_check.py's runs, in data/ beside data/lab_book/
FACTORS = "bench_case_plan.json"  # scripts/bench_case_plan.py's factors, in data/ beside data/lab_book/
PROBE_STEPS = 10  # training steps of one repeat of the speed probe (the reference run has 300)
PROBE_REPEATS = 3  # the probe's CPU time: the least of these repeats (other work on the cores only adds)


@dataclass(frozen=True)
class Factors:
    """What ``make case`` spends beside its runs' timed training, as scripts/bench_case_plan.py
    measured it (data/bench_case_plan.json): each a multiple of the timed CPU seconds of one
    reference run (the case's small model, a few hundred steps), which the plan prices with its
    calibration like any run, so the factors carry to a machine of another speed. None of them
    measured: all 0 (and the concurrency 1)."""

    reference: Config | None = None
    outside_timed: float = 0.0  # a run's process beside its timed loop: start, imports, corpus, summary
    sweeps: float = 0.0  # the case's init sweeps (before any training)
    report: float = 0.0  # the case's report and figures, written after every batch
    concurrency: float = 1.0  # a run's timed CPU seconds two at once on two cores over alone
    source: str = ""

    def seconds(self, cal: Calibration, factor: float) -> float:
        """``factor`` reference runs in seconds, priced by ``cal``."""
        return factor * cal.seconds(self.reference) if self.reference is not None else 0.0


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


@dataclass(frozen=True)
class RunRecord:
    """One timed run: its wall seconds and what it recorded of the machine."""

    name: str
    source: str  # the experiment whose record holds it, or "plan_check"
    cfg: Config
    seconds: float  # wall, over its sessions
    cpu_s: float | None = None  # the training process's CPU time (user + system)
    load: float | None = None  # the machine's 1-minute load at its end (the highest over sessions)
    cpus: int | None = None
    threads: int = 1
    state: str = UNKNOWN  # idle | busy | unknown (runfolder.load_state)


@dataclass
class Calibration:
    """What the plan's rates come from: the records that calibrate and those set aside."""

    basis: str  # "idle" (wall time of idle runs) | "cpu" (CPU time) | "default" (decide's rate)
    rate: float  # seconds per unit of train_cost, pooled
    shape_rates: dict = field(default_factory=dict)  # perf.shape_key -> seconds per unit of cost
    own: dict[str, float] = field(default_factory=dict)  # run name -> its own calibrating seconds
    used: list[RunRecord] = field(default_factory=list)
    aside: dict[str, int] = field(default_factory=dict)  # busy | unknown -> runs set aside

    def seconds(self, cfg: Config) -> float:
        """One thread's seconds for a run of ``cfg``: its shape's rate, else the pooled one."""
        return train_cost(cfg) * self.shape_rates.get(shape_key(cfg), self.rate)


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
    rate: float = DEFAULT_S_PER_COST  # seconds per unit of train_cost (the calibration's pooled rate)
    calibration: Calibration | None = None
    owner: dict[str, str] = field(default_factory=dict)  # run name -> first experiment declaring it
    # beside the runs' timed training (Factors, priced by the calibration; 0 where not measured):
    batches: list[list[str]] | None = None  # run names trained one batch after another (None: one batch)
    run_extra_s: float = 0.0  # each run's process beside its timed loop
    before_s: float = 0.0  # before the first run (the case's init sweeps)
    batch_s: float = 0.0  # after each batch that trains (the case's report and figures)
    concurrency: float = 1.0  # a run's timed seconds two (or more) at once over alone
    calibrated_at: int = 1  # runs at once when the calibration's records were timed
    factors_from: str = ""
    factors: Factors = field(default_factory=Factors)  # what the fields above were priced from
    machine: Speed | None = None  # this machine's speed against the calibration's (None: not probed)

    @property
    def pricing(self) -> Calibration:
        """The calibration the plan prices by: this machine's speed applied where it was probed."""
        return priced(self.calibration or Calibration("default", self.rate), self.machine)

    @property
    def todo(self) -> list[RunCost]:
        return [c for c in self.costs if not c.finished]

    @property
    def finished(self) -> list[RunCost]:
        return [c for c in self.costs if c.finished]

    @property
    def core_s(self) -> float:
        return sum(c.left_s for c in self.todo)

    def speed(self, slots: int) -> float:
        """A run's timed seconds on ``slots`` runs at once over what the calibration says (records
        timed two at once say ``concurrency`` times more than a run alone takes, and the reverse)."""
        at = lambda k: self.concurrency if k > 1 else 1.0  # noqa: E731
        return at(slots) / at(self.calibrated_at)

    def batch_walls(self, slots: int | None = None) -> list[float]:
        """Each batch's wall time on ``slots`` (default the plan's): its runs packed longest first,
        each with its process beside the timed loop, then what follows the batch."""
        slots = slots or self.slots
        left = {c.run.name: c.left_s for c in self.todo}
        batches = self.batches if self.batches is not None else [list(left)]
        k = self.speed(slots)
        walls = []
        for names in batches:
            secs = [left[n] * k + self.run_extra_s for n in names if n in left]
            walls.append(pack(secs, slots) + self.batch_s if secs else 0.0)
        return walls

    def train_wall_s(self, slots: int | None = None) -> float:
        """The runs' timed training alone, packed as the batches are (no process, sweep or report)."""
        slots = slots or self.slots
        left = {c.run.name: c.left_s * self.speed(slots) for c in self.todo}
        batches = self.batches if self.batches is not None else [list(left)]
        return sum(pack([left[n] for n in b if n in left], slots) for b in batches if any(n in left for n in b))

    def wall_at(self, slots: int) -> float:
        """The plan's wall time on ``slots`` runs at once: sweeps, batches and reports."""
        walls = self.batch_walls(slots)
        return (self.before_s if any(walls) else 0.0) + sum(walls)

    @property
    def wall_s(self) -> float:
        return self.wall_at(self.slots)


def pack(seconds: Sequence[float], slots: int) -> float:
    """Wall time of running jobs of these durations on ``slots`` slots, longest first, each to the
    slot that frees first (the runner's order: longest first, next free worker)."""
    if not seconds:
        return 0.0
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


def read_run_records(experiments: Sequence, records_dir: Path, scale: Scale) -> tuple[list[RunRecord], int]:
    """Every run timed one by one in the records under ``records_dir`` at ``scale`` (each run once,
    from the first experiment naming it), with its machine's conditions, and the count of timed
    runs only a sum records (records older than ``per_run``: their cores are unknown)."""
    from ..schemas import load

    out: dict[str, RunRecord] = {}
    sums = 0
    for e in experiments:
        p = Path(records_dir) / f"{e.id}.json"
        if not (p.exists() or p.is_symlink()):
            continue
        doc = load("lab_book_entry", p, error=PlanError, id=e.id)
        if bool((doc.get("scale") or {}).get("quick", False)) != scale.quick:
            continue
        t = doc.get("timings") or {}
        by_name = {r.name: r for r in e.runs(scale)}
        per_run = {k: float(v) for k, v in (t.get("per_run") or {}).items() if k in by_name and float(v) > 0}
        if not per_run:
            sums += int(t.get("timed_runs") or 0) if t.get("compute_s") else 0
            continue
        conditions = t.get("per_run_conditions") or {}
        for k, secs in per_run.items():
            if k not in out:
                out[k] = run_record(k, e.id, by_name[k].cfg, secs, conditions.get(k) or {})
    return list(out.values()), sums


def run_record(name: str, source: str, cfg: Config, seconds: float, c: Mapping) -> RunRecord:
    """A RunRecord from a run's seconds and its conditions; its state by runfolder.load_state (busy
    also where the sessions said so: one busy session makes the run busy)."""
    threads = int(c.get("threads") or 1)
    state = load_state(seconds, c.get("cpu_s"), c.get("load"), c.get("cpus"), threads)
    if c.get("state") == BUSY and state == IDLE:
        state = BUSY
    return RunRecord(name, source, cfg, float(seconds), c.get("cpu_s"), c.get("load"), c.get("cpus"), threads, state)


def read_check_records(path: Path) -> list[RunRecord]:
    """The runs scripts/plan_check.py timed (data/plan_check.json), as records."""
    from ..schemas import load

    if not (path.exists() or path.is_symlink()):
        return []
    doc = load("plan_check", path, error=PlanError)
    out = []
    for r in doc["runs"]:
        try:
            cfg = Config.from_dict(r["config"])
        except AttnlabError as e:
            raise PlanError(f"{path}: run {r['name']}: {e}; run `python scripts/plan_check.py` again") from None
        out.append(run_record(r["name"], "plan_check", cfg, r["seconds"], r))
    return out


def read_factors(path: Path) -> Factors:
    """scripts/bench_case_plan.py's factors (data/bench_case_plan.json); none when it is absent."""
    from ..schemas import load

    if not (path.exists() or path.is_symlink()):
        return Factors()
    f = load("bench_case_plan", path, error=PlanError)["factors"]
    try:
        ref = Config.from_dict(f["reference"]["config"])
    except AttnlabError as e:
        raise PlanError(
            f"{path}: factors.reference.config: {e}; run `python scripts/bench_case_plan.py` again"
        ) from None
    # two runs on two idle cores are never faster than one alone: a ratio below 1 is the noise of
    # shared cores (where "alone" had other processes beside it), counted as 1
    concurrency = max(1.0, f["concurrency"])
    return Factors(ref, f["outside_timed"], f["sweeps"], f["report"], concurrency, f"data/{path.name}")


def calibrated_at(cal: Calibration, records_dir: Path) -> int:
    """Runs at once when the calibration's records were timed: scripts/plan_check.py's workers
    (data/plan_check.json) where its runs calibrate, else one (a lab-book run's record says nothing
    of the others beside it)."""
    from ..schemas import load

    path = Path(records_dir).parent / PLAN_CHECK
    if not on_plan_check(cal) or not path.is_file():
        return 1
    return max(1, int(load("plan_check", path, error=PlanError).get("workers") or 1))


def calibrate(records: Sequence[RunRecord], unknown_sums: int = 0) -> Calibration:
    """The rates of a plan from timed runs: the wall time of idle runs when there are at least
    ``MIN_RECORDS``, else the CPU time of every run that recorded it when there are that many,
    else decide's default rate. Each shape (perf.shape_key) with records gets its own rate.
    ``unknown_sums``: timed runs only a sum records, set aside as unknown."""
    idle = [r for r in records if r.state == IDLE]
    with_cpu = [r for r in records if r.cpu_s]
    if len(idle) >= MIN_RECORDS:
        basis, used, measure = "idle", idle, (lambda r: r.seconds)
    elif len(with_cpu) >= MIN_RECORDS:
        basis, used, measure = "cpu", with_cpu, (lambda r: r.cpu_s)
    else:
        basis, used, measure = "default", [], (lambda r: 0.0)
    chosen = {id(r) for r in used}
    aside: dict[str, int] = {}
    for r in records:
        if id(r) not in chosen:
            aside[r.state] = aside.get(r.state, 0) + 1
    if unknown_sums:
        aside[UNKNOWN] = aside.get(UNKNOWN, 0) + unknown_sums
    if not used:
        return Calibration(basis, DEFAULT_S_PER_COST, aside=aside)
    secs: dict[tuple, float] = {}
    cost: dict[tuple, float] = {}
    for r in used:
        k = shape_key(r.cfg)
        secs[k] = secs.get(k, 0.0) + measure(r)
        cost[k] = cost.get(k, 0.0) + train_cost(r.cfg)
    rate = sum(secs.values()) / sum(cost.values())
    shape_rates = {k: secs[k] / cost[k] for k in secs}
    own = {r.name: measure(r) for r in used}
    return Calibration(basis, rate, shape_rates, own, list(used), aside)


def cost_runs(
    runs: Sequence[Run], cal: Calibration | float, runs_root: Path, recorded: Mapping[str, float] | None = None
) -> list[RunCost]:
    """Each run's cost: its own calibrating seconds where a record names it, else its shape's rate
    (or the pooled one) x train_cost. ``cal`` may be a bare rate."""
    out, recorded = [], recorded or {}
    if not isinstance(cal, Calibration):
        cal = Calibration("default", float(cal))
    for run in runs:
        full = recorded.get(run.name) or cal.seconds(run.cfg)
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
    if address:
        check_ray_reachable(address)  # one line within seconds, never Ray's endless reconnecting
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


# ---------------------------------------------------------------------------- this machine's speed
@dataclass(frozen=True)
class ProbeTime:
    """One run of the speed probe: the least CPU seconds of its repeats and that repeat's wall."""

    cpu_s: float
    wall_s: float
    took_s: float  # the whole probe's wall, its model and optimizer included
    repeats_cpu_s: tuple[float, ...] = ()

    @property
    def share(self) -> float:
        """The share of a core the best repeat had: its CPU over its wall time."""
        return min(1.0, self.cpu_s / self.wall_s) if self.wall_s > 0 else 1.0


@dataclass(frozen=True)
class StoredProbe:
    """The probe recorded beside the calibration (data/plan_check.json "probe")."""

    config: Config
    steps: int
    repeats: int
    cpu_s: float
    how: str  # measured (with the calibration's runs) | transferred (scripts/plan_check.py --probe)
    measured_at: str = ""


@dataclass(frozen=True)
class Speed:
    """This machine against the calibration's: the probe run now over the one stored beside it."""

    ratio: float | None  # seconds here per second there; None: not applied, ``why``
    why: str = ""
    now: ProbeTime | None = None
    stored: StoredProbe | None = None


def probe(cfg: Config, steps: int = PROBE_STEPS, repeats: int = PROBE_REPEATS) -> ProbeTime:
    """The speed probe: ``repeats`` times ``steps`` training steps of ``cfg`` (train.train_step, its
    diagnostics included, on random tokens) on one thread, after two untimed steps; the least CPU
    time of the repeats (the calling thread's: other work on the cores only adds to it) and its wall.
    The caller's torch threads and random state are left as they were."""
    import torch

    from ..model import TinyGPT
    from ..train import make_optimizer, train_step

    started = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            gen = torch.Generator().manual_seed(cfg.seed)
            data = torch.randint(cfg.vocab_size, (cfg.block_size * cfg.batch_size * 4 + 1,), generator=gen)
            model = TinyGPT(cfg)
            opt = make_optimizer(model, cfg)
            cpu = torch.device("cpu")
            step = lambda i: train_step(model, opt, data=data, gen=gen, cfg=cfg, step=i, device=cpu)  # noqa: E731
            for i in range(2):
                step(i)
            timed = []
            for _ in range(repeats):
                c0, w0 = time.thread_time(), time.perf_counter()
                for i in range(steps):
                    step(2 + i)
                timed.append((time.thread_time() - c0, time.perf_counter() - w0))
    finally:
        torch.set_num_threads(threads)
    best = min(timed)
    return ProbeTime(best[0], best[1], time.perf_counter() - started, tuple(c for c, _ in timed))


def read_probe(path: Path) -> StoredProbe | None:
    """The probe stored beside the calibration in ``path`` (data/plan_check.json); None without one."""
    from ..schemas import load

    if not (path.exists() or path.is_symlink()):
        return None
    doc = load("plan_check", path, error=PlanError).get("probe")
    if not doc:
        return None
    try:
        cfg = Config.from_dict(doc["config"])
    except AttnlabError as e:
        raise PlanError(f"{path}: probe.config: {e}; run `python scripts/plan_check.py --probe` again") from None
    return StoredProbe(cfg, doc["steps"], doc["repeats"], doc["cpu_s"], doc["how"], doc.get("measured_at") or "")


def machine_speed(cal: Calibration, path: Path, run: Callable[..., ProbeTime] = probe) -> Speed:
    """This machine's speed against the calibration's: ``run`` (the probe) now, with the stored probe's
    config, steps and repeats, over the stored CPU time. Applied only where the calibration is the
    runs the probe was stored beside (data/plan_check.json's)."""
    if not on_plan_check(cal):
        return Speed(None, f"the calibration is not the runs of data/{path.name}, beside which the probe is stored")
    stored = read_probe(path)
    if stored is None:
        return Speed(None, f"no probe stored in data/{path.name} (`python scripts/plan_check.py --probe` records one)")
    now = run(stored.config, stored.steps, stored.repeats)
    return Speed(now.cpu_s / stored.cpu_s, now=now, stored=stored)


def book_speed(registry: Sequence, records_dir: Path, run: Callable[..., ProbeTime] = probe) -> Speed:
    """This machine's speed against the full book's calibration (what every full-size price uses)."""
    cal = calibration(registry, records_dir, Scale.make(False))
    return machine_speed(cal, Path(records_dir).parent / PLAN_CHECK, run)


def on_plan_check(cal: Calibration) -> bool:
    """Whether ``cal`` is calibrated on scripts/plan_check.py's runs (data/plan_check.json), beside which
    the probe and the workers of those runs are stored."""
    return any(r.source == "plan_check" for r in cal.used)


def priced(cal: Calibration, speed: Speed | None) -> Calibration:
    """``cal`` in this machine's seconds where ``speed`` was measured (:func:`scaled`), else as it is."""
    return scaled(cal, speed.ratio) if speed and speed.ratio else cal


def scaled(cal: Calibration, ratio: float) -> Calibration:
    """``cal`` with every rate and every run's own seconds times ``ratio`` (this machine's speed)."""
    return replace(
        cal,
        rate=cal.rate * ratio,
        shape_rates={k: v * ratio for k, v in cal.shape_rates.items()},
        own={k: v * ratio for k, v in cal.own.items()},
    )


# ---------------------------------------------------------------------------- plans
def calibration(registry: Sequence, records_dir: Path, scale: Scale) -> Calibration:
    """The cost calibration of ``registry``'s committed timing records (and data/plan_check.json beside
    them, at full scale), as every plan uses it."""
    timed, sums = read_run_records(registry, records_dir, scale)
    if not scale.quick:
        timed += read_check_records(Path(records_dir).parent / PLAN_CHECK)
    return calibrate(timed, sums)


def make_plan(
    title: str,
    runs: Sequence[Run],
    runs_root: Path,
    *,
    registry: Sequence,
    records_dir: Path,
    scale: Scale,
    options: ExecutorOptions = SERIAL,
    speed_probe: Callable[..., ProbeTime] | None = None,
) -> Plan:
    """The plan of training ``runs`` under ``runs_root``, their costs from the records of ``registry``
    (and data/plan_check.json beside them, at full scale) that were taken on idle cores, executed as
    ``options`` say (attnlab.runner.ExecutorOptions). With ``speed_probe`` (:func:`probe`) it is run
    now and every price scaled by this machine's speed against the calibration's (:func:`machine_speed`)."""
    records = read_records(registry, records_dir)
    cal = calibration(registry, records_dir, scale)
    speed = machine_speed(cal, Path(records_dir).parent / PLAN_CHECK, speed_probe) if speed_probe else None
    here = priced(cal, speed)  # this machine's seconds
    costs = cost_runs(runs, here, Path(runs_root), here.own if not scale.quick else {})
    slots, cpus, where = slots_for(options, sum(not c.finished for c in costs))
    owner: dict[str, str] = {}
    for e in registry:
        for r in e.runs(scale):
            owner.setdefault(r.name, e.id)
    # the factors price full-size runs: a --quick plan (its own calibration, tiny runs) goes without
    f = read_factors(Path(records_dir).parent / FACTORS) if not scale.quick else Factors()
    return Plan(
        title,
        options.executor,
        slots,
        cpus,
        where,
        costs=costs,
        records=records,
        records_from=str(records_dir),
        rate=cal.rate,
        calibration=cal,
        owner=owner,
        run_extra_s=f.seconds(here, f.outside_timed),
        concurrency=f.concurrency,
        calibrated_at=calibrated_at(cal, records_dir),
        factors_from=f.source,
        factors=f,
        machine=speed,
    )


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
    from .case.run import case_runs, case_stages

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
    plan.batches = [[r.name for r in batch] for _, batch in case_stages(settings)]  # the report after each
    f = plan.factors  # none for a --quick plan (make_plan: they price full-size runs)
    plan.before_s = f.seconds(plan.pricing, f.sweeps)
    plan.batch_s = f.seconds(plan.pricing, f.report)
    return plan


def core_time(s: float) -> str:
    """Core-seconds as a reader counts them: "120 core-s", "1.25 core-h"."""
    return f"{s / 3600:.2f} core-h" if s >= 360 else f"{s:.0f} core-s"


def duration(s: float) -> str:
    """Wall-clock seconds as a reader counts them: "40 s", "12 min", "1.5 h"."""
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
        f"  估计 / estimate: {core_time(p.core_s)}; 墙钟 / wall ≈ {duration(p.wall_s)} "
        f"(longest first onto {p.slots} slot(s), one thread per run"
        + (f", {sum(1 for w in p.batch_walls() if w)} batch(es) one after another" if p.batches else "")
        + ")",
        *wall_lines(p),
        *speed_lines(p),
    ]
    per: dict[str, list[float]] = {}
    for c in todo:
        per.setdefault(p.owner.get(c.run.name) or re.sub(r"_s\d+$", "", c.run.name), []).append(c.left_s)
    if per:
        parts = sorted(per.items(), key=lambda kv: -sum(kv[1]))
        lines.append(
            f"  每{'个实验' if p.owner else '组运行'} / per {'experiment' if p.owner else 'kind of run'} (runs, cost): "
            + ", ".join(f"{k} {len(v)} {core_time(sum(v))}" for k, v in parts)
        )
    lines += calibration_lines(p.calibration or Calibration("default", p.rate), p.records_from)
    return "\n".join(lines)


def wall_lines(p: Plan) -> list[str]:
    """What the wall time holds beside the runs' timed training, and what it leaves out."""
    todo = len(p.todo)
    if not todo:
        return []
    batches = sum(1 for w in p.batch_walls() if w)
    parts = [f"timed training {duration(p.train_wall_s())}"]
    if p.run_extra_s:
        parts.append(f"each run beside its timed loop (its process, corpus, summary) {p.run_extra_s:.0f} s x {todo}")
    if p.before_s:
        parts.append(f"init sweeps {duration(p.before_s)}")
    if p.batch_s:
        parts.append(f"report and figures {p.batch_s:.0f} s x {batches} batch(es)")
    k = p.speed(p.slots)
    if p.factors_from:
        parts.append(
            f"a run beside another {p.concurrency:.2f} x one alone (x{k:.2f} here: the records were timed "
            f"{p.calibrated_at} at once)"
        )
    where = f" ({p.factors_from}, priced by the calibration)" if p.factors_from else ""
    left = "setup (pip install)" + (", the measurement between batches" if p.batches else "")
    if not p.factors_from:
        left += ", each run's process beside its timed training (no factors measured: scripts/bench_case_plan.py)"
    return [f"  墙钟包含 / the wall holds: {', '.join(parts)}{where}; 不含 / not counted: {left}"]


def speed_lines(p: Plan) -> list[str]:
    """This machine's speed as the plan applied it: the ratio measured now, or why none was."""
    s = p.machine
    if s is None:
        if p.calibration is None or not on_plan_check(p.calibration):
            return []
        return ["  本机速度 / this machine's speed: not probed; the prices are the calibration machine's"]
    if s.ratio is None:
        return [f"  本机速度 / this machine's speed: not applied: {s.why}"]
    now, stored = s.now, s.stored
    lines = [
        f"  本机速度 / this machine's speed: x{s.ratio:.2f} the calibration machine's, measured just now "
        f"({stored.steps} training steps of the reference run's model, one thread, best of {stored.repeats}: "
        f"{now.cpu_s:.2f} CPU s against {stored.cpu_s:.2f} s {'beside' if stored.how == 'measured' else 'carried to'} "
        f"the calibration; the probe took {now.took_s:.1f} s); every price above includes it (--no-probe: not probed)"
    ]
    if now.share < IDLE_CPU_SHARE and p.todo:
        lines.append(
            f"  这些核正忙 / these cores are busy now: the probe had {now.share:.0%} of a core; while that lasts "
            f"the wall stretches to about {duration(p.wall_s / now.share)}"
        )
    return lines


def _sources(used: Sequence[RunRecord]) -> str:
    n: dict[str, int] = {}
    for r in used:
        key = "data/plan_check.json" if r.source == "plan_check" else "data/lab_book"
        n[key] = n.get(key, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in n.items())


def calibration_lines(cal: Calibration, records_from: str = "") -> list[str]:
    """What the plan calibrated on and what it set aside, as `--plan` prints it."""
    rule = f"busy: CPU time < {IDLE_CPU_SHARE:g} x wall, or 1-min load > CPUs + {LOAD_SLACK:g}"
    x = f"{cal.rate / DEFAULT_S_PER_COST:.2f} x decide's default rate"
    if cal.basis == "idle":
        head = (
            f"  校准 / calibrated on: {len(cal.used)} run(s) timed on idle cores, their wall time "
            f"({_sources(cal.used)}; {len(cal.shape_rates)} shape(s) with their own rate; pooled {x})"
        )
    elif cal.basis == "cpu":
        busy = sum(r.state == BUSY for r in cal.used)
        head = (
            f"  校准 / calibrated on: fewer than {MIN_RECORDS} runs timed on idle cores, so the CPU time of "
            f"{len(cal.used)} run(s) ({_sources(cal.used)}; {busy} on busy cores, their wall time not used): "
            f"the time a run takes on a core of its own ({len(cal.shape_rates)} shape(s) with their own rate; "
            f"pooled {x})"
        )
    else:
        head = (
            f"  校准 / calibrated on: fewer than {MIN_RECORDS} runs timed on idle cores, and fewer than "
            f"{MIN_RECORDS} with their CPU time, in {records_from or 'the records'}: decide's default rate "
            f"(one core of the development machine)"
        )
    aside = ", ".join(f"{n} {state}" for state, n in sorted(cal.aside.items())) or "none"
    return [
        head,
        f"  搁置 / set aside: {aside} run record(s) ({rule}; unknown: recorded before CPU time and load were)",
    ]
