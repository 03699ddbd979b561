"""What float32, float16 and bfloat16 can hold, and how attention trips over it (§1.11.3, §1.17, ⑯).

Every function returns plain data (floats, bools, lists of dicts); the ``attnlab
precision`` command prints them. Nothing here is hard-coded from the book: the
limits come from ``torch.finfo`` and the demos run the arithmetic in the dtype.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = [
    "DTYPES",
    "format_limits",
    "fp16_overflow_table",
    "bf16_rounding_demo",
    "exp_overflow_count",
    "low_precision_sum_demo",
    "additive_mask_demo",
    "fully_masked_row_demo",
]

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _dtype(name_or_dtype) -> tuple[str, torch.dtype]:
    if isinstance(name_or_dtype, torch.dtype):
        for name, dt in DTYPES.items():
            if dt == name_or_dtype:
                return name, dt
        return str(name_or_dtype).replace("torch.", ""), name_or_dtype
    if name_or_dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {name_or_dtype!r}")
    return name_or_dtype, DTYPES[name_or_dtype]


def format_limits(dtypes=("float32", "float16", "bfloat16")) -> list[dict]:
    """One row per format: largest finite value, exp overflow threshold ln(max), epsilon.

    ``exp_limit`` is the logit z above which exp(z) is inf in that format - the
    quantity the stable softmax protects against (§1.17.1).
    """
    rows = []
    for d in dtypes:
        name, dt = _dtype(d)
        fi = torch.finfo(dt)
        rows.append(
            {
                "dtype": name,
                "bits": fi.bits,
                "max": float(fi.max),
                "exp_limit": math.log(fi.max),
                "eps": float(fi.eps),
                "tiny": float(fi.tiny),  # smallest normal number: where fp16 gradients start to underflow
            }
        )
    return rows


def fp16_overflow_table(d_heads=(32, 64, 128, 256), n_std: float = 4.0) -> list[dict]:
    """Unscaled logits have std sqrt(d_head) (§1.7.2); is n_std of them past exp's limit?

    Returns one row per d_head with the std, the "common maximum" n_std * std, and
    whether exp of it overflows in float16, bfloat16 and float32 (§1.17.2).
    """
    limits = {r["dtype"]: r["exp_limit"] for r in format_limits()}
    rows = []
    for d in d_heads:
        if int(d) != d or d < 1:
            raise ValueError(f"d_heads must hold positive integers, got {d!r}")
        std = math.sqrt(d)
        top = n_std * std
        rows.append(
            {
                "d_head": int(d),
                "std": std,
                "common_max": top,
                "overflows_float16": top > limits["float16"],
                "overflows_bfloat16": top > limits["bfloat16"],
                "overflows_float32": top > limits["float32"],
                # Verified by computing, not just by comparing with the threshold:
                "exp_in_float16": float(torch.exp(torch.tensor(top, dtype=torch.float16)).float()),
            }
        )
    return rows


def bf16_rounding_demo(value: float = 1.001) -> dict:
    """``value`` stored in each format and read back as a Python float (§1.17.4).

    1.001 survives float16 (10 mantissa bits) as 1.000977 but becomes exactly 1.0 in
    bfloat16 (7 mantissa bits): range was bought with precision.
    """
    x = torch.tensor([value], dtype=torch.float32)
    out = {"value": value}
    for name, dt in DTYPES.items():
        out[name] = float(x.to(dt).float())
    return out


def exp_overflow_count(std: float, seed: int = 0, shape=(4, 8), dtype=np.float32) -> tuple[int, int]:
    """(number of inf, total) in exp(z), z ~ N(0, std) drawn with ``default_rng(seed)`` (§1.11.3)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, std, size=shape).astype(dtype)
    with np.errstate(over="ignore"):
        e = np.exp(z)
    return int(np.isinf(e).sum()), int(e.size)


def low_precision_sum_demo(n: int = 4096, dtype="bfloat16") -> dict:
    """Add n equal softmax weights 1/n one at a time in ``dtype`` (checkpoint ⑰).

    Once the running sum is large enough, 1/n is below half an ulp of it and every
    further addition is rounded away, so the "row sum" stalls far below 1.
    """
    name, dt = _dtype(dtype)
    w = torch.tensor(1.0 / n, dtype=dt)
    total = torch.tensor(0.0, dtype=dt)
    for _ in range(n):
        total = total + w  # one rounding per step, as a naive low-precision reduction does
    return {"dtype": name, "n": n, "weight": float(w.float()), "row_sum": float(total.float())}


# ----------------------------------------------------------------------------- masks (⑯)

_MASK_VARIANTS = (
    ("masked_fill(-inf)", "masked_fill(~mask, -inf)"),
    ("add -1e9 (python float)", "scores + (-1e9) * (1 - mask)"),
    ("add -1e9 (tensor in dtype)", "scores + torch.tensor(-1e9, dtype) * (1 - mask)"),
    ("add -1e4", "scores + (-1e4) * (1 - mask)"),
)


def _apply_mask(variant: str, scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    dt = scores.dtype
    keep_f = keep.to(dt)
    if variant == "masked_fill(-inf)":
        return scores.masked_fill(~keep, float("-inf"))
    if variant == "add -1e9 (python float)":
        return scores + (-1e9) * (1 - keep_f)
    if variant == "add -1e9 (tensor in dtype)":
        # The constant is rounded to ``dtype`` before use: in float16 -1e9 becomes -inf,
        # and -inf * 0 on the visible keys is NaN.
        return scores + torch.tensor(-1e9, dtype=dt) * (1 - keep_f)
    if variant == "add -1e4":
        return scores + (-1e4) * (1 - keep_f)
    raise ValueError(f"unknown mask variant {variant!r}")


def additive_mask_demo(logit_scales=(1.0, 100.0, 16656.0), dtypes=("float32", "float16", "bfloat16")) -> list[dict]:
    """Additive masks vs masked_fill, per dtype and logit scale (checkpoint ⑯, §1.22.15).

    The score row is ``scale * [0.3, 0.1, -0.5, 1.0]`` with the last key masked: a
    future token that happens to score highest, the case a mask exists for. 16656 is
    the largest |logit| the chapter measured in the unscaled d_head = 256 model; at
    that scale a -1e4 "big negative" no longer pushes the masked key below the others. Each row reports what the masked key received:

    * ``masked_weight``: weight on the masked key (must be exactly 0),
    * ``nan``: whether any weight is NaN,
    * ``max_err``: largest error on the visible weights against a float64 masked_fill,
    * ``verdict``: "ok", "NaN" or "leak".
    """
    base = torch.tensor([0.3, 0.1, -0.5, 1.0], dtype=torch.float64)
    keep = torch.tensor([True, True, True, False])
    rows = []
    for scale in logit_scales:
        s64 = base * scale
        ref = torch.softmax(s64.masked_fill(~keep, float("-inf")), -1)
        for d in dtypes:
            name, dt = _dtype(d)
            s = s64.to(dt)
            for variant, code in _MASK_VARIANTS:
                w = torch.softmax(_apply_mask(variant, s, keep).float(), -1)  # softmax in fp32 (§1.17.5)
                nan = bool(torch.isnan(w).any())
                masked_w = float(w[~keep].max())
                err = float((w.double() - ref)[keep].abs().max())
                verdict = "NaN" if nan else ("leak" if masked_w > 0 else "ok")
                rows.append(
                    {
                        "logit_scale": float(scale),
                        "dtype": name,
                        "variant": variant,
                        "code": code,
                        "masked_weight": masked_w,
                        "nan": nan,
                        "max_err": err,
                        "verdict": verdict,
                    }
                )
    return rows


def fully_masked_row_demo(dtypes=("float32", "float16", "bfloat16")) -> list[dict]:
    """A query row whose every key is masked (a padded query under a bad mask, ⑮).

    masked_fill(-inf) gives NaN - loud. The additive mask gives a uniform row over
    keys that should not be seen - silent. Neither is right; the fix is a mask with a
    visible diagonal plus ignore_index in the loss (see ``attnlab.attention.masks``).
    """
    scores = torch.tensor([0.3, 1.0, -0.5, 0.8])
    keep = torch.zeros(4, dtype=torch.bool)
    rows = []
    for d in dtypes:
        name, dt = _dtype(d)
        for variant, _code in _MASK_VARIANTS[:2]:
            w = torch.softmax(_apply_mask(variant, scores.to(dt), keep).float(), -1)
            rows.append(
                {
                    "dtype": name,
                    "variant": variant,
                    "weights": [float(x) for x in w],
                    "nan": bool(torch.isnan(w).any()),
                }
            )
    return rows
