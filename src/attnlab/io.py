"""Atomic file writes: an interrupted run never leaves a half-written file.

Everything is written to a temporary file in the target directory, flushed to
disk, then moved over the target with ``os.replace`` (atomic on POSIX). A write
that fails (full disk, no permission) removes its temporary file, leaves the
previous file as it was and raises :class:`~attnlab.errors.OutputError` naming
the path. Temporary files are named ``.<name>.<random>.tmp``; one left behind by
a process killed mid-write is removed by :func:`clean_stale_temps`.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import AttnlabError, DataError, OutputError

# Every JSON file attnlab reads from a user's disk is read by read_json, within these bounds:
# attnlab's own files are at most ~10 MB and 10 levels deep (data/ch1_case.json).
JSON_MAX_BYTES = 64 * 10**6
JSON_MAX_DEPTH = 64


def _atomic(path: str | os.PathLike, write: Callable[[Any], None], mode: str) -> Path:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise _output_error(path, e) from None
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~umask_mask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise _output_error(path, e) from None
        raise
    return path


def _output_error(path: Path, e: OSError) -> OutputError:
    why = e.strerror or type(e).__name__
    kept = " (the previous file is unchanged)" if path.is_file() else ""
    return OutputError(f"cannot write {path}: {why}{kept}; {_what_to_do(e, path)}")


def _what_to_do(e: OSError, path: Path) -> str:
    """The advice that fits the error: space only when space is what ran out."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return "free some space or choose another output path"
    if path.is_dir() or e.errno == errno.EISDIR:
        return "it is a folder, give a file path"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "make that folder writable (check its permissions) or choose another output path"
    return "choose another output path"


def check_output_file(path: str | os.PathLike, option: str = "--out") -> Path:
    """Before any work: ``path`` can become a file (not a directory, its folder writable);
    :class:`OutputError` naming ``option`` otherwise."""
    path = Path(path)
    if str(path) in ("", "."):
        raise OutputError(f"{option} is empty; give a file path")
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder; give a file path, e.g. {path / 'result.json'}")
    check_writable(path.parent, option)
    return path


def check_writable(directory: str | os.PathLike, option: str = "--out") -> Path:
    """Create ``directory`` if needed and prove a file can be written there,
    before any work starts; :class:`OutputError` (naming ``option``) otherwise."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".attnlab-write-test.", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(
            f"cannot write to output directory {directory}: {e.strerror or type(e).__name__}; choose another with {option}"
        ) from None
    return directory


def clean_stale_temps(directory: str | os.PathLike, name: str) -> list[Path]:
    """Remove ``.<name>.*.tmp`` files left in ``directory`` by a process killed
    during an atomic write of ``name``; returns what was removed.

    Call it only while holding the directory's run lock, so no live writer owns them.
    """
    removed = []
    for tmp in Path(directory).glob(f".{name}.*.tmp"):
        try:
            tmp.unlink()
            removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed


def umask_mask() -> int:
    """The process's umask (the permission bits new files lose), read without changing it for good."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text: str) -> Path:
    return _atomic(path, lambda f: f.write(text), "w")


def write_bytes(path, data: bytes) -> Path:
    return _atomic(path, lambda f: f.write(data), "wb")


def write_json(path, obj: Any, indent: int | None = 1) -> Path:
    return write_text(path, json_text(obj, indent))


def json_text(obj: Any, indent: int | None = 1) -> str:
    """The text :func:`write_json` writes for ``obj``."""
    return json.dumps(obj, ensure_ascii=False, indent=indent) + "\n"


def write_json_if_changed(path, obj: Any, indent: int | None = 1) -> bool:
    """Write ``obj`` as :func:`write_json` would, unless ``path`` already holds exactly that text
    (then the file, its time stamp included, is left alone); returns whether it wrote."""
    text = json_text(obj, indent)
    data = text.encode("utf-8")
    path = Path(path)
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size == len(data):
            if read_bounded(path, len(data)) == data:
                return False
    except (OSError, AttnlabError):
        pass  # unreadable: written again
    write_text(path, text)
    return True


def save_torch(path, obj: Any) -> Path:
    """torch.save, serialized in memory first so that a failing disk write is a
    plain OSError (torch's own writer turns it into an opaque RuntimeError)."""
    import io as _io

    import torch

    buf = _io.BytesIO()
    torch.save(obj, buf)
    return _atomic(path, lambda f: f.write(buf.getbuffer()), "wb")


def write_figure(path, fig, dpi: int = 110, svg: bool = True, **savefig_kw: Any) -> Path:
    """A matplotlib figure as PNG at ``path`` and (``svg``) as SVG beside it, both atomically.

    Every figure attnlab writes goes through here. The SVG draws its text as
    glyph outlines (``svg.fonttype = path``), so its Chinese shows on a machine
    without the font. A ``path`` ending in .svg writes only the SVG.
    """
    import io

    import matplotlib

    path = Path(path)
    targets = [("svg", path)] if path.suffix == ".svg" else [("png", path)] + [("svg", path.with_suffix(".svg"))] * svg
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "attnlab"}):
        for fmt, target in targets:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None, **savefig_kw)
            write_bytes(target, buf.getvalue())
    return path


def json_depth(obj: Any) -> int:
    """How deeply lists and dicts nest in ``obj`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            x = x.values()
        elif not isinstance(x, list):
            continue
        deepest = max(deepest, d)
        stack.extend((v, d + 1) for v in x if isinstance(v, (dict, list)))
    return deepest


def read_bounded(
    path: str | os.PathLike, max_bytes: int, *, error: type[AttnlabError] = DataError, hint: str = ""
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``: opened without blocking and
    checked on the open descriptor, so a FIFO, a device (``/dev/zero``) or a folder is refused in
    one line instead of hanging or filling memory; ``error`` names the path and the problem."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{path} not found{hint}") from None
    except IsADirectoryError:
        raise error(f"{path} is a folder, not a file{hint}") from None
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror or type(e).__name__}{hint}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
            raise error(f"{path} is {what}, not a regular file{hint}")
        if st.st_size > max_bytes:
            raise error(
                f"{path} is {st.st_size / 1e6:,.1f} MB, more than the {max_bytes / 1e6:,.1f} MB such a file may have"
                f"{hint}"
            )
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror or type(e).__name__}{hint}") from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:  # grew while read
        raise error(f"{path} is more than the {max_bytes / 1e6:,.1f} MB such a file may have{hint}")
    return raw


def _first_nonfinite(obj: Any) -> str | None:
    """The place (``a.b[3]``) of the first NaN or infinity in ``obj``, or None; no recursion."""
    stack = [(obj, "")]
    while stack:
        x, where = stack.pop()
        if isinstance(x, float):
            if x != x or x in (float("inf"), float("-inf")):
                return where or "the top level"
        elif isinstance(x, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in reversed(list(x.items())))
        elif isinstance(x, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(x))))
    return None


def read_json(
    path: str | os.PathLike,
    *,
    error: type[AttnlabError] = DataError,
    hint: str = "",
    max_bytes: int = JSON_MAX_BYTES,
    max_depth: int = JSON_MAX_DEPTH,
    allow_nan: bool = False,
) -> Any:
    """The JSON document in ``path``, read within bounds: a file that is missing, not a regular
    file (a FIFO, a device, a folder: refused without blocking), larger than ``max_bytes``, not
    UTF-8, not JSON, nested deeper than ``max_depth`` or (unless ``allow_nan``: a diverged run's
    own summary) holding NaN or Infinity raises ``error`` with one line naming the path, the place
    and the problem, followed by ``hint`` (what to do, e.g. "; rerun `attnlab book`"). Its shape
    is checked by the caller, with :mod:`attnlab.schemas`."""
    path = Path(path)
    raw = read_bounded(path, max_bytes, error=error, hint=hint)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{path} is not valid UTF-8 JSON (byte {e.start}){hint}") from None
    deep = f"{path} is nested deeper than {max_depth} levels (attnlab's files have at most about 10){hint}"
    try:
        obj = json.loads(text)
    except RecursionError:
        raise error(deep) from None
    except ValueError as e:
        where = f"{e.msg}, line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
        raise error(f"{path} is not valid JSON ({where}){hint}") from None
    if json_depth(obj) > max_depth:
        raise error(deep)
    if not allow_nan:
        where = _first_nonfinite(obj)
        if where is not None:
            raise error(f"{path}: {where} is NaN or infinite, not a number a result may hold{hint}")
    return obj
