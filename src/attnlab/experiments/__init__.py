"""Stand-alone experiments, each with its own command and JSON, and the tools they share.

heads (portrait, ablation, maps, dynamics), failures (§1.11.7), ablate (§1.13.4 checklist),
sweep (exercise 2), bench (speed); tools: debugger
(exercise 4), common (provenance, environment, tables), reference_gpt (the book's own code), plots.

The lab book (its engine and every entry) lives in :mod:`attnlab.lab`, one layer above: it
reuses these experiments' functions (the case study is wholly there: :mod:`attnlab.lab.case`), never the other way round.
"""
