"""The lab book, whole: its engine and its experiments, one module each, in the chapter's order.

The engine: ``labbook`` (Experiment, Context, Outcome; run, re-judge and index the book),
``runs`` (the runs entries share: Scale, the case's runs, the baseline), ``decide``
(``book --decide``: more seeds where a claim is undecided), ``plan`` (``--plan``: what a run
costs), ``plot`` (the one matplotlib setup), ``portrait`` (what each head of a model attends to: the
instrument of the entries that measure heads). Everything else is an entry; no entry imports another.

Each entry module defines ``EXPERIMENT`` (an :class:`attnlab.lab.labbook.Experiment`): the runs
of one seed, the numbers of one seed's runs, ``judge(results)`` (pure: what ``attnlab report``
re-runs from the JSON), its prediction, the why of each FAIL, ``draw`` (its figures) and its
table; the engine derives the rest. An experiment with a command of its own (``attnlab heads``,
``failures``, ``sweep``, ``ablate``) keeps that command's code in its entry's module. Adding an
experiment is one module here, one test file and one line below (docs/example_entry.py is one,
written out).
"""

from __future__ import annotations

import importlib

from .labbook import Experiment

# the lab book, in the chapter's order (the order of the registry; Experiment.key() sorts the report)
ORDER = (
    "case",
    "temperature",
    "qk_norm",
    "heads",
    "kv_cache",
    "positions",
    "failures",
    "dynamics",
    "sinks",
    "ablation",
    "timing",
    "deep",
    "exercise1",
    "sweep",
    "exercise2",
    "markov",
    "lr_sensitivity",
)


def _load() -> list[Experiment]:
    return [importlib.import_module(f"{__name__}.{eid}").EXPERIMENT for eid in ORDER]


EXPERIMENTS: list[Experiment] = _load()
BY_ID = {e.id: e for e in EXPERIMENTS}
