"""Run a student's file in its own process, with limits, and bring back a small JSON answer.

A student's code is untrusted. The check copies the file into a fresh temporary folder and runs a
harness (a plain script of this package that imports nothing of attnlab) there:

- its own process and process group (``start_new_session``), killed as a group at the time limit;
- ``resource.setrlimit``: address space (memory), CPU seconds, the largest file it may write (so
  printing megabytes ends it: stdout and stderr are files under that cap), open files, no core;
- ``cwd`` and ``HOME`` and ``TMPDIR`` in the temporary folder, ``python -I`` (no user site, no
  ``PYTHONPATH``, the script's folder not on the path), a minimal environment, one thread;
- the folders it could see from where it was started (the student file's folder and the caller's
  working folder) are listed before and after, and any file that appeared, vanished or changed
  there is reported as a write outside its folder (this detects, it cannot prevent: an OS
  sandbox such as a container is the stronger wall).

The harness writes ``result.json`` in its folder; the caller reads at most ``MAX_RESULT_BYTES`` of
it and validates it. Everything wrong becomes a :class:`SandboxError` with one line a student can
act on.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import WorkbookError

MAX_SOURCE_BYTES = 256 * 1024  # a student's file; anything larger is not an exercise answer
MAX_RESULT_BYTES = 4 * 1024 * 1024
MAX_SCAN_ENTRIES = 5000  # files listed per watched folder for the write check


class SandboxError(WorkbookError):
    """The student's file could not be checked: one line says why and what to do."""


@dataclass(frozen=True)
class Limits:
    seconds: float = 30.0  # wall clock
    memory_bytes: int = 1536 * 1024 * 1024  # address space
    output_bytes: int = 1024 * 1024  # stdout + stderr, each; also the largest file it may write
    open_files: int = 64


@dataclass
class Outcome:
    result: dict
    stdout: str
    stderr: str
    seconds: float
    extra: dict = field(default_factory=dict)


def read_source(path: str | Path) -> bytes:
    """The student's file, refused in one line when it is not a readable regular Python file of sane size."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise SandboxError(f"找不到或读不了 / cannot read {path}: {e.strerror or e}") from None
    if not p.is_file():
        raise SandboxError(f"{path} 不是普通文件 / is not a regular file; hand in one .py file")
    if st.st_size > MAX_SOURCE_BYTES:
        raise SandboxError(
            f"{path} 有 {st.st_size:,} 字节，超过 {MAX_SOURCE_BYTES:,} / is {st.st_size:,} bytes, over the "
            f"{MAX_SOURCE_BYTES:,} an answer may have; hand in only your code"
        )
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as e:
        raise SandboxError(f"读不了 / cannot read {path}: {e.strerror or e}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise SandboxError(f"{path} 不是 UTF-8 文本 / is not UTF-8 text; save it as UTF-8 Python source") from None
    return data


def _listing(root: Path, skip: Path) -> dict[str, tuple]:
    """path -> (size, mtime_ns, inode) of what lies under ``root`` (bounded, links not followed)."""
    seen: dict[str, tuple] = {}
    stack = [root]
    while stack and len(seen) < MAX_SCAN_ENTRIES:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            path = Path(e.path)
            if path == skip or skip in path.parents:
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            seen[e.path] = (st.st_size, st.st_mtime_ns, st.st_ino)
            if e.is_dir(follow_symlinks=False) and e.name not in (".git", "__pycache__", ".venv", "node_modules"):
                stack.append(path)
            if len(seen) >= MAX_SCAN_ENTRIES:
                break
    return seen


def _limit(limits: Limits):
    def apply() -> None:
        import resource

        cpu = int(limits.seconds) + 1  # SIGXCPU at the soft limit, SIGKILL one second later
        for what, soft, hard in (
            (resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
            (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_FSIZE, limits.output_bytes, limits.output_bytes),
            (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
            (resource.RLIMIT_CORE, 0, 0),
        ):
            resource.setrlimit(what, (soft, hard))

    return apply


def _tail(path: Path, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


HARNESS = Path(__file__).with_name("child.py")


def run(
    mode: str,
    source: bytes,
    inputs: dict[str, bytes],
    limits: Limits = Limits(),
    watch: tuple[Path, ...] = (),
    what: str = "你的文件 / your file",
) -> Outcome:
    """Run the harness's ``mode`` (ex3, ex4) on ``source`` (saved as student.py) with ``inputs`` (name -> bytes) beside it.

    Returns the harness's result.json as a dict; raises SandboxError for a timeout, a memory or
    output overflow, a crash, a write outside the folder or a missing/garbled result."""
    work = Path(tempfile.mkdtemp(prefix="attnlab-check-"))
    logs = Path(tempfile.mkdtemp(prefix="attnlab-check-logs-"))
    try:
        (work / "student.py").write_bytes(source)
        for name, data in inputs.items():
            (work / name).write_bytes(data)
        watched = [p.resolve() for p in watch if p.is_dir()]
        before = {str(w): _listing(w, work) for w in watched}
        env = {
            "HOME": str(work),
            "TMPDIR": str(work),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        t0 = time.monotonic()
        with open(logs / "out", "wb") as out, open(logs / "err", "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", str(HARNESS), mode],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=_limit(limits),
            )
            try:
                rc = proc.wait(timeout=limits.seconds)
            except subprocess.TimeoutExpired:
                rc = None
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the whole group, children included
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        seconds = time.monotonic() - t0
        stdout, stderr = _tail(logs / "out"), _tail(logs / "err")
        for w in watched:
            after = _listing(w, work)
            changed = sorted(set(after.items()) ^ set(before[str(w)].items()))
            if changed:
                raise SandboxError(
                    f"{what} 在自己的临时文件夹之外写了东西 / wrote outside its own folder: {changed[0][0]}; "
                    f"a check runs your code in a temporary folder, write nothing elsewhere"
                )
        if rc is None:
            raise SandboxError(
                f"{what} 在 {limits.seconds:g} 秒内没有结束 / did not finish within {limits.seconds:g} s "
                f"(an endless loop, or input() waiting?); make it return"
            )
        too_much = max((logs / "out").stat().st_size, (logs / "err").stat().st_size) >= limits.output_bytes
        if rc == -signal.SIGXFSZ or too_much:
            raise SandboxError(
                f"{what} 打印或写出了超过 {limits.output_bytes // 1024} KB / printed or wrote more than "
                f"{limits.output_bytes // 1024} KB; remove the prints in loops"
            )
        if rc == -signal.SIGXCPU:
            raise SandboxError(f"{what} 用完了 CPU 时间 / used up its CPU time; make it return sooner")
        if rc is not None and rc < 0:
            raise SandboxError(f"{what} 使检查进程被信号 {-rc} 终止 / killed the check's process (signal {-rc})")
        result_path = work / "result.json"
        if "MemoryError" in stderr or ("Cannot allocate memory" in stderr):
            raise SandboxError(
                f"{what} 用了超过 {limits.memory_bytes // 2**20} MB 内存 / needed more than "
                f"{limits.memory_bytes // 2**20} MB of memory; do not build huge arrays"
            )
        if not result_path.is_file() or result_path.is_symlink():
            last = stderr.strip().splitlines()[-1:] or stdout.strip().splitlines()[-1:] or [f"exit status {rc}"]
            raise SandboxError(
                f"{what} 在检查完成前结束了进程 / ended the check's process before it finished ({last[0][:200]}); "
                f"do not call sys.exit or os._exit"
            )
        if result_path.stat().st_size > MAX_RESULT_BYTES:
            raise SandboxError(
                f"{what} 写了一个过大的 result.json / wrote an oversized result.json; do not write files"
            )
        try:
            result = json.loads(result_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise SandboxError(
                f"{what} 弄坏了检查的结果文件 / garbled the check's result file; do not write files"
            ) from None
        if not isinstance(result, dict) or not isinstance(result.get("status"), str):
            raise SandboxError(f"{what} 弄坏了检查的结果文件 / garbled the check's result file; do not write files")
        if "MemoryError" in str(result.get("detail", "")):
            raise SandboxError(
                f"{what} 用了超过 {limits.memory_bytes // 2**20} MB 内存 / needed more than "
                f"{limits.memory_bytes // 2**20} MB of memory; do not build huge arrays"
            )
        return Outcome(result, stdout, stderr, seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)
