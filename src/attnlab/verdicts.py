"""A claim as stored in every result JSON, built from a :class:`attnlab.stats.Judgement`.

A claim keeps everything its judge used, so ``attnlab report`` can judge it again
from the JSON alone and a reader can see why:

  id, kind, section, statement   what is claimed (kind: book | question | sanity | prediction | beyond)
  book                           the chapter's number or words
  rule, inputs                   the rule of attnlab.stats and its inputs: name -> per-seed
                                 numbers, plus scalars (the book's value, the margin ...)
  spec                           the specification the judge called its rule with, from code
                                 (:func:`claim_spec`): rule, params (tolerance, SESOI, band,
                                 margin ...), and ``reads`` (the input it judged) or ``values``
                                 (numbers derived from the inputs); an all_of has ``parts``.
                                 data/claims_registry.json registers it (attnlab.claims_registry)
  verdict, interval, n, n_needed PASS | FAIL | INCONCLUSIVE | REPORTED | NA, and its evidence
  p                              the p-value of the test behind the rule's PASS (None: no test)
  looks, seq, seq_n_needed       every judgement at a seed count, and the verdict over them
                                 (attnlab.sequential.record, added by the lab book)
  holm                           the verdict after Holm's correction in its family (:func:`with_holm`,
                                 added to the lab book's index)
  measured, expected             the same in words: numbers per seed, mean ± sd, the interval;
                                 the rule with its numbers
  reason                         why a FAIL fails (or what an INCONCLUSIVE needs)
  pass                           verdict == "PASS" (for old readers)

kinds: ``book`` is a statement of the chapter; ``question`` a question the chapter asks, answered
and REPORTED with the measured answer (never a FAIL of the book); ``sanity`` a property our own
measurement must have to mean anything; ``prediction`` something we wrote
before the runs (a failed prediction is ours, not the book's); ``beyond`` an answer to a question
beyond the chapter (the learning-rate map, attention sinks), reported with its numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .stats import FAIL, INCONCLUSIVE, NA, ONE_SIDED, PASS, REPORTED, VERDICTS, Judgement, holm, mean_sd

KINDS = ("book", "question", "sanity", "prediction", "beyond")

# why a book claim fails, as the reports name it
REASON_LABELS = {
    "finding": "书的问题 / finding about the book",
    "protocol": "协议差异 / protocol difference",
    "ours": "我们的判定或预测 / our specification or prediction",
    "scale": "规模差异 / scale difference",
    "unexplained": "未解释 / unexplained",
}


def unexplained(detail: str = "", what: str = "it") -> dict:
    """The reason of a FAIL nothing measured here explains (category "unexplained"), after ``detail``."""
    return {
        "category": "unexplained",
        "text": f"{detail}; no experiment here explains {what}" if detail else f"no experiment here explains {what}",
    }


VERDICT_LABELS = {
    PASS: "PASS",
    FAIL: "FAIL",
    INCONCLUSIVE: "INCONCLUSIVE（种子不够 / undecided）",
    REPORTED: "REPORTED（书提问，我们作答 / reported）",
    NA: "NA（本机无法检验 / not testable here）",
}


def _num(x: Any, digits: int = 4) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def describe(values: Sequence[float], digits: int = 3) -> str:
    """Per-seed numbers and mean ± sd, as a reader wants to see them."""
    xs = [v for v in values if v is not None]
    if not xs:
        return "—"
    if len(xs) == 1:
        return _num(xs[0], digits)
    m, sd = mean_sd(xs)
    return f"{', '.join(_num(x, digits) for x in xs)} (mean {_num(m, digits)} ± {_num(sd, 2)})"


def measured_text(inputs: Mapping[str, Any], j: Judgement) -> str:
    parts = []
    for k, v in inputs.items():
        if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) or x is None for x in v):
            parts.append(f"{k}: {describe(v)}")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(f"{k}: {_num(v)}")
        else:
            parts.append(f"{k}: {v}")
    if j.interval is not None:
        name = {"value": "95% PI", "equivalence": "90% CI", "every": "range of seeds"}.get(j.rule, "95% CI")
        parts.append(f"{name} [{_num(j.interval[0], 3)}, {_num(j.interval[1], 3)}]")
    return "; ".join(parts)


class Claim(dict):
    """A claim record (a plain dict in JSON) that remembers the :class:`Judgement` it was made from,
    so the lab book can judge it again at the levels of its looks (attnlab.sequential.record)."""

    judgement: Judgement | None = None


def claim(
    cid: str,
    section: str,
    statement: str,
    judgement: Judgement,
    *,
    inputs: Mapping[str, Any] | None = None,
    kind: str = "book",
    book: Any = None,
    expected: str | None = None,
    reason: Mapping[str, str] | None = None,
) -> dict:
    """One judged statement, with everything its judge used (see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"claim kind must be one of {KINDS}, got {kind!r}")
    if kind == "question" and judgement.verdict not in (REPORTED, NA):
        raise ValueError(
            f"{cid}: a question the chapter asks is answered and REPORTED (attnlab.stats.reported), "
            f"never {judgement.verdict}; judge it with stats.reported and the measured answer"
        )
    inputs = dict(inputs or {})
    out = Claim(
        {
            "id": cid,
            "kind": kind,
            "section": section,
            "statement": statement,
            "book": book,
            "rule": judgement.rule,
            "inputs": inputs,
            "verdict": judgement.verdict,
            "interval": judgement.to_dict()["interval"],
            "n": judgement.n,
            "n_needed": judgement.n_needed,
            "measured": measured_text(inputs, judgement),
            "expected": expected or judgement.detail,
            "detail": judgement.detail,
            "pass": judgement.verdict == PASS,
            "p": judgement.to_dict()["p"],
            "spec": claim_spec(judgement, inputs),
        }
    )
    out.judgement = judgement
    if reason:
        out["reason"] = dict(reason)
    return out


def claim_spec(j: Judgement, inputs: Mapping[str, Any]) -> dict:
    """The judgement's specification (attnlab.stats, from code) as a claim stores it: each part's
    numbers named by the input that holds exactly them (``reads``), else kept (``values``: numbers
    the judge derived from its inputs)."""

    def one(spec: dict) -> dict:
        if spec.get("rule") == "all_of":
            return {"rule": "all_of", "parts": [one(p) for p in spec.get("parts") or []]}
        out = {k: v for k, v in spec.items() if k != "values"}
        if "values" in spec:
            name = next((k for k, v in inputs.items() if _numbers(v) == spec["values"]), None)
            out["reads"] = name
            if name is None:
                out["values"] = spec["values"]
        return out

    return one(judgement_spec(j))


def judgement_spec(j: Judgement) -> dict:
    return j.spec if j.spec is not None else {"rule": j.rule, "params": {}}


def _numbers(v: Any) -> list[float] | None:
    """A stored list of numbers as a rule reads it (None dropped), or None if it is not one."""
    if not isinstance(v, (list, tuple)):
        return None
    out = []
    for x in v:
        if x is None:
            continue
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return None
        out.append(float(x))
    return out


def verdict_of(c: Mapping[str, Any]) -> str:
    """The verdict of a claim, also of one written before verdicts existed (pass True/False/None)."""
    v = c.get("verdict")
    if v in VERDICTS:
        return v
    p = c.get("pass")
    return PASS if p is True else FAIL if p is False else REPORTED


def counts(claims: Iterable[Mapping[str, Any]]) -> dict:
    """{kind: {verdict: n}} for every kind and verdict (zeros included)."""
    out = {k: dict.fromkeys(VERDICTS, 0) for k in KINDS}
    for c in claims:
        out.setdefault(c.get("kind", "book"), dict.fromkeys(VERDICTS, 0))[verdict_of(c)] += 1
    return out


# ------------------------------------------------------------------------------ families
# the families Holm corrects within: the chapter's statements, and our own predictions. Sanity checks
# are in none (they test our measurement, not a finding; see report.lab_book's method text), nor
# answers beyond the chapter (reported, not tested)
FAMILIES = ("book", "prediction")
FAMILY_LEVEL = ONE_SIDED  # the chance of any false PASS in a family: the level each claim has alone


def with_holm(claims: Iterable[Mapping[str, Any]], level: float = FAMILY_LEVEL) -> list[dict]:
    """Copies of ``claims``, each of a family (kind book or prediction) with ``holm``: its verdict
    after Holm's step-down correction across the claims of its kind that test something (a ``p``).

    holm is PASS when the verdict is PASS and Holm's procedure at ``level`` rejects the claim's
    hypothesis (the k-th smallest of the family's m p-values at most level / (m - k + 1)); a PASS it
    does not reject is INCONCLUSIVE (more seeds could still decide it); every other verdict, and
    that of a claim with no test (exact arithmetic, every-seed checks, reported answers), is kept.
    So the chance that any holm PASS of a family is false is at most ``level`` (Holm 1979), while
    each verdict alone keeps its own level."""
    out = [dict(c) for c in claims]
    for kind in FAMILIES:
        fam = [c for c in out if c.get("kind", "book") == kind]
        tested = [c for c in fam if isinstance(c.get("p"), (int, float))]
        keep = holm([float(c["p"]) for c in tested], level)
        for c in fam:
            c["holm"] = verdict_of(c)
        for c, survives in zip(tested, keep):
            if verdict_of(c) == PASS and not survives:
                c["holm"] = INCONCLUSIVE
    return out


def _per_seed_lists(c: Mapping[str, Any]) -> list[list[float]]:
    """The per-seed number lists (three or more numbers) among a claim's inputs, each sorted."""
    out = []
    for v in (c.get("inputs") or {}).values():
        if (
            isinstance(v, list)
            and len(v) >= 3
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
        ):
            out.append(sorted(float(x) for x in v))
    return out


def _same_numbers(a: list[float], b: list[float]) -> bool:
    # entries store per-seed numbers at different precisions (4 significant digits in some): equal
    # within that rounding. Two different lists of three or more seeds never agree this closely by chance
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-6) for x, y in zip(a, b))


def shared_findings(claims: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """The claims grouped by the numbers they judge: two claims are one finding when their inputs hold
    the same per-seed numbers (the same seeds' gaps read by two claims, or by two entries). Groups of
    ids, each group once, in the claims' order."""
    claims = [c for c in claims if c.get("id")]
    lists = [_per_seed_lists(c) for c in claims]
    parent = list(range(len(claims)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(claims)):
        for j in range(i + 1, len(claims)):
            if any(_same_numbers(a, b) for a in lists[i] for b in lists[j]):
                parent[root(i)] = root(j)
    groups: dict[int, list[str]] = {}
    for i, c in enumerate(claims):
        groups.setdefault(root(i), []).append(c["id"])
    return list(groups.values())


def pass_counts(claims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """What a family's PASS count is made of: ``passed`` in all; ``tested`` of them with a test (a p)
    and ``holm`` of those still PASS after Holm's correction; ``untested`` (exact arithmetic, every-seed
    checks: they never faced the correction); ``distinct``: the PASSes counting claims that judge the
    same numbers once."""
    passed = [c for c in claims if verdict_of(c) == PASS]
    tested = [c for c in passed if isinstance(c.get("p"), (int, float))]
    return {
        "passed": len(passed),
        "tested": len(tested),
        "holm": sum(c.get("holm") == PASS for c in tested),
        "untested": len(passed) - len(tested),
        "distinct": len(shared_findings(passed)),
    }


def count_line(claims: Iterable[Mapping[str, Any]]) -> str:
    """ "book claims: N PASS (Holm H, sequential S), M FAIL, K INCONCLUSIVE …; sanity …; predictions …"
    (empty verdicts left out; Holm and sequential counts where the claims carry them)."""
    claims = list(claims)
    c = counts(claims)
    names = {
        "book": "书中论断 / book claims",
        "question": "问题 / questions",
        "sanity": "自检 / sanity",
        "prediction": "预测 / predictions",
        "beyond": "超出本章 / beyond the chapter",
    }
    parts = []
    for kind, label in names.items():
        row = c.get(kind, {})
        if not any(row.values()):
            continue
        shown = [f"{row[v]} {v}" for v in (PASS, FAIL, INCONCLUSIVE)] + [
            f"{row[v]} {v}" for v in (REPORTED, NA) if row[v]
        ]
        if kind in ("question", "beyond"):  # answers, in no family: only the verdicts they have
            shown = [f"{row[v]} {v}" for v in (PASS, FAIL, INCONCLUSIVE, REPORTED, NA) if row[v]]
        mine = [x for x in claims if x.get("kind", "book") == kind]
        extra = []
        if any("holm" in x for x in mine):
            n = pass_counts(mine)
            extra.append(
                f"检验过的 / tested {n['tested']}，Holm 后 / after Holm {n['holm']}；未检验 / untested {n['untested']}；"
                f"同一组数算一次 / distinct {n['distinct']}"
            )
        if any(x.get("seq") for x in mine):
            # a claim that tests nothing has no sequential verdict: its verdict stands
            seq = sum((x.get("seq") or verdict_of(x)) == PASS for x in mine)
            extra.append(f"顺序 / sequential {seq}")
        if extra:
            shown[0] += f" ({', '.join(extra)})"
        parts.append(f"{label}: {', '.join(shown)}")
    return "; ".join(parts)
