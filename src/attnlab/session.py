"""A training run's bookkeeping, apart from the loop in :mod:`attnlab.train`: its history, its run
folder's files, resume from a checkpoint, and Ctrl-C.

``Session(out, cfg, text, ...)`` is what ``train()`` asks about its run folder (``out=None``: a run
that writes nothing). Before the first step, :meth:`Session.begin` refuses what cannot go on (a
folder holding another run, a checkpoint of another config, corpus or tokenizer) and reads the
checkpoint; :meth:`Session.restore` puts its weights, optimizer, batch generator and history back.
During the run, :meth:`Session.record` appends one step to metrics.jsonl (the folder's files are
written once the first step has succeeded, never before) and :meth:`Session.checkpoint` saves all
a resume needs, atomically. :meth:`Session.close` records the session's timing, and
:meth:`Session.summarize` writes summary.json. A resumed run finishes bit for bit equal to one never
interrupted: the batch generator's state, the optimizer and the history travel in the checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import signal
import time
from collections.abc import Iterable
from contextlib import contextmanager
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
from .runfolder import RUN_FILES, holds_run, load_average, machine_cpus, record_session
from .snapshots import run_observers
from .tokenizer import CharTokenizer

METRICS_FILE = "metrics.jsonl"  # one JSON record per step, written by train() as it goes


# ------------------------------------------------------------------------- history
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


def fingerprint(text: str, tok: CharTokenizer) -> dict:
    """What the run was trained on: the corpus text and the tokenizer, hashed."""
    return {
        "corpus_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "corpus_chars": len(text),
        "tokenizer_sha256": hashlib.sha256(json.dumps(tok.itos).encode("utf-8")).hexdigest(),
        "vocab": len(tok),
    }


def summarize(history: History, cfg: Config, model: TinyGPT) -> dict:
    s = history.summary()
    return {key: s[key] for key in ("steps", "loss_start", "loss_end", "val_loss_end", "diverged_at")} | {
        "params": model.num_params(),
        "config": cfg.to_dict(),
        "final_layers": s["final_layers"],
    }


# ------------------------------------------------------------------------- callbacks
class Callback(Protocol):
    """Named training events; implement only the ones you need."""

    def on_train_begin(self, start: int, model: TinyGPT) -> None: ...
    def on_step_end(self, step: int, record: dict, model: TinyGPT) -> None: ...
    def on_nonfinite(self, step: int, batch: tuple[Tensor, Tensor], model: TinyGPT) -> None: ...
    def on_train_end(self, step: int) -> None: ...


def fire(callbacks: Iterable[Any], event: str, *args) -> None:
    """Call ``event`` on every callback that has it."""
    for cb in callbacks:
        fn = getattr(cb, event, None)
        if fn is not None:
            fn(*args)


# ------------------------------------------------------------------------ stopping
class StopRequest:
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


# ------------------------------------------------------------------ where it runs
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


# ---------------------------------------------------------------- the run's request
def check_request(cfg: Config, out_dir: str | Path | None, *, resume: bool, overwrite: bool) -> None:
    """Refuse, before anything is built or locked, what ``train()`` cannot do."""
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
    if resume and not ckpt.is_file() and not holds_run(out_dir):
        raise CheckpointError(
            f"nothing to resume in {out_dir}: it holds no run (no ckpt.pt, no metrics); start the run without --resume"
        )


def describe_run(out: Path) -> str:
    try:
        n = sum(1 for _ in (out / "metrics.jsonl").open(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
    return f" ({n} steps recorded)" if (out / "ckpt.pt").is_file() else f" ({n} steps recorded, no checkpoint yet)"


def check_restartable(out: Path, cfg: Config, text: str, extend: bool) -> None:
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


def check_fingerprint(saved: dict | None, text: str, tok: CharTokenizer, ckpt_path: Path) -> None:
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


RESUME_NEEDS = {
    "model": "model weights",
    "optimizer": "optimizer state",
    "gen_state": "batch generator state",
    "history": "training history",
    "step": "step count",
}


# ---------------------------------------------------------------------- the session
class Session:
    """One training session of one run: what it resumes from and what it writes (see the module)."""

    def __init__(
        self, out: Path | None, cfg: Config, text: str, *, resume: bool, overwrite: bool, extend: bool
    ) -> None:
        self.out, self.cfg, self.text = out, cfg, text
        self.resume, self.overwrite, self.extend = resume, overwrite, extend
        self.ckpt_path = out / "ckpt.pt" if out is not None else None
        self.payload: dict | None = None
        self.schedule = [{"from_step": 0, "max_steps": cfg.max_steps}]
        self.tok: CharTokenizer | None = None
        self.fp: dict | None = None
        self.files_ready = False
        self._metrics = None
        self.start_clock()

    def start_clock(self) -> None:
        """The session's timing starts here (train() calls it just before the first step)."""
        self.t_start = time.perf_counter()
        self.cpu_start, self.load_start = time.process_time(), load_average()  # runfolder.load_state

    # ------------------------------------------------------------ before the first step
    def begin(self, tok: CharTokenizer | None) -> CharTokenizer:
        """Refuse a folder that holds a run not asked for, read and check the checkpoint to resume;
        the tokenizer of the run (the checkpoint's when resuming, else ``tok`` or a new one)."""
        out, cfg = self.out, self.cfg
        if out is not None and not self.resume and not self.overwrite and holds_run(out):
            raise RunFolderError(
                f"{out} already holds a run{describe_run(out)}; add --resume to continue it"
                + ("" if (out / "ckpt.pt").is_file() else " (from step 0, the same steps again)")
                + ", --overwrite to replace it, or choose another --out"
            )
        if self.resume:
            tok = self._read_checkpoint()
        tok = tok or CharTokenizer(self.text, cfg.vocab_size)
        if len(tok) > cfg.vocab_size:
            raise CorpusError(f"tokenizer has {len(tok)} entries but vocab_size is {cfg.vocab_size}")
        self.tok, self.fp = tok, fingerprint(self.text, tok)
        return tok

    def _read_checkpoint(self) -> CharTokenizer:
        payload = read_checkpoint(self.ckpt_path)
        missing = [what for key, what in RESUME_NEEDS.items() if key not in payload]
        if missing:
            raise CheckpointError(
                f"cannot resume {self.ckpt_path}: it holds no {', no '.join(missing)} (a checkpoint "
                f"saved for inference only); train again with --overwrite or a new --out"
            )
        saved = Config.from_dict(payload["config"])
        diff = config_diff(saved, self.cfg, ignore=("device", "max_steps") if self.extend else ("device",))
        if diff:
            raise CheckpointError(
                f"cannot resume {self.ckpt_path}: it was trained with a different "
                f"config ({diff}); use the same --set values or a new --out"
            )
        done = payload["step"]
        if self.cfg.max_steps < done:
            raise CheckpointError(
                f"cannot resume {self.ckpt_path} with max_steps={self.cfg.max_steps}: it has already "
                f"run {done} steps; give max_steps >= {done} to extend it"
            )
        schedule = list(payload.get("schedule") or [{"from_step": 0, "max_steps": saved.max_steps}])
        if self.cfg.max_steps != schedule[-1]["max_steps"]:
            schedule.append({"from_step": done, "max_steps": self.cfg.max_steps})
        tok = CharTokenizer.from_itos(payload["itos"])
        check_fingerprint(payload.get("fingerprint"), self.text, tok, self.ckpt_path)
        self.payload, self.schedule = payload, schedule
        return tok

    def restore(self, model: TinyGPT, opt: torch.optim.Optimizer, gen: torch.Generator) -> tuple[History, int]:
        """(history, first step): the checkpoint's put into model, optimizer and batch generator, or
        a fresh start. A resumed run's metrics.jsonl is rewritten from the checkpoint's history."""
        payload, path = self.payload, self.ckpt_path
        if payload is None:
            return History(), 0
        mismatch = state_mismatch(model.state_dict(), payload["model"])
        if mismatch:
            raise CheckpointError(
                f"cannot resume from {path}: its weights do not fit this model ({mismatch}); "
                f"train again with --overwrite or a new --out"
            )
        try:
            model.load_state_dict(payload["model"])
            opt.load_state_dict(payload["optimizer"])
            gen.set_state(payload["gen_state"])
            history = History.from_dict(payload["history"])
            start = int(payload["step"])
        except (KeyError, RuntimeError, ValueError, TypeError) as e:
            raise CheckpointError(
                f"cannot resume from {path}: its state does not fit this model ({error_summary(e)}); "
                f"train again with --overwrite or a new --out"
            ) from None
        return history, start

    def observers(self, *, tensorboard: bool) -> list:
        """The run folder's own callbacks: attention snapshots, TensorBoard."""
        if tensorboard and self.out is None:
            raise AttnlabError("--tensorboard needs an output directory (out_dir) for its event files")
        return run_observers(self.cfg, self.out, self.tok, tensorboard=tensorboard) if self.out is not None else []

    # --------------------------------------------------------------------- during the run
    def start_files(self, history: History, start: int) -> None:
        """From now on the folder holds this run: its config, tokenizer and metrics so far."""
        self.files_ready = True
        out = self.out
        if out is None:
            return
        if self.overwrite:  # the old run's files that this run does not rewrite right away
            for name in RUN_FILES:
                if name not in ("metrics.jsonl", "config.json", "tokenizer.json"):
                    (out / name).unlink(missing_ok=True)
        elif self.payload is not None and start < self.cfg.max_steps and history.diverged_at is None:
            # a resumed run that trains on is not finished until its new summary: a stale one (an
            # extension killed midway) would disagree with metrics.jsonl
            (out / "summary.json").unlink(missing_ok=True)
        write_json(out / "config.json", self.cfg.to_dict())
        self.tok.save(out / "tokenizer.json")
        # metrics.jsonl mirrors the history exactly up to here
        write_text(out / METRICS_FILE, "".join(json.dumps(r) + "\n" for r in history.records))
        self._metrics = open(out / METRICS_FILE, "a", encoding="utf-8")

    def record(self, record: dict, history: History, start: int) -> None:
        """A step appended to the history has succeeded: the files start with the first one."""
        if not self.files_ready:
            self.start_files(history, start)
        elif self._metrics:
            self._metrics.write(json.dumps(record) + "\n")
            self._metrics.flush()

    def checkpoint(self, step: int, *, model: TinyGPT, opt, gen: torch.Generator, history: History) -> Path | None:
        """Save all a resume needs (nothing before the run's files exist, or without a folder)."""
        if self.ckpt_path is None or not (self.files_ready or self.payload is not None):
            return None
        return save_checkpoint(
            self.ckpt_path,
            model,
            self.tok,
            optimizer=opt.state_dict(),
            gen_state=gen.get_state(),
            history=history.to_dict(),
            step=step,
            fingerprint=self.fp,
            schedule=self.schedule,
        )

    # --------------------------------------------------------------------------- the end
    def close(self, *, start: int, history: History, device: torch.device, completed: bool) -> None:
        """Close metrics.jsonl and record how long this session took, for the books' timings."""
        if self._metrics:
            self._metrics.close()
        if self.out is None or not self.files_ready:
            return
        try:
            record_session(
                self.out,
                {
                    "from_step": start,
                    "to_step": len(history.records),
                    "seconds": round(time.perf_counter() - self.t_start, 3),
                    "cpu_s": round(time.process_time() - self.cpu_start, 3),  # this process, user + system
                    "load_start": self.load_start,
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

    def summarize(self, history: History, model: TinyGPT) -> None:
        if self.out is not None:
            write_json(
                self.out / "summary.json",
                {**summarize(history, self.cfg, model), "fingerprint": self.fp, "schedule": self.schedule},
            )
