"""Every hand-computed number of chapter 1, recomputed with attnlab.attention.

The expectations come from src/attnlab/data/reference_values.json (the book's printed
values). If one of these fails, the code changed, not the book: update the JSON only
if the chapter itself is revised.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_helpers import assert_printed, load_book
from attnlab.attention import (
    attention,
    causal_mask,
    multi_head_attention,
    online_softmax,
    sinusoidal_table_np,
    softmax,
)
from attnlab.attention.memory import (
    attention_matrix_bytes,
    gb,
    kv_cache_bytes,
    mb,
)
from attnlab.attention.precision import exp_overflow_count, format_limits

BOOK = load_book()
HC = BOOK["hand_computed"]

# §1.5.1: three positions, d = 2.
Q3 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
K3 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
V3 = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])


def test_softmax_1_0_1():
    assert_printed(softmax(np.array([1.0, 0.0, 1.0])), HC["softmax_1_0_1"], 3)


def test_three_token_example_with_and_without_scaling():
    out_u, _ = attention(Q3, K3, V3, scaled=False)
    out_s, _ = attention(Q3, K3, V3, scaled=True)
    assert_printed(out_u[2], HC["attention_pos3_output_unscaled"], 3, "unscaled")
    assert_printed(out_s[2], HC["attention_pos3_output_scaled"], 3, "scaled")


def test_causal_rows_of_the_three_token_example():
    out, w = attention(Q3, K3, V3, mask=causal_mask(3), scaled=False)
    for i, row in HC["causal_rows"].items():
        i = int(i)
        assert_printed(w[i, : i + 1], row["weights"], 3, f"weights row {i}")
        assert_printed(out[i], row["out"], 3, f"out row {i}")
        assert np.all(w[i, i + 1 :] == 0.0), "future positions must get exactly 0"
    assert w[0, 0] == 1.0  # position 0 sees only itself


def test_temperature_table():
    z = np.array([2.0, 1.0, 0.0])
    for tau, row in HC["temperature_z_2_1_0"].items():
        p = softmax(z / float(tau))
        entropy = -(p * np.log(p)).sum() / math.log(len(p))  # normalised entropy
        assert_printed(p, row["p"], 3, f"tau={tau}")
        if tau == "0.5":
            # Exact value 0.40147 rounds to 0.401; the book prints 0.402 (off by one in the
            # last digit, whether computed from exact or from rounded p). Allow one unit.
            assert abs(entropy - row["entropy"]) <= 1e-3 and round(entropy, 3) == 0.401
        else:
            assert_printed(entropy, row["entropy"], 3, f"entropy tau={tau}")


def test_saturated_softmax_10_0_0():
    p = softmax(np.array([10.0, 0.0, 0.0]))
    assert_printed(p[0], HC["softmax_10_0_0"][0], 5)
    assert_printed(p[1:], HC["softmax_10_0_0"][1:], 6)


def test_stable_softmax_100_101_102_and_the_naive_overflow():
    z = np.array([100.0, 101.0, 102.0])
    assert_printed(softmax(z), HC["stable_softmax_100_101_102"], 8)
    # The naive formula overflows in float32 (exp(100) > 3.4e38) and gives inf/inf = NaN.
    # In float64 it does not: exp(102) is only 2e44, so the book's "[nan nan nan]" needs float32.
    z32 = z.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        naive32 = np.exp(z32) / np.exp(z32).sum()
    assert np.isnan(naive32).all()
    assert np.isfinite(np.exp(z) / np.exp(z).sum()).all()
    assert_printed(softmax(z32), HC["stable_softmax_100_101_102"], 6)


def test_two_head_example():
    X = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    eye = np.eye(4)
    out, w = multi_head_attention(X, eye, eye, eye, eye, n_head=2, mask=causal_mask(2))
    assert_printed(out[0], [1.0, 0.0, 1.0, 0.0], 3, "position 1")
    assert_printed(out[1], HC["mha_2head_example_pos2"], 2, "position 2")
    assert_printed(w[:, 1], [[0.330, 0.670]] * 2, 3, "per-head weights, position 2")
    # Scaling by sqrt(d_model)=2 instead of sqrt(d_head)=sqrt(2) would give a different split.
    wrong = softmax(np.array([0.0, 1.0]) / 2.0)
    assert abs(wrong[0] - 0.330) > 0.03


def test_online_softmax_1_3_2():
    ref = HC["online_softmax_1_3_2"]
    p, trace = online_softmax([1.0, 3.0, 2.0], block_size=2, return_trace=True)
    assert [list(s.block) for s in trace] == ref["blocks"]
    assert trace[0].m == ref["m"] and trace[1].m == ref["m"]
    assert_printed(trace[0].l, ref["l1"], 3, "l1")
    assert_printed(trace[1].l, ref["l2"], 3, "l2")
    assert_printed(p, ref["p"], 3, "p")


def test_mask_with_zero_versus_minus_inf():
    ref = HC["mask_zero_vs_inf"]
    s = np.array(ref["scores"])
    keep = np.array([True, True, False])
    # masked_fill(mask == 0, 0.0): the masked score becomes 0 and still earns e^0 = 1.
    # (The book's snippet prints softmax of the unmasked scores, but the numbers it
    # shows, [0.244728 0.665241 0.090031], are those of [1, 2, 0].)
    with_zero = softmax(np.where(keep, s, 0.0))
    with_inf = softmax(np.where(keep, s, -np.inf))
    assert_printed(with_zero, ref["mask_with_0"], 6)
    assert_printed(with_inf, ref["mask_with_inf"], 6)
    assert with_inf[2] == 0.0


def test_scale_after_softmax():
    ref = HC["scale_after_softmax"]
    s = np.array(ref["s"])
    a = softmax(s)
    correct = softmax(s / 8.0)
    wrong = softmax(s) / 8.0
    assert_printed(a, [9.996646e-01, 3.353501e-04], 7, "unscaled")
    assert_printed(correct, ref["correct"], 6, "scaled before softmax")
    assert_printed(wrong.sum(), ref["wrong_row_sum"], 3, "row sum of scaled-after")
    assert_printed(wrong[0], 1.249581e-01, 7)
    assert_printed(wrong[1], 4.191877e-05, 11)


def test_float32_overflow_count_with_default_rng_0():
    ref = HC["overflow_float32"]
    assert exp_overflow_count(1.6) == (ref["std_1.6_inf"], ref["of"])
    assert exp_overflow_count(5477) == (ref["std_5477_inf"], ref["of"])


def test_float64_does_not_overflow_where_float32_does():
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float32(100.0)))
    assert_printed(np.exp(100.0), 2.688e43, None)


def test_over_scaling_degenerates_to_average():
    ref = HC["over_scaling_s_8_3_m2_0.5"]
    s = np.array([8.0, 3.0, -2.0, 0.5])
    assert_printed(softmax(s).max(), ref["unscaled_max"], 4)
    assert_printed(softmax(s / 8.0).max(), ref["sqrt64_max"], 4)
    assert_printed(softmax(s / 64.0), ref["div64"], 4)


def test_sinusoidal_rows_and_constant_step():
    ref = HC["sinusoidal_d4"]
    table = sinusoidal_table_np(200, 4)
    assert_printed(table[ref["pos"]], ref["rows"], 4)
    steps = np.linalg.norm(np.diff(table, axis=0), axis=1)
    assert_printed(steps, np.full_like(steps, ref["adjacent_distance"]), 4, "||PE(pos+1) - PE(pos)||")
    assert np.ptp(steps) < 1e-12  # exactly constant, not just to 4 digits
    # Wavelengths 2*pi and 2*pi*100 for d = 4 (§1.9.3)
    assert_printed([2 * math.pi, 2 * math.pi * 100], [6.3, 628.3], 1)


def test_sdpa_float64_agreement_of_section_1_14_1():
    torch.manual_seed(0)
    n, d = 6, 32
    Q, K, V = (torch.randn(2, 4, n, d, dtype=torch.float64) for _ in range(3))
    mask = torch.tril(torch.ones(n, n, dtype=torch.bool)).expand(2, 4, n, n)
    mine, _ = attention(Q.numpy(), K.numpy(), V.numpy(), mask=mask.numpy())
    ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask).numpy()
    err = np.abs(mine - ref).max()
    # The book measured 6.661e-16 = 3 ulp(1); the exact value depends on summation order,
    # so only the order of magnitude is a property worth pinning.
    assert err < 10 * HC["sdpa_float64_max_abs_err"]


def test_jacobian_entry_near_one_hot():
    p = np.array([0.9999, 0.00005, 0.00005])
    J = np.diag(p) - np.outer(p, p)  # dp_i/dz_j = p_i (delta_ij - p_j), eq. 1.16
    assert_printed(J[0, 0], HC["jacobian_entry_p_0.9999"], 8)
    one_hot = np.array([1.0, 0.0, 0.0])
    assert np.all(np.diag(one_hot) - np.outer(one_hot, one_hot) == 0.0)


def test_softmax_3_minus_3():
    assert_printed(softmax(np.array([3.0, -3.0])), [0.9975, 0.0025], 4)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_precision_table_of_section_1_17_1(dtype):
    ref = BOOK["precision_1_17"][dtype]
    row = {r["dtype"]: r for r in format_limits()}[dtype]
    assert_printed(row["max"], ref["max"], None, f"{dtype} max")
    assert_printed(row["exp_limit"], ref["exp_limit"], 1, f"{dtype} exp limit")
    assert_printed(row["eps"], ref["eps"], None, f"{dtype} eps")


def test_memory_formulas():
    ref = BOOK["memory_formulas"]
    per_token = kv_cache_bytes(80, 64, 128, 1)
    assert per_token == ref["kv_cache_llama2_70b_per_token_bytes"]
    assert_printed(gb(kv_cache_bytes(80, 64, 128, 4096)), ref["kv_cache_llama2_70b_4096_GB"], 1)
    per_mb = ref["kv_cache_per_token_MB"]
    assert_printed(mb(kv_cache_bytes(80, 64, 128, 1)), per_mb["MHA"], 1)
    assert_printed(mb(kv_cache_bytes(80, 8, 128, 1)), per_mb["GQA_g8"], 2)
    assert_printed(mb(kv_cache_bytes(80, 1, 128, 1)), per_mb["MQA"], 2)
    assert_printed(gb(attention_matrix_bytes(4096, 32, 32)), ref["attention_matrix_n4096_h32_L32_fp16_GB"], 0)
    assert_printed(gb(attention_matrix_bytes(2048, 16, 24)), ref["attention_matrix_n2048_h16_L24_fp16_GB"], 2)
    assert_printed(mb(attention_matrix_bytes(8192, 1, 1)), ref["single_head_n8192_fp16_MB"], 0)
    # The book's units are decimal: in binary units the same bytes are round numbers instead.
    assert kv_cache_bytes(80, 64, 128, 4096) == 10 * 2**30
    assert attention_matrix_bytes(4096, 32, 32) == 32 * 2**30
