"""Attention diagnostics as pure functions (§1.19.3, §1.8.5, exercise 3).

Conventions: ``p`` is an attention pattern of shape (..., T, T) whose rows sum
to 1 over the visible keys; under a causal mask row i sees keys 0..i, so it has
``i + 1`` visible positions. Rows with a single visible position carry no
information about spread (their entropy is 0 by necessity and their Jacobian is
exactly 0), so every row average here leaves them out.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

# Weights at or below _TINY count as 0 in the entropy, as in the chapter's own
# clamp at 1e-12 (§1.19.3). The Jacobian's sums of squares and cubes leave out
# weights whose square (_SQ_MIN) or cube (_CU_MIN) would fall into float32's
# subnormal range, where CPU arithmetic is ~100x slower: a collapsed head has
# many weights around 1e-20. What they would add is below 1e-37 per entry.
_TINY = 1e-12
_SQ_MIN = 1.1e-19  # x² >= 1.2e-38, float32's smallest normal number
_CU_MIN = 2.3e-13  # x³ >= 1.2e-38
# A weight above _DOMINANT, a hair above 1/2, is its row's dominant weight: a row summing to 1 has
# at most one. (It is the largest float32 whose product with 1.999 stays below 1: the recorded
# numbers have always split there.)
_DOMINANT = 0.5002501010894775


def weight_entropy(p: Tensor, n_valid: Tensor | int) -> Tensor:
    """Entropy of each row divided by log(n_valid): 1 = uniform, 0 = one-hot.

    ``p`` (..., T); ``n_valid`` broadcastable to p.shape[:-1]. Rows with
    n_valid <= 1 return NaN (undefined), callers leave them out. Weights
    <= 1e-12 contribute 0 (at most T * 3e-11 nats); NaN weights stay NaN.
    """
    h = _row_entropy(p)
    n = torch.as_tensor(n_valid, dtype=p.dtype, device=p.device)
    return torch.where(n > 1, h / torch.log(n.clamp_min(2)), torch.full_like(h, float("nan")))


def _row_entropy(p: Tensor) -> Tensor:
    """-Σ p log p over the last axis, in nats."""
    safe = F.threshold(p, _TINY, 1.0)  # log(1) = 0 for the tiny ones
    return -safe.log_().mul_(p).sum(-1)  # in place: one (..., T) buffer, not three


def jacobian_frobenius(p: Tensor) -> Tensor:
    """Frobenius norm of the softmax Jacobian J = diag(p) - p pᵀ for each row.

    ||J||² = Σ_i p_i²(1 - p_i)² + Σ_i p_i² Σ_{j≠i} p_j² = Σ_i p_i² (1 - 2p_i + Σ_j p_j²),
    O(T) per row, never building the T×T Jacobian. Near saturation (one p_m ≈ 1)
    the naive form Σp² - 2Σp³ + (Σp²)² cancels catastrophically, exactly where
    the case study needs the number (||J|| ~ 1e-4). So a dominant entry
    (p_m > 1/2, unique when it exists) is split off: with o the row without it,
    r1 = Σo (= 1 - p_m), r2 = Σo², r3 = Σo³,
        ||J||² = (1 + p_m² + r2) r2 - 2 r3 + p_m² (r1² + r2),
    where every term is summed from small numbers instead of subtracted from 1.
    A row without an entry above 1/2 takes p_m = 0, which is the naive form,
    harmless there. In float32 the result keeps about 1e-3 relative accuracy
    down to ||J|| ~ 1e-18 (tested against the explicit Jacobian in float64).
    """
    # two (..., T) buffers, reused in place (this runs at every recorded step)
    dominant = F.threshold(p, _DOMINANT, 0.0)  # the dominant weight where it sits, else 0
    others = torch.sub(p, dominant, out=dominant)  # the row without its dominant weight
    pm = F.threshold(p.amax(-1), _DOMINANT, 0.0)  # the dominant weight, or 0
    r1 = others.sum(-1)
    o2 = F.threshold(others, _SQ_MIN, 0.0).square_()
    r2 = o2.sum(-1)
    r3 = F.threshold_(others, _CU_MIN, 0.0).mul_(o2).sum(-1)
    pm2 = pm * pm
    return ((1 + pm2 + r2) * r2 - 2 * r3 + pm2 * (r1 * r1 + r2)).clamp_min(0).sqrt()


def jacobian_frobenius_explicit(p: Tensor) -> Tensor:
    """Reference: materialise diag(p) - p pᵀ (T×T per row). For tests only."""
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)
    return J.flatten(-2).norm(dim=-1)


def causal_visible(T: int, device=None) -> Tensor:
    """Number of visible keys of each causal row: (T,) = 1, 2, ..., T."""
    return torch.arange(1, T + 1, device=device)


def masked_std(x: Tensor, mask: Tensor) -> Tensor:
    """Standard deviation of the entries of ``x`` where ``mask`` (broadcastable) is True.

    Written with weights rather than boolean indexing, which would copy the
    selected entries: this runs at every training step. Two passes (mean, then
    squared deviations), so a large mean does not cancel the spread away.
    """
    return _masked_moments(x, mask.to(x.dtype))[0]


def _masked_moments(x: Tensor, w: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(std, min, max) of the entries of ``x`` where the 0/1 weight ``w`` is 1. The extremes also
    see a 0 for every entry left out, which never changes the largest |x|."""
    n = w.sum() * (x.numel() / w.numel())
    xw = x * w
    lo, hi = torch.aminmax(xw)
    mean = xw.sum() / n
    dev = xw.sub_(mean * w)  # in place: the deviations of the kept entries, 0 elsewhere
    return (dev.mul_(dev).sum() / (n - 1)).sqrt(), lo, hi


def _std(x: Tensor) -> Tensor:
    """x.std() over all entries, in two float32 passes (mean, then squared deviations): within
    1e-6 of torch's (tests), whose all-entries reduction runs a scalar loop in float64, several
    times slower on the q and k of every recorded layer."""
    dev = x - x.mean()
    return (dev.mul_(dev).sum() / (x.numel() - 1)).sqrt()


DIAG_KEYS = ("weight_entropy", "jacobian_fro", "logit_std", "logit_absmax", "q_std", "k_std")


def pattern_summary(scores: Tensor, p: Tensor, q: Tensor, k: Tensor) -> dict[str, Tensor]:
    """The per-layer numbers recorded during training, as 0-d tensors.

    scores: (B, nh, T, T) logits as fed to the softmax (after scaling, before
    masking); p: (B, nh, T, T) causal attention pattern; q, k: (B, nh, T, hs).
    Averages run over batch, heads and rows with more than one visible key
    (rows 1..T-1); logit statistics over causal entries only.

    This runs for every layer at every recorded step, so it is written for few
    passes over the (B, nh, T, T) tensors: whole contiguous rows (row 0 is
    dropped from the per-row results, not sliced off the input), the causal
    entries selected by a 0/1 weight rather than by indexing.
    """
    T = p.shape[-1]
    log_n = causal_visible(T, p.device).to(p.dtype).log()  # row 0: log 1 = 0, dropped below
    ent = _row_entropy(p)[..., 1:] / log_n[1:]
    jac = jacobian_frobenius(p)[..., 1:]
    causal = torch.ones(T, T, dtype=scores.dtype, device=scores.device).tril()
    std, lo, hi = _masked_moments(scores, causal)
    return {  # keys and order: DIAG_KEYS
        "weight_entropy": ent.mean(),
        "jacobian_fro": jac.mean(),
        "logit_std": std,
        "logit_absmax": torch.maximum(hi.abs(), lo.abs()),
        "q_std": _std(q),
        "k_std": _std(k),
    }


def head_metrics(p: Tensor) -> dict[str, Tensor]:
    """Head portrait of §1.8.5 plus exercise 3, each a (nh,) tensor.

    p: (B, nh, T, T) causal pattern. Averages over batch and rows i >= 1.
    - entropy: mean normalised weight entropy
    - diag: weight on the query's own position, p[i, i]
    - prev: weight on the previous position, p[i, i-1]
    - distance: mean of the attention centroid's distance Σ_j (i - j) p_ij
    - distance_std: its standard deviation across positions (exercise 3)
    """
    T = p.shape[-1]
    i = torch.arange(T, device=p.device)
    ent = weight_entropy(p[..., 1:, :], i[1:] + 1)  # (B, nh, T-1): rows 1..T-1
    diag = p.diagonal(dim1=-2, dim2=-1)[..., 1:]  # (B, nh, T-1)
    prev = p.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, nh, T-1)
    dist_ij = (i[:, None] - i[None, :]).clamp_min(0).to(p.dtype)  # (T, T)
    dist = (p * dist_ij).sum(-1)[..., 1:]  # (B, nh, T-1)
    flat = lambda x: x.transpose(0, 1).reshape(x.shape[1], -1)  # (nh, B*(T-1))
    return {
        "entropy": flat(ent).mean(-1),
        "diag": flat(diag).mean(-1),
        "prev": flat(prev).mean(-1),
        "distance": flat(dist).mean(-1),
        # one position (a two-character text): no spread, 0 rather than torch's NaN and warning
        "distance_std": flat(dist).std(-1) if flat(dist).shape[-1] > 1 else torch.zeros(p.shape[1], dtype=p.dtype),
    }


def uniform_reference(T: int) -> dict[str, float]:
    """What a head that spreads weight uniformly over visible keys would show."""
    i = torch.arange(1, T, dtype=torch.float64)
    return {
        "entropy": 1.0,
        "diag": float((1 / (i + 1)).mean()),
        "prev": float((1 / (i + 1)).mean()),
        "distance": float((i / 2).mean()),
    }


# A head is an attention sink when the first position receives more than this share of its
# attention, averaged over queries: ε = 0.3 of Gu et al. 2024 ("When Attention Sink Emerges in
# Language Models: An Empirical View", their metric Sink_1^ε, the share of heads above ε), fixed
# from the literature, not from our runs. Gu et al. average over the queries of a 64-token text;
# here query 0 is left out (it can only see position 0, weight 1 by necessity) and the probe is
# short: on the 12-character probe a uniform head already gives the first position 0.19 (see
# sink_baseline), so 0.3 is 1.6 x uniform, a lower bar than in a long text. The lab book's sink
# claims therefore read the share against the uniform baseline as well as against ε.
SINK_THRESHOLD = 0.3


def sink_share(p: Tensor) -> Tensor:
    """The share of attention the first position receives, per head: mean over queries i >= 1 of
    p[..., i, 0]. ``p`` (..., T, T) causal pattern -> (...); NaN when T < 2 (no such query).

    All weight on position 0 gives 1; a uniform causal map gives :func:`sink_baseline` (T);
    a diagonal map (each query on itself) gives 0."""
    col = p[..., 1:, 0]
    if col.shape[-1] == 0:
        return torch.full(p.shape[:-2], float("nan"), dtype=p.dtype, device=p.device)
    return col.mean(-1)


def sink_baseline(T: int) -> float:
    """What :func:`sink_share` reads on a uniform causal map of T positions: mean over i = 1..T-1
    of 1/(i+1) (row i spreads its weight over i + 1 keys). NaN when T < 2."""
    if T < 2:
        return float("nan")
    i = torch.arange(1, T, dtype=torch.float64)
    return float((1 / (i + 1)).mean())


def sink_heads(share: Tensor, threshold: float = SINK_THRESHOLD) -> float:
    """The share of heads whose :func:`sink_share` exceeds ``threshold`` (Gu et al.'s Sink_1^ε):
    ``share`` holds one number per head, any shape (layers x heads); NaN entries are left out."""
    ok = share[~torch.isnan(share)]
    return float((ok > threshold).to(torch.float64).mean()) if ok.numel() else float("nan")
