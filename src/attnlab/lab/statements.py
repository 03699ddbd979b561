"""Statements of the chapter about the case's runs that the case does not check yet (issue 22), each
judged by its own claim(s) in the form of the verdicts issue (rule, per-seed inputs, verdict, interval).
The other statements this entry once held are judged where the chapter says them: §1.8's four heads by
exercise 2 (lab/exercise2.py), §1.22.10's order by the positions (lab/positions.py), §1.11.7.1's bug at
inference by the failures (lab/failures.py), §1.18.4's one layer by the deep entry (lab/deep.py).

Five are judged from the case's committed numbers; one needs runs of its own, declared here:

  §1.18.3    the gradient norm "掉到 10⁻⁴ 以下并且不回升 … 本章案例里不缩放那一边就是这样": the
             big unscaled model's global gradient norm (data/ch1_case.json keeps it for the first seed)
  §1.4       "只有注意力这一层死了": layer 1 of the big unscaled model beside layer 0 (the case keeps
             layer 1 for the first seed)
  §1.7.7     "不缩放 … 训练只会一路冲到饱和": the small unscaled model's trained entropy
  §1.2/§1.4  the absolute losses 4.17 / 4.00 / 5.18 / 4.23, and §1.13.1 "1500 步应当能到 loss ≈ 4.0 左右"
  §1.22.2    "继续训 10000 步 … 比缩放版高 0.8–1.0": one big pair trained 10000 steps

``measure`` reads the case's committed JSON (full scale only: quick numbers are not the case's), the
runs on disk (extra seeds join, as everywhere in the book) and this entry's own committed
per-seed table, so every number is measured once and then judged again from the JSON. A claim
whose runs are not trained yet is INCONCLUSIVE (effect and equivalence rules: 3 seeds needed)
or NA (rules about every run), naming the runs and the command; it never shows a number that
was not measured.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from .. import stats as S
from ..book import book_values
from ..runner import Finished, Run
from ..verdicts import claim
from . import runs as R
from .common import column, committed, final_val, rnd, seed_table
from .labbook import Context, Experiment, NotAvailable, Outcome

SECTION = "§1.22 (checks)"
COMMAND = "attnlab book --only statements"
LONG_COMMAND = "attnlab book --decide --only statements"  # the 10000-step pair: only --decide trains it
GROUP = "statements"

# ------------------------------------------------------------------ thresholds (fixed from the chapter)
# §1.13.1's reading table: "熵 → 0.01 以下，logit_std 几千 → 缩放缺失": below this, attention is saturated
COLLAPSE = 0.01
# §1.18.3 / §1.13.1: "梯度范数 … 掉到 10⁻⁴ 以下" / "‖J‖_F → 10⁻⁴ 以下 → 注意力层已经冻结"
FROZEN = 1e-4
# §1.2 calls the small pair's 0.17 "几乎没差别" (almost no difference): two losses closer than that are the
# same by the book's own scale. The chapter expects a rerun to differ only slightly ("若你跑出的数字与文中略
# 有出入，多半是 … 浮点非确定性"): "数值不可迁移" is about other scales and corpora, not the same setup.
SAME = book_values("case_loss_1_2_and_1_4")["gap_small"]
LOSSES = book_values("case_loss_1_2_and_1_4")
MEMBERS = {  # pair member -> (size, scaled, the book's key)
    "small_unscaled": ("small", False, "small_d32_unscaled"),
    "small_scaled": ("small", True, "small_d32_scaled"),
    "big_unscaled": ("big", False, "big_d256_unscaled"),
    "big_scaled": ("big", True, "big_d256_scaled"),
}
# §1.13.1 "1500 步应当能到 loss ≈ 4.0 左右。如果差得远，问题在实现": the book's broken model (§1.4) ends at
# 5.18; a loss nearer 4.0 than that is "about 4.0", one nearer 5.18 is "far off": half the distance
ABOUT_4 = 4.0
TOL_ABOUT_4 = (LOSSES["big_d256_unscaled"]["end"] - ABOUT_4) / 2
LONG_STEPS = 10000  # §1.22.2 "继续训 10000 步"
LONG_BAND = (0.8, 1.0)  # "最终稳定在比缩放版高 0.8–1.0 的位置"
END = 50  # "end" of a trace: the mean of its last 50 steps (as the case's claims)
WINDOW = 25  # half-width of the window means (as the case's claims)


# ----------------------------------------------------------------------------- the runs
def _long(scale: R.Scale) -> R.Scale:
    return replace(scale, steps=2 * scale.steps if scale.quick else LONG_STEPS)


def long_runs(scale: R.Scale, seed: int) -> list[Run]:
    """The case's big pair trained 10000 steps, unscaled first: a fresh schedule (warmup, then the cosine
    over 10000 steps), since continuing a finished 1500-step schedule would train at its floor learning rate."""
    s = _long(scale)
    return [
        Run(
            f"stmt_big_{'scaled' if sc else 'unscaled'}_{s.steps}_s{seed}",
            s.cfg(**R.BIG, scaled=sc, seed=seed),
            group=GROUP,
        )
        for sc in (False, True)
    ]


def declared(scale: R.Scale) -> list[Run]:
    """What this entry trains: nothing by a plain `attnlab book` at full size; the 10000-step pair
    (~1.5 core-hours) is trained by `attnlab book --decide` or the runner, and measured when on disk."""
    return long_runs(scale, R.BOOK_SEED) if scale.quick else []


def _member(m: str):
    size, sc, _ = MEMBERS[m]
    return lambda scale, seed: [R.case_run(scale, size, sc, seed)]


# the runs a further seed adds for a claim (attnlab book --decide)
CLAIM_RUNS = {
    "unscaled_grad_norm_vanishes": _member("big_unscaled"),
    "attention_dead_in_layer1": _member("big_unscaled"),
    "small_unscaled_saturates": _member("small_unscaled"),
    **{f"loss_{m}_{str(LOSSES[k]['end']).replace('.', '_')}": _member(m) for m, (_, _, k) in MEMBERS.items()},
    "loss_1500_about_4_0": _member("small_scaled"),
    "gap_after_10000_steps": long_runs,
}


def seed_runs(scale: R.Scale, seed: int, claim_id: str) -> list[Run]:
    return CLAIM_RUNS[claim_id](scale, seed)


def est_seconds(runs: list[Run]) -> float:
    """One-thread training time from the runs' configs (the planner's calibration: ~110 s for the
    chapter's 1500-step model on one idle core)."""
    from ..runner import train_cost
    from .decide import DEFAULT_S_PER_COST

    return sum(train_cost(r.cfg) * DEFAULT_S_PER_COST for r in runs)


# ---------------------------------------------------------------------------- measuring
def _end(xs: list[float], n: int = END) -> float:
    tail = [x for x in xs[-n:] if x is not None]
    return sum(tail) / len(tail)


def _lowest_window(xs: list[float], half: int = WINDOW) -> float:
    """The lowest centred ±half-step mean over the run (steps without a record left out)."""
    vals = [x for x in xs if x is not None]
    cum = [0.0]
    for v in vals:
        cum.append(cum[-1] + v)
    n = len(vals)
    return min(
        (cum[min(n, i + half + 1)] - cum[max(0, i - half)]) / (min(n, i + half + 1) - max(0, i - half))
        for i in range(n)
    )


def trace_numbers(member: str, loss: list, grad: list | None, layers: list[dict], val_end: float | None) -> dict:
    """One case run's numbers the claims use, from its per-step trace (committed JSON or run folder)."""
    out = {f"val_{member}": rnd(val_end), f"train_{member}": rnd(_end(loss))}
    if member == "big_unscaled":
        if grad:
            g = [x for x in grad if x is not None and math.isfinite(x)]
            out |= {
                "grad_min_big_unscaled": rnd(min(g)),
                "grad_median_big_unscaled": rnd(statistics.median(g)),
                "grad_end_median_big_unscaled": rnd(statistics.median(g[-END:])),
            }
        for i, lay in enumerate(layers[:2]):
            out |= {
                f"l{i}_entropy_end_big_unscaled": rnd(_end(lay["weight_entropy"])),
                f"l{i}_jac_start_big_unscaled": rnd(lay["jacobian_fro"][0]),
                f"l{i}_jac_end_big_unscaled": rnd(_end(lay["jacobian_fro"])),
            }
    if member == "small_unscaled" and layers:
        lay = layers[0]
        out |= {
            "l0_entropy_end_small_unscaled": rnd(_end(lay["weight_entropy"])),
            "l0_entropy_lowest_small_unscaled": rnd(_lowest_window(lay["weight_entropy"])),
            "l0_logit_std_end_small_unscaled": rnd(_end(lay["logit_std"])),
        }
    return out


def _from_finished(member: str, f: Finished) -> dict:
    recs = f.history.records
    n_layer = f.run.cfg.n_layer
    layers = [
        {
            k: [r["layers"][i][k] if r.get("layers") else None for r in recs]
            for k in ("weight_entropy", "jacobian_fro", "logit_std")
        }
        for i in range(n_layer)
    ]
    return trace_numbers(member, [r["loss"] for r in recs], [r.get("grad_norm") for r in recs], layers, final_val(f))


def _case_table(doc: dict | None) -> dict[str, dict]:
    """{seed: numbers} of every case run the committed case JSON holds (pure)."""
    out: dict[str, dict] = {}
    if not doc:
        return out
    for m in MEMBERS:
        for r in [doc["pairs"][m], *doc.get("seed_runs", {}).get(m, [])]:
            tr = r["trace"]
            row = trace_numbers(m, tr["loss"], tr.get("grad_norm"), tr.get("layers", []), r["val_loss_end"])
            out.setdefault(str(r["config"]["seed"]), {}).update(row)
    return out


def _doc(ctx: Context, name: str) -> dict | None:
    """A committed result at full scale (the repository's, or the root's); at quick scale only one the
    quick root itself wrote (the committed numbers are full-size runs)."""
    if ctx.scale.quick:
        p = ctx.root / "data" / name
        if not p.is_file():
            return None
        from ..io import read_json

        return read_json(p, hint="; run its command again")
    try:
        return committed(ctx, name)
    except NotAvailable:
        return None


def _merge(table: dict[str, dict], fresh: dict[str, dict]) -> None:
    for s, row in fresh.items():
        table.setdefault(s, {}).update({k: v for k, v in row.items() if v is not None})


def committed_table(previous: dict | None, case_doc: dict | None) -> dict[str, dict]:
    """{seed: numbers} from committed JSON alone (pure, no model): this entry's per-seed table and the
    case's traces."""
    table: dict[str, dict] = {s: dict(row) for s, row in (previous or {}).items()}
    _merge(table, _case_table(case_doc))
    return table


def measure(ctx: Context) -> Outcome:
    scale = ctx.scale
    prev = ctx.previous or {}
    # this entry's committed numbers, then the case's committed numbers of the runs it reads
    table = committed_table(prev.get("per_seed"), _doc(ctx, "ch1_case.json"))
    # the same runs on disk (extra seeds; and what the JSON does not keep, e.g. seeds 2-3's gradient norms)
    for m, (size, sc, _) in MEMBERS.items():
        _merge(
            table,
            seed_table(
                ctx,
                lambda s, size=size, sc=sc: [R.case_run(scale, size, sc, s)],
                lambda fs, m=m: _from_finished(m, fs[0]),
                {},
            ),
        )

    # this entry's runs
    def long(fs):
        u, s = fs
        return {
            "long_val_unscaled": rnd(final_val(u)),
            "long_val_scaled": rnd(final_val(s)),
            "long_gap": rnd(final_val(u) - final_val(s)),
            # the training loss too: a model that memorises the corpus shows it there, not in validation
            "long_train_unscaled": rnd(_end([r["loss"] for r in u.history.records])),
            "long_train_scaled": rnd(_end([r["loss"] for r in s.history.records])),
            "long_steps": u.run.cfg.max_steps,
        }

    _merge(table, seed_table(ctx, lambda s: long_runs(scale, s), long, {}))
    table = {s: table[s] for s in sorted(table, key=int)}

    def missing(key: str, runs_of, seeds) -> list[Run]:
        return [r for s in seeds if (table.get(str(s)) or {}).get(key) is None for r in runs_of(s)]

    first = [R.BOOK_SEED]
    pending = {
        cid: {"runs": [f"{r.group}/{r.name}" for r in runs], "minutes_one_core": round(est_seconds(runs) / 60, 1)}
        for cid, runs in (("gap_after_10000_steps", missing("long_gap", lambda s: long_runs(scale, s), first)),)
    }
    res = {
        "per_seed": table,
        "pending": pending,
        "command": COMMAND,
        "thresholds": {
            "collapse_entropy": COLLAPSE,
            "frozen": FROZEN,
            "same_loss": SAME,
            "tol_about_4": TOL_ABOUT_4,
            "long_band": list(LONG_BAND),
        },
        "headers": HEADERS,
        "rows": rows(table),
    }
    long_done = any("long_gap" in row for row in table.values())
    notes = []
    if not long_done:  # a plain book never trains the 10000-step pair
        notes.append(f"10000 步的一对模型还没训练 / the 10000-step pair is not trained yet: `{LONG_COMMAND}`")
    return Outcome(results=res, notes=notes, status="done" if long_done else "partial")


HEADERS = ["陈述 / statement", "节 / section", "书 / book", "我们 / ours (per seed)"]


def _fmt(xs: list[float]) -> str:
    return ", ".join(f"{x:.4g}" for x in xs) if xs else "未测 / not measured"


def rows(t: dict) -> list[list]:
    """The table the report shows: each statement, the book's words, our per-seed numbers."""
    c = lambda k: _fmt(column(t, k))  # noqa: E731
    return [
        [
            "不缩放大模型的梯度范数 最小 / 末段中位",
            "§1.18.3",
            "< 10⁻⁴",
            f"{c('grad_min_big_unscaled')} / {c('grad_end_median_big_unscaled')}",
        ],
        [
            "不缩放大模型 层 1 熵 / ‖J‖",
            "§1.4",
            "只有注意力这一层死了",
            f"{c('l1_entropy_end_big_unscaled')} / {c('l1_jac_end_big_unscaled')}",
        ],
        ["不缩放小模型 层 0 末段熵", "§1.7.7", "一路冲到饱和", c("l0_entropy_end_small_unscaled")],
        *[[f"验证 loss {m}", "§1.2 / §1.4", LOSSES[key]["end"], c(f"val_{m}")] for m, (_, _, key) in MEMBERS.items()],
        ["10000 步后的差距", "§1.22.2", "0.8–1.0", c("long_gap")],
    ]


# -------------------------------------------------------------------------------- judge
def _pending(res: dict, cid: str) -> str:
    p = (res.get("pending") or {}).get(cid) or {}
    runs = ", ".join(p.get("runs", [])) or "—"
    command = LONG_COMMAND if cid == "gap_after_10000_steps" else res.get("command", COMMAND)
    return f"runs not trained yet: {runs} (`{command}`, about {p.get('minutes_one_core', '?')} min on one core)"


def _every(values: list[float], lo: float, hi: float, missing: str, needed: int | None = None) -> S.Judgement:
    """Every seed inside [lo, hi]; with no seeds: NA, or INCONCLUSIVE naming the ``needed`` seeds
    (so `attnlab book --decide` trains them) where a plain `attnlab book` never would."""
    if values:
        return S.every(values, lo, hi)
    if needed:
        return S.Judgement(S.INCONCLUSIVE, "every", 0, n_needed=needed, detail=missing)
    return S.na(missing)


def judge(res: dict) -> list[dict]:
    t = res.get("per_seed") or {}
    out: list[dict] = []

    # §1.18.3: the gradient norm
    mins, ends = column(t, "grad_min_big_unscaled"), column(t, "grad_end_median_big_unscaled")
    miss = "number not stored: the global gradient norm of the big unscaled model (measured from the case's run folders: `attnlab case`)"
    out.append(
        claim(
            "unscaled_grad_norm_vanishes",
            "§1.18.3",
            "“如果它（梯度范数）掉到 10⁻⁴ 以下并且不回升，说明梯度消失了——本章案例里不缩放那一边就是这样”：不缩放大模型的"
            "全局梯度范数最小值与最后 50 步的中位数都低于 10⁻⁴ / the unscaled big model's gradient norm falls below 1e-4 "
            "and stays there",
            S.all_of([S.every(mins, 0.0, FROZEN), S.every(ends, 0.0, FROZEN)]) if mins and ends else S.na(miss),
            inputs={
                "grad_norm_min": mins,
                "grad_norm_end_median": ends,
                "grad_norm_median": column(t, "grad_median_big_unscaled"),
                "layer0_jacobian_end": column(t, "l0_jac_end_big_unscaled"),
                "seeds_with_grad_norm": [s for s, row in t.items() if row.get("grad_min_big_unscaled") is not None],
            },
            book="< 1e-4",
            expected=f"every run with a stored gradient norm: its minimum over the run < {FROZEN:g} and the median of its "
            f"last {END} steps < {FROZEN:g} (pre-clipping total norm)",
        )
    )

    # §1.4: only the attention layer died
    l1 = column(t, "l1_entropy_end_big_unscaled")
    out.append(
        claim(
            "attention_dead_in_layer1",
            "§1.4",
            "“只有注意力这一层‘死’了”：模型有两层注意力，第 1 层也死了——训练后熵低于饱和线 0.01（与第 0 层相同的判据）/ "
            "'only the attention layer died': the model has two attention layers; layer 1 is dead too (entropy < 0.01)",
            _every(
                l1,
                0.0,
                COLLAPSE,
                "number not stored: layer 1 of the big unscaled model (`attnlab case` keeps it for the first seed)",
            ),
            inputs={
                "layer1_entropy_end": l1,
                "layer1_jacobian_start": column(t, "l1_jac_start_big_unscaled"),
                "layer1_jacobian_end": column(t, "l1_jac_end_big_unscaled"),
                "layer0_entropy_end": [
                    row["l0_entropy_end_big_unscaled"]
                    for row in t.values()
                    if row.get("l1_entropy_end_big_unscaled") is not None
                    and row.get("l0_entropy_end_big_unscaled") is not None
                ],
                "layer0_jacobian_end": [
                    row["l0_jac_end_big_unscaled"]
                    for row in t.values()
                    if row.get("l1_entropy_end_big_unscaled") is not None
                    and row.get("l0_jac_end_big_unscaled") is not None
                ],
            },
            book="只有注意力这一层死了",
            expected=f"every run whose layer 1 is stored: its last-{END}-step mean entropy < {COLLAPSE} (the line layer 0 "
            "crosses on every seed, claim big_unscaled_entropy_collapses)",
        )
    )

    # §1.7.7: saturation without the scale
    sm = column(t, "l0_entropy_end_small_unscaled")
    out.append(
        claim(
            "small_unscaled_saturates",
            "§1.7.7",
            "“不缩放时，这个不动点不存在，训练只会一路冲到饱和”：不缩放的小模型（d_head 32）训练后第 0 层熵低于饱和线 0.01 / "
            "without the scale training runs into saturation: the small unscaled model ends below 0.01",
            _every(sm, 0.0, COLLAPSE, "number not stored: the small unscaled model's trace (`attnlab case`)"),
            inputs={
                "entropy_end": sm,
                "entropy_lowest_window": column(t, "l0_entropy_lowest_small_unscaled"),
                "logit_std_end": column(t, "l0_logit_std_end_small_unscaled"),
            },
            book="一路冲到饱和",
            expected=f"every seed's layer-0 entropy, mean of the last {END} steps, < {COLLAPSE} (§1.13.1's saturation line)",
        )
    )

    # §1.2 / §1.4 / §1.20.1: the absolute losses
    for m, (_, _, key) in MEMBERS.items():
        b = LOSSES[key]["end"]
        vals = column(t, f"val_{m}")
        out.append(
            claim(
                f"loss_{m}_{str(b).replace('.', '_')}",
                "§1.2 / §1.4 / §1.20.1",
                f"“确认你能得到与本章一致的数字（loss 4.17 / 4.00 / 5.18 / 4.23）”：{m} 终点 loss {b} / the end loss of "
                f"{m} is {b}",
                S.value(vals, b, tol=SAME),
                inputs={"val_loss_end": vals, "train_loss_end": column(t, f"train_{m}"), "book": b, "tol": SAME},
                book=b,
                expected=f"value: {b} inside our one-run 95% PI, and the PI within ± {SAME} (§1.2's 几乎没差别); the "
                "validation loss at step 1500, as the case's gaps (the training loss, mean of the last 50 steps, shown)",
            )
        )
    vals = column(t, "val_small_scaled")
    out.append(
        claim(
            "loss_1500_about_4_0",
            "§1.13.1",
            "“42 万参数的模型在 25 万字唐诗上，1500 步应当能到 loss ≈ 4.0 左右。如果差得远，问题在实现” / the 420k model "
            "reaches about 4.0 in 1500 steps",
            # "应当能到 ≈ 4.0" is a statement about where our runs land, not the book's one run:
            # the mean's 95% CI inside 4.0 ± the tolerance (nearer 4.0 than the broken model's 5.18)
            S.band(vals, ABOUT_4 - TOL_ABOUT_4, ABOUT_4 + TOL_ABOUT_4),
            inputs={
                "val_loss_end": vals,
                "train_loss_end": column(t, "train_small_scaled"),
                "book": ABOUT_4,
                "tol": TOL_ABOUT_4,
            },
            book=ABOUT_4,
            expected=f"band: the 95% CI of our mean inside 4.0 ± {TOL_ABOUT_4:.3g} (half the way to the book's "
            "broken model at 5.18: nearer 4.0 than that is 'about 4.0', nearer 5.18 is 'far off')",
        )
    )

    # §1.22.2: 10000 steps
    lg = column(t, "long_gap")
    out.append(
        claim(
            "gap_after_10000_steps",
            "§1.22.2",
            "“继续训 10000 步……最终稳定在比缩放版高 0.8–1.0 的位置。差距不会消失” / after 10000 steps the unscaled big "
            "model settles 0.8–1.0 above the scaled one",
            _every(lg, *LONG_BAND, _pending(res, "gap_after_10000_steps"), needed=1),
            inputs={
                "val_gap_10000": lg,
                "val_unscaled": column(t, "long_val_unscaled"),
                "val_scaled": column(t, "long_val_scaled"),
            },
            book=list(LONG_BAND),
            expected=f"every run trained {LONG_STEPS} steps (one seed: a statement about one run, said as one): the "
            f"validation gap unscaled − scaled in [{LONG_BAND[0]}, {LONG_BAND[1]}]",
        )
    )
    return out


# --------------------------------------------------------------------------------- why
def _list(xs: list[float], digits: int = 3) -> str:
    return ", ".join(f"{x:.{digits}g}" for x in xs) or "—"


def _why_grad(r: dict) -> str:
    t = r.get("per_seed") or {}
    return (
        f"书错了 / the book is wrong here: the unscaled big model's global gradient norm never goes near 1e-4 — "
        f"minimum {_list(column(t, 'grad_min_big_unscaled'))}, median {_list(column(t, 'grad_median_big_unscaled'))}, "
        f"last-{END}-step median {_list(column(t, 'grad_end_median_big_unscaled'))} (seeds "
        f"{', '.join(s for s, row in t.items() if row.get('grad_min_big_unscaled') is not None)}; the case keeps gradient "
        f"norms for its first seed only). What falls towards 1e-4 is layer 0's softmax Jacobian "
        f"({_list(column(t, 'l0_jac_end_big_unscaled'))}; the book's 8e-5): embeddings, MLP and the output layer keep "
        "the total gradient alive, so the gradient norm cannot show this collapse"
    )


def _why_layer1(r: dict) -> str:
    t = r.get("per_seed") or {}
    rows = [row for row in t.values() if row.get("l1_entropy_end_big_unscaled") is not None]
    col = lambda k: [row[k] for row in rows if row.get(k) is not None]  # noqa: E731
    return (
        f"only layer 0's attention dies: layer 1 ends with entropy {_list(col('l1_entropy_end_big_unscaled'))} and "
        f"‖J‖ {_list(col('l1_jac_end_big_unscaled'))} (from {_list(col('l1_jac_start_big_unscaled'))} at step 0), "
        f"layer 0 of the same run(s) with {_list(col('l0_entropy_end_big_unscaled'))} and "
        f"{_list(col('l0_jac_end_big_unscaled'))}; the chapter's diagnostics are layer 0's. Layer 1 is stored for "
        f"{len(rows)} seed(s) (the case keeps it for its first seed only)"
    )


def _why_saturates(r: dict) -> str:
    t = r.get("per_seed") or {}
    return (
        f"书错了 / the book is wrong for d_head 32: the small unscaled model never saturates — its layer-0 entropy ends at "
        f"{_list(column(t, 'l0_entropy_end_small_unscaled'))}, its lowest ±{WINDOW}-step mean is "
        f"{_list(column(t, 'l0_entropy_lowest_small_unscaled'))} (saturation: < {COLLAPSE}), and its logit std ends at "
        f"{_list(column(t, 'l0_logit_std_end_small_unscaled'))}: without the scale it found a fixed point of its own"
    )


def _why_loss(m: str):
    def why(r: dict) -> str:
        t = r.get("per_seed") or {}
        return (
            f"our {m} runs end at {_list(column(t, f'val_{m}'), 4)} (validation; training {_list(column(t, f'train_{m}'), 4)}): "
            f"the book's {LOSSES[MEMBERS[m][2]]['end']} lies outside what one of our runs gives"
        )

    return why


def _why_long(r: dict) -> str:
    t = r.get("per_seed") or {}
    text = (
        f"after {LONG_STEPS} steps the validation gap is {_list(column(t, 'long_gap'))} (unscaled "
        f"{_list(column(t, 'long_val_unscaled'), 4)}, scaled {_list(column(t, 'long_val_scaled'), 4)}), outside the "
        f"book's {LONG_BAND[0]}–{LONG_BAND[1]}"
    )
    tu, ts = column(t, "long_train_unscaled"), column(t, "long_train_scaled")
    if tu and ts:
        gaps = [a - b for a, b in zip(tu, ts)]
        text += f"; the training losses are unscaled {_list(tu, 4)}, scaled {_list(ts, 4)} (gap {_list(gaps)})"
        vs = column(t, "long_val_scaled")
        if all(v - x > 1.0 for v, x in zip(vs, ts)):  # validation more than a nat above training: memorised
            text += (
                ": the scaled model memorises the training split and its validation loss rises, the attention-dead "
                "one cannot"
            )
        lg = column(t, "long_gap")
        if all(g > LONG_BAND[1] for g in gaps) and all(g < 0 for g in lg):
            text += "; on training loss the gap grows, on validation it reverses"
    return text


WHY = {
    "unscaled_grad_norm_vanishes": _why_grad,
    "attention_dead_in_layer1": _why_layer1,
    "small_unscaled_saturates": _why_saturates,
    **{f"loss_{m}_{str(LOSSES[k]['end']).replace('.', '_')}": _why_loss(m) for m, (_, _, k) in MEMBERS.items()},
    "loss_1500_about_4_0": _why_loss("small_scaled"),
    "gap_after_10000_steps": _why_long,
}

EXPERIMENT = Experiment(
    "statements",
    SECTION,
    "书中尚无检验的陈述 / statements of the chapter nothing else checks",
    "§1.18.3 梯度范数掉到 10⁻⁴ 以下（不缩放那一边）；§1.4 只有注意力这一层死了；§1.7.7 不缩放训练只会一路冲到饱和；"
    "§1.2/§1.4 loss 4.17 / 4.00 / 5.18 / 4.23，§1.13.1 1500 步 loss ≈ 4.0；§1.22.2 10000 步后差距仍在 0.8–1.0 / "
    "six statements about the case's runs that the case does not test yet",
    COMMAND,
    measure=measure,
    judge=judge,
    runs=declared,
    min_runs=lambda scale: [],  # the committed numbers are judged (and migrated) without any run folder
    order=(1, 22, 1),
    why=WHY,
    seed_runs=seed_runs,
)
