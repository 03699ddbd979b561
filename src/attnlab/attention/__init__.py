"""Pure attention math: NumPy references and torch twins, no training state.

Modules
* ``reference`` - NumPy softmax / attention / multi-head / hand-written backward (chapter names).
* ``masks``     - causal + padding, packed and sliding-window masks; a loss that skips padding.
* ``online``    - online softmax and blocked (FlashAttention-style) attention.
* ``positions`` - sinusoidal tables and RoPE.
* ``precision`` - float32 / float16 / bfloat16 limits and the failures they cause.
* ``memory``    - KV-cache and attention-matrix memory formulas.

Naming: in ``masks`` and ``positions`` the plain name is the torch version (it
takes ``device=``) and the NumPy twin ends in ``_np``; ``reference`` is NumPy only.
"""

from attnlab.attention.masks import (
    IGNORE_INDEX,
    Packed,
    build_mask,
    build_mask_np,
    masked_lm_loss,
    pack_sequences,
    pack_sequences_np,
    padded_targets,
    sliding_window_mask,
    sliding_window_mask_np,
)
from attnlab.attention.memory import attention_matrix_bytes, kv_cache_bytes
from attnlab.attention.online import (
    OnlineStep,
    blocked_attention,
    blocked_attention_np,
    blocked_attention_torch,
    online_softmax,
)
from attnlab.attention.positions import (
    apply_rope,
    apply_rope_np,
    rope_angles,
    sinusoidal_table,
    sinusoidal_table_np,
)
from attnlab.attention.reference import (
    attention,
    attention_backward,
    causal_mask,
    multi_head_attention,
    softmax,
)

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
