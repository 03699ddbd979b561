"""Position information for attention: sinusoidal tables (chapter §1.9.2-1.9.3) and RoPE (§1.9.5).

Attention by itself treats its input as a set (§1.9.1): permuting the rows of X
permutes the output rows and changes nothing else. The two functions here are the
two ways the chapter puts order back in:

* ``sinusoidal_table(n, d)`` - a fixed (n, d) table that is *added* to the token
  embeddings; column 2i is sin(pos * w_i), column 2i+1 is cos(pos * w_i), with
  w_i = 10000^(-2i/d).
* ``apply_rope(x, pos)`` - *rotates* each pair (x[2i], x[2i+1]) of a query or key
  by the angle pos * theta_i, theta_i = 10000^(-2i/hs). Because rotations compose,
  the score q_m . k_n after rotation depends on n - m only (equation 1.44).

Torch versions carry the plain names (the model imports them); NumPy twins end in
``_np`` and are what the hand-computed tests and the notebook check against.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "sinusoidal_table",
    "apply_rope",
    "rope_angles",
    "sinusoidal_table_np",
    "apply_rope_np",
]

_BASE = 10000.0


def _check_table_args(n: int, d: int) -> None:
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got n={n!r}")
    if int(d) != d or d <= 0:
        raise ValueError(f"d must be a positive integer, got d={d!r}")


def sinusoidal_table_np(n: int, d: int) -> np.ndarray:
    """Sinusoidal position table, float64, shape (n, d).

    An odd ``d`` is allowed: the last column is then a sine without its cosine partner.
    """
    _check_table_args(n, d)
    pos = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    two_i = np.arange(0, d, 2, dtype=np.float64)  # (ceil(d/2),) = 0, 2, 4, ...
    freq = _BASE ** (-two_i / d)  # w_i
    angle = pos * freq  # (n, ceil(d/2))
    table = np.empty((n, d), dtype=np.float64)
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, : d // 2])
    return table


def sinusoidal_table(n: int, d: int, device=None) -> torch.Tensor:
    """Sinusoidal position table as a float32 tensor of shape (n, d) on ``device``.

    Computed in float64 and rounded once, so row 1000 is as accurate as row 1.
    """
    return torch.from_numpy(sinusoidal_table_np(n, d)).to(device=device, dtype=torch.float32)


def rope_angles(pos: torch.Tensor, hs: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Rotation angles pos * theta_i, shape pos.shape + (hs // 2,)."""
    if hs <= 0 or hs % 2:
        raise ValueError(f"hs (head size) must be a positive even number, got hs={hs}")
    i = torch.arange(hs // 2, dtype=torch.float64)  # built on the CPU, where float64 always exists
    theta = _BASE ** (-2.0 * i / hs)  # (hs/2,)
    # Angles are formed in float64 where the device has it: at pos ~ 1e4 a float32
    # product already loses the third decimal of the angle. (MPS has no float64.)
    work = torch.float32 if pos.device.type == "mps" else torch.float64
    return (pos.to(work)[..., None] * theta.to(pos.device, work)).to(dtype)


def apply_rope(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (2i, 2i+1) of the last axis of ``x`` by pos * theta_i.

    x:   (..., T, hs), hs even (typically (B, nh, T, hs) queries or keys).
    pos: integer positions, shape (T,) - or any shape that broadcasts against
         x.shape[:-1], e.g. (B, 1, T) for packed sequences whose positions restart.
    Returns a new tensor with the shape and dtype of ``x``.
    """
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., T, hs), got {tuple(x.shape)}")
    hs = x.shape[-1]
    if hs % 2:
        raise ValueError(f"x: the last axis (head size) must be even for RoPE, got hs={hs}")
    pos = torch.as_tensor(pos, device=x.device)
    if pos.dtype.is_floating_point or pos.dtype == torch.bool:
        raise ValueError(f"pos must hold integer positions, got dtype {pos.dtype}")
    if pos.dim() == 0 or pos.shape[-1] != x.shape[-2]:
        raise ValueError(f"pos: last axis must have length T={x.shape[-2]}, got shape {tuple(pos.shape)}")
    ang = rope_angles(pos, hs, dtype=x.dtype if x.is_floating_point() else torch.float32)
    cos, sin = ang.cos(), ang.sin()  # (..., T, hs/2)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., T, hs/2) each
    out_even = x_even * cos - x_odd * sin
    out_odd = x_even * sin + x_odd * cos
    # Interleave back: (..., T, hs/2, 2) -> (..., T, hs)
    return torch.stack((out_even, out_odd), dim=-1).flatten(-2)


def apply_rope_np(x: np.ndarray, pos) -> np.ndarray:
    """NumPy twin of :func:`apply_rope` (float64)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., T, hs), got {x.shape}")
    hs = x.shape[-1]
    if hs % 2:
        raise ValueError(f"x: the last axis (head size) must be even for RoPE, got hs={hs}")
    pos = np.asarray(pos)
    if not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"pos must hold integer positions, got dtype {pos.dtype}")
    if pos.ndim == 0 or pos.shape[-1] != x.shape[-2]:
        raise ValueError(f"pos: last axis must have length T={x.shape[-2]}, got shape {pos.shape}")
    theta = _BASE ** (-2.0 * np.arange(hs // 2) / hs)  # (hs/2,)
    ang = pos.astype(np.float64)[..., None] * theta  # (..., T, hs/2)
    cos, sin = np.cos(ang), np.sin(ang)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(np.broadcast_shapes(x.shape, ang.shape[:-1] + (hs,)), dtype=np.float64)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out
