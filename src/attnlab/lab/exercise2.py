"""§1.20.2 exercise 2 at three seeds: where does dropping 1/√d start to hurt?

Runs: every d_head of the exercise's grid (plus 112), scaled and unscaled, n_head 1 and
d_model = d_head (the committed one-seed sweep's design), every seed; and a second
variant with d_model fixed at 256 (n_head = 256 / d_head). At d_head 256 both variants
are the case's big pair (shared, never retrained). Measured per seed: the validation
gap unscaled − scaled at each point, the unscaled model's layer-0 logit std at init,
both models' layer-0 weight entropy after training; the first seed's loss curves.

Judged (attnlab.stats): the smallest effect of interest is the book's own "almost no
difference" at d_head 32, 0.17 (§1.2 "几乎没差别（差 0.17）"). A critical dimension
exists inside the grid when the gap at its smallest d_head is equivalent to 0 within
±0.17 and the gap at its largest is beyond noise; the critical d_head is reported with
the bracket the data decide (see :func:`critical`); the direction at fixed d_model is
the paired (same seed) growth of the gap from d_head 32 to 256.

The fixed-d_model variant also answers §1.8's "如果把同一个 d_model 切成 4 个头，每个 d_head=64……
不缩放也不至于立刻崩" (4 heads of 64 at d_model 256): its trained layer-0 entropy against the saturation
line and its gap against the book's "almost no difference" (:func:`judge_four_heads`).
"""

from __future__ import annotations

import statistics

from .. import stats as S
from ..book import book_values
from ..runner import Run
from ..verdicts import claim
from . import plot
from . import runs as R
from .common import column, final_val, paired, rnd, seed_table
from .labbook import Context, Experiment, NotAvailable, Outcome

# the exercise's sequence, and 112 where the committed sweep and the 3-seed gaps put the change
EX2_D_HEADS = (32, 64, 96, 112, 128, 192, 256)
D_HEADS = EX2_D_HEADS
FIXED_D_HEADS = (32, 64, 128, 256)
# fixed from the chapter's words before looking: §1.2 calls the d_head 32 gap of 0.17 "几乎没差别" (almost no
# difference), so a gap (or a growth of the gap) below 0.17 is not "明显变差" (clearly worse) by the book's own scale
SESOI_GAP = book_values("case_loss_1_2_and_1_4")["gap_small"]
VARIANTS = {False: "d_model = d_head", True: "d_model = 256"}
DIAGS = ("logit_std_init_unscaled", "entropy_end_unscaled", "entropy_end_scaled")
# §1.13.1's reading table: "熵 → 0.01 以下，logit_std 几千 → 缩放缺失": below this, attention is saturated
COLLAPSE = 0.01
FOUR_HEADS = "four_heads_d64_no_collapse"  # §1.8: 4 heads of d_head 64 at d_model 256, the fixed variant's d_head 64


def key(name: str, d: int, fixed: bool) -> str:
    """A per-seed column: gap_d128, gap_fixed_d128, entropy_end_unscaled_d128 ..."""
    return f"{name}_{'fixed_' if fixed else ''}d{d}"


def grid(fixed: bool) -> tuple[int, ...]:
    return FIXED_D_HEADS if fixed else D_HEADS


def exercise2_run(scale: R.Scale, d_head: int, scaled: bool, seed: int, fixed_d_model: bool = False) -> Run:
    """Exercise 2: n_head 1 and d_model = d_head (as the committed sweep), or d_model 256 fixed
    and n_head = 256 / d_head. At d_head 256 both are the case's big run (shared, never retrained)."""
    d_model, n_head = (256, 256 // d_head) if fixed_d_model else (d_head, 1)
    if {"d_model": d_model, "n_head": n_head} == R.SIZES["big"]:  # d_head 256 in both variants: the case's big pair
        return R.case_run(scale, "big", scaled, seed)
    tag = "scaled" if scaled else "unscaled"
    return Run(
        f"ex2{'f' if fixed_d_model else ''}_d{d_head}_{tag}_s{seed}",
        scale.cfg(d_model=d_model, n_head=n_head, scaled=scaled, seed=seed),
        group="exercise2",
    )


def pair(scale, d: int, seed: int, fixed: bool) -> list:
    return [exercise2_run(scale, d, sc, seed, fixed) for sc in (False, True)]


def runs_of_seed(scale, seed: int) -> list:
    return [r for fixed in VARIANTS for d in grid(fixed) for r in pair(scale, d, seed, fixed)]


def ex2_runs(scale) -> list:
    return [r for s in scale.seed_list() for r in runs_of_seed(scale, s)]


# ------------------------------------------------------------------------------ measure
def _first_logit_std(f, layer: int = 0) -> float:
    return next(r["layers"][layer]["logit_std"] for r in f.history.records if r.get("layers"))


def _entropy_end(f) -> float:
    """Layer 0's weight entropy at the last step (the trainer's mean over heads)."""
    return f.history.records[-1]["layers"][0]["weight_entropy"]


def _measure_pair(fs, d: int, fixed: bool) -> dict:
    u, s = fs
    vu, vs = final_val(u), final_val(s)
    return {
        key("val_unscaled", d, fixed): rnd(vu),
        key("val_scaled", d, fixed): rnd(vs),
        key("gap", d, fixed): rnd(vu - vs),
        key("logit_std_init_unscaled", d, fixed): rnd(_first_logit_std(u), 3),
        key("entropy_end_unscaled", d, fixed): rnd(_entropy_end(u), 3),
        key("entropy_end_scaled", d, fixed): rnd(_entropy_end(s), 3),
    }


def _stored(prev: dict | None) -> tuple[dict, dict, dict]:
    """(per-seed table, per-point means of seeds without per-seed diagnostics, first-seed curves) of
    the committed results."""
    if not prev:
        return {}, {}, {}
    curves = {
        key("curve", x["d_head"], fixed): x["val_curve"]
        for fixed, pts in ((False, prev.get("summary", [])), (True, prev.get("fixed_summary", [])))
        for x in pts
        if x.get("val_curve")
    }
    return prev.get("per_seed", {}), prev.get("diag_means", {}), curves


def _point_mean(table: dict, means: dict, name: str, d: int, fixed: bool) -> float | None:
    """The mean over seeds of one diagnostic: per-seed values where measured, the committed mean for
    the seeds that only it holds (weighted by its seeds)."""
    k = key(name, d, fixed)
    have = {s: row[k] for s, row in table.items() if row.get(k) is not None}
    missing = {s for s, row in table.items() if row.get(key("gap", d, fixed)) is not None and row.get(k) is None}
    old = means.get(key("point", d, fixed)) or {}
    if missing and old.get(name) is not None and missing <= set(old["seeds"]) and not set(have) & set(old["seeds"]):
        n = len(old["seeds"])
        return rnd((old[name] * n + sum(have.values())) / (n + len(have)), 3)
    return rnd(statistics.fmean(have.values()), 3) if have else old.get(name)


def summarize(ctx_scale, table: dict, means: dict, curves: dict, fixed: bool) -> list[dict]:
    """One point per d_head of a variant (the figure's and the table's numbers)."""
    out = []
    for d in grid(fixed):
        gaps = column(table, key("gap", d, fixed))
        if not gaps:
            continue
        cfg = exercise2_run(ctx_scale, d, False, R.BOOK_SEED, fixed).cfg
        m, sd = S.mean_sd(gaps)
        out.append(
            {
                "d_head": d,
                "d_model": cfg.d_model,
                "n_head": cfg.n_head,
                "gap_mean": rnd(m),
                "gap_sd": rnd(sd) if len(gaps) > 1 else None,
                "gaps": gaps,
                "seeds": [s for s, row in table.items() if row.get(key("gap", d, fixed)) is not None],
                **{k: _point_mean(table, means, k, d, fixed) for k in DIAGS},
                "val_curve": curves.get(key("curve", d, fixed), {"unscaled": [], "scaled": []}),
            }
        )
    return out


def _curves_now(ctx: Context, table: dict) -> dict:
    """The first seed's validation curves of every point whose runs are on disk."""
    out = {}
    for fixed in VARIANTS:
        for d in grid(fixed):
            fs = [ctx.find(r) for r in pair(ctx.scale, d, R.BOOK_SEED, fixed)]
            if all(f is not None for f in fs):
                out[key("curve", d, fixed)] = {
                    tag: [[st, rnd(v)] for st, v in f.history.val] for tag, f in zip(("unscaled", "scaled"), fs)
                }
    return out


def measure(ctx: Context) -> Outcome:
    scale = ctx.scale
    prev_table, means, curves = _stored(ctx.previous)
    table: dict[str, dict] = {}
    for fixed in VARIANTS:
        for d in grid(fixed):
            names = {key(n, d, fixed) for n in ("gap", "val_unscaled", "val_scaled", *DIAGS)}
            point = seed_table(
                ctx,
                lambda s, d=d, fixed=fixed: pair(scale, d, s, fixed),
                lambda fs, d=d, fixed=fixed: _measure_pair(fs, d, fixed),
                {s: {k: v for k, v in row.items() if k in names} for s, row in prev_table.items()},
            )
            for s, row in point.items():
                if row:
                    table.setdefault(s, {}).update(row)
    if not table:
        raise NotAvailable("练习二的训练未运行 / the exercise-2 runs are not run yet")
    table = dict(sorted(table.items()))
    curves = {**curves, **_curves_now(ctx, table)}
    summary = summarize(scale, table, means, curves, False)
    fixed_summary = summarize(scale, table, means, curves, True)

    def complete(fixed):
        return [s for s, row in table.items() if all(row.get(key("gap", d, fixed)) is not None for d in grid(fixed))]

    seeds, fseeds = complete(False), complete(True)
    crit = critical(table, False)

    def row(variant, x):
        lo, hi = S.mean_interval(x["gaps"]) if len(x["gaps"]) > 1 else (None, None)
        return [
            variant,
            x["d_head"],
            f"{x['d_model']}×{x['n_head']}",
            x["gap_mean"],
            x["gap_sd"],
            x["gaps"],
            f"[{lo:+.3f}, {hi:+.3f}]" if lo is not None else "—",
            x["logit_std_init_unscaled"],
            x["entropy_end_unscaled"],
            x["entropy_end_scaled"],
        ]

    collapse = next(
        (x["d_head"] for x in summary if x["entropy_end_unscaled"] is not None and x["entropy_end_unscaled"] < 0.1),
        None,
    )
    res = {
        "headers": [
            "变体 / variant",
            "d_head",
            "d_model×n_head",
            "差距均值 / mean gap",
            "标准差 / sd",
            "各种子 / per seed",
            "95% CI",
            "不缩放初始 logits std / unscaled init",
            "不缩放训练后熵 / unscaled entropy end",
            "缩放训练后熵 / scaled entropy end",
        ],
        "rows": [row(VARIANTS[False], x) for x in summary] + [row(VARIANTS[True], x) for x in fixed_summary],
        "seeds": [int(s) for s in seeds],
        "fixed_seeds": [int(s) for s in fseeds],
        "summary": summary,
        "fixed_summary": fixed_summary,
        "fixed_d_model": {str(x["d_head"]): x["gaps"] for x in fixed_summary},
        "critical_d_head": crit["critical"],
        "collapse_d_head": collapse,
        "sesoi": SESOI_GAP,
        "per_seed": table,
        "diag_means": means,  # the diagnostics of the seeds measured before per-seed ones: means per point
    }
    notes = [
        f"差距超出噪声（效应规则）从 d_head = {crit['critical'] or '—'} 开始，之前已证明“几乎没差别”（±{SESOI_GAP}）的最大 "
        f"d_head 是 {crit['below'] or '—'}；不缩放模型训练后的第 0 层熵跌到 0.1 以下（注意力塌缩）从 d_head = "
        f"{collapse or '—'} 开始 / the gap is beyond noise from d_head {crit['critical'] or '—'}, shown negligible up "
        f"to {crit['below'] or '—'}; the unscaled model's attention collapses (layer-0 entropy < 0.1) from "
        f"{collapse or '—'}"
    ]
    if len(fseeds) < scale.seeds:
        notes.append(
            f"固定 d_model 的变体：{len(fseeds)}/{scale.seeds} 个种子 / the fixed-d_model variant: "
            f"{len(fseeds)} of {scale.seeds} seeds"
        )
    done = len(seeds) >= scale.seeds and len(fseeds) >= scale.seeds
    return Outcome(
        results=res,
        figures=[ctx.fig("gap.png"), ctx.fig("curves.png")],
        notes=notes,
        status="done" if done else "partial",
    )


# -------------------------------------------------------------------------------- judge
def critical(table: dict, fixed: bool) -> dict:
    """Where the gap starts to rise, as far as these seeds decide it: ``critical`` the smallest d_head
    whose gap is beyond noise (effect rule, > 0); ``below`` the largest smaller d_head whose gap is shown
    negligible (equivalence within ±SESOI_GAP); ``undecided`` the d_heads between; ``points`` every
    d_head's two verdicts."""
    points = {}
    for d in grid(fixed):
        gaps = column(table, key("gap", d, fixed))
        if len(gaps) < 2:
            continue
        points[d] = {
            "effect": S.effect(gaps, direction=+1, sesoi=SESOI_GAP),
            "negligible": S.equivalence(gaps, margin=SESOI_GAP),
        }
    crit = next((d for d, p in points.items() if p["effect"].verdict == S.PASS), None)
    below = [d for d, p in points.items() if (crit is None or d < crit) and p["negligible"].verdict == S.PASS]
    lo = max(below) if below else None
    undecided = [d for d in points if (lo is None or d > lo) and (crit is None or d < crit)]
    return {"critical": crit, "below": lo, "undecided": undecided, "points": points}


def _bracket_words(c: dict, fixed: bool) -> str:
    g = grid(fixed)
    if c["critical"] is None:
        return f"{VARIANTS[fixed]}: no d_head of {list(g)} shows a gap beyond noise"
    if c["critical"] == g[0]:
        return f"{VARIANTS[fixed]}: beyond noise already at d_head {g[0]}, so the critical size lies below the grid"
    lo = c["below"] if c["below"] is not None else f"< {g[0]}"
    und = f" ({', '.join(map(str, c['undecided']))} undecided)" if c["undecided"] else ""
    return f"{VARIANTS[fixed]}: critical d_head in ({lo}, {c['critical']}]{und}"


def judge(res: dict) -> list[dict]:
    return _judge_critical(res) + judge_four_heads(res)


def _judge_critical(res: dict) -> list[dict]:
    table = res["per_seed"]
    out = []
    first, last = D_HEADS[0], D_HEADS[-1]
    g_first, g_last = column(table, key("gap", first, False)), column(table, key("gap", last, False))
    if g_first and g_last:
        parts = [S.equivalence(g_first, margin=SESOI_GAP), S.effect(g_last, direction=+1, sesoi=SESOI_GAP)]
        out.append(
            claim(
                "ex2_critical_exists",
                "§1.20.2",
                "“找出这个差值开始明显上升的位置”：存在一个临界维度——网格最小的 d_head 上差距“几乎没差别”"
                f"（±{SESOI_GAP}，书 §1.2 的用语），最大的 d_head 上明显变差 / a critical head size exists inside the "
                f"grid: negligible gap (±{SESOI_GAP}) at d_head {first}, a gap beyond noise at {last}",
                S.all_of(
                    parts,
                    f"d_head {first} equivalent to 0: {parts[0].verdict} ({parts[0].detail}) | d_head {last} > 0: "
                    f"{parts[1].verdict} ({parts[1].detail})",
                ),
                inputs={f"gap_d{first}": g_first, f"gap_d{last}": g_last, "margin_and_sesoi": SESOI_GAP},
                book="差值开始明显上升的位置",
            )
        )
    crits = {fixed: critical(table, fixed) for fixed in VARIANTS}
    if crits[False]["points"]:
        c = crits[False]
        out.append(
            claim(
                "ex2_critical_d_head",
                "§1.20.2",
                "“什么时候会崩”不是一个通用常数，是你这个系统的属性：本系统的临界 d_head（差距超出噪声的最小 "
                "d_head，及已证明几乎没差别的最大 d_head）/ the critical head size of this system, with the bracket "
                "the seeds decide",
                S.reported(
                    "; ".join(_bracket_words(crits[f], f) for f in VARIANTS if crits[f]["points"]),
                    estimate=c["critical"],
                    n=min(p["effect"].n for p in c["points"].values()),
                ),
                inputs={
                    f"{VARIANTS[f]} d_head {d}": f"gap {p['effect'].verdict} (> 0), negligible {p['negligible'].verdict}"
                    for f in VARIANTS
                    for d, p in crits[f]["points"].items()
                },
                book="找出这个差值开始明显上升的位置（“不是一个通用常数”）",
                kind="question",  # the exercise asks "找出这个差值开始明显上升的位置": answered, REPORTED
            )
        )
    if g_last:
        out.append(
            claim(
                "ex2_big_gap",
                "§1.20.2",
                f"d_head={last} 时差距明显 / a clear gap at d_head {last}",
                S.effect(g_last, direction=+1, sesoi=SESOI_GAP),
                inputs={f"gap_d{last}": g_last, "sesoi": SESOI_GAP},
                book="明显",
            )
        )
    growth = paired(table, key("gap", FIXED_D_HEADS[-1], True), key("gap", FIXED_D_HEADS[0], True))
    if growth:
        out.append(
            claim(
                "ex2_direction_fixed_d_model",
                "§1.1 / §1.20.2",
                "“结论的方向（缩放的必要性随维度增长）不会变——那是数学性质”：d_model 固定为 256，只改 d_head，"
                "差距仍随 d_head 增大 / the direction is a mathematical property: with d_model fixed the gap still "
                "grows with d_head",
                S.effect(growth, direction=+1, sesoi=SESOI_GAP),
                inputs={
                    f"gap_d{FIXED_D_HEADS[-1]}_minus_d{FIXED_D_HEADS[0]}_fixed_d_model": growth,
                    "sesoi": SESOI_GAP,
                },
                book="方向不会变",
            )
        )
    return out


def _point(res: dict, d: int) -> dict:
    return next((x for x in res.get("fixed_summary") or [] if x.get("d_head") == d), {})


def judge_four_heads(res: dict) -> list[dict]:
    """§1.8: four heads of d_head 64 at d_model 256 "不至于立刻崩" (pure): every seed's trained layer-0
    entropy (unscaled) above the saturation line, and the gap within the book's "almost no difference"."""
    t = res.get("per_seed") or {}
    gk, ek = key("gap", 64, True), key("entropy_end_unscaled", 64, True)
    gaps = column(t, gk)
    ents = [row[ek] for row in t.values() if row.get(gk) is not None and row.get(ek) is not None]
    point = _point(res, 64)
    mean, n_mean = point.get("entropy_end_unscaled"), len(point.get("seeds", []))
    if gaps and len(ents) == len(gaps):
        j_ent = S.every(ents, COLLAPSE, 1.0)
    elif mean is not None and n_mean and n_mean * mean < COLLAPSE:
        # entropies are >= 0, so no seed exceeds n × the mean: every seed is below the line
        j_ent = S.exact(
            False,
            f"per-seed entropies not stored; their mean {mean:.3g} over {n_mean} seeds bounds every seed by "
            f"{n_mean} × {mean:.3g} = {n_mean * mean:.3g} < {COLLAPSE}",
            mean,
        )
    else:
        j_ent = S.na("per-seed entropies of the unscaled 4-head d_head 64 model not stored (exercise 2 at d_model 256)")
    j_gap = S.equivalence(gaps, SESOI_GAP)
    return [
        claim(
            FOUR_HEADS,
            "§1.8 / §1.8.4",
            "“如果把同一个 d_model 切成 4 个头，每个 d_head=64……不缩放也不至于立刻崩”：d_model 256、4 头不缩放，"
            f"训练后第 0 层熵不低于饱和线 {COLLAPSE}，且与缩放版“几乎没差别”（±{SESOI_GAP}）/ four heads of 64 at "
            "d_model 256 do not collapse unscaled: entropy above the saturation line, gap within the book's 'almost no "
            "difference'",
            S.all_of(
                [j_ent, j_gap], f"entropy: {j_ent.verdict} ({j_ent.detail}) | gap: {j_gap.verdict} ({j_gap.detail})"
            ),
            inputs={
                "gap_unscaled_minus_scaled": gaps,
                "entropy_end_unscaled": ents or f"mean {mean} over {n_mean} seeds (per seed not stored)",
                "gap_d_head_256": column(t, key("gap", 256, True)),
                "logit_std_init_unscaled": point.get("logit_std_init_unscaled"),
                "margin": SESOI_GAP,
            },
            book="不至于立刻崩",
            expected=f"every seed's trained layer-0 entropy (unscaled) ≥ {COLLAPSE} (§1.13.1's saturation line) and "
            f"equivalence: the val gap within ±{SESOI_GAP} (§1.2's 几乎没差别)",
        )
    ]


def _why_four_heads(r: dict) -> str:
    t, p, p256 = r.get("per_seed") or {}, _point(r, 64), _point(r, 256)
    show = lambda xs: ", ".join(f"{x:.3g}" for x in xs) or "—"  # noqa: E731
    curve = (p.get("val_curve") or {}).get("unscaled") or []
    stuck = (
        f"; the first seed's unscaled val loss {curve[0][1]} at step {curve[0][0]} and {curve[4][1]} at step "
        f"{curve[4][0]} (stuck from the start)"
        if len(curve) > 4
        else ""
    )
    return (
        f"书错了 / the book is wrong here: 4 heads of d_head 64 at d_model 256 collapse unscaled — trained entropy "
        f"{p.get('entropy_end_unscaled')} (mean; scaled {p.get('entropy_end_scaled')}), gap "
        f"{show(column(t, key('gap', 64, True)))} vs {show(column(t, key('gap', 256, True)))} for one head of 256{stuck}. "
        f"The initial logit std is {p.get('logit_std_init_unscaled')} (one head of 256: "
        f"{p256.get('logit_std_init_unscaled')}), not the 'about 0.2' of §1.8.4: eq. 1.1 puts d_model, not d_head, in "
        "Var(q), so splitting d_model into heads only divides the std by √(heads) (see the case's claim "
        "four_heads_std_near_0_2)"
    )


# ---------------------------------------------------------------------------- the entry
PREDICTION = (
    "§1.3.1：初始时每个 q 分量的方差 ≈ σ⁴·d_model（σ=0.02），不缩放的 logits 标准差 ≈ 0.0004·d_model·√d_head。"
    "n_head=1、d_model=d_head 时它随 d_head^1.5 增长：32→0.07、64→0.20、96→0.38、128→0.58、192→1.06、256→1.64；"
    "d_model 固定为 256 时只随 √d_head 增长：32→0.58、64→0.82、128→1.16、256→1.64。"
    "预测：(1) d_model=d_head 时 96 以下差距在噪声内，128–192 开始明显（已提交的单种子扫描在 128 跳到 0.54）；"
    "(2) 固定 d_model 时起点都不小，曲线更平但方向相同——d_head 越大差距越大（§1.1：“方向……是数学性质”）；"
    "(3) 差距大的地方，不缩放模型训练后的权重熵也塌得低。"
    " / §1.3.1: at init the unscaled logit std is about 0.0004·d_model·sqrt(d_head). With d_model = d_head it "
    "grows as d_head^1.5 (0.07 at 32 … 1.64 at 256); with d_model fixed at 256 only as sqrt(d_head) (0.58 … 1.64). "
    "Predicted: gaps within noise up to 96 and clear from 128–192; at fixed d_model a flatter curve with the same "
    "direction; where the gap is large the unscaled model's trained entropy has collapsed."
)


def _why_exists(r: dict) -> str:
    t = r["per_seed"]
    a, b = column(t, key("gap", D_HEADS[0], False)), column(t, key("gap", D_HEADS[-1], False))
    return (
        f"网格两端没有给出“先几乎没差别、后明显变差” / the grid does not bracket a rise: gap at d_head {D_HEADS[0]} "
        f"{', '.join(f'{x:+.3f}' for x in a)}, at {D_HEADS[-1]} {', '.join(f'{x:+.3f}' for x in b)} "
        f"(margin and smallest effect {SESOI_GAP})"
    )


def _why_growth(r: dict) -> str:
    t = r["per_seed"]
    g = paired(t, key("gap", FIXED_D_HEADS[-1], True), key("gap", FIXED_D_HEADS[0], True))
    return (
        f"d_model 固定时差距没有随 d_head 明显增大 / at fixed d_model the gap did not grow beyond noise: "
        f"gap(256) − gap(32) per seed {', '.join(f'{x:+.3f}' for x in g)}"
    )


# ------------------------------------------------------------------------------------- figure
def draw(r: dict) -> dict:
    plt = plot.plt()
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


WHY = {
    "ex2_critical_exists": _why_exists,
    "ex2_big_gap": lambda r: (
        f"d_head {D_HEADS[-1]} 的差距没有超出噪声 / the gap at d_head {D_HEADS[-1]} is not beyond noise: "
        + ", ".join(f"{x:+.3f}" for x in column(r["per_seed"], key("gap", D_HEADS[-1], False)))
    ),
    "ex2_direction_fixed_d_model": _why_growth,
    FOUR_HEADS: _why_four_heads,
}

EXPERIMENT = Experiment(
    "exercise2",
    "§1.20.2",
    "练习二：三个种子与固定 d_model / exercise 2 at 3 seeds",
    "“什么时候会崩”不是一个通用常数，是你这个系统的属性 / the critical size is a property of your system",
    "attnlab book --only exercise2",
    measure=measure,
    judge=judge,
    prediction=PREDICTION,
    runs=ex2_runs,
    # measure also works from the committed per-seed gaps alone (runs/ is not kept in git)
    min_runs=lambda scale: [],
    why=WHY,
    order=(1, 20, 2, 0),
    # a further seed (attnlab book --decide) for §1.8's four heads: its pair at d_model 256; the exercise's
    # own claims add none (their grid is trained on the scale's seeds)
    seed_runs=lambda scale, seed, cid: pair(scale, 64, seed, True) if cid == FOUR_HEADS else [],
    draw=draw,
)
