import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from attnlab.diagnostics import (head_metrics, jacobian_frobenius, jacobian_frobenius_explicit,
                                 masked_std, pattern_summary, weight_entropy)


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
    eye = torch.eye(T).expand(1, 1, T, T)                  # every row looks at itself
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1      # previous-token head
    p = torch.cat([eye, prev.expand(1, 1, T, T)], dim=1)   # (1, 2, T, T)
    hm = head_metrics(p)
    assert torch.allclose(hm["diag"], torch.tensor([1.0, 0.0]))
    assert torch.allclose(hm["prev"], torch.tensor([0.0, 1.0]))
    assert torch.allclose(hm["distance"], torch.tensor([0.0, 1.0]))
    assert torch.allclose(hm["entropy"], torch.tensor([0.0, 0.0]))
    s = pattern_summary(torch.zeros(1, 2, T, T), p, torch.ones(1, 2, T, 4), torch.ones(1, 2, T, 4))
    assert s["jacobian_fro"].item() == 0.0 and s["weight_entropy"].item() == 0.0
