"""Figures of the experiments, drawn from their JSON results alone (matplotlib, Agg).

Chinese labels and characters need a CJK font: the package's own subset
(``attnlab.fonts``) when it is there, with the system's Noto Sans CJK
as fallback for characters the subset lacks.
"""

from __future__ import annotations

from pathlib import Path

from ..io import write_figure

SYSTEM_CJK = ("Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK JP", "WenQuanYi Zen Hei")


def use_cjk_font() -> list[str]:
    """Put CJK-capable fonts first in matplotlib's sans-serif list; returns that list."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import font_manager

    families = []
    try:
        from ..fonts import use_cjk_font as shipped

        families.append(shipped())
    except (ImportError, OSError, RuntimeError):
        pass  # no shipped subset: rely on the system's fonts
    installed = {f.name for f in font_manager.fontManager.ttflist}
    families += [f for f in SYSTEM_CJK if f in installed]
    matplotlib.rcParams["font.family"] = "sans-serif"
    matplotlib.rcParams["font.sans-serif"] = families + ["DejaVu Sans"]
    matplotlib.rcParams["axes.unicode_minus"] = False
    return families


def plot_attention_maps(maps: dict, path: str | Path) -> Path:
    """One heatmap per layer (rows) and head (columns); the text's characters on both axes."""
    use_cjk_font()
    import matplotlib.pyplot as plt

    layers = maps["layers"]
    chars = [("⏎" if c == "\n" else c) for c in maps["chars"]]
    n_layer, n_head = len(layers), len(layers[0])
    T = len(chars)
    size = max(2.6, 0.16 * T + 1.0)
    fig, axes = plt.subplots(n_layer, n_head, figsize=(size * n_head, size * n_layer), squeeze=False)
    for l in range(n_layer):
        for h in range(n_head):
            ax = axes[l][h]
            im = ax.imshow(layers[l][h], cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"层 {l} · 头 {h} / layer {l} head {h}", fontsize=9)
            ax.set_xticks(range(T), chars, fontsize=7)
            ax.set_yticks(range(T), chars, fontsize=7)
            if l == n_layer - 1:
                ax.set_xlabel("键 key (j)", fontsize=8)
            if h == 0:
                ax.set_ylabel("查询 query (i)", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.6, label="注意力权重 / attention weight")
    fig.suptitle(f"注意力图 / attention maps: {maps['text'][:40]}", fontsize=11)
    write_figure(path, fig, dpi=110)  # PNG and SVG
    plt.close(fig)
    return Path(path)


def plot_sweep_gap(sweep: dict, path: str | Path) -> Path:
    """Unscaled minus scaled final validation loss against d_head (exercise 2)."""
    use_cjk_font()
    import matplotlib.pyplot as plt

    pts = sweep["gap"]
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [p["d_head"] for p in pts]
    ys = [p["gap"] for p in pts]
    ax.axhline(0.0, color="0.7", lw=0.8)
    ax.plot(xs, ys, "o-", color="C3")
    if any(p.get("gap_std") for p in pts):
        ax.errorbar(xs, ys, yerr=[p.get("gap_std") or 0.0 for p in pts], fmt="none", color="C3")
    ax.set_xlabel("d_head（单头维度 / head size）")
    ax.set_ylabel("不缩放 − 缩放 的验证 loss\nval loss unscaled − scaled")
    ax.set_title("临界维度 / critical dimension (练习二 exercise 2)")
    ax.set_xticks(xs)
    fig.tight_layout()
    write_figure(path, fig, dpi=110)  # PNG and SVG
    plt.close(fig)
    return Path(path)
