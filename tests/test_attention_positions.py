"""Sinusoidal tables and RoPE: torch and NumPy agree, and RoPE scores depend on n - m only."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.attention import apply_rope, apply_rope_np, sinusoidal_table, sinusoidal_table_np


def test_sinusoidal_table_torch_matches_numpy_and_formula():
    t = sinusoidal_table(50, 6, device="cpu")
    assert t.shape == (50, 6) and t.dtype == torch.float32
    ref = sinusoidal_table_np(50, 6)
    np.testing.assert_allclose(t.numpy(), ref, atol=1e-7)
    pos = 17  # with i = 2: column 2i = 4 is sin(pos / 10000^(4/6)), column 5 the matching cos
    assert math.isclose(ref[pos, 4], math.sin(pos / 10000 ** (4 / 6)), rel_tol=1e-15)
    assert math.isclose(ref[pos, 5], math.cos(pos / 10000 ** (4 / 6)), rel_tol=1e-15)


def test_sinusoidal_odd_dimension_and_relative_shift_is_a_rotation():
    assert sinusoidal_table_np(3, 5).shape == (3, 5)
    # eq. 1.38: PE(pos + k) is a fixed rotation of PE(pos) in every (sin, cos) pair
    pe = sinusoidal_table_np(40, 8)
    k = 5
    for i in range(4):
        w = 10000 ** (-2 * i / 8)
        R = np.array([[math.cos(w * k), math.sin(w * k)], [-math.sin(w * k), math.cos(w * k)]])
        np.testing.assert_allclose(pe[k:, 2 * i : 2 * i + 2], pe[:-k, 2 * i : 2 * i + 2] @ R.T, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([2, 4, 8, 16]),
    st.integers(0, 500),
    st.integers(0, 500),
    st.integers(-400, 400),
    st.integers(0, 2**32 - 1),
)
def test_rope_score_depends_only_on_relative_offset(hs, m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, hs)), rng.normal(size=(1, hs))
    m2, n2 = m + shift, n + shift
    if min(m2, n2) < 0:
        m2, n2 = m - shift, n - shift
    s1 = (apply_rope_np(q, [m]) @ apply_rope_np(k, [n]).T).item()
    s2 = (apply_rope_np(q, [m2]) @ apply_rope_np(k, [n2]).T).item()
    assert math.isclose(s1, s2, rel_tol=1e-9, abs_tol=1e-9)
    # rotations preserve length
    assert math.isclose(np.linalg.norm(apply_rope_np(q, [m])), np.linalg.norm(q), rel_tol=1e-12)


def test_rope_torch_matches_numpy_and_relative_property_in_batch():
    g = torch.Generator().manual_seed(0)
    B, nh, T, hs = 2, 3, 10, 8
    q = torch.randn(B, nh, T, hs, generator=g, dtype=torch.float64)
    k = torch.randn(B, nh, T, hs, generator=g, dtype=torch.float64)
    pos = torch.arange(T)
    rq = apply_rope(q, pos)
    assert rq.shape == q.shape and rq.dtype == q.dtype
    np.testing.assert_allclose(rq.numpy(), apply_rope_np(q.numpy(), pos.numpy()), atol=1e-12)
    # Same content at every position: scores are constant along each diagonal (Toeplitz).
    qc = q[:, :, :1].expand(B, nh, T, hs)
    kc = k[:, :, :1].expand(B, nh, T, hs)
    S = apply_rope(qc, pos) @ apply_rope(kc, pos).transpose(-1, -2)  # (B, nh, T, T)
    for off in range(-T + 1, T):
        d = torch.diagonal(S, offset=off, dim1=-2, dim2=-1)
        torch.testing.assert_close(d, d[..., :1].expand_as(d), rtol=0, atol=1e-10)
    # float32 path, the one the model uses
    r32 = apply_rope(q.float(), pos)
    assert r32.dtype == torch.float32
    torch.testing.assert_close(r32.double(), rq, rtol=0, atol=1e-5)


def test_rope_position_zero_is_identity_and_pair_layout():
    x = torch.arange(8.0).view(1, 8)
    torch.testing.assert_close(apply_rope(x, torch.tensor([0])), x)
    # pair (0, 1) rotates by pos * theta_0 = pos radians
    y = apply_rope(torch.tensor([[1.0, 0.0, 1.0, 0.0]]), torch.tensor([1]))
    torch.testing.assert_close(y[0, :2], torch.tensor([math.cos(1.0), math.sin(1.0)]))
    theta1 = 10000 ** (-2 / 4)
    torch.testing.assert_close(y[0, 2:], torch.tensor([math.cos(theta1), math.sin(theta1)]))


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: apply_rope(torch.ones(4, 5), torch.arange(4)), "hs"),
        (lambda: apply_rope(torch.ones(4, 6), torch.arange(3)), "pos"),
        (lambda: apply_rope(torch.ones(4, 6), torch.arange(4.0)), "pos"),
        (lambda: apply_rope_np(np.ones((4, 5)), np.arange(4)), "hs"),
        (lambda: sinusoidal_table(4, 0), "d"),
        (lambda: sinusoidal_table_np(-1, 4), "n"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()
