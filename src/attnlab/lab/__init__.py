"""The lab book's experiments, one module each, in the chapter's order.

Each module defines ``EXPERIMENT`` (an :class:`attnlab.experiments.labbook.Experiment`):
its runs, ``measure(ctx)`` (the only part that opens runs or models), ``judge(results)``
(pure: what ``attnlab report`` re-runs from the JSON), its prediction and the why of
each FAIL. Adding an experiment is one module here, one test file and one line below.
"""
