"""The chapter's statements as claims over the case results, and the setup's sanity checks.

Every claim is judged by one rule of :mod:`attnlab.stats` from one number per seed
(issue 21) and stored with :func:`attnlab.verdicts.claim` (rule, inputs with the
per-seed numbers, verdict, interval, n, n_needed):

- ``book``: a statement of the chapter, quoted with the book's own words and numbers.
  A number the book reports from its one run is judged with ``stats.value``: the
  book's value must lie inside our 95% prediction interval for one run, and PASS
  needs that interval within ± a tolerance fixed from the chapter (by default half
  the book's own number: :data:`TOL_HALF`). A direction ("降了", "都涨了",
  "明显分离") is a paired ``stats.effect`` over seeds; a range the book gives is a
  ``stats.band`` on the mean's interval (never widened) or ``stats.every`` where the
  chapter speaks of every run ("都在 0.1–0.2 之间"). The deterministic init sweep
  (400 initialisations each) keeps a relative tolerance through ``stats.exact``.
- ``sanity``: a property of our setup (start near ln V, twins share their
  initialisation); it says nothing about the book.

A wider spread between seeds widens every interval, so it can make a claim
INCONCLUSIVE, never PASS. Everything is recomputed from the numbers stored in
the result (``pairs``, ``seeds``, ``seed_runs``, ``qk_scale``, ``init_sweep`` ...),
so a hand-edited JSON gets the verdicts its numbers deserve (``attnlab report``).
A failing book claim carries a reason (:func:`explain`): a finding about the book
(with its evidence), a difference of protocol (which one, with the experiment that
shows it), our own specification, the scale of a run smaller than the book's ("scale":
``attnlab case --quick``'s few steps or inits, with the numbers that say so; never at
full size), or "unexplained".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ... import stats, verdicts
from ...book import book_values
from ...verdicts import REASON_LABELS  # noqa: F401  (re-exported: the reports' labels have one home)
from ..runs import BOOK_RUN_STEPS, BOOK_STEPS, runs_by_name  # noqa: F401  (the case's readers)
from ..runs import member_runs as runs

LN_VOCAB = math.log(1200)
# the chapter's numbers, all from reference_values.json (attnlab.book); none is typed here
_LOSS = book_values("case_loss_1_2_and_1_4")
_SWEEP = book_values("init_sweep_1_3")
_DYN = book_values("dynamics_big_1_12")
_QK = book_values("qk_scale_layer0_1_7_7")
_CFG = book_values("config_small")
COLLAPSE_STEP = _DYN["steps"][1]  # §1.4: "只用了 222 步"
GAP_SMALL, GAP_BIG = _LOSS["gap_small"], _LOSS["gap_big"]
WINDOW = 25  # half-width of the window around a book step
END_WINDOW = 50  # "end" = mean of the last 50 steps
REL = 0.10  # exact claims on the deterministic init sweep: within 10 % (400 inits; sampling spread far smaller)
REL_ABOUT = 0.25  # ... and 25 % where the book says "约 / 左右 / about"
# value claims: the book's one run pinned down to ± half its own number. Fixed before looking: an
# interval wider than that cannot tell the book's number from half or double of it.
TOL_HALF = 0.5
# the smallest loss difference the chapter prints (every loss to 0.01: "4.17 / 4.00 / 5.18 / 4.23"): a SESOI's
# floor where a formula from the book's numbers gives no size on another corpus
MIN_LOSS_SESOI = 0.01
# the chapter's words where it speaks of its one case run (stats.every's one_run)
ENTROPY_ONE_RUN = "不缩放那一边，熵从 0.712 掉到 0.0022——只用了 222 步……之后 1200 多步，熵基本停在 0.0001"
# "几乎重合" (§1.2): the small pair's 0.17 is what the book calls two curves that coincide, so a
# separation smaller than 0.17 is not "明显分离" (the smallest effect of interest for the curves).
SESOI_APART = GAP_SMALL
BOOK_KEYS = {
    "small_unscaled": "small_d32_unscaled",
    "small_scaled": "small_d32_scaled",
    "big_unscaled": "big_d256_unscaled",
    "big_scaled": "big_d256_scaled",
}


# ----------------------------------------------------------------------- statistics
def spread(xs: Sequence[float]) -> dict:
    """mean, sample sd (0 with one value), min, max and n of ``xs``."""
    xs = [float(x) for x in xs]
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(xs), "max": max(xs), "n": n}


def round_sig(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else float(f"{x:.{digits}g}")


# ------------------------------------------------------------------------ the data
def qk_runs(res: dict, key: str) -> list[dict]:
    """q/k scale before/after of ``key`` on every seed stored (layer rows)."""
    out = [res["qk_scale"][key]] if key in res.get("qk_scale", {}) else []
    return out + [r["qk"] for r in res.get("seed_runs", {}).get(key, []) if r.get("qk")]


def series(run: dict, key: str, layer: int = 0) -> list[float]:
    if key == "loss":
        return run["trace"]["loss"]
    return run["trace"]["layers"][layer][key]


def window_mean(run: dict, key: str, step: int, half: int = WINDOW) -> float:
    """Mean of a per-step diagnostic over the steps within ``half`` of ``step``."""
    steps = run["trace"]["step"]
    vals = series(run, key)
    pick = [v for s, v in zip(steps, vals) if abs(s - step) <= half and v is not None]
    if not pick:  # a shortened run: the nearest step
        i = min(range(len(steps)), key=lambda j: abs(steps[j] - step))
        pick = [vals[i]]
    return sum(pick) / len(pick)


def centred_means(vals: Sequence[float], half: int = WINDOW) -> list[float]:
    """The centred ±half-step mean at every step (cumulative sums: one pass)."""
    csum = [0.0]
    for v in vals:
        csum.append(csum[-1] + v)
    n = len(vals)
    return [
        (csum[min(n, i + half + 1)] - csum[max(0, i - half)]) / (min(n, i + half + 1) - max(0, i - half))
        for i in range(n)
    ]


def window_means(run: dict, key: str, half: int = WINDOW) -> list[float]:
    """The centred ±half-step mean of a per-step diagnostic at every step (a missing record counts 0)."""
    return centred_means([0.0 if v is None else v for v in series(run, key)], half)


def val_batch_means(res: dict, member: str, diag: str, step: int) -> tuple[list[float], list[float]]:
    """Per seed of pair member ``member`` (e.g. "big_scaled"): the layer-0 diagnostic ``diag`` at
    ``step`` as the mean over the case's fixed validation batches, and the sd over those batches
    (``res["book_steps"]``; seeds whose weights were not kept are left out)."""
    stored = res.get("book_steps", {}).get("runs", {})
    means, sds = [], []
    for r in runs(res, member):
        d = stored.get(r.get("run", ""))
        if d and step in d["steps"]:
            i = d["steps"].index(step)
            means.append(d[diag]["mean"][i])
            sds.append(d[diag]["sd"][i])
    return means, sds


def tail_mean(xs: Sequence[float | None], n: int = END_WINDOW) -> float:
    """The "end" of a trace: the mean of its last ``n`` records (missing ones left out)."""
    vals = [v for v in xs[-n:] if v is not None]
    return sum(vals) / len(vals)


def end_mean(run: dict, key: str, n: int = END_WINDOW) -> float:
    return tail_mean(series(run, key), n)


def smoothed_loss(run: dict, half: int = WINDOW) -> list[float]:
    """Training loss averaged over ±half steps (a centred moving mean)."""
    return centred_means(run["trace"]["loss"], half)


def scaled_step(step: int, res: dict) -> int:
    """The book's step mapped onto a shortened run (1500 steps in the book)."""
    return round(step * res["pairs"]["big_scaled"]["steps"] / BOOK_RUN_STEPS)


def small_seed_gaps(res: dict, basis: str = "val") -> list[float]:
    """Small-pair gap (unscaled − scaled) per seed, recomputed from the stored end losses."""
    k = "val_loss_end" if basis == "val" else "loss_end"
    return [r[f"{k}_unscaled"] - r[f"{k}_scaled"] for r in res["seeds"]["runs"]]


def big_seed_gaps(res: dict, basis: str = "val") -> list[float]:
    k = "val_loss_end" if basis == "val" else "loss_end"
    return [u[k] - s[k] for u, s in zip(runs(res, "big_unscaled"), runs(res, "big_scaled"))]


def noise_gap(res: dict) -> float:
    """The gap training noise alone produces: 2 sd over seeds of the small pair's val gap
    (the book: at d_head 32 the gap is 'as large as training noise'); 0.1 with one seed."""
    gaps = small_seed_gaps(res)
    return 2 * spread(gaps)["sd"] if len(gaps) > 1 else 0.1


def parting_step(u: dict, s: dict, threshold: float) -> int | None:
    """First step after which the smoothed training-loss gap (unscaled − scaled) stays above
    ``threshold`` to the end; None if it never does."""
    gu, gs = smoothed_loss(u), smoothed_loss(s)
    steps = u["trace"]["step"]
    gaps = [a - b for a, b in zip(gu, gs)]
    if not gaps or gaps[-1] <= threshold:
        return None
    i = len(gaps) - 1
    while i > 0 and gaps[i - 1] > threshold:
        i -= 1
    return steps[i]


def sweep_slope(rows: list[dict], key: str = "logit_std_unscaled") -> float:
    d = [r["d_head"] for r in rows]
    v = [r[key] for r in rows]
    n = len(d)
    x = [math.log(a) for a in d]
    y = [math.log(b) for b in v]
    mx, my = sum(x) / n, sum(y) / n
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)


def growth(qk: dict, col: str, layer: int = 0) -> float:
    return qk["after"][layer][col] / qk["before"][layer][col]


# the outcomes read off the unscaled run alone: at the default weight decay they come from every
# seed of the unscaled member (the case trains it on more seeds than the pair)
UNSCALED_OUTCOMES: dict[str, Callable[[dict], float]] = {
    "unscaled_entropy_end": lambda u: end_mean(u, "weight_entropy"),
    "unscaled_jacobian_end": lambda u: end_mean(u, "jacobian_fro"),
    "unscaled_jacobian_drop": lambda u: series(u, "jacobian_fro")[0] / max(end_mean(u, "jacobian_fro"), 1e-30),
    "unscaled_logit_std_end": lambda u: end_mean(u, "logit_std"),
    "q_growth_unscaled": lambda u: end_mean(u, "q_std") / series(u, "q_std")[0],
}


def run_outcome(u: dict, s: dict, qu: dict | None = None, qs: dict | None = None) -> dict:
    """The numbers the weight-decay table and the claims compare, for one big pair on one seed."""
    out = {
        "val_gap": u["val_loss_end"] - s["val_loss_end"],
        "val_loss_end_unscaled": u["val_loss_end"],
        "val_loss_end_scaled": s["val_loss_end"],
        "scaled_entropy_end": end_mean(s, "weight_entropy"),
        "scaled_entropy_book_steps": [window_mean(s, "weight_entropy", st) for st in BOOK_STEPS],
        "scaled_jacobian_end": end_mean(s, "jacobian_fro"),
        "scaled_logit_std_end": end_mean(s, "logit_std"),
        **{k: fn(u) for k, fn in UNSCALED_OUTCOMES.items()},
        "q_growth_scaled": end_mean(s, "q_std") / series(s, "q_std")[0],
    }
    if qu and qs:
        out["W_qkv_after_unscaled"] = qu["after"][0]["W_qkv_fro"]
        out["W_qkv_after_scaled"] = qs["after"][0]["W_qkv_fro"]
    return out


def weight_decay_table(res: dict) -> list[dict]:
    """One row per (weight decay, seed) of the big pair: the case's own runs at the default
    weight decay and the ``weight_decay`` runs, each as :func:`run_outcome`."""
    wd = res.get("weight_decay")
    if not wd:
        return []
    rows = []
    default = res["pairs"]["big_scaled"]["config"]["weight_decay"]
    us, ss = runs(res, "big_unscaled"), runs(res, "big_scaled")
    qu, qs = qk_runs(res, "big_unscaled"), qk_runs(res, "big_scaled")
    for i, (u, s) in enumerate(zip(us, ss)):
        rows.append(
            {
                "weight_decay": default,
                "seed": s["config"]["seed"],
                **run_outcome(u, s, qu[i] if i < len(qu) else None, qs[i] if i < len(qs) else None),
            }
        )
    for entry in wd["pairs"]:
        rows.append(
            {
                "weight_decay": entry["weight_decay"],
                "seed": entry["seed"],
                **run_outcome(
                    entry["unscaled"], entry["scaled"], entry["unscaled"].get("qk"), entry["scaled"].get("qk")
                ),
            }
        )
    return rows


def by_weight_decay(res: dict, key: str) -> dict[float, list[float]]:
    """``key`` per weight decay over its seeds; an unscaled-only outcome at the default decay over
    every seed of the unscaled member, as the claims about it read it."""
    out: dict[float, list[float]] = {}
    for row in weight_decay_table(res):
        if row.get(key) is not None:
            out.setdefault(row["weight_decay"], []).append(row[key])
    if key in UNSCALED_OUTCOMES and out:
        default = res["pairs"]["big_scaled"]["config"]["weight_decay"]
        out[default] = [UNSCALED_OUTCOMES[key](u) for u in runs(res, "big_unscaled")]
    return out


# -------------------------------------------------------------------------- claims
def _rs(xs: Iterable[float], digits: int = 5) -> list[float]:
    """Per-seed numbers as stored in a claim's inputs (the judge uses exactly these)."""
    return [round_sig(float(x), digits) for x in xs]


def _claim(cid, section, statement, j, *, inputs, book=None, expected=None, kind="book") -> dict:
    c = verdicts.claim(cid, section, statement, j, inputs=inputs, kind=kind, book=book, expected=expected)
    if j.rule == "every" and j.interval is not None:  # every's interval is the seeds' range, not a CI
        c["measured"] = c["measured"].replace("95% CI [", "range of seeds [")
    return c


def _paired(res: dict, a: str, b: str) -> list[tuple[dict, dict]]:
    """The runs of pair members ``a`` and ``b`` on the same seeds (seed order of ``a``)."""
    by_seed = {r["config"].get("seed"): r for r in runs(res, b)}
    return [(r, by_seed[r["config"].get("seed")]) for r in runs(res, a) if r["config"].get("seed") in by_seed]


def _val_at(run: dict, step: int) -> float:
    """Validation loss at the evaluation nearest ``step``."""
    vs, vl = run["trace"]["val_step"], run["trace"]["val_loss"]
    i = min(range(len(vs)), key=lambda k: abs(vs[k] - step))
    return vl[i]


def check_claims(res: dict) -> list[dict]:
    """Every claim, judged from the numbers in ``res``; failing book claims carry a reason."""
    out: list[dict] = []
    for fn in CHECKS:
        made = fn(res)
        for c in made if isinstance(made, list) else [made]:
            if c is None:
                continue
            if c["kind"] == "book" and verdicts.verdict_of(c) == stats.FAIL:
                c["reason"] = explain(c["id"], res, c)
            out.append(c)
    return out


CHECKS: list[Callable[[dict], Any]] = []


def check(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
    CHECKS.append(fn)
    return fn


# --- sanity ---------------------------------------------------------------------------
@check
def _start_near_ln_vocab(res):
    starts = _rs(
        r["loss_start"] for k in ("small_unscaled", "small_scaled", "big_unscaled", "big_scaled") for r in runs(res, k)
    )
    return _claim(
        "start_near_ln_vocab",
        "§1.19.2",
        "起点接近随机猜测 ln 1200 ≈ 7.09：模型初始输出近似均匀 / every run starts near ln V",
        stats.every(starts, LN_VOCAB - 0.15, LN_VOCAB + 0.15),
        inputs={"step0_loss_every_run": starts, "ln_V": round_sig(LN_VOCAB, 5)},
        book="7.03–7.05",
        expected="every run's step-0 loss within 0.15 of ln 1200 = 7.09",
        kind="sanity",
    )


@check
def _twins_share_init(res):
    """Same seed = same weights and batch: before training, q and k agree to 1e-6 and the
    unscaled logit std is exactly sqrt(d_head) times the scaled one."""
    inputs, ok = {}, True
    for size in ("small", "big"):
        cfg = res["pairs"][f"{size}_scaled"]["config"]
        dh = cfg["d_model"] // cfg["n_head"]
        q_ratio, logit_ratio = [], []
        for qu, qs in zip(qk_runs(res, f"{size}_unscaled"), qk_runs(res, f"{size}_scaled")):
            bu, bs = qu["before"][0], qs["before"][0]
            q_ratio.append(round_sig(bu["q_std"] / bs["q_std"], 8))
            logit_ratio.append(round_sig(bu["logit_std"] / bs["logit_std"] / math.sqrt(dh), 8))
            ok = ok and abs(bu["q_std"] / bs["q_std"] - 1) < 1e-6 and abs(bu["k_std"] / bs["k_std"] - 1) < 1e-6
            ok = ok and abs(bu["logit_std"] / bs["logit_std"] / math.sqrt(dh) - 1) < 1e-6
        inputs[f"{size}_q_std_ratio"] = q_ratio
        inputs[f"{size}_logit_std_ratio_over_sqrt_d"] = logit_ratio
    return _claim(
        "twins_share_init",
        "§1.1",
        "同一种子：初始化完全相同、每一批数据完全相同 / twins share weights and batches",
        stats.exact(ok, "every seed: q, k std equal to 1e-6 and unscaled/scaled logit std = √d_head to 1e-6"),
        inputs=inputs,
        book="“两条曲线在 step 0 时的 loss 完全一致（都是 7.03）”",
        expected="before training: q, k std equal to 1e-6 and unscaled/scaled logit std = √d_head to 1e-6",
        kind="sanity",
    )


@check
def _fixed_d_model_slope(res):
    rows = res.get("init_sweep_fixed_d_model") or []
    statement = (
        "d_model 固定为 512 时，式 1.2：logits 标准差 = v√d_head，斜率 0.5 / with d_model fixed eq. 1.2 gives slope 0.5"
    )
    if len(rows) < 2:
        return _claim(
            "fixed_d_model_slope_half",
            "§1.3.1",
            statement,
            stats.na("number not stored: init_sweep_fixed_d_model; measured by `attnlab case`"),
            inputs={},
            book="式 1.2",
            kind="sanity",
        )
    slope = sweep_slope(rows)
    return _claim(
        "fixed_d_model_slope_half",
        "§1.3.1",
        statement,
        stats.exact(abs(slope - 0.5) <= 0.05, f"slope {slope:.3f}, 0.5 ± 0.05", round_sig(slope, 4)),
        inputs={"slope": round_sig(slope, 4), **{f"d{r['d_head']}": round_sig(r["logit_std_unscaled"]) for r in rows}},
        book="式 1.2",
        expected=f"log-log slope 0.5 ± 0.05 (deterministic: {rows[0].get('samples', '?')} inits per d_head)",
        kind="sanity",
    )


@check
def _unscaled_beats_unigram(res):
    h1 = res["config"].get("corpus_unigram_entropy")
    statement = (
        "注意力死了的模型学到的不只是字频：终点低于一元字频熵 / the attention-dead model beats character frequencies"
    )
    if h1 is None:
        return _claim(
            "big_unscaled_beats_unigram",
            "§1.4",
            statement,
            stats.na("number not stored: config.corpus_unigram_entropy; measured by `attnlab case`"),
            inputs={},
            kind="sanity",
        )
    vals = _rs(r["val_loss_end"] for r in runs(res, "big_unscaled"))
    return _claim(
        "big_unscaled_beats_unigram",
        "§1.4",
        statement,
        stats.every(vals, 0.0, h1 - 0.1),
        inputs={"val_loss_end": vals, "unigram_entropy": round_sig(h1, 5)},
        book=f"unigram entropy {h1:.3f}",
        expected=f"every seed's val loss below the unigram entropy {h1:.3f} − 0.1",
        kind="sanity",
    )


# --- §1.2 / §1.4 / §1.19.2 losses ---------------------------------------------------------
@check
def _small_gap(res):
    gaps = _rs(small_seed_gaps(res))
    # "两条曲线……几乎重合": the pair does not differ, on the chapter's own scale of "几乎没差别" (its gap, 0.17). As
    # a value rule (0.17 within ± 0.085) it could never pass: one run's gap varies more than that from seed to seed
    return _claim(
        "small_gap_small",
        "§1.2",
        "左边是小模型（d_head=32）的两条曲线——它们几乎重合，终点差 0.17：差距在 ±0.17 之内 / the small pair's curves "
        "nearly coincide: the end gap lies within ± 0.17",
        stats.equivalence(gaps, GAP_SMALL),
        inputs={"val_gap": gaps, "train_gap": _rs(small_seed_gaps(res, "train")), "margin": GAP_SMALL},
        book=GAP_SMALL,
        expected=f"equivalence: the 90% t-interval of the paired val gap (unscaled − scaled, same seed) inside ± "
        f"{GAP_SMALL} (“几乎重合”, with the book's own gap as the scale of no difference)",
    )


# the smallest loss difference that counts as a cost anywhere in the lab book (ablation, deep,
# statements: 0.01 nats), fixed there before these seeds were trained
SESOI_SMALL_GAP = 0.01


@check
def _small_gap_not_zero(res):
    gaps = _rs(small_seed_gaps(res))
    # not the book's: §1.2 says the opposite ("差距都在 0.1–0.2 之间浮动，量级与训练本身的随机性相当。在这个配置下，
    # 去掉缩放因子不影响训练"); a finding of ours beyond the chapter, specified after the ten seeds were in
    return _claim(
        "small_gap_not_zero",
        "§1.2",
        "超出本章（本章说的是“在这个配置下，去掉缩放因子不影响训练”）：d_head=32 时去掉缩放也有一点代价，不缩放那条略高 / "
        "beyond the chapter (which says removing the scale does not affect training at d_head 32): the unscaled "
        "small model ends slightly higher (paired gap > 0)",
        stats.effect(gaps, direction=+1, sesoi=SESOI_SMALL_GAP),
        inputs={"val_gap": gaps, "sesoi": SESOI_SMALL_GAP},
        book="差距都在 0.1–0.2 之间浮动，量级与训练本身的随机性相当。在这个配置下，去掉缩放因子不影响训练",
        expected=f"effect: the 95% t-interval of the paired val gap (unscaled − scaled, same seed) above 0; "
        f"FAIL below the smallest cost of interest {SESOI_SMALL_GAP} nats (ours: specified after the seeds were in)",
        kind="beyond",
    )


@check
def _small_gap_over_seeds(res):
    gaps = _rs(small_seed_gaps(res))
    return _claim(
        "small_gap_over_seeds",
        "§1.2 / §1.19.2",
        "我们换了三个种子重跑，小模型上的差距都在 0.1–0.2 之间浮动 / over three seeds every small gap is 0.1–0.2",
        stats.every(gaps, *_LOSS["small_gap_over_3_seeds_range"]),
        inputs={"val_gap": gaps, "train_gap": _rs(small_seed_gaps(res, "train"))},
        book=list(_LOSS["small_gap_over_3_seeds_range"]),
        expected=f"every: each seed's val gap in {list(_LOSS['small_gap_over_3_seeds_range'])} (“都在”: a statement "
        "about every seed)",
    )


@check
def _big_gap(res):
    gaps = _rs(big_seed_gaps(res))
    tol = TOL_HALF * GAP_BIG
    return _claim(
        "big_gap_large",
        "§1.4",
        "d_head=256：终点差距 0.95 / the big pair ends 0.95 apart",
        stats.value(gaps, GAP_BIG, tol=tol),
        inputs={"val_gap": gaps, "train_gap": _rs(big_seed_gaps(res, "train")), "book": GAP_BIG, "tol": tol},
        book=GAP_BIG,
        expected=f"value: {GAP_BIG} inside our one-run 95% PI, and the PI within {GAP_BIG} ± {tol:.3g} (half the "
        "book's gap)",
    )


@check
def _gap_ratio(res):
    small = {r["seed"]: r["val_loss_end_unscaled"] - r["val_loss_end_scaled"] for r in res["seeds"]["runs"]}
    big = {
        u["config"].get("seed"): u["val_loss_end"] - s["val_loss_end"]
        for u, s in _paired(res, "big_unscaled", "big_scaled")
    }
    seeds = [s for s in big if s in small]
    ratio = _rs(big[s] / small[s] for s in seeds if abs(small[s]) > 1e-9)
    book_ratio = _LOSS["gap_ratio"]
    tol = TOL_HALF * book_ratio
    # the chapter's number is the ratio, 5.6: judged as the house judges every book number (value, ± half of it).
    # It divides by a gap at the level of seed noise, so one run's ratio is wide: that is what the verdict says
    return _claim(
        "big_gap_several_times_small",
        "§1.4 / §1.19.2",
        "差距从 0.17 变成 0.95，放大了 5.6 倍 / the gap grows from 0.17 to 0.95, 5.6×",
        stats.value(ratio, book_ratio, tol=tol),
        inputs={
            "gap_ratio": ratio,
            "big_gap": _rs(big[s] for s in seeds),
            "small_gap": _rs(small[s] for s in seeds),
            "book": book_ratio,
            "tol": tol,
        },
        book={"small": GAP_SMALL, "big": GAP_BIG, "ratio": book_ratio},
        expected=f"value: the same-seed ratio big gap ÷ small gap; {book_ratio} inside our one-run 95% PI, and the PI "
        f"within ± {tol:.3g} (half the book's ratio)",
    )


@check
def _curves_part(res):
    p200 = scaled_step(_LOSS["unscaled_big_plateau_after_step"], res)
    big = _paired(res, "big_unscaled", "big_scaled")
    small = {u["config"].get("seed"): (u, s) for u, s in _paired(res, "small_unscaled", "small_scaled")}
    apart, plateau, parting, u_drop, s_drop, big200 = [], [], [], [], [], []
    thr = noise_gap(res)
    p_book = _LOSS["unscaled_big_plateau_after_step"]
    for u, s in big:
        seed = u["config"].get("seed")
        if seed not in small:
            continue
        gu, gs = smoothed_loss(u), smoothed_loss(s)
        su, ss = (smoothed_loss(x) for x in small[seed])
        end = len(gu) - 1 - WINDOW if len(gu) > 2 * WINDOW else len(gu) - 1
        big200.append(gu[p200] - gs[p200])
        apart.append((gu[p200] - gs[p200]) - (su[p200] - ss[p200]))
        u_drop.append(gu[p200] - gu[end])
        s_drop.append(gs[p200] - gs[end])
        plateau.append(s_drop[-1] - u_drop[-1])
        parting.append(parting_step(u, s, thr))
    j = stats.all_of(
        [
            stats.effect(_rs(apart), direction=+1, sesoi=SESOI_APART),
            stats.effect(_rs(plateau), direction=+1, sesoi=SESOI_APART),
        ]
    )
    return _claim(
        "curves_part_near_200",
        "§1.2 图 1.2 / §1.4",
        "右图在 200 步后明显分离；不缩放那条曲线在 200 步左右就卡住了——后面 1300 步几乎没有进展 / the big "
        "curves are clearly apart after step 200, and the unscaled one makes almost no progress after it",
        j,
        inputs={
            "big_gap_at_200": _rs(big200),
            "big_minus_small_gap_at_200": _rs(apart),
            "unscaled_drop_after_200": _rs(u_drop),
            "scaled_drop_after_200": _rs(s_drop),
            "scaled_minus_unscaled_drop": _rs(plateau),
            "first_parting_step_reported": parting,
            "step": p200,
            "sesoi": SESOI_APART,
        },
        book={"apart_after": p_book, "stuck_at": p_book},
        expected=f"both effects (95% CI > 0) on the smoothed (±{WINDOW}-step) training loss, same seed: ① at step "
        f"{p200} the big pair's gap exceeds the small pair's (the book's level of training noise); ② after step "
        f"{p200} the scaled curve falls further than the unscaled one (the gap keeps widening while the unscaled "
        f"curve is stuck); smallest effect of interest {SESOI_APART} (“几乎重合”, §1.2)",
    )


@check
def _big_unscaled_end(res):
    vals = _rs(r["val_loss_end"] for r in runs(res, "big_unscaled"))
    h1 = res["config"].get("corpus_unigram_entropy")
    end = _LOSS["big_d256_unscaled"]["end"]
    tol = TOL_HALF * GAP_BIG
    parts = [stats.value(vals, end, tol=tol)]
    inputs: dict[str, Any] = {"val_loss_end": vals, "book": end, "tol": tol}
    if h1 is not None:
        # half the book's distance to the unigram level; on a corpus whose unigram entropy is not above the
        # book's end loss (the tests' small corpora) the formula has no size: 0.01 nats, the smallest loss
        # difference the chapter prints (as the ablation entry's)
        sesoi = max(TOL_HALF * (h1 - end), MIN_LOSS_SESOI)
        below = _rs(h1 - v for v in vals)
        parts.append(stats.effect(below, direction=+1, sesoi=sesoi))
        inputs |= {"unigram_minus_val": below, "unigram_entropy": round_sig(h1, 5), "sesoi": round_sig(sesoi, 3)}
    scaled = _rs(s["val_loss_end"] for _, s in _paired(res, "big_unscaled", "big_scaled"))
    inputs["scaled_val_loss_end_reported"] = scaled
    return _claim(
        "big_unscaled_still_learns",
        "§1.4",
        "loss 并不是不降了（它从 7.05 降到了 5.18）……“带着一个废掉的注意力层硬训” / the loss still falls, "
        "7.05 → 5.18: the rest of the model keeps learning",
        stats.all_of(parts),
        inputs=inputs,
        book=end,
        expected=f"value: {end} inside our one-run 95% PI, the PI within ± {tol:.3g} (half the book's {GAP_BIG} gap "
        "to the scaled model); and effect: below the corpus unigram entropy (a model of character "
        f"frequencies alone), 95% CI > 0, smallest effect half the book's distance from {end} to it. The bigram "
        "level is not stored in the case results (see the lab book's §1.4 Markov floor); the scaled level is "
        "claim big_gap_large",
    )


@check
def _late_training_slow(res):
    s = runs(res, "small_scaled")
    statement = (
        "从 1000 步到 1500 步只降了 0.1 左右，而前 200 步降了 2 以上 / steps 1000→1500 gain about 0.1, the first "
        "200 more than 2"
    )
    if s[0]["steps"] < BOOK_RUN_STEPS or "val_loss" not in s[0]["trace"]:
        return _claim(
            "late_training_slow",
            "§1.18.4",
            statement,
            stats.na(f"the runs have {s[0]['steps']} steps: the book's 1000 → 1500 needs 1500-step runs"),
            inputs={},
            book={"1000_to_1500": 0.1, "first_200": "> 2"},
        )
    late = _rs(_val_at(r, 1000) - _val_at(r, BOOK_RUN_STEPS) for r in s)
    first = _LOSS["unscaled_big_plateau_after_step"]  # "前 200 步": the step §1.2 reads the curves at
    early = _rs(r["loss_start"] - _val_at(r, first) for r in s)
    tol = TOL_HALF * 0.1
    return _claim(
        "late_training_slow",
        "§1.18.4",
        statement,
        stats.all_of(
            [
                stats.value(late, 0.1, tol=tol),
                stats.every(
                    early, 2.0, math.inf, one_run="判断依据是 loss 曲线的斜率——从 1000 步到 1500 步只降了 0.1 左右"
                ),
            ]
        ),
        inputs={"val_drop_1000_to_1500": late, "drop_0_to_200": early, "book": 0.1, "tol": tol},
        book={"1000_to_1500": 0.1, "first_200": "> 2"},
        expected=f"small scaled model, validation loss (the training loss keeps falling from passes over the "
        f"data): value: the drop 1000 → 1500 = 0.1 inside our one-run PI, the PI within ± {tol:.3g} (half the "
        "book's 0.1); every: the drop from the step-0 loss to the validation loss at step 200 > 2 on every seed",
    )


# --- §1.3 init sweep (deterministic: 400 initialisations each) ---------------------------------
@check
def _init_sweep_table(res):
    rows = res["init_sweep"]
    book, ent, ds = _SWEEP["measured_logit_std"], _SWEEP["weight_entropy"], _SWEEP["d_head"]
    got = {r["d_head"]: r for r in rows}
    if any(d not in got for d in ds):
        return None
    std = {f"d{d}": round_sig(got[d]["logit_std_unscaled"]) for d in ds}
    hs = {f"d{d}": round_sig(got[d]["entropy_unscaled"]) for d in ds}
    ok_std = all(abs(got[d]["logit_std_unscaled"] / b - 1) <= REL for d, b in zip(ds, book))
    ok_ent = all(abs(got[d]["entropy_unscaled"] / b - 1) <= REL for d, b in zip(ds, ent))
    n = got[32].get("samples", "?")
    return [
        _claim(
            "init_std_table",
            "§1.3",
            "初始化状态下实测 logits 标准差 / measured init logit std",
            stats.exact(ok_std, f"each d_head within {REL:.0%} of the book's"),
            inputs=std,
            book=book,
            expected=f"exact: each within {REL:.0%} ({n} inits per d_head: the sampling spread is far smaller)",
        ),
        _claim(
            "init_entropy_table",
            "§1.3",
            "初始化时的权重熵随 d_head 增大而下降 / init entropy",
            stats.exact(ok_ent, f"each d_head within {REL:.0%} of the book's"),
            inputs=hs,
            book=ent,
            expected=f"exact: each within {REL:.0%} ({n} inits per d_head)",
        ),
    ]


@check
def _init_below_theory(res):
    f = {f"d{r['d_head']}": round_sig(r["theory_sqrt_d_head"] / r["logit_std_unscaled"], 4) for r in res["init_sweep"]}
    ok = min(f.values()) >= 5 * (1 - REL) and max(f.values()) <= 80 * (1 + REL)
    return _claim(
        "init_std_below_theory",
        "§1.3",
        "实测比理论小了 5 到 80 倍 / measured is 5 to 80 times below √d_head",
        stats.exact(ok, f"theory/measured from {min(f.values()):.3g} to {max(f.values()):.3g}"),
        inputs=f,
        book=[5, 80],
        expected=f"exact: every theory/measured factor within [5, 80] ± {REL:.0%} (the book rounds its own 4.85–80.9)",
    )


@check
def _init_slope(res):
    slope = sweep_slope(res["init_sweep"])
    return _claim(
        "init_std_slope_sqrt",
        "§1.3",
        "两者的斜率是一样的（都是 d_head 的平方根关系），差的只是一个常数因子 / measured and theory share the slope 0.5",
        stats.exact(abs(slope - 0.5) <= 0.05, f"slope {slope:.3f}, 0.5 ± 0.05", round_sig(slope, 4)),
        inputs={"slope": round_sig(slope, 4)},
        book=0.5,
        expected="exact: log-log slope of the measured std against d_head, on the book's protocol, 0.5 ± 0.05",
    )


def _var_q_formula_512() -> float:
    """§1.3.1's prediction at d_model 512 as the book computes it: v = 512 σ² rounded to 0.205, times √512."""
    d = _SWEEP["d_head"][-1]
    return round(round(d * _CFG["init_std"] ** 2, 3) * math.sqrt(d), 2)


def _var_q_32() -> float:
    """§1.3.1's 0.0128 at d_head 32: Var(q_i) = d σ² (a variance, which the book compares with a std)."""
    return round(_SWEEP["d_head"][0] * _CFG["init_std"] ** 2, 6)


@check
def _variance_formula(res):
    f512 = next((r for r in res["init_sweep"] if r["d_head"] == 512), None)
    if f512 is None:
        return None
    ratio = f512["formula_logit_std"] / f512["logit_std_unscaled"]
    return _claim(
        "variance_formula",
        "§1.3.1",
        "d_model = 512 时 v ≈ 0.205，预测 0.205 × √512 = 4.64，实测 4.666：对上了 / the formula predicts 4.64 at 512",
        stats.exact(abs(ratio - 1) <= REL, f"formula/measured {ratio:.3f}", round_sig(ratio, 4)),
        inputs={"formula": round_sig(f512["formula_logit_std"]), "measured": round_sig(f512["logit_std_unscaled"])},
        book={"formula": _var_q_formula_512(), "measured": _SWEEP["measured_logit_std"][-1]},
        expected=f"exact: formula/measured within {REL:.0%}",
    )


@check
def _formula_misses_at_32(res):
    f32 = next((r for r in res["init_sweep"] if r["d_head"] == 32), None)
    if f32 is None:
        return None
    factor = f32["logit_std_unscaled"] / f32["formula_logit_std"]
    return _claim(
        "formula_misses_at_32",
        "§1.3.1",
        "对 d_head = 32 就不准了：预测 0.0128，实测 0.070，差了五倍多 / at 32 the formula misses by more than 5×",
        stats.exact(factor > 5, f"measured / eq. 1.2 = {factor:.3g}", round_sig(factor, 4)),
        inputs={
            "predicted_eq_1_2": round_sig(f32["formula_logit_std"]),
            "measured": round_sig(f32["logit_std_unscaled"]),
            "factor": round_sig(factor, 4),
        },
        book={"predicted": _var_q_32(), "measured": _SWEEP["measured_logit_std"][0], "factor": "> 5"},
        expected="exact: measured / eq. 1.2 prediction > 5",
    )


@check
def _four_heads(res):
    pt = res.get("init_four_heads")
    if not pt:
        return None
    x = pt["logit_std_unscaled"]
    about = round(_SWEEP["measured_logit_std"][_SWEEP["d_head"].index(64)], 1)  # "约 0.2": the sweep at 64
    return _claim(
        "four_heads_std_near_0_2",
        "§1.8.4",
        "改成 4 头，d_head 变成 64，初始化时 logits 标准差会从 1.615 降到约 0.2 / with 4 heads the init std drops "
        "to about 0.2",
        stats.exact(abs(x - about) <= REL_ABOUT * about, f"measured {x:.3g}", round_sig(x, 4)),
        inputs={"d_model": pt["d_model"], "n_head": pt["n_head"], "logit_std": round_sig(x)},
        book=about,
        expected=f"exact: {about} ± {REL_ABOUT:.0%} (“约”) at d_model 256, 4 heads (the model of §1.4 with 4 heads; "
        f"{pt.get('samples', '?')} inits)",
    )


# --- §1.4 / §1.12 dynamics ----------------------------------------------------------------
@check
def _collapse(res):
    first, after, final = [], [], []
    lim = scaled_step(COLLAPSE_STEP, res)
    for u in runs(res, "big_unscaled"):
        ent = series(u, "weight_entropy")
        steps = u["trace"]["step"]
        i = next((j for j, e in enumerate(ent) if e is not None and e < 0.01), None)
        wm = window_means(u, "weight_entropy")
        # a run that never collapses gets its length as the step (later than the book's) and its
        # highest window mean: both parts then fail, never silently drop the seed
        first.append(steps[i] if i is not None else steps[-1] + 1)
        after.append(max(wm[min(i + WINDOW, len(wm) - 1) :]) if i is not None else max(wm))
        final.append(end_mean(u, "weight_entropy"))
    return _claim(
        "big_unscaled_entropy_collapses",
        "§1.4 / §1.12.2①",
        "熵从 0.712 掉到 0.0022——只用了 222 步；之后 1200 多步基本停在 0.0001，没有任何恢复 / collapse within "
        "222 steps, no recovery",
        stats.all_of(
            [
                stats.every(first, 0, lim, one_run=ENTROPY_ONE_RUN),
                stats.every(after, 0.0, 0.01, one_run=ENTROPY_ONE_RUN),
                stats.every(final, 0.0, 0.001, one_run=ENTROPY_ONE_RUN),
            ]
        ),
        inputs={
            "first_step_below_0.01": first,
            "max_window_mean_after": _rs(after, 3),
            "final": _rs(final, 3),
        },
        book={
            "step": COLLAPSE_STEP,
            "after": _DYN["unscaled"]["weight_entropy"][-1],
            "final": f"{_DYN['unscaled']['weight_entropy'][-1]}–{_DYN['unscaled_final_entropy']}",
        },
        expected=f"every seed (a statement about the run): entropy < 0.01 by step {lim}; every ±{WINDOW}-step "
        f"window mean after that < 0.01; last-{END_WINDOW}-step mean < 0.001",
    )


@check
def _jacobian_drop(res):
    us = runs(res, "big_unscaled")
    drops = [series(u, "jacobian_fro")[0] / max(end_mean(u, "jacobian_fro"), 1e-30) for u in us]
    logs = _rs(math.log10(d) for d in drops)
    return _claim(
        "big_unscaled_jacobian_drops",
        "§1.4 / §1.12.2③",
        "雅可比范数从 0.2975 掉到 0.00008，掉了一万倍以上 / 四个数量级 / the Jacobian norm drops more than 10,000×",
        stats.every(logs, 4.0, math.inf, one_run="不缩放那一边：从 0.2975 掉到 0.00008，掉了一万多倍"),
        inputs={"log10_drop": logs, "drop": _rs(drops, 4), "end": _rs((end_mean(u, "jacobian_fro") for u in us), 3)},
        book={
            "factor": ">= 1e4",
            "start": _DYN["unscaled"]["jacobian_fro"][0],
            "end": _DYN["unscaled"]["jacobian_fro"][-1],
        },
        expected=f"every seed (a statement about the collapsed run, like big_unscaled_entropy_collapses): "
        f"log10(step-0 ‖J‖ / last-{END_WINDOW}-step mean) ≥ 4; a seed that does not collapse can only fail it",
    )


# §1.4 / §1.12.1: the scaled big model's bands (the logit std's: the range of its §1.12.1 table after step 0)
SCALED_BANDS = {
    "weight_entropy": tuple(_DYN["scaled_entropy_band"]),
    "jacobian_fro": tuple(_DYN["scaled_jacobian_band"]),
    "logit_std": (
        min(v for v in _DYN["scaled"]["logit_std"][1:] if v is not None),
        max(v for v in _DYN["scaled"]["logit_std"][1:] if v is not None),
    ),
}


@check
def _scaled_bands(res):
    scaled_step(COLLAPSE_STEP, res)  # fails loudly when the run is shorter than the book's step 222
    pts = [scaled_step(s, res) for s in BOOK_STEPS]
    out = []
    for cid, key, (lo, hi), words in (
        ("big_scaled_entropy_band", "weight_entropy", SCALED_BANDS["weight_entropy"], "熵在 {}–{} 之间"),
        ("big_scaled_jacobian_band", "jacobian_fro", SCALED_BANDS["jacobian_fro"], "雅可比范数在 {}–{} 之间"),
        ("big_scaled_logit_std_band", "logit_std", SCALED_BANDS["logit_std"], "logits 标准差 {}–{}（§1.12.1 表）"),
    ):
        words = words.format(lo, hi)
        inputs, parts = {}, []
        for p in pts:
            vs = _rs(window_mean(r, key, p) for r in runs(res, "big_scaled"))
            inputs[f"step_{p}"] = vs
            parts.append(stats.band(vs, lo, hi))
        j = stats.all_of(parts, "; ".join(f"step {p}: {part.verdict} ({part.detail})" for p, part in zip(pts, parts)))
        out.append(
            _claim(
                cid,
                "§1.4 / §1.12.1",
                f"缩放那一边，这两个量在 {BOOK_RUN_STEPS} 步里始终平稳：{words} / the scaled big model stays in the book's band",
                j,
                inputs=inputs,
                book=[lo, hi],
                expected=f"band at each book step {pts}: the 95% CI of the mean over seeds of the ±{WINDOW}-step "
                f"window mean inside [{lo}, {hi}] (not widened); every step must pass",
            )
        )
    return out


@check
def _scaled_entropy_falls(res):
    a, b = scaled_step(BOOK_STEPS[0], res), scaled_step(BOOK_STEPS[-1], res)
    drops = _rs(
        window_mean(r, "weight_entropy", a) - window_mean(r, "weight_entropy", b) for r in runs(res, "big_scaled")
    )
    book = _DYN["scaled"]["weight_entropy"][1] - _DYN["scaled"]["weight_entropy"][-1]
    sesoi = round_sig(TOL_HALF * book, 3)
    return _claim(
        "big_scaled_entropy_keeps_falling",
        "§1.12.2②",
        "缩放那一边的熵在 0.57–0.68 之间波动，而且整体是下降的（0.6437 → 0.5745，步 222 → 1480）/ the scaled "
        "entropy keeps falling",
        stats.effect(drops, direction=+1, sesoi=sesoi),
        inputs={"drop": drops, "sesoi": sesoi},
        book=round_sig(book, 3),
        expected=f"effect: the window-mean drop from step {a} to {b} > 0 (95% CI); smallest effect of interest "
        f"{sesoi} (half the book's 0.069)",
    )


@check
def _scaled_jacobian_rises(res):
    rs = runs(res, "big_scaled")
    rise = _rs(end_mean(r, "jacobian_fro") - series(r, "jacobian_fro")[0] for r in rs)
    level, start = sum(SCALED_BANDS["jacobian_fro"]) / 2, _DYN["scaled"]["jacobian_fro"][0]  # "0.30 左右"
    sesoi = round_sig(TOL_HALF * (level - start), 3)
    return _claim(
        "big_scaled_jacobian_rises",
        "§1.12.2③",
        "缩放那一边：从 0.2017 升到 0.30 左右，然后一直稳定 / the scaled Jacobian rises 0.20 → about 0.30",
        stats.effect(rise, direction=+1, sesoi=sesoi),
        inputs={
            "rise": rise,
            "start": _rs(series(r, "jacobian_fro")[0] for r in rs),
            "end": _rs(end_mean(r, "jacobian_fro") for r in rs),
            "sesoi": sesoi,
        },
        book=round_sig(level / start, 3),
        expected=f"effect: last-{END_WINDOW}-step mean − step-0 ‖J‖ > 0 (95% CI); smallest effect of interest "
        f"{sesoi} (half the book's rise 0.098); the level 0.29–0.31 is claim big_scaled_jacobian_band",
    )


@check
def _init_sharper(res):
    pairs = _paired(res, "big_unscaled", "big_scaled")
    e0u = _rs(series(u, "weight_entropy")[0] for u, _ in pairs)
    diff = _rs(series(s, "weight_entropy")[0] - series(u, "weight_entropy")[0] for u, s in pairs)
    b_u, b_s = _DYN["unscaled"]["weight_entropy"][0], _DYN["scaled"]["weight_entropy"][0]
    sesoi = round_sig(TOL_HALF * (b_s - b_u), 3)
    return _claim(
        "init_entropy_already_sharper",
        "§1.12.3",
        "不缩放那一边初始的熵是 0.712——已经比缩放那边（0.9985）尖得多 / at step 0 the unscaled side is already sharper",
        stats.all_of([stats.effect(diff, direction=+1, sesoi=sesoi), stats.value(e0u, b_u, tol=sesoi)]),
        inputs={"scaled_minus_unscaled": diff, "unscaled": e0u, "sesoi": sesoi, "tol": sesoi},
        book={"unscaled": b_u, "scaled": b_s},
        expected=f"effect: same-seed step-0 entropy scaled − unscaled > 0 (95% CI; smallest effect {sesoi}, half "
        f"the book's {b_s - b_u:.3g}); value: {b_u} inside our one-run PI, within ± {sesoi}",
    )


# --- §1.7.6 -------------------------------------------------------------------------------
@check
def _small_init(res):
    su = runs(res, "small_unscaled")
    ls = _rs(series(r, "logit_std")[0] for r in su)
    one_minus_h = _rs(1 - series(r, "weight_entropy")[0] for r in su)
    b176, b177 = _SWEEP["measured_logit_std"][0], _QK["small_d32_unscaled"]["logit_std"][0]
    h_book = _SWEEP["weight_entropy"][0]
    book_gap = round_sig(1 - h_book, 3)
    return [
        _claim(
            "small_init_logit_std_176",
            "§1.7.6",
            "小模型上，logits 的标准差只有 0.070——远小于 1 / the small model's init logit std is 0.070",
            stats.value(ls, b176, tol=TOL_HALF * b176),
            inputs={"init_logit_std": ls, "book": b176, "tol": TOL_HALF * b176},
            book=b176,
            expected=f"value: {b176:.3f} inside our one-run PI, within ± {TOL_HALF * b176:.3g} (half the book's number)",
        ),
        _claim(
            "small_init_logit_std_177",
            "§1.7.7",
            "d_head=32 不缩放：logits 尺度 0.29（训练前）/ the same model's init logit std, §1.7.7 table",
            stats.value(ls, b177, tol=TOL_HALF * b177),
            inputs={"init_logit_std": ls, "book": b177, "tol": TOL_HALF * b177},
            book=b177,
            expected=f"value: {b177} inside our one-run PI, within ± {TOL_HALF * b177:.3g} (half the book's number)",
        ),
        _claim(
            "small_init_safe_zone",
            "§1.7.6 / §1.13.1",
            "这时候 softmax 输出接近均匀分布（熵 0.999），离饱和那一端极远 / near-uniform attention at init",
            stats.all_of(
                [
                    stats.value(one_minus_h, book_gap, tol=TOL_HALF * book_gap),
                    stats.every(ls, 0.0, 1.0, one_run="小模型上，logits 的标准差只有 0.070——远小于 1"),
                ]
            ),
            inputs={"one_minus_entropy": one_minus_h, "init_logit_std": ls, "book": book_gap},
            book=h_book,
            expected=f"value on the distance from uniform, 1 − H: the book's {book_gap} inside our one-run PI, "
            f"within ± {TOL_HALF * book_gap:.3g} (half of it: an entropy of 0.99 is ten times farther from "
            f"uniform than {h_book}); every: the init logit std < 1 on every seed (far from saturation)",
        ),
    ]


@check
def _big_init(res):
    ls = _rs(series(r, "logit_std")[0] for r in runs(res, "big_unscaled"))
    b = _SWEEP["measured_logit_std"][_SWEEP["d_head"].index(256)]
    tol = TOL_HALF * b
    return _claim(
        "big_init_near_critical",
        "§1.7.6",
        "大模型上，初始化时标准差就是 1.615，已经接近临界 / the big model starts at 1.615",
        stats.value(ls, b, tol=tol),
        inputs={"init_logit_std": ls, "book": b, "tol": tol},
        book=b,
        expected=f"value: {b} inside our one-run PI, within ± {tol:.3g} (half the book's number)",
    )


@check
def _explode(res):
    vals = _rs((end_mean(r, "logit_std", 20) for r in runs(res, "big_unscaled")), 4)
    b = _DYN["unscaled_final_logit_std_train_batches"]
    tol = TOL_HALF * b
    return _claim(
        "big_unscaled_logits_explode",
        "§1.7.6 / §1.12.1",
        "最终标准差冲到 5477，熵掉到 0.0001 / the unscaled big logits reach 5477 (training batches)",
        stats.value(vals, b, tol=tol),
        inputs={"logit_std_last_20_steps": vals, "book": b, "tol": tol},
        book=b,
        expected=f"value on training batches (the book's protocol, §1.7.7): the last-20-step mean; {b} inside our "
        f"one-run PI, within ± {tol:.4g} (half the book's number); the entropy is claim "
        "big_unscaled_entropy_collapses",
    )


# --- §1.7.7 -------------------------------------------------------------------------------
def _qk_book() -> dict[str, dict[str, list[float]]]:
    """§1.7.7's table (the book's reference values): [before, after] per configuration and quantity."""
    table = book_values("qk_scale_layer0_1_7_7")
    names = {
        "small_scaled": "small_d32",
        "small_unscaled": "small_d32",
        "big_scaled": "big_d256",
        "big_unscaled": "big_d256",
    }
    return {key: table[f"{names[key]}_{key.split('_')[1]}"] for key in names}


# "每一个配置里，q 和 k 的尺度都涨了，幅度从 1.6 倍（d_head=256 缩放）到 17 倍（d_head=256 不缩放）": each
# configuration's growth factor inside the chapter's band (the band of growth it states, not "> 1"), its ends as
# precise as they are written: "1.6" to 0.05, "17" to 0.5 (the chapter's own table gives 17.3 for that "17 倍")
QK_GROWTH_BAND = (1.55, 17.5)


@check
def _qk_growth(res):
    out = []
    for cid, cols, words in (
        (
            "training_amplifies_qk",
            ("q_std", "k_std"),
            "每一个配置里，q 和 k 的尺度都涨了，幅度从 1.6 倍（d_head=256 缩放）到 17 倍（d_head=256 不缩放）/ "
            "q and k grow in every configuration, 1.6× to 17×",
        ),
        (
            "w_qkv_grows",
            ("W_qkv_fro",),
            "权重矩阵的范数也都在涨（4.45 → 11.98、8.89 → 29.23）/ ‖W_qkv‖ grows in every configuration",
        ),
    ):
        inputs, book, parts, entries = {}, {}, [], {}
        for key, b in _qk_book().items():
            for col in cols:
                name = f"{key}.{col}"
                f = _rs(growth(q, col) for q in qk_runs(res, key))
                bf = b[col][1] / b[col][0]
                inputs[name] = f
                book[name] = round_sig(bf, 3)
                v = stats.value(f, bf, tol=TOL_HALF * (bf - 1))  # each configuration's factor against the book's
                # q and k: inside the chapter's stated band of growth; ‖W_qkv‖: the book's own factor for each
                # configuration (its table, §1.7.7), within ± half the book's growth
                parts.append(stats.band(f, *QK_GROWTH_BAND) if cid == "training_amplifies_qk" else v)
                entries[name] = {
                    "book": round_sig(bf, 3),
                    "verdict": v.verdict,
                    "interval": v.to_dict()["interval"],
                    "detail": v.detail,
                }
        grown = sum(p.verdict == stats.PASS for p in parts)
        summary = (
            f"{grown} of {len(parts)} entries' growth factors inside {list(QK_GROWTH_BAND)} (95% CI)"
            if cid == "training_amplifies_qk"
            else f"{grown} of {len(parts)} entries' growth factors match the book's (± half its growth)"
        )
        j = stats.all_of(parts, summary)
        c = _claim(
            cid,
            "§1.7.7",
            words,
            j,
            inputs=inputs,
            book=book,
            expected=(
                f"band on every entry (layer 0, fixed validation batch): the 95% CI of the growth factor after/before "
                f"inside the chapter's {QK_GROWTH_BAND[0]}×–{QK_GROWTH_BAND[1]:g}×"
                if cid == "training_amplifies_qk"
                else "value on every entry (layer 0, fixed validation batch): the book's growth factor after/before "
                "(§1.7.7's table: 2.69, 2.64, 1.99, 3.29) inside our one-run 95% PI, within ± half the book's growth"
            )
            + ". Each entry's factor against the book's is in per_entry",
        )
        c["per_entry"] = entries
        out.append(c)
    return out


@check
def _three_orders(res):
    pairs = list(zip(qk_runs(res, "big_unscaled"), qk_runs(res, "big_scaled")))
    logs = _rs(math.log10(u["after"][0]["logit_std"] / s["after"][0]["logit_std"]) for u, s in pairs)
    return _claim(
        "unscaled_big_logits_vs_scaled",
        "§1.7.7",
        "4348 和 5477 都在“彻底饱和”那一档，和缩放那边的 1.8 差着三个数量级 / three orders of magnitude between "
        "unscaled and scaled",
        stats.band(logs, 2.5, 3.5),
        inputs={"log10_ratio": logs},
        book={
            "unscaled": _QK["big_d256_unscaled"]["logit_std"][1],
            "scaled": _QK["big_d256_scaled"]["logit_std"][1],
            "orders": 3,
        },
        expected="band: log10(unscaled / scaled logit std after training, fixed validation batch) rounds to 3: "
        "its 95% CI inside [2.5, 3.5]",
    )


@check
def _alignment(res):
    f = _rs(growth(q, "logit_std") / (growth(q, "q_std") * growth(q, "k_std")) for q in qk_runs(res, "big_unscaled"))
    book = 2650 / 296
    tol = round_sig(TOL_HALF * book, 3)
    sesoi = round_sig(TOL_HALF * (book - 1), 3)
    return _claim(
        "superlinear_growth",
        "§1.7.7",
        "不缩放那一边的涨法是“超乘法”的：q、k 各涨 17 倍只能解释 296 倍，剩下的约 9 倍来自 q 与 k 的相关性增强 / "
        "the logit growth is superlinear: about 9× comes from q-k alignment",
        stats.all_of(
            [stats.effect([x - 1 for x in f], direction=+1, sesoi=sesoi), stats.value(f, round_sig(book, 3), tol=tol)]
        ),
        inputs={"alignment_factor": f, "book": round_sig(book, 3), "tol": tol, "sesoi": sesoi},
        book=round_sig(book, 3),
        expected=f"logit growth ÷ (q growth × k growth): effect > 1 (superlinear; smallest effect {sesoi}, half "
        f"the book's excess) and value: 8.95 inside our one-run PI, within ± {tol} (half the book's number)",
    )


@check
def _scaled_after(res):
    vals = {k: _rs(q["after"][0]["logit_std"] for q in qk_runs(res, k)) for k in ("small_scaled", "big_scaled")}
    b_small, b_big = _QK["small_d32_scaled"]["logit_std"][1], _QK["big_d256_scaled"]["logit_std"][1]
    j = stats.all_of(
        [
            stats.value(vals["small_scaled"], b_small, tol=TOL_HALF * b_small),
            stats.value(vals["big_scaled"], b_big, tol=TOL_HALF * b_big),
        ]
    )
    return _claim(
        "scaled_logit_std_after",
        "§1.7.7",
        "缩放的模型训练后 logits 标准差：d_head=32 为 3.3，d_head=256 为 1.8（离 1 很近）/ the scaled models "
        "settle at 3.3 and 1.8",
        j,
        inputs={**vals, "book_small": b_small, "book_big": b_big},
        book={"small_scaled": b_small, "big_scaled": b_big},
        expected=f"value for each (fixed validation batch, layer 0): the book's number inside our one-run PI, "
        f"within ± half of it ({TOL_HALF * b_small:.3g}, {TOL_HALF * b_big:.3g})",
    )


_QK_CLAIMS = ("training_amplifies_qk", "w_qkv_grows", "scaled_logit_std_after", "superlinear_growth")


# ------------------------------------------------------------------------- reasons
def _wd_evidence(
    res, key: str, judge: Callable[[list[float]], stats.Judgement], fmt: str = "{:.3g}"
) -> tuple[str, str]:
    """Does another weight decay bring ``key`` to the book? (category, evidence)

    Each weight decay's seeds are judged by ``judge``, the claim's own rule on those seeds; the
    optimizer setting explains a failure ("protocol") only when some other decay PASSES that rule
    while the default FAILS it. A decay with too few seeds to pass says so (INCONCLUSIVE, not a
    cause found); a difference of means alone is never taken for an explanation."""
    table = by_weight_decay(res, key)
    planned = ((res.get("config") or {}).get("settings") or {}).get("wd_values")
    if len(table) < 2 and planned == []:
        return "unexplained", (
            "not tested here: this run trains no weight-decay pairs (the full case trains 0 and 0.01 to test "
            "whether the optimizer setting explains it)"
        )
    if len(table) < 2:
        return "unexplained", (
            "not explained yet: the weight-decay runs (0 and 0.01) that would test whether "
            "the optimizer setting explains it have not finished"
        )
    default = res["pairs"]["big_scaled"]["config"]["weight_decay"]
    judged = {wd: judge(v) for wd, v in table.items()}
    verdict = {wd: j.verdict for wd, j in judged.items()}

    def one(wd: float, v: list[float]) -> str:
        j = judged[wd]
        need = f", ~{j.n_needed} seeds to decide" if j.verdict == stats.INCONCLUSIVE and j.n_needed else ""
        return f"wd {wd:g}: {fmt.format(sum(v) / len(v))} (n={len(v)}, {j.verdict}{need})"

    text = ", ".join(one(wd, v) for wd, v in sorted(table.items()))
    fixes = [wd for wd, v in verdict.items() if wd != default and v == stats.PASS]
    if fixes and verdict[default] == stats.FAIL:
        return "protocol", (
            f"weight decay (the book never states one; we use {default:g}): {text}; "
            f"the claim's rule passes at weight decay {', '.join(f'{w:g}' for w in fixes)} and fails at {default:g}"
        )
    open_ = [wd for wd, v in verdict.items() if wd != default and v == stats.INCONCLUSIVE]
    if open_:
        return "unexplained", (
            f"weight decay not ruled in or out: {text} (the claim's rule on each decay's seeds; "
            f"INCONCLUSIVE at {', '.join(f'{w:g}' for w in open_)}: more seeds there would say)"
        )
    return "unexplained", f"weight decay does not explain it: {text} (the claim's rule on each decay's seeds)"


def _in_band(lo: float, hi: float) -> Callable[[list[float]], stats.Judgement]:
    return lambda v: stats.band(v, lo, hi)


# What each book claim reads, for the scale of a result smaller than the full case (scale_reason):
# the §1.3 sweep (its inits per d_head), the d_model-512 sweep and §1.8.4's point, and step 0 of the
# trained runs (no run length matters there). Every other book claim reads the training itself.
INIT_SWEEP_CLAIMS = frozenset(
    {
        "init_std_table",
        "init_entropy_table",
        "init_std_below_theory",
        "init_std_slope_sqrt",
        "variance_formula",
        "formula_misses_at_32",
    }
)
FIXED_SWEEP_CLAIMS = frozenset({"four_heads_std_near_0_2", "fixed_d_model_slope_half"})
AT_INIT_CLAIMS = frozenset(
    {
        "init_entropy_already_sharper",
        "small_init_logit_std_176",
        "small_init_logit_std_177",
        "small_init_safe_zone",
        "big_init_near_critical",
    }
)


def run_steps(res: dict) -> int:
    """The steps the case's runs were planned for (a diverged run's shorter trace does not count): the
    settings' steps, else the longest pair member's max_steps, else its steps run."""
    planned = ((res.get("config") or {}).get("settings") or {}).get("steps")
    if isinstance(planned, int) and not isinstance(planned, bool):
        return planned
    steps = [(v.get("config") or {}).get("max_steps") or v.get("steps") for v in res["pairs"].values()]
    return max(int(s) for s in steps if isinstance(s, (int, float)) and not isinstance(s, bool))


def _collapse_scale(res: dict, n: int, lim: int) -> str | None:
    """The collapse claim in a short run: the scale explains its FAIL only when every seed's entropy
    fell below 0.01 within the book's own 222 steps (or the run ended before step 222 without it)."""
    firsts, finals = [], []
    for u in runs(res, "big_unscaled"):
        ent = series(u, "weight_entropy")
        i = next((j for j, e in enumerate(ent) if e is not None and e < 0.01), None)
        if i is None and n >= COLLAPSE_STEP:
            return None  # no collapse in the book's 222 steps: the run's length does not explain that
        firsts.append(None if i is None else u["trace"]["step"][i])
        finals.append(end_mean(u, "weight_entropy"))
    warm = (res["pairs"]["big_unscaled"].get("config") or {}).get("warmup")
    fell = [f for f in firsts if f is not None]
    if fell and max(fell) > COLLAPSE_STEP:
        return None
    when = (
        f"The entropy fell below 0.01 at step {', '.join(str(f) for f in fell)}, within the book's 222 steps"
        if fell
        else f"The run ends at step {n}, before the book's step 222"
    )
    tail = f"; the last-{END_WINDOW}-step mean ({', '.join(f'{x:.2g}' for x in finals)}) ends at step {n}"
    if fell:
        tail += f", {n - max(fell)} steps after the collapse, the book's 0.0001–0.0004 some 1,200 steps after"
    warmup = (
        f", inside the {warm}-step learning-rate warmup (the book's, the same at any run length)"
        if isinstance(warm, int) and lim < warm
        else ""
    )
    return f"{when}; a {n}-step run maps the book's step 222 to step {lim}{warmup}{tail}"


def scale_reason(cid: str, res: dict) -> str | None:
    """Why a result smaller than the full case cannot test claim ``cid``, in its own numbers, or None
    where the claim reads nothing smaller than the full case (then the scale explains nothing: a FAIL at
    full size is never put down to it). Steps count for the claims that read the training, inits for
    those that read the sweeps; step 0 of a run is the same at any length."""
    from .settings import CaseSettings  # the full case's sizes

    full = CaseSettings()
    if cid in AT_INIT_CLAIMS:
        return None
    if cid in INIT_SWEEP_CLAIMS or cid in FIXED_SWEEP_CLAIMS:
        fixed = cid in FIXED_SWEEP_CLAIMS
        rows = (res.get("init_sweep_fixed_d_model") if fixed else res.get("init_sweep")) or []
        if cid == "four_heads_std_near_0_2":
            rows = [res.get("init_four_heads") or {}]
        want = full.init_samples_fixed if fixed else full.init_samples
        have = [r.get("samples") for r in rows if isinstance(r.get("samples"), int)]
        if not have or min(have) >= want:
            return None
        return (
            f"每个 d_head 只抽了 {min(have)} 次初始化，完整案例 {want} 次 / {min(have)} initialisations per d_head, "
            f"the full case {want}: the sampling spread of so few can decide the rule's tolerance"
        )
    n = run_steps(res)
    if n >= BOOK_RUN_STEPS:
        return None
    lim = round(COLLAPSE_STEP * n / BOOK_RUN_STEPS)
    if cid == "big_unscaled_entropy_collapses":
        why = _collapse_scale(res, n, lim)
        if why is None:
            return None
    else:
        why = f"Its numbers are read from a {n}-step run, the book's from a {BOOK_RUN_STEPS}-step one"
    seeds = len(res["seeds"]["runs"])
    return (
        f"本次 {n} 步、{seeds} 个种子，完整案例 {full.steps} 步、{len(full.seeds)} 个种子，这么短的运行检验不了这条论断 / "
        f"this run: {n} steps, {seeds} seed(s); the full case: {full.steps} steps, {len(full.seeds)} seeds. {why}: a "
        f"run this short does not test the claim, the full case does"
    )


def explain(cid: str, res: dict, c: dict | None = None) -> dict:
    """Why a book claim fails: a finding about the book, a protocol difference, ours, the scale of a run
    smaller than the full case, or unexplained.

    A reason found in the numbers (a finding, a protocol difference) stands at any scale; one that is
    not ("unexplained") becomes "scale" where the claim reads something smaller than the full case
    (:func:`scale_reason`): fewer steps than the book's 1500, fewer inits than 400 / 100."""
    reason = _explain(cid, res, c)
    if reason["category"] == "unexplained":
        why = scale_reason(cid, res)
        if why is not None:
            return {"category": "scale", "text": why}
    return reason


def _explain(cid: str, res: dict, c: dict | None = None) -> dict:
    """The reason the claim's why (:data:`WHY`) computes from ``res`` and the claim's own numbers, else
    unexplained."""
    why = WHY.get(cid)
    return why(res, c or {}) if why else verdicts.unexplained()


def _finding(text: str) -> dict:
    return {"category": "finding", "text": text}


def _why_slope(res: dict, c: dict) -> dict:
    d, m = _SWEEP["d_head"], _SWEEP["measured_logit_std"]
    book_slope = math.log(m[-1] / m[0]) / math.log(d[-1] / d[0])
    fixed = res.get("init_sweep_fixed_d_model") or []
    txt = (
        f"its own table has slope {book_slope:.2f}, not {c.get('book', 0.5)}. The sweep keeps "
        f"d_model = d_head, so Var(q_i) = d_model σ² grows with d and the std with d^1.5"
    )
    if fixed:
        txt += f"; with d_model fixed at 512 the slope is {sweep_slope(fixed):.2f} (init_sweep_fixed_d_model)"
    return _finding(txt)


def _why_formula_32(res: dict, c: dict) -> dict:
    f32 = next(r for r in res["init_sweep"] if r["d_head"] == 32)
    return _finding(
        f"{c['book']['predicted']} is Var(q_i) = 32 × 0.02², a variance, not a std; eq. 1.2 "
        f"gives v√32 = {f32['formula_logit_std']:.4f} vs measured {f32['logit_std_unscaled']:.4f}"
    )


def _why_176(res: dict, c: dict) -> dict:
    return _finding(
        f"{c['book']:.3f} is the §1.3 sweep's value at d_model = d_head = 32; the small model has d_model 128 "
        f"(d_head 32), for which the book's own §1.7.7 table gives {_QK['small_d32_unscaled']['logit_std'][0]} "
        "(claim small_init_logit_std_177)"
    )


def _why_safe_zone(res: dict, c: dict) -> dict:
    f32 = next((r for r in res["init_sweep"] if r["d_head"] == 32), None)
    h = [series(r, "weight_entropy")[0] for r in runs(res, "small_unscaled")]
    ls = [series(r, "logit_std")[0] for r in runs(res, "small_unscaled")]
    gap = c["inputs"]["book"]  # the book's 1 − H
    txt = (
        f"{c['book']} is the §1.3 sweep's entropy at d_model = d_head = 32"
        + (f" (ours there {f32['entropy_unscaled']:.4f})" if f32 else "")
        + f", like its {_SWEEP['measured_logit_std'][0]:.3f} (claim small_init_logit_std_176); the small model has "
        f"d_model 128, init logit std {sum(ls) / len(ls):.3f} (the book's own §1.7.7 "
        f"{_QK['small_d32_unscaled']['logit_std'][0]}) and entropy {sum(h) / len(h):.4f}: "
        f"1 − H = {1 - sum(h) / len(h):.4f}, {(1 - sum(h) / len(h)) / gap:.0f}× the book's {gap}"
    )
    if all(x < 1 for x in ls):
        txt += "; it is still far from saturation (logit std < 1 on every seed), as the book says"
    return _finding(txt)


def _why_four_heads(res: dict, c: dict) -> dict:
    pt = res.get("init_four_heads", {})
    return _finding(
        f"{c['book']} is read off the §1.3 sweep at d_model = d_head = 64; with "
        f"d_model 256 split into 4 heads Var(q_i) = 256σ² stays, so the std is v√64 ≈ "
        f"{256 * _CFG['init_std'] ** 2 * 8:.2f}; measured {pt.get('logit_std_unscaled', float('nan')):.3f}"
    )


def _why_jacobian_drop(res: dict, c: dict) -> dict:
    start, end = c["book"]["start"], c["book"]["end"]
    cat, ev = _wd_evidence(res, "unscaled_jacobian_end", _in_band(0.0, end * 3), "{:.2g}")
    ends = [end_mean(u, "jacobian_fro") for u in runs(res, "big_unscaled")]
    e = sum(ends) / len(ends)
    return {
        "category": "finding" if cat != "protocol" else cat,
        "text": f"its own numbers {start} → {end:.5f} are a drop of {start / end:,.0f}×, not “一万多倍 / four orders”, "
        f"so the words fail on the book's own table; our end value {e:.2g} is also {e / end:.0f}× "
        f"the book's {end:.5f}, which that does not explain: " + ev,
    }


def _why_band(key: str):
    """A band claim: does another weight decay bring ``key`` into the claim's own band?"""

    def why(res: dict, c: dict) -> dict:
        cat, ev = _wd_evidence(res, key, _in_band(*c["book"]))
        return {"category": cat, "text": ev}

    return why


def _why_explode(res: dict, c: dict) -> dict:
    b = c["book"]
    cat, ev = _wd_evidence(res, "unscaled_logit_std_end", lambda v: stats.value(v, b, tol=TOL_HALF * b), "{:.0f}")
    return {"category": cat, "text": ev}


def _why_grows(key: str):
    def why(res: dict, c: dict) -> dict:
        cat, ev = _wd_evidence(res, key, _in_band(1.0, math.inf))
        return {"category": cat, "text": "big scaled model, " + ev}

    return why


def _why_scaled_after(res: dict, c: dict) -> dict:
    vals = {k: [q["after"][0]["logit_std"] for q in qk_runs(res, k)] for k in ("small_scaled", "big_scaled")}
    shown = ", ".join(
        f"{k} {spread(v)['mean']:.2f} ± {spread(v)['sd']:.2f} (book {c['book'][k]})" for k, v in vals.items()
    )
    return verdicts.unexplained(
        f"{shown} on the fixed validation batch; both settle near 1–2, the book's {c['book']['small_scaled']} for "
        "d_head 32 is not reproduced"
    )


def _why_small_over_seeds(res: dict, c: dict) -> dict:
    g = small_seed_gaps(res)
    lo, hi = c["book"]
    return {
        "category": "unexplained",
        "text": f"the small gap is at the level of seed noise (sd {spread(g)['sd']:.3f} over {len(g)} seeds), "
        f"as the book itself says ('量级与训练本身的随机性相当'); its {lo}–{hi} for every seed is not "
        f"reproduced here ({', '.join(f'{x:.3f}' for x in g)})",
    }


# claim id -> why it fails, computed from the results and the claim (its book numbers and band)
WHY: dict[str, Callable[[dict, dict], dict]] = {
    "init_std_slope_sqrt": _why_slope,
    "formula_misses_at_32": _why_formula_32,
    "small_init_logit_std_176": _why_176,
    "small_init_safe_zone": _why_safe_zone,
    "four_heads_std_near_0_2": _why_four_heads,
    "big_unscaled_jacobian_drops": _why_jacobian_drop,
    "big_scaled_entropy_band": _why_band("scaled_entropy_end"),
    "big_scaled_jacobian_band": _why_band("scaled_jacobian_end"),
    "big_scaled_logit_std_band": _why_band("scaled_logit_std_end"),
    "big_unscaled_logits_explode": _why_explode,
    "training_amplifies_qk": _why_grows("q_growth_scaled"),
    "w_qkv_grows": _why_grows("W_qkv_after_scaled"),
    "scaled_logit_std_after": _why_scaled_after,
    "small_gap_over_seeds": _why_small_over_seeds,
}
