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

        shipped()  # the shipped subset and its Extension B supplement, in that order
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


def plot_attention_maps(maps: dict, path: str | Path) -> Path:
    """One heatmap per layer (rows) and head (columns); the text's characters on both axes
    (characters outside the vocabulary in red, a line break as ／)."""
    use_cjk_font()
    import matplotlib.pyplot as plt

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
        figsize=(size * n_head + 1.2, size * n_layer + 0.9),
        squeeze=False,
        layout="constrained",
    )
    for l in range(n_layer):
        for h in range(n_head):
            ax = axes[l][h]
            im = ax.imshow(layers[l][h], cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"层 {l} · 头 {h} / layer {l} head {h}", fontsize=11)
            ax.set_xticks(range(T), chars, fontsize=tick)
            ax.set_yticks(range(T), chars, fontsize=tick)
            for lab in (*ax.get_xticklabels(), *ax.get_yticklabels()):
                if lab.get_text() in unknown:
                    lab.set_color("#c0392b")
            if l == n_layer - 1:
                ax.set_xlabel("键 key (j)", fontsize=10)
            if h == 0:
                ax.set_ylabel("查询 query (i)", fontsize=10)
    fig.colorbar(im, ax=axes, shrink=0.8, label="注意力权重 / attention weight")
    note = "红字 = 不在字表（<unk>）/ red = outside the vocabulary" if unknown else ""
    text = maps["text"][:40].replace("\n", NEWLINE_MARK)
    fig.suptitle(f"注意力图 / attention maps: {text}" + (f"\n{note}" if note else ""), fontsize=12)
    write_figure(path, fig, dpi=110, bbox_inches="tight", pad_inches=0.15)  # PNG and SVG
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
