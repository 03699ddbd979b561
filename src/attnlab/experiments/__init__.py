"""Experiments on the trained model: each one a function that returns a JSON-able result.

heads (portrait, ablation, maps, dynamics), failures (§1.11.7), debugger
(exercise 4), ablate (§1.13.4 checklist), sweep (exercise 2).
"""
