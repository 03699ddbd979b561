"""The lab book's structural checks, for the whole registry (tests/test_labbook.py, tests/test_layers.py)
and for one entry in a temporary registry (tests/test_example_entry.py).

Each returns what is wrong (empty when all is well), so a test names the culprit.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from attnlab.corpus import REPO_ROOT
from attnlab.lab.labbook import Experiment, judge_input

LAB = REPO_ROOT / "src" / "attnlab" / "lab"
ENGINE = (
    "__init__",
    "labbook",
    "runs",
    "common",
    "plot",
    "decide",
    "plan",
    "portrait",
    "confirm",
    "bench",
    "debugger",
    "reference_gpt",
)  # lab/ modules that are no entry


def claims_made(e: Experiment, examples: Iterable[dict]) -> set[str]:
    """The claim ids ``e.judge`` makes on ``examples`` (what its judge reads: results, or its source)."""
    return {c["id"] for x in examples for c in e.judge(x)}


def stale_whys(e: Experiment, examples: Iterable[dict]) -> set[str]:
    """Ids of ``e.why`` its judge never makes on ``examples``: a why under a stale id is never shown
    (the book says "not explained yet" instead)."""
    return set(e.why) - claims_made(e, examples)


def examples_of(e: Experiment) -> list[dict]:
    """What ``e.judge`` can be run on without a training run: the ``EXAMPLES`` of its test
    (tests/lab/test_<id>.py), else its committed results (data/lab_book/<id>.json) when it has run.
    A new entry gives EXAMPLES in its test, so it needs no committed JSON to be checked."""
    try:
        given = getattr(importlib.import_module(f"lab.test_{e.id}"), "EXAMPLES", None)
    except ModuleNotFoundError:
        given = None
    if given is not None:
        return list(given)
    p = REPO_ROOT / "data" / "lab_book" / f"{e.id}.json"
    doc = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
    if doc.get("status") in (None, "not_run") or not doc.get("results"):
        return []
    return [judge_input(e, REPO_ROOT, doc["results"])]


def runs_named_twice(experiments: Sequence[Experiment], scale) -> list[str]:
    """One model declared under two run names, or one name declared with two configs: each would be
    trained twice (or its folder reused for another model)."""
    by_cfg: dict[str, str] = {}
    by_name: dict[str, object] = {}
    wrong = []
    for e in experiments:
        for r in e.runs(scale):
            if by_cfg.setdefault(repr(r.cfg), r.name) != r.name:
                wrong.append(f"{e.id}: {r.name} and {by_cfg[repr(r.cfg)]} are one model")
            if by_name.setdefault(r.name, r) != r:
                wrong.append(f"{e.id}: {r.name} declared twice with different configs")
    return wrong


def import_problems(module: str, path: Path, entries: Iterable[str]) -> list[str]:
    """What a lab-book entry at ``path`` (named ``module``, e.g. "lab.kv_cache") imports that it must
    not: a layer above lab/ (tests/test_layers.py), or another entry (entries share through
    lab/runs.py and lab/common.py, never by importing each other)."""
    from test_layers import imported, layer_of

    mine = layer_of("lab")
    names = imported(module, path)
    wrong = []
    for name in sorted(names):
        try:
            if layer_of(name) > mine:
                wrong.append(f"{name} is a layer above lab/")
        except KeyError:
            pass
    own = module.split(".")[-1]
    for eid in entries:
        if eid != own and any(n == f"lab.{eid}" or n.startswith(f"lab.{eid}.") for n in names):
            wrong.append(f"imports the entry lab.{eid}")
    return wrong
