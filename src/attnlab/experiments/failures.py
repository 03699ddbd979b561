"""The four injected bugs of §1.11.7, trained side by side with the correct attention.

Every variant trains from the same seed, so from the same initial weights and
on the same batches; only ``Config.bug`` differs. The symptoms:

- loss_start, loss_end: training loss of the first and last step
- final_grad_norm: gradient norm of the last step (before clipping)
- weight_entropy: the trainer's normalised weight entropy of the last step,
  averaged over layers. It divides by log(i+1), the number of keys row i may
  see, so a mask that leaks to the future can push it above 1.
- diag_weight: mean weight of a query on its own position (validation batches)
- row_sum_max: largest row sum of the attention weights (1 unless the scale is
  applied after the softmax, then 1/sqrt(d_head))
- future_weight_max / _mean: weight that reaches positions j > i (0 unless the
  mask leaks)
- val_loss_end: validation loss at the end (the leak also helps there: the
  validation batches are teacher-forced as well; only generation exposes it)
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch

from ..config import BUGS, Config
from ..diagnostics import head_metrics
from ..model import TinyGPT
from ..tokenizer import CharTokenizer
from .common import book_values, format_table, provenance, validation_batches

VARIANTS = ("correct",) + BUGS
LABELS = {"correct": "正确实现 / correct", "mask_zero": "① 掩码用 0 / mask_zero",
          "scale_after_softmax": "② 缩放位置错 / scale_after_softmax",
          "no_max_subtraction": "③ 缺数值稳定 / no_max_subtraction",
          "divide_by_d_k": "④ 误用 d_k / divide_by_d_k"}
COLUMNS = ("loss_start", "loss_end", "final_grad_norm", "weight_entropy", "diag_weight",
           "row_sum_max", "future_weight_max", "val_loss_end")


@torch.no_grad()
def pattern_symptoms(model: TinyGPT, batches) -> dict[str, float]:
    """Diagonal weight, row sums and weight on future positions over ``batches``."""
    model.eval()
    diag, row_max, fut_max, fut_sum, n_rows = [], 0.0, 0.0, 0.0, 0
    for x, _ in batches:
        for p in model.attention_patterns(x.to(next(model.parameters()).device)):
            p = p.float()                                      # (B, nh, T, T)
            diag.append(head_metrics(p)["diag"].mean())
            row_max = max(row_max, float(p.sum(-1).max()))
            future = p.triu(diagonal=1).sum(-1)                # (B, nh, T): weight on j > i
            fut_max = max(fut_max, float(future.max()))
            fut_sum += float(future.sum())
            n_rows += future.numel()
    return {"diag_weight": float(torch.stack(diag).mean()), "row_sum_max": row_max,
            "future_weight_max": fut_max, "future_weight_mean": fut_sum / n_rows}


def variant_symptoms(model: TinyGPT, history, cfg: Config, eval_batches, seconds: float = 0.0) -> dict:
    """The row of the symptom table for one trained variant."""
    recs = history.records
    last_layers = next((r["layers"] for r in reversed(recs) if r.get("layers")), None)
    val = history.val
    out = {
        "bug": cfg.bug,
        "loss_start": recs[0]["loss"],
        "loss_end": recs[-1]["loss"],
        "final_grad_norm": recs[-1]["grad_norm"],
        "weight_entropy": (sum(l["weight_entropy"] for l in last_layers) / len(last_layers)
                           if last_layers else None),
        "val_loss_end": val[-1][1] if val else None,
        "diverged_at": history.diverged_at,
        "loss_curve": [r["loss"] for r in recs],
    }
    out.update(pattern_symptoms(model, eval_batches))
    out["seconds"] = round(seconds, 3)
    return out


def run(text: str, cfg: Config | None = None, *, steps: int | None = 300,
        variants: Sequence[str] = VARIANTS, corpus: str | None = None, eval_batches: int = 4,
        root: str | Path | None = None, executor: str = "serial", workers: int | None = None,
        ray_address: str | None = None, progress: bool = False) -> dict:
    """Train the correct model and each bug with the same seed and batches; return the symptoms.

    The runs go through :mod:`attnlab.runner` into ``root/<variant>`` (a temporary
    folder when None), so a rerun into the same root reuses what finished.
    """
    import tempfile

    from ..runner import Run, execute

    cfg = (cfg or Config()).replace(bug=None)
    if steps is not None:
        cfg = cfg.replace(max_steps=steps)
    if cfg.record_every == 0:
        cfg = cfg.replace(record_every=1)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        from .common import ExperimentError

        raise ExperimentError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    tok = CharTokenizer(text, cfg.vocab_size)
    batches = validation_batches(text, tok, cfg, eval_batches)
    t0 = time.perf_counter()
    cfgs = {v: cfg.replace(bug=None if v == "correct" else v) for v in variants}
    with tempfile.TemporaryDirectory(prefix="attnlab-failures-") as tmp:
        done = execute([Run(v, c) for v, c in cfgs.items()], text, root if root is not None else tmp,
                       executor=executor, workers=workers, ray_address=ray_address, progress=progress,
                       desc="failures")
        results = {v: variant_symptoms(done[v].model, done[v].history, cfgs[v], batches, done[v].seconds)
                   for v in variants}
    return {"kind": "failure_symptoms", "config": cfg.to_dict(), "corpus": corpus or "data/corpus.txt",
            "d_head": cfg.d_head, "expected_row_sum_after_softmax_scale": cfg.d_head ** -0.5,
            "variants": results, "book": book_values("failure_symptoms_1_11_7"),
            "seconds": round(time.perf_counter() - t0, 3), **provenance()}


def symptoms_table(result: dict, with_book: bool = True) -> str:
    headers = ["变体 / variant", "loss 起 / start", "loss 终 / end", "末梯度 / grad", "权重熵 / entropy",
               "对角 / diag", "行和最大 / row sum", "未来权重 / future", "验证 / val"]
    book = result.get("book") if with_book else None
    rows = []
    for name, v in result["variants"].items():
        rows.append([LABELS.get(name, name), v["loss_start"], v["loss_end"], v["final_grad_norm"],
                     v["weight_entropy"], v["diag_weight"], v["row_sum_max"], v["future_weight_max"],
                     v["val_loss_end"]])
        if book and name in book:
            rows.append(["  书 / book"] + list(book[name]) + [None, None])
    return format_table(headers, rows, fmt=".4f")
