"""The one plot setup of attnlab's figures: matplotlib without a display, the packaged CJK font.

An entry's ``draw(results) -> {name: figure}`` starts with ``plt = plot.plt()``; the lab book
saves each figure with :func:`save` (``report.lab_book_figures.draw_figures``), the case study's
figures use the same setup (``report.figures``). matplotlib is imported only when a figure is
drawn, so importing an entry stays light.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from ..fonts import use_cjk_font
from ..io import write_figure


def plt():
    """matplotlib.pyplot on the Agg backend, with the packaged CJK font (Chinese labels render)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    use_cjk_font()
    return pyplot


def save(fig, path: Path, svg: bool = False) -> Path:
    """``fig`` written atomically at ``path`` (PNG, and SVG beside it when ``svg``), then closed."""
    import matplotlib.pyplot as pyplot

    try:
        return write_figure(path, fig, dpi=130, svg=svg, bbox_inches="tight")
    finally:
        pyplot.close(fig)


def mean(values: list[float]) -> float:
    """The mean of a bar's values; 0 for a bar with none (drawn empty, labelled "not run")."""
    return statistics.fmean(values) if values else 0.0
