"""Masks for batches: causal + key padding, packed sequences, sliding windows (§1.15, §1.13.3).

All masks are boolean with ``True`` = "may look", and shaped so they broadcast
against attention scores of shape (B, nh, T, T).

The one rule every helper here keeps: **no row is ever fully masked.** A query
row with no visible key has an all ``-inf`` score row and its softmax is 0/0 = NaN,
which then poisons every gradient (§1.13.3, checkpoint ⑮). The chapter's fix ① is
used: the diagonal is always visible, so a padded query sees at least itself.
Real queries are unaffected (their diagonal is a real token anyway); padded queries
compute a meaningless but finite output, and they are kept out of the loss with
``ignore_index`` (see :func:`padded_targets` and :func:`masked_lm_loss`).
Padding is handled on the *key* side of the mask and on the *query* side of the
loss - the two are not the same thing (§1.22.14).

Torch functions carry the plain names and take ``device=``; NumPy twins end in ``_np``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "build_mask",
    "build_mask_np",
    "sliding_window_mask",
    "sliding_window_mask_np",
    "Packed",
    "pack_sequences",
    "pack_sequences_np",
    "padded_targets",
    "masked_lm_loss",
    "IGNORE_INDEX",
]

IGNORE_INDEX = -100  # the default ignore_index of torch.nn.functional.cross_entropy


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")
    return int(value)


def _check_lengths(lengths, seq_len: int) -> np.ndarray:
    lengths = np.asarray(lengths.cpu() if isinstance(lengths, torch.Tensor) else lengths)
    if lengths.ndim != 1 or lengths.size == 0:
        raise ValueError(f"lengths must be a non-empty 1-D sequence of ints, got shape {lengths.shape}")
    if not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"lengths must hold integers, got dtype {lengths.dtype}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    if (lengths > seq_len).any():
        raise ValueError(f"lengths must not exceed seq_len={seq_len}, got max(lengths)={int(lengths.max())}")
    return lengths.astype(np.int64)


def build_mask_np(seq_len: int, lengths) -> np.ndarray:
    """Causal AND key-padding mask, shape (B, 1, L, L), for sequences padded at the end.

    lengths: the true length of each of the B sequences (0 <= length <= seq_len).
    Query i may look at key j when j <= i and key j is a real token - and always at
    itself, so padded query rows are never empty.
    """
    L = _check_positive_int("seq_len", seq_len)
    lengths = _check_lengths(lengths, L)
    idx = np.arange(L)
    causal = idx[None, :] <= idx[:, None]  # (L, L): j <= i
    key_real = idx[None, :] < lengths[:, None]  # (B, L)
    mask = causal[None, None] & key_real[:, None, None, :]  # (B, 1, L, L)
    mask |= np.eye(L, dtype=bool)  # fix ①: every row keeps its diagonal
    return mask


def build_mask(seq_len: int, lengths, device=None) -> torch.Tensor:
    """Torch version of :func:`build_mask_np`: bool tensor (B, 1, L, L) on ``device``."""
    return torch.from_numpy(build_mask_np(seq_len, lengths)).to(device)


def sliding_window_mask_np(n: int, w: int) -> np.ndarray:
    """Causal sliding window, shape (n, n): query i sees keys i-w+1 .. i (w keys at most)."""
    n = _check_positive_int("n", n)
    if isinstance(w, bool) or int(w) != w or w <= 0:
        raise ValueError(f"window w must be a positive integer, got w={w!r}")
    idx = np.arange(n)
    offset = idx[:, None] - idx[None, :]  # (n, n): i - j
    return (offset >= 0) & (offset < w)


def sliding_window_mask(n: int, w: int, device=None) -> torch.Tensor:
    """Torch version of :func:`sliding_window_mask_np` on ``device``."""
    return torch.from_numpy(sliding_window_mask_np(n, w)).to(device)


@dataclass(frozen=True)
class Packed:
    """Sequences packed end to end into rows of a fixed window.

    ids:      (R, W) token ids; unused tail slots hold ``pad_id``.
    mask:     (R, 1, W, W) bool, block-diagonal causal: a token sees earlier tokens of
              its own sequence only. Padding slots see only themselves.
    pos:      (R, W) position ids, restarting at 0 at the start of each sequence.
    segments: (R, W) which input sequence each slot holds, -1 for padding.

    Unpacks as ``ids, mask, pos = pack_sequences(...)``; ``segments`` is an attribute.
    Arrays are NumPy or torch depending on which function built them.
    """

    ids: object
    mask: object
    pos: object
    segments: object

    def __iter__(self) -> Iterator:
        return iter((self.ids, self.mask, self.pos))

    def targets(self, ignore_index: int = IGNORE_INDEX):
        """Next-token targets that never cross a sequence boundary.

        The last token of each sequence and every padding slot get ``ignore_index``.
        """
        is_torch = isinstance(self.ids, torch.Tensor)
        ids = self.ids.cpu().numpy() if is_torch else np.asarray(self.ids)
        seg = self.segments.cpu().numpy() if is_torch else np.asarray(self.segments)
        tgt = np.full_like(ids, ignore_index)
        same = (seg[:, 1:] == seg[:, :-1]) & (seg[:, :-1] >= 0)  # (R, W-1)
        tgt[:, :-1] = np.where(same, ids[:, 1:], ignore_index)
        return torch.from_numpy(tgt).to(self.ids.device) if is_torch else tgt


def pack_sequences_np(seqs: Sequence[Sequence[int]], window: int, pad_id: int = 0) -> Packed:
    """Greedy, order-preserving packing of ``seqs`` into rows of ``window`` slots.

    A sequence goes into the current row if it fits and starts a new row otherwise;
    sequences are never split. Raises ValueError if one is longer than ``window``.
    """
    _check_positive_int("window", window)
    seqs = [list(s) for s in seqs]
    if not seqs:
        raise ValueError("seqs must contain at least one sequence")
    for k, s in enumerate(seqs):
        if len(s) == 0:
            raise ValueError(f"seqs[{k}] is empty")
        if len(s) > window:
            raise ValueError(f"seqs[{k}] has length {len(s)} > window={window}; it cannot be packed")

    rows: list[list[int]] = [[]]  # indices of the sequences in each row
    used = 0
    for k, s in enumerate(seqs):
        if used + len(s) > window:
            rows.append([])
            used = 0
        rows[-1].append(k)
        used += len(s)

    R, W = len(rows), int(window)
    ids = np.full((R, W), pad_id, dtype=np.int64)
    pos = np.zeros((R, W), dtype=np.int64)
    seg = np.full((R, W), -1, dtype=np.int64)
    for r, members in enumerate(rows):
        start = 0
        for k in members:
            n = len(seqs[k])
            ids[r, start : start + n] = seqs[k]
            pos[r, start : start + n] = np.arange(n)  # positions restart per sequence
            seg[r, start : start + n] = k
            start += n

    idx = np.arange(W)
    causal = idx[None, :] <= idx[:, None]  # (W, W)
    same_seq = (seg[:, :, None] == seg[:, None, :]) & (seg[:, None, :] >= 0)  # (R, W, W)
    mask = (causal[None] & same_seq) | np.eye(W, dtype=bool)  # diagonal keeps pad rows non-empty
    return Packed(ids=ids, mask=mask[:, None], pos=pos, segments=seg)  # mask (R, 1, W, W)


def pack_sequences(seqs: Sequence[Sequence[int]], window: int, pad_id: int = 0, device=None) -> Packed:
    """Torch version of :func:`pack_sequences_np`; every array is a tensor on ``device``."""
    p = pack_sequences_np(seqs, window, pad_id)
    return Packed(*(torch.from_numpy(a).to(device) for a in (p.ids, p.mask, p.pos, p.segments)))


def padded_targets(targets: torch.Tensor, lengths, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Copy of ``targets`` (B, T) with every padded query position set to ``ignore_index``.

    Position t of sequence b is real when t < lengths[b].
    """
    if targets.dim() != 2:
        raise ValueError(f"targets must have shape (B, T), got {tuple(targets.shape)}")
    B, T = targets.shape
    lengths_np = _check_lengths(lengths, T)
    if len(lengths_np) != B:
        raise ValueError(f"lengths has {len(lengths_np)} entries but targets has batch size B={B}")
    lengths_t = torch.as_tensor(lengths_np, device=targets.device)
    real = torch.arange(T, device=targets.device)[None, :] < lengths_t[:, None]  # (B, T)
    return targets.masked_fill(~real, ignore_index)


def masked_lm_loss(
    logits: torch.Tensor, targets: torch.Tensor, lengths, ignore_index: int = IGNORE_INDEX
) -> torch.Tensor:
    """Mean cross-entropy over real (non-padded) query positions only.

    logits (B, T, V), targets (B, T). Padded queries are excluded through
    ``ignore_index``, so their outputs - finite but meaningless - get no gradient.
    """
    if logits.dim() != 3 or logits.shape[:2] != targets.shape:
        raise ValueError(
            f"logits must be (B, T, V) and targets (B, T); got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    tgt = padded_targets(targets, lengths, ignore_index)
    B, T, V = logits.shape
    return F.cross_entropy(logits.reshape(B * T, V), tgt.reshape(B * T), ignore_index=ignore_index)
