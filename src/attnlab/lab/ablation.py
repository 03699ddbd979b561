"""§1.13.4: the ablation checklist, one design element off at a time, over seeds.

Runs: the chapter's model (the case's small scaled run) and seven changes of one
Config field each (``runs.ablation_run``), every seed; the same seed means the
same initial weights where shapes agree and the same batches, so every claim is a
paired difference seed by seed. Measured per run: the final validation loss, whether
it diverged, the largest gradient norm, the largest step-to-step rise of the training
loss (over the run and over its first seventh) and, for the baseline and the run
without clipping, how much work clipping had after warmup.

The committed record of the runs is the per-seed table of data/lab_book/ablation.json (the
baseline and the unscaled model are the case's small pair, the model without positions is
§1.9's: shared runs, measured once). Further seeds join from their run folders
(``common.seed_table``).

Judged: each row of the chapter's table in its own words, by the effect rule on the
paired differences (spikes and jitter as log ratios against the baseline), "small on
the small model" by equivalence, the parameter count exactly; "偶发 nan" is not
testable by a few runs (NA unless a run without clipping did diverge).

``attnlab ablate`` (:func:`run`) trains the checklist once, on any configuration: the baseline and
every change from the same seed (same initial weights where the shapes agree, same batches); only
one Config field differs. Each row reports the final validation loss, its difference to the
baseline, whether the run diverged, the largest gradient norm and loss jump (warmup and clipping
show up there, not in the final loss) and the parameter count (untied weights add an output matrix).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .. import stats as S
from ..book import book_values
from ..config import ABLATIONS, Config
from ..runner import Run
from ..tools import ExperimentError, format_table, provenance
from ..verdicts import claim
from . import runs as R
from .common import number_list, rnd, seed_table
from .labbook import Context, Experiment, Outcome

if TYPE_CHECKING:
    from ..runner import ExecutorOptions


CHANGES = ABLATIONS  # the checklist, one home: attnlab.config.ABLATIONS
LABELS = {
    "baseline": ("基线", "baseline", "—"),
    "no_scaling": ("去掉 √d_k 缩放", "no scaling", "小模型上影响小，大模型上灾难 / small here, disastrous when large"),
    "no_residual": ("去掉残差", "no residual", "直接训不动 / does not train"),
    "no_layernorm": ("去掉 LayerNorm", "no LayerNorm", "loss 抖动、收敛慢 / noisy, slow"),
    "untied": ("不共享权重", "untied weights", "参数多 36%，效果略降 / +36% params, slightly worse"),
    "no_positions": ("去掉位置编码", "no positions", "完全学不会顺序 / cannot learn order"),
    "no_warmup": ("去掉 warmup", "no warmup", "前期 loss 尖刺 / early loss spikes"),
    "no_clipping": ("去掉梯度裁剪", "no clipping", "偶发 nan / occasional NaN"),
}


def checklist_row(history, model, seconds: float) -> dict:
    """One row of the checklist from a finished run (the lab book reads its runs the same way)."""
    recs = history.records
    losses = [r["loss"] for r in recs]
    val = history.val
    val_end = val[-1][1] if val else None
    jumps = [b - a for a, b in zip(losses, losses[1:]) if math.isfinite(a) and math.isfinite(b)]
    diverged = history.diverged_at is not None or val_end is None or not math.isfinite(val_end)
    return {
        "val_loss_end": val_end,
        "loss_start": losses[0] if losses else None,
        "loss_end": losses[-1] if losses else None,
        "diverged": diverged,
        "diverged_at": history.diverged_at,
        "max_grad_norm": max((r["grad_norm"] for r in recs if math.isfinite(r["grad_norm"])), default=None),
        "max_loss_jump": max(jumps, default=0.0),
        "params": model.num_params(),
        "seconds": round(seconds, 3),
    }


def clip_activity(records: list[dict], grad_clip: float, warmup: int) -> dict:
    """How much work gradient clipping had after warmup: the share of steps whose
    gradient norm (recorded before clipping) exceeded ``grad_clip``, and the largest
    norm, i.e. the strongest shrink clipping applied or would have applied."""
    norms = [r["grad_norm"] for r in records if r["step"] >= warmup and math.isfinite(r["grad_norm"])]
    if not norms or grad_clip <= 0:
        raise ExperimentError("clip_activity needs finite gradient norms after warmup and a positive threshold")
    return {
        "steps": len(norms),
        "clipped_share": sum(g > grad_clip for g in norms) / len(norms),
        "max_grad_norm": max(norms),
        "max_over_threshold": max(norms) / grad_clip,
    }


def run(
    text: str,
    cfg: Config | None = None,
    *,
    steps: int | None = None,
    changes: list[str] | None = None,
    corpus: str | None = None,
    root: str | Path | None = None,
    options: ExecutorOptions | None = None,
) -> dict:
    """Train the baseline and each one-variable change; Δ is against the baseline.

    The runs go through :mod:`attnlab.runner` into ``root/<change>`` (a temporary
    folder when None), so a rerun into the same root reuses what finished; ``options``
    says how (attnlab.runner.ExecutorOptions; default: serial, no progress bar).
    """
    import tempfile

    from ..runner import ExecutorOptions, Run, execute

    options = options or ExecutorOptions(progress=False)

    cfg = cfg or Config()
    if steps is not None:
        cfg = cfg.replace(max_steps=steps)
    names = changes or list(CHANGES)
    unknown = [n for n in names if n not in CHANGES]
    if unknown:
        raise ExperimentError(f"unknown change(s) {', '.join(unknown)}; known: {', '.join(CHANGES)}")
    if "baseline" not in names:
        names = ["baseline"] + names
    rows: dict[str, dict] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attnlab-ablate-") as tmp:
        done = execute(
            [Run(name, cfg.replace(**CHANGES[name])) for name in names],
            text,
            root if root is not None else tmp,
            options,
            desc="ablate",
        )
        for name in names:
            f = done[name]
            rows[name] = {
                "change": CHANGES[name],
                "config": cfg.replace(**CHANGES[name]).to_dict(),
                **checklist_row(f.history, f.model, f.seconds),
            }
    base = rows["baseline"]
    for r in rows.values():
        ok = r["val_loss_end"] is not None and base["val_loss_end"] is not None and not r["diverged"]
        r["delta_val_loss"] = r["val_loss_end"] - base["val_loss_end"] if ok else None
        r["params_ratio"] = r["params"] / base["params"]
    return {
        "kind": "ablation_checklist",
        "config": cfg.to_dict(),
        "corpus": corpus or "attnlab/data/corpus.txt",
        "rows": rows,
        "seconds": round(time.perf_counter() - t0, 3),
        **provenance(),
    }


def checklist_table(result: dict) -> str:
    headers = [
        "要素 / change",
        "验证 loss / val",
        "Δ val",
        "发散 / diverged",
        "最大梯度 / max grad",
        "最大跳升 / max jump",
        "参数 / params",
        "书中说明 / book",
    ]
    rows = []
    for name, r in result["rows"].items():
        zh, en, book = LABELS.get(name, (name, name, ""))
        rows.append(
            [
                f"{zh} / {en}",
                r["val_loss_end"],
                None if r["delta_val_loss"] is None else f"{r['delta_val_loss']:+.3f}",
                "是 yes" if r["diverged"] else "否 no",
                r["max_grad_norm"],
                r["max_loss_jump"],
                f"{r['params']:,} ({r['params_ratio'] - 1:+.0%})",
                book,
            ]
        )
    return format_table(headers, rows)


# ------------------------------------------------------------ the lab-book entry
ABL_ORDER = tuple(ABLATIONS)  # the baseline and the seven changes (the checklist's one home: config.ABLATIONS)
SECTION = "§1.13.4"

# A spike is what clipping exists for: the collapsed big model's gradient norm reaches
# 30× the threshold after warmup (runs/case/big_unscaled); below 5× and on a few
# percent of steps, clipping only trims, and Adam's update barely notices a uniform trim.
CLIP_SPIKE, CLIP_SHARE = 5.0, 0.05
# fixed before looking: a loss difference below 0.01 nats (1% perplexity) is no effect (as §1.8.8's); it is the
# smallest difference the chapter's own numbers show (it prints every loss to 0.01: "4.17 / 4.00 / 5.18 / 4.23")
SESOI_LOSS = 0.01
# fixed from the words before the second and third seeds (the first seed's ratios were known): a
# largest jump (or gradient norm) within 1.5× the baseline's is what batch-to-batch noise gives; a
# spike ("尖刺"), or jitter ("抖动"), stands out beyond that
SPIKE_RATIO = 1.5
SESOI_SPIKE = math.log(SPIKE_RATIO)
# "直接训不动": the run loses most (more than half) of what the baseline learns beyond a model of
# character frequencies alone (the corpus's unigram entropy)
LOST_SHARE = 0.5


def sesoi_lost_share(unigram_entropy: float) -> float:
    """The smallest effect of interest above LOST_SHARE, from the chapter's own "训不动" (§1.18.5 ①: "复现'训不动'"
    is the big unscaled model, §1.4: 5.18 against the scaled 4.23): the share it loses of what the scaled model
    learns beyond the unigram entropy, (5.18 − 4.23) / (H1 − 4.23) ≈ 0.74, minus LOST_SHARE. A run surely
    losing less than LOST_SHARE + this has not failed to train the way the chapter's example does. On a
    corpus the formula does not fit (a tiny test corpus whose unigram entropy is near or below the book's
    4.23) it gives no positive size; there the SESOI is MIN_SESOI_SHARE, so the rule can still FAIL."""
    b = book_values("case_loss_1_2_and_1_4")
    room = unigram_entropy - b["big_d256_scaled"]["end"]
    lost = (b["big_d256_unscaled"]["end"] - b["big_d256_scaled"]["end"]) / room if room > 0 else 0.0
    return max(round(lost - LOST_SHARE, 4), MIN_SESOI_SHARE)


MIN_SESOI_SHARE = 0.01  # a share of 1 %: the smallest size the rule is held to on corpora unlike the book's


BOOK_EXTRA_PARAMS = 0.36  # "参数多 36%"
EARLY_PART = 7  # "前期": the first seventh of training (the first 214 of 1500 steps)


# the change each claim is about (the runs one more seed adds for it, with the baseline)
CHANGE_OF = {
    "ablate_no_scaling": "no_scaling",
    "ablate_no_residual": "no_residual",
    "ablate_no_layernorm": "no_layernorm",
    "ablate_untied": "untied",
    "ablate_no_positions": "no_positions",
    "ablate_no_warmup": "no_warmup",
    "ablate_no_warmup_grad_spike": "no_warmup",
    "ablate_no_clipping": "no_clipping",
    "ablate_clipping_idle": "no_clipping",
}


def _book_gap_big() -> float:
    return book_values("case_loss_1_2_and_1_4")["gap_big"]


def ablation_run(scale: R.Scale, change: str, seed: int) -> Run:
    """One row of the checklist; the baseline, "no scaling" and "no positions" are runs other entries
    (the case, §1.9) train too, under their names."""
    if change == "baseline":
        return R.baseline(scale, seed)
    if change == "no_scaling":
        return R.case_run(scale, "small", False, seed)
    if change == "no_positions":
        return R.position_run(scale, "none", seed)
    return Run(f"abl_{change}_s{seed}", scale.cfg(**R.SIZES["small"], **ABLATIONS[change], seed=seed), group="ablate")


def runs_of_seed(scale: R.Scale, seed: int) -> list:
    return [ablation_run(scale, c, seed) for c in ABL_ORDER]


# ------------------------------------------------------------------------ one run's numbers
def _numbers(losses: list[float], norms: list[float], steps: list[int], val_end, diverged_at, cfg) -> dict:
    """The checklist numbers of one run from its per-step training loss and gradient norm
    (recorded before clipping), as checklist_row reads them."""

    jumps = [b - a for a, b in zip(losses, losses[1:]) if math.isfinite(a) and math.isfinite(b)]
    early = losses[: max(2, len(losses) // EARLY_PART)]
    diverged = diverged_at is not None or val_end is None or not math.isfinite(val_end)
    row = {
        "val_loss_end": None if diverged else rnd(val_end, 6),
        "diverged": diverged,
        "max_grad_norm": rnd(max((g for g in norms if math.isfinite(g)), default=math.nan), 6) if norms else None,
        "max_loss_jump": rnd(max(jumps, default=0.0), 6),
        "early_max_jump": rnd(max((b - a for a, b in zip(early, early[1:])), default=0.0), 6),
    }
    if cfg is not None and norms:  # the baseline's threshold and warmup, also for the run that has none
        a = clip_activity([{"step": s, "grad_norm": g} for s, g in zip(steps, norms)], cfg.grad_clip, cfg.warmup)
        row["clip"] = {k: v if k == "steps" else rnd(v, 6) for k, v in a.items()}
    return row


def _clip_cfg(scale: R.Scale, change: str):
    return R.baseline(scale, R.BOOK_SEED).cfg if change in ("baseline", "no_clipping") else None


def _measure_run(scale: R.Scale, change: str, f) -> dict:
    recs = f.history.records
    val = f.history.val
    return _numbers(
        [r["loss"] for r in recs],
        [r["grad_norm"] for r in recs],
        [r["step"] for r in recs],
        val[-1][1] if val else None,
        f.history.diverged_at,
        _clip_cfg(scale, change),
    )


def _params(scale: R.Scale) -> dict:
    """Parameter count of each change's model (a function of its Config; nothing trained)."""
    from ..model import TinyGPT

    return {c: TinyGPT(ablation_run(scale, c, R.BOOK_SEED).cfg.replace(device="cpu")).num_params() for c in ABL_ORDER}


def _unigram(ctx: Context) -> float:
    """What a model that learns character frequencies alone reaches (nats)."""
    from ..tokenizer import CharTokenizer
    from .common import unigram_entropy

    cfg = R.baseline(ctx.scale, R.BOOK_SEED).cfg
    return unigram_entropy(ctx.text, CharTokenizer(ctx.text, cfg.vocab_size))


def measure(ctx: Context) -> Outcome:
    stored = (ctx.previous or {}).get("per_seed", {})
    tables = {
        c: seed_table(
            ctx,
            lambda s, c=c: [ablation_run(ctx.scale, c, s)],
            lambda fs, c=c: _measure_run(ctx.scale, c, fs[0]),
            {s: rows[c] for s, rows in stored.items() if c in rows},
        )
        for c in ABL_ORDER
    }
    seeds = sorted({s for t in tables.values() for s in t}, key=int)
    per_seed = {s: {c: tables[c][s] for c in ABL_ORDER if s in tables[c]} for s in seeds}
    res = tabulate(per_seed, _params(ctx.scale), rnd(_unigram(ctx), 6))
    complete = [s for s, rows in per_seed.items() if len(rows) == len(ABL_ORDER)]
    notes = [
        "每行只改一个要素；同一种子同一初始化、同一批数据，差值逐种子配对 / one change per row; every "
        "difference is paired seed by seed (same initial weights where shapes agree, same batches)",
        f"完整的种子 / seeds with every change: {len(complete)} ({', '.join(complete) or '—'})",
    ]
    return Outcome(results=res, notes=notes, status="done" if len(complete) >= ctx.scale.seeds else "partial")


# ------------------------------------------------------------------------------ the table
def tabulate(per_seed: dict, params: dict, unigram: float | None) -> dict:
    """The results (pure): the per-seed table, the parameter counts, and the checklist rows."""

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return rnd(sum(xs) / len(xs), 4) if xs else None

    rows = []
    for c in ABL_ORDER:
        got = [r[c] for r in per_seed.values() if c in r]
        if not got:
            continue
        rows.append(
            [
                f"{LABELS[c][0]} / {LABELS[c][1]}",
                len(got),
                mean(r["val_loss_end"] for r in got),
                mean(_paired(per_seed, c, "val_loss_end")) if c != "baseline" else 0.0,
                f"{sum(r['diverged'] for r in got)}/{len(got)}",
                mean(r.get("max_loss_jump") for r in got),
                mean(r.get("early_max_jump") for r in got),
                mean(r.get("max_grad_norm") for r in got),
                f"{params[c]:,} ({params[c] / params['baseline'] - 1:+.0%})" if c in params else None,
                LABELS[c][2],
            ]
        )
    return {
        "headers": [
            "要素 / change",
            "种子 / seeds",
            "验证 / val (mean)",
            "Δ val（配对均值 / paired mean）",
            "发散 / diverged",
            "最大跳升 / max jump",
            "前期跳升 / early jump",
            "最大梯度范数 / max grad norm",
            "参数 / params",
            "书中 / book",
        ],
        "rows": rows,
        "seeds": [int(s) for s in per_seed],
        "per_seed": per_seed,
        "params": params,
        "unigram_entropy": unigram,
        "thresholds": {
            "clip_spike": CLIP_SPIKE,
            "clip_share": CLIP_SHARE,
            "sesoi_loss": SESOI_LOSS,
            "spike_ratio": SPIKE_RATIO,
            "lost_share": LOST_SHARE,
        },
    }


# ---------------------------------------------------------------------------------- judge
def _paired(per_seed: dict, change: str, key: str, how: str = "diff") -> list[float]:
    """change − baseline (or log(change / baseline)) seed by seed, seeds that have both."""
    out = []
    for rows in per_seed.values():
        a, b = rows.get(change, {}).get(key), rows.get("baseline", {}).get(key)
        if a is None or b is None:
            continue
        if how == "log":
            if a <= 0 or b <= 0:
                continue
            out.append(math.log(a / b))
        else:
            out.append(a - b)
    return out


def _effect(values: list[float], sesoi: float) -> S.Judgement:
    return S.effect(values, direction=+1, sesoi=sesoi)


def _ratios(xs: list[float]) -> list[float]:
    return [rnd(math.exp(x), 4) for x in xs]


def _evidence(res: dict) -> dict[str, tuple[S.Judgement, dict[str, S.Judgement], dict]]:
    """Every claim's judgement, its named parts and its inputs, from the results alone (pure)."""
    t, params = res["per_seed"], res["params"]

    def col(c, key):
        return [rows[c][key] for rows in t.values() if c in rows and rows[c].get(key) is not None]

    out = {}
    d_scale = _paired(t, "no_scaling", "val_loss_end")
    margin = _book_gap_big() / 2
    out["ablate_no_scaling"] = (
        S.equivalence(d_scale, margin),
        {},
        {"no_scaling_minus_baseline": d_scale, "margin": margin},
    )

    h1 = res.get("unigram_entropy")
    shares = []
    for rows in t.values():
        a, b = rows.get("no_residual"), rows.get("baseline")
        if not a or not b or b.get("val_loss_end") is None or h1 is None:
            continue
        # a diverged run keeps nothing of what it learned
        shares.append(1.0 if a["diverged"] else (a["val_loss_end"] - b["val_loss_end"]) / (h1 - b["val_loss_end"]))
    j = (
        _effect([x - LOST_SHARE for x in shares], sesoi_lost_share(h1))
        if h1 is not None
        else S.na("number not stored: the corpus's unigram entropy; measured by attnlab book --only §1.13.4")
    )
    out["ablate_no_residual"] = (
        j,
        {},
        {
            "share_lost": [rnd(x, 4) for x in shares],
            "threshold": LOST_SHARE,
            "unigram_entropy": h1,
            "sesoi": None if h1 is None else rnd(sesoi_lost_share(h1), 4),
        },
    )

    jit = _paired(t, "no_layernorm", "max_loss_jump", "log")
    slow = _paired(t, "no_layernorm", "val_loss_end")
    parts = {"抖动 / jitter (log ratio)": _effect(jit, SESOI_SPIKE), "收敛慢 / slower": _effect(slow, SESOI_LOSS)}
    out["ablate_no_layernorm"] = (
        _all(parts),
        parts,
        {
            "max_jump_ratio": _ratios(jit),
            "log_max_jump_ratio": jit,
            "val_minus_baseline": slow,
            "sesoi_log_ratio": rnd(SESOI_SPIKE, 4),
            "sesoi_loss": SESOI_LOSS,
        },
    )

    worse = _paired(t, "untied", "val_loss_end")
    extra = params["untied"] / params["baseline"] - 1 if "untied" in params and "baseline" in params else None
    parts = {
        "参数 / params": S.exact(
            extra is not None and abs(extra - BOOK_EXTRA_PARAMS) <= 0.005,
            f"{extra:+.1%} parameters vs the book's +36%, to its 2 digits"
            if extra is not None
            else "params not stored",
            extra,
        ),
        "略降 / worse": _effect(worse, SESOI_LOSS),
    }
    out["ablate_untied"] = (
        _all(parts),
        parts,
        {"extra_params": rnd(extra, 4), "val_minus_baseline": worse, "sesoi_loss": SESOI_LOSS},
    )

    nopos = _paired(t, "no_positions", "val_loss_end")
    out["ablate_no_positions"] = (
        _effect(nopos, SESOI_LOSS),
        {},
        {"val_minus_baseline": nopos, "sesoi_loss": SESOI_LOSS},
    )

    spike = _paired(t, "no_warmup", "early_max_jump", "log")
    out["ablate_no_warmup"] = (
        _effect(spike, SESOI_SPIKE),
        {},
        {"early_jump_ratio": _ratios(spike), "log_early_jump_ratio": spike, "sesoi_log_ratio": rnd(SESOI_SPIKE, 4)},
    )
    grad = _paired(t, "no_warmup", "max_grad_norm", "log")
    out["ablate_no_warmup_grad_spike"] = (
        _effect(grad, SESOI_SPIKE),
        {},
        {
            "max_grad_norm_ratio": _ratios(grad),
            "no_warmup_max_grad_norm": col("no_warmup", "max_grad_norm"),
            "baseline_max_grad_norm": col("baseline", "max_grad_norm"),
            "sesoi_log_ratio": rnd(SESOI_SPIKE, 4),
        },
    )

    peaks = {
        f"{c} s{s}": rows[c]["clip"]["max_over_threshold"]
        for s, rows in t.items()
        for c in ("baseline", "no_clipping")
        if rows.get(c, {}).get("clip")
    }
    share = [c["clipped_share"] for c in col("baseline", "clip")]
    runs = col("no_clipping", "diverged")
    nan = [s for s, rows in t.items() if rows.get("no_clipping", {}).get("diverged")]
    if nan:  # an observed NaN is the book's "偶发 nan"
        j = S.exact(True, f"{len(nan)} of {len(runs)} runs without clipping diverged (seeds {', '.join(nan)})")
    else:
        d_clip = _paired(t, "no_clipping", "val_loss_end")
        top = max(peaks.values(), default=None)
        j = S.na(
            "“偶发”的事几次运行否定不了 / a few runs cannot refute 'occasional': "
            f"{len(runs)} run(s) without clipping, none diverged"
            + (
                f"; clipping only acts on a spike, and none came after warmup (largest norm {top:.3g}× the "
                f"threshold, the baseline clipped {max(share):.1%} of its steps at most)"
                if top is not None and top < CLIP_SPIKE and share
                else (f"; the largest norm after warmup was {top:.3g}× the threshold" if top is not None else "")
            )
            + (
                f"; val without clipping {', '.join(f'{x:+.3f}' for x in d_clip)} against the baseline"
                if d_clip
                else ""
            )
        )
    out["ablate_no_clipping"] = (j, {}, {"runs": len(runs), "diverged": len(nan)})

    if peaks and share:
        parts = {
            "largest norm / threshold": S.every(list(peaks.values()), 0.0, CLIP_SPIKE),
            "baseline's clipped share": S.every(share, 0.0, CLIP_SHARE),
        }
        j = _all(parts)
    else:
        parts = {}
        j = S.Judgement(S.INCONCLUSIVE, "every", 0, n_needed=S.MIN_SEEDS, detail="no clip activity measured yet")
    out["ablate_clipping_idle"] = (
        j,
        parts,
        {"max_over_threshold": list(peaks.values()), "baseline_clipped_share": share},
    )
    return out


def _all(parts: dict[str, S.Judgement]) -> S.Judgement:
    return S.all_of(list(parts.values()), " | ".join(f"{k}: {p.detail}" for k, p in parts.items()))


STATEMENTS = {  # claim id -> (section, the chapter's words and what is tested, the book's words)
    "ablate_no_scaling": (
        SECTION,
        "去掉 √d_k 缩放：“小模型上影响小，大模型上灾难”（小模型这一半）：|Δ| 小于大模型灾难（书中 0.95）的一半 / "
        "without the scale: small on the small model, within half the big model's 0.95",
        "小模型上影响小",
    ),
    "ablate_no_residual": (
        SECTION,
        "去掉残差：“直接训不动”：基线在一元模型（只学字频）之下学到的，丢掉一半以上 / without residuals the "
        "model does not train: it loses more than half of what the baseline learns beyond character frequencies",
        "直接训不动",
    ),
    "ablate_no_layernorm": (
        SECTION,
        "去掉 LayerNorm：“loss 抖动、收敛慢”：训练 loss 最大跳升高于基线（超过 1.5 倍为抖动），且同样步数后验证 loss "
        "更高 / without LayerNorm the loss jitters (largest rise beyond 1.5× the baseline's) and converges slower "
        "(higher validation loss after the same steps)",
        "loss 抖动、收敛慢",
    ),
    "ablate_untied": (
        SECTION,
        "不共享权重：“参数多 36%，效果略降” / untied weights: +36% parameters, slightly worse",
        "参数多 36%，效果略降",
    ),
    "ablate_no_positions": (
        SECTION,
        "去掉位置编码：验证 loss 变差（书中是“完全学不会顺序”；这里只检验 loss 变差：没有位置编码的模型仍看得见当前字，"
        "因果掩码也让它数得出前面有几个字，loss 说明不了它是否“完全”学不会顺序）/ without positions the validation "
        "loss is worse (the book says 'cannot learn order at all'; a loss cannot test 'at all')",
        "完全学不会顺序（只检验 loss 变差 / only 'worse' is tested）",
    ),
    "ablate_no_warmup": (
        SECTION,
        "去掉 warmup：“前期 loss 尖刺”：前七分之一训练里 loss 的最大跳升超过基线的 1.5 倍 / without warmup, early "
        "loss spikes: the largest rise in the first seventh of training beyond 1.5× the baseline's",
        "前期 loss 尖刺",
    ),
    "ablate_no_warmup_grad_spike": (
        "§1.18.3 / §1.13.4",
        "“如果一上来就用大学习率，会朝一个随机的方向猛冲一步”：去掉 warmup，梯度范数出现尖峰（最大值超过基线的 1.5 倍）/ "
        "full learning rate from step 0 lurches in a random direction: the gradient norm spikes beyond 1.5× the "
        "baseline's largest",
        "猛冲一步 / 前期尖刺",
    ),
    "ablate_no_clipping": (SECTION, "去掉梯度裁剪：“偶发 nan” / without clipping, an occasional NaN", "偶发 nan"),
    "ablate_clipping_idle": (
        SECTION,
        "这次运行里梯度裁剪没有可兜的东西：warmup 之后梯度范数没有尖峰 / clipping had nothing to catch here: "
        "no gradient spike after warmup",
        None,
    ),
}


def judge(res: dict) -> list[dict]:
    out = []
    for cid, (j, _, inputs) in _evidence(res).items():
        section, statement, book = STATEMENTS[cid]
        sanity = cid == "ablate_clipping_idle"
        out.append(
            claim(
                cid,
                section,
                statement,
                j,
                inputs=inputs,
                kind="sanity" if sanity else "book",
                book=book,
                expected=(
                    f"every run's largest norm < {CLIP_SPIKE:g} × threshold, the baseline clips < {CLIP_SHARE:.0%} "
                    "of steps"
                )
                if sanity
                else None,
            )
        )
    return out


# ------------------------------------------------------------------------------ the whys
def _failed(cid: str, res: dict) -> str:
    """The parts of a claim that fail, with their numbers."""
    j, parts, _ = _evidence(res)[cid]
    bad = [f"{k}: {p.detail}" for k, p in parts.items() if p.verdict == S.FAIL]
    return "; ".join(bad) or j.detail


def _why_no_scaling(res: dict) -> str:
    j, _, inputs = _evidence(res)["ablate_no_scaling"]
    return (
        f"去掉缩放的差距 {number_list(inputs['no_scaling_minus_baseline'], '+.3f')} 不在大模型灾难的一半（±{inputs['margin']:g}）之内 / "
        f"the gap without the scale is not within half the big model's collapse: {j.detail}"
    )


def _why_residual(res: dict) -> str:
    j, _, inputs = _evidence(res)["ablate_no_residual"]
    return (
        f"没有残差的模型并没有丢掉基线学到的一半以上：丢掉的比例 {number_list(inputs['share_lost'])} / without "
        f"residuals the model keeps more than half of what the baseline learns: {j.detail}"
    )


def _why_layernorm(res: dict) -> str:
    return (
        "去掉 LayerNorm 的运行没有比基线抖得多或收敛得慢 / without LayerNorm the run neither jitters beyond the "
        f"baseline nor converges slower: {_failed('ablate_no_layernorm', res)}"
    )


def _why_untied(res: dict) -> str:
    return f"不共享权重 / untied weights: {_failed('ablate_untied', res)}"


def _why_positions(res: dict) -> str:
    _, _, inputs = _evidence(res)["ablate_no_positions"]
    return (
        f"没有位置编码，验证 loss 并没有变差：同种子之差 {number_list(inputs['val_minus_baseline'], '+.3f')} / without positions the "
        f"validation loss is not worse: {_failed('ablate_no_positions', res)}"
    )


def _why_spike(cid: str, key: str, words: str):
    def why(res: dict) -> str:
        _, _, inputs = _evidence(res)[cid]
        r = inputs[key]
        return (
            f"{words}与基线同种子之比 {number_list(r)}：没有超过 {SPIKE_RATIO:g} 倍，在批次噪声能给出的范围内，算不上"
            f"尖刺 / ratios to the baseline {number_list(r)}: not beyond {SPIKE_RATIO:g}×, no spike at this "
            f"scale: {_failed(cid, res)}"
        )

    return why


def _why_idle(res: dict) -> str:
    _, _, inputs = _evidence(res)["ablate_clipping_idle"]
    return (
        "有运行在 warmup 之后出现了梯度尖峰（或基线常被裁剪），裁剪有事可做 / a run spiked after warmup (or the "
        f"baseline was clipped often), so clipping had work: {_failed('ablate_clipping_idle', res)}"
    )


WHY = {
    "ablate_no_scaling": _why_no_scaling,
    "ablate_no_residual": _why_residual,
    "ablate_no_layernorm": _why_layernorm,
    "ablate_untied": _why_untied,
    "ablate_no_positions": _why_positions,
    "ablate_no_warmup": _why_spike("ablate_no_warmup", "early_jump_ratio", "前期最大跳升 / the early rise: "),
    "ablate_no_warmup_grad_spike": _why_spike(
        "ablate_no_warmup_grad_spike", "max_grad_norm_ratio", "最大梯度范数 / the largest gradient norm: "
    ),
    "ablate_clipping_idle": _why_idle,
}

EXPERIMENT = Experiment(
    "ablation",
    SECTION,
    "消融清单 / the ablation checklist",
    "一次只关一个：缩放（小模型影响小）、残差（训不动）、LayerNorm（抖动、慢）、权重共享（参数 +36%）、"
    "位置编码（学不会顺序）、warmup（前期尖刺）、梯度裁剪（偶发 nan）",
    "attnlab book --only §1.13.4",
    measure=measure,
    judge=judge,
    runs_of_seed=runs_of_seed,
    why=WHY,
    seed_runs=lambda scale, seed, cid: [
        ablation_run(scale, c, seed) for c in dict.fromkeys(("baseline", CHANGE_OF.get(cid, "baseline")))
    ],
)
