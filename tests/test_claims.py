"""Every claim can fail, and every claim can pass: one violating and one satisfying result per id.

The satisfying result is built from the book's own numbers (reference_values.json): traces
that follow §1.12's tables, the §1.3 sweep, the §1.7.7 q/k table, three seeds each. Where the
book contradicts itself (its slope, its 0.070 vs 0.29, its 0.0128), no single result can
satisfy every claim, so FIX names the change that satisfies that one claim.
"""

import copy
import functools
import json
import math
from pathlib import Path

import pytest

from attnlab.lab.case import claims as C
from attnlab.lab.case.claims import check_claims

ROOT = Path(__file__).resolve().parents[1]
STEPS = 1500
SEEDS = (20261014, 20261015, 20261016)
JIT = (1.0, 1.01, 0.99)  # seed-to-seed variation of the synthetic runs


def _lin(t, pts):
    """Piecewise-linear through (step, value) points."""
    for (a, va), (b, vb) in zip(pts, pts[1:]):
        if a <= t <= b:
            return va + (vb - va) * (t - a) / (b - a)
    return pts[-1][1]


def _run(key: str, j: float, seed: int) -> dict:
    big = key.startswith("big")
    scaled = key.endswith("_scaled")
    steps = list(range(STEPS))
    if big and not scaled:
        ent = [(0, 0.712), (150, 0.005), (222, 0.0022), (444, 0.0003), (1500, 0.0001)]
        jac = [(0, 0.2975), (222, 0.00471), (444, 0.00051), (1000, 0.00002), (1500, 0.00002)]
        lsd = [(0, 1.63), (222, 982.9), (444, 3176.5), (888, 5416.2), (1200, 5477), (1500, 5477)]
    elif big:
        ent = [(0, 0.9985), (150, 0.6437), (222, 0.6437), (1500, 0.60)]
        jac = [(0, 0.2017), (150, 0.30), (1500, 0.30)]
        lsd = [(0, 0.10), (150, 1.8), (1500, 1.8)]
    else:
        ent = [(0, 0.999), (300, 0.8), (1500, 0.75)]
        jac = [(0, 0.26), (300, 0.3), (1500, 0.3)]
        lsd = [(0, 0.29 if not scaled else 0.29 / math.sqrt(32)), (1500, 3.0)]
    end = {"small_unscaled": 4.17, "small_scaled": 4.00, "big_unscaled": 5.18, "big_scaled": 4.23}[key]
    part = {1.0: 1.0, 1.01: 1.05, 0.99: 0.93}[j]  # seed-to-seed variation of the big pair's parting

    def loss(t):
        base = 3.75 + 3.0 * math.exp(-t / 60) + 0.3 * (1 - t / 1500)
        # the unscaled big curve parts from step ~60 and is stuck from ~360 on, 0.95 above
        return base + (0.95 * part * min(max((t - 60) / 300, 0), 1) if key == "big_unscaled" else 0.0)

    def val(t):  # falls 2.5 early, then 0.1 over steps 1000 -> 1500 (§1.18.4)
        return end + 0.1 * j * max(0, 1500 - t) / 500 + 2.5 * math.exp(-t / 100)

    val_steps = [99 + 100 * i for i in range(15)]
    trace = {
        "step": steps,
        "loss": [loss(t) for t in steps],
        "grad_norm": [1.0] * STEPS,
        "val_step": val_steps,
        "val_loss": [val(t) for t in val_steps],
        "layers": [
            {
                "weight_entropy": [_lin(t, ent) * (j if t else 1) for t in steps],
                "jacobian_fro": [_lin(t, jac) * (j if t else 1) for t in steps],
                "logit_std": [_lin(t, lsd) * j for t in steps],
                "q_std": [0.3 + t / 1500 for t in steps],
                "k_std": [0.3 + t / 1500 for t in steps],
            }
        ],
    }
    gap_j = {1.0: 0.0, 1.01: -0.01, 0.99: 0.01}[j]  # small gaps 0.17, 0.16, 0.18
    val_end = end + (gap_j if key == "small_unscaled" else 0.0) + (0.0 if key != "big_unscaled" else (j - 1))
    return {
        "run": f"{key}_s{seed}",
        "config": {"d_model": 256 if big else 128, "n_head": 1 if big else 4, "weight_decay": 0.1, "seed": seed},
        "steps": STEPS,
        "loss_start": loss(0),
        "loss_end": end - 0.2,
        "val_loss_end": val_end,
        "trace": trace,
    }


QK = {
    "small_scaled": {
        "q_std": (0.228, 1.016),
        "k_std": (0.229, 1.217),
        "logit_std": (0.29 / math.sqrt(32), 3.3),
        "W_qkv_fro": (4.45, 11.98),
    },
    "small_unscaled": {
        "q_std": (0.228, 0.863),
        "k_std": (0.229, 1.036),
        "logit_std": (0.29, 13.1),
        "W_qkv_fro": (4.45, 11.76),
    },
    "big_scaled": {
        "q_std": (0.316, 0.650),
        "k_std": (0.317, 0.654),
        "logit_std": (1.64 / 16, 1.8),
        "W_qkv_fro": (8.89, 17.73),
    },
    "big_unscaled": {
        "q_std": (0.316, 5.457),
        "k_std": (0.317, 5.361),
        "logit_std": (1.64, 4348),
        "W_qkv_fro": (8.89, 29.23),
    },
}


def _qk(key: str, j: float) -> dict:
    row = lambda i, f: {c: v[i] * f for c, v in QK[key].items()} | {"layer": 0, "logit_absmax": 10.0}
    return {"before": [row(0, 1.0)], "after": [row(1, j)]}


def book_like() -> dict:
    """A case result that follows the book's numbers on three seeds (a fresh copy each call)."""
    return copy.deepcopy(_book_like())


@functools.cache
def _book_like() -> dict:
    ref = (
        json.loads((ROOT.parent.parent / "shared" / "book" / "reference_values.json").read_text())
        if (ROOT.parent.parent / "shared" / "book").is_dir()
        else None
    )
    sweep_book = [0.070, 0.202, 0.561, 1.615, 4.666]
    ent_book = [0.999, 0.993, 0.939, 0.696, 0.272]
    ds = [32, 64, 128, 256, 512]
    sweep = [
        {
            "d_head": d,
            "samples": 400,
            "theory_sqrt_d_head": math.sqrt(d),
            "logit_std_unscaled": s,
            "logit_std_scaled": s / math.sqrt(d),
            "entropy_unscaled": e,
            "ratio_unscaled_to_theory": s / math.sqrt(d),
            "var_q_formula": d * 4e-4,
            "formula_logit_std": d * 4e-4 * math.sqrt(d),
        }
        for d, s, e in zip(ds, sweep_book, ent_book)
    ]
    fixed = [
        {
            "d_head": d,
            "d_model": 512,
            "n_head": 512 // d,
            "samples": 100,
            "logit_std_unscaled": 0.2048 * math.sqrt(d),
            "formula_logit_std": 0.2048 * math.sqrt(d),
            "entropy_unscaled": 0.9,
            "logit_std_scaled": 0.2048,
        }
        for d in ds
    ]
    keys = ("small_unscaled", "small_scaled", "big_unscaled", "big_scaled")
    pairs = {k: _run(k, JIT[0], SEEDS[0]) for k in keys}
    seed_runs = {k: [_run(k, JIT[i], SEEDS[i]) | {"qk": _qk(k, JIT[i])} for i in (1, 2)] for k in keys}
    seeds = []
    for i, seed in enumerate(SEEDS):
        u = pairs["small_unscaled"] if i == 0 else seed_runs["small_unscaled"][i - 1]
        s = pairs["small_scaled"] if i == 0 else seed_runs["small_scaled"][i - 1]
        seeds.append(
            {
                "seed": seed,
                "loss_end_unscaled": u["loss_end"],
                "loss_end_scaled": s["loss_end"],
                "val_loss_end_unscaled": u["val_loss_end"],
                "val_loss_end_scaled": s["val_loss_end"],
            }
        )
    assert ref is None or ref["case_loss_1_2_and_1_4"]["gap_big"] == 0.95
    return {
        "config": {"corpus_unigram_entropy": 5.5, "settings": {"steps": STEPS, "seeds": list(SEEDS)}},
        "init_sweep": sweep,
        "init_sweep_fixed_d_model": fixed,
        "init_four_heads": {"d_head": 64, "d_model": 256, "n_head": 4, "logit_std_unscaled": 0.2},
        "pairs": pairs,
        "seed_runs": seed_runs,
        "seeds": {"runs": seeds},
        "qk_scale": {k: _qk(k, JIT[0]) for k in keys},
        "weight_decay": {"values": [], "pairs": []},
    }


def _all_runs(res, key):
    return C.runs(res, key)


def _set_series(res, key, name, fn):
    for r in _all_runs(res, key):
        vals = r["trace"]["layers"][0][name]
        r["trace"]["layers"][0][name] = [fn(t, v) for t, v in enumerate(vals)]


def _set_qk(res, key, col, when, factor):
    for q in C.qk_runs(res, key):
        q[when][0][col] *= factor


def _small_gap(res, gaps):
    for r, g in zip(res["seeds"]["runs"], gaps):
        r["val_loss_end_unscaled"] = r["val_loss_end_scaled"] + g


def _big_gap(res, gaps):
    for u, s, g in zip(_all_runs(res, "big_unscaled"), _all_runs(res, "big_scaled"), gaps):
        u["val_loss_end"] = s["val_loss_end"] + g


def _loss(res, key, fn):
    for r in _all_runs(res, key):
        r["trace"]["loss"] = [fn(t, v) for t, v in enumerate(r["trace"]["loss"])]


def _per_seed(res, key, fn):
    """fn(seed index, run) edits each run of pair member ``key`` (first seed first)."""
    for i, r in enumerate(_all_runs(res, key)):
        fn(i, r)


def _series_seeds(res, key, name, fns):
    """Seed i's layer-0 series ``name`` becomes fns[i](t, v)."""

    def edit(i, r):
        vals = r["trace"]["layers"][0][name]
        r["trace"]["layers"][0][name] = [fns[i](t, v) for t, v in enumerate(vals)]

    _per_seed(res, key, edit)


def _qk_seeds(res, key, col, factors, when="after"):
    for q, f in zip(C.qk_runs(res, key), factors):
        q[when][0][col] *= f


def _val_seeds(res, key, fns):
    """Seed i's validation curve becomes fns[i](step, v)."""

    def edit(i, r):
        tr = r["trace"]
        tr["val_loss"] = [fns[i](t, v) for t, v in zip(tr["val_step"], tr["val_loss"])]

    _per_seed(res, key, edit)


def _no_gap(res):
    """The unscaled big curve is the scaled one: no parting at all."""
    for u, s in zip(_all_runs(res, "big_unscaled"), _all_runs(res, "big_scaled")):
        u["trace"]["loss"] = list(s["trace"]["loss"])


def _gap_scale(res, factors):
    """Seed i's unscaled big curve parts by factors[i] times the book-like gap."""
    for u, s, f in zip(_all_runs(res, "big_unscaled"), _all_runs(res, "big_scaled"), factors):
        u["trace"]["loss"] = [b + f * (a - b) for a, b in zip(u["trace"]["loss"], s["trace"]["loss"])]


# id -> mutation that violates it (applied to the book-like result)
BREAK = {
    "start_near_ln_vocab": lambda r: r["pairs"]["big_scaled"].update(loss_start=6.5),
    "twins_share_init": lambda r: _set_qk(r, "big_scaled", "q_std", "before", 1.001),
    "fixed_d_model_slope_half": lambda r: [
        x.update(logit_std_unscaled=x["d_head"] ** 1.5 / 100) for x in r["init_sweep_fixed_d_model"]
    ],
    "big_unscaled_beats_unigram": lambda r: r["config"].update(corpus_unigram_entropy=5.2),
    "small_gap_small": lambda r: _small_gap(r, [0.5, 0.52, 0.48]),
    "small_gap_over_seeds": lambda r: _small_gap(r, [0.17, 0.05, 0.15]),
    "small_gap_not_zero": lambda r: _small_gap(r, [-0.05, -0.04, -0.06]),  # the scaled side is the worse one
    "big_gap_large": lambda r: _big_gap(r, [0.3, 0.31, 0.29]),
    # the big gap barely above the small one: the ratio 1.8, far below the book's 5.6
    "big_gap_several_times_small": lambda r: _big_gap(r, [0.3, 0.31, 0.29]),
    "curves_part_near_200": _no_gap,
    "big_unscaled_still_learns": lambda r: [x.update(val_loss_end=6.5) for x in _all_runs(r, "big_unscaled")],
    # the validation loss still falls 0.5 from 1000 to 1500
    "late_training_slow": lambda r: _val_seeds(
        r, "small_scaled", [lambda t, v: v + (0.4 * (1500 - t) / 500 if t >= 1000 else 0.4)] * 3
    ),
    "init_std_table": lambda r: r["init_sweep"][2].update(logit_std_unscaled=0.8),
    "init_entropy_table": lambda r: r["init_sweep"][4].update(entropy_unscaled=0.6),
    "init_std_below_theory": lambda r: r["init_sweep"][0].update(logit_std_unscaled=0.02),
    "init_std_slope_sqrt": lambda r: None,  # the book's own table already violates it
    "variance_formula": lambda r: r["init_sweep"][4].update(formula_logit_std=3.0),
    "formula_misses_at_32": lambda r: None,  # eq. 1.2 agrees at 32: violated as built
    "four_heads_std_near_0_2": lambda r: r["init_four_heads"].update(logit_std_unscaled=0.81),
    "big_unscaled_entropy_collapses": lambda r: _set_series(
        r, "big_unscaled", "weight_entropy", lambda t, v: 0.9 if t > 0 else v
    ),
    "big_unscaled_jacobian_drops": lambda r: _set_series(r, "big_unscaled", "jacobian_fro", lambda t, v: max(v, 0.001)),
    "big_scaled_entropy_band": lambda r: _set_series(
        r, "big_scaled", "weight_entropy", lambda t, v: v + 0.2 if t > 150 else v
    ),
    "big_scaled_jacobian_band": lambda r: _set_series(
        r, "big_scaled", "jacobian_fro", lambda t, v: v * 0.9 if t > 150 else v
    ),
    "big_scaled_logit_std_band": lambda r: _set_series(
        r, "big_scaled", "logit_std", lambda t, v: v * 0.7 if t > 150 else v
    ),
    "big_scaled_entropy_keeps_falling": lambda r: _set_series(
        r, "big_scaled", "weight_entropy", lambda t, v: 0.62 if t > 150 else v
    ),
    "big_scaled_jacobian_rises": lambda r: _set_series(
        r, "big_scaled", "jacobian_fro", lambda t, v: 0.2017 * 1.05 if t > 150 else v
    ),
    "init_entropy_already_sharper": lambda r: _set_series(
        r, "big_unscaled", "weight_entropy", lambda t, v: 0.99 if t == 0 else v
    ),
    "small_init_logit_std_176": lambda r: None,  # the small model starts at 0.29 as built
    "small_init_logit_std_177": lambda r: _set_series(
        r, "small_unscaled", "logit_std", lambda t, v: 0.070 if t == 0 else v
    ),
    "small_init_safe_zone": lambda r: _set_series(
        r, "small_unscaled", "weight_entropy", lambda t, v: 0.987 if t == 0 else v
    ),
    "big_init_near_critical": lambda r: _set_series(r, "big_unscaled", "logit_std", lambda t, v: 0.5 if t == 0 else v),
    "big_unscaled_logits_explode": lambda r: _set_series(
        r, "big_unscaled", "logit_std", lambda t, v: v if t < 1400 else 1000
    ),
    "training_amplifies_qk": lambda r: _set_qk(r, "big_scaled", "q_std", "after", 0.3),  # q shrinks
    "w_qkv_grows": lambda r: _set_qk(r, "small_scaled", "W_qkv_fro", "after", 0.3),
    "unscaled_big_logits_vs_scaled": lambda r: _set_qk(r, "big_unscaled", "logit_std", "after", 0.01),
    "superlinear_growth": lambda r: _set_qk(r, "big_unscaled", "logit_std", "after", 0.3),
    "scaled_logit_std_after": lambda r: _set_qk(r, "small_scaled", "logit_std", "after", 0.55),
}

# id -> change that satisfies it where the book-like result does not (the book contradicts itself)
FIX = {
    # "几乎重合": the book's own one run (0.17) sits on the margin; a pair that nearly coincides passes
    "small_gap_small": lambda r: _small_gap(r, [0.02, 0.05, 0.03]),
    "init_std_slope_sqrt": lambda r: [
        x.update(logit_std_unscaled=0.0124 * math.sqrt(x["d_head"])) for x in r["init_sweep"]
    ],
    "formula_misses_at_32": lambda r: r["init_sweep"][0].update(formula_logit_std=0.0128),
    "small_init_logit_std_176": lambda r: _set_series(
        r, "small_unscaled", "logit_std", lambda t, v: 0.070 if t == 0 else v
    ),
    # the chapter's own q growth 17.3 (5.457 / 0.316) sits at the edge of the "17 倍" it writes (16.5–17.5): at
    # three book-like seeds its interval straddles 17.5, undecided; the fix grows q as much as k (16.9)
    "training_amplifies_qk": lambda r: _set_qk(r, "big_unscaled", "q_std", "after", 16.9 / 17.27),
}

# id -> mutation that leaves it undecided at three seeds: the seeds disagree, the interval is wide
UNSURE = {
    "small_gap_small": lambda r: _small_gap(r, [0.17, 0.05, 0.30]),
    "small_gap_not_zero": lambda r: _small_gap(r, [0.17, -0.15, 0.05]),
    "big_gap_large": lambda r: _big_gap(r, [0.95, 0.6, 1.3]),
    "big_gap_several_times_small": lambda r: _big_gap(r, [0.95, 0.2, 1.7]),
    "curves_part_near_200": lambda r: _gap_scale(r, [1.0, -0.2, 0.6]),
    "big_unscaled_still_learns": lambda r: [
        x.update(val_loss_end=v) for x, v in zip(_all_runs(r, "big_unscaled"), [5.18, 4.7, 5.5])
    ],
    "late_training_slow": lambda r: _val_seeds(
        r,
        "small_scaled",
        [lambda t, v, k=k: v + (k * (1500 - t) / 500 if t >= 1000 else k) for k in (0.0, -0.07, 0.07)],
    ),
    "big_scaled_entropy_band": lambda r: _series_seeds(
        r, "big_scaled", "weight_entropy", [lambda t, v: v, lambda t, v: v + (0.2 if t > 150 else 0), lambda t, v: v]
    ),
    "big_scaled_jacobian_band": lambda r: _series_seeds(
        r, "big_scaled", "jacobian_fro", [lambda t, v: v, lambda t, v: v * (0.9 if t > 150 else 1), lambda t, v: v]
    ),
    "big_scaled_logit_std_band": lambda r: _series_seeds(
        r, "big_scaled", "logit_std", [lambda t, v: v, lambda t, v: v * (0.5 if t > 150 else 1), lambda t, v: v]
    ),
    "big_scaled_entropy_keeps_falling": lambda r: _series_seeds(
        r,
        "big_scaled",
        "weight_entropy",
        [
            lambda t, v: v,
            lambda t, v: 0.62 if t > 150 else v,
            lambda t, v: v - (0.001 * (t - 150) / 10 if t > 150 else 0),
        ],
    ),
    "big_scaled_jacobian_rises": lambda r: _series_seeds(
        r,
        "big_scaled",
        "jacobian_fro",
        [lambda t, v: v, lambda t, v: 0.19 if t > 150 else v, lambda t, v: v],
    ),
    "init_entropy_already_sharper": lambda r: _series_seeds(
        r,
        "big_unscaled",
        "weight_entropy",
        [lambda t, v: v, lambda t, v: 0.95 if t == 0 else v, lambda t, v: 0.5 if t == 0 else v],
    ),
    "small_init_logit_std_176": lambda r: _series_seeds(
        r, "small_unscaled", "logit_std", [lambda t, v, x=x: x if t == 0 else v for x in (0.07, 0.03, 0.11)]
    ),
    "small_init_logit_std_177": lambda r: _series_seeds(
        r, "small_unscaled", "logit_std", [lambda t, v, x=x: x if t == 0 else v for x in (0.29, 0.15, 0.45)]
    ),
    "small_init_safe_zone": lambda r: _series_seeds(
        r, "small_unscaled", "weight_entropy", [lambda t, v, x=x: x if t == 0 else v for x in (0.999, 0.9998, 0.998)]
    ),
    "big_init_near_critical": lambda r: _series_seeds(
        r, "big_unscaled", "logit_std", [lambda t, v, x=x: x if t == 0 else v for x in (1.615, 0.8, 2.4)]
    ),
    "big_unscaled_logits_explode": lambda r: _series_seeds(
        r, "big_unscaled", "logit_std", [lambda t, v, x=x: v * x for x in (1.0, 0.4, 1.6)]
    ),
    "training_amplifies_qk": lambda r: _qk_seeds(r, "big_scaled", "q_std", [1.0, 0.4, 0.6]),
    "w_qkv_grows": lambda r: _qk_seeds(r, "small_scaled", "W_qkv_fro", [1.0, 0.3, 0.5]),
    "unscaled_big_logits_vs_scaled": lambda r: _qk_seeds(r, "big_unscaled", "logit_std", [1.0, 10.0, 0.1]),
    "superlinear_growth": lambda r: _qk_seeds(r, "big_unscaled", "logit_std", [1.0, 2.0, 0.5]),
    "scaled_logit_std_after": lambda r: _qk_seeds(r, "small_scaled", "logit_std", [1.0, 0.5, 1.5]),
}
# exact arithmetic and statements about every seed ("都", a collapse per run) are PASS or FAIL only
NO_UNSURE = {
    "start_near_ln_vocab",
    "twins_share_init",
    "fixed_d_model_slope_half",
    "big_unscaled_beats_unigram",
    "small_gap_over_seeds",
    "init_std_table",
    "init_entropy_table",
    "init_std_below_theory",
    "init_std_slope_sqrt",
    "variance_formula",
    "formula_misses_at_32",
    "four_heads_std_near_0_2",
    "big_unscaled_entropy_collapses",
    "big_unscaled_jacobian_drops",
}


def _verdicts(res):
    return {c["id"]: c for c in check_claims(res)}


def _satisfying(cid):
    res = book_like()
    if cid in FIX:
        FIX[cid](res)
    return res


def test_every_claim_id_has_a_pass_a_fail_and_an_inconclusive_example():
    produced = set(_verdicts(book_like()))
    assert produced == set(BREAK), produced ^ set(BREAK)
    assert set(FIX) <= produced
    assert set(UNSURE) | NO_UNSURE == produced and not set(UNSURE) & NO_UNSURE
    rules = {cid: c["rule"] for cid, c in _verdicts(book_like()).items()}
    assert all(rules[cid] in ("exact", "every", "all_of") for cid in NO_UNSURE), rules


@pytest.mark.parametrize("cid", sorted(BREAK))
def test_claim_passes_on_a_satisfying_result(cid):
    c = _verdicts(_satisfying(cid))[cid]
    assert c["verdict"] == "PASS" and c["pass"], c


@pytest.mark.parametrize("cid", sorted(BREAK))
def test_claim_fails_on_a_violating_result(cid):
    res = book_like()  # the un-fixed result: for FIX ids the book-like result already violates it
    BREAK[cid](res)
    c = _verdicts(res)[cid]
    assert c["verdict"] == "FAIL" and not c["pass"], c
    if c["kind"] == "book":
        assert c["reason"]["category"] in C.REASON_LABELS and c["reason"]["text"]


@pytest.mark.parametrize("cid", sorted(UNSURE))
def test_claim_is_inconclusive_when_the_seeds_disagree(cid):
    res = _satisfying(cid)
    UNSURE[cid](res)
    c = _verdicts(res)[cid]
    assert c["verdict"] == "INCONCLUSIVE" and not c["pass"], c
    assert "reason" not in c  # only a FAIL carries a reason; an INCONCLUSIVE carries n_needed
    assert c["n"] == 3


def test_the_book_like_result_passes_everything_the_book_does_not_contradict():
    v = _verdicts(book_like())
    failing = {cid for cid, c in v.items() if c["verdict"] != "PASS"}
    assert failing == set(FIX)


def test_kinds_and_fields():
    for c in check_claims(book_like()):
        assert c["kind"] in ("book", "sanity", "beyond")
        assert c["kind"] != "beyond" or c["id"] == "small_gap_not_zero"  # §1.2 says the opposite: not the book's
        assert {"id", "kind", "section", "statement", "book", "rule", "inputs", "verdict", "interval", "n"} <= set(c)
        assert {"n_needed", "measured", "expected", "pass"} <= set(c)
        assert c["pass"] == (c["verdict"] == "PASS")
        assert c["section"].startswith("§") and isinstance(c["measured"], str)
        assert "/ " in c["statement"]  # the chapter's words first, English after


def test_one_seed_leaves_the_seed_rules_undecided():
    """With the big pair and the small pair on one seed only, no effect, value or band claim can
    pass: one seed has no spread."""
    res = book_like()
    res["seed_runs"] = {}
    res["seeds"]["runs"] = res["seeds"]["runs"][:1]
    for cid, c in _verdicts(res).items():
        if c["rule"] in ("effect", "value", "band"):
            assert c["verdict"] == "INCONCLUSIVE", (cid, c["detail"])


COMMITTED = ROOT / "data" / "ch1_case.json"
# the verdicts of the committed case (issue 21), re-judged from its numbers; a change here is a
# change of a verdict and needs its reason in the commit message
# the committed case: 10 seeds of the small pair, 6 of the big pair (3 until issue 22's runs)
COMMITTED_VERDICTS = {
    "start_near_ln_vocab": "PASS",
    "twins_share_init": "PASS",
    "fixed_d_model_slope_half": "PASS",
    "big_unscaled_beats_unigram": "PASS",
    # equivalence within ± 0.17 (amended: the value rule 0.17 ± 0.085 could never pass at this seed spread)
    "small_gap_small": "PASS",
    "small_gap_over_seeds": "FAIL",
    "small_gap_not_zero": "PASS",  # +0.057, 95% CI [+0.006, +0.108] over 10 seeds (kind beyond: ours, not §1.2's)
    "big_gap_large": "PASS",
    # the ratio itself (amended): 21.7 ± 9.6 over 6 seeds against the book's 5.6 ± 2.8, one run's PI too wide
    "big_gap_several_times_small": "INCONCLUSIVE",
    "curves_part_near_200": "PASS",
    "big_unscaled_still_learns": "PASS",
    "late_training_slow": "INCONCLUSIVE",
    "init_std_table": "PASS",
    "init_entropy_table": "PASS",
    "init_std_below_theory": "PASS",
    "init_std_slope_sqrt": "FAIL",
    "variance_formula": "PASS",
    "formula_misses_at_32": "FAIL",
    "four_heads_std_near_0_2": "FAIL",
    "big_unscaled_entropy_collapses": "PASS",
    "big_unscaled_jacobian_drops": "FAIL",
    "big_scaled_entropy_band": "FAIL",
    "big_scaled_jacobian_band": "INCONCLUSIVE",
    "big_scaled_logit_std_band": "INCONCLUSIVE",
    "big_scaled_entropy_keeps_falling": "INCONCLUSIVE",
    "big_scaled_jacobian_rises": "PASS",
    "init_entropy_already_sharper": "PASS",
    "small_init_logit_std_176": "FAIL",
    "small_init_logit_std_177": "PASS",
    "small_init_safe_zone": "FAIL",
    "big_init_near_critical": "PASS",
    "big_unscaled_logits_explode": "FAIL",
    # the chapter's band 1.6×–17× (not "> 1"): big_scaled q grows 1.6 ± 0.15, its 95% CI [1.44, 1.76] on the edge
    "training_amplifies_qk": "INCONCLUSIVE",
    # against the book's factors (amended): ours are below them in every configuration
    "w_qkv_grows": "FAIL",
    "unscaled_big_logits_vs_scaled": "PASS",
    "superlinear_growth": "PASS",
    "scaled_logit_std_after": "FAIL",
}


@pytest.fixture(scope="module")
def committed():
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


def test_the_committed_case_gets_the_reported_verdicts(committed):
    v = _verdicts(copy.deepcopy(committed))
    assert {cid: c["verdict"] for cid, c in v.items()} == COMMITTED_VERDICTS
    assert {c["id"]: c["verdict"] for c in committed["claims"]} == COMMITTED_VERDICTS  # the JSON is up to date
    for c in v.values():
        if c["verdict"] == "FAIL" and c["kind"] == "book":
            assert c["reason"]["category"] in C.REASON_LABELS and c["reason"]["text"]
        if c["verdict"] == "INCONCLUSIVE":
            assert c["n"] >= 3 and "n_needed" in c


def test_a_run_that_does_not_collapse_never_helps_the_collapse_claims(committed):
    """Issue 21's probe: the first seed's unscaled big model never collapses (layer-0 entropy 0.9,
    logit std 1.5, ‖J‖ 0.3 at every step; the other seeds untouched). No collapse claim may turn
    PASS, and the count of book PASS must not rise (it had risen from 20 to 21 under the 2-sd rule)."""
    before = _verdicts(copy.deepcopy(committed))
    probe = copy.deepcopy(committed)
    layer = probe["pairs"]["big_unscaled"]["trace"]["layers"][0]
    n = len(layer["weight_entropy"])
    layer.update(weight_entropy=[0.9] * n, logit_std=[1.5] * n, jacobian_fro=[0.3] * n)
    after = _verdicts(probe)
    for cid in ("big_unscaled_entropy_collapses", "big_unscaled_jacobian_drops", "big_unscaled_logits_explode"):
        assert after[cid]["verdict"] != "PASS", after[cid]
    assert after["big_unscaled_entropy_collapses"]["verdict"] == "FAIL"
    assert after["big_unscaled_jacobian_drops"]["verdict"] == "FAIL"
    turned_pass = {cid for cid in before if after[cid]["verdict"] == "PASS" != before[cid]["verdict"]}
    assert not turned_pass, turned_pass

    def n_pass(v):
        return sum(c["verdict"] == "PASS" for c in v.values() if c["kind"] == "book")

    assert n_pass(after) <= n_pass(before)


def test_more_spread_never_turns_a_claim_into_pass(committed):
    """Inflating the seeds' disagreement (every per-seed training diagnostic of the second seed pushed
    away from the first) can move verdicts towards INCONCLUSIVE or FAIL, never to PASS."""
    before = _verdicts(copy.deepcopy(committed))
    noisy = copy.deepcopy(committed)
    for key in ("big_unscaled", "big_scaled"):
        r0, r1 = C.runs(noisy, key)[:2]
        for name in ("weight_entropy", "jacobian_fro", "logit_std"):
            a, b = r0["trace"]["layers"][0][name], r1["trace"]["layers"][0][name]
            r1["trace"]["layers"][0][name] = [y + 2 * (y - x) for x, y in zip(a, b)]
    after = _verdicts(noisy)
    assert not {cid for cid in before if after[cid]["verdict"] == "PASS" != before[cid]["verdict"]}


def test_parting_step_is_where_the_gap_stays_above_threshold():
    res = book_like()
    u, s = res["pairs"]["big_unscaled"], res["pairs"]["big_scaled"]
    p = C.parting_step(u, s, 0.05)
    assert 60 < p < 110
    assert C.parting_step(s, s, 0.05) is None


def _wd_pairs(fixed: dict, seeds) -> dict:
    return {
        "values": [0.0],
        "pairs": [
            {
                "weight_decay": 0.0,
                "seed": seed,
                "unscaled": fixed["pairs"]["big_unscaled"] | {"qk": _qk("big_unscaled", 1.0)},
                "scaled": fixed["pairs"]["big_scaled"] | {"qk": _qk("big_scaled", 1.0)},
            }
            for seed in seeds
        ],
    }


def test_weight_decay_evidence_turns_a_fail_into_a_protocol_difference():
    """The claim's own rule on each decay's seeds: another decay explains a FAIL only by passing it."""
    res = book_like()
    BREAK["big_scaled_entropy_band"](res)  # scaled entropy ~0.8 at the default 0.1
    fixed = book_like()
    res["weight_decay"] = _wd_pairs(fixed, SEEDS[:3])
    c = _verdicts(res)["big_scaled_entropy_band"]
    assert c["verdict"] == "FAIL"
    assert c["reason"]["category"] == "protocol" and "passes at weight decay 0 " in c["reason"]["text"]
    assert "(n=3, PASS)" in c["reason"]["text"]
    # one seed at the other decay cannot pass a rule over seeds: not a cause found, and it says what would tell
    res["weight_decay"] = _wd_pairs(fixed, SEEDS[:1])
    r = _verdicts(res)["big_scaled_entropy_band"]["reason"]
    assert (
        r["category"] == "unexplained"
        and "INCONCLUSIVE at 0" in r["text"]
        and "(n=1, INCONCLUSIVE, ~3 seeds to decide)" in r["text"]
    )
    # and when the other weight decay does not reach the book either, it stays unexplained
    BREAK["big_scaled_entropy_band"](fixed)
    res["weight_decay"] = _wd_pairs(fixed, SEEDS[:3])
    r = _verdicts(res)["big_scaled_entropy_band"]["reason"]
    assert r["category"] == "unexplained" and "does not explain it" in r["text"]


def test_weight_decay_evidence_reads_every_seed_of_the_unscaled_member():
    """An unscaled-only outcome at the default decay stands on every unscaled seed, as its claim does."""
    res = json.loads(COMMITTED.read_text(encoding="utf-8"))
    n_unscaled = len(C.runs(res, "big_unscaled"))
    assert n_unscaled > len(C.runs(res, "big_scaled"))  # the case trains the unscaled member on more seeds
    default = res["pairs"]["big_scaled"]["config"]["weight_decay"]
    assert len(C.by_weight_decay(res, "unscaled_logit_std_end")[default]) == n_unscaled
    assert len(C.by_weight_decay(res, "scaled_entropy_end")[default]) == len(C.runs(res, "big_scaled"))
    reason = _verdicts(res)["big_unscaled_logits_explode"]["reason"]["text"]
    assert f"wd {default:g}: " in reason and f"(n={n_unscaled}, FAIL)" in reason
