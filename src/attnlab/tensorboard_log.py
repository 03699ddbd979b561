"""TensorBoard event files beside metrics.jsonl (``attnlab train --tensorboard``).

A trainer callback writing, at every step, the same numbers as metrics.jsonl:
``train/loss``, ``train/lr``, ``train/grad_norm``, ``val/loss`` when evaluated,
and each layer's diagnostics as ``layer{i}/{key}`` (``layer0/weight_entropy``,
``layer0/jacobian_fro``, ...). Each attention snapshot (attnlab.snapshots)
becomes one grayscale image per head, ``attention/L{layer}H{head}``, white =
weight 1. View with ``tensorboard --logdir runs``.

TensorBoard is an optional extra (``pip install 'attnlab[tensorboard]'``);
asking for it without the package raises one clear AttnlabError before
training starts. On resume the writer purges events from the resume step on,
so steps logged after the last checkpoint of an interrupted run are not shown
twice.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .errors import AttnlabError

MISSING_HINT = (
    "--tensorboard needs the tensorboard package: pip install 'attnlab[tensorboard]' (or pip install tensorboard)"
)


class TensorBoardMissing(AttnlabError):
    """--tensorboard without the tensorboard package."""


def require_tensorboard() -> None:
    """Raise TensorBoardMissing (one line: what to install) unless TensorBoard can be used."""
    _summary_writer()


def _summary_writer():
    try:
        import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it)
        from torch.utils.tensorboard import SummaryWriter
    except ModuleNotFoundError:
        raise TensorBoardMissing(MISSING_HINT) from None
    return SummaryWriter


class TensorBoardLogger:
    """Trainer callback; also a listener of SnapshotRecorder (``on_snapshot``)."""

    def __init__(self, log_dir: str | Path):
        self.log_dir = Path(log_dir)
        self._writer_cls = _summary_writer()  # fails here, before any training
        self.writer = None

    def on_train_begin(self, start: int, model) -> None:
        self.writer = self._writer_cls(log_dir=str(self.log_dir), purge_step=start or None, flush_secs=10)

    def on_step_end(self, step: int, record: dict, model) -> None:
        w = self.writer
        for key, tag in (
            ("loss", "train/loss"),
            ("lr", "train/lr"),
            ("grad_norm", "train/grad_norm"),
            ("val_loss", "val/loss"),
        ):
            value = record.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value):
                w.add_scalar(tag, value, step)
        for i, layer in enumerate(record.get("layers") or []):
            for key, value in (layer or {}).items():
                if isinstance(value, (int, float)) and math.isfinite(value):
                    w.add_scalar(f"layer{i}/{key}", value, step)

    def on_snapshot(self, step: int, patterns: np.ndarray, tokens: list[str]) -> None:
        # patterns (L, nh, T, T) in [0, 1]; one (1, T, T) image per head
        for li in range(patterns.shape[0]):
            for h in range(patterns.shape[1]):
                img = np.clip(patterns[li, h].astype(np.float32), 0.0, 1.0)[None]
                self.writer.add_image(f"attention/L{li}H{h}", img, step, dataformats="CHW")

    def on_train_end(self, step: int) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
