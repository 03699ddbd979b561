"""The lab book's experiments: one entry and one function each, in the chapter's order.

Each ``analyze_*`` takes a :class:`~.labbook.Context` and returns an
:class:`~.labbook.Outcome` (results, claims, figures, notes). Claims are
``book`` (the chapter's statement) or ``sanity`` (a property the measurement
must have to mean anything). Tolerances: where several seeds exist, a
difference counts only beyond two standard deviations of its seed spread; with
one seed the claim says so. Entries that bring in a committed result
(``case``, ``failures``, ``heads``, ``sweep``) read its JSON under data/; the
book does not retrain them (their own commands resume their runs).
"""

from __future__ import annotations

import json
import math
import statistics

import torch

from ..book import book_values
from ..config import POS_KINDS, Config
from ..corpus import REPO_ROOT
from ..tokenizer import CharTokenizer
from ..train import split_data
from . import book_runs as R
from .claims import beyond_noise, big_seed_gaps, ms, small_seed_gaps
from .common import ExperimentError
from .labbook import Context, Experiment, NotAvailable, Outcome, claim


# ----------------------------------------------------------------------------- helpers
def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None or not math.isfinite(x) else float(f"{x:.{digits}g}")


def _val(f) -> float | None:
    val = f.history.val
    return val[-1][1] if val else None


def _mean_sd(xs: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else None)


def _committed(ctx: Context, name: str) -> dict:
    """A committed result: <root>/data/<name>, else the repository's data/<name>."""
    for p in (ctx.root / "data" / name, REPO_ROOT / "data" / name):
        if p.is_file():
            return json.loads(p.read_text(encoding="utf-8"))
    raise NotAvailable(f"data/{name} not found: run its command first")


def _seeds_done(ctx: Context, runs_of_seed) -> list[int]:
    return [s for s in ctx.scale.seed_list() if ctx.have(runs_of_seed(s))]


def _first_logit_std(f, layer: int = 0) -> float:
    return next(r["layers"][layer]["logit_std"] for r in f.history.records if r.get("layers"))


def _portrait(ctx: Context, f) -> list[dict]:
    from .heads import analyze_model

    return analyze_model(f.model, f.tok, ctx.text, ablate=False)["heads"]


def _layer0_best(heads: list[dict], key: str) -> float:
    return max(h[key] for h in heads if h["layer"] == 0)


# ====================================================================== §1.2–§1.4 case
def analyze_case(ctx: Context) -> Outcome:
    res = _committed(ctx, "ch1_case.json")
    P = res["pairs"]
    claims = [{**c, "kind": c.get("kind", "book")} for c in res["claims"]]
    figs = [
        f
        for f in ("figures/fig1_2_loss.png", "figures/fig1_3_logit_std.png", "figures/fig1_4_diagnostics.png")
        if (ctx.root / f).is_file() or (REPO_ROOT / f).is_file()
    ]
    book = book_values("case_loss_1_2_and_1_4")
    return Outcome(
        results={
            "table": [
                *[
                    [f"{label}（种子 {R.BOOK_SEED} / seed）", book[key]["end"], _r(P[pair]["val_loss_end"])]
                    for label, key, pair in (
                        ("d_head=32 不缩放 / unscaled 验证 loss", "small_d32_unscaled", "small_unscaled"),
                        ("d_head=32 缩放 / scaled", "small_d32_scaled", "small_scaled"),
                        ("d_head=256 不缩放 / unscaled", "big_d256_unscaled", "big_unscaled"),
                        ("d_head=256 缩放 / scaled", "big_d256_scaled", "big_scaled"),
                    )
                ],
                [
                    "d_head=32 差距，三个种子 / small gap, 3 seeds",
                    f"{book['gap_small']}（三种子 {'–'.join(map(str, book['small_gap_over_3_seeds_range']))}）",
                    ", ".join(f"{g:.3f}" for g in small_seed_gaps(res)),
                ],
                [
                    "d_head=256 差距，三个种子 / big gap, 3 seeds",
                    book["gap_big"],
                    ", ".join(f"{g:.3f}" for g in big_seed_gaps(res)),
                ],
            ],
            "source": "data/ch1_case.json",
        },
        claims=claims,
        figures=figs,
    )


# ========================================================================= §1.7.8 QK-norm
def qk_runs_of_seed(scale, seed):
    return [r for r in R.qk_norm_runs(scale) if r.name.endswith(f"_s{seed}")]


def qk_pair(scale, size: str, seed: int):
    return [r for r in qk_runs_of_seed(scale, seed) if f"_{size}_" in r.name]  # unscaled, scaled


def _qk_gain_rms(model, layer: int = 0) -> float:
    """rms of g_q ⊙ g_k, the QK-norm gains of ``layer`` (1 at init): how far training rescaled the
    normalised q·k."""
    attn = model.blocks[layer].attn
    return _r((attn.q_norm.weight * attn.k_norm.weight).pow(2).mean().sqrt().item(), 4)


def _qk_logit_bound(model, layer: int = 0) -> float:
    """The largest |logit| QK-norm allows in ``layer``: LayerNorm gives every head's q̂ the norm
    sqrt(d_head), so |q·k| <= (max|g_q| sqrt(d) + |b_q|)(max|g_k| sqrt(d) + |b_k|), times
    1/sqrt(d) when scaled."""
    attn, cfg = model.blocks[layer].attn, model.cfg
    root = math.sqrt(cfg.d_head)
    qn, kn = attn.q_norm, attn.k_norm
    b = (qn.weight.abs().max() * root + qn.bias.norm()) * (kn.weight.abs().max() * root + kn.bias.norm())
    return b.item() / (root if cfg.scaled else 1.0)


def analyze_qk_norm(ctx: Context) -> Outcome:
    """Each size's pair stands on its own: a size is analysed over the seeds whose pair finished."""
    seeds = {size: _seeds_done(ctx, lambda s, size=size: qk_pair(ctx.scale, size, s)) for size in ("small", "big")}
    per, gap = {}, {}
    for size in ("small", "big"):
        for i, tag in enumerate(("unscaled", "scaled")):
            fs = [ctx.get(qk_pair(ctx.scale, size, s)[i]) for s in seeds[size]]
            per[f"{size}_{tag}"] = {
                "val": [_val(f) for f in fs],
                "logit_std_init": [_first_logit_std(f) for f in fs],
                "logit_std_end": [f.history.records[-1]["layers"][0]["logit_std"] for f in fs],
                "entropy_end": [f.history.records[-1]["layers"][0]["weight_entropy"] for f in fs],
                # the norms' learned gains and biases bound the logits (_qk_logit_bound)
                "gain_rms_end": [_qk_gain_rms(f.model) for f in fs],
                "logit_absmax_end": [f.history.records[-1]["layers"][0]["logit_absmax"] for f in fs],
                "logit_bound_end": [_qk_logit_bound(f.model) for f in fs],
            }
        gap[size] = [u - s for u, s in zip(per[f"{size}_unscaled"]["val"], per[f"{size}_scaled"]["val"])]
    case = _case_gaps(ctx)
    table = [
        [
            f"d_head={32 if k.startswith('small') else 256} {k.split('_')[1]}",
            len(v["val"]),
            _r(statistics.fmean(v["val"])) if v["val"] else None,
            _r(statistics.fmean(v["logit_std_init"]), 3) if v["val"] else None,
            _r(statistics.fmean(v["logit_std_end"]), 3) if v["val"] else None,
            _r(statistics.fmean(v["entropy_end"]), 3) if v["val"] else None,
            _r(statistics.fmean(v["gain_rms_end"]), 3) if v["val"] else None,
        ]
        for k, v in per.items()
    ]
    res = {
        "headers": [
            "QK-norm 模型 / model",
            "种子 / seeds",
            "验证 loss / val",
            "初始 logits std / init",
            "训练后 logits std / end",
            "训练后熵 / entropy end",
            "层 0 增益 rms(g_q·g_k) / L0 norm gains",
        ],
        "rows": table,
        "seeds": seeds,
        "runs": per,
        "gap": gap,
        "gap_mean": {k: _r(_mean_sd(v)[0]) if v else None for k, v in gap.items()},
        "gap_sd": {k: _r(_mean_sd(v)[1]) if v else None for k, v in gap.items()},
        "without_qk_norm": case,
    }
    claims = []
    for size in ("small", "big"):
        if not seeds[size]:
            continue
        d = ctx.get(qk_pair(ctx.scale, size, seeds[size][0])[0]).model.cfg.d_head
        init = per[f"{size}_unscaled"]["logit_std_init"]
        claims.append(
            claim(
                f"qk_init_std_sqrt_d_{size}",
                "§1.3 / §1.7.8",
                f"QK-norm 使脚注前提成立：不缩放时初始 logits 标准差 ≈ √d_head = {math.sqrt(d):.2f} / "
                f"with q, k normalised the unscaled init logit std is near sqrt(d_head) (d_head {d})",
                [_r(x, 3) for x in init],
                f"within 25% of {math.sqrt(d):.2f}",
                all(abs(x / math.sqrt(d) - 1) < 0.25 for x in init),
                kind="sanity",
            )
        )
        sc = per[f"{size}_scaled"]["logit_std_init"]
        claims.append(
            claim(
                f"qk_scaled_init_std_one_{size}",
                "§1.3 / §1.7.8",
                f"缩放后初始 logits 标准差 ≈ 1，与 d_head 无关 / scaled: init logit std near 1 (d_head {d})",
                [_r(x, 3) for x in sc],
                "within 25% of 1",
                all(abs(x - 1) < 0.25 for x in sc),
                kind="sanity",
            )
        )
    if seeds["small"]:
        gs = gap["small"]
        ms, sds = _mean_sd(gs)
        tol = 2 * sds if sds is not None else 0.05
        claims.append(
            claim(
                "qk_small_gap_appears",
                "§1.7.8",
                "预测：有 QK-norm 时 d_head=32 也会出现明显差距（不缩放的 logits 一开始就 ≈5.7）/ "
                "prediction: with QK-norm the small model's gap becomes clear",
                {
                    "gaps": [_r(g) for g in gs],
                    "mean": _r(ms),
                    "sd": _r(sds),
                    "without_qk_norm": [_r(g) for g in case.get("small", [])],
                },
                f"mean gap > 0.1 and > 2 sd of the seed spread (tol {tol:.3f})"
                + (" — one seed: no spread" if sds is None else ""),
                ms > 0.1 and ms > tol,
            )
        )
    if seeds["big"]:
        mb, sdb = _mean_sd(gap["big"])
        claims.append(
            claim(
                "qk_big_gap_persists",
                "§1.7.8",
                "预测：d_head=256 的差距依然存在（logits 一开始 ≈16，比无 QK-norm 时的 1.6 更大）/ "
                "prediction: the big gap persists",
                {
                    "gaps": [_r(g) for g in gap["big"]],
                    "mean": _r(mb),
                    "sd": _r(sdb),
                    "without_qk_norm": case.get("big"),
                },
                "mean gap > 0.1",
                mb > 0.1,
            )
        )
        claims.append(
            claim(
                "qk_bounds_logits",
                "§1.7.8",
                "“即使权重疯狂增长，logits 也不会失控” / QK-norm keeps the logits bounded: the unscaled big "
                "model no longer reaches thousands",
                {
                    "qk_norm_end": [_r(x, 3) for x in per["big_unscaled"]["logit_std_end"]],
                    "without_qk_norm_end": case.get("big_unscaled_logit_std_end"),
                },
                "logit std at the end < 100 (without QK-norm: thousands)",
                all(x < 100 for x in per["big_unscaled"]["logit_std_end"]),
            )
        )
    if seeds["small"] or seeds["big"]:
        within = {
            k: [[_r(a, 4), _r(b, 4)] for a, b in zip(v["logit_absmax_end"], v["logit_bound_end"])]
            for k, v in per.items()
            if v["val"]
        }
        claims.append(
            claim(
                "qk_logits_within_norm_bound",
                "§1.7.8",
                "QK-norm 给 logits 一个上界：|q·k| ≤ (max|g_q|·√d + |b_q|)(max|g_k|·√d + |b_k|)（缩放时再除以 √d）/ "
                "QK-norm bounds every logit by the norms' gains and biases",
                {"[largest |logit| at the end, bound]": within},
                "largest |logit| of layer 0 at the last step ≤ the bound, every model and seed",
                all(a <= b * (1 + 1e-4) for pairs in within.values() for a, b in pairs),
                kind="sanity",
            )
        )
    figs = [ctx.fig("gaps.png")]
    if seeds["small"] and case.get("small"):
        same = [
            (g, case["small"][ctx.scale.seed_list().index(s)])
            for g, s in zip(gap["small"], seeds["small"])
            if ctx.scale.seed_list().index(s) < len(case["small"])
        ]
        if same:
            res["same_seed_without_qk_norm"] = [[_r(a), _r(b)] for a, b in same]
            spread = max(case["small"]) - min(case["small"])
            decisive = len(seeds["small"]) > 1 and all(a - b > spread for a, b in same)
            res["decisive"] = decisive
            if not decisive:
                res_note = (
                    "同一种子下有/无 QK-norm 的小模型差距 / the small gap with vs without QK-norm, same seed: "
                    + ", ".join(f"{a:.3f} vs {b:.3f}" for a, b in same)
                    + f"；无 QK-norm 时三个种子的差距本身就相差 {spread:.2f}，所以在更多种子完成之前这还不能"
                    f"说明 QK-norm 让差距变大 / without QK-norm the three seeds' gaps already span "
                    f"{spread:.2f}, so this does not yet show that QK-norm widens the gap"
                )
                res.setdefault("notes", []).append(res_note)
    notes = list(res.get("notes", [])) + [
        f"d_head={32 if k == 'small' else 256}: {len(v)} / {ctx.scale.seeds} 个种子完成 / seeds finished"
        for k, v in seeds.items()
        if len(v) < ctx.scale.seeds
    ]
    full = all(len(v) == ctx.scale.seeds for v in seeds.values())
    return Outcome(results=res, claims=claims, figures=figs, notes=notes, status="done" if full else "partial")


PREDICTION_QK = (
    "QK-norm 把每个头的 q、k 归一化成零均值、单位方差（LayerNorm，增益初始为 1），"
    "正好是 §1.3 脚注的前提。于是不缩放时初始 logits 标准差 ≈ √d_head：d_head=32 时约 5.7，d_head=256 时约 16；"
    "缩放后两者都 ≈ 1。预测：(1) 缩放的两个模型都在安全区起步、正常训练；(2) 不缩放的小模型这次也一开始就饱和，"
    "书中“没复现出来”的差距会出现（> 0.1）；(3) 不缩放的大模型依然明显更差，但 logits 被钉住，不会冲到几千；"
    "可学的 LayerNorm 增益可能让不缩放的模型慢慢把温度调回来，所以差距可能比无 QK-norm 时小。"
    " / With q, k normalised to unit variance the footnote's premise holds: unscaled init logit std ≈ sqrt(d_head) "
    "(5.7 at 32, 16 at 256), scaled ≈ 1. Predicted: both scaled models train normally; the unscaled small model now "
    "starts saturated, so the gap the case could not reproduce appears; the big gap persists but the logits stay "
    "bounded; the learnable norm gains may let the unscaled models shrink their logits, narrowing the gap."
)


def _case_gaps(ctx: Context) -> dict:
    try:
        res = _committed(ctx, "ch1_case.json")
    except NotAvailable:
        return {}
    P = res["pairs"]
    ls = P["big_unscaled"]["trace"]["layers"][0]["logit_std"]
    return {
        "small": [r["gap"] for r in res["seeds"]["runs"]],
        "small_mean": _r(res["seeds"]["mean_gap"]),
        "big": [_r(g) for g in big_seed_gaps(res)],  # every seed of the case's big pair
        "big_unscaled_logit_std_end": _r(sum(ls[-20:]) / len(ls[-20:])),
    }


# =================================================================== §1.8.5 heads (committed)
def analyze_heads(ctx: Context) -> Outcome:
    res = _committed(ctx, "head_portrait.json")
    book = res.get("book") or {}
    rows = []
    for h in res["heads"]:
        b = book.get(f"L{h['layer']}H{h['head']}")
        rows.append(
            [
                f"L{h['layer']}·H{h['head']}",
                b[0] if b else None,
                _r(h["entropy"], 3),
                b[1] if b else None,
                _r(h["diag"], 3),
                b[2] if b else None,
                _r(h["prev"], 3),
            ]
        )
    heads = res["heads"]
    claims = list(res.get("claims", []))
    if not claims:
        claims = [
            claim(
                "prev_head_exists",
                "§1.8.5",
                "层 0 有一个“看前一位”的头（书中 L0·H1 prev 0.45）/ layer 0 has a previous-token head",
                _r(_layer0_best(heads, "prev"), 3),
                "max prev over layer-0 heads > 0.3",
                _layer0_best(heads, "prev") > 0.3,
            ),
            claim(
                "self_head_exists",
                "§1.8.5",
                "层 0 有一个主要看自己的头（书中 L0·H0 对角 0.77）/ layer 0 has a self-attending head",
                _r(_layer0_best(heads, "diag"), 3),
                "max diag over layer-0 heads > 0.5",
                _layer0_best(heads, "diag") > 0.5,
            ),
            claim(
                "heads_not_uniform",
                "§1.8.5",
                "头都比均匀分布更集中 / every head is sharper than uniform",
                [_r(h["entropy"], 3) for h in heads],
                "every mean entropy < 0.95",
                all(h["entropy"] < 0.95 for h in heads),
                kind="sanity",
            ),
        ]
    abl = res.get("ablation", {}).get("heads", [])
    figs = [f for f in ("figures/attention_maps.png",) if (REPO_ROOT / f).is_file() or (ctx.root / f).is_file()]
    return Outcome(
        results={
            "headers": ["头 / head", "书·熵", "熵 / entropy", "书·对角", "对角 / diag", "书·前一位", "前一位 / prev"],
            "rows": rows,
            "ablation": [[f"L{a['layer']}·H{a['head']}", _r(a["delta_loss"], 3)] for a in abl],
            "source": "data/head_portrait.json",
        },
        claims=claims,
        figures=figs,
    )


# ====================================================================== §1.8.7 KV cache, GQA
def analyze_kv(ctx: Context) -> Outcome:
    from ..attention.memory import book_examples, kv_cache_bytes
    from ..model import KVCache, TinyGPT

    rows = []
    for ex in book_examples():
        if "KV" in ex.get("label", ""):
            rows.append(ex)
    mem = book_values("memory_formulas")
    per_tok = {k: kv_cache_bytes(80, g, 128, 1) / 1e6 for k, g in (("MHA", 64), ("GQA_g8", 8), ("MQA", 1))}
    claims = [
        claim(
            f"kv_formula_{k}",
            "§1.8.7 / §1.8.8",
            f"式 1.20：Llama-2 70B 每 token KV 缓存 {mem['kv_cache_per_token_MB'][k]} MB（{k}）/ eq. 1.20",
            _r(v, 3),
            f"{mem['kv_cache_per_token_MB'][k]} MB to the book's 2 digits",
            abs(v - mem["kv_cache_per_token_MB"][k]) <= 0.006 + 0.02 * v,
            kind="book",
        )
        for k, v in per_tok.items()
    ]
    # the formula against the cache our own model really holds (fp32, the small configuration)
    measured = []
    base = ctx.scale.cfg(**R.SMALL)
    for g in (base.n_head, 2, 1):
        cfg = base.replace(n_kv_head=g, device="cpu")
        model = TinyGPT(cfg).eval()
        caches = [KVCache() for _ in range(cfg.n_layer)]
        with torch.no_grad():
            model(torch.zeros(1, cfg.block_size, dtype=torch.long), kv_cache=caches)
        held = sum(c.k.numel() * c.k.element_size() + c.v.numel() * c.v.element_size() for c in caches)
        formula = kv_cache_bytes(cfg.n_layer, g, cfg.d_head, cfg.block_size, bytes_per=4)
        measured.append(
            {
                "n_kv_head": g,
                "scheme": {base.n_head: "MHA", 2: "GQA g=2", 1: "MQA"}[g],
                "cache_bytes_measured": held,
                "cache_bytes_formula": formula,
                "params": model.num_params(),
            }
        )
    claims.append(
        claim(
            "kv_formula_matches_model",
            "§1.8.7",
            "式 1.20 等于本模型 KV 缓存实际占用的字节数 / eq. 1.20 equals the bytes our model's KV cache holds",
            [[m["scheme"], m["cache_bytes_measured"], m["cache_bytes_formula"]] for m in measured],
            "equal, for MHA, GQA and MQA",
            all(m["cache_bytes_measured"] == m["cache_bytes_formula"] for m in measured),
            kind="sanity",
        )
    )
    trained = {}
    seeds = _seeds_done(ctx, lambda s: [R.kv_run(ctx.scale, g, s) for g in (4, 2, 1)])
    for g in (4, 2, 1):
        trained[str(g)] = [_val(ctx.get(R.kv_run(ctx.scale, g, s))) for s in seeds]
    res = {
        "headers": [
            "方案 / scheme",
            "KV 头 / kv heads",
            "缓存字节（实测）/ cache bytes held",
            "式 1.20 / formula",
            "参数 / params",
            "验证 loss / val",
        ],
        "rows": [
            [
                m["scheme"],
                m["n_kv_head"],
                m["cache_bytes_measured"],
                m["cache_bytes_formula"],
                m["params"],
                _r(statistics.fmean(trained[str(m["n_kv_head"])])) if seeds else "未运行 / not run yet",
            ]
            for m in measured
        ],
        "table": [[f"Llama-2 70B {k} MB/token", mem["kv_cache_per_token_MB"][k], _r(v, 3)] for k, v in per_tok.items()],
        "book_llama2_70b_MB_per_token": {k: _r(v, 3) for k, v in per_tok.items()},
        "book_MB_per_token": mem["kv_cache_per_token_MB"],
        "ours": measured,
        "seeds": seeds,
        "val_loss": trained,
    }
    notes = []
    status = "done"
    if seeds:
        mha, mqa = statistics.fmean(trained["4"]), statistics.fmean(trained["1"])
        cost = [q - m for q, m in zip(trained["1"], trained["4"])]  # same seed, same batches
        claims.append(
            claim(
                "mqa_costs_some_quality",
                "§1.8.8",
                "MQA 把缓存降到 1/n_head，“实践中这会损失一些质量”/ MQA loses some quality",
                {
                    "MHA": _r(mha),
                    "GQA": _r(statistics.fmean(trained["2"])),
                    "MQA": _r(mqa),
                    "MQA_minus_MHA": ms(cost, 3),
                },
                "MQA − MHA, seed by seed: mean > max(2 sd over seeds, 0)",
                beyond_noise(cost),
            )
        )
        claims.append(
            claim(
                "gqa_small_loss",
                "§1.8.8",
                "GQA 的质量损失很小 / GQA loses little",
                {"GQA_minus_MHA": _r(statistics.fmean(trained["2"]) - mha)},
                "GQA − MHA < 0.1",
                statistics.fmean(trained["2"]) - mha < 0.1,
            )
        )
        if len(seeds) < ctx.scale.seeds:
            notes.append(f"trained losses from {len(seeds)} of {ctx.scale.seeds} seeds")
            status = "partial"
    else:
        notes.append("GQA/MQA 训练未运行 / trained GQA and MQA runs not run yet; the byte counts above need none")
        status = "partial"
    return Outcome(results=res, claims=claims, notes=notes, status=status)


# ================================================================ §1.9 positions, no positions
POS_CONTROL = R.POS_CONTROL  # the protocol control: token embeddings x sqrt(d_model)


def analyze_positions(ctx: Context) -> Outcome:
    seeds = _seeds_done(ctx, lambda s: [R.position_runs(ctx.scale, k, s) for k in POS_KINDS])
    cseeds = _seeds_done(ctx, lambda s: [R.position_runs(ctx.scale, POS_CONTROL, s)])
    kinds = {k: seeds for k in POS_KINDS} | ({POS_CONTROL: cseeds} if cseeds else {})
    val = {k: [_val(ctx.get(R.position_runs(ctx.scale, k, s))) for s in ss] for k, ss in kinds.items()}
    first = {k: ctx.get(R.position_runs(ctx.scale, k, ss[0])) for k, ss in kinds.items()}
    portraits = {k: _portrait(ctx, f) for k, f in first.items()}
    summary = {
        k: {
            "val_mean": _r(statistics.fmean(v)),
            "val": [_r(x) for x in v],
            "layer0_max_prev": _r(_layer0_best(portraits[k], "prev"), 3),
            "layer0_max_diag": _r(_layer0_best(portraits[k], "diag"), 3),
        }
        for k, v in val.items()
    }
    m = {k: statistics.fmean(v) for k, v in val.items()}
    worse = [n - l for n, l in zip(val["none"], val["learned"])]  # same seed, same batches
    three = ("learned", "sinusoidal", "rope")
    claims = [
        claim(
            "positions_needed",
            "§1.9 / §1.13.4",
            "去掉位置编码“完全学不会顺序”：验证 loss 明显变差 / without positions the model is clearly worse",
            {"none": _r(m["none"]), "learned": _r(m["learned"]), "none_minus_learned": ms(worse, 3)},
            "none − learned, seed by seed: mean > max(0.1, 2 sd over seeds)",
            beyond_noise(worse, 0.1),
        ),
        claim(
            "prev_head_needs_positions",
            "§1.9.7 / 自测 6",
            "没有位置编码，“看前一位”的头学不出来 / without positions the previous-token head does not form",
            {"none": summary["none"]["layer0_max_prev"], "learned": summary["learned"]["layer0_max_prev"]},
            "max prev over layer-0 heads < half of the learned model's",
            summary["none"]["layer0_max_prev"] < 0.5 * summary["learned"]["layer0_max_prev"],
        ),
        claim(
            "three_schemes_close",
            "§1.9",
            "三种位置编码在这个规模上都能用 / the three schemes all work here",
            {k: _r(m[k]) for k in three},
            "each within 0.15 of the best of the three",
            max(m[k] for k in three) - min(m[k] for k in three) < 0.15,
            kind="sanity",
        ),
    ]
    if cseeds:
        best = min(m["learned"], m["rope"])
        claims.append(
            claim(
                "sinusoidal_scale_control",
                "§1.9.2",
                "对照：词向量乘 √d_model（原始 Transformer 的做法）后，正弦编码与可学习、RoPE 相当——"
                "上一条的 FAIL 来自两者的尺度 / control: with token embeddings x sqrt(d_model) the sinusoidal "
                "model is as good as learned and RoPE, so the FAIL above is the scale",
                {"sinusoidal_emb_scale": _r(m[POS_CONTROL]), "sinusoidal": _r(m["sinusoidal"]), "best": _r(best)},
                "within 0.15 of the better of learned and RoPE",
                m[POS_CONTROL] - best < 0.15,
                kind="sanity",
            )
        )
    figs = [ctx.fig("val_loss.png"), ctx.fig("portraits.png")]
    notes = [] if len(seeds) == ctx.scale.seeds else [f"{len(seeds)} of {ctx.scale.seeds} seeds finished"]
    if len(cseeds) < ctx.scale.seeds:
        notes.append(f"对照（词向量 ×√d_model）/ the control: {len(cseeds)} of {ctx.scale.seeds} seeds")
    table = [
        [k, len(val[k]), summary[k]["val_mean"], summary[k]["layer0_max_prev"], summary[k]["layer0_max_diag"]]
        for k in kinds
    ]
    return Outcome(
        results={
            "headers": [
                "位置编码 / positions",
                "种子 / seeds",
                "验证 loss / val",
                "层 0 最大前一位 / L0 max prev",
                "层 0 最大对角 / L0 max diag",
            ],
            "rows": table,
            "seeds": seeds,
            "control_seeds": cseeds,
            "summary": summary,
            "portraits": portraits,
        },
        claims=claims,
        figures=figs,
        notes=notes,
        status="done" if len(seeds) == ctx.scale.seeds and len(cseeds) == ctx.scale.seeds else "partial",
    )


# ==================================================================== §1.11.7 failures (committed)
def analyze_failures(ctx: Context) -> Outcome:
    res = _committed(ctx, "failure_symptoms.json")
    book = res.get("book") or {}
    rows = []
    for name, v in res["variants"].items():
        b = book.get(name)
        rows.append(
            [
                name,
                b[1] if b else None,
                _r(v["loss_end"]),
                b[3] if b else None,
                _r(v["weight_entropy"], 3),
                b[5] if b else None,
                _r(v["row_sum_max"], 4),
                _r(v["future_weight_max"], 3),
            ]
        )
    from .failures import failure_claims

    claims = failure_claims(res)  # the one home of §1.11.7's claims, re-judged from the committed numbers
    return Outcome(
        results={
            "headers": [
                "变体 / variant",
                "书·loss终",
                "loss 终 / end",
                "书·熵",
                "熵 / entropy",
                "书·行和",
                "行和 / row sum",
                "未来权重 / future",
            ],
            "rows": rows,
            "steps": res["config"]["max_steps"],
            "source": "data/failure_symptoms.json",
        },
        claims=claims,
    )


# ======================================================================= §1.12.4 head dynamics
def analyze_dynamics(ctx: Context) -> Outcome:
    """The baseline (the case's small scaled run) of every seed, at the weights it kept."""
    from .heads import dynamics_of_run

    steps = ctx.scale.dynamics_steps()
    per_seed = []
    missing = []
    for seed in ctx.scale.seed_list():
        f = ctx.get(R.baseline(ctx.scale, seed))
        if f is None:
            continue
        try:
            r = dynamics_of_run(f.run_dir, ctx.text, steps)
        except ExperimentError as e:  # a run trained before it kept its weights
            missing.append(str(e))
            continue
        per_seed.append(
            {
                "seed": seed,
                "prev": [_layer0_best(s["heads"], "prev") for s in r["snapshots"]],
                "diag": [_layer0_best(s["heads"], "diag") for s in r["snapshots"]],
                "heads": [s["heads"] for s in r["snapshots"]],
            }
        )
    if not per_seed:
        raise NotAvailable("; ".join(missing) or "no seed of the baseline has finished")
    prev = [p["prev"] for p in per_seed]
    grows = all(p[0] < p[-1] for p in prev)
    early = [p[1] / p[-1] if p[-1] > 0 else 0 for p in prev]
    claims = [
        claim(
            "prev_head_forms",
            "§1.12.4",
            "“前一位头”的 prev 权重随训练涨起来 / the previous-token weight grows during training",
            [[_r(x, 3) for x in p] for p in prev],
            f"max layer-0 prev at step {steps[-1]} > at step {steps[0]}, every seed",
            grows,
        ),
        claim(
            "specialisation_gradual_or_sudden",
            "§1.12.4",
            "头部特化是一次性出现的，还是逐渐形成的？"
            f"（书中留作问题）/ sudden or gradual? fraction of the final prev reached by step {steps[1]}",
            [_r(x, 3) for x in early],
            "reported; ≥ 0.8 = formed early (sudden), else gradual",
            None,
        ),
    ]
    return Outcome(
        results={
            "headers": ["种子 / seed"] + [f"prev @ {s}" for s in steps] + [f"diag @ {s}" for s in steps],
            "rows": [[p["seed"]] + [_r(x, 3) for x in p["prev"]] + [_r(x, 3) for x in p["diag"]] for p in per_seed],
            "steps": list(steps),
            "seeds": per_seed,
        },
        claims=claims,
        figures=[ctx.fig("prev.png")],
        notes=missing,
        status="done" if len(per_seed) == ctx.scale.seeds else "partial",
    )


# ======================================================================== §1.13.4 ablation
ABL_ORDER = (
    "baseline",
    "no_scaling",
    "no_residual",
    "no_layernorm",
    "untied",
    "no_positions",
    "no_warmup",
    "no_clipping",
)


# A spike is what clipping exists for: the collapsed big model's gradient norm reaches
# 30× the threshold after warmup (runs/case/big_unscaled); below 5× and on a few
# percent of steps, clipping only trims, and Adam's update barely notices a uniform trim.
CLIP_SPIKE, CLIP_SHARE = 5.0, 0.05


def clipping_idle(baseline: dict, unclipped: dict) -> bool:
    """True when neither run had a gradient spike after warmup and the baseline's
    clipping touched only a few steps (``clip_activity`` of each)."""
    return (
        max(baseline["max_over_threshold"], unclipped["max_over_threshold"]) < CLIP_SPIKE
        and baseline["clipped_share"] < CLIP_SHARE
    )


def analyze_ablation(ctx: Context) -> Outcome:
    from .ablate import LABELS, checklist_row, clip_activity

    seed = ctx.scale.seed_list()[0]
    base_cfg = ctx.get(R.ablation_run(ctx.scale, "baseline", seed)).run.cfg
    rows, clip = {}, {}
    for c in ABL_ORDER:
        f = ctx.get(R.ablation_run(ctx.scale, c, seed))
        if c in ("baseline", "no_clipping"):  # the threshold is the baseline's; the other run has none
            clip[c] = clip_activity(f.history.records, base_cfg.grad_clip, base_cfg.warmup)
        rows[c] = checklist_row(f.history, f.model, 0.0)
        rows[c].pop("seconds")
        early = [r["loss"] for r in f.history.records[: max(2, len(f.history.records) // 7)]]
        rows[c]["early_max_jump"] = max((b - a for a, b in zip(early, early[1:])), default=0.0)
    base = rows["baseline"]
    for r in rows.values():
        r["delta_val_loss"] = (r["val_loss_end"] - base["val_loss_end"]) if not r["diverged"] else None
        r["params_ratio"] = r["params"] / base["params"]
    d = {k: r["delta_val_loss"] for k, r in rows.items()}
    expect = {
        "no_scaling": (
            "小模型上影响小 / small here",
            "|Δ| < 0.3",
            d["no_scaling"] is not None and abs(d["no_scaling"]) < 0.3,
        ),
        "no_residual": (
            "直接训不动 / does not train",
            "Δ > 0.5 or diverged",
            rows["no_residual"]["diverged"] or d["no_residual"] > 0.5,
        ),
        "no_layernorm": (
            "loss 抖动、收敛慢 / noisy, slow",
            "Δ > 0.02 or larger max jump than baseline",
            rows["no_layernorm"]["diverged"]
            or d["no_layernorm"] > 0.02
            or rows["no_layernorm"]["max_loss_jump"] > base["max_loss_jump"],
        ),
        "untied": (
            "参数多 36%，效果略降 / +36% params, slightly worse",
            "params +30–40% and Δ ≥ 0",
            0.30 <= rows["untied"]["params_ratio"] - 1 <= 0.40 and (d["untied"] or 0) >= 0,
        ),
        "no_positions": ("完全学不会顺序 / cannot learn order", "Δ > 0.1", (d["no_positions"] or 0) > 0.1),
        "no_warmup": (
            "前期 loss 尖刺 / early spikes",
            "early max loss jump > baseline's",
            rows["no_warmup"]["early_max_jump"] > base["early_max_jump"],
        ),
        "no_clipping": (
            "偶发 nan / occasional NaN",
            "diverged (NaN) — one run of 1500 steps",
            rows["no_clipping"]["diverged"],
        ),
    }
    claims = [
        claim(
            f"ablate_{k}",
            "§1.13.4",
            f"去掉{LABELS[k][0]}：{v[0]}",
            {
                "delta_val": _r(d[k]),
                "diverged": rows[k]["diverged"],
                "max_jump": _r(rows[k]["max_loss_jump"], 3),
                "early_max_jump": _r(rows[k]["early_max_jump"], 3),
                "params_ratio": _r(rows[k]["params_ratio"], 3),
            },
            v[1],
            v[2],
        )
        for k, v in expect.items()
    ]
    claims.append(
        claim(
            "ablate_clipping_idle",
            "§1.13.4",
            "这次运行里梯度裁剪没有可兜的东西：warmup 之后梯度范数没有尖峰 / clipping had nothing to catch here: "
            "no gradient spike after warmup",
            {c: {k: v if k == "steps" else _r(v, 3) for k, v in a.items()} for c, a in clip.items()},
            f"both runs' largest norm < {CLIP_SPIKE:g} × threshold, baseline clips < {CLIP_SHARE:.0%} of steps",
            clipping_idle(clip["baseline"], clip["no_clipping"]),
            kind="sanity",
        )
    )
    table = [
        [
            f"{LABELS[k][0]} / {LABELS[k][1]}",
            _r(r["val_loss_end"]),
            _r(r["delta_val_loss"], 3),
            "是 yes" if r["diverged"] else "否 no",
            _r(r["max_loss_jump"], 3),
            _r(r["early_max_jump"], 3),
            f"{r['params']:,} ({r['params_ratio'] - 1:+.0%})",
            LABELS[k][2],
        ]
        for k, r in rows.items()
    ]
    return Outcome(
        results={
            "headers": [
                "要素 / change",
                "验证 / val",
                "Δ val",
                "发散 / diverged",
                "最大跳升 / max jump",
                "前期跳升 / early jump",
                "参数 / params",
                "书中 / book",
            ],
            "rows": table,
            "seed": seed,
            "by_change": rows,
            "clip_activity": clip,
        },
        claims=claims,
        notes=["一个种子（同一初始化、同一批数据），每行只改一个要素 / one seed; one change per row"],
    )


# ===================================================================== §1.14.2 attention timing
def time_sdpa(
    n_values, heads: int = 8, d_head: int = 64, repeats: int = 5, warmup: int = 2, budget_s: float = 240.0
) -> dict:
    """§1.14.2's protocol on this CPU: F.scaled_dot_product_attention, causal, warm-up first,
    median of ``repeats``. Stops before an n whose time, predicted by n² from the last one,
    would pass ``budget_s`` (``attnlab bench attention`` compares more methods)."""
    import time

    import torch.nn.functional as F

    from ..perf import interleaved

    cpu = torch.device("cpu")
    start, rows, stopped, last = time.perf_counter(), [], None, None
    for i, n in enumerate(n_values):
        if last is not None:
            predicted = last * (n / n_values[i - 1]) ** 2
            if time.perf_counter() - start + predicted > budget_s:
                stopped = f"n={n}: predicted {predicted:.0f} s would pass the {budget_s:g} s budget"
                break
        t = time.perf_counter()
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, heads, n, d_head, generator=g) for _ in range(3))
        with torch.no_grad():
            ts = interleaved(
                {"sdpa": lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True)},
                repeats,
                warmup,
                cpu,
            )["sdpa"]
        rows.append({"n": n, "ms": {"sdpa": statistics.median(ts) * 1e3}, "ms_rounds": [x * 1e3 for x in ts]})
        last = time.perf_counter() - t
    protocol = {
        "heads": heads,
        "d_head": d_head,
        "batch": 1,
        "causal": True,
        "dtype": "float32",
        "warmup": warmup,
        "repeats": repeats,
        "statistic": "median",
        "threads": torch.get_num_threads(),
    }
    return {"rows": rows, "stopped": stopped, "protocol": protocol}


def analyze_timing(ctx: Context) -> Outcome:
    if ctx.scale.quick:
        res = time_sdpa(n_values=(64, 128, 256), repeats=2, warmup=1, budget_s=20)
    else:
        res = time_sdpa(n_values=(512, 1024, 2048, 4096, 8192), repeats=5, warmup=2, budget_s=240)
    rows = [(r["n"], r["ms"]["sdpa"]) for r in res["rows"] if "sdpa" in r["ms"]]
    book = book_values("sdpa_timing_rtx_a6000_1_14_2")
    fit_from = 1024 if not ctx.scale.quick else 64

    def exponent(pts):
        pts = [(math.log(n), math.log(t)) for n, t in pts]
        mx, my = statistics.fmean(p[0] for p in pts), statistics.fmean(p[1] for p in pts)
        return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)

    ours = exponent([p for p in rows if p[0] >= fit_from]) if len(rows) >= 2 else None
    theirs = exponent([(n, t) for n, t in zip(book["n"], book["ms"]) if n >= 1024])
    doubling = [b[1] / a[1] for a, b in zip(rows, rows[1:])]
    table = [
        [n, book["ms"][book["n"].index(n)] if n in book["n"] else None, _r(t, 4), _r(t / rows[0][1], 3)]
        for n, t in rows
    ]
    claims = [
        claim(
            "timing_superlinear",
            "§1.14.2",
            "耗时随 n 超线性增长（O(n²) 的计算量）/ time grows faster than n",
            _r(ours, 3),
            "fitted exponent of time vs n (n ≥ 1024) between 1.5 and 2.2",
            ours is not None and 1.5 <= ours <= 2.2,
        ),
        claim(
            "timing_book_exponent",
            "§1.14.2",
            f"书中 A6000 上 n 翻倍耗时涨约 3–4 倍（拟合指数 {theirs:.2f}）/ book: ×3–4 per doubling on the A6000",
            [_r(x, 3) for x in doubling],
            "ratio per doubling at the largest n within 2.5–4.5",
            bool(doubling) and 2.5 <= doubling[-1] <= 4.5,
        ),
    ]
    return Outcome(
        results={
            "headers": ["n", "书·A6000 ms", "本机 ms / ours", "相对 n 最小 / rel."],
            "rows": table,
            "exponent_ours": _r(ours, 3),
            "exponent_book": _r(theirs, 3),
            "fit_from_n": fit_from,
            "protocol": res["protocol"],
            "stopped": res["stopped"],
        },
        claims=claims,
        figures=[ctx.fig("timing.png")],
    )


# ============================================================ §1.18.5 ③ n_layer 4, exercise 1
PREDICTION_DEEP = (
    "1500 步时 4 层的验证 loss 不比 2 层好（4.09 ± 0.02 对 4.07），而训练 loss（最后 100 步均值）也更高"
    "（3.86 对 3.77）：是欠拟合，不是过拟合。预测：把整个学习率计划拉长到 3000 步，两者都更低，"
    "4 层在每个种子上都低于 2 层。如果不是这样，“只是没训够”的解释就不成立。"
    " / At 1500 steps four layers are not better (4.09 ± 0.02 vs 4.07) and their training loss is higher too "
    "(3.86 vs 3.77): underfit, not overfit. Predicted: with the whole schedule stretched to 3000 steps both "
    "improve and four layers beat two on every seed; if not, 'only undertrained' is wrong."
)


def _train_tail(f, n: int = 100) -> float:
    """Mean training loss of the last ``n`` steps (how well the model fits what it sees)."""
    return statistics.fmean(r["loss"] for r in f.history.records[-n:])


HEAD_KEYS = ("entropy", "diag", "prev", "distance")


def analyze_deep(ctx: Context) -> Outcome:
    seeds = _seeds_done(ctx, lambda s: [R.deep_run(ctx.scale, s), R.baseline(ctx.scale, s)])
    deep, base = [ctx.get(R.deep_run(ctx.scale, s)) for s in seeds], [ctx.get(R.baseline(ctx.scale, s)) for s in seeds]
    v4, v2 = [_val(f) for f in deep], [_val(f) for f in base]
    t4, t2 = [_train_tail(f) for f in deep], [_train_tail(f) for f in base]
    long_seeds = _seeds_done(ctx, lambda s: [R.deep_long_run(ctx.scale, n, s) for n in (4, 2)])
    long = {n: [ctx.get(R.deep_long_run(ctx.scale, n, s)) for s in long_seeds] for n in (4, 2)}
    lv = {n: [_val(f) for f in fs] for n, fs in long.items()}
    lt = {n: [_train_tail(f) for f in fs] for n, fs in long.items()}
    lbest = {n: [min(v for _, v in f.history.val) for f in fs] for n, fs in long.items()}  # before any overfitting
    portraits = {s: _portrait(ctx, f) for s, f in zip(seeds, deep)}

    def layer_mean(heads: list[dict], l: int, k: str) -> float:
        return statistics.fmean(h[k] for h in heads if h["layer"] == l)

    layers = sorted({h["layer"] for h in portraits[seeds[0]]})
    per_layer = [  # averaged over the heads of a layer, then over seeds
        {
            "layer": l,
            **{k: _r(statistics.fmean(layer_mean(hs, l, k) for hs in portraits.values()), 3) for k in HEAD_KEYS},
        }
        for l in layers
    ]

    def reach(heads: list[dict]) -> float:  # how much further the last layer looks than layer 0
        return layer_mean(heads, layers[-1], "distance") - layer_mean(heads, 0, "distance")

    reach_1500 = [reach(hs) for hs in portraits.values()]
    reach_long = [reach(_portrait(ctx, f)) for f in long[4]]  # does more training separate the layers?
    claims = [
        claim(
            "deep_better",
            "§1.18.5③",
            "4 层模型验证 loss 低于 2 层 / four layers beat two",
            {
                "4 layers": [_r(x) for x in v4],
                "2 layers": [_r(x) for x in v2],
                "train 4 layers": [_r(x) for x in t4],
                "train 2 layers": [_r(x) for x in t2],
            },
            "every seed: 4 < 2",
            all(a < b for a, b in zip(v4, v2)),
            kind="sanity",
        ),
        claim(
            "layer_division_of_labour",
            "§1.18.5③",
            "层间分工：浅层更局部（平均距离小），深层看得更远 / "
            "division of labour: the first layer is more local than the last",
            {
                "per_layer_distance": [[p["layer"], p["distance"]] for p in per_layer],
                "last_minus_first": ms(reach_1500, 3),
                **({"last_minus_first_long": ms(reach_long, 3)} if reach_long else {}),
            },
            "mean distance of the last layer's heads − layer 0's > max(2 sd over seeds, 0)",
            beyond_noise(reach_1500),
        ),
    ]
    notes = [] if len(seeds) == ctx.scale.seeds else [f"{len(seeds)} of {ctx.scale.seeds} seeds"]
    if long_seeds:
        steps = long[4][0].run.cfg.max_steps
        claims.append(
            claim(
                "deep_better_long",
                "§1.18.5③",
                f"训练加倍（{steps} 步）后 4 层验证 loss 低于 2 层 / with twice the steps four layers beat two",
                {
                    "4 layers": [_r(x) for x in lv[4]],
                    "2 layers": [_r(x) for x in lv[2]],
                    "train 4 layers": [_r(x) for x in lt[4]],
                    "train 2 layers": [_r(x) for x in lt[2]],
                    "best val 4 layers": [_r(x) for x in lbest[4]],
                    "best val 2 layers": [_r(x) for x in lbest[2]],
                },
                "every seed: 4 < 2 (predicted before the runs)",
                all(a < b for a, b in zip(lv[4], lv[2])),
                kind="sanity",
            )
        )
    if len(long_seeds) < ctx.scale.seeds:
        notes.append(
            f"加倍训练的对照 {len(long_seeds)}/{ctx.scale.seeds} 个种子 / the longer control: {len(long_seeds)} seeds"
        )
    table = [[p["layer"], p["entropy"], p["diag"], p["prev"], p["distance"]] for p in per_layer]
    curves = [
        {"n_layer": n, "steps": fs[0].run.cfg.max_steps, "val": [[[s, _r(v)] for s, v in f.history.val] for f in fs]}
        for n, fs in ((2, base), (4, deep), (2, long[2]), (4, long[4]))
        if fs
    ]
    return Outcome(
        results={
            "headers": ["层 / layer", "熵 / entropy", "对角 / diag", "前一位 / prev", "平均距离 / distance"],
            "rows": table,
            "seeds": seeds,
            "val_4_layers": v4,
            "val_2_layers": v2,
            "train_4_layers": t4,
            "train_2_layers": t2,
            "long": {"seeds": long_seeds, "val": lv, "train": lt, "best_val": lbest},
            "curves": curves,
            "per_layer": per_layer,
            "heads": {str(s): hs for s, hs in portraits.items()},
        },
        claims=claims,
        figures=[ctx.fig("curves.png")],
        notes=notes,
        status="done" if len(seeds) == len(long_seeds) == ctx.scale.seeds else "partial",
    )


def analyze_exercise1(ctx: Context) -> Outcome:
    pairs = lambda s: [R.exercise1_run(ctx.scale, sc, s) for sc in (False, True)]  # noqa: E731
    seeds = _seeds_done(ctx, pairs)
    gaps = [_val(ctx.get(pairs(s)[0])) - _val(ctx.get(pairs(s)[1])) for s in seeds]
    ls64 = [_first_logit_std(ctx.get(pairs(s)[0])) for s in seeds]
    small = [ctx.get(R.case_run(ctx.scale, "small", False, s)) for s in seeds]
    ls32 = [_first_logit_std(f) for f in small if f is not None]
    case = _case_gaps(ctx)
    claims = [
        claim(
            "ex1_gap_small_not_zero",
            "§1.20.1",
            "d_head=64：差异“不大但不为零”，远小于 d_head=256 / not large but not zero",
            {"gaps": ms(gaps, 3), "d32_case": case.get("small"), "d256_case": case.get("big")},
            "mean gap > max(2 sd over seeds, 0), and below the mean d_head 256 gap of the case",
            beyond_noise(gaps) and statistics.fmean(gaps) < statistics.fmean(case.get("big") or [math.inf]),
        )
    ]
    if ls32:
        ratio = statistics.fmean(ls64) / statistics.fmean(ls32)
        claims.append(
            claim(
                "ex1_logit_std_sqrt2",
                "§1.20.1",
                "d_head 翻倍，初始 logits 标准差约涨 √2 倍 / doubling "
                "d_head multiplies the init logit std by about sqrt 2",
                {"d64": [_r(x, 3) for x in ls64], "d32": [_r(x, 3) for x in ls32], "ratio": _r(ratio, 3)},
                "ratio within 1.41 ± 0.35 (q, k variance also changes with n_head)",
                abs(ratio - 1.414) < 0.35,
            )
        )
    return Outcome(
        results={
            "headers": ["种子 / seed", "差距 d_head=64 / gap", "初始 logits std d64", "初始 logits std d32"],
            "rows": [
                [s, _r(g), _r(a, 3), _r(b, 3) if b is not None else None]
                for s, g, a, b in zip(seeds, gaps, ls64, ls32 + [None] * len(seeds))
            ],
            "seeds": seeds,
            "gaps": gaps,
            "init_logit_std_d64": ls64,
            "init_logit_std_d32": ls32,
        },
        claims=claims,
        status="done" if len(seeds) == ctx.scale.seeds else "partial",
        notes=[] if len(seeds) == ctx.scale.seeds else [f"{len(seeds)} of {ctx.scale.seeds} seeds"],
    )


# =========================================================================== §1.20.2 exercise 2
EX2_FIXED_D_HEADS = (32, 64, 128, 256)

PREDICTION_EX2 = (
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


def _ex2_point(ctx: Context, d: int, seeds: list[int], fixed: bool) -> dict:
    """One d_head of one variant over ``seeds`` (at least one, finished): the gaps and the diagnostics
    the exercise asks to record."""
    pair = {sc: [ctx.get(R.exercise2_run(ctx.scale, d, sc, s, fixed)) for s in seeds] for sc in (False, True)}
    gaps = [_val(u) - _val(c) for u, c in zip(pair[False], pair[True])]
    mean, sd = _mean_sd(gaps)
    cfg = pair[False][0].run.cfg

    def entropy(fs):  # layer 0's weight entropy at the last step (mean over heads), mean over seeds
        return _r(statistics.fmean(f.history.records[-1]["layers"][0]["weight_entropy"] for f in fs), 3)

    return {
        "d_head": d,
        "d_model": cfg.d_model,
        "n_head": cfg.n_head,
        "gap_mean": _r(mean),
        "gap_sd": _r(sd),
        "gaps": [_r(x) for x in gaps],
        "logit_std_init_unscaled": _r(statistics.fmean(_first_logit_std(f) for f in pair[False]), 3),
        "entropy_end_unscaled": entropy(pair[False]),
        "entropy_end_scaled": entropy(pair[True]),
        # the exercise's loss curves: validation loss of the first seed, both versions
        "val_curve": {
            tag: [[st, _r(v)] for st, v in pair[sc][0].history.val]
            for tag, sc in (("unscaled", False), ("scaled", True))
        },
    }


def analyze_exercise2(ctx: Context) -> Outcome:
    scale = ctx.scale
    seeds = _seeds_done(
        ctx, lambda s: [R.exercise2_run(scale, d, sc, s) for d in R.EX2_D_HEADS for sc in (False, True)]
    )
    fseeds = _seeds_done(
        ctx, lambda s: [R.exercise2_run(scale, d, sc, s, True) for d in EX2_FIXED_D_HEADS for sc in (False, True)]
    )
    summary = [_ex2_point(ctx, d, seeds, False) for d in R.EX2_D_HEADS]
    fixed_summary = [_ex2_point(ctx, d, fseeds, True) for d in EX2_FIXED_D_HEADS] if fseeds else []
    # critical d_head: the first whose mean gap exceeds the d_head 32 gap by 2 of its sd (and 0.1)
    gap32 = summary[0]["gaps"]
    base_sd = _mean_sd(gap32)[1] or 0.05
    thr = max(0.1, statistics.fmean(gap32) + 2 * base_sd)
    critical = next((s["d_head"] for s in summary if s["gap_mean"] > thr), None)
    # where attention itself collapses: the unscaled model's trained layer-0 entropy below 0.1
    collapse = next((s["d_head"] for s in summary if s["entropy_end_unscaled"] < 0.1), None)
    claims = [
        claim(
            "ex2_critical_exists",
            "§1.20.2",
            "存在一个“临界维度”，之后差距明显上升 / a critical head size exists",
            {"critical_d_head": critical, "threshold": _r(thr, 3)},
            "some d_head ≤ 256 passes the threshold (the d_head 32 gap + 2 sd, at least 0.1)",
            critical is not None,
        ),
        claim(
            "ex2_big_gap",
            "§1.20.2",
            "d_head=256 时差距明显 / a clear gap at 256",
            summary[-1]["gap_mean"],
            "> 0.3",
            summary[-1]["gap_mean"] > 0.3,
        ),
    ]
    if fixed_summary:
        lo, hi = fixed_summary[0], fixed_summary[-1]
        sds = [x["gap_sd"] for x in (lo, hi) if x["gap_sd"] is not None]
        tol = 2 * math.sqrt(statistics.fmean(sd * sd for sd in sds)) if sds else 0.1
        claims.append(
            claim(
                "ex2_direction_fixed_d_model",
                "§1.1 / §1.20.2",
                "“结论的方向（缩放的必要性随维度增长）不会变——那是数学性质”：d_model 固定为 256，只改 d_head，"
                "差距仍随 d_head 增大 / the direction is a mathematical property: with d_model fixed the gap still "
                "grows with d_head",
                {"gap_d32": lo["gap_mean"], "gap_d256": hi["gap_mean"], "tolerance": _r(tol, 3)},
                "gap(256) − gap(32) > 2 × the pooled seed sd and > 0.1",
                hi["gap_mean"] - lo["gap_mean"] > max(tol, 0.1),
            )
        )

    def row(variant, x):
        return [
            variant,
            x["d_head"],
            f"{x['d_model']}×{x['n_head']}",
            x["gap_mean"],
            x["gap_sd"],
            x["gaps"],
            x["logit_std_init_unscaled"],
            x["entropy_end_unscaled"],
            x["entropy_end_scaled"],
        ]

    return Outcome(
        results={
            "headers": [
                "变体 / variant",
                "d_head",
                "d_model×n_head",
                "差距均值 / mean gap",
                "标准差 / sd",
                "各种子 / per seed",
                "不缩放初始 logits std / unscaled init",
                "不缩放训练后熵 / unscaled entropy end",
                "缩放训练后熵 / scaled entropy end",
            ],
            "rows": [row("d_model = d_head", x) for x in summary] + [row("d_model = 256", x) for x in fixed_summary],
            "seeds": seeds,
            "summary": summary,
            "critical_d_head": critical,
            "threshold": thr,
            "collapse_d_head": collapse,
            "fixed_summary": fixed_summary,
            "fixed_d_model": {str(x["d_head"]): x["gaps"] for x in fixed_summary},
            "fixed_seeds": fseeds,
        },
        claims=claims,
        figures=[ctx.fig("gap.png"), ctx.fig("curves.png")],
        status="done" if len(seeds) == scale.seeds and len(fseeds) == scale.seeds else "partial",
        notes=[
            f"差距超过阈值（{thr:.3g}）从 d_head = {critical or '—'} 开始；不缩放模型训练后的第 0 层熵跌到 0.1 以下"
            f"（注意力塌缩）从 d_head = {collapse or '—'} 开始 / the gap passes the threshold from d_head {critical or '—'}; "
            f"the unscaled model's attention collapses (layer-0 entropy < 0.1 after training) from {collapse or '—'}"
        ]
        + (
            []
            if len(fseeds) == scale.seeds
            else [
                f"固定 d_model 的变体：{len(fseeds)}/{scale.seeds} 个种子 / the fixed-d_model variant: "
                f"{len(fseeds)} of {scale.seeds} seeds"
            ]
        ),
    )


def ex2_min_runs(scale):
    s = scale.seed_list()[0]
    return [R.exercise2_run(scale, d, sc, s) for d in R.EX2_D_HEADS for sc in (False, True)]


def ex2_runs(scale):
    out = []
    for s in scale.seed_list():
        out += [R.exercise2_run(scale, d, sc, s) for d in R.EX2_D_HEADS for sc in (False, True)]
        out += [R.exercise2_run(scale, d, sc, s, True) for d in EX2_FIXED_D_HEADS for sc in (False, True)]
    return out


def analyze_sweep_committed(ctx: Context) -> Outcome:
    res = _committed(ctx, "sweep_critical_dimension.json")
    rows = [[g["d_head"], _r(g["val_loss_scaled"]), _r(g["val_loss_unscaled"]), _r(g["gap"])] for g in res["gap"]]
    g = {x["d_head"]: x["gap"] for x in res["gap"]}
    claims = [
        claim(
            "sweep_one_seed_too_noisy",
            "§1.20.2",
            "单种子的 d_head=64 点（负的差距）和要区分的效应一样大，"
            "所以需要多个种子 / with one seed the d_head 64 point is as large as the effect: more seeds needed",
            _r(g.get(64)),
            "|gap(64)| ≥ 0.1 means one seed cannot separate it from noise",
            abs(g.get(64, 0)) >= 0.1,
            kind="sanity",
        )
    ]
    figs = [f for f in ("figures/sweep_critical_dimension.png",) if (REPO_ROOT / f).is_file()]
    return Outcome(
        results={
            "headers": ["d_head", "缩放 / scaled", "不缩放 / unscaled", "差距 / gap"],
            "rows": rows,
            "seeds": res["seeds"],
            "source": "data/sweep_critical_dimension.json",
            "base_d_model": "d_model = d_head, n_head = 1",
        },
        claims=claims,
        figures=figs,
        notes=[
            "一个种子、d_model = d_head（图中未标注）；三种子版本见练习二 / one seed, d_model = d_head; "
            "the 3-seed version is the exercise-2 entry"
        ],
    )


# ====================================================================== ⑬ learnable temperature
def analyze_temperature(ctx: Context) -> Outcome:
    seeds = _seeds_done(ctx, lambda s: [R.temperature_run(ctx.scale, s)])
    rows = []
    for s in seeds:
        f = ctx.get(R.temperature_run(ctx.scale, s))
        inv = [float(b.attn.log_inv_temp.detach().exp().mean()) for b in f.model.blocks]
        last = next(r["layers"] for r in reversed(f.history.records) if r.get("layers"))
        rows.append(
            {
                "seed": s,
                "val_loss": _val(f),
                "temperature_per_layer": [1 / x for x in inv],
                "entropy_end": [l["weight_entropy"] for l in last],
                "logit_std_end": [l["logit_std"] for l in last],
            }
        )
    case = {}
    try:
        P = _committed(ctx, "ch1_case.json")["pairs"]
        case = {"big_unscaled": P["big_unscaled"]["val_loss_end"], "big_scaled": P["big_scaled"]["val_loss_end"]}
    except NotAvailable:
        pass
    v = statistics.fmean(r["val_loss"] for r in rows)
    temps = [t for r in rows for t in r["temperature_per_layer"]]
    claims = [
        claim(
            "temp_goes_down",
            "§1.6.3 ⑬",
            "可学温度“会往坏的方向走”：被推向更尖（温度 < 1）/ a free temperature is pushed towards sharper attention",
            [_r(t, 3) for t in temps],
            "every learned temperature < 1 (it started at 1)",
            all(t < 1 for t in temps),
        )
    ]
    if case:
        claims.append(
            claim(
                "temp_does_not_rescue",
                "§1.6.3 ⑬",
                "可学温度救不回不缩放的大模型 / a learnable temperature does not rescue the unscaled big model",
                {"learned_temp": _r(v), "unscaled": _r(case["big_unscaled"]), "scaled": _r(case["big_scaled"])},
                "val loss with learned temperature − scaled > 0.3",
                v - case["big_scaled"] > 0.3,
            )
        )
    return Outcome(
        results={
            "headers": ["种子 / seed", "验证 / val", "学到的温度 / learned temperature", "熵 / entropy end"],
            "rows": [
                [
                    r["seed"],
                    _r(r["val_loss"]),
                    [_r(t, 3) for t in r["temperature_per_layer"]],
                    [_r(e, 3) for e in r["entropy_end"]],
                ]
                for r in rows
            ],
            "seeds": seeds,
            "runs": rows,
            "case": case,
        },
        claims=claims,
        status="done" if len(seeds) == ctx.scale.seeds else "partial",
        notes=[] if len(seeds) == ctx.scale.seeds else [f"{len(seeds)} of {ctx.scale.seeds} seeds"],
    )


# ====================================================================== checkpoint ② Markov floor
def markov_floor(text: str, cfg: Config) -> dict:
    """Unigram and smoothed bigram cross-entropy (nats) on the trainer's validation split.

    Same tokenizer (vocab 1200, <unk> for the rest) and split as ``train``.
    Smoothing is chosen on the last 10% of the training split only (never on
    validation): add-alpha for both, and for the bigram also interpolation
    with the unigram (Jelinek-Mercer).
    """
    tok = CharTokenizer(text, cfg.vocab_size)
    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    train_ids, val_ids = split_data(ids, cfg)
    V = cfg.vocab_size
    cut = int(len(train_ids) * 0.9)
    fit, held = train_ids[:cut], train_ids[cut:]

    def counts(x):
        uni = torch.bincount(x, minlength=V).double()
        bi = torch.zeros(V, V, dtype=torch.float64)
        bi.index_put_((x[:-1], x[1:]), torch.ones(len(x) - 1, dtype=torch.float64), accumulate=True)
        return uni, bi

    def uni_nll(uni, alpha, x):
        p = (uni + alpha) / (uni.sum() + alpha * V)
        return float(-p.log()[x[1:]].mean())

    def bi_nll(uni, bi, alpha, lam, x):
        pu = (uni + 0.5) / (uni.sum() + 0.5 * V)
        pb = (bi + alpha) / (bi.sum(1, keepdim=True) + alpha * V)
        p = lam * pb + (1 - lam) * pu[None, :]
        return float(-p[x[:-1], x[1:]].log().mean())

    uf, bf = counts(fit)
    alphas = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0]
    a_uni = min(alphas, key=lambda a: uni_nll(uf, a, held))
    grid = [(a, l) for a in alphas for l in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]
    a_bi, lam = min(grid, key=lambda al: bi_nll(uf, bf, al[0], al[1], held))
    ut, bt = counts(train_ids)
    return {
        "unigram": uni_nll(ut, a_uni, val_ids),
        "bigram": bi_nll(ut, bt, a_bi, lam, val_ids),
        "unigram_alpha": a_uni,
        "bigram_alpha": a_bi,
        "bigram_lambda": lam,
        "ln_vocab": math.log(V),
        "val_tokens": len(val_ids),
        "train_tokens": len(train_ids),
    }


def analyze_markov(ctx: Context) -> Outcome:
    cfg = Config()  # the trainer's split and vocabulary at every scale: no training needed
    floor = markov_floor(ctx.text, cfg)
    models = []
    try:
        case = _committed(ctx, "ch1_case.json")
        for k, p in case["pairs"].items():
            models.append({"model": f"case {k}", "val_loss": p["val_loss_end"], "source": "data/ch1_case.json"})
        for r in case["seeds"]["runs"][1:]:
            for tag in ("unscaled", "scaled"):
                models.append(
                    {
                        "model": f"case small_{tag} seed {r['seed']}",
                        "val_loss": r[f"val_loss_end_{tag}"],
                        "source": "data/ch1_case.json",
                    }
                )
    except NotAvailable:
        case = None
    try:
        sw = _committed(ctx, "sweep_critical_dimension.json")
        for t in sw["trials"]:
            if t.get("val_loss_end") is not None:
                models.append(
                    {
                        "model": f"sweep d_head={t['d_head']} {'scaled' if t['scaled'] else 'unscaled'}",
                        "val_loss": t["val_loss_end"],
                        "source": "data/sweep_critical_dimension.json",
                    }
                )
    except NotAvailable:
        pass
    for p in sorted((ctx.root / "data" / "lab_book").glob("*.json")):
        if p.stem in ("markov",):
            continue
        doc = json.loads(p.read_text(encoding="utf-8"))
        runs = doc.get("results", {}).get("runs")
        for k, v in runs.items() if isinstance(runs, dict) else ():
            if isinstance(v, dict) and isinstance(v.get("val"), list):
                for i, x in enumerate(v["val"]):
                    models.append({"model": f"{p.stem} {k} #{i}", "val_loss": x, "source": f"data/lab_book/{p.name}"})
    floor_r = {k: (_r(v) if isinstance(v, float) else v) for k, v in floor.items()}
    claims = [
        claim(
            "bigram_below_unigram",
            "检查点② / checkpoint ②",
            "平滑二元模型低于一元模型 / bigram below unigram",
            {"unigram": floor_r["unigram"], "bigram": floor_r["bigram"]},
            "bigram < unigram",
            floor["bigram"] < floor["unigram"],
            kind="sanity",
        )
    ]
    if case:
        bu = case["pairs"]["big_unscaled"]["val_loss_end"]
        claims.append(
            claim(
                "dead_attention_near_markov",
                "检查点② / §1.22.2",
                "注意力塌缩后“等价于一个固定的一阶转移”：塌缩的大模型 ≈ 二元模型的水平 / the collapsed big "
                "model is about as good as a first-order Markov model",
                {"big_unscaled": _r(bu), "bigram": floor_r["bigram"], "difference": _r(bu - floor["bigram"])},
                "|big unscaled − bigram| < 0.3",
                abs(bu - floor["bigram"]) < 0.3,
            )
        )
        claims.append(
            claim(
                "collapsed_worse_than_bigram",
                "检查点② / §1.22.2",
                "42 万参数、注意力已死的模型是否比一个平滑二元模型还差？/ is the collapsed model worse than "
                "a plain bigram?",
                {"big_unscaled": _r(bu), "bigram": floor_r["bigram"]},
                "reported: PASS = worse than the bigram",
                bu > floor["bigram"],
            )
        )
        scaled = [
            m
            for m in models
            if "scaled" in m["model"] and "unscaled" not in m["model"] and m["source"] == "data/ch1_case.json"
        ]
        claims.append(
            claim(
                "attention_beats_markov",
                "§1.4",
                "正常训练的模型（缩放）都低于二元模型 / every working (scaled) model beats the bigram",
                [_r(m["val_loss"]) for m in scaled],
                "every scaled case model < bigram",
                all(m["val_loss"] < floor["bigram"] for m in scaled),
                kind="sanity",
            )
        )
    return Outcome(
        results={
            "table": [
                ["平滑一元 / smoothed unigram (nats)", None, floor_r["unigram"]],
                ["平滑二元 / smoothed bigram (nats)", "≈ 4.84（issue，末 10%）", floor_r["bigram"]],
                [
                    "注意力塌缩的大模型 / collapsed big model",
                    5.18,
                    _r(case["pairs"]["big_unscaled"]["val_loss_end"]) if case else None,
                ],
                ["ln 1200（随机猜测 / uniform）", 7.09, _r(floor["ln_vocab"], 3)],
            ],
            "floor": floor_r,
            "models": [{**m, "val_loss": _r(m["val_loss"])} for m in models],
        },
        claims=claims,
        figures=[ctx.fig("floor.png")],
    )


# ============================================================================= the registry
def _seeded(fn):
    return lambda scale: [r for s in scale.seed_list() for r in fn(scale, s)]


def _first_seed(fn):
    return lambda scale: fn(scale, scale.seed_list()[0])


EXPERIMENTS: list[Experiment] = [
    Experiment(
        "case",
        "§1.2",
        "案例：去掉 √d_k 缩放 / the case study",
        "d_head=32 时去掉缩放几乎没差别（4.17 对 4.00，差 0.17）；d_head=256 时差 0.95（5.18 对 4.23），"
        "注意力权重熵跌到 0.0001 / at d_head 32 removing the scale changes little; at 256 it costs 0.95",
        "attnlab case",
        analyze_case,
        order=(1, 2),  # its FAILs carry their reasons from data/ch1_case.json (claims.py)
    ),
    Experiment(
        "qk_norm",
        "§1.7.8",
        "QK-norm：如果一开始就用它 / with QK-norm from the start",
        "“如果一开始就用 QK-norm，那个没复现出来的实验会是什么结果？”QK-norm 把 q、k 的尺度钉死，"
        "“即使权重疯狂增长，logits 也不会失控” / QK-norm fixes the scale of q and k explicitly",
        "attnlab book --only §1.7.8",
        analyze_qk_norm,
        runs=R.qk_norm_runs,
        prediction=PREDICTION_QK,
        min_runs=lambda scale: qk_pair(scale, "small", scale.seed_list()[0]),
        why={
            "qk_bounds_logits": "判定标准的问题（我们的，不是书的）/ our threshold, not the book: logits 确实被钉住了——"
            "不缩放的大模型训练后 logits 标准差 97、155、193（无 QK-norm 时 3550），层 0 最大 |logit| 260、275、270，"
            "都在 QK-norm 的上界 367、326、372 之内（qk_logits_within_norm_bound）；学到的增益几乎没变（rms(g_q·g_k) 0.94）。"
            "但不除以 √d 时这个上界本身约等于 d_head = 256，训练前写下的“< 100”低于它，所以仍是 FAIL。"
            "上界之内的 logits 依然让 softmax 饱和（熵 0.006、0.039、0.35），差距 0.49 ± 0.07：QK-norm 不能代替 1/√d / "
            "the logits are held: std 97, 155, 193 after training (3550 without QK-norm), the largest |logit| 260–275 "
            "inside the norm bound of 326–372, gains barely moved (0.94). Unscaled, that bound is itself about "
            "d_head = 256, above the < 100 written before the runs, so this stays a FAIL; logits inside it still "
            "saturate the softmax (entropy 0.006, 0.039, 0.35; gap 0.49 ± 0.07): QK-norm does not replace 1/sqrt(d)"
        },
    ),
    Experiment(
        "temperature",
        "§1.6.3",
        "停下来想一想⑬：可学的温度 / exercise ⑬: a learnable temperature",
        "为什么温度设成 √d_k 而不是学出来？可学温度“没有该是多少的信号，而且会往坏的方向走”，一路被推到饱和 / "
        "a free temperature is pushed to saturation",
        "attnlab book --only §1.6.3",
        analyze_temperature,
        why={
            "temp_goes_down": "书的问题 / finding about the book: 三个种子、两层共六个学到的温度全部大于 1（1.1–3.0）："
            "优化器把注意力往“更平”推，方向是对的，书中“往坏的方向走”没有复现；但幅度远远不够（要抵消需要 √256 = 16），"
            "第 0 层的熵仍停在 0.0006–0.0014，验证 loss 5.12–5.18 与不缩放相同，救不回（见 temp_does_not_rescue）/ "
            "all six learned temperatures rose above 1 (1.1–3.0): the optimizer pushes towards flatter attention, "
            "the right direction, not the book's 'wrong way'; but far too little (16 = √256 would be needed), so "
            "layer-0 entropy stays at 0.0006–0.0014 and nothing is rescued"
        },
        runs=lambda scale: [R.temperature_run(scale, s) for s in scale.seed_list()],
        min_runs=lambda scale: [R.temperature_run(scale, scale.seed_list()[0])],
    ),
    Experiment(
        "heads",
        "§1.8.5",
        "头部画像 / head portrait",
        "层 0 头 0 有 77% 的注意力给自己，层 0 头 1 有 45% 给紧邻左边 / L0H0 attends to itself (0.77), "
        "L0H1 to the previous character (0.45)",
        "attnlab heads runs/case/small_scaled_s20261014/ckpt.pt --out data/head_portrait.json",
        analyze_heads,
        why={
            "self_head": "未解释 / unexplained: 本仓库的小模型在层 0 学出了“前一位”头（三个种子 prev 0.48 ± 0.04），但没有学出书中"
            "L0·H0 那样对角 0.77 的“看自己”头；哪种头出现取决于种子与训练细节，书中的画像没有复现 / "
            "our model formed a previous-token head but no self-attending head; the book's L0H0 did "
            "not reproduce"
        },
    ),
    Experiment(
        "kv_cache",
        "§1.8.7",
        "KV 缓存与 GQA/MQA / the KV cache, GQA and MQA",
        "KV 缓存 = 2 × n_layer × n_head × d_head × L × b；Llama-2 70B 每 token 2.6 MB，GQA(g=8) 0.33 MB，"
        "MQA 0.04 MB；MQA 损失一些质量，GQA 损失很小 / eq. 1.20; MQA loses some quality, GQA little",
        "attnlab book --only §1.8.7",
        analyze_kv,
        why={
            "mqa_costs_some_quality": "三个种子分不开 / three seeds cannot separate it: 同一种子、同一批数据下 MQA − MHA 是 "
            "+0.077、−0.014、+0.088（均值 0.050 ± 0.056）：方向和书一致，但在这个 42 万参数的模型上还在种子噪声之内；"
            "只比均值时这条曾经 PASS / seed for seed MQA − MHA is +0.077, −0.014, +0.088: the book's direction, "
            "within seed noise at this size (it passed when only the means were compared)"
        },
        runs=_seeded(lambda sc, s: [R.kv_run(sc, g, s) for g in (4, 2, 1)]),
        min_runs=lambda scale: [],
    ),
    Experiment(
        "positions",
        "§1.9",
        "位置编码：三种方案与不用位置编码 / positions: three schemes and none",
        "注意力把输入当成集合；层 0 头 1 的“看前一位”模式是位置编码在起作用的证据，没有位置编码这些头就学不会"
        "（自测 6）/ without positions the previous-token head cannot form (self-test 6, §1.9.7)",
        "attnlab book --only §1.9",
        analyze_positions,
        why={
            "three_schemes_close": "协议差异，已由对照实验证实 / protocol, confirmed by a control run: 正弦位置表按原样"
            "加到词向量上，每个位置向量的范数是 8.0，而词向量初始化（σ = 0.02）的范数只有 0.22：位置信号比字本身大 36 倍，"
            "把字淹没了（验证 loss 4.63，比不用位置编码的 4.35 还差）。对照：像原始 Transformer 那样把词向量乘 √d_model"
            "（Config.emb_scale），其余不变，三个种子 4.112、4.251、4.125，均值 4.16，与可学习（4.07）、RoPE（4.11）"
            "相差不到 0.1（sinusoidal_scale_control PASS）。这条论断按本章模型的写法判定，所以仍是 FAIL / the "
            "sinusoidal table is added as is (norm 8.0 per position) to token embeddings of norm 0.22: position "
            "drowns the characters 36 to 1 (val 4.63, worse than no positions at 4.35). Control: the same model with "
            "token embeddings x sqrt(d_model) as in the original Transformer (Config.emb_scale) reaches 4.112, "
            "4.251, 4.125 (mean 4.16), within 0.1 of learned (4.07) and RoPE (4.11). The claim is judged on this "
            "chapter's model as written, so it stays a FAIL"
        },
        runs=_seeded(lambda sc, s: [R.position_runs(sc, k, s) for k in (*POS_KINDS, POS_CONTROL)]),
        min_runs=_first_seed(lambda sc, s: [R.position_runs(sc, k, s) for k in POS_KINDS]),
    ),
    Experiment(
        "failures",
        "§1.11.7",
        "四个注入的 bug / the four injected bugs",
        "① 掩码用 0 loss 反而更低；② 缩放在 softmax 之后行和 = 0.177；③ 缺数值稳定在这个规模看不出来；"
        "④ 误用 d_k 注意力退化成均匀（熵 0.9989）",
        "attnlab failures",
        analyze_failures,
    ),
    Experiment(
        "dynamics",
        "§1.12.4",
        "头部特化的训练动态 / how heads specialise",
        "训练 100、500、1500 步各存一次，看“前一位头”的 prev 权重是怎么涨起来的；书中没做这个实验 / "
        "the book leaves this open",
        "attnlab book --only §1.12.4",
        analyze_dynamics,
        runs=_seeded(lambda sc, s: [R.baseline(sc, s)]),
        min_runs=_first_seed(lambda sc, s: [R.baseline(sc, s)]),
    ),
    Experiment(
        "ablation",
        "§1.13.4",
        "消融清单 / the ablation checklist",
        "一次只关一个：缩放（小模型影响小）、残差（训不动）、LayerNorm（抖动、慢）、权重共享（参数 +36%）、"
        "位置编码（学不会顺序）、warmup（前期尖刺）、梯度裁剪（偶发 nan）",
        "attnlab book --only §1.13.4",
        analyze_ablation,
        why={
            "ablate_no_clipping": "规模差异，已由测量解释 / scale, explained by measurement: 裁剪只在梯度出现尖峰时起作用，"
            "而这个小模型 warmup 之后没有尖峰：基线只有 1.2% 的步超过阈值 1.0，最大 1.58；不裁剪的运行最大 1.8"
            "（ablate_clipping_idle）。AdamW 的更新对梯度的整体缩放几乎不敏感，所以偶尔削掉一点不改变训练："
            "验证 loss 只差 +0.036，1500 步没有 NaN。尖峰确实存在于别处：塌缩的大模型 warmup 之后梯度范数到 32.7，"
            "书中的“偶发 nan”要在那样的条件下才会出现 / clipping only acts on a spike, and this small model had "
            "none after warmup (baseline over the threshold on 1.2% of steps, at most 1.58; unclipped at most 1.8); "
            "the collapsed big model does spike (32.7)"
        },
        runs=_first_seed(lambda sc, s: [R.ablation_run(sc, c, s) for c in ABL_ORDER]),
    ),
    Experiment(
        "timing",
        "§1.14.2",
        "注意力耗时 / attention timing",
        "RTX A6000 上 SDPA（8 头、d_head 64、因果）：n=512 0.082 ms … n=8192 8.263 ms；n 翻倍耗时涨约 3–4 倍",
        "attnlab book --only §1.14.2",
        analyze_timing,
        remeasure=False,
        why={
            "timing_book_exponent": "本机是 CPU：SDPA 在这里要做满 n² 的运算并读写中间结果，n=8192 时"
            "超出缓存，翻倍比到了 4 以上；书中 3–4 倍来自 GPU 上的 FlashAttention 不把 n×n 矩阵写进显存 / "
            "on this CPU the kernel does the full n² work and spills caches at n = 8192; the book's "
            "×3–4 comes from FlashAttention on a GPU"
        },
    ),
    Experiment(
        "deep",
        "§1.18.5",
        "加深到 4 层 / four layers (§1.18.5 ③)",
        "“看 4 层的模型能不能学出更明显的层间分工” / does a division of labour between layers appear?",
        "attnlab book --only §1.18.5",
        analyze_deep,
        why={
            "deep_better": "已由对照实验解释：受限于数据，不是步数 / explained by the control: data-limited, not "
            "step-limited. 1500 步时 4 层欠拟合（训练 loss 最后 100 步 3.86 对 2 层 3.77）。把整个计划拉长到 3000 步后，"
            "4 层对训练集拟合得更好（3.17 对 3.25），但两者的验证 loss 都在 1400–2000 步见底后回升：约 23 万字的训练集"
            "到 1600 步已被看了约 14 遍，之后是过拟合。4 层最好的验证 loss（4.084、4.047、4.071）对 2 层（4.061、4.120、"
            "4.075）只在两个种子上更低，均值差 0.02，在种子噪声内。多出的两层在这个语料上换来的是训练集上的拟合，"
            "不是泛化；层间分工也不明显（各层熵 0.78–0.90，前一位权重 0.14–0.19）/ at 1500 steps four layers underfit "
            "(train 3.86 vs 3.77); stretched to 3000 steps they fit the training set better (3.17 vs 3.25) but both "
            "overfit after 1400–2000 steps (about 14 passes over 231k characters by step 1600), and the best "
            "validation loss of four layers is lower on 2 of 3 seeds only (mean 0.02, within seed noise)",
            "layer_division_of_labour": "书提出的是一个问题，这里的答案是“没有” / the book asks; the answer here is no: "
            "最后一层与第 0 层的平均注意力距离之差在三个种子上是 +0.55、−0.17、−0.12（均值 0.09 ± 0.40），"
            "只有一个种子像“浅层局部、深层全局”（只看第一个种子时这条曾经 PASS）。训练加倍后三个种子都略为正"
            "（+0.44、+0.40、+0.06，均值 0.30 < 2 sd 0.42）：有迹象，但不到种子噪声之外。与 §1.8.5 两层模型的"
            "layer0_local_layer1_global 一致 / last-minus-first mean distance +0.55, −0.17, −0.12 over seeds (one seed "
            "alone passed); with twice the steps +0.44, +0.40, +0.06: a hint, within seed noise; as §1.8.5 in two layers",
            "deep_better_long": "训练前的预测错了（我们的，不是书的）/ our prediction was wrong: 拉长训练并没有让 4 层在"
            "每个种子上都更好：最终验证 loss 4 层 4.161、4.124、4.141，2 层 4.117、4.167、4.154，两者都比 1500 步时差"
            "（过拟合，见 deep_better）。“只是没训够”不成立 / stretching the schedule did not make four layers better on "
            "every seed; both overfit, so 'only undertrained' is wrong (see deep_better)",
        },
        prediction=PREDICTION_DEEP,
        runs=_seeded(
            lambda sc, s: [R.deep_run(sc, s), R.baseline(sc, s)] + [R.deep_long_run(sc, n, s) for n in (4, 2)]
        ),
        min_runs=_first_seed(lambda sc, s: [R.deep_run(sc, s), R.baseline(sc, s)]),
    ),
    Experiment(
        "exercise1",
        "§1.20.1",
        "练习一：n_head 2（d_head 64）/ exercise 1",
        "d_head 翻倍意味着 logits 标准差约翻 √2 倍，离饱和更近一步；但 64 仍远小于 256，差异应“不大但不为零”",
        "attnlab book --only §1.20.1",
        analyze_exercise1,
        why={
            "ex1_gap_small_not_zero": "三个种子还不足以说“不为零” / three seeds cannot establish 'not zero': 差距 0.33、"
            "0.28、0.08（均值 0.23 ± 0.13），三个都为正、方向和书一致，也远小于 d_head=256 的 0.92；但均值不到"
            " 2 sd（0.26），而 d_head=32 的差距（0.24、0.05、0.04）与它重叠。只看均值是否大于 0 时这条曾经 PASS / "
            "gaps 0.33, 0.28, 0.08: all positive and far below d_head 256's 0.92, but the mean is under 2 sd and "
            "overlaps d_head 32's gaps (it passed when only 'mean > 0' was asked)"
        },
        runs=_seeded(
            lambda sc, s: (
                [R.exercise1_run(sc, b, s) for b in (False, True)]
                + [R.case_run(sc, "small", b, s) for b in (False, True)]
            )
        ),
        min_runs=_first_seed(
            lambda sc, s: (
                [R.exercise1_run(sc, b, s) for b in (False, True)]
                + [R.case_run(sc, "small", b, s) for b in (False, True)]
            )
        ),
    ),
    Experiment(
        "sweep",
        "§1.20.2",
        "练习二（已提交的单种子扫描）/ exercise 2, the committed one-seed sweep",
        "d_head 32、64、96、128、192、256，缩放与不缩放各一次，找差距开始明显上升的位置",
        "attnlab sweep --grid d_head=32,64,96,128,192,256 --grid scaled=true,false",
        analyze_sweep_committed,
        order=(1, 20, 2, 1),
    ),
    Experiment(
        "exercise2",
        "§1.20.2",
        "练习二：三个种子与固定 d_model / exercise 2 at 3 seeds",
        "“什么时候会崩”不是一个通用常数，是你这个系统的属性 / the critical size is a property of your system",
        "attnlab book --only exercise2",
        analyze_exercise2,
        prediction=PREDICTION_EX2,
        runs=ex2_runs,
        min_runs=ex2_min_runs,
        order=(1, 20, 2, 0),
    ),
    Experiment(
        "markov",
        "§1.22.2",
        "检查点②：马尔可夫下限 / checkpoint ②: the Markov floor",
        "注意力层退化后“等价于一个固定的一阶马尔可夫模型”；这个 42 万参数的模型还能把 loss 降到多少？"
        "（5.18）/ the dead-attention model is a fixed first-order transition",
        "attnlab book --only markov",
        analyze_markov,
        order=(1, 22, 2, 9),
        why={
            "dead_attention_near_markov": "塌缩的大模型（5.18）比平滑二元模型（4.80）还差 0.38：注意力只看"
            "一个固定位置（不一定是前一位），模型连“前一个字”都用不好，所以不“等价于一阶马尔可夫”，而是更差 / "
            "the collapsed model is 0.38 worse than a smoothed bigram: attention stuck on one fixed "
            "position does not even use the previous character reliably"
        },
    ),
]
