"""§1.8.5–§1.8.6: the head portrait and head ablation, brought into the lab book from their
committed result.

``attnlab heads runs/case/small_scaled_s20261014/ckpt.pt --also … --out data/head_portrait.json``
portraits the case's small scaled model of every seed (entropy, diagonal, previous-token
weight, distance), ablates each head, and runs §1.8.6's snippet as printed. This entry trains
nothing and owns no rule: ``measure`` reads that JSON and puts into the results the first
seed's table and exactly what :func:`attnlab.experiments.heads.judge` needs; ``judge`` *is*
that function, the one ``attnlab heads --rejudge`` runs.
"""

from __future__ import annotations

from ..corpus import REPO_ROOT
from ..experiments import heads as H
from .common import committed, rnd
from .labbook import Context, Experiment, Outcome

SOURCE = "data/head_portrait.json"
HEADERS = ["头 / head", "书·熵", "熵 / entropy", "书·对角", "对角 / diag", "书·前一位", "前一位 / prev"]
FIGURES = ("figures/attention_maps.png",)


def table(doc: dict) -> list[list]:
    """The first seed's portrait beside the book's table."""
    book = doc.get("book") or {}
    rows = []
    for h in doc["heads"]:
        b = book.get(f"L{h['layer']}H{h['head']}")
        rows.append(
            [
                f"L{h['layer']}·H{h['head']}",
                b[0] if b else None,
                rnd(h["entropy"], 3),
                b[1] if b else None,
                rnd(h["diag"], 3),
                b[2] if b else None,
                rnd(h["prev"], 3),
            ]
        )
    return rows


def results_of(doc: dict) -> dict:
    """The lab-book results of a heads result (its other seeds in ``other_seeds``)."""
    abl = doc.get("ablation", {}).get("heads", [])
    inputs = H.claim_inputs([doc, *doc.get("other_seeds", [])])
    return {
        "headers": HEADERS,
        "rows": table(doc),
        "ablation": [[f"L{a['layer']}·H{a['head']}", rnd(a["delta_loss"], 3)] for a in abl],
        "source": SOURCE,
        "seeds": list(inputs["per_seed"]),
        **inputs,  # per_seed, book, uniform_reference, near_zero_loss
    }


def measure(ctx: Context) -> Outcome:
    figs = [f for f in FIGURES if (ctx.root / f).is_file() or (REPO_ROOT / f).is_file()]
    return Outcome(results=results_of(committed(ctx, "head_portrait.json")), figures=figs)


EXPERIMENT = Experiment(
    "heads",
    "§1.8.5",
    "头部画像 / head portrait",
    "层 0 头 0 有 77% 的注意力给自己，层 0 头 1 有 45% 给紧邻左边；第一层更局部、第二层更全局；"
    "去掉大部分头 loss 几乎不变 / L0H0 attends to itself (0.77), L0H1 to the previous character (0.45); "
    "layer 0 local, layer 1 global; most heads can be removed",
    "attnlab heads runs/case/small_scaled_s20261014/ckpt.pt --also runs/case/small_scaled_s20261015/ckpt.pt "
    "--also runs/case/small_scaled_s20261016/ckpt.pt --out data/head_portrait.json",
    measure=measure,
    judge=H.judge,  # the heads module's own judge, on the inputs results_of stores: its FAILs carry their reasons
)
