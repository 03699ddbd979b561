"""The data of the /next page (从文字到下一个字 / text to the next character): the chapter's opening five
steps on a loaded model, for one text.

    text -> ids (unknown characters -> <unk>) -> token embedding + position embedding
         -> each block: x += attention(LN(x)), x += MLP(LN(x))  (the residual stream's size after each)
         -> final LN -> head -> logits of the next character (the page applies the temperature and samples)

:func:`next_payload` runs the model's own modules one by one, in float64 (the float32 weights widened
exactly, as /api/attention does), so the numbers are the model's and the static site's in-browser
forward (``static/tinygpt.js``, float64 too) can be held to them within a tight tolerance. The logits
it returns are those of ``model(idx)`` (tests/test_web_nextchar.py checks both).

:func:`forward_files` gives the static site what its in-browser forward needs beyond the ONNX graph's
weights (the graph stops at the last layer's attention pattern): the remaining tensors as one more
external file, and an index of every tensor.
"""

from __future__ import annotations

import math
from typing import Any

FORWARD_FILE = "rest.bin"  # the tensors the ONNX graph leaves out, for the in-browser forward
ALIGN = 64
# the configurations the in-browser forward computes (the shipped case models are all of this kind)
BROWSER_CONFIG = {"pos": "learned", "norm": "layernorm", "residual": True, "qk_norm": False, "learn_temp": False}


def _norms(x) -> list[float]:
    """‖x_t‖ of each position t of a (1, T, C) tensor."""
    return [float(v) for v in x[0].norm(dim=-1).tolist()]


def next_payload(model, cfg, ids: list[int]) -> dict[str, Any]:
    """Every step of the path from ``ids`` to the next character's logits, in float64 (``model`` is the
    float64 copy). Norms are per position; the attention rows are the last position's, per head."""
    import torch

    device = next(model.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)
    T = idx.shape[1]
    with torch.no_grad(), model.capture("tap_pattern") as taps:
        pos, pos_vec = model.positions(0, T, device)
        tok = model.tok_emb(idx)
        if cfg.emb_scale:
            tok = tok * math.sqrt(cfg.d_model)
        x = tok + pos_vec if pos_vec is not None else tok
        embedding = {
            "token_norm": _norms(tok),
            "position_norm": _norms(pos_vec[None]) if pos_vec is not None else None,
            "sum_norm": _norms(x),
        }
        blocks = []
        for i, block in enumerate(model.blocks):
            a = block.attn(block.ln1(x), pos)
            x = x + a if block.residual else a
            after_attn = x
            m = block.mlp(block.ln2(x))
            x = x + m if block.residual else m
            pattern = taps[f"blocks.{i}.attn.tap_pattern"][-1][0]  # (nh, T, T)
            blocks.append(
                {
                    "attn_norm": _norms(a),
                    "after_attn": _norms(after_attn),
                    "mlp_norm": _norms(m),
                    "after_mlp": _norms(x),
                    "attention": [[float(w) for w in pattern[h, -1].tolist()] for h in range(pattern.shape[0])],
                }
            )
        h = model.ln_f(x)
        logits = model.head(h)[0, -1]
    return {
        "embedding": embedding,
        "blocks": blocks,
        "final_norm": _norms(h),
        "logits": [float(v) for v in logits.tolist()],
    }


def forward_files(state: dict, onnx_tensors: list[dict], tied: bool) -> tuple[list[dict], list[dict]]:
    """(index, rest) for the static site's in-browser forward: every tensor of the checkpoint's state_dict
    is either in the graph's ``weights.bin`` (``onnx_tensors``, the manifest's list) or in FORWARD_FILE,
    whose layout ``rest`` gives ({"key", "shape", "offset", "length"}: little-endian float32 at aligned
    offsets, written by ``attnlab.web.site.weights_blob``); with ``tied`` weights the head is the token
    embedding and is not stored twice. The index lists every tensor as {"key", "file", "shape", "offset",
    "length"}."""
    have = {t["key"] for t in onnx_tensors}
    index = [{**{k: t[k] for k in ("key", "shape", "offset", "length")}, "file": "weights.bin"} for t in onnx_tensors]
    rest, offset = [], 0
    for key, value in state.items():
        if key in have or (tied and key == "head.weight"):
            continue
        length = 4 * value.numel()
        rest.append({"key": key, "shape": list(value.shape), "offset": offset, "length": length})
        offset += -(-length // ALIGN) * ALIGN
    index += [{**t, "file": FORWARD_FILE} for t in rest]
    return index, rest


def browser_config(cfg: dict) -> dict | None:
    """The fields of a checkpoint's config (a dict) that the in-browser forward reads, or None when it
    cannot compute that model (it knows the chapter's model: learned positions, LayerNorm, residual
    blocks, multi-head attention without extras)."""
    if any(cfg.get(k, v) != v for k, v in BROWSER_CONFIG.items()):
        return None
    if cfg.get("n_kv_head") not in (None, cfg.get("n_head")) or cfg.get("emb_scale") or cfg.get("bug") is not None:
        return None
    keys = ("n_layer", "n_head", "d_model", "d_ff", "block_size", "tie_weights")
    out = {k: cfg.get(k) for k in keys}
    out["scale_rule"] = cfg.get("attn_scale") or ("1/sqrt(d)" if cfg.get("scaled", True) else "none")
    out["d_head"] = out["d_model"] // out["n_head"]
    return out
