"""The runner's ``slurm`` executor: one SLURM job array per batch of runs, through submitit.

SLURM users have a shared filesystem, so a job trains its run straight into the run folder
(``train_one`` on the folder's absolute path) and the driver only waits: the result it gets back
is ``train_one``'s status dict, the same as every other executor's, and ``runner.execute`` turns
it into the same :class:`runner.Finished`. The corpus is written once beside submitit's logs
(``<runs root>/_slurm/``) instead of travelling in every job's pickle.

Preemption and time limits: a job is a ``submitit.helpers.Checkpointable``. When SLURM (or
submitit's local executor, ``job._interrupt()``) sends the preemption signal, the job first stops
its run the runner's own way (the training loop's Ctrl-C flag: a checkpoint at the step it is
at, never mid-update), then hands over to submitit, whose handler calls ``checkpoint()`` and
requeues the job; the requeued job calls ``train_one`` again, which resumes from that
checkpoint bit-identically.

Resources come from :class:`SlurmOptions` (``--slurm-partition``, ``--slurm-time``,
``--slurm-cpus``, ``--slurm-parallelism`` or a small TOML/JSON file, ``--slurm-config``).
``cluster="local"`` runs the same jobs with submitit's local executor (no SLURM needed): what
the tests run.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import AttnlabError
from .io import write_text
from .run_task import RunnerError, RunsInterrupted, train_one  # never attnlab.runner: it imports this module

try:  # the slurm extra; the module stays importable without it
    import submitit

    _Checkpointable = submitit.helpers.Checkpointable
except ImportError:  # pragma: no cover - exercised by a fresh install without the extra
    submitit = None
    _Checkpointable = object

CLUSTERS = ("slurm", "local", "debug")
# sane maxima (a bigger value is a typo, and would be allocated: the plan packs runs onto that many slots)
MAX_TIME_MIN = 366 * 1440  # a year per job
MAX_CPUS = 4096
MAX_PARALLELISM = 100_000
MAX_MEM_GB = 1_000_000
CONFIG_MAX_BYTES = 1_000_000  # --slurm-config: a small table
LOG_DIR = "_slurm"  # under the runs root: submitit's pickles and logs, the corpus once
POLL_S = 30  # how often a SLURM job's state is asked for (sacct itself is rate-limited by submitit)
# a job sacct has never reported after this long is given up on, in one line (it was purged, or the
# submission went to another cluster): waiting for it would be waiting forever
UNKNOWN_AFTER_S = 900


class SlurmConfigError(AttnlabError):
    pass


@dataclass(frozen=True)
class SlurmOptions:
    """What one job of the array asks SLURM for, and how many run at once."""

    partition: str | None = None
    time_min: int = 120  # per job (one run); a requeued job gets it again
    cpus: int = 1  # cpus per task = torch threads of the run (1: bit-identical to serial at 1 thread)
    parallelism: int = 32  # slurm_array_parallelism: jobs of the array running at once
    mem_gb: float | None = None
    max_requeues: int = 10  # timeouts a run may be requeued after (preemptions do not count)
    folder: str | None = None  # submitit's folder (default: <runs root>/_slurm)
    cluster: str = "slurm"  # slurm | local (submitit's local executor) | debug (in this process)
    extra: dict = field(default_factory=dict)  # more sbatch options: account, qos, constraint, ...

    def __post_init__(self):
        if self.cluster not in CLUSTERS:
            raise SlurmConfigError(f"slurm cluster {self.cluster!r}: use one of {', '.join(CLUSTERS)}")
        for name, hi in (("time_min", MAX_TIME_MIN), ("cpus", MAX_CPUS), ("parallelism", MAX_PARALLELISM)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise SlurmConfigError(f"slurm {name} must be a whole number >= 1, got {v!r}")
            if v > hi:
                raise SlurmConfigError(f"slurm {name} {v:,} is more than the sane maximum of {hi:,}")
        mem = self.mem_gb
        if mem is not None and not (
            isinstance(mem, int | float) and not isinstance(mem, bool) and math.isfinite(mem) and 0 < mem <= MAX_MEM_GB
        ):
            raise SlurmConfigError(f"slurm mem_gb must be a positive number of at most {MAX_MEM_GB:,}, got {mem!r}")

    @property
    def total_cpus(self) -> int:
        return self.cpus * self.parallelism


def parse_time(text: str | int) -> int:
    """SLURM's --time formats ('90', '1:30:00', '2-00:00:00', '2-12') or '2h', '90m' -> minutes."""
    t = str(text).strip().lower()
    if len(t) > 20:  # SLURM's longest form is D-HH:MM:SS; thousands of digits are a typo
        raise SlurmConfigError(
            f"--slurm-time {t[:20]!r}… ({len(t):,} characters): give minutes (90), H:MM:SS (1:30:00), D-HH (2-12) or 2h"
        )
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m(?:in)?)?", t)
    if t and m and any(m.groups()):
        minutes = int(m.group(1) or 0) * 60 + int(m.group(2) or 0)
    else:
        days, _, rest = t.rpartition("-") if "-" in t else ("0", "", t)
        parts = rest.split(":")
        if not days.isdigit() or not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
            raise SlurmConfigError(f"--slurm-time {text!r}: give minutes (90), H:MM:SS (1:30:00), D-HH (2-12) or 2h")
        if "-" in t:  # days-hours[:minutes[:seconds]]
            h, mi, s = ([int(p) for p in parts] + [0, 0])[:3]
        elif len(parts) == 3:
            h, mi, s = (int(p) for p in parts)
        else:  # minutes[:seconds]
            h, mi, s = 0, int(parts[0]), int(parts[1]) if len(parts) == 2 else 0
        minutes = int(days) * 1440 + h * 60 + mi + (1 if s else 0)
    if minutes < 1:
        raise SlurmConfigError(f"--slurm-time {text!r}: must be at least one minute")
    if minutes > MAX_TIME_MIN:
        raise SlurmConfigError(f"--slurm-time {text!r}: more than a year per job; give a shorter limit")
    return minutes


def read_config(path: str | os.PathLike) -> dict:
    """A small TOML (Python 3.11+) or JSON file: partition, time, cpus, parallelism, mem_gb,
    max_requeues, folder, cluster, and [extra] sbatch options (account, qos, ...). Read within
    bounds (a FIFO or ``/dev/zero`` is refused, never waited on or read forever) and checked against
    its schema (attnlab.schemas.SlurmConfig: types, ranges, known options) before any is used."""
    from .io import read_bounded
    from .schemas import check

    p = Path(path)
    what = f"--slurm-config {p}"
    if p.suffix.lower() == ".json":
        from .io import read_json

        data = read_json(p, error=SlurmConfigError, max_bytes=CONFIG_MAX_BYTES, hint="; give a small JSON table")
    else:
        raw = read_bounded(p, CONFIG_MAX_BYTES, error=SlurmConfigError, hint="; give a small TOML table")
        try:
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        except ImportError:
            raise SlurmConfigError(f"{what}: TOML needs Python 3.11+; give a .json file") from None
        except UnicodeDecodeError as e:
            raise SlurmConfigError(f"{what}: not UTF-8 (byte {e.start})") from None
        except RecursionError:
            raise SlurmConfigError(f"{what}: nested too deeply to be a table of options") from None
        except ValueError as e:  # tomllib's errors are ValueErrors
            raise SlurmConfigError(f"{what}: not valid {p.suffix.lstrip('.') or 'TOML'} ({e})") from None
    if not isinstance(data, dict):
        raise SlurmConfigError(f"{what}: expected a table of options")
    return check("slurm_config", data, p, error=SlurmConfigError)


def make_options(config: str | os.PathLike | None = None, **given: Any) -> SlurmOptions:
    """Options from a config file, then the command-line values given (None: not given)."""
    data = read_config(config) if config else {}
    if "time" in data:
        data["time_min"] = parse_time(data.pop("time"))
    known = {f.name for f in fields(SlurmOptions)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SlurmConfigError(
            f"--slurm-config {config}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    if given.get("time") is not None:
        given["time_min"] = parse_time(given["time"])
    given.pop("time", None)
    try:
        return replace(SlurmOptions(**data), **{k: v for k, v in given.items() if v is not None})
    except TypeError as e:
        raise SlurmConfigError(f"slurm options: {e}") from None


# ----------------------------------------------------------------------------- on a node
def _preempt_signal() -> int:
    return getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2"), signal.SIGUSR2)


class RunJob(_Checkpointable):
    """One SLURM job: train (reuse, resume) one run in its folder on the shared filesystem."""

    def __call__(self, task: dict) -> dict:
        text = Path(task["text_path"]).read_text(encoding="utf-8")
        sig = _preempt_signal()
        previous = signal.getsignal(sig)
        caught: list = []

        def on_preempt(signum, frame) -> None:
            if not caught:
                caught.append((signum, frame))
                signal.raise_signal(signal.SIGINT)  # the training loop's stop: checkpoint at this step

        try:
            signal.signal(sig, on_preempt)
        except ValueError:  # not the main thread (debug cluster): no preemption to catch
            previous = None
        try:
            r = train_one({**{k: v for k, v in task.items() if k != "text_path"}, "text": text})
        except KeyboardInterrupt:  # stopped before training began: nothing to checkpoint
            r = {"name": task["name"], "status": "interrupted", "seconds": 0.0, "error": None, "messages": []}
        finally:
            if previous is not None:
                signal.signal(sig, previous)
        if caught and callable(previous):
            previous(*caught[0])  # submitit: checkpoint() -> requeue -> exit; the new job resumes
        return r

    def checkpoint(self, task: dict):
        """Requeue the same run: the runner's checkpoint in its folder is where it resumes."""
        return submitit.helpers.DelayedSubmission(RunJob(), task)


# ----------------------------------------------------------------------------- the driver
def _require(opts: SlurmOptions) -> None:
    if submitit is None:
        raise RunnerError("the slurm executor needs submitit: pip install 'attnlab[slurm]'")
    if opts.cluster == "slurm":
        missing = [c for c in ("sbatch", "srun") if shutil.which(c) is None]  # submitit runs each job with srun
        if missing:
            raise RunnerError(
                f"--executor slurm: no `{missing[0]}` on PATH (not on a SLURM login node?"
                + (" submitit starts every job with srun" if missing == ["srun"] else "")
                + "); run attnlab there, or use --executor local or ray"
            )


def executor_for(opts: SlurmOptions, folder: Path):
    """The submitit executor of one array: resources from ``opts``."""
    more = {"slurm_max_num_timeout": opts.max_requeues} if opts.cluster == "slurm" else {}
    ex = submitit.AutoExecutor(folder=folder, cluster=opts.cluster, **more)  # files named by job id
    params: dict[str, Any] = {"name": "attnlab", "timeout_min": opts.time_min}
    if opts.cluster == "slurm":
        params |= {"cpus_per_task": opts.cpus, "slurm_array_parallelism": opts.parallelism}
        if opts.partition:
            params["slurm_partition"] = opts.partition
        if opts.mem_gb is not None:
            params["mem_gb"] = opts.mem_gb
        if opts.extra:
            params["slurm_additional_parameters"] = dict(opts.extra)
    ex.update_parameters(**params)
    return ex


def _failed(task: dict, error: str) -> dict:
    return {"name": task["name"], "status": "failed", "seconds": 0.0, "error": error, "messages": []}


def _job_error(job, e: Exception) -> str:
    """One line: what failed and where its log is."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    last = next((ln for ln in reversed(lines) if re.match(r"^\w+(Error|Exception|Interrupt)\b", ln)), None)
    why = last or (lines[0] if lines else type(e).__name__)
    try:
        log = job.paths.stderr
    except Exception:  # pragma: no cover - a job without paths (debug)
        log = "?"
    return f"slurm job {job.job_id} failed ({why[:200]}); log: {log}"


def _completed(jobs: Iterable, poll_s: float, unknown_after_s: float) -> Iterator[tuple[Any, str | None]]:
    """(job, None) for each job as it ends (finished, failed or cancelled), like submitit's
    ``as_completed``; (job, why) for a job the scheduler has not reported once ``unknown_after_s``
    seconds after submission (sacct knows nothing of it: it will never end for us)."""
    start = time.monotonic()
    left = list(jobs)
    seen: set[str] = set()  # jobs sacct has reported at least once (pending, running ...)
    while left:
        for job in list(left):
            if job.done():
                left.remove(job)
                yield job, None
            elif job.state.upper() != "UNKNOWN":
                seen.add(job.job_id)
            elif job.job_id not in seen and time.monotonic() - start > unknown_after_s:
                left.remove(job)
                yield (
                    job,
                    (
                        f"slurm job {job.job_id} is unknown to the scheduler: sacct has no record of it "
                        f"{unknown_after_s:.0f} s after submission; check `sacct -j {job.job_id}` and rerun to resume"
                    ),
                )
        if left:
            time.sleep(poll_s)


def run_slurm(
    tasks: list[dict],
    on_result: Callable[[dict], None],
    on_step: Callable[[], None] | None = None,
    *,
    slurm: SlurmOptions | Mapping | None = None,
    root: str | Path = ".",
    steps_of: Mapping[str, int] | None = None,
    **_,
) -> None:
    """The runner's ``slurm`` executor: submit ``tasks`` as one job array and collect the results."""
    opts = slurm if isinstance(slurm, SlurmOptions) else make_options(**dict(slurm or {}))
    if not tasks:  # everything reused: no cluster needed
        return
    _require(opts)
    folder = Path(opts.folder or Path(root) / LOG_DIR).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    text = tasks[0]["text"]
    text_path = folder / f"corpus-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}.txt"
    if not text_path.is_file():
        write_text(text_path, text)
    jobs_tasks = [
        {
            **{k: v for k, v in t.items() if k != "text"},
            "dir": str(Path(t["dir"]).resolve()),
            "text_path": str(text_path),
            "threads": opts.cpus,
        }
        for t in tasks
    ]
    ex = executor_for(opts, folder)
    try:
        jobs = ex.map_array(RunJob(), jobs_tasks)
    except Exception as e:  # sbatch refused (bad partition, account, time)
        first = (str(e).strip().splitlines() or [type(e).__name__])[-1]
        raise RunnerError(f"sbatch refused the job array: {first}") from None
    task_of = {job.job_id: t for job, t in zip(jobs, jobs_tasks)}
    poll = 0.5 if opts.cluster == "local" else POLL_S
    try:
        for job, lost in _completed(jobs, poll, UNKNOWN_AFTER_S if opts.cluster == "slurm" else math.inf):
            task = task_of[job.job_id]
            if lost:
                r = _failed(task, lost)
                on_result(r)
                continue
            try:
                r = job.result()
            except Exception as e:  # the job died: out of time or memory, killed, or a crash
                r = _failed(task, _job_error(job, e))
            else:
                if r.get("status") == "interrupted":
                    r = _failed(task, f"slurm job {job.job_id} stopped without requeue; rerun to resume it")
            if on_step and steps_of:
                for _ in range(steps_of.get(task["name"], 0)):
                    on_step()
            on_result(r)
    except KeyboardInterrupt:
        for job in jobs:
            if not job.done():
                job.cancel(check=False)
        raise RunsInterrupted() from None
