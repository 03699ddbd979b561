"""Run many training runs: one after another, in local worker processes, or on Ray.

The runner knows nothing about experiments. A run is data: a name, a ``Config``
(which holds the seed and the number of steps) and the folder it lives in; the
corpus travels as text, so a remote worker needs no path of ours. ``execute``
takes a list of runs and how to execute them (:class:`ExecutorOptions`, one
object from the command line down) and returns the same thing for every
executor: one :class:`Finished` per run, whose model, tokenizer and history are
read from the run's checkpoint when first asked for.

Every run folder is what ``train(out_dir=...)`` writes (config.json,
metrics.jsonl, ckpt.pt, summary.json), so a list of runs can be stopped and
executed again: a finished run with the same config is reused, an interrupted
one resumes from its checkpoint, and an unreadable checkpoint is set aside
(renamed ``ckpt.pt.corrupt-<time>``) and its run started afresh.

Executors:
  serial   in this process, one run after another (torch's threads as they are)
  local    ``workers`` spawned processes with ``cores // workers`` threads each;
           Ctrl-C reaches every worker once, each checkpoints its run, and the
           workers die with this process if it is killed
  ray      Ray tasks, one CPU each, on the cluster at ``ray_address`` (or
           ``RAY_ADDRESS``); with neither, a local Ray instance started here.
           Run folders travel with the task and back, so the cluster needs no
           shared disk; a run in flight at Ctrl-C restarts from its last
           checkpoint that came back, i.e. from scratch.
  slurm    one SLURM job array per batch through submitit (attnlab.slurm_executor):
           run folders on the shared filesystem, requeued and resumed after
           preemption; ``ExecutorOptions.slurm`` holds the resources

Each run owns its seed and generators, so the executor does not change a run's
numbers as long as the run gets the same number of torch threads (tested).
Different thread counts split float32 reductions differently: on the 2-core
machine a run with 1 thread and one with 2 threads part at the last bit from
step 1 on (`attnlab bench executors` reports whether serial and local agreed).
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .checkpoint import WEIGHTS_DIR, CheckpointUnreadable
from .config import Config
from .errors import AttnlabError, CheckpointError

# one run and the run errors, re-exported: the SLURM executor stands on attnlab.run_task, never on this module
from .run_task import (  # noqa: F401
    ForeignRun,
    RunnerError,
    RunsInterrupted,
    check_resumable,
    finished_history,
    set_aside,
    train_one,
)
from .runfolder import RUN_FILES, lock_holder

EXECUTORS = ("serial", "local", "ray", "slurm")
RAY_RETRIES = 3  # a Ray task whose worker or node died is started again elsewhere, this many times


class RunFailed(RunnerError):
    """Some runs did not finish; the others did. ``failures`` maps name -> error line (runs that
    raised), ``busy`` name -> the process that holds that run's folder (not a failure of the run)."""

    def __init__(self, failures: dict[str, str], busy: dict[str, str] | None = None):
        self.failures, self.busy = dict(failures), dict(busy or {})
        super().__init__(unfinished_line(self.failures, self.busy))


class RunFoldersRefused(RunFailed):
    """Checked before any training: run folders that cannot be used (another config's run, held by
    another process, not a folder). Nothing was trained; ``failures`` maps name -> the problem."""

    def __init__(self, problems: dict[str, str], busy: dict[str, str] | None = None):
        self.failures, self.busy = dict(problems), dict(busy or {})
        parts = [f"{n}: {why}" for n, why in problems.items()] + [f"{n}: busy, {h}" for n, h in self.busy.items()]
        RunnerError.__init__(
            self,
            f"nothing trained: {len(parts)} run folder(s) cannot be used ({'; '.join(parts)}); "
            f"wait for the other process, move or delete those folders, or choose another output folder",
        )


def unfinished_line(failures: dict[str, str], busy: dict[str, str]) -> str:
    """One line naming every run that did not finish and why (failed, or busy in another process)."""
    parts = [f"{n} (failed: {e})" for n, e in failures.items()] + [f"{n} (busy: {h})" for n, h in busy.items()]
    head = []
    if failures:
        head.append(f"{len(failures)} failed")
    if busy:
        head.append(f"{len(busy)} busy in another process")
    return f"{len(parts)} run(s) did not finish ({', '.join(head)}): {', '.join(parts)}"


@dataclass(frozen=True)
class Run:
    name: str
    cfg: Config
    group: str = ""  # sub-folder of the root, e.g. "case"
    keep_weights: tuple[int, ...] = ()  # keep the weights entering these steps (checkpoint.KeepWeights)

    def dir(self, root: str | Path) -> Path:
        return Path(root) / self.group / self.name if self.group else Path(root) / self.name

    @property
    def key(self) -> str:
        """The run's identity (its config and seed, never its name): ``Config.run_key``."""
        return self.cfg.run_key()


@dataclass
class Finished:
    """One run's outcome; model, tok and history are read from ckpt.pt on first use."""

    run: Run
    run_dir: Path
    status: str  # reused | trained | resumed
    seconds: float = 0.0
    _loaded: tuple | None = field(default=None, repr=False)

    def _load(self) -> tuple:
        if self._loaded is None:
            from .checkpoint import from_payload, read_checkpoint
            from .train import History

            payload = read_checkpoint(self.run_dir / "ckpt.pt")
            model, tok, _ = from_payload(payload, self.run_dir / "ckpt.pt")
            self._loaded = (model, tok, History.from_dict(payload["history"]))
        return self._loaded

    @property
    def model(self):
        return self._load()[0]

    @property
    def tok(self):
        return self._load()[1]

    @property
    def history(self):
        return self._load()[2]

    def __iter__(self):  # model, tok, history = finished
        return iter(self._load())


@dataclass(frozen=True)
class ExecutorOptions:
    """How a list of runs is executed: the one object the command line builds once
    (:func:`attnlab.cli.common.executor_options`) and every layer passes down whole to :func:`execute`.

    executor: serial | local | ray | slurm. workers: local worker processes (None: one per core).
    ray_address: the Ray cluster (None: ``RAY_ADDRESS``, else a local Ray). progress: the runner's
    progress bar. slurm: ``--executor slurm``'s resources (:class:`attnlab.slurm_executor.SlurmOptions`;
    a mapping of its fields is read into one, and None is its defaults). Checked when made: a bad
    value is a :class:`RunnerError` of one line naming the option.
    """

    executor: str = "serial"
    workers: int | None = None
    ray_address: str | None = None
    progress: bool = True
    slurm: object = None

    def __post_init__(self):
        if self.executor not in EXECUTORS:
            raise RunnerError(f"unknown executor {str(self.executor)[:40]!r}; use one of {', '.join(EXECUTORS)}")
        w = self.workers
        if w is not None and (not isinstance(w, int) or isinstance(w, bool)):
            raise RunnerError(f"--workers must be a whole number, got {w!r}")
        if w is not None and w < 1:
            raise RunnerError(f"--workers must be at least 1, got {w}")
        if self.ray_address is not None and not isinstance(self.ray_address, str):
            raise RunnerError(f"--ray-address must be an address such as HEAD:6379, got {self.ray_address!r}")
        if self.executor != "slurm":
            if self.slurm is not None:
                raise RunnerError(
                    f"slurm options belong to --executor slurm, not {self.executor}: add --executor slurm"
                )
            return
        from .slurm_executor import SlurmOptions, make_options

        if not isinstance(self.slurm, SlurmOptions):
            object.__setattr__(self, "slurm", make_options(**dict(self.slurm or {})))

    def replace(self, **changes) -> ExecutorOptions:
        """These options with ``changes`` (checked again)."""
        return replace(self, **changes)

    def record(self) -> dict:
        """What a result records of them (the case's settings): executor, workers, ray_address."""
        return {"executor": self.executor, "workers": self.workers, "ray_address": self.ray_address}


SERIAL = ExecutorOptions()  # the default: one run after another in this process, with a progress bar


# ----------------------------------------------------------------------- run folders
def folder_problem(run_dir: Path, cfg: Config) -> tuple[str, str] | None:
    """Why ``run_dir`` cannot hold the run ``cfg`` now, as (kind, text), or None when it can.

    kind: "busy" (another live process holds its lock; text names it), "foreign" (it holds a run
    of another config: training there would replace or mix with it) or "damaged" (not a folder,
    or a checkpoint the OS will not let us read). A checkpoint that is corrupt is no problem here:
    train_one sets it aside and says so. Reads config.json (the checkpoint's config when absent).
    """
    from .checkpoint import config_diff, read_checkpoint

    if run_dir.exists() and not run_dir.is_dir():
        return "damaged", f"{run_dir} is a file, not a run folder"
    if not run_dir.is_dir():
        return None
    holder = lock_holder(run_dir)
    if holder:
        return "busy", holder
    saved = None
    from .schemas import load

    try:  # bounded and checked (attnlab.schemas): a FIFO in its place is refused, never waited on
        saved = Config.from_dict(load("run_config", run_dir / "config.json", max_bytes=10**6))
    except (OSError, ValueError, TypeError, AttnlabError):
        saved = None  # missing or unreadable config.json: the checkpoint decides
    if saved is None and (run_dir / "ckpt.pt").is_file():
        try:
            saved = Config.from_dict(read_checkpoint(run_dir / "ckpt.pt")["config"])
        except CheckpointUnreadable as e:
            return "damaged", str(e)
        except (CheckpointError, KeyError, TypeError):
            return None  # corrupt: set aside and restarted by train_one
    diff = config_diff(saved, cfg, ignore=("device",)) if saved is not None else ""
    if diff:
        return "foreign", f"{run_dir} holds a run with a different config ({diff})"
    return None


def check_run_folders(runs: Sequence[Run], root: Path) -> None:
    """Every run's folder, before any training: :class:`RunFoldersRefused` listing them all at once
    (not one after an hour of training the others)."""
    problems: dict[str, str] = {}
    busy: dict[str, str] = {}
    for run in runs:
        found = folder_problem(run.dir(root), run.cfg)
        if found is None:
            continue
        kind, text = found
        if kind == "busy":
            busy[run.name] = text
        else:
            problems[run.name] = text
    if problems or busy:
        raise RunFoldersRefused(problems, busy)


def steps_on_disk(run_dir: Path) -> int:
    """Steps a run folder already holds (finished or checkpointed), for progress and ETA."""
    from .checkpoint import read_checkpoint

    ck = run_dir / "ckpt.pt"
    if not ck.is_file():
        return 0
    try:
        return int(read_checkpoint(ck).get("step", 0))
    except (CheckpointError, TypeError, ValueError):
        return 0


# ------------------------------------------------------------------------ executors
def _serial(tasks: list[dict], on_result, on_step, **_) -> None:
    for task in tasks:
        r = train_one(task, on_step)
        on_result(r)
        if r["status"] == "interrupted":
            raise RunsInterrupted()


_worker_queue = None
_worker_halt = None


PARENT_POLL_S = 0.5  # how often a local worker looks whether its parent is still there


def _watch_parent(parent: int) -> None:
    """End this worker at once when ``parent`` is no longer its parent (killed, OOM-killed): a
    worker left behind would hold the parent's stdout and stderr open and wait on a dead pool."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="attnlab-parent-watch", daemon=True).start()


def _worker_init(queue, threads: int, halt=None, parent: int | None = None) -> None:
    """In each local worker: die with the parent, take Ctrl-C only from the parent."""
    global _worker_queue, _worker_halt
    from .runtime import die_with_parent, keep_freed_memory

    # SIGKILL, not SIGTERM: training catches SIGTERM like Ctrl-C, checkpoints and returns into the
    # dead pool, where the worker would wait for the next task forever. The watcher is the same rule
    # where no death signal exists (not Linux) or the parent died before it was asked for.
    die_with_parent(signal.SIGKILL)
    if parent is not None:
        _watch_parent(parent)
    os.setsid()  # the terminal's Ctrl-C goes to the parent, which forwards it once
    keep_freed_memory()
    _worker_queue = queue
    _worker_halt = halt
    import torch

    torch.set_num_threads(threads)


def _worker_run(task: dict) -> dict | None:
    if _worker_halt is not None and _worker_halt.is_set():
        return None  # handed over before the Ctrl-C but not started: it stays as it is
    q = _worker_queue
    tick = (lambda: q.put(1)) if q is not None else None
    return train_one(task, tick)


def local_processes(workers: int | None, n_runs: int) -> tuple[int, int]:
    """(worker processes, torch threads each) of the local executor for ``n_runs`` runs: one process per
    core unless ``workers`` says otherwise, never more than there are runs, the cores shared among them."""
    cores = os.cpu_count() or 1
    n = max(1, min(workers or cores, n_runs))
    return n, max(1, cores // n)


def _local(tasks: list[dict], on_result, on_step, workers: int | None = None, **_) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers, threads = local_processes(workers, len(tasks))
    ctx = multiprocessing.get_context("spawn")  # fork + torch threads can deadlock
    queue = ctx.SimpleQueue()
    halt = ctx.Event()  # set on Ctrl-C: a task already handed to the pool (uncancellable) never starts
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set() or not queue.empty():
            if queue.empty():
                time.sleep(0.05)
                continue
            queue.get()
            if on_step:
                on_step()

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    interrupted = False
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_worker_init,
        initargs=(queue, threads, halt, os.getpid()),
    )
    futures = {pool.submit(_worker_run, {**t, "threads": threads}): t for t in tasks}

    def forward(signum, frame) -> None:
        nonlocal interrupted
        if interrupted:
            return  # the workers are already checkpointing
        interrupted = True
        halt.set()
        for fut in futures:
            fut.cancel()  # runs not started yet stay as they are
        for proc in list((pool._processes or {}).values()):
            try:
                os.kill(proc.pid, signal.SIGINT)
            except (ProcessLookupError, OSError):
                pass

    previous = _install_sigint(forward)
    try:
        for fut in as_completed(futures):
            if fut.cancelled():
                continue
            try:
                result = fut.result()
                if result is not None:
                    on_result(result)
            except Exception as e:  # a worker that died (killed, out of memory)
                on_result(
                    {
                        "name": futures[fut]["name"],
                        "status": "failed",
                        "seconds": 0.0,
                        "error": f"worker died: {type(e).__name__}: {e}",
                        "messages": [],
                    }
                )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _restore_sigint(previous)
        stop.set()
        drainer.join(timeout=5)
    if interrupted:
        raise RunsInterrupted()


def _install_sigint(handler):
    """``handler`` for Ctrl-C and SIGTERM alike (a terminated runner checkpoints its runs too);
    returns what to restore."""
    try:
        return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: leave the signals as they are
        return None


def _restore_sigint(previous) -> None:
    for sig, handler in (previous or {}).items():
        signal.signal(sig, handler)


def _ray_task(task: dict, files: dict[str, bytes]) -> tuple[dict, dict[str, bytes]]:
    """On a Ray worker: rebuild the run folder from ``files``, train, send the folder back."""
    with tempfile.TemporaryDirectory(prefix="attnlab-run-") as tmp:
        run_dir = Path(tmp) / task["name"]
        run_dir.mkdir()
        for name, data in files.items():
            (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (run_dir / name).write_bytes(data)
        r = train_one({**task, "dir": str(run_dir)})
        r["node"] = _ray_node_id()  # where it ran (the multi-node test counts runs per node)
        back = {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    return r, back


def _ray_node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:
        return None


def _slurm(tasks: list[dict], on_result, on_step, **kw) -> None:
    from .slurm_executor import run_slurm

    run_slurm(tasks, on_result, on_step, **kw)


def _run_files(run_dir: Path) -> dict[str, bytes]:
    """What a remote worker needs to resume the run in ``run_dir`` (kept weights included)."""
    files = {n: (run_dir / n).read_bytes() for n in RUN_FILES if (run_dir / n).is_file()}
    for p in sorted((run_dir / WEIGHTS_DIR).glob("*.pt")):
        files[p.relative_to(run_dir).as_posix()] = p.read_bytes()
    return files


def check_ray_reachable(address: str) -> None:
    """Fail at once with one line instead of Ray's long retry loop (a TCP connect, 3 s at most)."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return  # let Ray interpret it ("auto", "local", ...)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise RunnerError(
            f"cannot reach a Ray cluster at {address} ({e.strerror or e}); start one with "
            f"`ray start --head` and pass its address, or use --executor local"
        ) from None


def _ray(
    tasks: list[dict], on_result, on_step, ray_address: str | None = None, steps_of: dict[str, int] | None = None, **_
) -> None:
    try:
        import ray
    except ImportError:
        raise RunnerError("the ray executor needs Ray: pip install 'attnlab[ray]'") from None
    from .io import write_bytes

    address = ray_address or os.environ.get("RAY_ADDRESS") or None
    started = False
    if not ray.is_initialized():
        if address:
            check_ray_reachable(address)
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False, include_dashboard=False)
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            where = f"at {address}" if address else "on this machine"
            raise RunnerError(
                f"cannot start or reach a Ray cluster {where}: {first}; start one with "
                f"`ray start --head`, or use --executor local"
            ) from None
        started = True
    remote = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(_ray_task)  # a lost node's runs run elsewhere
    pending = {}
    try:
        for task in tasks:
            run_dir = Path(task["dir"])
            files = _run_files(run_dir)
            pending[remote.remote({**task, "threads": 1}, files)] = task
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                try:
                    r, back = ray.get(ref)
                except Exception as e:  # the task or its worker died
                    on_result(
                        {
                            "name": task["name"],
                            "status": "failed",
                            "seconds": 0.0,
                            "error": f"ray task died: {type(e).__name__}: {e}",
                            "messages": [],
                        }
                    )
                    continue
                run_dir = Path(task["dir"])
                run_dir.mkdir(parents=True, exist_ok=True)
                for name, data in back.items():  # checkpoint last: a half copy is never "finished"
                    if name != "summary.json":
                        write_bytes(run_dir / name, data)
                if "summary.json" in back:
                    write_bytes(run_dir / "summary.json", back["summary.json"])
                else:  # the run is not finished (an extension stopped midway): no stale summary here either
                    (run_dir / "summary.json").unlink(missing_ok=True)
                if on_step and steps_of:
                    for _ in range(steps_of.get(task["name"], 0)):
                        on_step()
                on_result(r)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise RunsInterrupted() from None
    finally:
        if started:
            ray.shutdown()


# ----------------------------------------------------------------------------- API
def execute(
    runs: Sequence[Run],
    text: str,
    root: str | Path,
    options: ExecutorOptions | None = None,
    *,
    log: Callable[[str], None] = print,
    keep_going: bool = False,
    on_result: Callable[[dict], None] | None = None,
    desc: str | Callable[[], str] = "runs",
    tensorboard: bool = False,
    **fields_of_options,
) -> dict[str, Finished]:
    """Execute ``runs`` on ``text`` under ``root`` and return {name: Finished}.

    Runs are scheduled longest first (by their training FLOPs) so that workers
    finish together. A failing run does not stop the others; afterwards
    RunFailed is raised unless ``keep_going``, in which case failed runs are
    left out of the result (``on_result`` sees each run's status dict).
    options: how the runs are executed (:class:`ExecutorOptions`; default serial). Its fields given
    as keywords instead (``executor="local", workers=2, progress=False``) are a shorthand that builds
    one, for a caller without one.
    tensorboard: each run also writes TensorBoard event files (attnlab.tensorboard_log).
    desc: the progress bar's label, or a function giving it, asked again after each run's result.
    """
    opts = _options(options, fields_of_options)
    if tensorboard:  # one clear line here, not one failure per run
        from .tensorboard_log import require_tensorboard

        require_tensorboard()
    names = [r.name for r in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RunnerError(f"run names must be unique; repeated: {', '.join(dup)}")
    root = Path(root)
    check_run_folders(runs, root)  # all of them, before anything is trained
    todo: list[dict] = []
    finished: dict[str, Finished] = {}
    for run in runs:
        d = run.dir(root)
        try:
            if finished_history(d, run.cfg):
                finished[run.name] = Finished(run, d, "reused")
                if on_result is not None:
                    on_result({"name": run.name, "status": "reused", "seconds": 0.0, "error": None, "messages": []})
                continue
        except CheckpointError:
            pass  # train_one sets it aside and says so
        todo.append(
            {
                "name": run.name,
                "dir": str(d),
                "config": run.cfg.to_dict(),
                "text": text,
                "tensorboard": tensorboard,
                "keep_weights": list(run.keep_weights),
            }
        )
    by_name = {r.name: r for r in runs}
    todo.sort(key=lambda t: -train_cost(by_name[t["name"]].cfg))
    executor = opts.executor
    if executor == "local" and (len(todo) <= 1 or (opts.workers or os.cpu_count() or 1) <= 1):
        executor = "serial"  # one run: no process to spawn
    steps_left = {t["name"]: by_name[t["name"]].cfg.max_steps - steps_on_disk(Path(t["dir"])) for t in todo}
    label = desc if callable(desc) else (lambda: desc)
    bar = _bar(sum(max(0, s) for s in steps_left.values()), opts.progress and bool(todo), label())
    tick = (lambda: bar.update(1)) if bar is not None else None
    failures: dict[str, str] = {}
    busy: dict[str, str] = {}
    statuses: dict[str, dict] = {}

    def collect(r: dict) -> None:
        statuses[r["name"]] = r
        for m in r.get("messages", ()):
            log(m)
        if r["status"] == "failed":
            failures[r["name"]] = r["error"]
        elif r["status"] == "busy":
            busy[r["name"]] = r["error"]
        if on_result is not None:
            on_result(r)
        if bar is not None and callable(desc):
            bar.set_description(desc())

    try:
        {"serial": _serial, "local": _local, "ray": _ray, "slurm": _slurm}[executor](
            todo,
            collect,
            tick,
            workers=opts.workers,
            ray_address=opts.ray_address,
            steps_of=steps_left,
            slurm=opts.slurm,
            root=root,
        )
    finally:
        if bar is not None:
            bar.close()
    for t in todo:
        r = statuses.get(t["name"])
        if r and r["status"] in ("trained", "resumed", "reused"):
            finished[t["name"]] = Finished(by_name[t["name"]], Path(t["dir"]), r["status"], r["seconds"])
    if (failures or busy) and not keep_going:
        raise RunFailed(failures, busy)
    if failures or busy:  # keep_going: the caller still hears of every run that did not finish
        log(unfinished_line(failures, busy))
    return {r.name: finished[r.name] for r in runs if r.name in finished}


def _options(options: ExecutorOptions | None, given: dict) -> ExecutorOptions:
    """``options``, or the ExecutorOptions its fields given as keywords make (never both)."""
    if not given:
        return options if options is not None else ExecutorOptions()
    unknown = sorted(set(given) - {f.name for f in fields(ExecutorOptions)})
    if unknown:
        raise TypeError(f"execute() got unexpected keyword argument(s): {', '.join(unknown)}")
    if options is not None:
        raise TypeError(f"execute(): give options or its fields ({', '.join(sorted(given))}), not both")
    return ExecutorOptions(**given)


def train_cost(cfg: Config) -> float:
    """A run's matmul work (forward+backward, all steps) up to a constant: enough to order runs and,
    calibrated by runs' recorded training time, to estimate another run's (attnlab book --decide)."""
    d, T, L = cfg.d_model, cfg.block_size, cfg.n_layer
    per_token = L * (4 * d * d + 2 * d * cfg.d_ff + 2 * T * d) + d * cfg.vocab_size
    return per_token * cfg.batch_size * T * cfg.max_steps


def _bar(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="step", dynamic_ncols=True, desc=desc)
