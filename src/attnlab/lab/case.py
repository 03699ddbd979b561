"""§1.2–§1.4: the case study, brought into the lab book from its committed result.

The case (``attnlab case``, data/ch1_case.json) trains its own runs and judges its
own claims with :func:`attnlab.experiments.claims.check_claims`. This entry trains
nothing and owns no rule: ``judge`` is that same pure function, applied to what
``measure`` put in the results.

Its judge needs the whole case document: the entry sets ``Experiment(source=...)``
and the lab book hands ``judge`` that document (labbook.judge_input), so the case's
numbers have one home and a hand-edited data/ch1_case.json is judged as edited.
"""

from __future__ import annotations

import hashlib

from ..book import book_values
from ..config import Config
from ..corpus import REPO_ROOT
from ..experiments.case import member_runs, stored_runs
from ..experiments.claims import check_claims
from ..runner import Run
from . import runs as R
from .common import rnd
from .labbook import Context, Experiment, NotAvailable, Outcome

SOURCE = "data/ch1_case.json"
FIGURES = ("figures/fig1_2_loss.png", "figures/fig1_3_logit_std.png", "figures/fig1_4_diagnostics.png")
PAIRS = (
    ("d_head=32 不缩放 / unscaled 验证 loss", "small_d32_unscaled", "small_unscaled"),
    ("d_head=32 缩放 / scaled", "small_d32_scaled", "small_scaled"),
    ("d_head=256 不缩放 / unscaled", "big_d256_unscaled", "big_unscaled"),
    ("d_head=256 缩放 / scaled", "big_d256_scaled", "big_scaled"),
)


# ------------------------------------------------------------------ what a judge reads
# ------------------------------------------------------------------------------ measure
def _seed_gaps(doc: dict, size: str) -> list[float]:
    """Validation-loss gap unscaled − scaled of every seed the case stored (first seed first)."""
    u, s = member_runs(doc, f"{size}_unscaled"), member_runs(doc, f"{size}_scaled")
    return [a["val_loss_end"] - b["val_loss_end"] for a, b in zip(u, s)]


def table(doc: dict) -> list[list]:
    """book | ours rows for the report: each pair's first-seed loss, and both gaps seed by seed."""
    book = book_values("case_loss_1_2_and_1_4")
    return [
        *[
            [f"{label}（种子 {R.BOOK_SEED} / seed）", book[key]["end"], rnd(doc["pairs"][pair]["val_loss_end"])]
            for label, key, pair in PAIRS
        ],
        [
            f"d_head=32 差距，{len(_seed_gaps(doc, 'small'))} 个种子 / small gap per seed",
            f"{book['gap_small']}（三种子 {'–'.join(map(str, book['small_gap_over_3_seeds_range']))}）",
            ", ".join(f"{g:.3f}" for g in _seed_gaps(doc, "small")),
        ],
        [
            f"d_head=256 差距，{len(_seed_gaps(doc, 'big'))} 个种子 / big gap per seed",
            book["gap_big"],
            ", ".join(f"{g:.3f}" for g in _seed_gaps(doc, "big")),
        ],
    ]


def _source_bytes(ctx: Context) -> tuple:
    from ..io import JSON_MAX_BYTES, read_bounded

    for p in (ctx.root / SOURCE, REPO_ROOT / SOURCE):
        if p.is_file():
            return p, read_bounded(p, JSON_MAX_BYTES, hint="; rerun `attnlab case`")
    raise NotAvailable(f"{SOURCE} not found: run `attnlab case` first")


def measure(ctx: Context) -> Outcome:
    from ..schemas import load

    path, raw = _source_bytes(ctx)
    doc = load("case", path)  # bounded and checked (attnlab.schemas.CaseResult) before its numbers are used
    res = {"table": table(doc), "source": SOURCE, "source_sha256": hashlib.sha256(raw).hexdigest()}
    for name in sorted(stored_runs(doc)):  # the case's own runs: their training time is this entry's compute
        ctx.extra.setdefault(name, Run(name, Config(), group="case"))
    figs = [f for f in FIGURES if (ctx.root / f).is_file() or (REPO_ROOT / f).is_file()]
    return Outcome(results=res, figures=figs)


# -------------------------------------------------------------------------------- judge
def judge(doc: dict) -> list[dict]:
    """The case's own claims (check_claims), judged from the case document (``source``)."""
    claims = check_claims(doc)
    for c in claims:  # in place: a claim keeps the judgement it was made from (attnlab.sequential.record)
        c.setdefault("kind", "book")
    return claims


EXPERIMENT = Experiment(
    "case",
    "§1.2",
    "案例：去掉 √d_k 缩放 / the case study",
    "d_head=32 时去掉缩放几乎没差别（4.17 对 4.00，差 0.17）；d_head=256 时差 0.95（5.18 对 4.23），"
    "注意力权重熵跌到 0.0001 / at d_head 32 removing the scale changes little; at 256 it costs 0.95",
    "attnlab case",
    measure=measure,
    judge=judge,
    order=(1, 2),  # its FAILs carry their reasons from check_claims (claims.explain)
    source=SOURCE,
)
