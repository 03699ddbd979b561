"""Attention snapshots during training: how the maps of one probe text form (and collapse).

At the steps of :func:`snapshot_steps` the :class:`SnapshotRecorder` (a trainer
callback) runs the model once on ``cfg.probe`` and keeps every layer's and
head's attention pattern (float16) and head metrics (float32). All snapshots
of a run live in one file, ``snapshots.npz`` in the run directory, rewritten
atomically after each snapshot (a few kB each, so rewriting is cheaper than
any append format that could be left half-written).

Step convention: snapshot ``s`` shows the weights *entering* step ``s``, the
same weights whose diagnostics metrics.jsonl records at step ``s``; snapshot 0
is the initial model and snapshot ``max_steps`` the trained one.

Resume: a checkpoint at step ``s`` is written after snapshot ``s`` was taken,
so a resumed run keeps the file's snapshots up to ``s``, drops any taken after
the checkpoint and retakes them from the same weights: no duplicate, no gap.

The probe pass runs in eval mode under ``no_grad`` and draws no random
numbers, so snapshots leave the training numbers bit for bit unchanged
(tested). Deliberately left out: snapshots of arbitrary texts (the /exp1-2
page does that for one checkpoint) and of the MLPs.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .chinese import to_traditional
from .config import Config
from .diagnostics import head_metrics, jacobian_frobenius
from .errors import AttnlabError
from .io import write_bytes

FILENAME = "snapshots.npz"
FORMAT = 1
METRICS = ("entropy", "jacobian_fro", "logit_std", "diag", "prev", "distance")


class SnapshotError(AttnlabError):
    """A snapshot file that is missing, corrupt or of an unknown format."""


class SnapshotWarning(UserWarning):
    """A damaged snapshot file set aside on resume (training goes on)."""


class SnapshotSchedule(Sequence):
    """The steps of :func:`snapshot_steps`, computed lazily: three ranges (every step below
    ``snapshot_dense``, every ``snapshot_every``-th after, the last step), so membership and
    length cost the same for 1,500 steps as for 10**12 (no list sized by max_steps)."""

    def __init__(self, cfg: Config):
        last, every = cfg.max_steps, cfg.snapshot_every
        if every <= 0:
            self.parts: tuple[range, ...] = ()
            return
        dense = min(cfg.snapshot_dense, last + 1)
        first = -(-dense // every) * every  # the first multiple of every at or above dense
        tail = range(last, last + 1) if last >= dense and last % every else range(0)
        self.parts = (range(dense), range(first, last + 1, every), tail)

    def __len__(self) -> int:
        return sum(len(r) for r in self.parts)

    def __contains__(self, step) -> bool:
        return any(step in r for r in self.parts)

    def __iter__(self):
        return itertools.chain.from_iterable(self.parts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        n = len(self)
        if i < 0:
            i += n
        for r in self.parts:
            if 0 <= i < len(r):
                return r[i]
            i -= len(r)
        raise IndexError("snapshot schedule index out of range")

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, tuple, SnapshotSchedule)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"SnapshotSchedule({', '.join(map(repr, self.parts))})"


def snapshot_steps(cfg: Config) -> SnapshotSchedule:
    """Steps (0..max_steps) at which snapshots are taken, in order; empty when snapshot_every is 0."""
    return SnapshotSchedule(cfg)


def probe_ids(cfg: Config, tok) -> list[int]:
    """The probe's token ids, cropped to block_size: simplified characters the vocabulary lacks
    are converted to traditional (attnlab.chinese), the rest outside it -> <unk>."""
    return tok.encode(to_traditional(cfg.probe, tok.stoi))[: cfg.block_size] or [1]


@torch.no_grad()
def take_snapshot(model, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(patterns (L, nh, T, T) float16, metrics (L, nh, len(METRICS)) float32) for one text."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    try:
        with model.capture("tap_scores", "tap_pattern") as store:
            model(idx)
    finally:
        model.train(was)
    patterns, metrics = [], []
    for i in range(len(model.blocks)):
        p = store[f"blocks.{i}.attn.tap_pattern"][0].float()[0]  # (nh, T, T)
        s = store[f"blocks.{i}.attn.tap_scores"][0].float()[0]  # (nh, T, T)
        T = p.shape[-1]
        with warnings.catch_warnings():  # T = 1: std over nothing
            warnings.simplefilter("ignore", UserWarning)
            hm = head_metrics(p[None])
        jac = jacobian_frobenius(p)[:, 1:].mean(-1)  # rows with > 1 visible key
        causal = torch.ones(T, T, dtype=torch.bool, device=p.device).tril()
        nan = torch.tensor(float("nan"), device=p.device)  # T = 1: no spread of one score (and no torch warning)
        logit_std = torch.stack([s[h][causal].std() if T > 1 else nan for h in range(p.shape[0])])
        cols = {
            "entropy": hm["entropy"],
            "jacobian_fro": jac,
            "logit_std": logit_std,
            "diag": hm["diag"],
            "prev": hm["prev"],
            "distance": hm["distance"],
        }
        metrics.append(torch.stack([cols[k] for k in METRICS], dim=-1))  # (nh, M)
        patterns.append(p)
    return (
        torch.stack(patterns).cpu().numpy().astype(np.float16),
        torch.stack(metrics).cpu().numpy().astype(np.float32),
    )


@dataclass
class Snapshots:
    """All snapshots of one run, as read from its file."""

    steps: np.ndarray  # (N,) int64, increasing
    patterns: np.ndarray  # (N, L, nh, T, T) float16
    metrics: np.ndarray  # (N, L, nh, M) float32, columns named by meta["metrics"]
    meta: dict  # format, probe, tokens, metrics, n_layer, n_head

    def __len__(self) -> int:
        return len(self.steps)

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(
            buf,
            steps=self.steps,
            patterns=self.patterns,
            metrics=self.metrics,
            meta=np.array(json.dumps(self.meta, ensure_ascii=False)),
        )
        return buf.getvalue()


MAX_FILE_BYTES = 512 * 2**20  # the arrays of one snapshot file, uncompressed (real runs: a few MB)
ARRAYS = ("steps", "patterns", "metrics", "meta")
_DTYPES = {"steps": "iu", "patterns": "f", "metrics": "f", "meta": "U"}  # numpy dtype kinds allowed


def read_snapshots(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Snapshots:
    """Load a snapshot file; anything unreadable raises SnapshotError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise SnapshotError(
            f"{path} does not exist: this run has no attention snapshots "
            f"(it was trained before snapshots existed or with snapshot_every=0)"
        )
    try:
        f = path.open("rb")
    except OSError as e:
        raise SnapshotError(f"{path} cannot be read ({e.strerror or type(e).__name__})") from None
    with f:
        return read_snapshots_from(f, path, max_bytes)


def _corrupt(name, why: str) -> SnapshotError:
    return SnapshotError(f"{name} is corrupt ({why}); delete it and retrain to get snapshots again")


def _array(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name) -> np.ndarray:
    """One .npy member, its declared shape checked against its real size before anything is allocated."""
    with zf.open(info) as m:
        version = np.lib.format.read_magic(m)
        if version not in ((1, 0), (2, 0)):
            raise _corrupt(name, f"{info.filename}: npy format {version}")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(m)
        data_bytes = info.file_size - m.tell()
        count = math.prod(shape)
        if (
            dtype.hasobject
            or dtype.kind not in _DTYPES[info.filename[:-4]]
            or min(shape, default=0) < 0
            or count * dtype.itemsize != data_bytes
        ):
            raise _corrupt(
                name, f"{info.filename} declares {shape} {dtype} ({count * dtype.itemsize:,} bytes) in {data_bytes:,}"
            )
        data = m.read(data_bytes)
    if len(data) != data_bytes:
        raise _corrupt(name, f"{info.filename} is truncated")
    arr = np.frombuffer(data, dtype=dtype)
    return arr.reshape(shape, order="F" if fortran else "C")


def read_snapshots_from(f, name, max_bytes: int = MAX_FILE_BYTES) -> Snapshots:
    """Snapshots from an open binary file (``name`` only names it in messages).

    Bounded before anything is decompressed or allocated: the archive must hold exactly the four
    arrays, at most ``max_bytes`` of them uncompressed, each of a plain dtype whose declared shape
    matches its stored size; the meta must be a JSON object. Anything else: SnapshotError.
    """
    try:
        with zipfile.ZipFile(f) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            if sorted(infos) != sorted(f"{a}.npy" for a in ARRAYS):
                raise _corrupt(name, f"holds {sorted(infos)[:6]}, not the arrays {', '.join(ARRAYS)}")
            total = sum(i.file_size for i in infos.values())
            if total > max_bytes:
                raise SnapshotError(
                    f"{name} holds {total:,} bytes of snapshots uncompressed, more than the {max_bytes:,} "
                    f"this reader accepts; delete it and retrain with a larger snapshot_every or a shorter probe"
                )
            arrays = {a: _array(zf, infos[f"{a}.npy"], name) for a in ARRAYS}
        meta = json.loads(str(arrays["meta"].reshape(())) if arrays["meta"].size == 1 else "")
    except SnapshotError:
        raise
    except RecursionError:
        raise _corrupt(name, "the meta JSON is nested too deeply") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as e:
        raise _corrupt(name, f"{type(e).__name__}: {str(e)[:120]}") from None
    if not isinstance(meta, dict):
        raise _corrupt(name, f"its meta is a JSON {type(meta).__name__}, not an object")
    snap = Snapshots(arrays["steps"].astype(np.int64), arrays["patterns"], arrays["metrics"], meta)
    n = len(snap.steps)
    names = meta.get("metrics", ())
    ok = (
        meta.get("format") == FORMAT
        and snap.steps.ndim == 1
        and snap.patterns.ndim == 5
        and snap.metrics.ndim == 4
        and snap.patterns.shape[0] == n
        and snap.metrics.shape[0] == n
        and snap.patterns.shape[1:3] == snap.metrics.shape[1:3]
        and snap.patterns.shape[3] == snap.patterns.shape[4]
        and isinstance(names, list)
        and snap.metrics.shape[-1] == len(names)
    )
    if not ok:
        raise SnapshotError(
            f"{name} has an unexpected layout (format {str(meta.get('format'))[:40]!r}); "
            f"delete it and retrain to get snapshots again"
        )
    return snap


class SnapshotRecorder:
    """Trainer callback that keeps ``run_dir/snapshots.npz`` up to date."""

    def __init__(self, run_dir: str | Path, cfg: Config, tok, listeners=()):
        self.path = Path(run_dir) / FILENAME
        self.cfg = cfg
        self.ids = probe_ids(cfg, tok)
        self.schedule = snapshot_steps(cfg)
        self.listeners = list(listeners)  # objects with on_snapshot(step, patterns, tokens)
        tokens = [tok.itos[i] for i in self.ids]
        self.meta = {
            "format": FORMAT,
            "probe": cfg.probe,
            "tokens": tokens,
            "metrics": list(METRICS),
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
        }
        self.steps: list[int] = []
        self.patterns: list[np.ndarray] = []
        self.metrics: list[np.ndarray] = []
        self.pending: list[tuple[int, np.ndarray]] = []  # taken before the run folder may be written

    # ------------------------------------------------------------------ events
    def on_train_begin(self, start: int, model) -> None:
        self._load_until(start)
        if start in self.schedule and start not in self.steps:
            # a fresh run writes nothing into its folder before its first step has succeeded
            # (attnlab.runfolder): the snapshot of the initial weights waits in memory until then
            self._take(start, model, write=start > 0)

    def on_step_end(self, step: int, record: dict, model) -> None:
        if step + 1 in self.schedule:  # the weights that enter step + 1
            self._take(step + 1, model)
        elif self.pending:
            self._write()

    # ---------------------------------------------------------------- internals
    def _load_until(self, start: int) -> None:
        """Keep the file's snapshots up to ``start`` (a resume); a fresh run starts empty."""
        if start == 0 or not self.path.is_file():
            return
        try:
            old = read_snapshots(self.path)
        except SnapshotError as e:
            aside, n = self.path.with_name(self.path.name + ".corrupt"), 1
            while aside.exists():  # never over an earlier one set aside
                aside, n = self.path.with_name(f"{self.path.name}.corrupt.{n}"), n + 1
            self.path.replace(aside)
            problem = str(e).split("; delete it and retrain")[0]
            # one line on stderr (no source line): the resume goes on with a new snapshot file
            warnings.warn_explicit(
                f"{problem}: kept it as {aside.name} and started a new snapshot file "
                f"(the snapshots before step {start} are not in it)",
                SnapshotWarning,
                filename="attnlab",
                lineno=0,
                module=__name__,
            )
            return
        if old.meta.get("tokens") != self.meta["tokens"] or old.patterns.shape[1:3] != (
            self.cfg.n_layer,
            self.cfg.n_head,
        ):
            return  # another probe or model: those snapshots do not continue
        keep = old.steps <= start
        self.steps = old.steps[keep].tolist()
        self.patterns = list(old.patterns[keep])
        self.metrics = list(old.metrics[keep])

    def _take(self, step: int, model, write: bool = True) -> None:
        patterns, metrics = take_snapshot(model, self.ids)
        self.steps.append(step)
        self.patterns.append(patterns)
        self.metrics.append(metrics)
        self.pending.append((step, patterns))
        if write:
            self._write()

    def _write(self) -> None:
        snap = Snapshots(
            np.asarray(self.steps, dtype=np.int64), np.stack(self.patterns), np.stack(self.metrics), self.meta
        )
        write_bytes(self.path, snap.to_bytes())
        for step, patterns in self.pending:
            for listener in self.listeners:
                listener.on_snapshot(step, patterns, self.meta["tokens"])
        self.pending = []


def run_observers(cfg: Config, run_dir: str | Path, tok, tensorboard: bool = False) -> list:
    """The callbacks train() installs for a run directory: TensorBoard (when asked) and snapshots."""
    observers: list = []
    if tensorboard:
        from .tensorboard_log import TensorBoardLogger

        observers.append(TensorBoardLogger(run_dir))
    if cfg.snapshot_every > 0:
        observers.append(SnapshotRecorder(run_dir, cfg, tok, listeners=observers[:1]))
    return observers
