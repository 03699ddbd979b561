"""An example lab-book entry, written the way CONTRIBUTING.md says (加一个实验 / Adding an experiment).

§1.6.3 ⑬ at the chapter's own size: a learnable temperature per head on the small scaled model
(d_head 32), beside the case's run of the same seed. Exercise ⑬ asks it of the unscaled big model
(``lab/temperature.py``); this is its control, where 1/√d_k is already right, so a free temperature
should have nothing to fix. ``tests/test_example_entry.py`` runs it (``attnlab book --quick --only
temp_small``, in a temporary registry). To add it to the book: copy it to ``src/attnlab/lab/temp_small.py``,
add ``"temp_small"`` to ``attnlab.lab.ORDER``, move its checks to ``tests/lab/test_temp_small.py``.

An entry declares what is its own: the runs of one seed, the numbers of one seed's runs, a pure judge,
why each claim would FAIL, its prediction, figure and table. The engine does the rest (every seed's
runs, the seeds ``--decide`` adds, numbers kept in its JSON, partial or not run yet, figure paths).
"""

from __future__ import annotations

import math

from attnlab import stats as S
from attnlab.book import book_values
from attnlab.lab import plot
from attnlab.lab import runs as R
from attnlab.lab.common import final_val, number_list, paired, rnd
from attnlab.lab.labbook import Experiment
from attnlab.runner import Run
from attnlab.verdicts import claim

SECTION = "§1.6.3"
# fixed before the runs: "changes little" is within half of what the scale is worth at this size in
# the book (the small pair's gap, 0.17 nats: §1.2); "near 1" is within a factor √2 either way (the
# change from d_head 32 to 64, the smallest step the chapter's exercises take)
MARGIN = book_values("case_loss_1_2_and_1_4")["gap_small"] / 2
BAND = (1 / math.sqrt(2), math.sqrt(2))


def runs_of_seed(scale: R.Scale, seed: int) -> list[Run]:
    """The chapter's model with a learnable temperature per head (1 at init), and the case's run it is
    compared with (shared with the case: never trained twice)."""
    cfg = scale.cfg(**R.SIZES["small"], learn_temp=True, seed=seed)
    return [Run(f"temp_small_s{seed}", cfg, group="temperature"), R.baseline(scale, seed)]


def numbers(finished) -> dict:
    """One seed's finished runs, in runs_of_seed's order -> its numbers."""
    temp, base = finished
    inv = [x for b in temp.model.blocks for x in b.attn.log_inv_temp.detach().exp().tolist()]
    return {"val_temp": final_val(temp), "val_base": final_val(base), "temperatures": [1 / x for x in inv]}


TABLE = {  # column -> its cell in one seed's row
    "带温度 / with temperature": lambda r: rnd(r["val_temp"]),
    "基线 / baseline": lambda r: rnd(r["val_base"]),
    "学到的温度 / learned temperatures": lambda r: [rnd(t, 3) for t in r["temperatures"]],
}


def temperatures(res: dict) -> list[float]:
    return [t for row in res["per_seed"].values() for t in row["temperatures"]]


def judge(res: dict) -> list[dict]:
    """Pure: the results ({"per_seed": {seed: numbers}}) in, the claims out (``attnlab report`` re-runs it)."""
    if not res.get("per_seed"):
        return []
    diff = paired(res["per_seed"], "val_temp", "val_base")
    near = f"[{BAND[0]:.3g}, {BAND[1]:.3g}]"
    return [
        claim(
            "temp_small_changes_little",
            SECTION,
            f"预测：d_head 32 时缩放已经合适，可学温度几乎不改变验证 loss（与同种子的基线之差在 ±{MARGIN:.3g} 以内）"
            f" / prediction: at d_head 32 a learnable temperature changes validation loss by less than "
            f"±{MARGIN:.3g} against the same seed's baseline",
            S.equivalence(diff, MARGIN),
            inputs={"temp_minus_baseline": diff, "margin": MARGIN},
            kind="prediction",
        ),
        claim(
            "temp_small_stays_near_one",
            SECTION,
            f"预测：每个头学到的温度都留在 1 附近（{near}）/ prediction: every head's temperature stays in {near}",
            S.every(temperatures(res), *BAND),
            inputs={"temperatures": temperatures(res)},
            kind="prediction",
        ),
    ]


def why_changes(res: dict) -> str:
    d = number_list(paired(res["per_seed"], "val_temp", "val_base"), "+.3f")
    return f"可学温度改变了验证 loss：{d}，超出 ±{MARGIN:.3g} / with the temperature: {d}, beyond ±{MARGIN:.3g}"


def why_near_one(res: dict) -> str:
    t = temperatures(res)
    out = sum(not BAND[0] <= x <= BAND[1] for x in t)
    return f"{out} / {len(t)} 个头的温度离开了 1 附近（{min(t):.2f}–{max(t):.2f}）：优化器仍想改变尺度 / the optimizer wants another scale"


WHY = {"temp_small_changes_little": why_changes, "temp_small_stays_near_one": why_near_one}

PREDICTION = (
    "训练前写下 / written before the runs: d_head 32 时 1/√d_k 已让 logits 的尺度合适，可学温度没有东西可修："
    "验证 loss 与基线之差在 ±0.085 以内，每个头的温度留在 [0.71, 1.41]。 / At d_head 32, 1/sqrt(d_k) already "
    "sets the logits' scale: validation loss within ±0.085 of the baseline, every temperature within [0.71, 1.41]."
)


def draw(res: dict) -> dict:
    """Every head's learned temperature, one column of points per seed, "near 1" shaded."""
    fig, ax = plot.plt().subplots(figsize=(6, 3.6))
    ax.axhspan(*BAND, color="#2463a6", alpha=0.12, label="“留在 1 附近” / near 1")
    for i, row in enumerate(res["per_seed"].values()):
        ax.plot([i] * len(row["temperatures"]), row["temperatures"], "o", color="#2463a6")
    ax.set_xticks(range(len(res["per_seed"])), [f"种子 / seed {s}" for s in res["per_seed"]], fontsize=8)
    ax.set(ylabel="学到的温度 / learned temperature", title="d_head 32 上的可学温度 / learnable temperature")
    ax.legend()
    return {"temperatures.png": fig}


EXPERIMENT = Experiment(
    "temp_small",
    SECTION,
    "小模型上的可学温度 / a learnable temperature on the small model",
    "停下来想一想⑬ 的对照：书答 √d_k“在训练第一步就是对的”，那么在 d_head 32 上可学温度应无事可做 / exercise ⑬'s "
    "control: √d_k 'is right from the first step', so at d_head 32 a learnable temperature has nothing to do",
    "attnlab book --only temp_small",
    runs_of_seed=runs_of_seed,
    numbers=numbers,
    judge=judge,
    why=WHY,
    prediction=PREDICTION,
    draw=draw,
    table=TABLE,
)
