"""A run folder belongs to one run: an OS lock against a second writer, and the
rule that an existing run is continued (``resume``) or replaced (``overwrite``)
only when asked.

The lock is ``fcntl.flock`` on ``OUT/.attnlab-lock``: the kernel releases it
when the process exits in any way (return, exception, Ctrl-C, kill -9), so a
stale lock cannot block the next run. The file also records who holds it
(pid, host, command), which is what a refused second writer is told. On
systems without ``fcntl`` (Windows) the folder is not locked.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from .errors import OutputError, RunFolderBusy
from .io import clean_stale_temps, write_json

LOCK_NAME = ".attnlab-lock"
TIMING_FILE = "timing.json"  # one entry per training session: steps, seconds, CPU time, load, threads
RUN_FILES = (
    "ckpt.pt",
    "summary.json",
    "metrics.jsonl",
    "config.json",
    "tokenizer.json",
    "snapshots.npz",
    TIMING_FILE,
)

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks to take
    fcntl = None


def holds_run(path: str | os.PathLike) -> bool:
    """True when ``path`` holds (part of) a run: a checkpoint, a summary or metrics."""
    path = Path(path)
    metrics = path / "metrics.jsonl"
    return (
        (path / "ckpt.pt").exists()
        or (path / "summary.json").exists()
        or (metrics.is_file() and metrics.stat().st_size > 0)
    )


class RunFolder:
    """``with RunFolder(out): ...`` holds ``out`` for this process.

    Entering creates the folder (nothing else is written into it but the lock
    file), takes the lock or raises :class:`RunFolderError` naming the holder,
    and removes temporary files a killed writer left behind.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fd: int | None = None
        self._created = False

    def __enter__(self) -> RunFolder:
        self.acquire()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and self._created:
            self._remove_if_empty()  # a run that never started leaves no folder behind
        self.release()

    def _remove_if_empty(self) -> None:
        try:
            if [p.name for p in self.path.iterdir()] == [LOCK_NAME]:
                (self.path / LOCK_NAME).unlink()
                self.path.rmdir()
        except OSError:
            pass

    def acquire(self) -> None:
        self._created = not self.path.exists()
        self._fd = take_lock(
            self.path / LOCK_NAME,
            lambda why: f"cannot use run folder {self.path}: {why}; choose another with --out",
            lambda holder: (
                f"run folder {self.path} is in use by {holder}; wait for it to finish or choose another --out"
            ),
        )
        for name in RUN_FILES:  # left by a writer killed mid-save
            clean_stale_temps(self.path, name)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def lock_holder(path: str | os.PathLike, name: str = LOCK_NAME) -> str | None:
    """Who holds the lock of the folder ``path`` now ("process 123 on host (command, since ...)"),
    or None when nobody does. Looks only: creates nothing and keeps no lock."""
    if fcntl is None:
        return None
    try:
        fd = os.open(Path(path) / name, os.O_RDONLY)
    except OSError:  # no lock file (never trained there) or no folder: nobody holds it
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: an instant probe, never an owner
    except BlockingIOError:
        return _read_holder(fd)
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases the probe's shared lock
    return None


class OutputLock(RunFolder):
    """``with OutputLock(root, "attnlab book"): ...`` holds an output root (data/, figures/,
    reports/, runs/) for one many-run command: a second ``book`` or ``case`` writing into the same
    root is refused up front, naming the first, instead of both racing over the same files. The
    lock file is ``root/.attnlab-out-lock`` (ignored by git), left in place when released."""

    NAME = ".attnlab-out-lock"

    def __init__(self, root: str | os.PathLike, what: str):
        super().__init__(root)
        self.root, self.what = Path(root), what

    def __exit__(self, exc_type, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        self._fd = take_lock(
            self.path / self.NAME,
            lambda why: f"cannot write to output directory {self.root}: {why}; choose another with --out",
            lambda holder: (
                f"output folder {self.root} is being written by {holder}; `{self.what}` would mix its "
                f"results with that one's: wait for it to finish or choose another --out"
            ),
        )


def take_lock(lock_file: Path, unusable, busy) -> int:
    """Create ``lock_file``'s folder, open it and take its exclusive OS lock without waiting; write
    who holds it. ``unusable(why)`` / ``busy(holder)`` word the OutputError / RunFolderBusy raised
    otherwise. Returns the descriptor: closing it releases the lock, however the process ends."""
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise OutputError(unusable(e.strerror or type(e).__name__)) from None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunFolderBusy(busy(holder), holder) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(_me()).encode(), 0)
    return fd


def _me() -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:6]))[:200],
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
        return f"process {info['pid']} on {info['host']} ({info['command']}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


# ------------------------------------------------------------------------ training time
def training_sessions(run_dir: str | os.PathLike) -> list[dict]:
    """The training sessions recorded in RUN/timing.json (none for runs trained before it existed)."""
    from .errors import AttnlabError
    from .schemas import load

    path = Path(run_dir) / TIMING_FILE
    if not path.is_file():
        return []
    try:  # bounded and checked (attnlab.schemas.RunTiming): seconds are finite, not negative
        return load("run_timing", path, max_bytes=10**7)["sessions"]
    except AttnlabError:
        return []


def record_session(run_dir: str | os.PathLike, session: dict) -> None:
    """Append one training session to RUN/timing.json (written atomically)."""
    write_json(Path(run_dir) / TIMING_FILE, {"sessions": [*training_sessions(run_dir), session]})


def training_seconds(run_dir: str | os.PathLike) -> float | None:
    """Wall seconds spent training this run over all its sessions; None when none was recorded."""
    sessions = training_sessions(run_dir)
    return round(sum(float(s.get("seconds", 0.0)) for s in sessions), 3) if sessions else None


# ------------------------------------------------------------------ idle or busy cores
# A timing record says how long a run took on the cores it had. Taken on cores that other work
# shared, its wall time is that of the sharing, not of the run: it must not calibrate a plan.
IDLE_CPU_SHARE = 0.9  # below this share of its wall time on the CPU, a run waited for its core
LOAD_SLACK = 0.5  # 1-minute load above the CPU count by more than this: some work waited for a core
IDLE, BUSY, UNKNOWN = "idle", "busy", "unknown"


def load_average() -> float | None:
    """The machine's 1-minute load average (runnable and waiting tasks), None where there is none."""
    try:
        return round(float(os.getloadavg()[0]), 3)
    except (OSError, AttributeError):
        return None


def machine_cpus() -> int:
    """The CPUs the load average is shared among (os.cpu_count())."""
    return os.cpu_count() or 1


def load_state(
    seconds: float | None,
    cpu_s: float | None,
    load_end: float | None = None,
    cpus: int | None = None,
    threads: int | None = 1,
) -> str:
    """Whether a run's timing was taken on idle cores: ``idle``, ``busy`` or ``unknown``.

    The rule: a run was **busy** when its process was on the CPU less than ``IDLE_CPU_SHARE`` (0.9)
    of its wall time per thread (``cpu_s / (seconds * threads)``: it waited for a core that other
    work held, or that the hypervisor lent elsewhere), or when the machine's 1-minute load average
    at its end exceeded the CPU count by more than ``LOAD_SLACK`` (0.5: more work than cores, so
    something waited; the load counts this batch's own runs, so a batch of more runs than cores is
    busy too). The end load is used, not the start's: the 1-minute average at the end covers the
    run's last minute, at the start the minute before it. **Idle** otherwise; **unknown** without
    the CPU time (records written before it was recorded), or without wall time.
    """
    if not seconds or seconds <= 0 or cpu_s is None:
        return UNKNOWN
    if cpu_s / (seconds * max(1, int(threads or 1))) < IDLE_CPU_SHARE:
        return BUSY
    if load_end is not None and cpus and load_end > cpus + LOAD_SLACK:
        return BUSY
    return IDLE


def training_conditions(run_dir: str | os.PathLike) -> dict | None:
    """What the run's sessions record about the machine, over all of them: ``cpu_s`` (the process's
    CPU time, user + system), ``load`` (the highest 1-minute load at a session's end), ``load_start``,
    ``cpus``, ``threads``, and ``state`` (:func:`load_state`, busy when any session was). None
    when no session was recorded; ``state`` unknown when a session predates CPU time records or
    trained on an accelerator."""
    sessions = training_sessions(run_dir)
    if not sessions:
        return None
    return conditions_of(sessions)


def conditions_of(sessions: list[dict]) -> dict:
    """:func:`training_conditions` of a list of session records."""
    states = []
    for s in sessions:
        if not str(s.get("device") or "cpu").startswith("cpu"):
            states.append(UNKNOWN)  # trained on an accelerator: says nothing of one CPU core's speed
            continue
        states.append(load_state(s.get("seconds"), s.get("cpu_s"), s.get("load_end"), s.get("cpus"), s.get("threads")))
    known = all(s.get("cpu_s") is not None for s in sessions)
    out: dict = {"state": BUSY if BUSY in states else (UNKNOWN if UNKNOWN in states else IDLE)}
    if known:
        out["cpu_s"] = round(sum(float(s["cpu_s"]) for s in sessions), 3)
    for key, field in (("load", "load_end"), ("load_start", "load_start")):
        xs = [float(s[field]) for s in sessions if s.get(field) is not None]
        if xs:
            out[key] = round(max(xs), 3)
    cpus = [int(s["cpus"]) for s in sessions if s.get("cpus")]
    if cpus:
        out["cpus"] = min(cpus)
    threads = [int(s["threads"]) for s in sessions if s.get("threads")]
    if threads:
        out["threads"] = max(threads)
    return out
