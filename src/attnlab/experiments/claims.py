"""The chapter's qualitative statements as checks over the case results.

Each claim quotes its section, says what it measures and the range the book's
own words allow. The book is explicit that directions transfer and values do
not (§1.1), so ranges are about direction and order of magnitude; they were
written from the text, not fitted to any run. A failing claim is a finding.
"""
from __future__ import annotations

import math
from typing import Any

LN_VOCAB = math.log(1200)


def _claim(cid: str, section: str, statement: str, measured: Any, expected: str, ok: bool) -> dict:
    return {"id": cid, "section": section, "statement": statement, "measured": measured,
            "expected": expected, "pass": bool(ok)}


def _series(pair: dict, key: str, layer: int = 0) -> list[float]:
    return pair["trace"]["layers"][layer][key]


def _at(pair: dict, key: str, step: int, layer: int = 0) -> float:
    steps = pair["trace"]["step"]
    i = min(range(len(steps)), key=lambda j: abs(steps[j] - step))
    return pair["trace"]["layers"][layer][key][i] if key != "loss" else pair["trace"]["loss"][i]


def _smoothed_loss_at(pair: dict, step: int, window: int = 25) -> float:
    losses = pair["trace"]["loss"]
    lo, hi = max(0, step - window), min(len(losses), step + window + 1)
    return sum(losses[lo:hi]) / (hi - lo)


def _r(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def check_claims(res: dict) -> list[dict]:
    P = res["pairs"]
    su, ss, bu, bs = P["small_unscaled"], P["small_scaled"], P["big_unscaled"], P["big_scaled"]
    steps = su["steps"]
    gap_small = su["val_loss_end"] - ss["val_loss_end"]
    gap_big = bu["val_loss_end"] - bs["val_loss_end"]
    seed_gaps = [r["gap"] for r in res["seeds"]["runs"]]
    mean_small = sum(seed_gaps) / len(seed_gaps)
    early = min(300, steps)            # "the first few hundred steps"
    out: list[dict] = []
    add = out.append

    # §1.2 ---------------------------------------------------------------------
    add(_claim("start_near_ln_vocab", "§1.19.2",
               "四条曲线的起点接近随机猜测 ln 1200 ≈ 7.09 / all four runs start near ln V",
               [_r(p["loss_start"]) for p in (su, ss, bu, bs)], "each within 0.15 of 7.09",
               all(abs(p["loss_start"] - LN_VOCAB) < 0.15 for p in (su, ss, bu, bs))))
    add(_claim("same_start_within_pair", "§1.1",
               "同一种子下两条曲线在 step 0 几乎一致 / same seed: scaled and unscaled start together",
               [_r(su["loss_start"] - ss["loss_start"]), _r(bu["loss_start"] - bs["loss_start"])],
               "|Δ loss at step 0| < 0.05",
               abs(su["loss_start"] - ss["loss_start"]) < 0.05 and abs(bu["loss_start"] - bs["loss_start"]) < 0.05))
    add(_claim("small_gap_small", "§1.2",
               "d_head=32 时去掉缩放几乎没差别 / at d_head 32 removing the scale changes little",
               _r(gap_small), "0 ≤ gap ≤ 0.3 (book 0.17, 'as large as training noise')",
               -0.05 <= gap_small <= 0.3))
    add(_claim("small_gap_over_seeds", "§1.2 / §1.19.2",
               "换三个种子，小模型差距都在 0.1–0.2 左右 / over seeds the small gap stays small",
               [_r(g) for g in seed_gaps], "every seed's gap within [-0.05, 0.3] (book 0.1–0.2)",
               all(-0.05 <= g <= 0.3 for g in seed_gaps)))
    # §1.3 ---------------------------------------------------------------------
    sweep = res["init_sweep"]
    d = [r["d_head"] for r in sweep]
    std_u = [r["logit_std_unscaled"] for r in sweep]
    slope = (math.log(std_u[-1]) - math.log(std_u[0])) / (math.log(d[-1]) - math.log(d[0]))
    ratios = [r["ratio_unscaled_to_theory"] for r in sweep]
    add(_claim("init_std_below_theory", "§1.3",
               "实测 logits 标准差远小于理论 √d_head / measured init logit std is far below sqrt(d_head)",
               [_r(x, 3) for x in ratios], "measured / theory < 0.5 for every d_head (book 0.012–0.206)",
               all(x < 0.5 for x in ratios)))
    add(_claim("init_std_grows_like_sqrt", "§1.3",
               "实测与理论在双对数坐标下斜率相同，只差一个常数 / measured grows like sqrt(d_head), "
               "differing by a constant factor",
               _r(slope, 3), "log-log slope 0.5 ± 0.15",
               abs(slope - 0.5) <= 0.15))
    f512 = sweep[-1]
    add(_claim("variance_formula", "§1.3.1",
               "式 1.1/1.2：std ≈ d_model σ² √d_head，d=512 时预测 4.64 / the variance formula predicts the scale",
               {"d_head": [r["d_head"] for r in sweep],
                "formula": [_r(r["formula_logit_std"], 3) for r in sweep],
                "measured": [_r(r["logit_std_unscaled"], 3) for r in sweep]},
               "formula within 15% of measured at d_head 512 (book: 4.64 vs 4.666)",
               abs(f512["formula_logit_std"] / f512["logit_std_unscaled"] - 1) < 0.15))
    ent = [r["entropy_unscaled"] for r in sweep]
    add(_claim("init_entropy_falls_with_d", "§1.3",
               "初始化时权重熵随 d_head 增大而下降 / init weight entropy falls as d_head grows",
               [_r(x, 3) for x in ent], "decreasing; > 0.98 at 32; < 0.6 at 512 (book 0.999 → 0.272)",
               all(a > b for a, b in zip(ent, ent[1:])) and ent[0] > 0.98 and ent[-1] < 0.6))
    # §1.4 / §1.12 ----------------------------------------------------------------
    add(_claim("big_gap_large", "§1.4",
               "d_head=256 时去掉缩放明显变差 / at d_head 256 removing the scale hurts clearly",
               _r(gap_big), "gap ≥ 0.3 (book 0.95)", gap_big >= 0.3))
    ratio = gap_big / max(mean_small, 0.02)
    add(_claim("big_gap_several_times_small", "§1.4",
               "差距放大了好几倍 / the big gap is several times the small one",
               _r(ratio, 3), "≥ 2.5 (book 5.6)", ratio >= 2.5))
    ent_bu = _series(bu, "weight_entropy")
    first = next((i for i, e in enumerate(ent_bu) if e < 0.01), None)
    stays = first is not None and max(ent_bu[first:]) < 0.05
    add(_claim("big_unscaled_entropy_collapses", "§1.4 / §1.12.2①",
               "不缩放的大模型权重熵在最初几百步内跌破 0.01 且不再恢复 / unscaled big entropy falls "
               "below 0.01 within a few hundred steps and stays there",
               {"first_step_below_0.01": bu["trace"]["step"][first] if first is not None else None,
                "final": _r(ent_bu[-1], 3), "max_after": _r(max(ent_bu[first:]), 3) if first is not None else None},
               f"first step ≤ {early}, max afterwards < 0.05 (book 0.0022 at step 222, 0.0001 at the end)",
               first is not None and bu["trace"]["step"][first] <= early and stays))
    jac_bu = _series(bu, "jacobian_fro")
    drop = jac_bu[0] / max(jac_bu[-1], 1e-30)
    add(_claim("big_unscaled_jacobian_drops", "§1.4 / §1.12.2③",
               "雅可比范数掉几个数量级 / the Jacobian norm of the unscaled big model drops by orders of magnitude",
               {"start": _r(jac_bu[0], 3), "end": _r(jac_bu[-1], 3), "drop": _r(drop, 3)},
               "start/end ≥ 100 (book 0.2975 → 0.00008, ×3700)", drop >= 100))
    jac_bs = _series(bs, "jacobian_fro")
    tail = jac_bs[len(jac_bs) // 5:]
    add(_claim("big_scaled_jacobian_level", "§1.4",
               "缩放那一边雅可比范数始终平稳 / the scaled big model's Jacobian norm stays level",
               {"start": _r(jac_bs[0], 3), "min_after_20%": _r(min(tail), 3), "max_after_20%": _r(max(tail), 3)},
               "after the first 20% of steps, max/min < 2 and min > 0.1 (book 0.29–0.31)",
               max(tail) / min(tail) < 2 and min(tail) > 0.1))
    ent_bs = _series(bs, "weight_entropy")
    tail_e = ent_bs[len(ent_bs) // 5:]
    add(_claim("big_scaled_entropy_middle", "§1.4 / §1.12.2②",
               "缩放那一边熵稳在中间水平，不塌也不回到均匀 / scaled big entropy settles in a middle band",
               {"min_after_20%": _r(min(tail_e), 3), "max_after_20%": _r(max(tail_e), 3)},
               "within [0.3, 0.9] after the first 20% of steps (book 0.57–0.68)",
               min(tail_e) >= 0.3 and max(tail_e) <= 0.9))
    add(_claim("big_scaled_jacobian_rises", "§1.12.2③",
               "缩放那一边雅可比范数从初始化值上升 / the scaled Jacobian norm rises from its init value",
               {"start": _r(jac_bs[0], 3), "end": _r(jac_bs[-1], 3)}, "end > start (book 0.20 → 0.31)",
               jac_bs[-1] > jac_bs[0]))
    add(_claim("big_unscaled_still_learns", "§1.4",
               "不是训不动，而是带着废掉的注意力层硬训：loss 仍在下降 / the loss still falls",
               {"start": _r(bu["loss_start"]), "end": _r(bu["loss_end"])}, "end < start − 1 (book 7.05 → 5.18)",
               bu["loss_end"] < bu["loss_start"] - 1))
    s200 = min(200, steps - 1)
    g200 = _smoothed_loss_at(bu, s200) - _smoothed_loss_at(bs, s200)
    gend = bu["loss_end"] - bs["loss_end"]
    add(_claim("curves_separate_after_200", "§1.2 fig 1.2 / §1.4",
               "大模型两条曲线在约 200 步后明显分离 / the big curves separate after about 200 steps",
               {"gap_at_200": _r(g200, 3), "gap_at_end": _r(gend, 3)}, "gap at end > gap at step 200 + 0.1",
               gend > g200 + 0.1))
    e0u, e0s = ent_bu[0], ent_bs[0]
    add(_claim("init_entropy_already_sharper", "§1.12.3",
               "step 0 时不缩放那边的熵已经更低 / at step 0 the unscaled model's attention is already sharper",
               {"unscaled": _r(e0u, 3), "scaled": _r(e0s, 3)}, "unscaled < scaled − 0.1 (book 0.712 vs 0.9985)",
               e0u < e0s - 0.1))
    # §1.7.6 ------------------------------------------------------------------------
    ls0_small = _series(su, "logit_std")[0]
    ent0_small = _series(su, "weight_entropy")[0]
    add(_claim("small_init_safe_zone", "§1.7.6 / §1.13.1",
               "小模型初始化时 logits 远小于 1、熵接近 1，在安全区 / the small model starts in the safe zone",
               {"logit_std": _r(ls0_small, 3), "entropy": _r(ent0_small, 4)},
               "logit std < 0.5 and entropy > 0.98 (book 0.070 / 0.29 and 0.999)",
               ls0_small < 0.5 and ent0_small > 0.98))
    ls0_big = _series(bu, "logit_std")[0]
    add(_claim("big_init_near_critical", "§1.7.6",
               "大模型初始化时标准差已接近 1（临界）/ the big model starts near the critical scale",
               _r(ls0_big, 3), "between 0.8 and 3 (book 1.615–1.63)", 0.8 <= ls0_big <= 3))
    lsend_big = sum(_series(bu, "logit_std")[-20:]) / 20
    add(_claim("big_unscaled_logits_explode", "§1.7.6 / §1.12.1",
               "训练后不缩放的大模型 logits 标准差冲到几千 / unscaled big logits grow to thousands",
               _r(lsend_big, 4), "> 300 on training batches (book 5477)", lsend_big > 300))
    # §1.7.7 --------------------------------------------------------------------------
    QK = res["qk_scale"]
    grows = {k: (v["after"][0]["q_std"] > v["before"][0]["q_std"] and v["after"][0]["k_std"] > v["before"][0]["k_std"])
             for k, v in QK.items()}
    add(_claim("training_amplifies_qk", "§1.7.7",
               "四种配置里训练都放大了 q、k / training amplifies q and k in all four configurations",
               {k: _r(v["after"][0]["q_std"] / v["before"][0]["q_std"], 3) for k, v in QK.items()},
               "q and k std grow in every configuration (layer 0)", all(grows.values())))
    wgrow = {k: v["after"][0]["W_qkv_fro"] > v["before"][0]["W_qkv_fro"] for k, v in QK.items()}
    add(_claim("w_qkv_grows", "§1.7.7",
               "权重矩阵范数也都在涨 / ||W_qkv|| grows in all four", {k: _r(v["after"][0]["W_qkv_fro"], 4) for k, v in QK.items()},
               "after > before in every configuration (book 4.45 → 11.98 ... 8.89 → 29.23)", all(wgrow.values())))
    bu0, bu1 = QK["big_unscaled"]["before"][0], QK["big_unscaled"]["after"][0]
    bs1 = QK["big_scaled"]["after"][0]
    add(_claim("unscaled_big_logits_vs_scaled", "§1.7.7",
               "同一模型，有无 1/√d 之差：几千对 1 附近 / thousands without the scale, near 1 with it",
               {"unscaled": _r(bu1["logit_std"], 4), "scaled": _r(bs1["logit_std"], 3)},
               "unscaled > 100 × scaled (book 4348 vs 1.8)", bu1["logit_std"] > 100 * bs1["logit_std"]))
    growth = bu1["logit_std"] / bu0["logit_std"]
    qk_growth = (bu1["q_std"] / bu0["q_std"]) * (bu1["k_std"] / bu0["k_std"])
    add(_claim("superlinear_growth", "§1.7.7",
               "logits 的增长超过 q、k 尺度增长之积：q、k 还变得更对齐 / logits grow faster than q·k scale "
               "alone explains (q and k align)",
               {"logit_growth": _r(growth, 4), "q_times_k_growth": _r(qk_growth, 4)},
               "logit growth > q growth × k growth (book 2650 vs 296)", growth > qk_growth))
    near_one = {k: QK[k]["after"][0]["logit_std"] for k in ("small_scaled", "big_scaled")}
    add(_claim("scaled_logit_std_near_one", "§1.7.7",
               "缩放的模型训练后 logits 标准差自发落在 1 附近 / scaled models settle with logit std near 1",
               {k: _r(v, 3) for k, v in near_one.items()},
               "each within [0.3, 5], i.e. the order of 1 (book 3.3 and 1.8)",
               all(0.3 <= v <= 5 for v in near_one.values())))
    return out
