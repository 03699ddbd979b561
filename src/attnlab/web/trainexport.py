"""What the browser needs to train the chapter's model as ``attnlab train`` does, step for step.

The train page (``static/train.html``, its Web Worker ``static/train-worker.js``) trains in
TensorFlow.js; the numbers it starts from come from here, from the same code as
:func:`attnlab.train.train`, so a browser run is the PyTorch run as far as float32 allows:

* :func:`corpus_bundle` — the default corpus as token ids (uint16) and the tokenizer's ``itos``;
* :func:`init_bundle` — for one config: the initial weights (``torch.manual_seed(seed)``,
  ``TinyGPT(cfg)``), the start index of every training window of every step (the batch
  generator seeded with ``seed``, as ``get_batch`` draws them) and of the validation batches
  (seeded with ``seed + 1``), and the split point.

Both are one binary file each: ``b"ATLT"``, a little-endian uint32 header length, a UTF-8 JSON
header (padded with spaces to a multiple of 4 bytes), then the arrays the header names
(``offset`` in bytes from the end of the header). ``attnlab serve`` answers them on demand for
any config and seed (``/api/train/corpus``, ``POST /api/train/init``); ``attnlab site`` writes
them at build time for the case's two shapes and seed (``train/``), nothing of it in the wheel.

``init_sha256`` (of the float32 weights, in the header's order) travels into a downloaded run's
``browser_run.json``; ``attnlab serve`` recomputes it from the run's own config to refuse a run
that did not start from attnlab's weights for that config (:func:`check_browser_run`).
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np

from ..config import Config
from ..errors import AttnlabError

MAGIC = b"ATLT"
FORMAT = "attnlab-train-v1"
MAX_BROWSER_STEPS = 10_000  # the book's longest run
# what the browser implements: anything else is refused before a byte is exported
BROWSER_FIXED = {
    "pos": "learned",
    "norm": "layernorm",
    "residual": True,
    "qk_norm": False,
    "learn_temp": False,
    "n_kv_head": None,
    "bug": None,
    "tie_weights": True,
    "emb_scale": False,
    "dtype": "fp32",
}


class BrowserTrainError(AttnlabError, ValueError):
    """A config the browser trainer does not implement, or a bundle that cannot be built."""


def check_browser_config(cfg: Config) -> None:
    """Refuse, in one line, a config the browser's trainer does not implement."""
    for key, want in BROWSER_FIXED.items():
        if getattr(cfg, key) != want:
            raise BrowserTrainError(
                f"the browser trainer implements the chapter's model only: {key}={getattr(cfg, key)!r} is not "
                f"supported (needs {want!r}); train it with `attnlab train --set {key}=...`"
            )
    if cfg.max_steps > MAX_BROWSER_STEPS:
        raise BrowserTrainError(f"max_steps={cfg.max_steps}: the browser trains at most {MAX_BROWSER_STEPS} steps")
    if cfg.vocab_size >= 65536:
        raise BrowserTrainError("vocab_size must be below 65536 in the browser (ids travel as uint16)")


def pack(header: dict, arrays: list[tuple[str, np.ndarray]]) -> bytes:
    """MAGIC, header length, header JSON (with each array's dtype, shape and offset), the arrays."""
    blobs, offset, entries = [], 0, []
    for name, a in arrays:
        a = np.ascontiguousarray(a)
        entries.append({"name": name, "dtype": str(a.dtype), "shape": list(a.shape), "offset": offset})
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        pad = (-len(raw)) % 4
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    head = json.dumps({**header, "arrays": entries}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    head += b" " * ((-len(head)) % 4)
    return MAGIC + struct.pack("<I", len(head)) + head + b"".join(blobs)


def unpack(blob: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """The inverse of :func:`pack` (tests and checks)."""
    if blob[:4] != MAGIC:
        raise BrowserTrainError("not an attnlab train bundle")
    (n,) = struct.unpack("<I", blob[4:8])
    header = json.loads(blob[8 : 8 + n])
    body = memoryview(blob)[8 + n :]
    out = {}
    for e in header["arrays"]:
        dt = np.dtype(e["dtype"]).newbyteorder("<")
        count = int(np.prod(e["shape"])) if e["shape"] else 1
        out[e["name"]] = np.frombuffer(body, dtype=dt, count=count, offset=e["offset"]).reshape(e["shape"])
    return header, out


def _corpus():
    from ..corpus import load_corpus
    from ..tokenizer import CharTokenizer

    text = load_corpus(None)
    return text, CharTokenizer


def corpus_ids(cfg: Config):
    """(text, tokenizer, ids as int64 tensor) exactly as train() builds them."""
    import torch

    text, tok_cls = _corpus()
    tok = tok_cls(text, cfg.vocab_size)
    return text, tok, torch.tensor(tok.encode(text), dtype=torch.long)


def corpus_bundle(cfg: Config) -> bytes:
    from ..train import fingerprint

    text, tok, ids = corpus_ids(cfg)
    header = {
        "format": FORMAT,
        "kind": "corpus",
        "itos": tok.itos,
        "tokenizer": tok.to_dict(),
        "fingerprint": fingerprint(text, tok),
    }
    return pack(header, [("ids", ids.numpy().astype(np.uint16))])


def init_weights(cfg: Config) -> list[tuple[str, np.ndarray]]:
    """The initial weights of ``attnlab train`` for ``cfg`` (float32, state_dict order; the tied head
    is the token embedding and appears once)."""
    import torch

    from ..model import TinyGPT

    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg)
    return [(k, v.detach().float().numpy()) for k, v in model.state_dict().items() if k != "head.weight"]


def init_sha256(weights: list[tuple[str, np.ndarray]]) -> str:
    h = hashlib.sha256()
    for _, a in weights:
        h.update(np.ascontiguousarray(a, dtype="<f4").tobytes())
    return h.hexdigest()


def batch_starts(n_data: int, cfg: Config, steps: int, seed: int) -> np.ndarray:
    """(steps, batch_size) window starts as ``get_batch`` draws them from a generator seeded ``seed``."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    rows = [torch.randint(n_data - cfg.block_size, (cfg.batch_size,), generator=gen) for _ in range(steps)]
    return torch.stack(rows).numpy().astype(np.int32) if rows else np.zeros((0, cfg.batch_size), np.int32)


def init_bundle(cfg: Config, steps: int | None = None) -> bytes:
    """Initial weights, batch starts (``steps`` of them, default cfg.max_steps), validation batch starts."""
    from ..train import split_data

    check_browser_config(cfg)
    steps = cfg.max_steps if steps is None else steps
    _, tok, ids = corpus_ids(cfg)
    train_ids, val_ids = split_data(ids, cfg)
    weights = init_weights(cfg)
    val_start = len(ids) - len(val_ids)
    header: dict[str, Any] = {
        "format": FORMAT,
        "kind": "init",
        "config": cfg.to_dict(),
        "run_key": cfg.run_key(),
        "init_sha256": init_sha256(weights),
        "n_train": len(train_ids),
        "val_start": val_start,
        "n_val": len(val_ids),
        "vocab": len(tok),
    }
    arrays = [*weights, ("batch_starts", batch_starts(len(train_ids), cfg, steps, cfg.seed))]
    arrays.append(("val_starts", batch_starts(len(val_ids), cfg, cfg.eval_batches, cfg.seed + 1)))
    return pack(header, arrays)


class _Enough(Exception):
    pass


def reference_records(cfg: Config, steps: int) -> list[dict]:
    """The first ``steps`` records of ``attnlab train`` for ``cfg`` (its schedule: cfg.max_steps), as
    metrics.jsonl holds them: the PyTorch side of the browser's equality test and bench."""
    from ..train import train

    records: list[dict] = []

    class Collect:
        def on_step_end(self, step, record, model):
            records.append(dict(record))
            if len(records) >= steps:
                raise _Enough

    text, _ = _corpus()
    try:
        train(text, cfg, callbacks=[Collect()])
    except _Enough:
        pass
    return records


# what the initial weights and the batches depend on (the worker's INIT_KEYS): scaling, lr, schedule,
# clipping and weight decay may differ between runs sharing one bundle
INIT_KEYS = ("n_layer", "n_head", "d_model", "d_ff", "block_size", "vocab_size", "init_std", "seed")
INIT_KEYS += ("batch_size", "val_fraction", "eval_batches")
SITE_STEPS = 1500  # batches a site's bundle holds: the case's schedule, the page's longest choice


def init_key(cfg: Config) -> str:
    """A file name for the bundle of ``cfg``'s initial weights and batches."""
    text = json.dumps({k: getattr(cfg, k) for k in INIT_KEYS}, sort_keys=True, separators=(",", ":"))
    return "init-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".bin"


def site_configs() -> list[Config]:
    """The configs a static site can train: the case's two shapes at the case's first seed."""
    from ..config import BOOK_MODELS, preset

    return [preset(name, max_steps=SITE_STEPS) for name in BOOK_MODELS]


def write_site_files(dest) -> int:
    """``dest``/corpus.bin, one init bundle per :func:`site_configs` and index.json; returns the bytes."""
    from pathlib import Path

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    configs = site_configs()
    total = (dest / "corpus.bin").write_bytes(corpus_bundle(configs[0]))
    index = {"format": FORMAT, "corpus": "corpus.bin", "inits": {}}
    for cfg in configs:
        name = init_key(cfg)
        total += (dest / name).write_bytes(init_bundle(cfg))
        index["inits"][name] = {"config": cfg.to_dict()}
    text = json.dumps(index, separators=(",", ":"))
    total += (dest / "index.json").write_text(text, encoding="utf-8")
    return total
