"""What the lab-book modules share: rounding, a run's numbers, and per-seed tables.

A per-seed table maps each seed (as a string) to that seed's numbers. It is
built from the run folders that are on disk and, for seeds whose runs are not
(``runs/`` is not kept in git), from the experiment's committed results: a
number is measured once and then judged again from the JSON as often as asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..corpus import REPO_ROOT
from ..io import read_json
from ..runner import Finished, Run
from .labbook import COMMITTED_KINDS, Context, NotAvailable, seed_table  # noqa: F401  (seed_table: entries read it here)


def rnd(x: float | None, digits: int = 4) -> float | None:
    return None if x is None or not math.isfinite(x) else float(f"{x:.{digits}g}")


def number_list(xs: Sequence[float | None], spec: str = ".3g", sep: str = ", ", empty: str = "") -> str:
    """The one way a lab-book sentence lists numbers (one per seed, mostly): each written with ``spec``
    ("+.3f" for differences, ".3g" for measurements), a missing one as "—", joined by ``sep`` ("、" in
    Chinese text); ``empty`` when there are none."""
    return sep.join("—" if x is None else format(x, spec) for x in xs) or empty


def unchanged_margin(book: dict) -> float:
    """The margin of "loss 不变": the largest loss difference the chapter itself calls 不变. Its
    §1.11.7.5 table calls ④'s 4.708 vs 4.810 (0.102) and ③'s 4.808 vs 4.810 (0.002) "不变" and ②'s
    4.668 vs 4.810 (0.142) "轻微变好", so "unchanged" spans at least 0.102 and stops short of 0.142:
    a margin narrower than the book's own ④ would call its own example changed."""
    return round(abs(book["divide_by_d_k"][1] - book["correct"][1]), 4)


def final_val(f: Finished) -> float | None:
    """The last validation loss of a finished run."""
    val = f.history.val
    return val[-1][1] if val else None


def committed(ctx: Context, name: str) -> dict:
    """A committed result: <root>/data/<name>, else the repository's data/<name>."""
    from ..schemas import check

    kind = COMMITTED_KINDS.get(name) or ("lab_book_entry" if name.startswith("lab_book/") else None)
    for p in (ctx.root / "data" / name, REPO_ROOT / "data" / name):
        if p.is_file():
            doc = read_json(p, hint="; run its command again", allow_nan=kind == "sweep")  # a diverged trial: NaN
            return check(kind, doc, p) if kind else doc
    raise NotAvailable(f"data/{name} not found: run its command first")


def column(table: dict[str, dict], key: str) -> list[float]:
    """One number of every seed of a per-seed table, in seed order (seeds without it left out)."""
    return [row[key] for row in table.values() if row.get(key) is not None]


def paired(table: dict[str, dict], a: str, b: str) -> list[float]:
    """a − b seed by seed (same seed, same batches), for seeds that have both."""
    return [row[a] - row[b] for row in table.values() if row.get(a) is not None and row.get(b) is not None]


# ---------------------------------------------------------------- the runs a claim still waits for
def pending(runs: Sequence[Run]) -> dict:
    """What a claim whose runs are not trained yet names: the runs ("group/name") and their training
    time on one core (the planner's calibration: ~110 s for the chapter's 1500-step model)."""
    from ..runner import train_cost
    from .decide import DEFAULT_S_PER_COST

    seconds = sum(train_cost(r.cfg) * DEFAULT_S_PER_COST for r in runs)
    return {"runs": [f"{r.group}/{r.name}" for r in runs], "minutes_one_core": round(seconds / 60, 1)}


def not_trained(waiting: dict | None, command: str) -> str:
    """The runs a claim waits for (``waiting``: a :func:`pending` record) and the command that trains them."""
    w = waiting or {}
    runs = ", ".join(w.get("runs", [])) or "—"
    return f"runs not trained yet: {runs} (`{command}`, about {w.get('minutes_one_core', '?')} min on one core)"


def untrained(j, waiting: dict | None, command: str):
    """A rule's judgement on no numbers (INCONCLUSIVE, 3 seeds needed) saying which runs it waits for;
    a judgement on numbers unchanged."""
    import dataclasses

    return j if j.n else dataclasses.replace(j, detail=not_trained(waiting, command))


def unigram_entropy(text: str, tok) -> float:
    """Entropy (nats) of the token frequencies of ``text``: what a model that learns character
    frequencies alone reaches."""
    import torch

    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    p = torch.bincount(ids).double()
    p = p[p > 0] / p.sum()
    return float(-(p * p.log()).sum())
