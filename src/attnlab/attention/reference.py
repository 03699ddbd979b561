"""NumPy reference for scaled dot-product attention, forward and backward (§1.5-1.8, §1.14, §1.16).

This is the slow, readable version that everything else in attnlab is checked
against: the model's fast path against ``torch.nn.functional.scaled_dot_product_attention``,
and SDPA against this file in the tests. Names follow the chapter. The model's own
attention, the same formula in torch on the path that trains, is ``attnlab.model.attention``.

Conventions
* A mask is boolean and ``True`` means "may look". Masked scores become ``-inf``
  before the softmax, so a masked weight is exactly 0.0, not merely small.
* Every function accepts any number of leading (batch, head) axes: Q is
  (..., n_q, d_k), K is (..., n_k, d_k), V is (..., n_k, d_v), and a mask only has
  to broadcast to (..., n_q, n_k).
* A row in which *every* key is masked has no softmax: it comes out NaN, as the
  chapter warns (§1.13.3). The helpers in ``attnlab.attention.masks`` never build
  such a row; this file does not paper over it, because hiding it would also hide
  a broken mask.

Deliberately left out: dropout, attention bias, KV caches, anything with
trainable state.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "softmax",
    "attention",
    "causal_mask",
    "multi_head_attention",
    "attention_backward",
]


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Subtracting the row maximum is a correctness requirement, not an optimisation:
    exp overflows float32 above ~88.7 (float16 above ~11.1), and by shift
    invariance (equation 1.9) the subtraction leaves the result unchanged.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    x_max = x.max(axis=axis, keepdims=True)
    e = np.exp(x - x_max)
    return e / e.sum(axis=axis, keepdims=True)


def _as_float(name: str, a) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 2:
        raise ValueError(f"{name} must have shape (..., n, d), got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    return a


def _check_qkv(Q, K, V):
    Q, K, V = _as_float("Q", Q), _as_float("K", K), _as_float("V", V)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share the last axis d_k: Q is {Q.shape}, K is {K.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same number of keys n_k: K is {K.shape}, V is {V.shape}")
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"leading (batch/head) axes of Q {Q.shape}, K {K.shape}, V {V.shape} do not broadcast"
        ) from None
    return Q, K, V


def _check_mask(mask, n_q: int, n_k: int, batch_shape: tuple) -> np.ndarray | None:
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may look), got dtype {mask.dtype}")
    try:
        np.broadcast_shapes(mask.shape, batch_shape + (n_q, n_k))
    except ValueError:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to (..., n_q, n_k) = {batch_shape + (n_q, n_k)}"
        ) from None
    return mask


def _scores(Q, K, scaled: bool, scale: float | None) -> np.ndarray:
    """S = Q K^T * scale, shape (..., n_q, n_k)."""
    s = Q @ np.swapaxes(K, -1, -2)
    if scale is not None:
        return s * scale
    if scaled:
        # Scale the logits, before the softmax (§1.11.2: scaling afterwards breaks the row sum).
        return s / np.sqrt(Q.shape[-1])
    return s


def attention(Q, K, V, mask=None, scaled: bool = True, *, scale: float | None = None):
    """softmax(Q K^T / sqrt(d_k)) V, returning ``(out, weights)``.

    Q: (..., n_q, d_k)   K: (..., n_k, d_k)   V: (..., n_k, d_v)
    mask: bool, broadcastable to (..., n_q, n_k); True = may look.
    scaled: divide the scores by sqrt(d_k). ``scale`` (keyword only) overrides the
        factor outright, like the ``scale=`` argument of PyTorch's SDPA.
    Returns out (..., n_q, d_v) and weights (..., n_q, n_k); each weight row sums to 1.
    """
    Q, K, V = _check_qkv(Q, K, V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    mask = _check_mask(mask, Q.shape[-2], K.shape[-2], batch)

    scores = _scores(Q, K, scaled, scale)  # (..., n_q, n_k)
    if mask is not None:
        # -inf, not 0: a score of 0 still earns e^0 = 1 of weight (§1.11.1).
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def causal_mask(n: int) -> np.ndarray:
    """(n, n) boolean lower triangle: position i may look at j <= i."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got n={n!r}")
    return np.tril(np.ones((n, n), dtype=bool))


def multi_head_attention(X, W_q, W_k, W_v, W_o, n_head: int, mask=None):
    """Multi-head self-attention with all heads projected by one matrix each.

    X: (..., T, C) with C = d_model; W_q, W_k, W_v, W_o: (C, C).
    mask: bool, broadcastable to (..., nh, T, T) - a plain (T, T) causal mask works.
    Returns out (..., T, C) and the per-head weights (..., nh, T, T).

    Each head scales by sqrt(hs), the *head* size, not sqrt(C) (§1.8.3).
    """
    X = _as_float("X", X)
    C = X.shape[-1]
    if int(n_head) != n_head or n_head < 1:
        raise ValueError(f"n_head must be a positive integer, got n_head={n_head!r}")
    if C % n_head:
        raise ValueError(f"d_model={C} (last axis of X) is not divisible by n_head={n_head}")
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
        if np.shape(W) != (C, C):
            raise ValueError(f"{name} must have shape (d_model, d_model) = {(C, C)}, got {np.shape(W)}")
    hs = C // n_head
    T = X.shape[-2]
    lead = X.shape[:-2]

    def split_heads(W):
        y = X @ np.asarray(W)  # (..., T, C)
        y = y.reshape(lead + (T, n_head, hs))  # (..., T, nh, hs)
        return np.swapaxes(y, -3, -2)  # (..., nh, T, hs)

    q, k, v = split_heads(W_q), split_heads(W_k), split_heads(W_v)
    # The head axis must sit in front of T before attention: with (T, nh, hs) the
    # matmul inside attention would mix heads instead of positions, silently.
    out, weights = attention(q, k, v, mask=mask)  # (..., nh, T, hs), (..., nh, T, T)
    out = np.swapaxes(out, -3, -2).reshape(lead + (T, C))  # (..., T, nh, hs) -> (..., T, C)
    return out @ np.asarray(W_o), weights


def attention_backward(Q, K, V, mask, dO, scaled: bool = True, *, scale: float | None = None):
    """Hand-written gradient of ``attention(Q, K, V, mask, scaled)[0]`` (§1.16).

    Given dO = dL/dout, returns (dQ, dK, dV) with the shapes of Q, K, V
    (broadcast leading axes are summed back, as autograd does).

    Chain (equation 1.49): S = Q K^T * c -> P = softmax(S) -> O = P V, c = 1/sqrt(d_k).
      O = P V:          dV = P^T dO,  dP = dO V^T                  (1.50)
      P = softmax(S):   dS = P * (dP - rowsum(dP * P))             (1.51)
      masked (i, j):    dS_ij = 0                                  (1.54)
      S = Q K^T c:      dQ = c dS K,  dK = c dS^T Q                (1.53)
    """
    Q, K, V = _check_qkv(Q, K, V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    mask = _check_mask(mask, Q.shape[-2], K.shape[-2], batch)
    dO = np.asarray(dO, dtype=np.result_type(Q, K, V))
    expected = batch + (Q.shape[-2], V.shape[-1])
    if dO.shape != expected:
        raise ValueError(f"dO must have the shape of the output {expected}, got {dO.shape}")

    if scale is not None:
        c = scale
    else:
        c = 1.0 / np.sqrt(Q.shape[-1]) if scaled else 1.0

    # Redo the forward pass to get P.
    S = (Q @ np.swapaxes(K, -1, -2)) * c  # (..., n_q, n_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    P = softmax(S, axis=-1)

    dV = np.swapaxes(P, -1, -2) @ dO  # (..., n_k, d_v)
    dP = dO @ np.swapaxes(V, -1, -2)  # (..., n_q, n_k)
    # Remove the "all weights up together" component the row-sum constraint forbids.
    dS = P * (dP - (dP * P).sum(axis=-1, keepdims=True))
    if mask is not None:
        # P is already exactly 0 there; the explicit zero also guards rows where a
        # masked dP is inf/NaN (0 * inf would be NaN).
        dS = np.where(mask, dS, 0.0)
    dQ = (dS @ K) * c  # (..., n_q, d_k)
    dK = (np.swapaxes(dS, -1, -2) @ Q) * c  # (..., n_k, d_k)
    return _unbroadcast(dQ, Q.shape), _unbroadcast(dK, K.shape), _unbroadcast(dV, V.shape)


def _unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum a gradient over the axes that broadcasting added or stretched."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g
