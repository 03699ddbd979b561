"""§1.2–§1.4: the case study, brought into the lab book from its committed result.

The case (``attnlab case``, data/ch1_case.json) trains its own runs and judges its
own claims with :func:`attnlab.experiments.claims.check_claims`. This entry trains
nothing and owns no rule: ``judge`` is that same pure function, applied to what
``measure`` put in the results.

Purity without the 4 MB file: ``measure`` runs ``check_claims`` once on the case
document while recording every key it reads, and stores exactly that subset
(``results["case"]``), checked to give the same claims as the whole document. So
``judge(results)`` needs no file, and a rule that starts reading another number
is caught the next time the entry is measured (the check fails loudly instead of
judging from a stale copy). ``results["source_sha256"]`` names the exact source
the subset was cut from; ``judge`` also accepts the source document itself (what
``Experiment.source`` points at), so a report that loads the source can re-judge
it directly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from ..book import book_values
from ..corpus import REPO_ROOT
from ..experiments import book_runs as R
from ..experiments.claims import check_claims
from ..experiments.labbook import Context, Experiment, NotAvailable, Outcome
from .common import rnd

SOURCE = "data/ch1_case.json"
FIGURES = ("figures/fig1_2_loss.png", "figures/fig1_3_logit_std.png", "figures/fig1_4_diagnostics.png")
PAIRS = (
    ("d_head=32 不缩放 / unscaled 验证 loss", "small_d32_unscaled", "small_unscaled"),
    ("d_head=32 缩放 / scaled", "small_d32_scaled", "small_scaled"),
    ("d_head=256 不缩放 / unscaled", "big_d256_unscaled", "big_unscaled"),
    ("d_head=256 缩放 / scaled", "big_d256_scaled", "big_scaled"),
)


# ------------------------------------------------------------------ what a judge reads
class _Reads(dict):
    """A dict that records which of its keys were read (by any route: [], get, in, iteration)."""

    def __init__(self, d: dict):
        super().__init__({k: _wrap(v) for k, v in d.items()})
        self.read: set = set()

    def _all(self):
        self.read.update(dict.keys(self))

    def __getitem__(self, k):
        v = dict.__getitem__(self, k)
        self.read.add(k)
        return v

    def get(self, k, default=None):
        if dict.__contains__(self, k):
            self.read.add(k)
            return dict.__getitem__(self, k)
        return default

    def __contains__(self, k):
        if dict.__contains__(self, k):
            self.read.add(k)
            return True
        return False

    def setdefault(self, k, default=None):
        self.read.add(k)
        return dict.setdefault(self, k, default)

    def pop(self, k, *default):
        self.read.add(k)
        return dict.pop(self, k, *default)

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def __len__(self):
        self._all()
        return dict.__len__(self)

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)

    def copy(self):
        self._all()
        return dict(dict.items(self))


class _List(list):
    """A list whose elements are recorded containers (the list itself is kept whole)."""


def _wrap(v):
    if isinstance(v, dict):
        return _Reads(v)
    if isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
        return _List(_wrap(x) for x in v)
    return v


def _kept(v):
    if isinstance(v, _Reads):
        return {k: _kept(dict.__getitem__(v, k)) for k in dict.keys(v) if k in v.read}
    if isinstance(v, _List):
        return [_kept(x) for x in v]
    return v


def read_subset(fn: Callable[[dict], object], doc: dict) -> dict:
    """The part of ``doc`` that ``fn`` reads: every key it touched, at every depth (lists whole).
    Raises when ``fn`` judged the subset differently from the whole document."""
    spy = _Reads(doc)
    fn(spy)
    sub = _kept(spy)
    whole, part = (json.dumps(fn(x), sort_keys=True, default=str) for x in (doc, json.loads(json.dumps(sub))))
    if whole != part:
        raise ValueError(f"{getattr(fn, '__name__', fn)} reads {SOURCE} by a route the subset does not record")
    return sub


# ------------------------------------------------------------------------------ measure
def _seed_gaps(doc: dict, size: str) -> list[float]:
    """Validation-loss gap unscaled − scaled of every seed the case stored (first seed first)."""
    u = [doc["pairs"][f"{size}_unscaled"], *doc.get("seed_runs", {}).get(f"{size}_unscaled", [])]
    s = [doc["pairs"][f"{size}_scaled"], *doc.get("seed_runs", {}).get(f"{size}_scaled", [])]
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


def _source_bytes(ctx: Context) -> bytes:
    for p in (ctx.root / SOURCE, REPO_ROOT / SOURCE):
        if p.is_file():
            return p.read_bytes()
    raise NotAvailable(f"{SOURCE} not found: run `attnlab case` first")


def measure(ctx: Context) -> Outcome:
    raw = _source_bytes(ctx)
    doc = json.loads(raw.decode("utf-8"))
    sub = read_subset(check_claims, doc)
    res = {
        "table": table(doc),
        "source": SOURCE,
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "case_bytes": {"source": len(raw), "subset": len(json.dumps(sub))},
        "case": sub,  # exactly what check_claims reads of the source (see the module docstring)
    }
    figs = [f for f in FIGURES if (ctx.root / f).is_file() or (REPO_ROOT / f).is_file()]
    return Outcome(results=res, figures=figs)


# -------------------------------------------------------------------------------- judge
def case_doc(res: dict) -> dict:
    """The case document a judge reads: the stored subset, or the source document itself."""
    if "case" in res:
        return res["case"]
    if "pairs" in res:
        return res
    raise ValueError(
        f"these results hold no case numbers (written before the lab book stored them): "
        f"`attnlab book --only case --no-train` brings them in from {SOURCE}"
    )


def judge(res: dict) -> list[dict]:
    """The case's own claims (check_claims), judged from the numbers the results hold."""
    try:
        claims = check_claims(case_doc(res))
    except KeyError as e:
        if "case" not in res:
            raise
        raise ValueError(
            f"the stored case numbers lack {e}: check_claims reads more than when they were stored; "
            f"`attnlab book --only case --no-train` stores them again from {SOURCE}"
        ) from None
    return [{**c, "kind": c.get("kind", "book")} for c in claims]


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
