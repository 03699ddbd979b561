"""The ablation checklist of §1.13.4: one design element off at a time.

The baseline and every change train from the same seed (same initial weights
where the shapes agree, same batches); only one Config field differs. Each row
reports the final validation loss, its difference to the baseline, whether the
run diverged, the largest gradient norm and loss jump (warmup and clipping
show up there, not in the final loss) and the parameter count (untied weights
add an output matrix).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import ABLATIONS, Config
from .common import ExperimentError, format_table, provenance

if TYPE_CHECKING:
    from ..runner import ExecutorOptions

CHANGES = ABLATIONS  # the checklist, one home: attnlab.config.ABLATIONS
LABELS = {
    "baseline": ("基线", "baseline", "—"),
    "no_scaling": ("去掉 √d_k 缩放", "no scaling", "小模型上影响小，大模型上灾难 / small here, disastrous when large"),
    "no_residual": ("去掉残差", "no residual", "直接训不动 / does not train"),
    "no_layernorm": ("去掉 LayerNorm", "no LayerNorm", "loss 抖动、收敛慢 / noisy, slow"),
    "untied": ("不共享权重", "untied weights", "参数多 36%，效果略降 / +36% params, slightly worse"),
    "no_positions": ("去掉位置编码", "no positions", "完全学不会顺序 / cannot learn order"),
    "no_warmup": ("去掉 warmup", "no warmup", "前期 loss 尖刺 / early loss spikes"),
    "no_clipping": ("去掉梯度裁剪", "no clipping", "偶发 nan / occasional NaN"),
}


def checklist_row(history, model, seconds: float) -> dict:
    """One row of the checklist from a finished run (the lab book reads its runs the same way)."""
    recs = history.records
    losses = [r["loss"] for r in recs]
    val = history.val
    val_end = val[-1][1] if val else None
    jumps = [b - a for a, b in zip(losses, losses[1:]) if math.isfinite(a) and math.isfinite(b)]
    diverged = history.diverged_at is not None or val_end is None or not math.isfinite(val_end)
    return {
        "val_loss_end": val_end,
        "loss_start": losses[0] if losses else None,
        "loss_end": losses[-1] if losses else None,
        "diverged": diverged,
        "diverged_at": history.diverged_at,
        "max_grad_norm": max((r["grad_norm"] for r in recs if math.isfinite(r["grad_norm"])), default=None),
        "max_loss_jump": max(jumps, default=0.0),
        "params": model.num_params(),
        "seconds": round(seconds, 3),
    }


def clip_activity(records: list[dict], grad_clip: float, warmup: int) -> dict:
    """How much work gradient clipping had after warmup: the share of steps whose
    gradient norm (recorded before clipping) exceeded ``grad_clip``, and the largest
    norm, i.e. the strongest shrink clipping applied or would have applied."""
    norms = [r["grad_norm"] for r in records if r["step"] >= warmup and math.isfinite(r["grad_norm"])]
    if not norms or grad_clip <= 0:
        raise ExperimentError("clip_activity needs finite gradient norms after warmup and a positive threshold")
    return {
        "steps": len(norms),
        "clipped_share": sum(g > grad_clip for g in norms) / len(norms),
        "max_grad_norm": max(norms),
        "max_over_threshold": max(norms) / grad_clip,
    }


def run(
    text: str,
    cfg: Config | None = None,
    *,
    steps: int | None = None,
    changes: list[str] | None = None,
    corpus: str | None = None,
    root: str | Path | None = None,
    options: ExecutorOptions | None = None,
) -> dict:
    """Train the baseline and each one-variable change; Δ is against the baseline.

    The runs go through :mod:`attnlab.runner` into ``root/<change>`` (a temporary
    folder when None), so a rerun into the same root reuses what finished; ``options``
    says how (attnlab.runner.ExecutorOptions; default: serial, no progress bar).
    """
    import tempfile

    from ..runner import ExecutorOptions, Run, execute

    options = options or ExecutorOptions(progress=False)

    cfg = cfg or Config()
    if steps is not None:
        cfg = cfg.replace(max_steps=steps)
    names = changes or list(CHANGES)
    unknown = [n for n in names if n not in CHANGES]
    if unknown:
        raise ExperimentError(f"unknown change(s) {', '.join(unknown)}; known: {', '.join(CHANGES)}")
    if "baseline" not in names:
        names = ["baseline"] + names
    rows: dict[str, dict] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attnlab-ablate-") as tmp:
        done = execute(
            [Run(name, cfg.replace(**CHANGES[name])) for name in names],
            text,
            root if root is not None else tmp,
            options,
            desc="ablate",
        )
        for name in names:
            f = done[name]
            rows[name] = {
                "change": CHANGES[name],
                "config": cfg.replace(**CHANGES[name]).to_dict(),
                **checklist_row(f.history, f.model, f.seconds),
            }
    base = rows["baseline"]
    for r in rows.values():
        ok = r["val_loss_end"] is not None and base["val_loss_end"] is not None and not r["diverged"]
        r["delta_val_loss"] = r["val_loss_end"] - base["val_loss_end"] if ok else None
        r["params_ratio"] = r["params"] / base["params"]
    return {
        "kind": "ablation_checklist",
        "config": cfg.to_dict(),
        "corpus": corpus or "attnlab/data/corpus.txt",
        "rows": rows,
        "seconds": round(time.perf_counter() - t0, 3),
        **provenance(),
    }


def checklist_table(result: dict) -> str:
    headers = [
        "要素 / change",
        "验证 loss / val",
        "Δ val",
        "发散 / diverged",
        "最大梯度 / max grad",
        "最大跳升 / max jump",
        "参数 / params",
        "书中说明 / book",
    ]
    rows = []
    for name, r in result["rows"].items():
        zh, en, book = LABELS.get(name, (name, name, ""))
        rows.append(
            [
                f"{zh} / {en}",
                r["val_loss_end"],
                None if r["delta_val_loss"] is None else f"{r['delta_val_loss']:+.3f}",
                "是 yes" if r["diverged"] else "否 no",
                r["max_grad_norm"],
                r["max_loss_jump"],
                f"{r['params']:,} ({r['params_ratio'] - 1:+.0%})",
                book,
            ]
        )
    return format_table(headers, rows)
