"""The lab book's figures, drawn from each experiment's JSON alone.

One function per experiment id: ``draw(results) -> {file name: figure}``; the
names match the ``figures`` paths the experiment recorded
(figures/lab_book/<id>_<name>). ``attnlab book`` and ``attnlab report`` both
redraw them, so a figure never needs a training run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from ..book import book_values
from ..fonts import use_cjk_font
from ..io import write_figure


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    use_cjk_font()
    return plt


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    try:  # PNG only: the lab book embeds its figures
        return write_figure(path, fig, dpi=130, svg=False, bbox_inches="tight")
    finally:
        plt.close(fig)


def _mean(v: list[float]) -> float:
    return statistics.fmean(v) if v else 0.0


def _sd(v: list[float]) -> float:
    return statistics.stdev(v) if len(v) > 1 else 0.0


def _as_list(v) -> list:
    """A value or a list of values (per seed); None is no value."""
    return [] if v is None else v if isinstance(v, list) else [v]


def qk_norm(r: dict) -> dict:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [0, 1]
    w = r["without_qk_norm"]
    for off, label, vals, color in (
        (
            -0.18,
            "无 QK-norm（案例）/ without (case)",
            [w.get("small", []), _as_list(w.get("big"))],
            "#999999",
        ),
        (0.18, "有 QK-norm / with QK-norm", [r["gap"]["small"], r["gap"]["big"]], "#2463a6"),
    ):
        ax.bar([x + off for x in xs], [_mean(v) for v in vals], width=0.34, color=color, label=label)
        for x, v in zip(xs, vals):
            ax.plot([x + off] * len(v), v, "k.", ms=6)
            if not v:
                ax.text(x + off, 0.02, "未运行\nnot run", ha="center", va="bottom", fontsize=9)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(xs, ["d_head = 32", "d_head = 256"])
    ax.set_ylabel("验证 loss 差距（不缩放 − 缩放）/ val gap")
    ax.set_title("QK-norm：去掉缩放的代价 / the cost of removing the scale")
    ax.legend()
    ax.grid(alpha=0.3, axis="y")
    return {"gaps.png": fig}


def positions(r: dict) -> dict:
    plt = _plt()
    kinds = list(r["summary"])
    labels = {
        "learned": "可学习 / learned",
        "sinusoidal": "正弦 / sinusoidal",
        "rope": "RoPE",
        "none": "无 / none",
        "sinusoidal_emb_scale": "正弦，词向量×√d\n/ sin., emb ×√d",
    }
    fig, ax = plt.subplots(figsize=(1.75 * len(kinds) + 1, 3.6))
    m = {k: r["summary"][k]["val_mean"] for k in kinds}
    for i, k in enumerate(kinds):
        ax.bar(i, m[k], color="#2463a6" if k != "none" else "#c0392b")
        ax.plot([i] * len(r["summary"][k]["val"]), r["summary"][k]["val"], "k.", ms=6)
    ax.set_xticks(range(len(kinds)), [labels.get(k, k) for k in kinds])
    ax.set_ylim(min(m.values()) - 0.3, max(m.values()) + 0.15)
    ax.set_ylabel("验证 loss / val loss")
    ax.set_title("位置编码 / positional encoding")
    ax.grid(alpha=0.3, axis="y")
    portraits = r["portraits"]
    fig2, axes = plt.subplots(1, len(portraits), figsize=(3 * len(portraits), 3), sharey=True)
    for a, (k, heads) in zip(axes, portraits.items()):
        a.bar(range(len(heads)), [h["prev"] for h in heads], color="#2463a6", label="prev")
        a.bar(
            range(len(heads)),
            [h["diag"] for h in heads],
            bottom=[h["prev"] for h in heads],
            color="#e0a030",
            label="diag",
        )
        a.set_xticks(range(len(heads)), [f"L{h['layer']}H{h['head']}" for h in heads], rotation=90, fontsize=7)
        a.set_title(labels.get(k, k).replace("\n", " "), fontsize=8)
    axes[0].set_ylabel("前一位 + 对角权重 / prev + diag")
    axes[0].legend(fontsize=7)
    return {"val_loss.png": fig, "portraits.png": fig2}


def dynamics(r: dict) -> dict:
    """Layer 0's largest previous-token and diagonal weight at each kept step: one thin line per seed,
    the mean over seeds bold, the book's previous-token head and an order-blind head for reference;
    the steps themselves on a linear axis, the legend beside the data, not over it."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.2, 4.2))
    steps = r["steps"]
    kinds = (
        ("prev", "前一位权重 / previous-token weight", "#2456a6", "o"),
        ("diag", "对角权重 / diagonal weight", "#d9822b", "s"),
    )
    for key, label, color, marker in kinds:
        per_seed = [p[key] for p in r["seeds"] if len(p.get(key) or []) == len(steps)]
        for i, ys in enumerate(per_seed):
            ax.plot(
                steps,
                ys,
                "-",
                color=color,
                lw=0.8,
                alpha=0.35,
                label=f"{label}：每个种子 / each seed" if i == 0 else None,
            )
        if per_seed:
            mean = [_mean([ys[j] for ys in per_seed]) for j in range(len(steps))]
            ax.plot(
                steps,
                mean,
                marker + "-",
                color=color,
                lw=2.2,
                ms=6,
                label=f"{label}：{len(per_seed)} 个种子的均值 / mean",
            )
    if r.get("book_prev_head") is not None:
        ax.axhline(
            r["book_prev_head"],
            color="#2456a6",
            ls="--",
            lw=1,
            label=f"书中的前一位头 / the book's prev head {r['book_prev_head']:.2f}",
        )
    if r.get("uniform_prev") is not None:
        ax.axhline(
            r["uniform_prev"],
            color="0.45",
            ls=":",
            lw=1,
            label=f"不看顺序的头 / order-blind head {r['uniform_prev']:.2f}",
        )
    ax.set_xticks(steps, [str(s) for s in steps])
    ax.set_xlim(0, max(steps) * 1.04)
    ax.set_xlabel("训练步数 / step")
    ax.set_ylabel("层 0 各头中的最大值 / layer 0, largest over heads")
    ax.set_title("头部特化的过程 / heads specialising")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, frameon=False)
    ax.grid(alpha=0.3)
    return {"prev.png": fig}


def timing(r: dict) -> dict:
    plt = _plt()
    book = book_values("sdpa_timing_rtx_a6000_1_14_2")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(
        [row[0] for row in r["rows"]],
        [row[2] for row in r["rows"]],
        "o-",
        color="#2463a6",
        label="本机 CPU / this CPU (SDPA)",
    )
    ax.loglog(book["n"], book["ms"], "s--", color="#c0392b", label="书中 RTX A6000 / book")
    from matplotlib.ticker import NullFormatter

    ns = sorted({row[0] for row in r["rows"]} | set(book["n"]))
    ax.set_xticks(ns, [str(n) for n in ns])  # the measured lengths, not 3×10³4×10³ running together
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("序列长度 n / sequence length")
    ax.set_ylabel("单次前向 ms / forward ms")
    ax.set_title("§1.14.2 注意力耗时 / attention time")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return {"timing.png": fig}


def exercise2(r: dict) -> dict:
    plt = _plt()
    variants = [(f"n_head = 1, d_model = d_head（{len(r['seeds'])} seeds）", r["summary"], "o-", "#c0392b")]
    if r.get("fixed_summary"):
        n = len(r.get("fixed_seeds", []))
        variants.append((f"d_model = 256, n_head = 256 / d_head（{n} seeds）", r["fixed_summary"], "s--", "#2463a6"))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for label, pts, fmt, color in variants:
        xs = [x["d_head"] for x in pts]
        ax.errorbar(
            xs,
            [x["gap_mean"] for x in pts],
            yerr=[x["gap_sd"] or 0 for x in pts],
            fmt=fmt,
            capsize=4,
            color=color,
            label=label,
        )
        ax2.plot(xs, [x["entropy_end_unscaled"] for x in pts], fmt, color=color, label=f"不缩放 / unscaled, {label}")
        ax2.plot(
            xs, [x["entropy_end_scaled"] for x in pts], fmt, color=color, alpha=0.35, label=f"缩放 / scaled, {label}"
        )
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("d_head")
    ax.set_ylabel("验证 loss 差距（不缩放 − 缩放）/ val gap")
    ax.set_title("练习二：临界维度 / exercise 2")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax2.set_yscale("log")
    ax2.set_xlabel("d_head")
    ax2.set_ylabel("第 0 层训练后权重熵 / layer-0 entropy at the end")
    ax2.set_title("最终熵 / final weight entropy")
    ax2.legend(fontsize=6)
    ax2.grid(alpha=0.3, which="both")
    return {"gap.png": fig, "curves.png": _ex2_curves(plt, r)}


def _ex2_curves(plt, r: dict):
    """The exercise's loss curves: validation loss of both versions at every d_head (first seed)."""
    panels = [("d_model = d_head", r["summary"])] + (
        [("d_model = 256", r["fixed_summary"])] if r.get("fixed_summary") else []
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    cmap = plt.get_cmap("viridis")
    for ax, (title, pts) in zip(axes[0], panels):
        for i, x in enumerate(pts):
            color = cmap(i / max(1, len(pts) - 1))
            for tag, ls in (("scaled", "-"), ("unscaled", "--")):
                curve = x["val_curve"][tag]
                if curve:
                    ax.plot(*zip(*curve), ls, color=color, label=f"d_head {x['d_head']}" if tag == "scaled" else None)
        ax.set_xlabel("步 / step")
        ax.set_ylabel("验证 loss / val loss")
        ax.set_title(f"{title}：实线缩放，虚线不缩放 / solid scaled, dashed unscaled", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    return fig


def deep(r: dict) -> dict:
    """Validation curves of two and four layers, 1500 steps (dashed) and the stretched schedule (solid)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for c in r.get("curves", []):
        color = {2: "#2463a6", 4: "#c0392b"}.get(c["n_layer"], "#555555")
        ls = "--" if c["steps"] == min(x["steps"] for x in r["curves"]) else "-"
        for i, curve in enumerate(c["val"]):
            label = f"{c['n_layer']} 层 / layers, {c['steps']} 步 / steps" if i == 0 else None
            ax.plot(*zip(*curve), ls, color=color, alpha=0.8, lw=1.2, label=label)
    ax.set_xlabel("步 / step")
    ax.set_ylabel("验证 loss / val loss")
    ax.set_title("§1.18.5 ③：2 层与 4 层（每个种子一条线）/ two and four layers, one line per seed", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return {"curves.png": fig}


def markov(r: dict) -> dict:
    plt = _plt()
    models, floor = r["models"], r["floor"]
    fig, ax = plt.subplots(figsize=(8, max(3, 0.22 * len(models) + 1)))
    ys = list(range(len(models)))
    vals = [m["val_loss"] for m in models]
    ax.barh(ys, vals, color=[_markov_color(m["model"]) for m in models])  # bars from 0: a bar's length is its loss
    ax.set_yticks(ys, [markov_label(m["model"]) for m in models], fontsize=7)
    for y, v in zip(ys, vals):
        ax.text(v + 0.03, y, f"{v:.2f}", va="center", fontsize=6.5, bbox={"fc": "white", "ec": "none", "pad": 0.3})
    lines = (
        ("一元 / unigram", floor["unigram"], "#999999"),
        ("二元 / bigram", floor["bigram"], "#c0392b"),
        ("均匀 ln V / uniform", floor["ln_vocab"], "#555555"),
    )
    for name, v, c in lines:
        ax.axvline(v, color=c, ls="--", label=f"{name} {v:.2f}")
    ax.set_xlim(0, floor["ln_vocab"] * 1.08)
    ax.set_ylim(-0.8, len(models) - 0.2)
    ax.set_xlabel("验证 loss（nats）/ validation loss")
    ax.set_title("检查点②：马尔可夫下限 / the Markov floor")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=3)
    return {"floor.png": fig}


_SIZE = {"small": "小模型 d_head 32 / small", "big": "大模型 d_head 256 / big"}


def markov_label(name: str) -> str:
    """A model of the Markov-floor table in Chinese first, English beside: "case small_scaled seed 20261014"
    is 案例 小模型 d_head 32 · 缩放 · 种子 20261014 / case small, scaled, seed 20261014; a name of another
    form is kept as it is."""
    words = name.split()
    tag = lambda t: "缩放 / scaled" if t == "scaled" else "不缩放 / unscaled"  # noqa: E731
    if len(words) == 4 and words[0] == "case" and words[2] == "seed" and "_" in words[1]:
        size, scaled = words[1].split("_", 1)
        if size in _SIZE and scaled in ("scaled", "unscaled"):
            return f"案例 / case · {_SIZE[size]} · {tag(scaled)} · 种子 / seed {words[3]}"
    if (
        len(words) == 3
        and words[0] == "sweep"
        and words[1].startswith("d_head=")
        and words[2] in ("scaled", "unscaled")
    ):
        return f"扫描 / sweep · d_head {words[1].split('=', 1)[1]} · {tag(words[2])}"
    return name


def _markov_color(name: str) -> str:
    return "#c8372d" if name.split()[-1] == "unscaled" or "_unscaled" in name else "#2456a6"


FIGURES: dict[str, Callable[[dict], dict]] = {
    "qk_norm": qk_norm,
    "positions": positions,
    "dynamics": dynamics,
    "timing": timing,
    "exercise2": exercise2,
    "deep": deep,
    "markov": markov,
}


def draw_figures(doc: dict, root: Path) -> list[Path]:
    """Draw the figures of one experiment's JSON under ``root``; returns the paths written."""
    fn = FIGURES.get(doc.get("id"))
    if fn is None:  # a module that draws its own figures (Experiment.draw, from the results alone)
        from ..lab import BY_ID

        e = BY_ID.get(doc.get("id"))
        fn = getattr(e, "draw", None) if e is not None else None
    if fn is None or doc.get("status") == "not_run":
        return []
    wanted = {Path(f).name: f for f in doc.get("figures", [])}
    out = []
    for name, fig in fn(doc["results"]).items():
        rel = wanted.get(f"{doc['id']}_{name}")
        if rel is None:
            import matplotlib.pyplot as plt

            plt.close(fig)
            continue
        out.append(_save(fig, Path(root) / rel))
    return out
