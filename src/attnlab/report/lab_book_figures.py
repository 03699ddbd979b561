"""The lab book's figures, drawn from each entry's JSON alone.

Each entry draws its own figures (``Experiment.draw(results) -> {name: figure}``, in its module
of :mod:`attnlab.lab`); here they are saved where the entry's ``measure`` listed them
(``ctx.fig(name)``: figures/lab_book/<id>_<name>). ``attnlab book`` and ``attnlab report`` both
redraw them, so a figure never needs a training run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def draw_figures(doc: dict, root: Path, registry: Sequence | None = None) -> list[Path]:
    """Draw the figures of one entry's JSON under ``root``; returns the paths written. ``registry``:
    the lab book's entries (default :data:`attnlab.lab.EXPERIMENTS`)."""
    from ..lab import EXPERIMENTS
    from ..lab.labbook import FIG_DIR
    from ..lab.plot import save

    e = next((x for x in (registry or EXPERIMENTS) if x.id == doc.get("id")), None)
    if e is None or e.draw is None or doc.get("status") == "not_run":
        return []
    return [save(fig, Path(root) / FIG_DIR / f"{e.id}_{name}") for name, fig in e.draw(doc["results"]).items()]
