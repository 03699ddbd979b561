"""Online softmax and blocked attention: exact attention without the n x n matrix (§1.8.10).

The softmax of a row needs its maximum and its sum, which seem to require the
whole row at once. The online form keeps two running numbers instead:

    m  - the largest logit seen so far
    l  - sum of exp(z - m) over the logits seen so far

and when a new block raises the maximum from m_old to m_new, everything accumulated
so far is rescaled by exp(m_old - m_new) (equation 1.23). Attention adds a third
running quantity, ``acc`` = sum of exp(s - m) v, rescaled the same way; at the end
out = acc / l. The result is exact, not an approximation: only the order of the
floating-point additions differs from the full softmax.

``blocked_attention`` holds at most an (n_q, block_size) slice of the scores at a
time. It is a reference for the algorithm, not a fast kernel: the loop runs in Python.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = [
    "OnlineStep",
    "online_softmax",
    "blocked_attention",
    "blocked_attention_np",
    "blocked_attention_torch",
]


class OnlineStep(NamedTuple):
    """State of the online softmax after one block: the block, running max m, running sum l."""

    block: tuple
    m: float
    l: float


def _check_block_size(block_size) -> int:
    if isinstance(block_size, bool) or int(block_size) != block_size or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got block_size={block_size!r}")
    return int(block_size)


def online_softmax(z, block_size: int, return_trace: bool = False):
    """Softmax of the 1-D array ``z`` computed block by block with a running (m, l).

    With ``return_trace=True`` also returns a list of :class:`OnlineStep`, one per
    block - for z = [1, 3, 2] and block_size = 2 that is the chapter's hand
    computation: (m, l) = (3, 1.135) after [1, 3], then (3, 1.503) after [2].
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 1 or z.size == 0:
        raise ValueError(f"z must be a non-empty 1-D array, got shape {z.shape}")
    bs = _check_block_size(block_size)

    m, l = -np.inf, 0.0
    trace = []
    for start in range(0, z.size, bs):
        blk = z[start : start + bs]
        m_new = max(m, float(blk.max()))
        # exp(m_old - m_new) re-expresses the old sum relative to the new maximum;
        # it is 1 when the maximum did not move and 0 for the very first block.
        l = l * np.exp(m - m_new) + float(np.exp(blk - m_new).sum())
        m = m_new
        trace.append(OnlineStep(tuple(blk.tolist()), float(m), float(l)))
    p = np.exp(z - m) / l  # one more pass over z; attention fuses this into acc
    return (p, trace) if return_trace else p


def _check_blocked_args(Q, K, V, mask, causal, shape_of):
    if len(shape_of(Q)) < 2 or len(shape_of(K)) < 2 or len(shape_of(V)) < 2:
        raise ValueError("Q, K and V must have shape (..., n, d)")
    if shape_of(Q)[-1] != shape_of(K)[-1]:
        raise ValueError(f"Q and K must share the last axis d_k: Q is {tuple(shape_of(Q))}, K is {tuple(shape_of(K))}")
    if shape_of(K)[-2] != shape_of(V)[-2]:
        raise ValueError(
            f"K and V must have the same number of keys n_k: K is {tuple(shape_of(K))}, V is {tuple(shape_of(V))}"
        )
    if mask is not None and causal:
        raise ValueError("pass either mask or causal=True, not both")


def blocked_attention_np(
    Q,
    K,
    V,
    mask=None,
    scaled: bool = True,
    block_size: int = 64,
    *,
    causal: bool = False,
    scale: float | None = None,
    return_lse: bool = False,
):
    """Exact attention output, keys processed ``block_size`` at a time (NumPy).

    Q: (..., n_q, d_k), K: (..., n_k, d_k), V: (..., n_k, d_v); mask bool broadcastable to
    (..., n_q, n_k) with True = may look, or ``causal=True`` to build the causal mask block
    by block (then no (n_q, n_k) array exists at all).
    Returns out (..., n_q, d_v), and the log-sum-exp of each score row (..., n_q) when
    ``return_lse`` - what FlashAttention saves for the backward pass.
    """
    Q, K, V = (np.asarray(a) for a in (Q, K, V))
    _check_blocked_args(Q, K, V, mask, causal, np.shape)
    bs = _check_block_size(block_size)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    c = scale if scale is not None else (1.0 / np.sqrt(Q.shape[-1]) if scaled else 1.0)
    dtype = np.result_type(Q, K, V, np.float32)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise ValueError(f"mask must be boolean (True = may look), got dtype {mask.dtype}")
        if mask.shape[-1] not in (1, n_k) or (mask.ndim >= 2 and mask.shape[-2] not in (1, n_q)):
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to (..., {n_q}, {n_k})")

    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(batch + (n_q, 1), -np.inf, dtype=dtype)  # running row max
    l = np.zeros(batch + (n_q, 1), dtype=dtype)  # running sum of exp(s - m)
    acc = np.zeros(batch + (n_q, V.shape[-1]), dtype=dtype)  # running sum of exp(s - m) v
    q_idx = np.arange(n_q)[:, None]

    for start in range(0, n_k, bs):
        stop = min(start + bs, n_k)
        s = (Q @ np.swapaxes(K[..., start:stop, :], -1, -2)) * c  # (..., n_q, b)
        if causal:
            s = np.where(np.arange(start, stop)[None, :] <= q_idx, s, -np.inf)
        elif mask is not None:
            blk_mask = mask if mask.shape[-1] == 1 else mask[..., start:stop]
            s = np.where(blk_mask, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        # A row with nothing visible yet has m_new = -inf; subtracting 0 instead keeps
        # exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
        m_safe = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - m_safe)  # (..., n_q, 1) rescales the old l and acc
        p = np.exp(s - m_safe)  # (..., n_q, b), every entry <= 1
        l = l * alpha + p.sum(axis=-1, keepdims=True)
        acc = acc * alpha + p @ V[..., start:stop, :]
        m = m_new

    out = acc / l  # a row that never saw a key is 0/0 = NaN, as in full attention
    if return_lse:
        return out, (m + np.log(l))[..., 0]
    return out


def blocked_attention_torch(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    mask: torch.Tensor | None = None,
    scaled: bool = True,
    block_size: int = 64,
    *,
    causal: bool = False,
    scale: float | None = None,
    return_lse: bool = False,
):
    """Torch twin of :func:`blocked_attention_np` (same arguments, tensors in and out)."""
    _check_blocked_args(Q, K, V, mask, causal, lambda t: tuple(t.shape))
    bs = _check_block_size(block_size)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    c = scale if scale is not None else (Q.shape[-1] ** -0.5 if scaled else 1.0)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = may look), got dtype {mask.dtype}")
        if mask.shape[-1] not in (1, n_k) or (mask.dim() >= 2 and mask.shape[-2] not in (1, n_q)):
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to (..., {n_q}, {n_k})")

    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    opts = dict(dtype=torch.promote_types(torch.promote_types(Q.dtype, K.dtype), V.dtype), device=Q.device)
    m = torch.full((*batch, n_q, 1), float("-inf"), **opts)
    l = torch.zeros((*batch, n_q, 1), **opts)
    acc = torch.zeros((*batch, n_q, V.shape[-1]), **opts)
    q_idx = torch.arange(n_q, device=Q.device)[:, None]
    neg_inf = torch.tensor(float("-inf"), **opts)

    for start in range(0, n_k, bs):
        stop = min(start + bs, n_k)
        s = (Q @ K[..., start:stop, :].transpose(-1, -2)) * c  # (..., n_q, b)
        if causal:
            s = torch.where(torch.arange(start, stop, device=Q.device)[None, :] <= q_idx, s, neg_inf)
        elif mask is not None:
            blk_mask = mask if mask.shape[-1] == 1 else mask[..., start:stop]
            s = torch.where(blk_mask, s, neg_inf)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        alpha = torch.exp(m - m_safe)
        p = torch.exp(s - m_safe)  # (..., n_q, b)
        l = l * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ V[..., start:stop, :]
        m = m_new

    out = acc / l
    if return_lse:
        return out, (m + torch.log(l))[..., 0]
    return out


def blocked_attention(Q, K, V, mask=None, scaled: bool = True, block_size: int = 64, **kwargs):
    """Dispatch to :func:`blocked_attention_torch` for tensors, :func:`blocked_attention_np` otherwise."""
    if isinstance(Q, torch.Tensor):
        return blocked_attention_torch(Q, K, V, mask, scaled, block_size, **kwargs)
    return blocked_attention_np(Q, K, V, mask, scaled, block_size, **kwargs)
