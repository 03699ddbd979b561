"""Attention diagnostics as pure functions (§1.19.3, §1.8.5, exercise 3).

Conventions: ``p`` is an attention pattern of shape (..., T, T) whose rows sum
to 1 over the visible keys; under a causal mask row i sees keys 0..i, so it has
``i + 1`` visible positions. Rows with a single visible position carry no
information about spread (their entropy is 0 by necessity and their Jacobian is
exactly 0), so every row average here leaves them out.
"""
from __future__ import annotations

import torch
from torch import Tensor


def weight_entropy(p: Tensor, n_valid: Tensor | int) -> Tensor:
    """Entropy of each row divided by log(n_valid): 1 = uniform, 0 = one-hot.

    ``p`` (..., T); ``n_valid`` broadcastable to p.shape[:-1]. Rows with
    n_valid <= 1 return NaN (undefined), callers leave them out.
    """
    h = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    n = torch.as_tensor(n_valid, dtype=p.dtype, device=p.device)
    return torch.where(n > 1, h / torch.log(n.clamp_min(2)), torch.full_like(h, float("nan")))


def jacobian_frobenius(p: Tensor) -> Tensor:
    """Frobenius norm of the softmax Jacobian J = diag(p) - p pᵀ for each row.

    ||J||² = Σ_i p_i²(1 - p_i)² + Σ_i p_i² Σ_{j≠i} p_j² = Σ_i p_i² (1 - 2p_i + Σ_j p_j²),
    O(T) per row, never building the T×T Jacobian. Near saturation (one p_m ≈ 1)
    the naive form Σp² - 2Σp³ + (Σp²)² cancels catastrophically, exactly where
    the case study needs the number (||J|| ~ 1e-4). So the dominant entry is
    split off: with o the row without p_m, r1 = Σo (= 1 - p_m) and r2 = Σo²,
        ||J||² = (1 + p_m² + r2) r2 - 2 Σo³ + p_m² (r1² + r2),
    where every term is summed from small numbers instead of subtracted from 1.
    """
    pm, m = p.max(-1, keepdim=True)
    others = p.scatter(-1, m, 0.0)                   # the row without its dominant weight
    o2 = others * others
    r1 = others.sum(-1)
    r2 = o2.sum(-1)
    o3 = (o2 * others).sum(-1)
    pm2 = pm.squeeze(-1) ** 2
    return ((1 + pm2 + r2) * r2 - 2 * o3 + pm2 * (r1 * r1 + r2)).clamp_min(0).sqrt()


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
    selected entries: this runs at every training step.
    """
    w = mask.to(x.dtype)
    n = w.sum() * (x.numel() / w.numel())
    mean = (x * w).sum() / n
    return (((x - mean) * w).square().sum() / (n - 1)).sqrt()


def pattern_summary(scores: Tensor, p: Tensor, q: Tensor, k: Tensor) -> dict[str, Tensor]:
    """The per-layer numbers recorded during training, as 0-d tensors.

    scores: (B, nh, T, T) logits as fed to the softmax (after scaling, before
    masking); p: (B, nh, T, T) causal attention pattern; q, k: (B, nh, T, hs).
    Averages run over batch, heads and rows with more than one visible key
    (rows 1..T-1); logit statistics over causal entries only.
    """
    T = p.shape[-1]
    n = causal_visible(T, p.device)[1:]                    # (T-1,) visible keys of rows 1..T-1
    pr = p[..., 1:, :]                                     # (B, nh, T-1, T), a view
    ent = weight_entropy(pr, n)
    jac = jacobian_frobenius(pr)
    causal = torch.ones(T, T, dtype=torch.bool, device=p.device).tril()
    return {
        "weight_entropy": ent.mean(),
        "jacobian_fro": jac.mean(),
        "logit_std": masked_std(scores, causal),
        "logit_absmax": (scores * causal).abs().amax(),
        "q_std": q.std(),
        "k_std": k.std(),
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
    ent = weight_entropy(p[..., 1:, :], i[1:] + 1)         # (B, nh, T-1): rows 1..T-1
    diag = p.diagonal(dim1=-2, dim2=-1)[..., 1:]           # (B, nh, T-1)
    prev = p.diagonal(offset=-1, dim1=-2, dim2=-1)         # (B, nh, T-1)
    dist_ij = (i[:, None] - i[None, :]).clamp_min(0).to(p.dtype)   # (T, T)
    dist = (p * dist_ij).sum(-1)[..., 1:]                  # (B, nh, T-1)
    flat = lambda x: x.transpose(0, 1).reshape(x.shape[1], -1)     # (nh, B*(T-1))
    return {
        "entropy": flat(ent).mean(-1),
        "diag": flat(diag).mean(-1),
        "prev": flat(prev).mean(-1),
        "distance": flat(dist).mean(-1),
        "distance_std": flat(dist).std(-1),
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

