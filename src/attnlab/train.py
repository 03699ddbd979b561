"""Training loop with attention diagnostics at every step, checkpoints and resume.

``train(text, cfg)`` is the whole story: tokenizer, split, model, AdamW with
weight decay on matrices only, warmup + cosine schedule, gradient clipping,
per-step records, validation, atomic checkpoints, Ctrl-C and resume. A run
resumed from a checkpoint finishes bit for bit equal to one never interrupted:
the batch generator's state, the optimizer and the history travel in the
checkpoint, and the validation batches are fixed by the seed.
"""

from __future__ import annotations

import hashlib
import json
import math
import signal
import time
from collections.abc import Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor

from . import limits
from .checkpoint import config_diff, error_summary, read_checkpoint, save_checkpoint, state_mismatch
from .config import DEVICE, Config
from .errors import AttnlabError, CheckpointError, ConfigError, CorpusError, RunFolderError
from .io import write_json, write_text
from .model import TinyGPT
from .runfolder import RUN_FILES, RunFolder, holds_run, load_average, machine_cpus, record_session
from .runtime import keep_freed_memory
from .snapshots import run_observers
from .tokenizer import CharTokenizer


# ------------------------------------------------------------------- schedule, batches
def lr_at(step: int, cfg: Config) -> float:
    """Linear warmup to cfg.lr over cfg.warmup steps, then cosine down to 10% of lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    span = max(1, cfg.max_steps - cfg.warmup)
    progress = min(1.0, (step - cfg.warmup) / span)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def get_batch(data: Tensor, block_size: int, batch_size: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random windows of ``data`` (1-D LongTensor); ``gen`` fixes every batch."""
    if len(data) < block_size + 1:
        raise CorpusError(f"data has {len(data)} tokens, fewer than block_size + 1 = {block_size + 1}")
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=gen)
    x = torch.stack([data[i : i + block_size] for i in ix.tolist()])  # (B, T)
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix.tolist()])
    return x, y


def split_data(ids: Tensor, cfg: Config) -> tuple[Tensor, Tensor]:
    """Contiguous split: the last ``val_fraction`` of the text is validation.

    A corpus too short for two windows validates on its last window (which the
    training split also contains); the record says so (``val_overlaps_train``).
    """
    need = cfg.block_size + 1
    if len(ids) < need:
        raise CorpusError(
            f"corpus has {len(ids)} characters, fewer than block_size + 1 = {need}; "
            f"use a longer text or --set block_size=N with a smaller N"
        )
    n_val = max(int(len(ids) * cfg.val_fraction), need)
    if len(ids) - n_val < need:
        return ids, ids[-need:]
    return ids[:-n_val], ids[-n_val:]


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when present, else cpu; a device this build or machine
    lacks is a :class:`ConfigError`, not torch's traceback."""
    if not isinstance(device, str) or not DEVICE.match(device):
        raise ConfigError(f"device {device!r} is not one of auto, cpu, cuda, cuda:N, mps")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"device {device!r} is not available: this torch {torch.__version__} "
                f"{'has no CUDA support' if torch.version.cuda is None else 'sees no GPU'}; "
                f"use device=cpu or auto"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(
                f"device {device!r} is not available: this machine has "
                f"{torch.cuda.device_count()} GPU(s), cuda:0..cuda:{torch.cuda.device_count() - 1}"
            )
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ConfigError(f"device {device!r} is not available on this machine; use device=cpu or auto")
    return dev


def step_bytes(cfg: Config) -> int:
    """A generous estimate of the memory one training step needs, in bytes:
    weights, gradients and two AdamW moments, plus the activations kept for
    backward (per layer a few (B, nh, T, T) attention tensors and about twenty
    (B, T, C)-sized ones, and the logits)."""
    d, L, V, T, B = cfg.d_model, cfg.n_layer, cfg.vocab_size, cfg.block_size, cfg.batch_size
    params = V * d + T * d + L * (4 * d * d + 2 * d * cfg.d_ff + 4 * d) + 2 * d
    attention = 4 * B * cfg.n_head * T * T
    per_layer = attention + 20 * B * T * d + 2 * B * T * cfg.d_ff
    return 4 * (4 * params + L * per_layer + 3 * B * T * V)


def check_fits(cfg: Config, device: torch.device) -> None:
    """Refuse a config whose training step cannot fit in the memory this device has available
    (:func:`attnlab.limits.available_bytes`, the one notion every guard uses), before anything is
    allocated (block_size=100000 would ask for terabytes)."""
    need, have = step_bytes(cfg), limits.available_bytes(device)
    if have is not None and need > have:
        raise ConfigError(
            f"one training step needs about {need / 1e9:,.0f} GB (block_size={cfg.block_size}, "
            f"batch_size={cfg.batch_size}, d_model={cfg.d_model}, n_layer={cfg.n_layer}) but "
            f"{device.type} has {limits.gb(have)} available; lower block_size, batch_size or d_model"
        )


def fingerprint(text: str, tok: CharTokenizer) -> dict:
    """What the run was trained on: the corpus text and the tokenizer, hashed."""
    return {
        "corpus_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "corpus_chars": len(text),
        "tokenizer_sha256": hashlib.sha256(json.dumps(tok.itos).encode("utf-8")).hexdigest(),
        "vocab": len(tok),
    }


def make_optimizer(model: TinyGPT, cfg: Config) -> torch.optim.AdamW:
    """AdamW (0.9, 0.95); weight decay on matrices (dim >= 2) only, not on norms and biases."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))


# ------------------------------------------------------------------- metrics.jsonl
METRICS_FILE = "metrics.jsonl"  # one JSON record per step, written by train() as it goes


def parse_metrics(lines: Iterable[str]) -> tuple[list[dict], int]:
    """The step records of a metrics.jsonl (``train()`` writes one per line) and how many lines
    were malformed (not JSON, or without a numeric step and loss: a line cut by a crash)."""
    rows, bad = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            float(row["step"]), float(row["loss"])
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows, bad


# ------------------------------------------------------------------------- callbacks
class Callback(Protocol):
    """Named training events; implement only the ones you need."""

    def on_train_begin(self, start: int, model: TinyGPT) -> None: ...
    def on_step_end(self, step: int, record: dict, model: TinyGPT) -> None: ...
    def on_nonfinite(self, step: int, batch: tuple[Tensor, Tensor], model: TinyGPT) -> None: ...
    def on_train_end(self, step: int) -> None: ...


def _fire(callbacks: Iterable[Any], event: str, *args) -> None:
    for cb in callbacks:
        fn = getattr(cb, event, None)
        if fn is not None:
            fn(*args)


@dataclass
class History:
    """Everything recorded during training, one entry per step."""

    records: list[dict] = field(default_factory=list)
    diverged_at: int | None = None

    def __getitem__(self, key: str) -> list:
        return [r.get(key) for r in self.records]

    @property
    def val(self) -> list[tuple[int, float]]:
        return [(r["step"], r["val_loss"]) for r in self.records if "val_loss" in r]

    def layer_series(self, layer: int, key: str) -> tuple[list[int], list[float]]:
        pts = [(r["step"], r["layers"][layer][key]) for r in self.records if r.get("layers")]
        return [s for s, _ in pts], [v for _, v in pts]

    def summary(self, window: int = 1) -> dict:
        """The numbers every experiment reports about a run.

        loss_end is the mean training loss of the last ``window`` steps (1: the last
        step's); val_loss_end the last validation loss; final_layers the last
        recorded per-layer diagnostics.
        """
        recs = self.records
        losses = [r["loss"] for r in recs]
        tail = losses[-max(1, window) :]
        val = self.val
        return {
            "steps": len(recs),
            "loss_start": losses[0] if losses else None,
            "loss_end": sum(tail) / len(tail) if tail else None,
            "loss_last": losses[-1] if losses else None,
            "val_loss_end": val[-1][1] if val else None,
            "diverged_at": self.diverged_at,
            "final_layers": next((r["layers"] for r in reversed(recs) if r.get("layers")), None),
        }

    def to_dict(self) -> dict:
        return {"records": self.records, "diverged_at": self.diverged_at}

    @classmethod
    def from_dict(cls, d: dict) -> History:
        return cls(records=list(d["records"]), diverged_at=d.get("diverged_at"))


class _StopRequest:
    """Turns SIGINT (Ctrl-C) and SIGTERM (``kill``, a scheduler's stop) into a flag
    checked between steps, so a checkpoint is never written from a half-finished
    optimizer update and a terminated run loses no steps."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False

    @contextmanager
    def installed(self):
        previous = {}
        try:
            for sig in self.SIGNALS:
                previous[sig] = signal.signal(sig, self._handle)
        except ValueError:  # not in the main thread: the signals stay as they are
            pass
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        if self.requested:  # second Ctrl-C: stop right away
            raise KeyboardInterrupt
        self.requested = True


class TrainingInterrupted(KeyboardInterrupt):
    """Raised after Ctrl-C once the checkpoint is safely on disk."""

    def __init__(self, step: int, path: Path | None):
        super().__init__(f"interrupted at step {step}" + (f"; checkpoint {path}" if path else ""))
        self.step, self.path = step, path


# --------------------------------------------------------------------------- training
def train(
    text: str,
    cfg: Config | None = None,
    *,
    out_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    extend: bool = False,
    progress: bool = False,
    callbacks: Iterable[Any] = (),
    tok: CharTokenizer | None = None,
    stop_after: int | None = None,
    tensorboard: bool = False,
) -> tuple[TinyGPT, CharTokenizer, History]:
    """Train the tiny GPT on ``text``; returns (model, tokenizer, history).

    out_dir: the run folder, where metrics.jsonl, ckpt.pt, config.json,
    tokenizer.json and summary.json go (nothing is written when None). The
    folder is locked for this process while training (see
    :mod:`attnlab.runfolder`), and nothing but the lock is written into it until
    the first step has succeeded.

    resume: continue the run in out_dir from its ckpt.pt. The corpus and the
    tokenizer must be those the checkpoint was trained on (it carries their
    fingerprints) and the config the same except ``device`` (and ``max_steps``
    with ``extend``).
    extend: with resume, a different ``max_steps`` (at least the steps already
    run) extends the run: the learning-rate schedule from the checkpoint's step
    on is the new one, and the change is recorded as ``schedule`` in the
    checkpoint and summary.json. Without it a changed max_steps is refused, so
    a resumed run stays bit-for-bit the run never interrupted.
    overwrite: replace the run already in out_dir (its files go once the first
    step of the new run has succeeded). Without resume or overwrite, an out_dir
    that holds a run is refused with :class:`RunFolderError`.
    stop_after: stop (with a checkpoint) after this many steps, as Ctrl-C would —
    used by tests of resume.
    With out_dir, attention snapshots of cfg.probe go to out_dir/snapshots.npz
    (attnlab.snapshots; snapshot_every=0 turns them off) and tensorboard=True adds
    TensorBoard event files (attnlab.tensorboard_log).
    """
    cfg = cfg or Config()
    if cfg.max_steps < 1:
        raise ConfigError(f"config field 'max_steps' = {cfg.max_steps}: nothing to train; give max_steps >= 1")
    if resume and overwrite:
        raise ConfigError("resume and overwrite exclude each other: continue the run or replace it")
    if resume and out_dir is None:
        raise CheckpointError("--resume needs an output directory holding ckpt.pt")
    ckpt = Path(out_dir) / "ckpt.pt" if out_dir is not None else None
    if ckpt is not None and (ckpt.exists() or ckpt.is_symlink()) and not ckpt.is_file():
        raise CheckpointError(
            f"{ckpt} is not a checkpoint file (a folder, a FIFO or a broken link); move it away, "
            f"or choose another --out"
        )
    if resume and not (Path(out_dir) / "ckpt.pt").is_file() and not holds_run(out_dir):
        raise CheckpointError(
            f"nothing to resume in {out_dir}: it holds no run (no ckpt.pt, no metrics); start the run without --resume"
        )
    device = resolve_device(cfg.device)
    check_fits(cfg, device)
    keep_freed_memory()  # see attnlab.runtime: fewer page faults per step
    if out_dir is None:
        return _train(
            text, cfg, None, device, False, False, False, progress, list(callbacks), tok, stop_after, tensorboard
        )
    with RunFolder(out_dir):
        if resume and not (Path(out_dir) / "ckpt.pt").is_file():
            # killed before its first checkpoint: nothing to continue from but step 0, and from the
            # same seed the steps come out the same, so --resume starts it again (if it is this run)
            _check_restartable(Path(out_dir), cfg, text, extend)
            resume, overwrite = False, True
        return _train(
            text,
            cfg,
            Path(out_dir),
            device,
            resume,
            overwrite,
            extend,
            progress,
            list(callbacks),
            tok,
            stop_after,
            tensorboard,
        )


def _describe_run(out: Path) -> str:
    try:
        n = sum(1 for _ in (out / "metrics.jsonl").open(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
    return f" ({n} steps recorded)" if (out / "ckpt.pt").is_file() else f" ({n} steps recorded, no checkpoint yet)"


def _check_restartable(out: Path, cfg: Config, text: str, extend: bool) -> None:
    """--resume on a run folder without ckpt.pt: only the same run (config, corpus) starts again."""
    from .errors import DataError
    from .schemas import load

    try:  # bounded and checked: a FIFO in its place is refused, never waited on
        saved = Config.from_dict(load("run_config", out / "config.json", max_bytes=10**6))
    except DataError as e:
        if (out / "config.json").exists() or (out / "config.json").is_symlink():
            raise RunFolderError(f"cannot resume {out}: {e}") from None
        saved = None
    except (OSError, ValueError, TypeError, AttnlabError):
        raise RunFolderError(
            f"cannot resume {out}: it has no ckpt.pt and its config.json is unreadable; "
            f"--overwrite replaces that run, or choose another --out"
        ) from None
    diff = config_diff(saved, cfg, ignore=("device", "max_steps") if extend else ("device",)) if saved else ""
    if saved is None or diff:
        why = f"a different config ({diff})" if diff else "no config.json"
        raise RunFolderError(
            f"cannot resume {out}: it has no ckpt.pt yet and holds a run with {why}; "
            f"--overwrite replaces that run, or choose another --out"
        )
    try:
        summary = load("run_summary", out / "summary.json", allow_nan=True, max_bytes=10**7)
        sha = (summary.get("fingerprint") or {}).get("corpus_sha256")
    except AttnlabError:
        sha = None
    if sha is not None and sha != hashlib.sha256(text.encode("utf-8")).hexdigest():
        raise RunFolderError(
            f"cannot resume {out}: it has no ckpt.pt and was trained on a different corpus; "
            f"pass the same --corpus, or --overwrite to replace that run"
        )


_RESUME_NEEDS = {
    "model": "model weights",
    "optimizer": "optimizer state",
    "gen_state": "batch generator state",
    "history": "training history",
    "step": "step count",
}


def _train(
    text: str,
    cfg: Config,
    out: Path | None,
    device: torch.device,
    resume: bool,
    overwrite: bool,
    extend: bool,
    progress: bool,
    callbacks: list,
    tok: CharTokenizer | None,
    stop_after: int | None,
    tensorboard: bool = False,
) -> tuple[TinyGPT, CharTokenizer, History]:
    ckpt_path = out / "ckpt.pt" if out else None
    if out is not None and not resume and not overwrite and holds_run(out):
        raise RunFolderError(
            f"{out} already holds a run{_describe_run(out)}; add --resume to continue it"
            + ("" if (out / "ckpt.pt").is_file() else " (from step 0, the same steps again)")
            + ", --overwrite to replace it, or choose another --out"
        )
    payload = None
    schedule = [{"from_step": 0, "max_steps": cfg.max_steps}]
    if resume:
        payload = read_checkpoint(ckpt_path)
        missing = [what for key, what in _RESUME_NEEDS.items() if key not in payload]
        if missing:
            raise CheckpointError(
                f"cannot resume {ckpt_path}: it holds no {', no '.join(missing)} (a checkpoint "
                f"saved for inference only); train again with --overwrite or a new --out"
            )
        saved = Config.from_dict(payload["config"])
        diff = config_diff(saved, cfg, ignore=("device", "max_steps") if extend else ("device",))
        if diff:
            raise CheckpointError(
                f"cannot resume {ckpt_path}: it was trained with a different "
                f"config ({diff}); use the same --set values or a new --out"
            )
        done = payload["step"]
        if cfg.max_steps < done:
            raise CheckpointError(
                f"cannot resume {ckpt_path} with max_steps={cfg.max_steps}: it has already "
                f"run {done} steps; give max_steps >= {done} to extend it"
            )
        schedule = list(payload.get("schedule") or [{"from_step": 0, "max_steps": saved.max_steps}])
        if cfg.max_steps != schedule[-1]["max_steps"]:
            schedule.append({"from_step": done, "max_steps": cfg.max_steps})
        tok = CharTokenizer.from_itos(payload["itos"])
        _check_fingerprint(payload.get("fingerprint"), text, tok, ckpt_path)
    tok = tok or CharTokenizer(text, cfg.vocab_size)
    if len(tok) > cfg.vocab_size:
        raise CorpusError(f"tokenizer has {len(tok)} entries but vocab_size is {cfg.vocab_size}")
    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    train_ids, val_ids = split_data(ids, cfg)
    fp = fingerprint(text, tok)

    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg).to(device)
    opt = make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    val_gen = torch.Generator().manual_seed(cfg.seed + 1)
    val_batches = [get_batch(val_ids, cfg.block_size, cfg.batch_size, val_gen) for _ in range(cfg.eval_batches)]
    history = History()
    start = 0
    if payload is not None:
        mismatch = state_mismatch(model.state_dict(), payload["model"])
        if mismatch:
            raise CheckpointError(
                f"cannot resume from {ckpt_path}: its weights do not fit this model ({mismatch}); "
                f"train again with --overwrite or a new --out"
            )
        try:
            model.load_state_dict(payload["model"])
            opt.load_state_dict(payload["optimizer"])
            gen.set_state(payload["gen_state"])
            history = History.from_dict(payload["history"])
            start = int(payload["step"])
        except (KeyError, RuntimeError, ValueError, TypeError) as e:
            why = error_summary(e)
            raise CheckpointError(
                f"cannot resume from {ckpt_path}: its state does not fit this model ({why}); "
                f"train again with --overwrite or a new --out"
            ) from None

    if tensorboard and out is None:
        raise AttnlabError("--tensorboard needs an output directory (out_dir) for its event files")
    if out is not None:
        callbacks += run_observers(cfg, out, tok, tensorboard=tensorboard)

    metrics_file = None
    files_ready = False

    def start_files() -> None:
        """The first step succeeded: from now on the folder holds this run."""
        nonlocal metrics_file, files_ready
        files_ready = True
        if out is None:
            return
        if overwrite:  # the old run's files that this run does not rewrite right away
            for name in RUN_FILES:
                if name not in ("metrics.jsonl", "config.json", "tokenizer.json"):
                    (out / name).unlink(missing_ok=True)
        elif payload is not None and start < cfg.max_steps and history.diverged_at is None:
            # a resumed run that trains on is not finished until its new summary: a stale one (an
            # extension killed midway) would disagree with metrics.jsonl
            (out / "summary.json").unlink(missing_ok=True)
        write_json(out / "config.json", cfg.to_dict())
        tok.save(out / "tokenizer.json")
        # metrics.jsonl mirrors the history exactly up to here
        write_text(out / METRICS_FILE, "".join(json.dumps(r) + "\n" for r in history.records))
        metrics_file = open(out / METRICS_FILE, "a", encoding="utf-8")

    def checkpoint(step: int) -> Path | None:
        if ckpt_path is None or not (files_ready or payload is not None):
            return None
        return save_checkpoint(
            ckpt_path,
            model,
            tok,
            optimizer=opt.state_dict(),
            gen_state=gen.get_state(),
            history=history.to_dict(),
            step=step,
            fingerprint=fp,
            schedule=schedule,
        )

    if payload is not None:
        # metrics.jsonl mirrors the checkpoint's history from the start: a tail lost or cut (or
        # steps past the checkpoint that are trained again now) is rewritten from it
        start_files()
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.dtype == "bf16" else nullcontext()
    bar = _progress(start, cfg.max_steps, progress)
    stopper = _StopRequest()
    step = start
    t_start = time.perf_counter()
    cpu_start, load_start = time.process_time(), load_average()  # idle or busy cores: runfolder.load_state
    completed = False
    _fire(callbacks, "on_train_begin", start, model)
    try:
        with stopper.installed():
            # a diverged run is finished: resuming it trains nothing (its last record is the divergence)
            for step in range(start, cfg.max_steps if history.diverged_at is None else start):
                if stopper.requested or (stop_after is not None and step >= start + stop_after):
                    raise TrainingInterrupted(step, checkpoint(step))
                record = train_step(model, opt, train_ids, gen, cfg, step, device, autocast)
                if not math.isfinite(record["loss"]):
                    history.diverged_at = step
                    x, y = record.pop("_batch")
                    _fire(callbacks, "on_nonfinite", step, (x, y), model)
                    history.records.append(record)  # the diverged step is recorded like any other:
                    if not files_ready:  # in metrics.jsonl, the summary and the checkpoint alike
                        start_files()
                    elif metrics_file:
                        metrics_file.write(json.dumps(record) + "\n")
                        metrics_file.flush()
                    break
                record.pop("_batch")
                last = step == cfg.max_steps - 1
                if (cfg.eval_every and (step + 1) % cfg.eval_every == 0) or last:
                    record["val_loss"] = evaluate(model, val_batches, device, autocast)
                history.records.append(record)
                if not files_ready:
                    start_files()
                elif metrics_file:
                    metrics_file.write(json.dumps(record) + "\n")
                    metrics_file.flush()
                _fire(callbacks, "on_step_end", step, record, model)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{record['loss']:.3f}", refresh=False)
                if cfg.ckpt_every and (step + 1) % cfg.ckpt_every == 0 and not last:
                    checkpoint(step + 1)
        final_step = len(history.records)
        checkpoint(final_step if history.diverged_at is None else history.diverged_at)
        completed = True
    finally:
        _fire(callbacks, "on_train_end", step)
        if metrics_file:
            metrics_file.close()
        if bar is not None:
            bar.close()
        if out is not None and files_ready:  # how long this session took, for the books' timings
            try:
                record_session(
                    out,
                    {
                        "from_step": start,
                        "to_step": len(history.records),
                        "seconds": round(time.perf_counter() - t_start, 3),
                        "cpu_s": round(time.process_time() - cpu_start, 3),  # this process, user + system
                        "load_start": load_start,
                        "load_end": load_average(),
                        "cpus": machine_cpus(),
                        "threads": torch.get_num_threads(),
                        "device": str(device),
                        "ended": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    },
                )
            except OSError:
                if completed:
                    raise
                # training already failed (or was interrupted): that is the error to report, not
                # the timing record that could not be written after it
    if out is not None:
        write_json(out / "summary.json", {**summarize(history, cfg, model), "fingerprint": fp, "schedule": schedule})
    model.eval()
    return model, tok, history


def _check_fingerprint(saved: dict | None, text: str, tok: CharTokenizer, ckpt_path: Path) -> None:
    """--resume must continue on the very text and tokenizer the run started with.

    Checkpoints written before fingerprints existed carry none and are not checked.
    """
    if not saved:
        return
    now = fingerprint(text, tok)
    if saved.get("tokenizer_sha256") not in (None, now["tokenizer_sha256"]):
        raise CheckpointError(
            f"cannot resume {ckpt_path}: its tokenizer does not match the fingerprint it "
            f"was saved with; the checkpoint is damaged, train again with --overwrite"
        )
    if saved.get("corpus_sha256") not in (None, now["corpus_sha256"]):
        chars = saved.get("corpus_chars")
        raise CheckpointError(
            f"cannot resume {ckpt_path}: it was trained on a different corpus "
            f"({f'{chars:,}' if isinstance(chars, int) else '?'} characters, sha256 {str(saved['corpus_sha256'])[:12]}…) than the one given ({len(text):,} "
            f"characters, sha256 {now['corpus_sha256'][:12]}…); pass the same --corpus, or start a new run "
            f"with another --out"
        )


def train_step(
    model: TinyGPT, opt, data: Tensor, gen: torch.Generator, cfg: Config, step: int, device: torch.device, autocast
) -> dict:
    lr = lr_at(step, cfg)
    for g in opt.param_groups:
        g["lr"] = lr
    x, y = get_batch(data, cfg.block_size, cfg.batch_size, gen)
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    record_now = cfg.record_every > 0 and step % cfg.record_every == 0
    model.train()
    with autocast:
        _, loss = model(x, y, record=record_now)
    record = {"step": step, "loss": loss.item(), "lr": lr, "grad_norm": float("nan"), "_batch": (x, y)}
    if math.isfinite(record["loss"]):
        opt.zero_grad(set_to_none=True)
        loss.backward()
        max_norm = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        record["grad_norm"] = grad_norm.item()
    # else: no update, so the weights stay those that produced the non-finite loss;
    # on_nonfinite callbacks re-run the batch on them and the checkpoint is not NaN.
    if record_now:
        record["layers"] = model.diagnostics()
    return record


@torch.no_grad()
def evaluate(model: TinyGPT, batches: list[tuple[Tensor, Tensor]], device, autocast=None) -> float:
    was = model.training
    model.eval()
    total = 0.0
    with autocast or nullcontext():
        for x, y in batches:
            total += model(x.to(device), y.to(device))[1].item()
    model.train(was)
    return total / len(batches)


def summarize(history: History, cfg: Config, model: TinyGPT) -> dict:
    s = history.summary()
    return {key: s[key] for key in ("steps", "loss_start", "loss_end", "val_loss_end", "diverged_at")} | {
        "params": model.num_params(),
        "config": cfg.to_dict(),
        "final_layers": s["final_layers"],
    }


def _progress(start: int, total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, leave=False)
