"""Checkpoints: everything needed to rebuild a model or resume its training.

A checkpoint is one ``torch.save`` file holding only tensors and plain Python
containers, so it loads with ``weights_only=True`` (no pickled code runs on
load). It is written atomically: an interrupted save leaves the previous file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .config import Config
from .errors import CheckpointError, ConfigError
from .io import save_torch
from .limits import check_model_fits
from .model import TinyGPT
from .tokenizer import CharTokenizer

FORMAT = "attnlab-checkpoint-v1"


class CheckpointUnreadable(CheckpointError):
    """A checkpoint the OS will not let us read (permissions, I/O error): intact as far as we know."""


def save_checkpoint(path: str | Path, model: TinyGPT, tok: CharTokenizer, **extra: Any) -> Path:
    payload = {
        "format": FORMAT,
        "config": model.cfg.to_dict(),
        "itos": list(tok.itos),
        "model": model.state_dict(),
        **extra,
    }
    return save_torch(path, payload)


def read_checkpoint(path: str | Path, map_location: str | torch.device = "cpu", fileobj=None) -> dict:
    """The checkpoint at ``path`` (or read from ``fileobj``, an open binary file, ``path`` naming it in
    messages), its contents checked; weights stored in float16 load into float32 models unchanged."""
    path = Path(path)
    if fileobj is None and not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path} (train one with `attnlab train --out DIR`)")
    try:
        payload = torch.load(fileobj if fileobj is not None else path, map_location=map_location, weights_only=True)
    except OSError as e:  # the file is there but cannot be read: not damaged, nothing to delete
        raise CheckpointUnreadable(
            f"cannot read checkpoint {path}: {e.strerror or type(e).__name__}; check its permissions and the disk"
        ) from None
    except Exception as e:  # torch raises many types for damaged files
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not an attnlab checkpoint ({type(e).__name__}); delete it and train again"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not an attnlab checkpoint (missing format tag {FORMAT!r})")
    problem = payload_problem(payload)
    if problem:
        raise CheckpointError(f"checkpoint {path} is damaged: {problem}; delete it and train again")
    return payload


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def payload_problem(payload: dict) -> str | None:
    """What is wrong with a loaded checkpoint's contents, or None: every field
    is checked for its type before anything uses it (contents are data, not trusted)."""
    itos = payload.get("itos")
    if not isinstance(payload.get("config"), dict):
        return "'config' is not a mapping of config fields"
    if not (isinstance(itos, list) and len(itos) >= 2 and all(isinstance(c, str) and c for c in itos)):
        return "'itos' is not a list of the tokenizer's characters"
    if not (
        isinstance(payload.get("model"), dict) and all(isinstance(v, torch.Tensor) for v in payload["model"].values())
    ):
        return "'model' is not a state_dict of tensors"
    if "step" in payload and not (_is_int(payload["step"]) and payload["step"] >= 0):
        return "'step' is not a step count"
    if "history" in payload:
        h = payload["history"]
        if not (
            isinstance(h, dict)
            and isinstance(h.get("records"), list)
            and all(
                isinstance(r, dict) and _is_int(r.get("step")) and isinstance(r.get("loss"), float)
                for r in h["records"]
            )
            and (h.get("diverged_at") is None or _is_int(h.get("diverged_at")))
        ):
            return "'history' is not a training history (records with step and loss)"
        if "step" in payload and len(h["records"]) > payload["step"] + 1:
            return f"'history' has {len(h['records'])} records for {payload['step']} steps"
    if "optimizer" in payload and not isinstance(payload["optimizer"], dict):
        return "'optimizer' is not an optimizer state"
    if "gen_state" in payload and not (
        isinstance(payload["gen_state"], torch.Tensor) and payload["gen_state"].dtype == torch.uint8
    ):
        return "'gen_state' is not a random generator state"
    if "fingerprint" in payload and not isinstance(payload["fingerprint"], dict):
        return "'fingerprint' is not a mapping"
    if "schedule" in payload and not (
        isinstance(payload["schedule"], list)
        and all(
            isinstance(x, dict) and _is_int(x.get("from_step")) and _is_int(x.get("max_steps"))
            for x in payload["schedule"]
        )
    ):
        return "'schedule' is not a list of schedule segments"
    if payload.get("schedule"):
        why = schedule_problem(payload["schedule"], payload.get("step"), (payload.get("config") or {}).get("max_steps"))
        if why:
            return f"'schedule' {why}"
    return None


def schedule_problem(schedule: list[dict], step: Any = None, max_steps: Any = None) -> str | None:
    """What makes a run's learning-rate schedule (segments ``from_step``, ``max_steps``, one per
    extension) impossible, or None: the first starts at step 0, each later one where the run had
    got to (after the one before, no later than the checkpoint's step), every ``max_steps`` between
    1 and MAX_STEPS and at least its own start, the last one the config's ``max_steps``."""
    from .config import MAX_STEPS

    starts = [x["from_step"] for x in schedule]
    if starts[0] != 0:
        return f"starts at step {starts[0]}, not 0"
    if any(b <= a for a, b in zip(starts, starts[1:])):
        return f"has segments out of order (from_step {starts})"
    if _is_int(step) and starts[-1] > step:
        return f"has a segment from step {starts[-1]}, after the checkpoint's step {step}"
    for x in schedule:
        if not 1 <= x["max_steps"] <= MAX_STEPS or x["max_steps"] < x["from_step"]:
            return f"has a segment of max_steps {x['max_steps']} from step {x['from_step']}"
    if _is_int(max_steps) and schedule[-1]["max_steps"] != max_steps:
        return f"ends at max_steps {schedule[-1]['max_steps']} but the config says {max_steps}"
    return None


def load_checkpoint(
    path: str | Path, device: str | torch.device = "cpu", expect: Config | None = None
) -> tuple[TinyGPT, CharTokenizer, Config]:
    """Rebuild (model, tokenizer, config) from a checkpoint file.

    ``expect``: if given, the checkpoint's model shape must match it.
    """
    return from_payload(read_checkpoint(path, map_location=device), path, device, expect)


def from_payload(
    payload: dict, path: str | Path, device: str | torch.device = "cpu", expect: Config | None = None
) -> tuple[TinyGPT, CharTokenizer, Config]:
    """(model, tokenizer, config) from a checkpoint already read with ``read_checkpoint``."""
    try:
        cfg = Config.from_dict(payload["config"])
    except (ConfigError, TypeError, KeyError) as e:
        raise CheckpointError(f"checkpoint {path} has an invalid config: {e}") from None
    if expect is not None:
        diff = config_diff(cfg, expect, ignore=("device",))
        if diff:
            raise CheckpointError(f"checkpoint {path} does not match the requested config: {diff}")
    tok = CharTokenizer.from_itos(payload["itos"])
    if len(tok) > cfg.vocab_size:
        raise CheckpointError(f"checkpoint {path}: tokenizer has {len(tok)} entries but vocab_size is {cfg.vocab_size}")
    check_model_fits(cfg, device, f"the model of checkpoint {path}")  # its config is data: counted, then built
    model = TinyGPT(cfg)
    mismatch = state_mismatch(model.state_dict(), payload["model"])
    if mismatch:
        raise CheckpointError(f"checkpoint {path} does not fit the model its config builds ({mismatch}); train again")
    try:
        model.load_state_dict(payload["model"])
    except (RuntimeError, KeyError) as e:
        raise CheckpointError(f"checkpoint {path} does not fit its model ({error_summary(e)}); train again") from None
    return model.to(device).eval(), tok, cfg


def state_mismatch(expected: dict, got: dict, limit: int = 4) -> str:
    """What keeps the state dict ``got`` from loading into a model whose state is ``expected``:
    missing and unexpected keys and shape differences, named (the first ``limit`` of each); "" if none."""

    def some(names: list[str]) -> str:
        return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")

    missing = [k for k in expected if k not in got]
    unexpected = [k for k in got if k not in expected]
    shapes = [
        f"{k} {tuple(got[k].shape)} in the checkpoint vs {tuple(v.shape)} in the model"
        for k, v in expected.items()
        if k in got and hasattr(got[k], "shape") and tuple(got[k].shape) != tuple(v.shape)
    ]
    parts = []
    if missing:
        parts.append(f"missing {some(missing)}")
    if unexpected:
        parts.append(f"unexpected {some(unexpected)}")
    if shapes:
        parts.append(f"shape of {some(shapes)}")
    return "; ".join(parts)


def error_summary(e: BaseException) -> str:
    """An exception's message on one line without torch's trailing "... for TinyGPT:" headers."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not ln.strip().endswith(":")]
    return " ".join(" ".join(lines).split()[:30]) or type(e).__name__


def config_diff(a: Config, b: Config, ignore: tuple[str, ...] = ()) -> str:
    da, db = a.to_dict(), b.to_dict()
    parts = [f"{k}={da[k]!r} vs {db[k]!r}" for k in da if k not in ignore and da[k] != db[k]]
    return ", ".join(parts)


# ----------------------------------------------------------- weights at chosen steps
WEIGHTS_DIR = "weights"


def weights_path(run_dir: str | Path, step: int) -> Path:
    """Where :class:`KeepWeights` puts the weights entering ``step`` of the run in ``run_dir``."""
    return Path(run_dir) / WEIGHTS_DIR / f"step{step}.pt"


class KeepWeights:
    """Trainer callback: keep the weights *entering* each of ``steps`` >= 1 (after that many updates) as
    a full checkpoint at :func:`weights_path`, so a later analysis can load the model of any of
    those steps (``attnlab.tools.load_model``).

    These are the weights whose diagnostics metrics.jsonl records at that step. The final step
    (``max_steps``) is the trained model itself. Reading weights draws no random numbers, so the
    run is bit for bit the same with or without this callback. A resumed run keeps the files
    written before the interruption (they precede its checkpoint) and writes the rest.
    """

    def __init__(self, run_dir: str | Path, steps: tuple[int, ...] | list[int], tok: CharTokenizer):
        self.run_dir, self.steps, self.tok = Path(run_dir), frozenset(int(s) for s in steps), tok

    def on_step_end(self, step: int, record: dict, model: TinyGPT) -> None:
        if step + 1 in self.steps:
            save_checkpoint(weights_path(self.run_dir, step + 1), model, self.tok, step=step + 1)
