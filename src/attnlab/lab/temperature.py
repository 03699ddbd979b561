"""§1.6.3 exercise ⑬: a learnable temperature in place of the fixed sqrt(d_k).

Runs: the case's unscaled big model (d_head 256) with a learnable temperature per head (1 at
init), every seed. Measured per seed: the final validation loss, the temperature each layer
learned, layer entropy and logit std at the end; beside them the same seed's unscaled and scaled
big models of the case (data/ch1_case.json). Judged: the direction the temperature is pushed
(every layer, effect on log temperature) and whether it rescues the unscaled model (paired
effect against the same seed's scaled model).
"""

from __future__ import annotations

import math
import statistics

from .. import stats as S
from ..book import book_values
from ..runner import Run
from ..verdicts import claim
from . import runs as R
from .common import committed, final_val, rnd, seed_table
from .labbook import Context, Experiment, NotAvailable, Outcome
from .runs import member_runs as case_runs

# the chapter's own step towards saturation: doubling d_head multiplies the logit std by sqrt(2),
# "离饱和更近一步" (§1.20.1); a temperature moved by less than that factor is not "pushed" anywhere
SESOI_LOG_TEMP = math.log(math.sqrt(2))


NOT_RUN = "未运行：没有完成的运行，也没有提交的数字 / not run yet: no finished run and no committed numbers (attnlab book --only §1.6.3)"


def temperature_run(scale: R.Scale, seed: int) -> Run:
    """Exercise ⑬: the unscaled big model with a learnable temperature per head (1 at init)."""
    return Run(
        f"temp_big_unscaled_s{seed}",
        scale.cfg(**R.SIZES["big"], scaled=False, learn_temp=True, seed=seed),
        group="temperature",
    )


def _measure(fs: list) -> dict:
    (f,) = fs
    inv = [float(b.attn.log_inv_temp.detach().exp().mean()) for b in f.model.blocks]
    last = next(r["layers"] for r in reversed(f.history.records) if r.get("layers"))
    return {
        "val_loss": final_val(f),
        "temperature_per_layer": [1 / x for x in inv],
        "entropy_end": [layer["weight_entropy"] for layer in last],
        "logit_std_end": [layer["logit_std"] for layer in last],
    }


def _case_by_seed(ctx: Context) -> dict[str, dict]:
    """The case's big models' final validation loss per seed (unscaled, scaled)."""
    try:
        res = committed(ctx, "ch1_case.json")
    except NotAvailable:
        return {}
    return {
        str(u["config"]["seed"]): {"case_val_big_unscaled": u["val_loss_end"], "case_val_big_scaled": s["val_loss_end"]}
        for u, s in zip(case_runs(res, "big_unscaled"), case_runs(res, "big_scaled"))
    }


def measure(ctx: Context) -> Outcome:
    stored = (ctx.previous or {}).get("per_seed", {})
    table = seed_table(ctx, lambda s: [temperature_run(ctx.scale, s)], _measure, stored)
    if not table:
        raise NotAvailable(NOT_RUN)
    case = _case_by_seed(ctx)
    table = {s: {**row, **case.get(s, {})} for s, row in table.items()}
    res = {
        "headers": ["种子 / seed", "验证 / val", "学到的温度 / learned temperature", "熵 / entropy end"],
        "rows": [
            [
                int(s),
                rnd(r["val_loss"]),
                [rnd(t, 3) for t in r["temperature_per_layer"]],
                [rnd(e, 3) for e in r["entropy_end"]],
            ]
            for s, r in table.items()
        ],
        "seeds": [int(s) for s in table],
        "per_seed": table,
        "d_head": temperature_run(ctx.scale, ctx.scale.seed_list()[0]).cfg.d_head,
        "book_big_gap": book_values("case_loss_1_2_and_1_4")["gap_big"],
    }
    notes = [] if len(table) >= ctx.scale.seeds else [f"{len(table)} of {ctx.scale.seeds} seeds"]
    if not case:
        notes.append("data/ch1_case.json 不在：缩放的对照缺失 / the case's scaled model is absent")
    return Outcome(results=res, notes=notes, status="done" if len(table) >= ctx.scale.seeds else "partial")


# ------------------------------------------------------------------------------- judge
def _layers(table: dict) -> int:
    return min((len(r["temperature_per_layer"]) for r in table.values()), default=0)


def _log_temps(table: dict, layer: int) -> list[float]:
    return [math.log(r["temperature_per_layer"][layer]) for r in table.values()]


def _rescue(table: dict) -> dict[str, list[float]]:
    """Per seed: learned temperature − scaled, and the share of the unscaled−scaled gap it closed."""
    rows = [r for r in table.values() if r.get("case_val_big_scaled") is not None]
    return {
        "temp_minus_scaled": [r["val_loss"] - r["case_val_big_scaled"] for r in rows],
        "gap_closed_fraction": [
            (r["case_val_big_unscaled"] - r["val_loss"]) / (r["case_val_big_unscaled"] - r["case_val_big_scaled"])
            for r in rows
        ],
    }


def judge(res: dict) -> list[dict]:
    table = res.get("per_seed") or {}
    if not table:
        return []
    parts = [S.effect(_log_temps(table, i), direction=-1, sesoi=SESOI_LOG_TEMP) for i in range(_layers(table))]
    out = [
        claim(
            "temp_goes_down",
            "§1.6.3 ⑬",
            "可学温度“会往坏的方向走”，“一路被推到饱和”：每一层学到的温度都被推得小于 1（更尖；起点 1），"
            "对数温度 < 0 / a free temperature 'goes the wrong way', 'pushed all the way to saturation': every "
            "layer's learned temperature below its starting 1 (log temperature < 0)",
            S.all_of(parts, " | ".join(f"layer {i}: {p.verdict} ({p.detail})" for i, p in enumerate(parts))),
            inputs={
                **{
                    f"temperature_layer{i}": [r["temperature_per_layer"][i] for r in table.values()]
                    for i in range(_layers(table))
                },
                "sesoi_log_temperature": SESOI_LOG_TEMP,
            },
            book="会往坏的方向走",
        )
    ]
    rescue = _rescue(table)
    # "does not rescue": still worse than the scaled model by at least half the gap the book reports
    # at d_head 256 (0.95, §1.4); a model that closed more than half of it would be rescued
    sesoi = res["book_big_gap"] / 2
    out.append(
        claim(
            "temp_does_not_rescue",
            "§1.6.3 ⑬",
            "可学温度救不回不缩放的大模型：同一种子下仍比缩放的模型差（至少书中差距 0.95 的一半）/ a learnable "
            "temperature does not rescue the unscaled big model: still worse than the same seed's scaled model",
            S.effect(rescue["temp_minus_scaled"], direction=+1, sesoi=sesoi)
            if rescue["temp_minus_scaled"]
            else S.na("number not stored: the case's scaled big model per seed; measured by attnlab case"),
            inputs={**rescue, "sesoi": sesoi},
            book="救不回 / not rescued",
        )
    )
    return out


# ------------------------------------------------------------------- the why of each FAIL
def _why_down(r: dict) -> str:
    t = r.get("per_seed") or {}
    temps = [x for row in t.values() for x in row["temperature_per_layer"]]
    up = sum(x > 1 for x in temps)
    ent0 = [row["entropy_end"][0] for row in t.values()]
    vals = [row["val_loss"] for row in t.values()]
    need = math.sqrt(r["d_head"])
    return (
        f"书的问题 / finding about the book: {len(t)} 个种子、共 {len(temps)} 个学到的温度中有 {up} 个大于 1"
        f"（{min(temps):.2f}–{max(temps):.2f}）：优化器把注意力往“更平”推，书中“往坏的方向走”没有复现；但幅度远远不够"
        f"（要抵消需要 √{r['d_head']} = {need:.0f}），第 0 层的熵仍停在 {min(ent0):.2g}–{max(ent0):.2g}，验证 loss "
        f"{min(vals):.3f}–{max(vals):.3f}，救不回（见 temp_does_not_rescue）/ {up} of {len(temps)} learned "
        f"temperatures rose above 1 ({min(temps):.2f}–{max(temps):.2f}): the optimizer pushes towards flatter "
        f"attention, not the book's 'wrong way'; but far too little ({need:.0f} = √{r['d_head']} would be needed), "
        f"so layer-0 entropy stays at {min(ent0):.2g}–{max(ent0):.2g} and nothing is rescued"
    )


def _why_rescue(r: dict) -> str:
    x = _rescue(r.get("per_seed") or {})
    share = statistics.fmean(x["gap_closed_fraction"]) if x["gap_closed_fraction"] else float("nan")
    return (
        f"可学温度平均收回了不缩放与缩放之间差距的 {share:.0%}（每个种子 "
        + "、".join(f"{v:.2f}" for v in x["gap_closed_fraction"])
        + f"）：它救回来了，书中的说法在这里不成立 / the learned temperature closed {share:.0%} of the "
        "unscaled−scaled gap: it rescued the model, against the book"
    )


WHY = {"temp_goes_down": _why_down, "temp_does_not_rescue": _why_rescue}

EXPERIMENT = Experiment(
    "temperature",
    "§1.6.3",
    "停下来想一想⑬：可学的温度 / exercise ⑬: a learnable temperature",
    "为什么温度设成 √d_k 而不是学出来？可学温度“没有该是多少的信号，而且会往坏的方向走”，一路被推到饱和 / "
    "a free temperature is pushed to saturation",
    "attnlab book --only §1.6.3",
    measure=measure,
    judge=judge,
    why=WHY,
    runs=lambda scale: [temperature_run(scale, s) for s in scale.seed_list()],
    min_runs=lambda scale: [],  # measure reads the committed numbers when no run is on disk
)
