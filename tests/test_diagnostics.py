import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.diagnostics import (
    head_metrics,
    jacobian_frobenius,
    jacobian_frobenius_explicit,
    masked_std,
    pattern_summary,
    weight_entropy,
)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.floats(0.01, 50.0), st.integers(0, 2**31 - 1))
def test_jacobian_matches_explicit(n, temp, seed):
    g = torch.Generator().manual_seed(seed)
    p = (torch.randn(3, n, generator=g, dtype=torch.float64) * temp).softmax(-1)
    assert torch.allclose(jacobian_frobenius(p), jacobian_frobenius_explicit(p), atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("gap", [5.0, 9.0, 12.0])
def test_jacobian_is_accurate_near_saturation_in_float32(gap):
    # the unscaled big model of the case lives here: ||J|| ~ 1e-4 .. 1e-7
    z = torch.randn(64, 24, dtype=torch.float64)
    z[:, 3] += gap * 2
    p64 = z.softmax(-1)
    truth = jacobian_frobenius_explicit(p64)
    got = jacobian_frobenius(z.float().softmax(-1)).double()
    assert torch.allclose(got, truth, rtol=1e-3, atol=0)


def test_jacobian_extremes():
    assert jacobian_frobenius(torch.tensor([1.0, 0.0, 0.0])).item() == 0.0
    n = 8
    u = torch.full((n,), 1 / n, dtype=torch.float64)
    # uniform: ||J||^2 = 1/n - 2/n^2 + 1/n^2 = (n-1)/n^2
    assert math.isclose(jacobian_frobenius(u).item(), math.sqrt((n - 1) / n**2), rel_tol=1e-12)


def test_entropy_normalisation():
    u = torch.full((5,), 0.2, dtype=torch.float64)
    assert math.isclose(weight_entropy(u, 5).item(), 1.0, rel_tol=1e-12)
    assert weight_entropy(torch.tensor([1.0, 0, 0, 0]), 4).item() == 0.0
    assert math.isnan(weight_entropy(torch.tensor([1.0]), 1).item())


def test_masked_std_equals_boolean_selection():
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    m = torch.ones(6, 6, dtype=torch.bool).tril()
    assert torch.allclose(masked_std(x, m), x[m.expand_as(x)].std(), atol=1e-12)


def test_summary_and_head_metrics_on_known_patterns():
    T = 6
    eye = torch.eye(T).expand(1, 1, T, T)  # every row looks at itself
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1  # previous-token head
    p = torch.cat([eye, prev.expand(1, 1, T, T)], dim=1)  # (1, 2, T, T)
    hm = head_metrics(p)
    assert torch.allclose(hm["diag"], torch.tensor([1.0, 0.0]))
    assert torch.allclose(hm["prev"], torch.tensor([0.0, 1.0]))
    assert torch.allclose(hm["distance"], torch.tensor([0.0, 1.0]))
    assert torch.allclose(hm["entropy"], torch.tensor([0.0, 0.0]))
    s = pattern_summary(torch.zeros(1, 2, T, T), p, torch.ones(1, 2, T, 4), torch.ones(1, 2, T, 4))
    assert s["jacobian_fro"].item() == 0.0 and s["weight_entropy"].item() == 0.0


def _book_summary(scores, p, q, k):
    """The chapter's definitions written plainly (§1.19.3): slow, obvious, float64."""
    scores, p = scores.double(), p.double()
    T = p.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    rows = p[..., 1:, :]
    n = torch.arange(2, T + 1, dtype=torch.float64)
    ent = -(rows * rows.clamp_min(1e-12).log()).sum(-1) / n.log()
    lg = scores[causal.expand_as(scores)]
    return {
        "weight_entropy": ent.mean(),
        "jacobian_fro": jacobian_frobenius_explicit(rows).mean(),
        "logit_std": lg.std(),
        "logit_absmax": lg.abs().max(),
        "q_std": q.std(),
        "k_std": k.std(),
    }


@pytest.mark.parametrize("temperature", [0.1, 1.0, 30.0, 3000.0])
def test_summary_equals_the_books_definitions(temperature):
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 3, 16, 8, generator=g), torch.randn(2, 3, 16, 8, generator=g)
    scores = (q @ k.transpose(-1, -2)) * temperature + 5.0  # a mean far from 0 on purpose
    causal = torch.ones(16, 16, dtype=torch.bool).tril()
    p = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    got, want = pattern_summary(scores, p, q, k), _book_summary(scores, p, q, k)
    for key, value in want.items():
        assert math.isclose(got[key].item(), value.item(), rel_tol=2e-4, abs_tol=1e-9), key


def test_jacobian_with_a_tie_at_one_half_and_with_subnormal_range_weights():
    p = torch.tensor([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25]], dtype=torch.float64)
    assert torch.allclose(jacobian_frobenius(p), jacobian_frobenius_explicit(p), rtol=1e-12)
    # collapsed rows whose other weights square or cube to float32 subnormals;
    # float64 itself rounds p_m to 1 here, so the truth is worked out in 60 digits
    for gap in (20, 29, 38):  # ||J|| ~ 3e-9, 4e-13, 6e-17
        z = [0, -gap, -gap - 1, -gap - 4, -200]
        got = jacobian_frobenius(torch.tensor(z, dtype=torch.float32).softmax(-1)).item()
        truth = _jacobian_norm_in_decimal(z)
        assert math.isclose(got, truth, rel_tol=1e-3), (gap, got, truth)


def _jacobian_norm_in_decimal(z: list[int]) -> float:
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    e = [Decimal(v).exp() for v in z]
    p = [x / sum(e) for x in e]
    sq = sum(((p[i] if i == j else 0) - p[i] * p[j]) ** 2 for i in range(len(p)) for j in range(len(p)))
    return float(sq.sqrt())


def test_diagnostics_keep_nan_visible():
    p = torch.tensor([[0.5, float("nan"), 0.5]])
    assert math.isnan(jacobian_frobenius(p).item())
    assert math.isnan(weight_entropy(p, 3).item())


@pytest.mark.parametrize("temp", [0.01, 1.0, 30.0, 3000.0])
def test_in_place_diagnostics_equal_their_plain_formulas_bit_for_bit(temp):
    """The recorded numbers are computed with few passes and buffers reused in place (they run at
    every recorded step); the plain out-of-place formulas they were first recorded with (the
    dominant weight found by floor(p * 1.999)) give the same bits, on collapsed and uniform rows."""
    import torch.nn.functional as F

    from attnlab.diagnostics import _CU_MIN, _SQ_MIN, _TINY, _masked_moments, _row_entropy

    g = torch.Generator().manual_seed(int(temp * 100))
    T = 24
    s = torch.randn(3, 4, T, T, generator=g) * temp
    p = (s + torch.zeros(T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))).softmax(-1)
    assert torch.equal(_row_entropy(p), -(p * F.threshold(p, _TINY, 1.0).log()).sum(-1))
    dominant = (p * 1.999).floor_()
    others = torch.addcmul(p, p, dominant, value=-1)
    pm = p.amax(-1)
    pm = pm * (pm * 1.999).floor_()
    o2 = F.threshold(others, _SQ_MIN, 0.0).square_()
    r1, r2, r3 = others.sum(-1), o2.sum(-1), (o2 * F.threshold(others, _CU_MIN, 0.0)).sum(-1)
    plain = ((1 + pm * pm + r2) * r2 - 2 * r3 + pm * pm * (r1 * r1 + r2)).clamp_min(0).sqrt()
    assert torch.equal(jacobian_frobenius(p), plain)
    w = torch.ones(T, T).tril()
    n = w.sum() * (s.numel() / w.numel())
    dev = s * w - (s * w).sum() / n * w
    std, lo, hi = _masked_moments(s, w)
    assert torch.equal(std, ((dev * dev).sum() / (n - 1)).sqrt())
    assert torch.equal(torch.stack([lo, hi]), torch.stack(torch.aminmax(s * w)))


def test_the_dominant_weight_is_split_where_it_always_was():
    """A weight counts as its row's dominant one above _DOMINANT, exactly where floor(p * 1.999),
    the first recorded definition, reaches 1: every float32 from 0.49 to 0.51 is checked (p * 1.999
    only grows with p, so no other weight in [0, 1] can fall on the other side)."""
    from attnlab.diagnostics import _DOMINANT

    lo, hi = (torch.tensor(v, dtype=torch.float32).view(torch.int32).item() for v in (0.49, 0.51))
    p = torch.arange(lo, hi, dtype=torch.int32).view(torch.float32)
    assert torch.equal((p * 1.999).floor() >= 1, p > _DOMINANT)
    assert (p > _DOMINANT).any() and not (p > _DOMINANT).all()  # the boundary lies inside


@pytest.mark.parametrize("shift", [0.0, 3.0, -40.0])
def test_q_and_k_spread_is_torch_std_within_float32_rounding(shift):
    """q_std and k_std are computed in two float32 passes instead of torch.std's float64 loop: the
    recorded number may move in its last bits, never by more than 1e-6 of itself."""
    from attnlab.diagnostics import _std

    g = torch.Generator().manual_seed(7)
    for scale in (1e-3, 0.2, 30.0):
        q = (torch.randn(32, 64, 4, 32, generator=g) * scale + shift * scale).transpose(1, 2)  # a strided view
        assert math.isclose(_std(q).item(), q.std().item(), rel_tol=1e-6)
    assert math.isnan(_std(torch.tensor([float("nan"), 1.0])).item())
