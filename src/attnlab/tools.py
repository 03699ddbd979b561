"""The tools every experiment shares: loading models, provenance, evaluation batches, tables.

Nothing here trains or prints. ``load_model`` accepts both an attnlab
checkpoint and the bare ``torch.save(model.state_dict(), path)`` of the
chapter's §1.12.4 snippet.
"""

from __future__ import annotations

import datetime as _dt
import platform
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .book import book_values  # noqa: F401  (re-exported for the experiments)
from .checkpoint import FORMAT, error_summary, load_checkpoint, state_mismatch
from .config import Config
from .corpus import DEFAULT_CORPUS, load_corpus
from .errors import AttnlabError, CheckpointError
from .limits import check_model_fits
from .model import TinyGPT
from .tokenizer import CharTokenizer
from .train import get_batch, split_data

# Fields that decide what the model computes; two configs equal on these have
# the same architecture (training length, seed and device may differ).
MODEL_FIELDS = (
    "n_layer",
    "n_head",
    "d_model",
    "d_ff",
    "block_size",
    "vocab_size",
    "scaled",
    "tie_weights",
    "pos",
    "norm",
    "residual",
    "qk_norm",
    "learn_temp",
    "n_kv_head",
    "bug",
)


class ExperimentError(AttnlabError):
    """Bad input to an experiment (text too long, unknown grid key, unreachable cluster...)."""


def environment(device: torch.device) -> dict[str, Any]:
    """The machine a measurement ran on: versions, CPU, threads, device, load.

    Stored with every timed result (the case's ``environment``, the benches'
    ``machine``), so a number can be read next to what produced it.
    """
    import os

    import numpy

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "cuda": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }
    try:
        env["load_average"] = list(os.getloadavg())
    except (OSError, AttributeError):  # not on every platform
        pass
    return env


def provenance() -> dict[str, Any]:
    """Versions and time, stored with every result (STYLE: results are data)."""
    import attnlab

    return {
        "attnlab": attnlab.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def is_book_model(cfg: Config) -> bool:
    """True when ``cfg`` has the chapter's architecture (the default Config)."""
    default = Config()
    return all(getattr(cfg, f) == getattr(default, f) for f in MODEL_FIELDS)


def load_model(
    path: str | Path, *, cfg: Config | None = None, corpus: str | Path | None = None, device: str = "cpu"
) -> tuple[TinyGPT, CharTokenizer, Config, dict]:
    """(model, tokenizer, config, info) from an attnlab checkpoint or a bare state_dict.

    A directory means ``DIR/ckpt.pt``. A bare state_dict carries no config and
    no vocabulary: the config is ``cfg`` or the default ``Config()``, and the
    tokenizer is rebuilt from ``corpus`` (default: the packaged attnlab/data/corpus.txt) exactly as
    ``train`` builds it. ``info`` says which of the two happened.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "ckpt.pt"
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path} (train one with `attnlab train --out DIR`)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for damaged files
        raise CheckpointError(
            f"{path} is not a readable checkpoint ({type(e).__name__}); "
            f"expected an attnlab checkpoint or torch.save(model.state_dict())"
        ) from None
    if isinstance(payload, dict) and payload.get("format") == FORMAT:
        model, tok, ckpt_cfg = load_checkpoint(path, device=device)
        return (
            model,
            tok,
            ckpt_cfg,
            {"checkpoint": str(path), "source": "attnlab checkpoint", "step": payload.get("step")},
        )
    if not (isinstance(payload, dict) and payload and all(isinstance(v, Tensor) for v in payload.values())):
        raise CheckpointError(f"{path} is neither an attnlab checkpoint nor a state_dict of tensors")
    cfg = cfg or Config()
    corpus_path = Path(corpus) if corpus is not None else DEFAULT_CORPUS
    tok = CharTokenizer(load_corpus(corpus_path), cfg.vocab_size)
    check_model_fits(cfg, "cpu", f"the model --set describes for {path}")
    model = TinyGPT(cfg)
    try:
        mismatch = state_mismatch(model.state_dict(), payload)
        if mismatch:
            raise RuntimeError(mismatch)
        model.load_state_dict(payload)
    except RuntimeError as e:
        raise CheckpointError(
            f"state_dict {path} does not fit the config "
            f"(d_model={cfg.d_model}, n_head={cfg.n_head}, n_layer={cfg.n_layer}, "
            f"vocab_size={cfg.vocab_size}): {error_summary(e)}; pass --set KEY=VALUE to "
            f"describe the model it came from"
        ) from None
    given = cfg != Config()
    note = (
        f"裸 state_dict：配置{'取给定值' if given else '取默认 Config()'}，词表由 {corpus_path} 重建 / "
        f"bare state_dict: the config is {'the given one' if given else 'the default Config()'} "
        f"and the tokenizer was rebuilt from {corpus_path}"
    )
    return (
        model.to(device).eval(),
        tok,
        cfg,
        {"checkpoint": str(path), "source": "bare state_dict", "note": note, "tokenizer_corpus": str(corpus_path)},
    )


def model_at_step(cfg: Config, step: int, run_dir: str | Path | None = None) -> TinyGPT | None:
    """A run's model entering ``step``: step 0 its initial model (rebuilt from its seed, as train()
    builds it), another step the weights the run kept (checkpoint.KeepWeights); None where it kept none."""
    from .checkpoint import weights_path

    if step == 0:
        torch.manual_seed(cfg.seed)  # the same initial weights as train()
        return TinyGPT(cfg)
    path = weights_path(Path(run_dir), step) if run_dir is not None else None
    return load_model(path)[0] if path is not None and path.is_file() else None


def validation_text(text: str, cfg: Config) -> str:
    """The validation split of ``text`` as a string (the tokenizer maps one character to one id)."""
    n = len(text)
    _, val = split_data(torch.arange(n), cfg)
    return text[n - len(val) :]


def validation_batches(
    text: str, tok: CharTokenizer, cfg: Config, n_batches: int, seed_offset: int = 2
) -> list[tuple[Tensor, Tensor]]:
    """Fixed random windows of the validation split (seed ``cfg.seed + seed_offset``).

    The trainer's own validation batches use ``seed + 1``; a different stream
    keeps these from being the exact windows the run was selected on.
    """
    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    _, val = split_data(ids, cfg)
    gen = torch.Generator().manual_seed(cfg.seed + seed_offset)
    return [get_batch(val, cfg.block_size, cfg.batch_size, gen) for _ in range(n_batches)]


# ------------------------------------------------------------------------------ tables
# East Asian "ambiguous" characters take one column in most terminals and two in a CJK locale,
# so no width count lines them up everywhere: plain-text tables spell them in ASCII instead.
_AMBIGUOUS_ASCII = str.maketrans(
    {"·": ".", "±": "+/-", "Δ": "d", "—": "-", "–": "-", "×": "x", "→": "->", "≈": "~", "‖": "|", "√": "sqrt"}
)


def terminal_safe(s: str) -> str:
    """``s`` with the common ambiguous-width characters spelled in ASCII (see _AMBIGUOUS_ASCII)."""
    return s.translate(_AMBIGUOUS_ASCII)


def _width(s: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _pad(s: str, width: int, right: bool) -> str:
    fill = " " * max(0, width - _width(s))
    return fill + s if right else s + fill


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, fmt: str = ".3f") -> str:
    """A plain-text table; CJK characters count as two columns so columns line up.

    Floats use ``fmt``; None prints as "-". The first column is left-aligned,
    the others right-aligned. Ambiguous-width characters (·, ±, Δ …) are spelled
    in ASCII (:func:`terminal_safe`), so the columns line up in a CJK terminal too.
    """

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return format(v, fmt)
        return terminal_safe(str(v))

    headers = [terminal_safe(h) for h in headers]
    body = [[cell(v) for v in row] for row in rows]
    widths = [max([_width(h)] + [_width(r[i]) for r in body]) for i, h in enumerate(headers)]
    lines = ["  ".join(_pad(h, w, i > 0) for i, (h, w) in enumerate(zip(headers, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(_pad(c, w, i > 0) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def fmt(x: Any, digits: int = 4) -> str:
    """A number, list or dict as the reports print it (— for None, 3 significant digits when tiny or huge)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "PASS" if x else "FAIL"
    if isinstance(x, float):
        if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
            return f"{x:.3g}"
        return f"{x:.{digits}g}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt(v, 3) for v in x) + "]"
    if isinstance(x, dict):
        return "; ".join(f"{k} {fmt(v, 3)}" for k, v in x.items())
    return str(x)
