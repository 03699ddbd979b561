"""Exercise 3 (§1.20.3): the attention centroid's distance, its mean and spread over positions."""

import numpy as np


def centroid(p):
    """p: (T, T) causal attention of one head, rows summing to 1.

    dist_i = Σ_j (i − j)·p[i, j] for the positions i = 1 … T−1 (row 0 sees only itself: its
    distance is 0 by construction, so it is left out, as `attnlab heads` does); returns
    (mean, population standard deviation) of dist over those positions."""
    p = np.asarray(p, dtype=np.float64)
    T = p.shape[0]
    i = np.arange(T)
    offset = np.clip(i[:, None] - i[None, :], 0, None)  # (T, T): i - j on and below the diagonal
    dist = (p * offset).sum(axis=1)[1:]  # (T-1,)
    return float(dist.mean()), float(dist.std())
