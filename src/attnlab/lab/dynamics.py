"""§1.12.4: how the heads specialise — the experiment the chapter proposes and leaves open.

Runs: none of its own; the chapter's model (the case's small scaled run) of every seed keeps its
weights at the steps the chapter names (100, 500, 1500). Measured per seed: the head portrait at
each of those steps, and layer 0's largest previous-token and diagonal weight. Judged: that the
previous-token weight rises (effect over seeds); the chapter's question, sudden or gradual, is
answered (reported).
"""

from __future__ import annotations

import statistics

from .. import stats as S
from ..book import book_values
from ..tools import ExperimentError
from ..verdicts import claim
from . import plot
from . import runs as R
from .common import rnd, seed_table
from .labbook import Context, Experiment, NotAvailable, Outcome

# the chapter's question: formed by the middle step (500 of 1500) with at least this share of its
# rise = "一次性出现" (sudden), else "逐渐形成" (gradual); the threshold written with the experiment
SUDDEN = 0.8


def _layer0_best(heads: list[dict], key: str) -> float:
    return max(h[key] for h in heads if h["layer"] == 0)


def _measure(ctx: Context, fs: list) -> dict:
    from .portrait import dynamics_of_run

    (f,) = fs
    try:
        r = dynamics_of_run(f.run_dir, ctx.text, ctx.scale.dynamics_steps())
    except ExperimentError as e:  # a run trained before it kept its weights
        return {"missing": str(e)}
    snaps = r["snapshots"]
    return {
        "steps": [s["step"] for s in snaps],
        "prev": [_layer0_best(s["heads"], "prev") for s in snaps],
        "diag": [_layer0_best(s["heads"], "diag") for s in snaps],
        "heads": [s["heads"] for s in snaps],
    }


def measure(ctx: Context) -> Outcome:
    from ..diagnostics import uniform_reference
    from .portrait import POSITIONS

    stored = (ctx.previous or {}).get("per_seed", {})
    table = seed_table(ctx, lambda s: [R.baseline(ctx.scale, s)], lambda fs: _measure(ctx, fs), stored)
    missing = []
    for s in list(table):
        if "missing" in table[s]:
            missing.append(table[s]["missing"])
            if s in stored:
                table[s] = stored[s]  # its weights are gone, its committed numbers are not
            else:
                del table[s]
    if not table:
        raise NotAvailable(
            "; ".join(missing)
            or "未运行：基线没有完成的种子，也没有提交的数字 / not run yet: no seed of the baseline has finished and no committed numbers (attnlab book --only §1.12.4)"
        )
    steps = list(ctx.scale.dynamics_steps())
    cfg = R.baseline(ctx.scale, ctx.scale.seed_list()[0]).cfg
    res = {
        "headers": ["种子 / seed"] + [f"prev @ {s}" for s in steps] + [f"diag @ {s}" for s in steps],
        "rows": [[int(s)] + [rnd(x, 3) for x in r["prev"]] + [rnd(x, 3) for x in r["diag"]] for s, r in table.items()],
        "steps": steps,
        "seeds": [{"seed": int(s), "prev": r["prev"], "diag": r["diag"]} for s, r in table.items()],  # the figure
        "per_seed": table,
        # an order-blind head's previous-token weight on the portrait's windows, and the book's prev head
        "uniform_prev": uniform_reference(min(POSITIONS, cfg.block_size))["prev"],
        "book_prev_head": max(v[2] for k, v in book_values("head_portrait_1_8_5").items() if k.startswith("L0H")),
    }
    return Outcome(
        results=res,
        figures=[ctx.fig("prev.png")],
        notes=missing,
        status="done" if len(table) >= ctx.scale.seeds else "partial",
    )


# ------------------------------------------------------------------------------- judge
def sesoi_prev(res: dict) -> float:
    """Half the book's previous-token head above an order-blind head (0.450 vs uniform, §1.8.5): a rise
    smaller than that forms no previous-token head."""
    return (res["book_prev_head"] - res["uniform_prev"]) / 2


def _rise(table: dict) -> list[float]:
    return [r["prev"][-1] - r["prev"][0] for r in table.values() if len(r.get("prev", [])) > 1]


def _share_by_middle(table: dict) -> list[float]:
    """Per seed: the share of the rise from the first to the last step reached by the middle one."""
    out = []
    for r in table.values():
        p = r.get("prev", [])
        if len(p) > 2 and p[-1] != p[0]:
            out.append((p[1] - p[0]) / (p[-1] - p[0]))
    return out


def judge(res: dict) -> list[dict]:
    table = res.get("per_seed") or {}
    if not table:
        return []
    steps = res["steps"]
    rise, sesoi = _rise(table), sesoi_prev(res)
    share = _share_by_middle(table)
    sudden = sum(x >= SUDDEN for x in share)
    answer = (
        "一次性出现 / sudden"
        if share and sudden == len(share)
        else "逐渐形成 / gradual"
        if share and sudden == 0
        else "种子之间不一致 / the seeds disagree"
    )
    return [
        claim(
            "prev_head_forms",
            "§1.12.4",
            "“前一位头”的 prev 权重随训练涨起来：层 0 最大 prev，最后一步减第一步，同一种子 > 0 / the "
            f"previous-token weight grows during training: layer 0's largest prev at step {steps[-1]} minus "
            f"step {steps[0]}, per seed, > 0",
            S.effect(rise, direction=+1, sesoi=sesoi),
            inputs={
                **{
                    f"prev@{s}": [r["prev"][i] for r in table.values() if i < len(r["prev"])]
                    for i, s in enumerate(steps)
                },
                "rise": rise,
                "sesoi": sesoi,
            },
            book="prev 权重是怎么涨起来的",
        ),
        claim(
            "specialisation_gradual_or_sudden",
            "§1.12.4",
            "头部特化是一次性出现的，还是逐渐形成的？（书中留作问题）/ sudden or gradual? the share of the rise "
            f"of layer 0's largest prev (step {steps[0]} to {steps[-1]}) reached by step {steps[1]}",
            S.reported(
                f"{answer}: {sudden} of {len(share)} seeds reach ≥ {SUDDEN:.0%} of their rise by step {steps[1]}",
                statistics.fmean(share) if share else None,
                len(share),
            ),
            inputs={
                "share_of_rise": share,
                "fraction_of_final": [r["prev"][1] / r["prev"][-1] for r in table.values() if len(r["prev"]) > 2],
                "sudden_at": SUDDEN,
            },
            book="书中留作问题 / left open",
            kind="question",
        ),
    ]


# ------------------------------------------------------------------------------------- figure
def draw(r: dict) -> dict:
    """Layer 0's largest previous-token and diagonal weight at each kept step: one thin line per seed,
    the mean over seeds bold, the book's previous-token head and an order-blind head for reference;
    the steps themselves on a linear axis, the legend beside the data, not over it."""
    plt = plot.plt()
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
            mean = [plot.mean([ys[j] for ys in per_seed]) for j in range(len(steps))]
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


WHY = {
    "prev_head_forms": lambda r: (
        "层 0 最大 prev 从第一步到最后一步的上升 "
        + "、".join(f"{x:.3f}" for x in _rise(r.get("per_seed") or {}))
        + f"，不到书中前一位头高出均匀注意力的一半（{sesoi_prev(r):.3f}）：这个模型没有学出前一位头 / the rise is "
        "below half the book's previous-token head over uniform attention: no previous-token head formed"
    ),
}

EXPERIMENT = Experiment(
    "dynamics",
    "§1.12.4",
    "头部特化的训练动态 / how heads specialise",
    "训练 100、500、1500 步各存一次，看“前一位头”的 prev 权重是怎么涨起来的；书中没做这个实验 / "
    "the book leaves this open",
    "attnlab book --only §1.12.4",
    measure=measure,
    judge=judge,
    why=WHY,
    runs=lambda scale: [R.baseline(scale, s) for s in scale.seed_list()],
    min_runs=lambda scale: [],  # measure reads the committed numbers when no run is on disk
    draw=draw,
)
