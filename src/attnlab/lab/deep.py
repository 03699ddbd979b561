"""§1.18.5 ③: four layers instead of two ("看 4 层的模型能不能学出更明显的层间分工").

Runs, every seed: four layers at the chapter's 1500 steps beside the two-layer
baseline (the case's small scaled run), and a control that stretches the whole
schedule to 3000 steps for two and four layers. Measured per seed: the final and
best validation loss, the training loss of the last 100 steps, the validation curve,
and the head portrait of every four-layer model (the same protocol as `attnlab heads`)
with its reach: the last layer's mean attention distance minus layer 0's.

The committed record is the two per-seed tables of data/lab_book/deep.json (the two-layer
reach at 1500 steps from the same protocol's portrait of the baseline). Further seeds join
from their run folders (``common.seed_table``).

Answered (kind ``question``, REPORTED, never a FAIL of the book): the chapter's §1.18.5 question —
do four layers show a clearer division of labour than two (paired per seed), and, within four
layers, does the last layer look further than the first (at 1500 steps, and in the stretched
control)? — each answer read by the effect rule against half the book's own division; §1.18.4's
"三层以上训练变慢" on the training loss at equal steps; our prediction written before the
stretched runs as kind ``prediction``.

And the other end, §1.18.4's n_layer row "n_layer 2：一层学不出‘头的分工’": the chapter's model with
one layer (1500 steps, the first seed; more through ``--decide``), its layer 0's division of labour (the
span of its heads' mean attention distance, 3 poems × 24 positions as data/head_portrait.json) beside
the two-layer model's layer 0 from the committed head portraits (``one_layer_per_seed``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from .. import stats as S
from ..book import book_values
from ..runner import Run
from ..verdicts import claim
from . import plot
from . import runs as R
from .common import committed, final_val, number_list, paired, pending, rnd, seed_table, untrained
from .labbook import Context, Experiment, NotAvailable, Outcome

SECTION = "§1.18.5③"
HEAD_KEYS = ("entropy", "diag", "prev", "distance")
TAIL = 100  # training loss: the mean of the last 100 steps (how well the model fits what it sees)
# fixed before looking: a loss difference below 0.01 nats (1% perplexity) is no effect (as §1.8.8's)
SESOI_LOSS = 0.01
# §1.18.4's one layer. §1.8.5 describes the heads' division by their mean attention distance ("第一层的头更局部
# （平均距离 1.2–3.9）"): the book's layer 0 spans 3.92 − 1.2 = 2.72 positions between its most local and most
# global head. "学不出" = a one-layer model lacks at least half of that span
_HP = book_values("head_portrait_1_8_5")
_DIST = [v[_HP["columns"].index("mean_distance")] for k, v in _HP.items() if k.startswith("L0H")]
SESOI_DIVISION = (max(_DIST) - min(_DIST)) / 2
ONE_LAYER_COMMAND = "attnlab book --only §1.18.5"

PREDICTION_DEEP = (
    "1500 步时 4 层的验证 loss 不比 2 层好（4.09 ± 0.02 对 4.07），而训练 loss（最后 100 步均值）也更高"
    "（3.86 对 3.77）：是欠拟合，不是过拟合。预测：把整个学习率计划拉长到 3000 步，两者都更低，"
    "4 层在每个种子上都低于 2 层。如果不是这样，“只是没训够”的解释就不成立。"
    " / At 1500 steps four layers are not better (4.09 ± 0.02 vs 4.07) and their training loss is higher too "
    "(3.86 vs 3.77): underfit, not overfit. Predicted: with the whole schedule stretched to 3000 steps both "
    "improve and four layers beat two on every seed; if not, 'only undertrained' is wrong."
)


def sesoi_reach() -> float:
    """Half the book's division of labour (§1.8.5: layer 1's heads look on average ~1 position further
    than layer 0's, 3.83 vs 2.82 in its head table): fixed from the book, before looking."""
    hp = book_values("head_portrait_1_8_5")
    col = hp["columns"].index("mean_distance")
    layer = {l: statistics.fmean(v[col] for k, v in hp.items() if k.startswith(f"L{l}H")) for l in (0, 1)}
    return (layer[1] - layer[0]) / 2


def deep_run(scale: R.Scale, seed: int) -> Run:
    """§1.18.5 ③: four layers."""
    return Run(f"deep4_s{seed}", scale.cfg(**R.SIZES["small"], n_layer=4, seed=seed), group="deep")


def deep_long_run(scale: R.Scale, n_layer: int, seed: int) -> Run:
    """§1.18.5 ③'s control: two and four layers trained twice as long (the whole schedule
    stretched: warmup, cosine and validations), to test "four layers are only undertrained"."""
    long = replace(scale, steps=2 * scale.steps)
    return Run(f"deep{n_layer}_long_s{seed}", long.cfg(**R.SIZES["small"], n_layer=n_layer, seed=seed), group="deep")


def runs_of_seed(scale: R.Scale, seed: int) -> list:
    return [deep_run(scale, seed), R.baseline(scale, seed)]


def long_runs_of_seed(scale: R.Scale, seed: int) -> list:
    return [deep_long_run(scale, n, seed) for n in (4, 2)]


def one_layer_run(scale: R.Scale, seed: int) -> Run:
    """The chapter's model with one layer (§1.18.4's n_layer row), the same 1500 steps. Its folder is
    runs/statements/, where it was first trained: the same run, never trained twice."""
    return Run(f"stmt_layer1_s{seed}", scale.cfg(**R.SIZES["small"], n_layer=1, seed=seed), group="statements")


def one_layer_seed(scale: R.Scale, seed: int) -> list[Run]:
    """The one-layer model, and the two-layer baseline where its portrait is not committed
    (data/head_portrait.json holds the scale's seeds)."""
    return [one_layer_run(scale, seed)] + ([] if seed in scale.seed_list() else [R.baseline(scale, seed)])


# --------------------------------------------------------------------------- measuring
def _tail(f) -> float:
    return statistics.fmean(r["loss"] for r in f.history.records[-TAIL:])


def _curve(f) -> list:
    return [[s, rnd(v)] for s, v in f.history.val]


def layer_means(heads: list[dict]) -> dict[int, dict]:
    """Each layer's head metrics averaged over its heads."""
    layers = sorted({h["layer"] for h in heads})
    return {l: {k: statistics.fmean(h[k] for h in heads if h["layer"] == l) for k in HEAD_KEYS} for l in layers}


def reach(heads: list[dict]) -> float:
    """How much further the last layer looks than layer 0: mean attention distance, last − first."""
    m = layer_means(heads)
    return m[max(m)]["distance"] - m[0]["distance"]


def _portrait(ctx: Context, f) -> list[dict]:
    from .portrait import analyze_model

    return analyze_model(f.model, f.tok, ctx.text, ablate=False)["heads"]


def _measure_1500(ctx: Context, fs) -> dict:
    deep, base = fs
    heads, heads2 = _portrait(ctx, deep), _portrait(ctx, base)
    return {
        "val_4": final_val(deep),
        "val_2": final_val(base),
        "train_4": _tail(deep),
        "train_2": _tail(base),
        "reach_4": reach(heads),
        "reach_2": reach(heads2),
        "curve_4": _curve(deep),
        "curve_2": _curve(base),
        "heads_4": heads,
    }


def _measure_long(ctx: Context, fs) -> dict:
    deep, base = fs
    heads = _portrait(ctx, deep)
    return {
        "steps": deep.run.cfg.max_steps,
        "val_4": final_val(deep),
        "val_2": final_val(base),
        "train_4": _tail(deep),
        "train_2": _tail(base),
        "best_val_4": min(v for _, v in deep.history.val),  # before any overfitting
        "best_val_2": min(v for _, v in base.history.val),
        "reach_4": reach(heads),
        "curve_4": _curve(deep),
        "curve_2": _curve(base),
        "heads_4": heads,
    }


def measure(ctx: Context) -> Outcome:
    stored = ctx.previous or {}  # measured once: the seeds whose runs are gone keep their committed numbers
    table_prev, long_prev = stored.get("per_seed", {}), stored.get("long_per_seed", {})
    portrait_doc = None  # the two-layer model's division for §1.18.4, where its portraits are committed
    if not ctx.scale.quick:  # the committed numbers are full-size runs; a quick book has none
        try:
            portrait_doc = committed(ctx, "head_portrait.json")
        except NotAvailable:
            portrait_doc = None
    table = seed_table(ctx, lambda s: runs_of_seed(ctx.scale, s), lambda fs: _measure_1500(ctx, fs), table_prev)
    long = seed_table(ctx, lambda s: long_runs_of_seed(ctx.scale, s), lambda fs: _measure_long(ctx, fs), long_prev)
    res = tabulate(table, long, steps=ctx.scale.steps)
    res["one_layer_per_seed"], res["one_layer_pending"] = one_layer_table(ctx, portrait_doc)
    notes = []
    if len(table) < ctx.scale.seeds:
        notes.append(f"{len(table)} of {ctx.scale.seeds} seeds")
    if len(long) < ctx.scale.seeds:
        notes.append(f"加倍训练的对照 {len(long)}/{ctx.scale.seeds} 个种子 / the longer control: {len(long)} seeds")
    status = "done" if len(table) >= ctx.scale.seeds and len(long) >= ctx.scale.seeds else "partial"
    return Outcome(results=res, figures=[ctx.fig("curves.png")], notes=notes, status=status)


# ------------------------------------------------------------------- §1.18.4: one layer
def _poem_portrait(ctx: Context, f) -> list[dict]:
    """§1.8.5's head portrait (3 poems × 24 positions, as data/head_portrait.json)."""
    from ..tools import validation_text
    from .portrait import POEMS, POSITIONS, poem_windows, portrait

    cfg = f.run.cfg
    return portrait(f.model, f.tok, poem_windows(validation_text(ctx.text, cfg), POEMS, min(POSITIONS, cfg.block_size)))


def division(heads: list[dict], prefix: str) -> dict:
    """Layer 0's division of labour: the span of its heads' mean attention distance, and its largest
    previous-token weight."""
    l0 = [h for h in heads if h["layer"] == 0]
    d = [h["distance"] for h in l0]
    return {f"{prefix}_distance_span": rnd(max(d) - min(d)), f"{prefix}_max_prev": rnd(max(h["prev"] for h in l0))}


def two_layer_division(portrait_doc: dict | None) -> dict[str, dict]:
    """{seed: the two-layer baseline's layer-0 division} from the committed head portraits (pure)."""
    out: dict[str, dict] = {}
    for d in [portrait_doc, *portrait_doc.get("other_seeds", [])] if portrait_doc else []:
        seed, heads = (d.get("config") or {}).get("seed"), d.get("heads")
        if seed is not None and heads and f"small_scaled_s{seed}" in str((d.get("source") or {}).get("checkpoint", "")):
            out[str(seed)] = division(heads, "l2")
    return out


def one_layer_table(ctx: Context, portrait_doc: dict | None) -> tuple[dict[str, dict], dict]:
    """({seed: layer 0's division, one layer (l1_) and two (l2_)}, the runs the claim still waits for):
    committed numbers kept, the one-layer runs on disk measured, the two-layer model's where not stored
    from the committed portraits, else from its run on disk."""
    scale = ctx.scale
    prev = (ctx.previous or {}).get("one_layer_per_seed") or {}
    table = {s: dict(row) for s, row in prev.items()}
    ones = seed_table(
        ctx,
        lambda s: [one_layer_run(scale, s)],
        lambda fs: division(_poem_portrait(ctx, fs[0]), "l1"),
        {s: row for s, row in prev.items() if row.get("l1_distance_span") is not None},
    )
    for s, row in ones.items():
        table.setdefault(s, {}).update(row)
    for s, row in two_layer_division(portrait_doc).items():  # where the two-layer numbers are not stored yet
        if table.get(s, {}).get("l2_distance_span") is None:
            table.setdefault(s, {}).update(row)
    for s in ones:
        if table[s].get("l2_distance_span") is None and (f := ctx.find(R.baseline(scale, int(s)))) is not None:
            table[s].update(division(_poem_portrait(ctx, f), "l2"))
    first = R.BOOK_SEED
    row = table.get(str(first)) or {}
    missing = ([] if row.get("l1_distance_span") is not None else [one_layer_run(scale, first)]) + (
        [] if row.get("l2_distance_span") is not None else [R.baseline(scale, first)]
    )
    return {s: table[s] for s in sorted(table, key=int)}, pending(missing)


def judge_one_layer(res: dict) -> list[dict]:
    """§1.18.4: one layer cannot learn the heads' division of labour (pure)."""
    t = res.get("one_layer_per_seed") or {}
    div = paired(t, "l2_distance_span", "l1_distance_span")
    both = [
        row for row in t.values() if row.get("l1_distance_span") is not None and row.get("l2_distance_span") is not None
    ]
    return [
        claim(
            "one_layer_no_head_division",
            "§1.18.4",
            "“n_layer 2：一层学不出‘头的分工’”：一层模型的 4 个头比两层模型第 0 层的头分工更少——各头平均注意力距离的跨度"
            "（最局部到最全局，§1.8.5 描述分工的量）小于两层模型的 / one layer cannot learn the heads' division of labour: "
            "its heads' span of mean attention distance is smaller than the two-layer model's layer 0",
            untrained(
                S.effect(div, direction=+1, sesoi=SESOI_DIVISION), res.get("one_layer_pending"), ONE_LAYER_COMMAND
            ),
            inputs={
                "two_minus_one_layer_span": div,
                "one_layer_span": _col(t, "l1_distance_span"),
                "two_layer_span": [row["l2_distance_span"] for row in both],
                "one_layer_max_prev": _col(t, "l1_max_prev"),
                "sesoi": rnd(SESOI_DIVISION),
            },
            book="一层学不出头的分工",
            expected=f"effect: layer 0's span (max − min over heads of the mean attention distance, 3 poems × 24 positions), "
            f"two layers − one layer, same seed, > 0 (95% CI); smallest effect of interest {SESOI_DIVISION:.3g}, half the "
            "span of the book's layer 0 (1.2–3.92): 'cannot learn' = at least half of the division missing",
        )
    ]


def _why_one_layer(res: dict) -> str:
    t = res.get("one_layer_per_seed") or {}
    show = lambda xs: ", ".join(f"{x:.3g}" for x in xs) or "—"  # noqa: E731
    both = [
        row for row in t.values() if row.get("l1_distance_span") is not None and row.get("l2_distance_span") is not None
    ]
    return (
        f"one layer divides the work too: its heads span {show(_col(t, 'l1_distance_span'))} positions of mean "
        f"distance (two layers' layer 0: {show([row['l2_distance_span'] for row in both])}); "
        f"largest previous-token weight {show(_col(t, 'l1_max_prev'))}"
    )


# ------------------------------------------------------------------------------ the table
def tabulate(table: dict, long: dict, steps: int | None = None) -> dict:
    """The results (pure): both per-seed tables, the per-layer table of the four-layer model and
    the validation curves the figure draws."""
    portraits = [row["heads_4"] for row in table.values() if row.get("heads_4")]
    per_layer = []
    if portraits:
        means = [layer_means(h) for h in portraits]
        per_layer = [
            {"layer": l, **{k: rnd(statistics.fmean(m[l][k] for m in means), 3) for k in HEAD_KEYS}}
            for l in sorted(means[0])
        ]
    long_steps = next((row.get("steps") for row in long.values() if row.get("steps")), None)
    curves = [
        {"n_layer": n, "steps": st, "val": [row[f"curve_{n}"] for row in tab.values() if row.get(f"curve_{n}")]}
        for tab, st in ((table, steps or 1500), (long, long_steps or 2 * (steps or 1500)))
        for n in (2, 4)
        if any(row.get(f"curve_{n}") for row in tab.values())
    ]
    return {
        "headers": ["层 / layer", "熵 / entropy", "对角 / diag", "前一位 / prev", "平均距离 / distance"],
        "rows": [[p["layer"], p["entropy"], p["diag"], p["prev"], p["distance"]] for p in per_layer],
        "per_layer": per_layer,
        "seeds": [int(s) for s in table],
        "long_seeds": [int(s) for s in long],
        "per_seed": table,
        "long_per_seed": long,
        "curves": curves,
        "sesoi_reach": rnd(sesoi_reach(), 4),
    }


# ---------------------------------------------------------------------------------- judge
def _col(t: dict, key: str) -> list[float]:
    return [row[key] for row in t.values() if row.get(key) is not None]


def _diff(t: dict, a: str, b: str) -> list[float]:
    return [row[a] - row[b] for row in t.values() if row.get(a) is not None and row.get(b) is not None]


def _effect(values: list[float], sesoi: float) -> S.Judgement:
    return S.effect(values, direction=+1, sesoi=sesoi)


ANSWER = {S.PASS: "是 / yes", S.FAIL: "否 / no", S.INCONCLUSIVE: "未定 / undecided"}


def _answer(values: list[float], sesoi: float) -> S.Judgement:
    """The chapter's question ③ ("能不能学出更明显的层间分工") answered: REPORTED (a question is never a FAIL
    of the book), the answer read by the effect rule against half the book's own division (``sesoi``)."""
    j = _effect(values, sesoi)
    return S.reported(f"答 / answer: {ANSWER[j.verdict]} — {j.detail}", j.estimate, j.n)


def judge(res: dict) -> list[dict]:
    return _judge_layers(res) + judge_one_layer(res)


def _judge_layers(res: dict) -> list[dict]:
    t, lg = res["per_seed"], res["long_per_seed"]
    sesoi = res.get("sesoi_reach") or sesoi_reach()
    clearer = _diff(t, "reach_4", "reach_2")
    out = [
        claim(
            "deep_better",
            SECTION,
            "“③ 加深：看 4 层的模型能不能学出更明显的层间分工”：4 层的分工（最后一层与第 0 层的平均注意力距离之差）"
            "大于 2 层的（第 1 层减第 0 层），同一种子配对 / four layers show a clearer division of labour than "
            "two: their last-minus-first mean attention distance exceeds the two-layer model's, seed by seed",
            _answer(clearer, sesoi),
            inputs={
                "reach_4_minus_reach_2": clearer,
                "reach_4_layers": _col(t, "reach_4"),
                "reach_2_layers": _col(t, "reach_2"),
                "sesoi": sesoi,
            },
            book="更明显的层间分工",
            kind="question",
            expected=f"问题，作答 / a question, answered: the paired difference > 0 by the effect rule with smallest "
            f"effect of interest {sesoi:.3g} (half the book's own two-layer division, §1.8.5) — yes, no or undecided",
        ),
        claim(
            "layer_division_of_labour",
            SECTION,
            "层间分工（§1.8.5：“第一层的头更局部……第二层的头更全局”）在 4 层中：最后一层比第 0 层看得更远 / "
            "division of labour in four layers: the last layer looks further than the first (1500 steps)",
            _answer(_col(t, "reach_4"), sesoi),
            inputs={"last_minus_first": _col(t, "reach_4"), "sesoi": sesoi},
            book="能不能学出更明显的层间分工（§1.8.5 两层时：浅层更局部，深层更全局）",
            kind="question",
            expected=f"问题，作答 / a question, answered: last − first layer's mean distance > 0 by the effect rule, "
            f"smallest effect of interest {sesoi:.3g} (half the book's two-layer division) — yes, no or undecided",
        ),
    ]
    if lg:
        out.append(
            claim(
                "layer_division_of_labour_long",
                SECTION,
                "同上，训练加倍（整个计划拉长）后：最后一层比第 0 层看得更远 / the same with the schedule "
                "stretched to twice the steps",
                _answer(_col(lg, "reach_4"), sesoi),
                inputs={"last_minus_first_long": _col(lg, "reach_4"), "sesoi": sesoi},
                book="能不能学出更明显的层间分工（§1.8.5 两层时：浅层更局部，深层更全局）",
                kind="question",
                expected=f"问题，作答 / a question, answered (our stretched schedule): last − first > 0 by the effect "
                f"rule, smallest effect of interest {sesoi:.3g} — yes, no or undecided",
            )
        )
    slower = _diff(t, "train_4", "train_2")
    out.append(
        claim(
            "deep_trains_slower",
            "§1.18.4",
            "n_layer 取 2 是因为“三层以上训练变慢且现象一样”：同样 1500 步，4 层的训练 loss（最后 100 步）高于 2 层 / "
            "three or more layers train slower: after the same 1500 steps four layers fit the training set worse",
            _effect(slower, SESOI_LOSS),
            inputs={
                "train_4_minus_train_2": slower,
                "val_4_minus_val_2": _diff(t, "val_4", "val_2"),
                "sesoi_loss": SESOI_LOSS,
            },
            book="三层以上训练变慢",
        )
    )
    if lg:
        both = [s for s in lg if s in t]
        beat = _diff(lg, "val_4", "val_2")
        better4 = [lg[s]["val_4"] - t[s]["val_4"] for s in both]
        better2 = [lg[s]["val_2"] - t[s]["val_2"] for s in both]
        parts = [S.every(beat, -math.inf, 0.0)]
        parts += [S.every(x, -math.inf, 0.0) for x in (better4, better2) if x]
        out.append(
            claim(
                "deep_better_long",
                SECTION,
                "我们的预测（训练前写下）：整个计划拉长到两倍步数后，两者都更低，且 4 层在每个种子上都低于 2 层 / our "
                "prediction: stretched to twice the steps both improve and four layers beat two on every seed",
                S.all_of(
                    parts,
                    f"4 − 2 layers, stretched: {parts[0].detail}"
                    + "".join(f" | stretched − 1500 steps ({w}): {p.detail}" for w, p in zip(("4", "2"), parts[1:])),
                ),
                inputs={
                    "val_4_minus_val_2_long": beat,
                    "val_long_minus_1500_4_layers": better4,
                    "val_long_minus_1500_2_layers": better2,
                    "best_val_4_minus_2_long": _diff(lg, "best_val_4", "best_val_2"),
                    "train_4_minus_train_2_long": _diff(lg, "train_4", "train_2"),
                },
                kind="prediction",
                expected="every seed: stretched 4 < 2, and stretched < 1500 steps for both",
            )
        )
    return out


# ------------------------------------------------------------------------------ the whys
def _why_long(res: dict) -> str:
    t, lg = res["per_seed"], res["long_per_seed"]
    both = [s for s in lg if s in t]
    return (
        "训练前的预测错了（我们的，不是书的）/ our prediction was wrong: 拉长后 4 层减 2 层的最终验证 loss "
        f"{number_list(_diff(lg, 'val_4', 'val_2'), '+.3f')}，不是每个种子都更低；两者都比 1500 步时差（4 层 "
        f"{number_list([lg[s]['val_4'] - t[s]['val_4'] for s in both], '+.3f')}，2 层 "
        f"{number_list([lg[s]['val_2'] - t[s]['val_2'] for s in both], '+.3f')}）：过拟合。4 层在训练集上拟合得更好（训练 loss 差 "
        f"{number_list(_diff(lg, 'train_4', 'train_2'), '+.3f')}），最好的验证 loss 差 {number_list(_diff(lg, 'best_val_4', 'best_val_2'), '+.3f')}："
        "受限于数据，不是步数，“只是没训够”不成立 / stretched, four minus two layers' final val is not below 0 on "
        "every seed, and both end worse than at 1500 steps (overfit); four layers fit the training set better but "
        "do not generalise better: data-limited, not step-limited"
    )


def _why_slower(res: dict) -> str:
    t = res["per_seed"]
    return (
        f"同样步数下 4 层的训练 loss 不比 2 层高：差 {number_list(_diff(t, 'train_4', 'train_2'), '+.3f')} / four layers do not fit "
        "worse after the same steps"
    )


# ------------------------------------------------------------------------------------- figure
def draw(r: dict) -> dict:
    """Validation curves of two and four layers, 1500 steps (dashed) and the stretched schedule (solid)."""
    plt = plot.plt()
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


WHY = {
    "deep_trains_slower": _why_slower,
    "deep_better_long": _why_long,
    "one_layer_no_head_division": _why_one_layer,
}

EXPERIMENT = Experiment(
    "deep",
    "§1.18.5",
    "加深到 4 层 / four layers (§1.18.5 ③)",
    "“看 4 层的模型能不能学出更明显的层间分工” / does a division of labour between layers appear?",
    "attnlab book --only §1.18.5",
    measure=measure,
    judge=judge,
    prediction=PREDICTION_DEEP,
    runs=lambda scale: (
        [r for s in scale.seed_list() for r in runs_of_seed(scale, s) + long_runs_of_seed(scale, s)]
        + [one_layer_run(scale, R.BOOK_SEED)]
    ),  # the one-layer model: the first seed (more through --decide)
    min_runs=lambda scale: [],  # the committed record is judged without any run folder
    why=WHY,
    seed_runs=lambda scale, seed, cid: (
        one_layer_seed(scale, seed)
        if cid == "one_layer_no_head_division"
        else (runs_of_seed(scale, seed) if not cid.endswith("_long") or cid == "deep_better_long" else [])
        + (long_runs_of_seed(scale, seed) if cid.endswith("_long") else [])
    ),
    draw=draw,
)
