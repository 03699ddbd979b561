"""Atomic file writes: an interrupted run never leaves a half-written file.

Everything is written to a temporary file in the target directory, flushed to
disk, then moved over the target with ``os.replace`` (atomic on POSIX).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def _atomic(path: str | os.PathLike, write: Callable[[Any], None], mode: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())     # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text: str) -> Path:
    return _atomic(path, lambda f: f.write(text), "w")


def write_bytes(path, data: bytes) -> Path:
    return _atomic(path, lambda f: f.write(data), "wb")


def write_json(path, obj: Any, indent: int | None = 1) -> Path:
    return write_text(path, json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")


def save_torch(path, obj: Any) -> Path:
    import torch

    return _atomic(path, lambda f: torch.save(obj, f), "wb")


def write_figure(path, fig, dpi: int = 110, **savefig_kw: Any) -> Path:
    """A matplotlib figure as PNG at ``path`` and as SVG beside it, both atomically.

    The SVG draws its text as glyph outlines (``svg.fonttype = path``), so its
    Chinese shows on a machine without the font. A ``path`` ending in .svg
    writes only the SVG.
    """
    import io
    import matplotlib

    path = Path(path)
    targets = [("svg", path)] if path.suffix == ".svg" else [("png", path), ("svg", path.with_suffix(".svg"))]
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "attnlab"}):
        for fmt, target in targets:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None,
                        **savefig_kw)
            write_bytes(target, buf.getvalue())
    return path
