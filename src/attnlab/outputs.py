"""Where a command writes, and the guard that keeps a smaller run from replacing a larger result.

A full run writes under its ``--out`` (default: the current directory): ``data/``, ``figures/``,
``reports/`` and ``runs/``. A ``--quick`` run writes under a root of its own, ``quick/<command>/``
(git-ignored), so it never touches the committed ``data/``, ``figures/``, ``reports/`` or
``runs/case/``, and a full run never meets a quick run's folders.

A command about to replace a result made at a larger scale (more steps, more seeds) refuses in
one line unless it was given ``--overwrite``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .errors import AttnlabError

QUICK_ROOT = Path("quick")  # git-ignored (.gitignore: /quick/)


class OverwriteError(AttnlabError):
    """A run would replace a result recorded at a larger scale."""


def output_root(out: str | Path | None, quick: bool, command: str) -> Path:
    """The root a command writes under: ``out`` when given, else ``quick/<command>`` for a quick run
    and the current directory for a full one."""
    if out is not None:
        return Path(out)
    return QUICK_ROOT / command if quick else Path(".")


def smaller_parts(old: dict[str, int], new: dict[str, int]) -> list[str]:
    """The measures (e.g. steps, small seeds) in which ``new`` falls short of ``old``."""
    return [k for k, v in old.items() if v is not None and new.get(k) is not None and new[k] < v]


def scale_text(scale: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in scale.items() if v is not None)


def refuse_smaller(path: Path, old: dict[str, int], new: dict[str, int], overwrite: bool) -> None:
    """Raise OverwriteError when ``new`` is smaller than ``old`` in any measure, unless ``overwrite``."""
    short = smaller_parts(old, new)
    if short and not overwrite:
        raise OverwriteError(
            f"{path} holds a larger result ({scale_text(old)}) than this run would write "
            f"({scale_text(new)}); write elsewhere with --out DIR, or replace it with --overwrite"
        )


def refuse_smaller_than_stored(
    path: Path, stored_scale: Callable[[Path], dict[str, int]], new: dict[str, int], overwrite: bool
) -> None:
    """:func:`refuse_smaller` against the result stored at ``path``, its scale read by ``stored_scale``
    (the case's document, the lab book's index): no file there, or one that cannot be read as such a
    result, is nothing to protect (the run replaces it)."""
    if not Path(path).is_file():
        return
    try:
        old = stored_scale(Path(path))
    except (AttnlabError, OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    refuse_smaller(path, old, new, overwrite)
