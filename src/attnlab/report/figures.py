"""The case study's figures, drawn from the result JSON alone (figs 1.2-1.4)."""

from __future__ import annotations

from pathlib import Path

from ..lab import plot

RED, BLUE = "#c0392b", "#2463a6"


def _smooth(y: list[float], w: int | None = None) -> list[float]:
    """Trailing moving average; the window grows with the run (25 steps at 1500)."""
    w = w or max(1, min(25, len(y) // 60))
    out, acc = [], 0.0
    for i, v in enumerate(y):
        acc += v
        if i >= w:
            acc -= y[i - w]
        out.append(acc / min(i + 1, w))
    return out


def loss_figure(res: dict, path: Path) -> Path:
    plt = plot.plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, size, title in (
        (axes[0], "small", "d_head = 32（小模型 / small）"),
        (axes[1], "big", "d_head = 256（“大”模型 / big）"),
    ):
        for scaled, color, label in ((False, RED, "不缩放 / unscaled"), (True, BLUE, "÷√d_k 缩放 / scaled")):
            run = res["pairs"][f"{size}_{'scaled' if scaled else 'unscaled'}"]
            tr = run["trace"]
            ax.plot(tr["step"], tr["loss"], color=color, alpha=0.18, lw=0.7)
            ax.plot(tr["step"], _smooth(tr["loss"]), color=color, lw=1.8, label=f"{label} 训练 / train")
            ax.plot(tr["val_step"], tr["val_loss"], "o", color=color, ms=3.5, label=f"{label} 验证 / val")
        ax.set_title(title)
        ax.set_xlabel("训练步数 / step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("交叉熵 loss / cross-entropy")
    axes[1].legend(fontsize=8)
    fig.suptitle("图 1.2　去掉 1/√d_k：小模型几乎无差别，大模型明显分离 / Fig 1.2")
    return plot.save(fig, path, svg=True)  # PNG and SVG


def logit_std_figure(res: dict, path: Path) -> Path:
    plt = plot.plt()
    sw = res["init_sweep"]
    d = [r["d_head"] for r in sw]
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    ax.loglog(d, [r["theory_sqrt_d_head"] for r in sw], "s-", color=RED, label="理论 √d_head / theory")
    ax.loglog(d, [r["logit_std_unscaled"] for r in sw], "o-", color=BLUE, label="实测（不缩放）/ measured, unscaled")
    ax.loglog(
        d,
        [r["formula_logit_std"] for r in sw],
        "--",
        color="gray",
        label="式 1.1–1.2：d_model σ² √d_head / variance formula",
    )
    ax.loglog(d, [r["logit_std_scaled"] for r in sw], "^:", color="#27ae60", label="实测（缩放后）/ measured, scaled")
    fixed = res.get("init_sweep_fixed_d_model")
    if fixed:
        ax.loglog(
            [r["d_head"] for r in fixed],
            [r["logit_std_unscaled"] for r in fixed],
            "D-",
            color="#8e44ad",
            label="实测，d_model 固定 512（n_head = 512/d_head）/ measured, d_model fixed at 512",
        )
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(d, [str(x) for x in d])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("d_head（书中协议 n_head = 1, d_model = d_head / book's protocol）")
    ax.set_ylabel("初始化时点积标准差 / init logit std")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    ax.set_title("图 1.3　初始化状态下 logits 的尺度 / Fig 1.3")
    return plot.save(fig, path, svg=True)  # PNG and SVG


def diagnostics_figure(res: dict, path: Path) -> Path:
    plt = plot.plt()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6.4), sharex=True)
    for scaled, color, label in ((False, RED, "不缩放 / unscaled"), (True, BLUE, "缩放 / scaled")):
        for size, style, width in (("big", "-", 1.6), ("small", ":", 1.0)):
            run = res["pairs"][f"{size}_{'scaled' if scaled else 'unscaled'}"]
            tr = run["trace"]
            lab = f"{label}, d_head {'256' if size == 'big' else '32'}"
            a1.plot(tr["step"], tr["layers"][0]["weight_entropy"], style, color=color, lw=width, label=lab)
            a2.plot(tr["step"], tr["layers"][0]["jacobian_fro"], style, color=color, lw=width, label=lab)
    a1.set_yscale("log")
    a2.set_yscale("log")
    a1.set_ylabel("权重熵 / weight entropy")
    a2.set_ylabel(r"雅可比范数 $\Vert J\Vert_F$ / Jacobian norm")
    a2.set_xlabel("训练步数 / step（第 0 层 / layer 0）")
    for a in (a1, a2):
        a.grid(alpha=0.3, which="both")
    # one legend under both panels: inside, it covers the curves
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, ncol=2, loc="lower center", bbox_to_anchor=(0.5, -0.06))
    fig.suptitle("图 1.4　训练中注意力层的两个诊断量（对数轴）/ Fig 1.4")
    return plot.save(fig, path, svg=True)  # PNG and SVG


def case_figures(res: dict, fig_dir: Path) -> list[Path]:
    fig_dir = Path(fig_dir)
    return [
        loss_figure(res, fig_dir / "fig1_2_loss.png"),
        logit_std_figure(res, fig_dir / "fig1_3_logit_std.png"),
        diagnostics_figure(res, fig_dir / "fig1_4_diagnostics.png"),
    ]
