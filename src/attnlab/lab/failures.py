"""§1.11.7: the four injected bugs, brought into the lab book from their committed result.

``attnlab failures`` trains the correct model and each bug (same seed, same batches, three
seeds) and writes data/failure_symptoms.json. This entry trains nothing and owns no rule:
``measure`` reads that JSON and puts into the results the symptom table and exactly what
:func:`attnlab.experiments.failures.judge` needs (per-seed numbers, the book's table, d_head,
the steps, bug ③'s overflow control); ``judge`` *is* that function, the one ``attnlab
failures --rejudge`` runs, so the lab book and the failures report can never disagree.
"""

from __future__ import annotations

from ..experiments import failures as F
from .common import committed, rnd
from .labbook import Context, Experiment, Outcome

SOURCE = "data/failure_symptoms.json"
HEADERS = [
    "变体 / variant",
    "书·loss终",
    "loss 终 / end",
    "书·熵",
    "熵 / entropy",
    "书·行和",
    "行和 / row sum",
    "未来权重 / future",
]


def table(doc: dict) -> list[list]:
    """The first seed's symptoms beside the book's (the rows the lab-book report shows)."""
    book = doc.get("book") or {}
    rows = []
    for name, v in doc["variants"].items():
        b = book.get(name)
        rows.append(
            [
                name,
                b[1] if b else None,
                rnd(v["loss_end"]),
                b[3] if b else None,
                rnd(v["weight_entropy"], 3),
                b[5] if b else None,
                rnd(v["row_sum_max"], 4),
                rnd(v["future_weight_max"], 3),
            ]
        )
    return rows


def results_of(doc: dict) -> dict:
    """The lab-book results of a failures result: its table, and what the judge reads."""
    if not doc.get("overflow_control"):  # a result written before bug ③'s control: deterministic arithmetic
        doc = {**doc, "overflow_control": F.overflow_control()}
    inputs = F.claim_inputs(doc)  # per_seed, book, d_head, steps, overflow_control
    return {"headers": HEADERS, "rows": table(doc), "source": SOURCE, "seeds": list(inputs["per_seed"]), **inputs}


def measure(ctx: Context) -> Outcome:
    return Outcome(results=results_of(committed(ctx, "failure_symptoms.json")))


EXPERIMENT = Experiment(
    "failures",
    "§1.11.7",
    "四个注入的 bug / the four injected bugs",
    "① 掩码用 0 loss 反而更低；② 缩放在 softmax 之后行和 = 0.177；③ 缺数值稳定在这个规模看不出来"
    "（喂标准差 5000 的 logits 才炸）；④ 误用 d_k 注意力退化成均匀（熵 0.9989），loss 不变",
    "attnlab failures",
    measure=measure,
    judge=F.judge,  # the failures module's own judge, on the inputs results_of stores: its FAILs carry their reasons
)
