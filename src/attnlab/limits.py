"""What this machine can hold: sizes are checked before anything is allocated.

A model (from ``--set`` or from a checkpoint's config) is counted from its config alone,
by arithmetic, and refused with one line naming the sizes and the limit when its weights
and one forward pass would not fit in the memory this machine has available
(:func:`check_model_fits`). Training has its own, larger estimate
(:func:`attnlab.train.check_fits`); the sane maxima of every field are in
:data:`attnlab.config.LIMITS`.
"""

from __future__ import annotations

import os

from .config import Config
from .errors import ConfigError


def param_count(cfg: Config) -> int:
    """An upper estimate of the parameter count (the real count is
    :func:`attnlab.model.parameter_table`, which builds the model on the meta device)."""
    d, L, V, T, f = cfg.d_model, cfg.n_layer, cfg.vocab_size, cfg.block_size, cfg.d_ff
    embeddings = V * d * (1 if cfg.tie_weights else 2) + T * d
    per_layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d + cfg.n_head
    return embeddings + L * per_layer + 2 * d


def model_bytes(cfg: Config, batch: int = 1) -> int:
    """Bytes of the float32 weights plus one forward pass of ``batch`` full windows (the
    attention matrices of one layer, a few (T, d) tensors per layer, the logits)."""
    d, T, B = cfg.d_model, cfg.block_size, batch
    activations = 4 * B * cfg.n_head * T * T + cfg.n_layer * 8 * B * T * max(d, cfg.d_ff) + B * T * cfg.vocab_size
    return 4 * (param_count(cfg) + activations)


def available_bytes(device="cpu") -> int | None:
    """Memory this process could still get on ``device``: free GPU memory for cuda, the kernel's
    MemAvailable (else the physical memory) for the CPU; None when it cannot be told."""
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    if kind == "cuda":
        try:
            import torch

            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:  # no GPU, or a driver that cannot say: the build itself will tell
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def gb(n: int) -> str:
    return f"{n / 1e9:,.1f} GB" if n < 1e12 else f"{n / 1e12:,.0f} TB"


def check_model_fits(cfg: Config, device="cpu", what: str = "the model") -> None:
    """Refuse, in one line, a model whose weights and one forward pass would not fit in the
    memory available on ``device``, before any of it is allocated."""
    need, have = model_bytes(cfg), available_bytes(device)
    if have is not None and need > have:
        raise ConfigError(
            f"{what} needs about {gb(need)} (d_model={cfg.d_model}, n_layer={cfg.n_layer}, "
            f"vocab_size={cfg.vocab_size}, block_size={cfg.block_size}) but {getattr(device, 'type', device)} "
            f"has {gb(have)} available; use a smaller model"
        )
