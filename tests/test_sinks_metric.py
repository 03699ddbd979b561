"""The attention-sink metric (attnlab.diagnostics.sink_share, sink_baseline, sink_heads) on hand-made maps."""

import math

import pytest
import torch

from attnlab.diagnostics import SINK_THRESHOLD, sink_baseline, sink_heads, sink_share, uniform_reference


def uniform(T: int) -> torch.Tensor:
    m = torch.ones(T, T).tril()
    return m / m.sum(-1, keepdim=True)


def all_on_first(T: int) -> torch.Tensor:
    p = torch.zeros(T, T)
    p[:, 0] = 1.0
    return p


@pytest.mark.parametrize("T", [2, 5, 12, 64])
def test_all_weight_on_first_position_gives_one(T):
    assert sink_share(all_on_first(T)).item() == 1.0


@pytest.mark.parametrize("T", [2, 5, 12, 64])
def test_uniform_map_gives_the_baseline(T):
    assert sink_share(uniform(T)).item() == pytest.approx(sink_baseline(T), rel=1e-6)
    assert sink_baseline(T) == pytest.approx(sum(1 / (i + 1) for i in range(1, T)) / (T - 1))
    assert sink_baseline(T) == pytest.approx(uniform_reference(T)["diag"])  # the same rows, the same mean


@pytest.mark.parametrize("T", [2, 5, 12])
def test_diagonal_map_gives_zero(T):
    assert sink_share(torch.eye(T)).item() == 0.0


def test_query_zero_is_left_out():
    p = torch.eye(4)
    p[0, 0] = 1.0  # query 0 can only see itself: it must not count as a sink
    assert sink_share(p).item() == 0.0
    half = torch.eye(3)
    half[2] = torch.tensor([1.0, 0.0, 0.0])  # one of the two queries i >= 1 all on position 0
    assert sink_share(half).item() == pytest.approx(0.5)


def test_probe_baseline_and_threshold():
    # the book's 12-character probe: a uniform head gives 0.19, below the threshold of Gu et al.
    assert sink_baseline(12) == pytest.approx(0.1912, abs=1e-4)
    assert sink_baseline(12) < SINK_THRESHOLD == 0.3
    assert math.isnan(sink_baseline(1))


def test_per_head_shape_and_share_of_sink_heads():
    T = 12
    p = torch.stack([torch.stack([all_on_first(T), uniform(T), torch.eye(T)]), torch.stack([uniform(T)] * 3)])
    share = sink_share(p)  # (layers 2, heads 3)
    assert share.shape == (2, 3)
    assert share[0].tolist() == pytest.approx([1.0, sink_baseline(T), 0.0], rel=1e-6)
    assert sink_heads(share) == pytest.approx(1 / 6)
    assert sink_heads(share, threshold=0.1) == pytest.approx(5 / 6)
    assert sink_heads(torch.tensor([float("nan"), 0.5])) == 1.0
    assert math.isnan(sink_heads(torch.tensor([float("nan")])))


def test_one_position_is_undefined():
    assert torch.isnan(sink_share(torch.ones(3, 1, 1))).all()
