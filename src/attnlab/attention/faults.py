"""The four injected bugs of §1.11.7, kept apart from the correct attention.

The correct model (:func:`attnlab.model.attention`) never mentions a bug. A model built with
``Config.bug`` set has this module's :func:`install_fault` called on it at construction: every
attention layer then computes :func:`faulty_attention`, the same explicit steps with exactly one
of them wrong, passing its tensors through the same taps (so recording, attention maps and the
debugger see what the faulty model computes).

The bugs, each one step of softmax(q·kᵀ·scale + mask) v:
* ``mask_zero`` (§1.11.1): the mask multiplies the scores by 0 instead of adding -inf, so a
  future position still gets e^0 of weight.
* ``scale_after_softmax`` (§1.11.2): the scale multiplies the weights instead of the scores, so
  the rows sum to ``scale`` instead of 1.
* ``no_max_subtraction`` (§1.11.3): the softmax without the row maximum subtracted; the same
  function in exact arithmetic, exp overflows for logits above ~88.7 in float32.
* ``divide_by_d_k`` (§1.11.4): the scores divided by d_k instead of sqrt(d_k).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor

from ..config import BUGS


def _unseen(x: Tensor) -> Tensor:
    return x


def _at_least_fp32(x: Tensor) -> Tensor:
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _may_look(Tq: int, Tk: int, device) -> Tensor:
    """(Tq, Tk) bool, True = may look; query i sits at absolute position Tk - Tq + i."""
    return torch.ones(Tq, Tk, dtype=torch.bool, device=device).tril(diagonal=Tk - Tq)


def scores_with(q: Tensor, k: Tensor, scale: float, bug: str | None) -> Tensor:
    """q·kᵀ times the scale (d_k instead of sqrt(d_k) with ``divide_by_d_k``, no scale at all with
    ``scale_after_softmax``), in float32 or wider."""
    scores = q @ k.transpose(-2, -1)  # (B, nh, Tq, Tk)
    if bug == "divide_by_d_k":
        scores = scores / q.shape[-1]
    elif bug != "scale_after_softmax":
        scores = scores * scale
    return _at_least_fp32(scores)


def mask_with(scores: Tensor, bug: str | None) -> Tensor:
    """The causal mask: -inf above the diagonal, or a multiplication by 0 with ``mask_zero``."""
    may_look = _may_look(scores.shape[-2], scores.shape[-1], scores.device)
    if bug == "mask_zero":
        return scores * may_look
    return scores + torch.zeros_like(may_look, dtype=scores.dtype).masked_fill(~may_look, float("-inf"))


def exponentiate(masked: Tensor, bug: str | None = None) -> Tensor:
    """The softmax's numerator, shifted by the row maximum unless ``no_max_subtraction``."""
    if bug == "no_max_subtraction":
        return masked.exp()
    return (masked - masked.amax(-1, keepdim=True)).exp()


def normalize(masked: Tensor, scale: float, bug: str | None = None) -> Tensor:
    """Attention weights from masked scores: PyTorch's softmax, or the bug's own."""
    if bug == "no_max_subtraction":
        e = exponentiate(masked, bug)
        p = e / e.sum(-1, keepdim=True)
    else:
        p = masked.softmax(-1)
    if bug == "scale_after_softmax":
        p = p * scale  # rows no longer sum to 1
    return p


def faulty_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: float,
    bug: str,
    causal: bool = True,
    *,
    tap_scores: Callable[[Tensor], Tensor] = _unseen,
    tap_weights: Callable[[Tensor], Tensor] = _unseen,
) -> Tensor:
    """:func:`attnlab.model.attention` with the step ``bug`` names done wrong."""
    scores = tap_scores(scores_with(q, k, scale, bug))  # (B, nh, Tq, Tk)
    masked = mask_with(scores, bug) if causal else scores  # no mask, no mask bug
    p = tap_weights(normalize(masked, scale, bug))
    return p.to(v.dtype) @ v  # (B, nh, Tq, hs)


def attention_stages(q: Tensor, k: Tensor, scale: float, bug: str | None = None) -> list[Tensor]:
    """The four stages of §1.13.3 (scores, masked, exp, weights) as a model with ``bug`` (None: the
    correct one) makes them, in float32; the debugger replays them one by one."""
    scores = scores_with(q.float(), k.float(), scale, bug)
    masked = mask_with(scores, bug)
    e = exponentiate(masked, bug)
    p = e / e.sum(-1, keepdim=True)
    if bug == "scale_after_softmax":
        p = p * scale
    return [scores, masked, e, p]


def _faulty_attend(attn, bug: str, q: Tensor, k: Tensor, v: Tensor, causal: bool = True) -> Tensor:
    q, k, v = attn.tap_q(q), attn.tap_k(k), attn.tap_v(v)
    return faulty_attention(q, k, v, attn.scale, bug, causal, tap_scores=attn.tap_scores, tap_weights=attn.tap_pattern)


def install_fault(model, bug: str) -> None:
    """Make every attention layer of ``model`` (a :class:`attnlab.model.TinyGPT`) compute
    :func:`faulty_attention` with ``bug``, always on the explicit path."""
    if bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; known: {', '.join(BUGS)}")
    for block in model.blocks:
        block.attn.attend = partial(_faulty_attend, block.attn, bug)
