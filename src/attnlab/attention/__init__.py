"""Pure attention math: NumPy references and torch twins, no training state.

Modules
* ``reference`` - NumPy softmax / attention / multi-head / hand-written backward (chapter names).
* ``masks``     - causal + padding, packed and sliding-window masks; a loss that skips padding.
* ``online``    - online softmax and blocked (FlashAttention-style) attention.
* ``positions`` - sinusoidal tables and RoPE.
* ``precision`` - float32 / float16 / bfloat16 limits and the failures they cause.
* ``memory``    - KV-cache and attention-matrix memory formulas.
* ``faults``    - §1.11's injected bugs, kept apart from the correct model (installed by ``Config.bug``).

Naming: in ``masks`` and ``positions`` the plain name is the torch version (it
takes ``device=``) and the NumPy twin ends in ``_np``; ``reference`` is NumPy only.
"""

import importlib

# each public name and the module that defines it: imported on first use, so that importing a light
# module of this package (e.g. ``attnlab.attention.memory``, for ``attnlab memory --help``) loads no torch
_WHERE = {
    "IGNORE_INDEX": "masks",
    "OnlineStep": "online",
    "Packed": "masks",
    "apply_rope": "positions",
    "apply_rope_np": "positions",
    "attention": "reference",
    "attention_backward": "reference",
    "attention_matrix_bytes": "memory",
    "blocked_attention": "online",
    "blocked_attention_np": "online",
    "blocked_attention_torch": "online",
    "build_mask": "masks",
    "build_mask_np": "masks",
    "causal_mask": "reference",
    "kv_cache_bytes": "memory",
    "masked_lm_loss": "masks",
    "multi_head_attention": "reference",
    "online_softmax": "online",
    "pack_sequences": "masks",
    "pack_sequences_np": "masks",
    "padded_targets": "masks",
    "rope_angles": "positions",
    "sinusoidal_table": "positions",
    "sinusoidal_table_np": "positions",
    "sliding_window_mask": "masks",
    "sliding_window_mask_np": "masks",
    "softmax": "reference",
}


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "IGNORE_INDEX",
    "OnlineStep",
    "Packed",
    "apply_rope",
    "apply_rope_np",
    "attention",
    "attention_backward",
    "attention_matrix_bytes",
    "blocked_attention",
    "blocked_attention_np",
    "blocked_attention_torch",
    "build_mask",
    "build_mask_np",
    "causal_mask",
    "kv_cache_bytes",
    "masked_lm_loss",
    "multi_head_attention",
    "online_softmax",
    "pack_sequences",
    "pack_sequences_np",
    "padded_targets",
    "rope_angles",
    "sinusoidal_table",
    "sinusoidal_table_np",
    "sliding_window_mask",
    "sliding_window_mask_np",
    "softmax",
]
