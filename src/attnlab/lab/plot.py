"""The one plot setup of attnlab's figures: matplotlib without a display, the packaged CJK font;
and the figures drawn from a result's JSON alone (attention maps, the d_head sweep's gap).

An entry's ``draw(results) -> {name: figure}`` starts with ``plt = plot.plt()``; the lab book
saves each figure with :func:`save` (``report.lab_book_figures.draw_figures``), the case study's
figures use the same setup (``report.figures``). matplotlib is imported only when a figure is
drawn, so importing an entry stays light. The attention maps draw a reader's own text, so they
fall back on the system's CJK fonts for characters the shipped subset lacks.
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


SYSTEM_CJK = ("Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK JP", "WenQuanYi Zen Hei")


def use_cjk_font_with_system() -> list[str]:
    """The shipped CJK subset first in matplotlib's font list, then the system's CJK fonts for the
    characters the subset lacks (a reader's own text in an attention map); returns that list."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import font_manager

    families = []
    try:
        use_cjk_font()  # the shipped subset and its Extension B supplement, in that order
        families += [f for f in matplotlib.rcParams["font.sans-serif"] if f != "DejaVu Sans"]
    except (ImportError, OSError, RuntimeError):
        pass  # no shipped subset: rely on the system's fonts
    installed = {f.name for f in font_manager.fontManager.ttflist}
    families += [f for f in SYSTEM_CJK if f in installed]
    # a list of families: matplotlib falls back glyph by glyph along it
    matplotlib.rcParams["font.family"] = families + ["sans-serif"]
    matplotlib.rcParams["font.sans-serif"] = families + ["DejaVu Sans"]
    matplotlib.rcParams["axes.unicode_minus"] = False
    return families


NEWLINE_MARK = "／"  # a line break on the axes, as Chinese quotes a poem's lines

# The web playground's colours (web/static/common.js heat(), maps.js): a weight w in [0, 1] goes
# from white to deep blue, positions the causal mask hides are light grey, characters outside the
# vocabulary red. The same colours here, so a reader recognises a map from the page in a figure.
WEB_HEAT = ("#ffffff", "#1c4896")  # rgb(255,255,255) -> rgb(28,72,150)
WEB_MASKED = "#f1f2f4"
WEB_UNKNOWN = "#b3261e"
WEB_INK = "#1d2330"


def web_cmap():
    """The web playground's attention colour map (white -> deep blue; masked cells light grey)."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("attnlab_web", WEB_HEAT).with_extremes(bad=WEB_MASKED)


def model_line(maps: dict) -> str:
    """Which model and step the maps are of, in words: the run, its shape, scaling, seed and step."""
    m = maps.get("model") or {}
    if not m:
        return "模型与步数未记录 / model and step not recorded"
    shape = []
    if m.get("d_model") and m.get("n_head"):
        shape.append(f"d_head {m['d_model'] // m['n_head']}（d_model {m['d_model']}，{m['n_head']} 头 / heads）")
    if m.get("scaled") is not None:
        shape.append("缩放 / scaled" if m["scaled"] else "不缩放 / unscaled")
    if m.get("seed") is not None:
        shape.append(f"种子 / seed {m['seed']}")
    step = m.get("step")
    when = f"第 {step} 步 / step {step}" if step is not None else "步数未记录 / step not recorded"
    name = m.get("run") or "模型 / model"
    return f"{name}：{'，'.join(shape)}；{when}" if shape else f"{name}；{when}"


def plot_attention_maps(maps: dict, path: str | Path) -> Path:
    """One heatmap per layer (rows) and head (columns) in the web playground's colours; the text's
    characters on both axes (outside the vocabulary in red, a line break as ／); the title names the
    text, and the model and step the maps are of (``maps["model"]``)."""
    use_cjk_font_with_system()
    import matplotlib.pyplot as plt
    import numpy as np

    layers = maps["layers"]
    chars = [(NEWLINE_MARK if c == "\n" else c) for c in maps["chars"]]
    unknown = set(maps.get("unknown_chars") or "")
    n_layer, n_head = len(layers), len(layers[0])
    T = len(chars)
    size = max(2.8, 0.17 * T + 0.9)  # inches per map: about 12 pt per character
    tick = max(7.0, min(11.0, 72 * (size - 0.6) / max(T, 1) * 0.8))
    fig, axes = plt.subplots(
        n_layer,
        n_head,
        figsize=(size * n_head + 1.2, size * n_layer + 1.3),
        squeeze=False,
        layout="constrained",
    )
    cmap = web_cmap()
    future = np.triu(np.ones((T, T), dtype=bool), k=1)  # j > i: hidden by the causal mask
    for l in range(n_layer):
        for h in range(n_head):
            ax = axes[l][h]
            w = np.ma.masked_where(future, np.asarray(layers[l][h], dtype=float))
            im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0)
            ax.set_title(f"层 {l} · 头 {h} / layer {l} head {h}", fontsize=11, color=WEB_INK)
            ax.set_xticks(range(T), chars, fontsize=tick)
            ax.set_yticks(range(T), chars, fontsize=tick)
            for lab in (*ax.get_xticklabels(), *ax.get_yticklabels()):
                lab.set_color(WEB_UNKNOWN if lab.get_text() in unknown else WEB_INK)
            if l == n_layer - 1:
                ax.set_xlabel("键 key (j)", fontsize=10)
            if h == 0:
                ax.set_ylabel("查询 query (i)", fontsize=10)
    fig.colorbar(im, ax=axes, shrink=0.8, label="注意力权重 / attention weight")
    text = maps["text"][:40].replace("\n", NEWLINE_MARK)
    notes = ["灰 = 因果掩码遮住的位置 / grey = hidden by the causal mask"]
    if unknown:
        notes.append("红字 = 不在字表（<unk>）/ red = outside the vocabulary")
    fig.suptitle(
        f"注意力图 / attention maps：{text}\n{model_line(maps)}\n{'；'.join(notes)}", fontsize=12, color=WEB_INK
    )
    write_figure(path, fig, dpi=110, bbox_inches="tight", pad_inches=0.15)  # PNG and SVG
    plt.close(fig)
    return Path(path)


def sweep_seed_gaps(sweep: dict) -> dict[int, list[float]]:
    """d_head -> the gap (unscaled − scaled final validation loss) of every seed the sweep trained
    both versions of, from its trials."""
    loss: dict[tuple[int, int, bool], float] = {}
    for t in sweep.get("trials", []):
        if t.get("status") != "done" or any(t.get(k) is None for k in ("d_head", "seed", "scaled", "val_loss_end")):
            continue
        else:
            loss[(int(t["d_head"]), int(t["seed"]), bool(t["scaled"]))] = float(t["val_loss_end"])
    out: dict[int, list[float]] = {}
    for (d, seed, scaled), v in sorted(loss.items()):
        if not scaled and (d, seed, True) in loss:
            out.setdefault(d, []).append(v - loss[(d, seed, True)])
    return out


def _seed_points(ax, gaps: dict[int, list[float]], color: str, marker: str, label: str, offset: float = 0.0):
    """Every seed's point, the mean over seeds joined by a line, and its 95% t-interval (2+ seeds)."""
    from ..stats import mean_interval

    xs = sorted(gaps)
    many = any(len(gaps[d]) > 1 for d in xs)
    means = [sum(gaps[d]) / len(gaps[d]) for d in xs]
    if not many:  # one seed: its points are the line
        ax.plot(
            [d * (1 + offset) for d in xs], means, marker + "-", color=color, mfc="none", ms=7, lw=1.4, label=f"{label}"
        )
        return
    for i, d in enumerate(xs):
        ys = gaps[d]
        ax.plot(
            [d * (1 + offset)] * len(ys),
            ys,
            marker,
            mfc="none",
            mec=color,
            ms=6,
            alpha=0.8,
            ls="none",
            label=f"{label}：每个种子 / each seed" if i == 0 else None,
        )
        if len(ys) > 1:
            lo, hi = mean_interval(ys)
            ax.plot(
                [d * (1 + offset)] * 2,
                [lo, hi],
                color=color,
                lw=2.2,
                alpha=0.45,
                label="均值的 95% 区间 / 95% CI of the mean" if i == 0 else None,
            )
    ax.plot([d * (1 + offset) for d in xs], means, "-", color=color, lw=1.6, label=f"{label}：均值 / mean")


def plot_sweep_gap(sweep: dict, path: str | Path, reference: dict | None = None) -> Path:
    """Unscaled minus scaled final validation loss against d_head (exercise 2): every seed of the
    sweep as a point, with the mean over seeds and its 95% t-interval where there are several.
    ``reference`` ({"label", "gaps": {d_head: [gap per seed]}, "note"}) draws another result of the
    same protocol beside it (the lab book's multi-seed exercise 2)."""
    use_cjk_font_with_system()
    import matplotlib.pyplot as plt

    own = sweep_seed_gaps(sweep) or {p["d_head"]: [p["gap"]] for p in sweep.get("gap", [])}
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.axhline(0.0, color="0.7", lw=0.8)
    if reference:
        _seed_points(ax, {int(k): v for k, v in reference["gaps"].items()}, "#2456a6", "o", reference["label"])
    n = max((len(v) for v in own.values()), default=0)
    _seed_points(ax, own, "#c8372d", "s", f"attnlab sweep（{n} 个种子 / seed{'s' if n != 1 else ''}）", 0.02)
    xs = sorted(set(own) | set(int(k) for k in (reference or {}).get("gaps", {})))
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.minorticks_off()
    ax.set_xlabel("d_head（单头维度 / head size；n_head 1，d_model = d_head）")
    ax.set_ylabel("不缩放 − 缩放 的验证 loss\nval loss unscaled − scaled")
    ax.set_title("临界维度 / critical dimension（练习二 / exercise 2）")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    if reference and reference.get("note"):
        ax.text(0.0, -0.2, reference["note"], transform=ax.transAxes, fontsize=7.5, color="0.3", ha="left", va="top")
    fig.tight_layout()
    write_figure(path, fig, dpi=110, bbox_inches="tight")  # PNG and SVG
    plt.close(fig)
    return Path(path)
