"""The case's modules read the shared tools here while they fold into lab/; everything else imports
:mod:`attnlab.tools`, their one home."""

from __future__ import annotations

from ..tools import environment, fmt, load_model, provenance

__all__ = ["environment", "fmt", "load_model", "provenance"]
