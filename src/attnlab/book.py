"""The chapter's own numbers (``data/reference_values.json``, a copy of
shared/book/reference_values.json shipped with the package): the "book" column
of every report and table."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

REFERENCE = Path(__file__).with_name("data") / "reference_values.json"


@lru_cache(maxsize=1)
def _all() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def book_values(key: str | None = None) -> Any:
    """All reference values, or the table under ``key``."""
    return _all() if key is None else _all()[key]
