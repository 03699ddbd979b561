"""Online softmax and blocked attention equal the full computation."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.attention import (
    attention,
    blocked_attention,
    blocked_attention_np,
    blocked_attention_torch,
    causal_mask,
    online_softmax,
    softmax,
)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 8), st.sampled_from([1.0, 50.0, 3000.0]), st.integers(0, 999))
def test_online_softmax_equals_softmax(n, block, scale, seed):
    z = np.random.default_rng(seed).normal(size=n) * scale
    p, trace = online_softmax(z, block, return_trace=True)
    np.testing.assert_allclose(p, softmax(z), rtol=1e-13, atol=1e-300)
    assert len(trace) == -(-n // block)
    assert trace[-1].m == z.max()
    # l is the softmax denominator relative to the final max
    np.testing.assert_allclose(trace[-1].l, np.exp(z - z.max()).sum(), rtol=1e-13)


def test_online_softmax_rescales_when_the_max_arrives_late():
    p, trace = online_softmax([1.0, 3.0, 5.0], 2, return_trace=True)
    assert [s.m for s in trace] == [3.0, 5.0]
    # eq. 1.23: l_new = l_old * exp(m_old - m_new) + exp(5 - 5)
    np.testing.assert_allclose(trace[1].l, trace[0].l * np.exp(3.0 - 5.0) + 1.0, rtol=1e-15)
    np.testing.assert_allclose(p, softmax(np.array([1.0, 3.0, 5.0])), rtol=1e-15)


@st.composite
def blocked_problems(draw):
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n_q, n_k, d = draw(st.integers(1, 12)), draw(st.integers(1, 12)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mag = draw(st.sampled_from([1.0, 10.0, 40.0]))
    Q, K, V = (
        rng.normal(size=lead + (n_q, d)) * mag,
        rng.normal(size=lead + (n_k, d)) * mag,
        rng.normal(size=lead + (n_k, d)),
    )
    mask = None
    if draw(st.booleans()):
        mask = rng.random(lead + (n_q, n_k)) < 0.5
        np.put_along_axis(mask, rng.integers(0, n_k, size=lead + (n_q, 1)), True, axis=-1)
    return Q, K, V, mask, draw(st.integers(1, 5))


@settings(max_examples=40, deadline=None)
@given(blocked_problems())
def test_blocked_equals_full_numpy_and_torch(prob):
    Q, K, V, mask, block = prob
    full, _ = attention(Q, K, V, mask=mask)
    got = blocked_attention_np(Q, K, V, mask=mask, block_size=block)
    np.testing.assert_allclose(got, full, rtol=0, atol=1e-12)
    t = [torch.from_numpy(a) for a in (Q, K, V)]
    tm = None if mask is None else torch.from_numpy(mask)
    got_t = blocked_attention(*t, mask=tm, block_size=block)
    assert isinstance(got_t, torch.Tensor)
    np.testing.assert_allclose(got_t.numpy(), full, rtol=0, atol=1e-12)


@pytest.mark.parametrize("impl", ["np", "torch"])
def test_largest_logit_in_the_last_block_and_logits_in_the_thousands(impl):
    rng = np.random.default_rng(0)
    n, d = 37, 8
    Q, K, V = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d))
    K[-1] = Q.sum(0) * 50  # the last key wins every row by thousands
    Q *= 30
    full, w = attention(Q, K, V, mask=causal_mask(n))
    assert np.abs(Q @ K.T / np.sqrt(d)).max() > 1000
    if impl == "np":
        got, lse = blocked_attention_np(Q, K, V, causal=True, block_size=8, return_lse=True)
    else:
        got, lse = blocked_attention_torch(
            *map(torch.from_numpy, (Q, K, V)), causal=True, block_size=8, return_lse=True
        )
        got, lse = got.numpy(), lse.numpy()
    np.testing.assert_allclose(got, full, rtol=0, atol=1e-12)
    S = np.where(causal_mask(n), Q @ K.T / np.sqrt(d), -np.inf)
    np.testing.assert_allclose(lse, S.max(-1) + np.log(np.exp(S - S.max(-1, keepdims=True)).sum(-1)), rtol=1e-14)


def test_causal_flag_equals_sdpa_is_causal_float64():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 50, 16, generator=g, dtype=torch.float64) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = blocked_attention_torch(q, k, v, causal=True, block_size=7)
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-12)


def test_blocked_never_materialises_the_n_by_n_matrix():
    n, d, block = 2048, 8, 64
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(n, d)) for _ in range(3))
    tracemalloc.start()
    try:
        out = blocked_attention_np(Q, K, V, causal=True, block_size=block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    full_matrix = n * n * 8  # 32 MiB of float64 scores
    # a few (n, block) temporaries (~1 MiB each) are expected; one (n, n) array is 32 MiB
    assert peak < full_matrix / 4, f"peak {peak} bytes suggests an n x n intermediate"
    np.testing.assert_allclose(out[:64], attention(Q[:64], K[:64], V[:64], mask=causal_mask(64))[0], atol=1e-12)


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: online_softmax([1.0, 2.0], 0), "block_size"),
        (lambda: online_softmax([], 2), "z"),
        (lambda: blocked_attention_np(np.ones((3, 4)), np.ones((3, 5)), np.ones((3, 2))), "d_k"),
        (lambda: blocked_attention_np(np.ones((3, 4)), np.ones((3, 4)), np.ones((2, 2))), "n_k"),
        (lambda: blocked_attention_np(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), block_size=-1), "block_size"),
        (
            lambda: blocked_attention_np(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), mask=np.ones((3, 2), bool)),
            "mask",
        ),
        (
            lambda: blocked_attention_torch(
                torch.ones(3, 4), torch.ones(3, 4), torch.ones(3, 2), mask=torch.ones(3, 3)
            ),
            "mask",
        ),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()
