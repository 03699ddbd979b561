"""The case models that ship inside the package, checked against their manifest before they are served.

``attnlab/data/case_runs/manifest.json`` records the size and sha256 of every file of every shipped
run. :class:`CheckedRoot` is a :class:`attnlab.web.runfiles.RunsRoot` whose :meth:`open` returns a
file only when its bytes are the ones the manifest records: a damaged file (one flipped byte in a
``ckpt.pt`` changes every attention weight served) is refused in one line naming the file and how
to restore it, and the other shipped runs are served as before. A file's hash is computed once per
(path, device, inode, mtime, size): an unchanged file costs one ``fstat`` per read.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from .runfiles import RunFileError, RunsRoot

MANIFEST = "manifest.json"
PACKAGE = Path(__file__).resolve().parents[1]  # src/attnlab: a clone restores a file from git
_CHUNK = 1 << 20

_lock = threading.Lock()
_hashes: dict[tuple, str] = {}  # (path, dev, ino, mtime_ns, size) -> sha256 of a file read once
_manifests: dict[str, tuple[tuple, dict | str]] = {}  # manifest path -> (its stat key, {rel: entry} or the problem)


class DamagedShippedFile(RunFileError):
    """A shipped file whose bytes are not the ones its manifest records (or whose manifest is unreadable)."""


def restore_hint(path: Path) -> str:
    """How to get a shipped file back: reinstall attnlab, or in a clone ``git checkout -- PATH``."""
    try:
        rel = "src/attnlab/" + path.resolve().relative_to(PACKAGE).as_posix()
    except ValueError:
        rel = str(path)
    return (
        f"重新安装 attnlab 即可恢复 / restore it: pip install --force-reinstall attnlab, "
        f"or in a clone: git checkout -- {rel}"
    )


def _stat_key(path: Path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def expected(manifest: Path) -> dict[str, dict] | str:
    """{path below the root ("case/big_scaled/ckpt.pt"): {"bytes", "sha256"}} from ``manifest``, or the
    one-line problem with it (missing, not JSON, not the manifest's shape). Cached per manifest version."""
    from ..errors import AttnlabError
    from ..schemas import load

    key = _stat_key(manifest)
    with _lock:
        got = _manifests.get(str(manifest))
        if got is not None and got[0] == key:
            return got[1]
    try:
        doc = load("shipped_manifest", manifest)
        out: dict | str = {
            f"case/{run}/{name}": entry for run, r in doc["runs"].items() for name, entry in r["files"].items()
        }
    except AttnlabError as e:
        out = f"{e}; {restore_hint(manifest)}"
    with _lock:
        _manifests[str(manifest)] = (key, out)
    return out


def _sha256(f, key: tuple) -> str:
    with _lock:
        if key in _hashes:
            return _hashes[key]
    h = hashlib.sha256()
    f.seek(0)
    while chunk := f.read(_CHUNK):
        h.update(chunk)
    f.seek(0)
    with _lock:
        _hashes[key] = h.hexdigest()
    return _hashes[key]


class CheckedRoot(RunsRoot):
    """A run root whose files are served only when they match ``manifest`` (size and sha256)."""

    def __init__(self, root: str | os.PathLike, manifest: str | os.PathLike, fd_walk: bool | None = None):
        super().__init__(root, fd_walk)
        self.manifest = Path(manifest)

    def open(self, rel: str | Iterable[str], max_bytes: int | None = None):
        f = super().open(rel, max_bytes)  # missing, a link, too large: refused as anywhere else
        try:
            where = rel if isinstance(rel, str) else "/".join(rel)  # checked by RunsRoot.open
            files = expected(self.manifest)
            if isinstance(files, str):
                raise DamagedShippedFile(files)
            want = files.get(where)
            path = self.root / where
            if want is None:
                raise DamagedShippedFile(
                    f"{where} 不在随包清单里 / is not in {self.manifest.name}; {restore_hint(path)}"
                )
            st = os.fstat(f.fileno())
            if (
                st.st_size != want["bytes"]
                or _sha256(f, (str(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)) != want["sha256"]
            ):
                raise DamagedShippedFile(
                    f"随包附带的文件已损坏 / a shipped file is damaged: {where} does not match the sha256 in "
                    f"{self.manifest.name}; {restore_hint(path)}"
                )
            return f
        except BaseException:
            f.close()
            raise
