"""§1.8.7–§1.8.8: the KV cache formula, and what GQA and MQA cost in quality.

Runs: the chapter's model with 4 KV heads (MHA, the case's small scaled run),
2 (GQA) and 1 (MQA), every seed. Measured: the bytes the model's cache really
holds against eq. 1.20, the book's Llama-2 70B numbers, and each seed's final
validation loss. Judged: the formula exactly; the quality costs seed by seed
(same seed, same batches) with the effect rule.
"""

from __future__ import annotations

import math

import torch

from .. import stats as S
from ..book import book_values
from ..runner import Run
from ..verdicts import claim
from . import runs as R
from .common import column, final_val, paired, rnd, seed_table
from .labbook import Context, Experiment, Outcome

SCHEMES = {4: "MHA", 2: "GQA g=2", 1: "MQA"}
# fixed before looking: a quality loss below 0.01 nats (1% perplexity) is not "some quality"
SESOI_QUALITY = 0.01
# §1.2's "几乎没差别 … 差 0.17": the chapter's scale of a loss difference that does not matter
GQA_SMALL = book_values("case_loss_1_2_and_1_4")["gap_small"]


def kv_run(scale: R.Scale, n_kv_head: int, seed: int) -> Run:
    """§1.8.8: GQA (2 KV heads) and MQA (1) at the small configuration; 4 = the baseline (MHA)."""
    if n_kv_head == 4:
        return R.baseline(scale, seed)
    return Run(f"kv{n_kv_head}_s{seed}", scale.cfg(**R.SIZES["small"], n_kv_head=n_kv_head, seed=seed), group="gqa")


def runs_of_seed(scale, seed: int) -> list:
    return [kv_run(scale, g, seed) for g in SCHEMES]


def measure(ctx: Context) -> Outcome:
    from ..attention.memory import kv_cache_bytes
    from ..model import KVCache, TinyGPT

    per_tok = {k: kv_cache_bytes(80, g, 128, 1) / 1e6 for k, g in (("MHA", 64), ("GQA_g8", 8), ("MQA", 1))}
    held = []  # the formula against the cache our own model really holds (fp32, the small configuration)
    base = ctx.scale.cfg(**R.SIZES["small"])
    for g in SCHEMES:
        cfg = base.replace(n_kv_head=g, device="cpu")
        model = TinyGPT(cfg).eval()
        caches = [KVCache() for _ in range(cfg.n_layer)]
        with torch.no_grad():
            model(torch.zeros(1, cfg.block_size, dtype=torch.long), kv_cache=caches)
        held.append(
            {
                "n_kv_head": g,
                "scheme": SCHEMES[g],
                "cache_bytes_measured": sum(
                    c.k.numel() * c.k.element_size() + c.v.numel() * c.v.element_size() for c in caches
                ),
                "cache_bytes_formula": kv_cache_bytes(cfg.n_layer, g, cfg.d_head, cfg.block_size, bytes_per=4),
                "params": model.num_params(),
            }
        )
    table = seed_table(
        ctx,
        lambda s: runs_of_seed(ctx.scale, s),
        lambda fs: {f"val_{g}": final_val(f) for g, f in zip(SCHEMES, fs)},
        (ctx.previous or {}).get("per_seed", {}),
    )
    means = {g: (sum(v) / len(v) if (v := column(table, f"val_{g}")) else None) for g in SCHEMES}
    res = {
        "headers": [
            "方案 / scheme",
            "KV 头 / kv heads",
            "缓存字节（实测）/ cache bytes held",
            "式 1.20 / formula",
            "参数 / params",
            f"验证 loss（{len(table)} 个种子均值）/ val (mean)",
        ],
        "rows": [
            [
                m["scheme"],
                m["n_kv_head"],
                m["cache_bytes_measured"],
                m["cache_bytes_formula"],
                m["params"],
                rnd(means[m["n_kv_head"]]) if means[m["n_kv_head"]] is not None else "未运行 / not run yet",
            ]
            for m in held
        ],
        "llama2_70b_MB_per_token": {k: rnd(v, 3) for k, v in per_tok.items()},
        "book_MB_per_token": book_values("memory_formulas")["kv_cache_per_token_MB"],
        "ours": held,
        "per_seed": table,
    }
    notes = [] if table else ["GQA/MQA 训练未运行 / the trained runs are not run yet; the byte counts need none"]
    return Outcome(results=res, notes=notes, status="done" if len(table) >= ctx.scale.seeds else "partial")


def judge(res: dict) -> list[dict]:
    book = res["book_MB_per_token"]
    out = [
        claim(
            f"kv_formula_{k}",
            "§1.8.7 / §1.8.8",
            f"式 1.20：Llama-2 70B 每 token KV 缓存 {book[k]} MB（{k}）/ eq. 1.20",
            S.exact(abs(v - book[k]) <= 0.006 + 0.02 * v, f"{v} MB vs the book's {book[k]} MB, to its 2 digits", v),
            inputs={"formula_MB": v, "book_MB": book[k]},
            book=book[k],
        )
        for k, v in res["llama2_70b_MB_per_token"].items()
    ]
    ours = res["ours"]
    out.append(
        claim(
            "kv_formula_matches_model",
            "§1.8.7",
            "式 1.20 等于本模型 KV 缓存实际占用的字节数 / eq. 1.20 equals the bytes our model's KV cache holds",
            S.exact(
                all(m["cache_bytes_measured"] == m["cache_bytes_formula"] for m in ours),
                "held == formula for " + ", ".join(m["scheme"] for m in ours),
            ),
            inputs={
                m["scheme"]: f"{m['cache_bytes_measured']} B held, {m['cache_bytes_formula']} B by eq. 1.20"
                for m in ours
            },
            kind="sanity",
        )
    )
    table = res.get("per_seed") or {}
    if not table:
        return out
    mqa = paired(table, "val_1", "val_4")
    gqa = paired(table, "val_2", "val_4")
    mqa_gqa = paired(table, "val_1", "val_2")
    out.append(
        claim(
            "mqa_costs_some_quality",
            "§1.8.8",
            "MQA 把缓存降到 1/n_head，“实践中这会损失一些质量” / MQA loses some quality",
            S.effect(mqa, direction=+1, sesoi=SESOI_QUALITY),
            inputs={"MQA_minus_MHA": mqa, "sesoi": SESOI_QUALITY},
            book="损失一些质量",
        )
    )
    # "质量损失很小" bounds GQA's cost from above: its loss above MHA's stays below the chapter's own scale of a
    # difference that does not matter, §1.2's "几乎没差别 … 差 0.17" (one-sided 97.5 % upper bound)
    out.append(
        claim(
            "gqa_small_loss",
            "§1.8.8",
            "GQA 是折中，“质量损失很小”：GQA 比 MHA 高出的 loss 小于本章“几乎没差别”的 0.17（§1.2）/ GQA loses little: "
            "its loss exceeds MHA's by less than the chapter's 'almost no difference', 0.17",
            S.band(gqa, -math.inf, GQA_SMALL),
            inputs={"GQA_minus_MHA": gqa, "MQA_minus_GQA": mqa_gqa, "upper": GQA_SMALL},
            book="质量损失很小",
            expected=f"band: the 95% t-interval of GQA − MHA (same seed) below {GQA_SMALL} (an upper bound: “很小”); "
            "MQA − GQA shown",
        )
    )
    return out


WHY = {
    "gqa_small_loss": lambda r: (
        "GQA 比 MHA 高出的 loss 的区间上端没有低于 0.17 / the interval of GQA − MHA does not stay below 0.17"
    ),
    "mqa_costs_some_quality": lambda r: (
        "MQA 比 MHA 更好，方向与书相反 / MQA is better than MHA here, against the book's direction"
    ),
}

EXPERIMENT = Experiment(
    "kv_cache",
    "§1.8.7",
    "KV 缓存与 GQA/MQA / the KV cache, GQA and MQA",
    "KV 缓存 = 2 × n_layer × n_head × d_head × L × b；Llama-2 70B 每 token 2.6 MB，GQA(g=8) 0.33 MB，"
    "MQA 0.04 MB；MQA 损失一些质量，GQA 损失很小 / eq. 1.20; MQA loses some quality, GQA little",
    "attnlab book --only §1.8.7",
    measure=measure,
    judge=judge,
    runs_of_seed=runs_of_seed,
    why=WHY,
)
