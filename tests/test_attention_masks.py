"""Masks for padded, packed and windowed batches: no empty rows, no NaN, padding out of the loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.attention import (
    IGNORE_INDEX,
    attention,
    build_mask,
    build_mask_np,
    causal_mask,
    masked_lm_loss,
    pack_sequences,
    pack_sequences_np,
    padded_targets,
    sliding_window_mask,
    sliding_window_mask_np,
)

lengths_strategy = st.integers(1, 9).flatmap(
    lambda L: st.tuples(st.just(L), st.lists(st.integers(0, L), min_size=1, max_size=4))
)


@settings(max_examples=40, deadline=None)
@given(lengths_strategy)
def test_build_mask_is_causal_and_key_padding_with_no_empty_row(case):
    L, lengths = case
    m = build_mask_np(L, lengths)
    assert m.shape == (len(lengths), 1, L, L) and m.dtype == bool
    assert m.any(-1).all(), "every query row must see at least one key"
    assert np.all(m[:, 0].diagonal(axis1=-2, axis2=-1)), "fix ①: each position sees itself"
    i, j = np.indices((L, L))
    for b, n in enumerate(lengths):
        real_q = i < n
        # Real queries: exactly causal and never a padded key.
        expected = (j <= i) & (j < n)
        assert np.array_equal(m[b, 0][real_q], expected[real_q])
        # Nothing ever looks into the future.
        assert not m[b, 0][j > i].any()
    assert torch.equal(build_mask(L, lengths), torch.from_numpy(m))


@settings(max_examples=30, deadline=None)
@given(lengths_strategy, st.integers(0, 999))
def test_padding_never_yields_nan_and_padded_queries_are_out_of_the_loss(case, seed):
    L, lengths = case
    B, d, vocab = len(lengths), 4, 7
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, 2, L, d, generator=g, dtype=torch.float64) * 5 for _ in range(3))
    mask = build_mask(L, lengths)  # (B, 1, L, L), broadcasts over the 2 heads
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.isfinite(out).all()
    ref, _ = attention(q.numpy(), k.numpy(), v.numpy(), mask=mask.numpy())
    assert np.isfinite(ref).all()
    np.testing.assert_allclose(out.numpy(), ref, rtol=0, atol=1e-12)

    # Real query outputs do not depend on what sits in padded slots.
    k2, v2 = k.clone(), v.clone()
    for b, n in enumerate(lengths):
        k2[b, :, n:] = 1e3
        v2[b, :, n:] = -7.0
    out2 = F.scaled_dot_product_attention(q, k2, v2, attn_mask=mask)
    for b, n in enumerate(lengths):
        torch.testing.assert_close(out2[b, :, :n], out[b, :, :n], rtol=0, atol=1e-12)

    # Loss: padded query positions are excluded, so their logits get no gradient.
    logits = torch.randn(B, L, vocab, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, vocab, (B, L), generator=g)
    if sum(lengths) == 0:
        return  # nothing real to score; cross_entropy of an all-ignored batch is NaN by definition
    loss = masked_lm_loss(logits, targets, lengths)
    assert torch.isfinite(loss)
    loss.backward()
    for b, n in enumerate(lengths):
        assert torch.all(logits.grad[b, n:] == 0.0)
    # and equals the mean over real positions computed by hand
    real = [(b, t) for b, n in enumerate(lengths) for t in range(n)]
    manual = torch.stack([F.cross_entropy(logits[b, t][None], targets[b, t][None]) for b, t in real]).mean()
    torch.testing.assert_close(loss, manual)


def test_padded_targets_uses_ignore_index():
    t = torch.arange(12).view(2, 6)
    out = padded_targets(t, [4, 0])
    assert out[0, :4].tolist() == [0, 1, 2, 3] and (out[0, 4:] == IGNORE_INDEX).all()
    assert (out[1] == IGNORE_INDEX).all()


def test_chapter_batch_of_lengths_5_3_7():
    m = build_mask(7, [5, 3, 7])
    # "宅" (position 4 of A) sees its 5 real tokens and no <pad>.
    assert m[0, 0, 4].tolist() == [True] * 5 + [False] * 2
    # A padded query of B sees the 3 real tokens and itself: finite, and not in the loss.
    assert m[1, 0, 5].tolist() == [True, True, True, False, False, True, False]
    assert torch.equal(m[2, 0], torch.from_numpy(causal_mask(7)))


def test_pack_sequences_positions_restart_and_blocks_do_not_leak():
    A, Bq, C = [11, 12, 13, 14, 15], [21, 22, 23], [31, 32, 33, 34]
    ids, mask, pos = pack_sequences_np([A, Bq, C], window=8)
    assert ids.shape == (2, 8) and mask.shape == (2, 1, 8, 8)
    assert ids[0].tolist() == A + Bq and ids[1, :4].tolist() == C
    assert pos[0].tolist() == [0, 1, 2, 3, 4, 0, 1, 2] and pos[1, :4].tolist() == [0, 1, 2, 3]
    m = mask[:, 0]
    assert not m[0, 5:, :5].any() and not m[0, :5, 5:].any(), "sequences must not see each other"
    assert m.any(-1).all(), "padding rows still see themselves"

    # Attention on the packed row equals attention on each sequence alone.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 8, 4))
    out, _ = attention(x, x, x, mask=m)
    for r, start, n in ((0, 0, 5), (0, 5, 3), (1, 0, 4)):
        seg = x[r, start : start + n]
        alone, _ = attention(seg, seg, seg, mask=causal_mask(n))
        np.testing.assert_allclose(out[r, start : start + n], alone, atol=1e-14)

    packed = pack_sequences([A, Bq, C], window=8, device="cpu")
    assert torch.equal(packed.mask, torch.from_numpy(mask))
    tgt = packed.targets()
    assert tgt[0].tolist() == [12, 13, 14, 15, IGNORE_INDEX, 22, 23, IGNORE_INDEX]
    assert (tgt[1, 3:] == IGNORE_INDEX).all()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.integers(6, 10))
def test_packing_property(lens, window):
    seqs = [list(range(100 * k, 100 * k + n)) for k, n in enumerate(lens)]
    p = pack_sequences_np(seqs, window)
    assert p.mask[:, 0].any(-1).all()
    got = [p.ids[p.segments == k].tolist() for k in range(len(seqs))]
    assert got == seqs  # every token placed once, in order, never split
    for k in range(len(seqs)):
        assert p.pos[p.segments == k].tolist() == list(range(lens[k]))
    seg = p.segments
    same = (seg[:, :, None] == seg[:, None, :]) & (seg[:, :, None] >= 0)
    assert not (p.mask[:, 0] & ~same & ~np.eye(window, dtype=bool)).any()


@pytest.mark.parametrize("n, w", [(1, 1), (5, 1), (6, 3), (4, 10)])
def test_sliding_window(n, w):
    m = sliding_window_mask_np(n, w)
    i, j = np.indices((n, n))
    assert np.array_equal(m, (j <= i) & (i - j < w))
    assert m.any(-1).all() and (m.sum(-1) <= w).all()
    assert torch.equal(sliding_window_mask(n, w, device="cpu"), torch.from_numpy(m))
    if w >= n:
        assert np.array_equal(m, causal_mask(n))


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: build_mask(4, [5]), "lengths"),
        (lambda: build_mask(4, [-1]), "lengths"),
        (lambda: build_mask(4, []), "lengths"),
        (lambda: build_mask(0, [0]), "seq_len"),
        (lambda: sliding_window_mask(4, 0), "window"),
        (lambda: sliding_window_mask_np(4, -2), "window"),
        (lambda: pack_sequences([[1, 2, 3]], window=0), "window"),
        (lambda: pack_sequences([[1, 2, 3]], window=2), "seqs"),
        (lambda: padded_targets(torch.zeros(2, 3, dtype=torch.long), [1]), "lengths"),
        (lambda: padded_targets(torch.zeros(1, 3, dtype=torch.long), [4]), "lengths"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()
