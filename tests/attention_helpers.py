"""Shared helpers for the tests of attnlab.attention (not a test module)."""

from __future__ import annotations

import json
from decimal import Decimal
from importlib import resources
from pathlib import Path

import numpy as np


def load_book() -> dict:
    """The book's printed numbers, from the copy shipped inside the package."""
    try:
        text = (resources.files("attnlab") / "data" / "reference_values.json").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, TypeError):
        path = Path(__file__).resolve().parents[1] / "src" / "attnlab" / "data" / "reference_values.json"
        text = path.read_text(encoding="utf-8")
    return json.loads(text)


def assert_printed(actual, printed, places: int | None = None, what: str = "") -> None:
    """``actual`` rounds to ``printed``: |actual - printed| <= half a unit in the last printed digit.

    ``places`` gives the decimals the book printed (needed when it printed trailing
    zeros, e.g. 0.090, which JSON stores as 0.09); otherwise they are read off ``printed``.
    """
    actual = np.atleast_1d(np.asarray(actual, dtype=np.float64))
    printed = np.atleast_1d(np.asarray(printed, dtype=np.float64))
    assert actual.shape == printed.shape, f"{what}: shape {actual.shape} vs printed {printed.shape}"
    for a, p in zip(actual.ravel(), printed.ravel()):
        if places is not None:
            half = 0.5 * 10.0 ** (-places)
        else:
            half = 0.5 * 10.0 ** Decimal(repr(float(p))).normalize().as_tuple().exponent
        assert abs(a - p) <= half * (1 + 1e-9), f"{what}: computed {a!r}, book prints {p!r} (tolerance {half:g})"
