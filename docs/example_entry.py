"""An example lab-book entry, written the way CONTRIBUTING.md says (加一个实验 / Adding an experiment).

§1.6.3 ⑬ at the chapter's own size: a learnable temperature per head on the small scaled model
(d_head 32), beside the case's small scaled model of the same seed. The book's exercise ⑬ asks it of
the unscaled big model (``lab/temperature.py``); this is its control, where 1/√d_k is already right,
so a free temperature should have nothing to fix.

It is real: ``tests/test_example_entry.py`` registers it in a temporary registry, runs it with
``attnlab book --quick --only temp_small`` and renders the lab book with it. It is not part of the
committed book (no full-size runs, no committed JSON). To make it an entry of the book: copy this file to
``src/attnlab/lab/temp_small.py`` (imports may stay absolute), add ``"temp_small"`` to ``attnlab.lab.ORDER``,
and move the checks of tests/test_example_entry.py into ``tests/lab/test_temp_small.py``.

Every part an entry has, top to bottom: its runs (data), ``measure`` (the only part that opens runs),
a pure ``judge`` (rules from ``attnlab.stats`` only, thresholds fixed before looking), the why of each
FAIL from the results, the prediction written before the runs, and ``draw`` (its figure from the
results alone).
"""

from __future__ import annotations

import math

from attnlab import stats as S
from attnlab.book import book_values
from attnlab.lab import plot
from attnlab.lab import runs as R
from attnlab.lab.common import final_val, paired, rnd, seed_table
from attnlab.lab.labbook import Context, Experiment, NotAvailable, Outcome
from attnlab.runner import Run
from attnlab.verdicts import claim

SECTION = "§1.6.3"
# fixed before the runs: "changes little" is less than half of what the scale itself is worth at this
# size in the book (the small pair's gap, 0.17 nats: §1.2, fig. 1.2)
MARGIN = book_values("case_loss_1_2_and_1_4")["gap_small"] / 2
# fixed before the runs: "stays near 1" is within a factor √2 either way (a temperature of √2 is the
# change from d_head 32 to d_head 64, the smallest step the chapter's exercises take)
BAND = (1 / math.sqrt(2), math.sqrt(2))


# ----------------------------------------------------------------------------------------- runs
def temp_small_run(scale: R.Scale, seed: int) -> Run:
    """The chapter's model (small, scaled) with a learnable temperature per head (1 at init)."""
    return Run(f"temp_small_s{seed}", scale.cfg(**R.SIZES["small"], learn_temp=True, seed=seed), group="temperature")


def runs_of_seed(scale: R.Scale, seed: int) -> list[Run]:
    """Its run and the baseline it is compared with (the case's run: shared, never trained twice)."""
    return [temp_small_run(scale, seed), R.baseline(scale, seed)]


# -------------------------------------------------------------------------------------- measure
def _numbers(fs) -> dict:
    """One seed: both final validation losses and every head's learned temperature."""
    temp, base = fs
    return {
        "val_temp": final_val(temp),
        "val_base": final_val(base),
        "temperatures": [1 / x for b in temp.model.blocks for x in b.attn.log_inv_temp.detach().exp().tolist()],
    }


def measure(ctx: Context) -> Outcome:
    table = seed_table(ctx, lambda s: runs_of_seed(ctx.scale, s), _numbers, (ctx.previous or {}).get("per_seed"))
    if not table:
        raise NotAvailable("未运行 / not run yet (attnlab book --only temp_small)")
    res = {
        "headers": ["种子 / seed", "带温度 / with temperature", "基线 / baseline", "学到的温度 / learned temperatures"],
        "rows": [
            [int(s), rnd(r["val_temp"]), rnd(r["val_base"]), [rnd(t, 3) for t in r["temperatures"]]]
            for s, r in table.items()
        ],
        "per_seed": table,
    }
    status = "done" if len(table) >= ctx.scale.seeds else "partial"
    return Outcome(results=res, figures=[ctx.fig("temperatures.png")], status=status)


# ---------------------------------------------------------------------------------------- judge
def judge(res: dict) -> list[dict]:
    """Pure: the results in, the claims out (what ``attnlab report`` re-runs from the JSON)."""
    table = res.get("per_seed") or {}
    if not table:
        return []
    diff = paired(table, "val_temp", "val_base")
    temps = [t for row in table.values() for t in row["temperatures"]]
    return [
        claim(
            "temp_small_changes_little",
            SECTION,
            f"预测：d_head 32 时缩放已经合适，可学温度几乎不改变验证 loss（与同种子的基线之差在 ±{MARGIN:.3g} 以内）"
            f" / prediction: at d_head 32 the scale is already right, so a learnable temperature changes "
            f"validation loss little (within ±{MARGIN:.3g} of the same seed's baseline)",
            S.equivalence(diff, MARGIN),
            inputs={"temp_minus_baseline": diff, "margin": MARGIN},
            kind="prediction",
        ),
        claim(
            "temp_small_stays_near_one",
            SECTION,
            f"预测：每个头学到的温度都留在 1 附近（[{BAND[0]:.3g}, {BAND[1]:.3g}]）/ prediction: every head's "
            f"learned temperature stays near 1 (within [{BAND[0]:.3g}, {BAND[1]:.3g}])",
            S.every(temps, *BAND),
            inputs={"temperatures": temps},
            kind="prediction",
        ),
    ]


# ------------------------------------------------------------------------- the why of each FAIL
def _why_changes(res: dict) -> str:
    d = paired(res["per_seed"], "val_temp", "val_base")
    side = "更差 / worse" if sum(d) > 0 else "更好 / better"
    return (
        f"可学温度让验证 loss {side}，每个种子的差 {', '.join(f'{x:+.3f}' for x in d)} 超出 ±{MARGIN:.3g}："
        f"小模型上缩放并非已经合适 / with the temperature the model is {side.split(' / ')[1]} by "
        f"{', '.join(f'{x:+.3f}' for x in d)}, beyond ±{MARGIN:.3g}: the scale is not already right here"
    )


def _why_near_one(res: dict) -> str:
    temps = [t for row in res["per_seed"].values() for t in row["temperatures"]]
    out = [t for t in temps if not BAND[0] <= t <= BAND[1]]
    return (
        f"{len(out)} / {len(temps)} 个头的温度离开了 1 附近（{min(temps):.2f}–{max(temps):.2f}）：优化器仍想改变"
        f"尺度 / {len(out)} of {len(temps)} heads moved their temperature away from 1 "
        f"({min(temps):.2f}–{max(temps):.2f}): the optimizer still wants another scale"
    )


WHY = {"temp_small_changes_little": _why_changes, "temp_small_stays_near_one": _why_near_one}

PREDICTION = (
    "训练前写下 / written before the runs: d_head 32 时 1/√d_k 已让 logits 的尺度合适，可学温度没有东西可修："
    "验证 loss 与基线之差在书中小模型差距（0.17）的一半以内，每个头的温度留在 [0.71, 1.41]。 / At d_head 32, "
    "1/sqrt(d_k) already sets the logits' scale, so a free temperature has nothing to fix: validation loss within "
    "half the book's small gap (0.17) of the baseline, every head's temperature within [0.71, 1.41]."
)


# --------------------------------------------------------------------------------------- figure
def draw(res: dict) -> dict:
    """Every head's learned temperature, one column of points per seed, the band of "near 1" shaded."""
    plt = plot.plt()
    table = res["per_seed"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.axhspan(*BAND, color="#2463a6", alpha=0.12, label="“留在 1 附近” / near 1")
    ax.axhline(1, color="k", lw=0.6)
    for i, row in enumerate(table.values()):
        ax.plot([i] * len(row["temperatures"]), row["temperatures"], "o", color="#2463a6", ms=5)
    ax.set_xticks(range(len(table)), [f"种子 / seed {s}" for s in table], fontsize=8)
    temps = [t for row in table.values() for t in row["temperatures"]]
    ax.set_ylim(min(0.6, 0.9 * min(temps)), max(1.5, 1.1 * max(temps)))
    ax.set_ylabel("学到的温度 / learned temperature")
    ax.set_title("d_head 32 上的可学温度 / a learnable temperature at d_head 32")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return {"temperatures.png": fig}


EXPERIMENT = Experiment(
    "temp_small",
    SECTION,
    "小模型上的可学温度 / a learnable temperature on the small model",
    "停下来想一想⑬ 的对照：“为什么温度设成 √d_k，而不是让它像其他超参数一样学出来？”书答 √d_k“在训练第一步就是对的”；"
    "那么在 d_head 32 上，可学温度应无事可做 / exercise ⑬'s control: √d_k 'is right from the first step', so at "
    "d_head 32 a learnable temperature should have nothing to do",
    "attnlab book --only temp_small",
    runs=lambda scale: [r for s in scale.seed_list() for r in runs_of_seed(scale, s)],
    measure=measure,
    judge=judge,
    prediction=PREDICTION,
    why=WHY,
    seed_runs=lambda scale, seed, claim_id: runs_of_seed(scale, seed),
    draw=draw,
)
