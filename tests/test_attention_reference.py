"""attnlab.attention.reference against PyTorch: SDPA forward, autograd backward, exact zeros."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.attention import attention, attention_backward, causal_mask, multi_head_attention, softmax

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def problems(draw, with_mask=True):
    """Random batched Q, K, V, an optional mask with no empty row, and a scale choice."""
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    n_q, n_k = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    d_k, d_v = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    magnitude = draw(st.sampled_from([0.1, 1.0, 3.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Q = rng.normal(size=lead + (n_q, d_k)) * magnitude
    K = rng.normal(size=lead + (n_k, d_k)) * magnitude
    V = rng.normal(size=lead + (n_k, d_v))
    mask = None
    if with_mask and draw(st.booleans()):
        mshape = draw(st.sampled_from([(n_q, n_k), lead + (n_q, n_k)]))
        mask = rng.random(mshape) < draw(st.sampled_from([0.3, 0.6, 0.9]))
        # every query keeps one random key, so no row is fully masked
        keep = rng.integers(0, n_k, size=mshape[:-1])
        np.put_along_axis(mask, keep[..., None], True, axis=-1)
    scale = draw(st.sampled_from([None, None, 0.3, 1.7]))
    return Q, K, V, mask, scale


def _t(a):
    return None if a is None else torch.from_numpy(np.ascontiguousarray(a))


@SETTINGS
@given(problems())
def test_forward_equals_sdpa_float64(prob):
    Q, K, V, mask, scale = prob
    out, w = attention(Q, K, V, mask=mask, scale=scale)
    ref = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), attn_mask=_t(mask), scale=scale).numpy()
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-12)
    if mask is not None:
        assert np.all(np.broadcast_to(~mask, w.shape) <= (w == 0.0)), "masked weights must be exactly 0"


@SETTINGS
@given(problems())
def test_backward_equals_autograd(prob):
    Q, K, V, mask, scale = prob
    tq, tk, tv = (_t(a).clone().requires_grad_() for a in (Q, K, V))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=_t(mask), scale=scale)
    dO = np.random.default_rng(1).normal(size=out.shape)
    out.backward(_t(dO))
    dQ, dK, dV = attention_backward(Q, K, V, mask, dO, scale=scale)
    for mine, ref, name in ((dQ, tq.grad, "dQ"), (dK, tk.grad, "dK"), (dV, tv.grad, "dV")):
        assert mine.shape == ref.shape, name
        np.testing.assert_allclose(mine, ref.numpy(), rtol=0, atol=1e-12, err_msg=name)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 8), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_masked_positions_get_exactly_zero_weight_and_gradient(n, d, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(2, n, d)) * 4 for _ in range(3))
    mask = causal_mask(n)
    _, w = attention(Q, K, V, mask=mask)
    assert np.all(w[:, ~mask] == 0.0)

    # Gradient with respect to the (pre-mask) scores, through autograd: exactly 0 where masked.
    S = torch.from_numpy(Q @ K.swapaxes(-1, -2) / np.sqrt(d)).requires_grad_()
    P = torch.softmax(S.masked_fill(~torch.from_numpy(mask), float("-inf")), -1)
    (P @ torch.from_numpy(V)).backward(torch.from_numpy(rng.normal(size=(2, n, d))))
    assert torch.all(S.grad[:, ~torch.from_numpy(mask)] == 0.0)

    # A key no query may see receives exactly zero gradient in the hand-written backward.
    hidden = mask.copy()
    hidden[:, -1] = False
    # (column 0 stays visible to every query, so no row is empty)
    dO = rng.normal(size=(2, n, d))
    _, dK, dV = attention_backward(Q, K, V, hidden, dO)
    assert np.all(dK[:, -1] == 0.0) and np.all(dV[:, -1] == 0.0)


def test_backward_float64_matches_chapter_autograd_formula_bit_for_bit_on_small_case():
    # §1.16.6 reports 0 difference; with the same formula order we match to the last ulp or two.
    torch.manual_seed(0)
    n, d = 3, 4
    Q, K, V = (torch.randn(n, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
    S = (Q @ K.T / d**0.5).masked_fill(~mask, float("-inf"))
    O = torch.softmax(S, -1) @ V
    dO = torch.randn_like(O)
    O.backward(dO)
    grads = attention_backward(Q.detach().numpy(), K.detach().numpy(), V.detach().numpy(), mask.numpy(), dO.numpy())
    for g, t in zip(grads, (Q, K, V)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=0, atol=1e-15)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.sampled_from([(4, 1), (4, 2), (6, 3), (8, 4)]), st.integers(0, 999))
def test_multi_head_equals_torch_per_head_sdpa(B, T, c_nh, seed):
    C, nh = c_nh
    hs = C // nh
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, T, C))
    W = [rng.normal(size=(C, C)) / np.sqrt(C) for _ in range(4)]
    out, w = multi_head_attention(X, *W, n_head=nh, mask=causal_mask(T))
    assert out.shape == (B, T, C) and w.shape == (B, nh, T, T)

    x = torch.from_numpy(X)
    q, k, v = (
        (x @ torch.from_numpy(Wi)).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        for Wi in W[:3]
    )
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
    y = y.transpose(1, 2).reshape(B, T, C) @ torch.from_numpy(W[3])
    np.testing.assert_allclose(out, y.numpy(), rtol=0, atol=1e-12)


def test_multi_head_unbatched_input():
    X = np.eye(3, 4)
    out, w = multi_head_attention(X, *(np.eye(4),) * 4, n_head=2)
    assert out.shape == (3, 4) and w.shape == (2, 3, 3)


def test_permutation_equivariance_without_positions():
    # §1.9.1: swapping the input rows only swaps the output rows.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4))
    perm = rng.permutation(5)
    out, _ = attention(X, X, X)
    out_p, _ = attention(X[perm], X[perm], X[perm])
    np.testing.assert_allclose(out_p, out[perm], atol=1e-14)


def test_softmax_is_stable_and_shift_invariant():
    z = np.array([[1000.0, 1001.0, 1002.0], [-1e4, 0.0, 1e4]])
    p = softmax(z)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(-1), 1.0)
    np.testing.assert_allclose(softmax(z[0] - 1000.0), p[0], atol=1e-15)
    np.testing.assert_allclose(softmax(z, axis=0).sum(0), 1.0)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_fully_masked_row_is_nan_not_hidden():
    # The reference does not paper over an empty row; the mask helpers never build one.
    mask = np.array([[True, False], [False, False]])
    _, w = attention(np.eye(2), np.eye(2), np.eye(2), mask=mask)
    assert np.isnan(w[1]).all() and np.isfinite(w[0]).all()


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: attention(np.ones((3, 4)), np.ones((3, 5)), np.ones((3, 2))), "d_k"),
        (lambda: attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((2, 2))), "n_k"),
        (lambda: attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), mask=np.ones((2, 2), bool)), "mask"),
        (lambda: attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), mask=np.ones((3, 3))), "mask"),
        (lambda: attention(np.ones(4), np.ones((3, 4)), np.ones((3, 2))), "Q"),
        (lambda: attention(np.ones((2, 3, 4)), np.ones((5, 3, 4)), np.ones((5, 3, 2))), "broadcast"),
        (lambda: multi_head_attention(np.ones((3, 6)), *(np.eye(6),) * 4, n_head=4), "n_head"),
        (lambda: multi_head_attention(np.ones((3, 6)), *(np.eye(6),) * 4, n_head=0), "n_head"),
        (lambda: multi_head_attention(np.ones((3, 6)), np.eye(5), *(np.eye(6),) * 3, n_head=2), "W_q"),
        (lambda: attention_backward(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), None, np.ones((3, 3))), "dO"),
        (lambda: causal_mask(0), "n"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()
