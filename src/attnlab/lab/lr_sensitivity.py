"""Beyond the chapter: when is 1/√d_k needed? The learning-rate map of five attention scalings.

The chapter asks its question at one learning rate (3e-3, "实测这个值收敛最快且不发散", §1.18.4).
Small-scale studies of training instability (Wortsman et al. 2023, "Small-scale proxies for
large-scale Transformer training instabilities") show attention-logit growth and entropy collapse
appearing as the learning rate rises, and QK-layernorm removing them. Here the book's own model
(d_head 32: d_model 128, 4 heads) and the case's big model (d_head 256: d_model 256, 1 head) are
trained for 1500 steps at lr 1e-3 … 1e-1 with five scalings: 1/√d (the book), none, 1/d (muP),
QK-norm with 1/√d, and QK-norm with none. At lr 3e-3 the runs are the case's and the QK-norm
experiment's own.

Per run: the final validation loss, whether it diverged (NaN, or a final loss above the
starting loss), the largest attention logit and the lowest layer-0 weight entropy over
training, and the first step where that entropy fell below 0.01. Per scaling: the LR
sensitivity of Wortsman et al. §3.2, the mean over the grid of min(L(η), L_init) − min_η L(η)
(a diverged or worse-than-start run counts as L_init), per seed.
"""

from __future__ import annotations

import math

from .. import stats as S
from ..config import Config
from ..runner import Run
from ..verdicts import claim
from . import plot
from . import runs as R
from .common import rnd, seed_table
from .labbook import Context, Experiment, Outcome

SIZES = ("small", "big")
D_HEAD = {"small": 32, "big": 256}
# Beyond the chapter (issue 23): learning-rate sensitivity of four attention scalings. The chapter's
# own point is lr 3e-3 ("实测这个值收敛最快", §1.18.4); the grid spans it by half-decades.
LR_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
LR_SCALINGS = {  # name -> Config changes
    "1/sqrt(d)": {},
    "none": {"scaled": False},
    "1/d": {"attn_scale": "1/d"},
    "qk_norm": {"qk_norm": True},
    "qk_norm_none": {"qk_norm": True, "scaled": False},
}
BOOK_LR = 3e-3
SCALINGS = tuple(LR_SCALINGS)
LABEL = {
    "1/sqrt(d)": "1/√d（书）",
    "none": "不缩放 none",
    "1/d": "1/d（muP）",
    "qk_norm": "QK-norm + 1/√d",
    "qk_norm_none": "QK-norm，不缩放",
}
LR_JSON = "data/lab_book/lr_sensitivity.json"
COLLAPSED = 0.01  # layer-0 weight entropy below this = collapsed (the chapter's §1.13.1 alarm)
# fixed before the runs: 0.1 nats is the margin attnlab uses for "几乎没差别 / changes little"
# (the chapter calls its 0.10 difference of bug ④ "不变"); the smallest effect of interest for
# "better / worse" is half of it
MARGIN = 0.1
SESOI = 0.05

PREDICTION = (
    "训练前写下（2026-12-01）/ written before the runs: "
    "① d_head 32：lr ≤ 1e-2 时五种缩放的验证 loss 相差都在 0.1 以内；lr 3e-2、1e-1 时不带 QK-norm 的缩放先变差或发散，"
    "两个 QK-norm 版本离各自最好值不超过 0.2。② d_head 256：不缩放在 lr ≥ 3e-3 时每个都塌缩（层 0 熵 < 0.01），lr 越大塌得越早；"
    "1/√d 只在 lr ≥ 3e-2 时塌缩；1/d 从不塌缩，但 lr ≤ 3e-3 时比 1/√d 差（太平）；QK-norm 不缩放在 d_head 256 仍会塌缩"
    "（§1.7.8 测得其上界约为 d_head），QK-norm + 1/√d 的 LR 敏感度最低。③ 书中的 lr 3e-3 对 1/√d 的小模型离网格中最好的"
    "lr 不到 0.05。 / ① d_head 32: within 0.1 of each other at lr <= 1e-2; at 3e-2 and 1e-1 the scalings without QK-norm "
    "degrade or diverge first, both QK-norm variants stay within 0.2 of their best. ② d_head 256: unscaled collapses "
    "(layer-0 entropy < 0.01) at every lr >= 3e-3, earlier as lr rises; 1/sqrt(d) collapses only at lr >= 3e-2; 1/d never "
    "collapses but is worse than 1/sqrt(d) at lr <= 3e-3 (too flat); QK-norm without scaling still collapses at d_head "
    "256 (its bound is about d_head, §1.7.8); QK-norm with 1/sqrt(d) has the lowest LR sensitivity. ③ The book's lr 3e-3 "
    "is within 0.05 of the grid's best for the book's model."
)


def lr_run(scale: R.Scale, size: str, scaling: str, lr: float, seed: int) -> Run:
    """One point of the learning-rate map. At the book's lr the model is the case's (1/sqrt(d), none)
    or the QK-norm experiment's (qk_norm, qk_norm_none) run: shared, never trained twice."""
    if lr == BOOK_LR and scaling in ("1/sqrt(d)", "none"):
        return R.case_run(scale, size, scaling == "1/sqrt(d)", seed)
    if lr == BOOK_LR and scaling in ("qk_norm", "qk_norm_none"):
        return R.qk_run(scale, size, scaling == "qk_norm", seed)
    slug = {"1/sqrt(d)": "sqrt", "none": "none", "1/d": "inv_d", "qk_norm": "qk", "qk_norm_none": "qk_none"}[scaling]
    cfg = scale.cfg(**R.SIZES[size], **LR_SCALINGS[scaling], lr=lr, seed=seed)
    return Run(f"lr_{size}_{slug}_lr{lr:g}_s{seed}", cfg, group="lr")


def grid(scale) -> tuple[float, ...]:
    return LR_GRID if not scale.quick else (BOOK_LR, 3e-2)


def scalings(scale) -> tuple[str, ...]:
    """Every scaling; --quick (the tests' plumbing check) three of them."""
    return SCALINGS if not scale.quick else ("1/sqrt(d)", "none", "qk_norm")


def key(size: str, scaling: str, lr: float) -> str:
    return f"{size}|{scaling}|{lr:g}"


def runs_of_seed(scale, seed: int) -> list:
    return [lr_run(scale, size, sc, lr, seed) for size in SIZES for sc in scalings(scale) for lr in grid(scale)]


def claim_runs(scale, seed: int, claim_id: str) -> list:
    """The runs of one seed that ``claim_id`` reads (what --decide trains for it), not the whole grid."""

    def curve_runs(size, scaling, lrs=None):
        return [lr_run(scale, size, scaling, lr, seed) for lr in (lrs or grid(scale)) if scaling in scalings(scale)]

    book_lr = [BOOK_LR]
    for size in SIZES:
        d = D_HEAD[size]
        if claim_id == f"lr_qk_norm_lowers_sensitivity_d{d}":
            return curve_runs(size, "1/sqrt(d)") + curve_runs(size, "qk_norm")
        if claim_id == f"lr_qk_norm_replaces_scale_d{d}":
            return curve_runs(size, "qk_norm_none", book_lr) + curve_runs(size, "1/sqrt(d)", book_lr)
    if claim_id == "lr_book_converges_fastest":
        return curve_runs("small", "1/sqrt(d)")
    if claim_id == "lr_scaled_beats_none_d256_every_lr":
        return curve_runs("big", "none") + curve_runs("big", "1/sqrt(d)")
    if claim_id == "lr_unscaled_big_collapses_every_lr":
        return curve_runs("big", "none")
    return runs_of_seed(scale, seed)


def run_numbers(f) -> dict:
    """What the map needs of one finished run (its history only)."""
    h = f.history
    recs = [r for r in h.records if r.get("layers")]
    return numbers(
        [r["loss"] for r in h.records],
        [r["step"] for r in recs],
        [r["layers"][0].get("weight_entropy") for r in recs],
        [max((lay.get("logit_absmax") or 0.0) for lay in r["layers"]) for r in recs],
        h.val[-1][1] if h.val else None,
        h.diverged_at,
    )


def trace_numbers(r: dict) -> dict:
    """The same numbers from a run the case measured (a run record of data/ch1_case.json, its trace).
    The case keeps the largest logit only for its first seed: for the others ``max_logit`` is None."""
    t = r["trace"]
    layers = t.get("layers") or []
    steps = t["step"]
    absmax = [lay.get("logit_absmax") for lay in layers]
    logit = [max(a[i] or 0.0 for a in absmax) for i in range(len(steps))] if layers and all(absmax) else []
    ent = layers[0]["weight_entropy"] if layers else []
    return numbers(t["loss"], steps, ent, logit, r.get("val_loss_end"), r.get("diverged_at"))


def numbers(losses, steps, entropy0, logit_max, final, diverged_at) -> dict:
    """One run's point of the map: its last validation loss, whether it diverged, the largest
    attention logit and the lowest layer-0 entropy over training and the first step below COLLAPSED."""
    start = losses[0] if losses else None
    finite = final is not None and math.isfinite(final)
    ent = [(s, e) for s, e in zip(steps, entropy0) if e is not None and math.isfinite(e)]
    logit = [x for x in logit_max if math.isfinite(x)]
    return {
        "val": final if finite else None,
        "loss_start": start,
        "diverged": diverged_at is not None or not finite or (start is not None and final > start),
        "diverged_at": diverged_at,
        "max_logit": max(logit) if logit else None,
        "min_entropy": min(e for _, e in ent) if ent else None,
        "collapse_step": next((s for s, e in ent if e < COLLAPSED), None),
    }


def stored_cells(ctx: Context, size: str, scaling: str, lr: float, prev: dict) -> dict:
    """``prev`` ({seed: {cell: numbers}}, the committed map) with every point of the book's lr that is a
    case run and holds another training of it than the one the run store keeps (the map was measured
    before one run per (config, seed)) replaced by the case's own measurement of that run; the retraining
    is kept in ``ctx.differences`` (shown as a reproducibility difference, never read)."""
    if ctx.store is None or lr != BOOK_LR or scaling not in ("1/sqrt(d)", "none") or not prev:
        return prev
    from ..runstore import case_records, run_label
    from .common import committed

    name = key(size, scaling, lr)
    out = dict(prev)
    case_runs = None
    for s, row in prev.items():
        run = lr_run(ctx.scale, size, scaling, lr, int(s))
        diff = ctx.store.measured(run.cfg, run_label(run), row[name]["val"], f"{LR_JSON} ({name})")
        if diff is None:
            continue  # the stored run itself
        if case_runs is None:
            case = committed(ctx, "ch1_case.json")
            case_runs = {Config.from_dict(r["config"]).run_key(): r for _, r in case_records(case)}
        r = case_runs.get(run.cfg.run_key())
        if r is None or r["val_loss_end"] != ctx.store.first(run.cfg)["val_loss_end"]:
            continue  # the stored run is not the case's: keep what the map measured, the difference says so
        out[s] = {name: trace_numbers(r)}
        if diff not in ctx.differences:
            ctx.differences.append(diff)
    return out


def measure(ctx: Context) -> Outcome:
    scale = ctx.scale
    table: dict[str, dict] = {}
    for size in SIZES:  # each run joins the map when it is done (a claim may read one point of a curve)
        for sc in scalings(scale):
            for lr in grid(scale):
                name = key(size, sc, lr)
                prev = {
                    s: {name: row[name]}
                    for s, row in ((ctx.previous or {}).get("per_seed") or {}).items()
                    if name in row
                }
                prev = stored_cells(ctx, size, sc, lr, prev)
                part = seed_table(
                    ctx,
                    lambda s, size=size, sc=sc, lr=lr: [lr_run(scale, size, sc, lr, s)],
                    lambda fs, name=name: {name: run_numbers(fs[0])},
                    prev,
                )
                for seed, row in part.items():
                    table.setdefault(seed, {}).update(row)
    table = dict(sorted(table.items()))
    res = {"grid": list(grid(scale)), "scalings": list(scalings(scale)), "d_head": D_HEAD, "per_seed": table}
    res.update(tables(res))
    figs = [ctx.fig("map") + ".png"] if table else []
    notes = [] if table else ["学习率网格未运行 / the learning-rate grid is not run yet"]
    return Outcome(results=res, figures=figs, notes=notes, status="done" if table else "not_run")


# ----------------------------------------------------------------------------- derived numbers
def sensitivity(curve: dict[float, dict]) -> float | None:
    """Wortsman et al. §3.2: mean over the grid of min(L(η), L_init) − min_η L(η); diverged = L_init."""
    if not curve or any(p.get("loss_start") is None for p in curve.values()):
        return None
    init = min(p["loss_start"] for p in curve.values())
    capped = [init if p["diverged"] or p["val"] is None else min(p["val"], init) for p in curve.values()]
    return sum(capped) / len(capped) - min(capped)


def curve(row: dict, size: str, scaling: str, lrs) -> dict[float, dict]:
    return {lr: row[key(size, scaling, lr)] for lr in lrs if key(size, scaling, lr) in row}


def per_seed_sensitivity(res: dict, size: str, scaling: str) -> list[float]:
    out = []
    for row in res["per_seed"].values():
        c = curve(row, size, scaling, res["grid"])
        if len(c) == len(res["grid"]) and (s := sensitivity(c)) is not None:
            out.append(s)
    return out


def tables(res: dict) -> dict:
    """The table of every run (first seed with each run) and the sensitivity per scaling."""
    rows = []
    for seed, row in res["per_seed"].items():
        for size in SIZES:
            for sc in res.get("scalings", SCALINGS):
                for lr in res["grid"]:
                    p = row.get(key(size, sc, lr))
                    if p is None:
                        continue
                    rows.append(
                        [
                            D_HEAD[size],
                            LABEL[sc],
                            f"{lr:g}",
                            int(seed),
                            "发散 / diverged" if p["diverged"] else rnd(p["val"]),
                            rnd(p["max_logit"], 3),
                            rnd(p["min_entropy"], 3),
                            p["collapse_step"] if p["collapse_step"] is not None else "—",
                        ]
                    )
    sens = {
        f"{D_HEAD[size]}|{sc}": [rnd(x) for x in per_seed_sensitivity(res, size, sc)]
        for size in SIZES
        for sc in res.get("scalings", SCALINGS)
    }
    return {
        "headers": [
            "d_head",
            "缩放 / scaling",
            "lr",
            "种子 / seed",
            "验证 loss / val",
            "最大 |logit| / max logit",
            "层 0 最低熵 / min entropy",
            "熵 < 0.01 起 / collapse step",
        ],
        "rows": rows,
        "sensitivity": sens,
    }


def _paired(res: dict, a: str, b: str) -> list[float]:
    """value a − value b seed by seed, for seeds that have both finite (keys from ``key``)."""
    out = []
    for row in res["per_seed"].values():
        pa, pb = row.get(a), row.get(b)
        if pa and pb and pa["val"] is not None and pb["val"] is not None and not pa["diverged"] and not pb["diverged"]:
            out.append(pa["val"] - pb["val"])
    return out


# -------------------------------------------------------------------------------------- judge
def judge(res: dict) -> list[dict]:
    table = res.get("per_seed") or {}
    if not table:
        return []
    lrs = res["grid"]
    out = []
    # §1.18.4: "lr 3e-3：小模型用大学习率；实测这个值收敛最快且不发散" — the book's model at 1500 steps
    others = [lr for lr in lrs if lr != BOOK_LR]
    if BOOK_LR in lrs and others:
        best_other = []
        for row in table.values():
            c = curve(row, "small", "1/sqrt(d)", lrs)
            if len(c) != len(lrs) or c[BOOK_LR]["val"] is None:
                continue
            vals = [c[lr]["val"] for lr in others if c[lr]["val"] is not None and not c[lr]["diverged"]]
            if vals:
                best_other.append(min(vals) - c[BOOK_LR]["val"])
        if best_other:
            out.append(
                claim(
                    "lr_book_converges_fastest",
                    "§1.18.4",
                    "lr 3e-3：“实测这个值收敛最快且不发散” / the book's lr 3e-3 converges fastest: its validation loss "
                    "after 1500 steps is below that of every other lr of the grid (1/√d, d_head 32)",
                    S.effect(best_other, direction=+1, sesoi=SESOI),
                    inputs={"best_other_lr_minus_3e-3": best_other, "sesoi": SESOI},
                    book="3e-3 收敛最快且不发散",
                    expected=f"every other lr's best val − lr 3e-3's > 0 per seed (95% CI); smallest effect of interest "
                    f"{SESOI}: half the 0.1 the chapter calls noise (§1.2 “差距都在 0.1–0.2 之间浮动，量级与训练本身的"
                    "随机性相当”) — “最快” needs a lead a tenth of a nat would not hide",
                )
            )
    # QK-norm lowers LR sensitivity (Wortsman et al.), at both sizes: paired per seed
    for size in SIZES:
        a, b = per_seed_sensitivity(res, size, "1/sqrt(d)"), per_seed_sensitivity(res, size, "qk_norm")
        diffs = [x - y for x, y in zip(a, b)]
        if diffs:
            out.append(
                claim(
                    f"lr_qk_norm_lowers_sensitivity_d{D_HEAD[size]}",
                    "beyond §1.7.8",
                    f"d_head {D_HEAD[size]}：QK-norm 降低学习率敏感度（Wortsman et al. 2023）/ QK-norm lowers LR "
                    "sensitivity: sensitivity(1/√d) − sensitivity(QK-norm + 1/√d) > 0",
                    S.effect(diffs, direction=+1, sesoi=SESOI),
                    inputs={"sens_sqrt_minus_qk": diffs, "sens_sqrt": a, "sens_qk": b, "sesoi": SESOI},
                    kind="prediction",
                )
            )
    # 1/√d beats none at d_head 256 at every lr (the chapter's case, over the whole grid)
    parts, inputs = [], {}
    for lr in lrs:
        d = _paired(res, key("big", "none", lr), key("big", "1/sqrt(d)", lr))
        diverged_none = all(row.get(key("big", "none", lr), {}).get("diverged") for row in table.values())
        if diverged_none:  # unscaled diverged where scaled did not: it lost, and no difference is defined
            parts.append(S.exact(True, f"lr {lr:g}: unscaled diverged"))
            inputs[f"lr{lr:g}"] = "unscaled diverged"
            continue
        if d:
            parts.append(S.effect(d, direction=+1, sesoi=SESOI))
            inputs[f"none_minus_sqrt_lr{lr:g}"] = d
    if parts:
        out.append(
            claim(
                "lr_scaled_beats_none_d256_every_lr",
                "§1.4, beyond",
                "d_head 256：每个学习率下 1/√d 都比不缩放好 / at d_head 256, 1/√d beats no scaling at every lr "
                "(paired val-loss gap none − 1/√d > 0 at each lr)",
                S.all_of(parts),
                inputs=inputs,
                kind="prediction",
            )
        )
    # can QK-norm replace 1/√d? QK-norm without scaling vs the book's 1/√d, at the book's lr, both sizes
    for size in SIZES:
        d = _paired(res, key(size, "qk_norm_none", BOOK_LR), key(size, "1/sqrt(d)", BOOK_LR))
        if d:
            out.append(
                claim(
                    f"lr_qk_norm_replaces_scale_d{D_HEAD[size]}",
                    "§1.7.8, beyond",
                    f"d_head {D_HEAD[size]}：QK-norm 能否代替 1/√d？不缩放 + QK-norm 与 1/√d 的验证 loss 相差在 ±{MARGIN} 之内 / "
                    f"can QK-norm replace 1/√d: unscaled + QK-norm within ±{MARGIN} of 1/√d at lr 3e-3",
                    S.equivalence(d, MARGIN),
                    inputs={"qk_none_minus_sqrt": d, "margin": MARGIN},
                    kind="prediction",
                )
            )
    # our prediction ②: unscaled d_head 256 collapses at every lr >= 3e-3 (each run: layer-0 entropy < 0.01)
    mins = [
        row[key("big", "none", lr)]["min_entropy"]
        for row in table.values()
        for lr in lrs
        if lr >= BOOK_LR and key("big", "none", lr) in row and row[key("big", "none", lr)]["min_entropy"] is not None
    ]
    if mins:
        out.append(
            claim(
                "lr_unscaled_big_collapses_every_lr",
                "§1.4, beyond",
                "d_head 256 不缩放：lr ≥ 3e-3 的每一次运行都塌缩（层 0 熵 < 0.01）/ unscaled d_head 256 collapses at every "
                "lr >= 3e-3",
                S.every(mins, 0.0, COLLAPSED),
                inputs={"min_layer0_entropy": mins},
                kind="prediction",
            )
        )
    out += _written_predictions(res)
    # the sensitivity of each scaling, reported (one number per seed)
    out.append(
        claim(
            "lr_sensitivity_reported",
            "beyond",
            "每种缩放的学习率敏感度（Wortsman et al. §3.2：网格上 min(L, L_init) − min L 的平均）/ LR sensitivity per "
            "scaling",
            S.reported("sensitivity per d_head|scaling, one number per seed"),
            inputs={k: v for k, v in tables(res)["sensitivity"].items() if v},
            kind="beyond",
        )
    )
    return out


def _min_entropies(res: dict, size: str, scaling: str, keep) -> list[float]:
    """The lowest layer-0 entropy of every run of ``size``/``scaling`` whose lr passes ``keep``, all seeds."""
    return [
        row[k]["min_entropy"]
        for row in (res.get("per_seed") or {}).values()
        for lr in res["grid"]
        if keep(lr) and (k := key(size, scaling, lr)) in row and row[k]["min_entropy"] is not None
    ]


# where PREDICTION was written: src/attnlab/lab/lr_sensitivity.py in commit 71c71be (2026-12-01 10:23:44 UTC), unchanged
# since (git log -p); the entry's committed JSON held no run until f9f3cad (2026-12-01 12:05:48 UTC, status not_run
# before). Three of its sentences were scored by no claim; each is one claim of kind prediction here.
WRITTEN = "训练前写下（71c71be，2026-12-01 10:23 UTC；首批数据 f9f3cad，12:05 UTC）/ written before the runs: "


def _written_predictions(res: dict) -> list[dict]:
    table = res.get("per_seed") or {}
    out = []
    # ① "d_head 32：lr ≤ 1e-2 时五种缩放的验证 loss 相差都在 0.1 以内": per seed and lr, the spread of the five
    spreads = []
    for row in table.values():
        for lr in res["grid"]:
            if lr > 1e-2:
                continue
            pts = [row.get(key("small", sc, lr)) for sc in SCALINGS]
            if all(pts):  # a diverged run counts as its starting loss (as the sensitivity does): not within 0.1
                vals = [p["loss_start"] if p["diverged"] or p["val"] is None else p["val"] for p in pts]
                spreads.append(max(vals) - min(vals))
    if spreads:
        out.append(
            claim(
                "lr_pred_d32_scalings_within_0_1",
                "beyond §1.18.4",
                WRITTEN
                + "“① d_head 32：lr ≤ 1e-2 时五种缩放的验证 loss 相差都在 0.1 以内” / at d_head 32 and lr <= 1e-2 "
                f"the five scalings end within {MARGIN} of each other",
                S.every(spreads, 0.0, MARGIN),
                inputs={"spread_of_five_val_losses": spreads, "margin": MARGIN},
                kind="prediction",
                expected=f"each seed and lr <= 1e-2 with all five scalings: max − min of the five val losses <= {MARGIN}",
            )
        )
    # ② "1/√d 只在 lr ≥ 3e-2 时塌缩" (d_head 256): no run below 3e-2 collapses, every run from 3e-2 does
    below = _min_entropies(res, "big", "1/sqrt(d)", lambda lr: lr < 3e-2)
    above = _min_entropies(res, "big", "1/sqrt(d)", lambda lr: lr >= 3e-2)
    if below and above:
        out.append(
            claim(
                "lr_pred_d256_sqrt_collapses_only_from_3e-2",
                "beyond §1.12.1",
                WRITTEN + "“② d_head 256：1/√d 只在 lr ≥ 3e-2 时塌缩” / at d_head 256, 1/√d collapses (layer-0 entropy "
                f"< {COLLAPSED}) only at lr >= 3e-2",
                S.all_of(
                    [S.every(below, COLLAPSED, math.inf), S.every(above, 0.0, COLLAPSED)],
                ),
                inputs={"min_entropy_lr_below_3e-2": below, "min_entropy_lr_from_3e-2": above},
                kind="prediction",
                expected=f"every run at lr < 3e-2 keeps layer-0 entropy >= {COLLAPSED}; every run at lr >= 3e-2 "
                f"falls below it",
            )
        )
    # ② "1/d 从不塌缩" (d_head 256)
    mup = _min_entropies(res, "big", "1/d", lambda lr: True)
    if mup:
        out.append(
            claim(
                "lr_pred_d256_mup_never_collapses",
                "beyond §1.12.1",
                WRITTEN + "“② d_head 256：1/d 从不塌缩” / at d_head 256, 1/d never collapses (layer-0 entropy stays "
                f">= {COLLAPSED} at every lr of the grid)",
                S.every(mup, COLLAPSED, math.inf),
                inputs={"min_entropy_1_over_d": mup},
                kind="prediction",
                expected=f"every 1/d run at d_head 256, every lr: lowest layer-0 entropy >= {COLLAPSED}",
            )
        )
    return out


# ------------------------------------------------------------------------------------- figure
def draw(res: dict) -> dict:
    """Validation loss vs learning rate, one curve per scaling, one panel per d_head; the largest
    attention logit beneath (first seed of each run; diverged points drawn at the top edge)."""
    plt = plot.plt()
    table = res.get("per_seed") or {}
    if not table:
        return {}
    first = next(iter(table.values()))
    lrs = res["grid"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
    for j, size in enumerate(SIZES):
        top, bottom = axes[0][j], axes[1][j]
        for sc in res.get("scalings", SCALINGS):
            pts = [(lr, first.get(key(size, sc, lr))) for lr in lrs]
            pts = [(lr, p) for lr, p in pts if p]
            if not pts:
                continue
            ys = [p["val"] if not p["diverged"] and p["val"] is not None else float("nan") for _, p in pts]
            colour = f"C{SCALINGS.index(sc) % 10}"  # one colour per scaling in both panels (the legend is in one)
            (line,) = top.plot([lr for lr, _ in pts], ys, marker="o", label=LABEL[sc], color=colour)
            bad = [lr for lr, p in pts if p["diverged"]]
            if bad:
                top.plot(bad, [top.get_ylim()[1]] * len(bad), "x", color=line.get_color(), markersize=9)
            bottom.plot(
                [lr for lr, _ in pts],
                [p["max_logit"] or float("nan") for _, p in pts],
                marker="o",
                color=line.get_color(),
            )
        top.set_title(f"d_head {D_HEAD[size]}")
        top.set_ylabel("验证 loss / val loss")
        bottom.set_ylabel("最大 |logit| / max attention logit")
        bottom.set_yscale("log")
        bottom.set_xlabel("学习率 / learning rate")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.grid(alpha=0.3)
            ax.axvline(BOOK_LR, color="0.6", linestyle=":", linewidth=1)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("学习率敏感度：五种注意力缩放（× = 发散）/ LR sensitivity of five attention scalings (× = diverged)")
    fig.tight_layout()
    return {"map.png": fig}


def _gaps_text(res: dict) -> str:
    """none − 1/√d at d_head 256 per lr (mean over seeds), the numbers a FAIL of the every-lr claim rests on."""
    parts = []
    for lr in res.get("grid", []):
        d = _paired(res, key("big", "none", lr), key("big", "1/sqrt(d)", lr))
        parts.append(f"lr {lr:g}: {sum(d) / len(d):+.3f}" if d else f"lr {lr:g}: —")
    return ", ".join(parts)


def _sens_text(res: dict, size: str) -> str:
    a, b = per_seed_sensitivity(res, size, "1/sqrt(d)"), per_seed_sensitivity(res, size, "qk_norm")
    fmt = lambda xs: ", ".join(f"{x:.3f}" for x in xs) or "—"  # noqa: E731
    return f"1/√d {fmt(a)} vs QK-norm + 1/√d {fmt(b)}"


def _replace_text(res: dict, size: str) -> str:
    d = _paired(res, key(size, "qk_norm_none", BOOK_LR), key(size, "1/sqrt(d)", BOOK_LR))
    return ", ".join(f"{x:+.3f}" for x in d) or "—"


WHY = {
    "lr_pred_d32_scalings_within_0_1": lambda r: (
        "lr ≤ 1e-2 时五种缩放并不都在 0.1 以内（我们的预测错了）：每个种子、每个 lr 的极差 / not within 0.1 (our "
        "prediction was wrong): spread per seed and lr "
        + ", ".join(
            f"{x:.3f}"
            for x in next(c for c in judge(r) if c["id"] == "lr_pred_d32_scalings_within_0_1")["inputs"][
                "spread_of_five_val_losses"
            ]
        )
    ),
    "lr_pred_d256_sqrt_collapses_only_from_3e-2": lambda r: (
        "1/√d 在 lr 3e-2 之前就塌缩了（我们的预测错了）：lr < 3e-2 各次运行层 0 最低熵 / 1/sqrt(d) collapsed below "
        "lr 3e-2 (our prediction was wrong): lowest layer-0 entropy at lr < 3e-2 "
        + ", ".join(f"{x:.3g}" for x in _min_entropies(r, "big", "1/sqrt(d)", lambda lr: lr < 3e-2))
    ),
    "lr_pred_d256_mup_never_collapses": lambda r: (
        "1/d 也塌缩了（我们的预测错了）：各 lr 层 0 最低熵 / 1/d collapsed too (our prediction was wrong): lowest "
        "layer-0 entropy per lr " + ", ".join(f"{x:.3g}" for x in _min_entropies(r, "big", "1/d", lambda lr: True))
    ),
    "lr_book_converges_fastest": lambda r: (
        "网格中另有学习率在 1500 步后验证 loss 更低 / another lr of the grid ends lower"
    ),
    "lr_unscaled_big_collapses_every_lr": lambda r: (
        "至少一次 lr ≥ 3e-3 的不缩放运行没有塌缩（我们的预测错了）/ "
        "an unscaled run at lr >= 3e-3 did not collapse: our prediction was wrong"
    ),
    "lr_scaled_beats_none_d256_every_lr": lambda r: (
        "不是每个学习率下不缩放都更差（我们的预测错了）；验证 loss 差 不缩放 − 1/√d / not at every lr is no scaling "
        f"worse (our prediction was wrong); val-loss gap none − 1/√d: {_gaps_text(r)}"
    ),
    **{
        f"lr_qk_norm_lowers_sensitivity_d{D_HEAD[size]}": (
            lambda r, size=size: (
                "QK-norm 没有降低学习率敏感度（我们的预测错了）/ QK-norm did not lower the LR "
                f"sensitivity (our prediction was wrong): {_sens_text(r, size)}"
            )
        )
        for size in SIZES
    },
    **{
        f"lr_qk_norm_replaces_scale_d{D_HEAD[size]}": (
            lambda r, size=size: (
                f"不缩放 + QK-norm 与 1/√d 的验证 loss 相差超出 ±{MARGIN}（lr 3e-3）/ unscaled + QK-norm "
                f"is not within ±{MARGIN} of 1/√d at lr 3e-3: {_replace_text(r, size)}"
            )
        )
        for size in SIZES
    },
}

EXPERIMENT = Experiment(
    "lr_sensitivity",
    "§1.18.4 (beyond)",
    "超出本章：什么时候需要 1/√d_k？五种缩放的学习率敏感度 / beyond the chapter: the learning-rate map of five "
    "attention scalings",
    "书中只在一个学习率（3e-3，“实测这个值收敛最快”）上问缩放重不重要；这里在 1e-3 … 1e-1 上对 1/√d、不缩放、1/d、"
    "QK-norm + 1/√d、QK-norm 不缩放各训一次，d_head 32 与 256 / the chapter asks at one learning rate; here the whole "
    "grid, five scalings, two head sizes",
    "attnlab book --only lr_sensitivity",
    measure=measure,
    judge=judge,
    runs=lambda scale: runs_of_seed(scale, R.BOOK_SEED),
    min_runs=lambda scale: [],
    order=(1, 18, 4, 1),
    prediction=PREDICTION,
    why=WHY,
    seed_runs=claim_runs,
    draw=draw,
)
