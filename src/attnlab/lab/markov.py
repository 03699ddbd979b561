"""§1.22.2 checkpoint ②: the Markov floor under the collapsed model.

Measured: the smoothed unigram and bigram cross-entropy on the trainer's own
validation split (no training), and every seed's validation loss of the case's
four models (data/ch1_case.json; seeds whose case runs are on disk but not in that
JSON are read from their run folders). Judged seed by seed: the chapter says the
collapsed attention "等价于一个固定的一阶转移", so each collapsed big model should
sit at the bigram's level.
"""

from __future__ import annotations

import math

from .. import stats as S
from ..book import book_values
from ..config import Config
from ..io import read_json
from ..verdicts import claim
from . import plot
from . import runs as R
from .common import column, committed, final_val, paired, rnd
from .labbook import Context, Experiment, NotAvailable, Outcome
from .runs import member_runs

MEMBERS = ("small_unscaled", "small_scaled", "big_unscaled", "big_scaled")
# fixed from the chapter's words before looking: §1.2 calls a loss difference of 0.17 "几乎没差别" (almost no
# difference); a collapsed model "equivalent to" a bigram lies within that of the bigram's loss
MARGIN = book_values("case_loss_1_2_and_1_4")["gap_small"]


# ------------------------------------------------------------------------------ measure
def markov_floor(text: str, cfg: Config) -> dict:
    """Unigram and smoothed bigram cross-entropy (nats) on the trainer's validation split.

    Same tokenizer (vocab 1200, <unk> for the rest) and split as ``train``.
    Smoothing is chosen on the last 10% of the training split only (never on
    validation): add-alpha for both, and for the bigram also interpolation
    with the unigram (Jelinek-Mercer).
    """
    import torch

    from ..tokenizer import CharTokenizer
    from ..train import split_data

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
    grid = [(a, lam) for a in alphas for lam in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]
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


def case_table(doc: dict) -> dict[str, dict]:
    """{seed: {member: final validation loss}} of every seed the case JSON holds."""
    out: dict[str, dict] = {}
    for m in MEMBERS:
        for r in member_runs(doc, m):
            out.setdefault(str(r["config"]["seed"]), {})[m] = rnd(r["val_loss_end"])
    return dict(sorted(out.items()))


def _extra_seeds(ctx: Context, table: dict) -> dict:
    """Seeds of the case's runs that are on disk (``attnlab book --decide`` or a rerun) but not in
    the case's JSON (full scale only: quick runs are not the case's numbers)."""
    if ctx.scale.quick:
        return table
    out = {s: dict(row) for s, row in table.items()}
    for i in range(30):
        seed = R.BOOK_SEED + i
        for m in MEMBERS:
            size, tag = m.split("_")
            if out.get(str(seed), {}).get(m) is not None:
                continue
            f = ctx.find(R.case_run(ctx.scale, size, tag == "scaled", seed))
            if f is not None and final_val(f) is not None:
                out.setdefault(str(seed), {})[m] = rnd(final_val(f))
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _other_models(ctx: Context) -> list[dict]:
    """Every other trained model's validation loss the committed results hold (for the figure)."""
    models = []
    try:
        sw = committed(ctx, "sweep_critical_dimension.json")
        for t in sw["trials"]:
            if t.get("val_loss_end") is not None:
                models.append(
                    {
                        "model": f"sweep d_head={t['d_head']} {'scaled' if t['scaled'] else 'unscaled'}",
                        "val_loss": rnd(t["val_loss_end"]),
                        "source": "data/sweep_critical_dimension.json",
                    }
                )
    except NotAvailable:
        pass
    for p in sorted((ctx.root / "data" / "lab_book").glob("*.json")):
        if p.stem == "markov":
            continue
        doc = read_json(p, hint=f"; delete it and rerun `attnlab book --only {p.stem}`")
        runs = doc.get("results", {}).get("runs") if isinstance(doc, dict) else None
        for k, v in runs.items() if isinstance(runs, dict) else ():
            if isinstance(v, dict) and isinstance(v.get("val"), list):
                for i, x in enumerate(v["val"]):
                    models.append(
                        {"model": f"{p.stem} {k} #{i}", "val_loss": rnd(x), "source": f"data/lab_book/{p.name}"}
                    )
    return models


def measure(ctx: Context) -> Outcome:
    floor = markov_floor(ctx.text, Config())  # the trainer's split and vocabulary at every scale
    try:
        table = case_table(committed(ctx, "ch1_case.json"))
    except NotAvailable:
        table = (ctx.previous or {}).get("per_seed", {})
    table = _extra_seeds(ctx, table)
    floor_r = {k: (rnd(v) if isinstance(v, float) else v) for k, v in floor.items()}
    models = [
        {"model": f"case {m} seed {s}", "val_loss": row[m], "source": "data/ch1_case.json"}
        for s, row in table.items()
        for m in MEMBERS
        if row.get(m) is not None
    ] + _other_models(ctx)
    big = column(table, "big_unscaled")
    res = {
        "table": [
            ["平滑一元 / smoothed unigram (nats)", None, floor_r["unigram"]],
            ["平滑二元 / smoothed bigram (nats)", "≈ 4.84（issue，末 10%）", floor_r["bigram"]],
            [
                f"注意力塌缩的大模型，{len(big)} 个种子 / collapsed big model per seed",
                book_values("case_loss_1_2_and_1_4")["big_d256_unscaled"]["end"],
                ", ".join(f"{x:.3f}" for x in big) if big else None,
            ],
            ["ln 1200（随机猜测 / uniform）", 7.09, rnd(floor["ln_vocab"], 3)],
        ],
        "floor": floor_r,
        "per_seed": table,
        "margin": MARGIN,
        "models": models,
    }
    notes = (
        [] if table else ["data/ch1_case.json 不在：只有马尔可夫下限 / the case's numbers are absent: the floor only"]
    )
    return Outcome(results=res, figures=[ctx.fig("floor.png")], notes=notes)


# -------------------------------------------------------------------------------- judge
def _above_bigram(res: dict) -> list[float]:
    """Each seed's collapsed big model minus the smoothed bigram (nats)."""
    b = res["floor"]["bigram"]
    return [x - b for x in column(res.get("per_seed") or {}, "big_unscaled")]


def judge(res: dict) -> list[dict]:
    floor = res["floor"]
    out = [
        claim(
            "bigram_below_unigram",
            "检查点② / checkpoint ②",
            "平滑二元模型低于一元模型 / bigram below unigram",
            S.exact(floor["bigram"] < floor["unigram"], f"bigram {floor['bigram']} < unigram {floor['unigram']}"),
            inputs={"unigram": floor["unigram"], "bigram": floor["bigram"]},
            kind="sanity",
        )
    ]
    table = res.get("per_seed") or {}
    diff = _above_bigram(res)
    if diff:
        out.append(
            claim(
                "dead_attention_near_markov",
                "检查点② / §1.22.2",
                "“注意力层已经冻结成‘每个位置只看一个固定位置’，这等价于一个固定的一阶转移”：每个种子的塌缩大模型都在"
                f"二元模型的水平（±{MARGIN}）/ every collapsed big model is about as good as a first-order Markov model",
                S.every(diff, -MARGIN, MARGIN),
                inputs={
                    "big_unscaled_minus_bigram": [rnd(x) for x in diff],
                    "bigram": floor["bigram"],
                    "margin": MARGIN,
                },
                book="等价于一个固定的一阶转移",
            )
        )
        out.append(
            claim(
                "collapsed_worse_than_bigram",
                "检查点② / §1.22.2",
                "42 万参数、注意力已死的模型比一个平滑二元模型还差（同一验证集，逐种子）/ the collapsed model is worse "
                "than a plain smoothed bigram, seed by seed",
                S.effect(diff, direction=+1, sesoi=MARGIN),
                inputs={"big_unscaled_minus_bigram": [rnd(x) for x in diff], "sesoi": MARGIN},
                kind="sanity",
            )
        )
    scaled = column(table, "small_scaled") + column(table, "big_scaled")
    if scaled:
        out.append(
            claim(
                "attention_beats_markov",
                "§1.4",
                "正常训练的模型（缩放，两种尺寸，每个种子）都低于二元模型 / every working (scaled) model beats the bigram",
                S.every(scaled, 0.0, floor["bigram"]),
                inputs={
                    "small_scaled": column(table, "small_scaled"),
                    "big_scaled": column(table, "big_scaled"),
                    "bigram": floor["bigram"],
                },
                kind="sanity",
            )
        )
    return out


def _why_dead(r: dict) -> str:
    diff = _above_bigram(r)
    inside = sum(abs(x) <= MARGIN for x in diff)
    big = column(r.get("per_seed") or {}, "big_unscaled")
    vs_scaled = paired(r.get("per_seed") or {}, "big_unscaled", "big_scaled")
    return (
        f"逐种子看，塌缩的大模型（{', '.join(f'{x:.3f}' for x in big)}）比平滑二元模型（{r['floor']['bigram']:.3f}）高 "
        f"{', '.join(f'{x:+.3f}' for x in diff)}，{len(diff)} 个种子中 {inside} 个在 ±{MARGIN} 之内。这不是架构做不到："
        "残差流把当前字原样带过注意力层，所以即使注意力冻结，MLP 和输出层仍能表示 p(下一个字 | 当前字)——一个二元模型"
        "（注意力若固定在前一位，还能更多）。“等价于一阶转移”说的是它还能做到的事；这个模型训练结束时没有做到"
        f"（它比同种子的缩放模型差 {', '.join(f'{x:+.3f}' for x in vs_scaled)}）。为什么停在二元水平之上（冻结的注意力把一个固定位置的"
        "值混进每个位置，或步数不够）这里没有测 / seed by seed the collapsed model is "
        f"{', '.join(f'{x:+.3f}' for x in diff)} above the smoothed bigram ({inside} of {len(diff)} within ±{MARGIN}). "
        "Not a limit of the architecture: the residual stream carries the current token past the attention layer, "
        "so with attention frozen the MLP and output layer can still represent p(next | current), a bigram (more, "
        "were attention fixed on the previous position). The model has not reached that level by the end of its "
        f"training ({', '.join(f'{x:+.3f}' for x in vs_scaled)} behind the scaled model of its seed); why "
        "(the frozen attention mixing one fixed position's value into every position, or too few steps) is not "
        "measured here"
    )


# ------------------------------------------------------------------------------------- figure
def draw(r: dict) -> dict:
    plt = plot.plt()
    models, floor = r["models"], r["floor"]
    fig, ax = plt.subplots(figsize=(8, max(3, 0.22 * len(models) + 1)))
    ys = list(range(len(models)))
    vals = [m["val_loss"] for m in models]
    ax.barh(ys, vals, color=[_markov_color(m["model"]) for m in models])  # bars from 0: a bar's length is its loss
    ax.set_yticks(ys, [markov_label(m["model"]) for m in models], fontsize=7)
    for y, v in zip(ys, vals):
        ax.text(v + 0.03, y, f"{v:.2f}", va="center", fontsize=6.5, bbox={"fc": "white", "ec": "none", "pad": 0.3})
    lines = (
        ("一元 / unigram", floor["unigram"], "#999999"),
        ("二元 / bigram", floor["bigram"], "#c0392b"),
        ("均匀 ln V / uniform", floor["ln_vocab"], "#555555"),
    )
    for name, v, c in lines:
        ax.axvline(v, color=c, ls="--", label=f"{name} {v:.2f}")
    ax.set_xlim(0, floor["ln_vocab"] * 1.08)
    ax.set_ylim(-0.8, len(models) - 0.2)
    ax.set_xlabel("验证 loss（nats）/ validation loss")
    ax.set_title("检查点②：马尔可夫下限 / the Markov floor")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=3)
    return {"floor.png": fig}


_SIZE = {"small": "小模型 d_head 32 / small", "big": "大模型 d_head 256 / big"}


def markov_label(name: str) -> str:
    """A model of the Markov-floor table in Chinese first, English beside: "case small_scaled seed 20261014"
    is 案例 小模型 d_head 32 · 缩放 · 种子 20261014 / case small, scaled, seed 20261014; a name of another
    form is kept as it is."""
    words = name.split()
    tag = lambda t: "缩放 / scaled" if t == "scaled" else "不缩放 / unscaled"  # noqa: E731
    if len(words) == 4 and words[0] == "case" and words[2] == "seed" and "_" in words[1]:
        size, scaled = words[1].split("_", 1)
        if size in _SIZE and scaled in ("scaled", "unscaled"):
            return f"案例 / case · {_SIZE[size]} · {tag(scaled)} · 种子 / seed {words[3]}"
    if (
        len(words) == 3
        and words[0] == "sweep"
        and words[1].startswith("d_head=")
        and words[2] in ("scaled", "unscaled")
    ):
        return f"扫描 / sweep · d_head {words[1].split('=', 1)[1]} · {tag(words[2])}"
    return name


def _markov_color(name: str) -> str:
    return "#c8372d" if name.split()[-1] == "unscaled" or "_unscaled" in name else "#2456a6"


WHY = {"dead_attention_near_markov": _why_dead}

EXPERIMENT = Experiment(
    "markov",
    "§1.22.2",
    "检查点②：马尔可夫下限 / checkpoint ②: the Markov floor",
    "注意力层退化后“等价于一个固定的一阶马尔可夫模型”；这个 42 万参数的模型还能把 loss 降到多少？"
    "（5.18）/ the dead-attention model is a fixed first-order transition",
    "attnlab book --only markov",
    measure=measure,
    judge=judge,
    order=(1, 22, 2, 9),
    why=WHY,
    draw=draw,
)
