"""Every read the server makes under the runs directory, without following a symlink.

The runs directory itself is the one path the user chose (it may be a link);
below it, each directory is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative
to its parent's descriptor and each file with ``O_NOFOLLOW`` relative to its
directory's, so a link planted anywhere below the root (a run folder,
``snapshots.npz``, ``config.json``, a subfolder), or swapped in between a
listing and a read, is refused by the kernel (``ELOOP``/``ENOTDIR``), never
followed. Only regular files are read (a FIFO would block the server) and only
up to a stated size.

:class:`RunsRoot` is the one helper the web modules use for all of it: listing,
``lstat``, and opening. Where descriptor-relative calls are missing (Windows),
it walks the path with ``lstat`` instead, refusing any component that is a link. Run names are checked by :func:`valid_run_name`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

MAX_RUN_NAME = 128
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# descriptor-relative opens (Linux, macOS); elsewhere an lstat walk of every component does the same check
FD_WALK = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd and os.listdir in os.supports_fd


class RunFileError(OSError):
    """A file under the runs directory that is missing, a link, not a regular file or too large."""


def valid_run_name(name: str) -> bool:
    """A run folder's name as listed and served: one path component, any
    printable Unicode (CJK, spaces), no leading dot, no separators."""
    return (
        0 < len(name) <= MAX_RUN_NAME
        and name.isprintable()
        and not name.startswith(".")
        and "/" not in name
        and "\\" not in name
        and "\x00" not in name
        and name.strip() == name
    )


def _parts(rel: str | Iterable[str]) -> list[str]:
    parts = rel.split("/") if isinstance(rel, str) else list(rel)
    if not parts or any(p in ("", ".", "..") or "/" in p or "\x00" in p for p in parts):
        raise RunFileError(f"not a plain relative path: {'/'.join(parts)[:80]!r}")
    return parts


class RunsRoot:
    """The runs directory; every path below it is given relative to it ("run", "case/a/metrics.jsonl")."""

    def __init__(self, root: str | os.PathLike, fd_walk: bool | None = None):
        self.root = Path(root)
        self.fd_walk = FD_WALK if fd_walk is None else fd_walk

    def _dir_path(self, parts: list[str]) -> Path:
        """root/parts..., each component checked by lstat to be a directory, not a link (no dir_fd)."""
        path = self.root
        if not path.is_dir():
            raise NotADirectoryError(f"{path} is not a folder")
        for part in parts:
            path = path / part
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                raise NotADirectoryError(f"{part} is a link or not a folder")
        return path

    def _dir_fd(self, parts: list[str]) -> int:
        """A descriptor of root/parts..., each component opened without following links."""
        fd = os.open(self.root, os.O_RDONLY | DIRECTORY | CLOEXEC)
        try:
            for part in parts:
                nxt = os.open(part, os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd

    def lstat(self, rel: str | Iterable[str]) -> os.stat_result | None:
        """The entry's own status (a link is reported as a link), None when it or a folder above is missing
        or a link."""
        parts = _parts(rel)
        if not self.fd_walk:
            try:
                return os.lstat(self._dir_path(parts[:-1]) / parts[-1])
            except OSError:
                return None
        try:
            fd = self._dir_fd(parts[:-1])
        except OSError:
            return None
        try:
            return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(fd)

    def is_file(self, rel) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, rel) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def listdir(self, rel: str | Iterable[str] = ()) -> list[str]:
        """Names in root/rel (sorted); [] when it is missing, a link or not a folder."""
        return self.try_listdir(rel) or []

    def try_listdir(self, rel: str | Iterable[str] = ()) -> list[str] | None:
        """Names in root/rel (sorted); None when it is missing, a link, not a folder or unreadable."""
        if not self.fd_walk:
            try:
                return sorted(os.listdir(self._dir_path(_parts(rel) if rel not in ((), "") else [])))
            except OSError:
                return None
        try:
            fd = self._dir_fd(_parts(rel) if rel not in ((), "") else [])
        except OSError:
            return None
        try:
            return sorted(os.listdir(fd))
        except OSError:
            return None
        finally:
            os.close(fd)

    def open(self, rel: str | Iterable[str], max_bytes: int | None = None):
        """The regular file root/rel opened for binary reading, never through a link.

        Raises RunFileError (an OSError) when it is missing, a link, not a regular
        file or larger than ``max_bytes``. The caller closes it (``with``).
        """
        parts = _parts(rel)
        where = "/".join(parts)
        flags = os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC | getattr(os, "O_BINARY", 0)
        # O_NONBLOCK: opening a FIFO planted here must not hang the server
        before = None
        try:
            if self.fd_walk:
                dfd = self._dir_fd(parts[:-1])
            else:
                path = self._dir_path(parts[:-1]) / parts[-1]
                before = os.lstat(path)
        except OSError as e:
            raise RunFileError(f"{where}: a folder on the way is missing or a link ({e.strerror or e})") from None
        try:
            if self.fd_walk:
                fd = os.open(parts[-1], flags, dir_fd=dfd)
            elif stat.S_ISREG(before.st_mode):
                fd = os.open(path, flags)
            else:
                raise RunFileError(f"{where} is a link or not a regular file")
        except RunFileError:
            raise
        except OSError as e:
            raise RunFileError(f"{where}: missing or a link ({e.strerror})") from None
        finally:
            if self.fd_walk:
                os.close(dfd)
        try:
            st = os.fstat(fd)
            if before is not None and (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
                raise RunFileError(f"{where} was replaced while it was opened")
            if not stat.S_ISREG(st.st_mode):
                raise RunFileError(f"{where} is not a regular file")
            if max_bytes is not None and st.st_size > max_bytes:
                raise RunFileError(f"{where} has {st.st_size:,} bytes, more than the {max_bytes:,} read here")
            if NONBLOCK:
                os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(self, rel, max_bytes: int) -> bytes:
        with self.open(rel, max_bytes) as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:  # grew after the check
            raise RunFileError(f"{'/'.join(_parts(rel))} is larger than the {max_bytes:,} bytes read here")
        return data

    def read_text(self, rel, max_bytes: int) -> str:
        return self.read_bytes(rel, max_bytes).decode("utf-8", errors="replace")


def file_key(f) -> tuple:
    """Identity of an open file's content for caches: (device, inode, mtime_ns, size)."""
    st = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
