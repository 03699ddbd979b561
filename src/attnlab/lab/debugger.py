"""AttentionDebugger (exercise 4): watches training and explains a NaN.

Attach it as a training callback (``train(..., callbacks=[AttentionDebugger()])``
or ``attnlab train --debug``). At every step that carries per-layer
diagnostics it checks the three numbers of §1.13.1 and warns when

- the weight entropy of a layer stays above 0.99 (attention has become an
  average: over-scaling, e.g. d_k instead of sqrt(d_k)) -- only after a grace
  period, since every head starts out uniform;
- the weight entropy drops below 0.01, or the logit standard deviation passes
  a threshold (missing scaling, or q and k growing without bound);
- the Jacobian norm of the softmax falls under 1e-4 (the layer is frozen:
  gradients no longer pass through it).

Every ``probe_every`` steps it also runs a fixed input through the model and
checks two invariants no loss curve shows (§1.11.7): every row of weights sums
to 1, and no weight reaches a future position.

On a NaN/inf loss it re-runs the failing batch through the four checkpoints
of §1.13.3 -- ① scores, ② after the mask, ③ exp, ④ normalisation -- layer by
layer, replayed from each layer's q and k (captured through the model's taps) by
``attnlab.attention.faults.attention_stages`` (so an injected bug is replayed too), and names the first stage that broke with its
layer and head. Messages go to ``print_fn``; everything is also kept in
``warnings`` and ``nan_report``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ..attention.faults import attention_stages
from ..model import TinyGPT

STAGES = {
    0: (
        "input",
        "输入 q/k 已非有限 / q or k already non-finite",
        "the layer's input is broken: an earlier layer, the embeddings or the weights / 上一层、嵌入或权重已坏",
    ),
    1: (
        "scores",
        "① scores",
        "q·k overflowed: q, k themselves blew up (init or learning rate) / q、k 数值本身炸了（初始化或学习率）",
    ),
    2: ("mask", "② 掩码后 / after mask", "a row with no visible key (e.g. padding masks a whole row) / 整行被屏蔽"),
    3: (
        "exp",
        "③ exp",
        "exp overflow: no max subtraction, or logits too large without scaling / "
        "缺数值稳定，或缩放缺失导致 logits 过大",
    ),
    4: (
        "normalize",
        "④ 归一化 / normalize",
        "inf/inf or 0/0 in the normalisation; the root is usually at ③ / inf/inf 或 0/0，根源通常在 ③",
    ),
}


# ------------------------------------------------------------------------ NaN bisection
def _broken(stage: int, t: Tensor) -> Tensor:
    """(B, nh) bool: which batch rows / heads are broken at ``stage``."""
    if stage == 2:  # -inf is the mask itself; NaN, +inf or a row with nothing visible is not
        bad = torch.isnan(t) | (t == float("inf"))
        bad = bad.any(-1) | ~torch.isfinite(t).any(-1)
    elif stage == 3:  # also a row whose exps all underflowed to 0 (0/0 next)
        bad = ~torch.isfinite(t).all(-1) | (t.sum(-1) == 0)
    else:
        bad = ~torch.isfinite(t).all(-1)
    return bad.any(-1)  # (B, nh)


@torch.no_grad()
def diagnose_nonfinite(model: TinyGPT, x: Tensor) -> dict:
    """Bisect a non-finite forward on ``x`` (B, T) to the first broken stage, layer and head."""
    bad_params = [n for n, p in model.named_parameters() if not torch.isfinite(p).all()]
    if bad_params:
        return {
            "stage": "parameters",
            "stage_index": -1,
            "layer": None,
            "head": None,
            "parameters": bad_params[:10],
            "cause": "weights are already non-finite (an update with inf/NaN gradients) / "
            "权重已经是 nan/inf（上一次更新的梯度出了问题）",
            "checks": [],
        }
    was = model.training
    model.eval()
    try:
        with model.capture("tap_q", "tap_k") as store:
            logits, _ = model(x.to(next(model.parameters()).device))
    finally:
        model.train(was)
    checks = []  # per layer: [(stage, finite?, detail)]
    for layer, block in enumerate(model.blocks):
        q = store[f"blocks.{layer}.attn.tap_q"][0]
        k = store[f"blocks.{layer}.attn.tap_k"][0]
        tensors = [torch.cat([q, k], dim=-2)] + attention_stages(q, k, block.attn.scale, model.cfg.bug)
        for stage, t in enumerate(tensors):
            bad = _broken(stage, t)
            finite = t[torch.isfinite(t)]
            detail = {
                "stage": STAGES[stage][0],
                "ok": not bool(bad.any()),
                # after the mask, -inf above the diagonal is expected: count +inf only
                "inf": int((t == float("inf")).sum() if stage == 2 else torch.isinf(t).sum()),
                "nan": int(torch.isnan(t).sum()),
                "min": float(finite.min()) if finite.numel() else None,
                "max": float(finite.max()) if finite.numel() else None,
            }
            checks.append({"layer": layer, **detail})
            if bad.any():
                head = int(bad.any(0).nonzero()[0])
                return {
                    "stage": STAGES[stage][0],
                    "stage_index": stage,
                    "layer": layer,
                    "head": head,
                    "heads": bad.any(0).nonzero().flatten().tolist(),
                    "label": STAGES[stage][1],
                    "cause": STAGES[stage][2],
                    "checks": checks,
                }
    logits_ok = bool(torch.isfinite(logits).all())
    return {
        "stage": "outside_attention" if not logits_ok else None,
        "stage_index": None,
        "layer": None,
        "head": None,
        "checks": checks,
        "cause": (
            "every attention stage is finite; the logits are not: look at the FFN, the "
            "output head or the loss / 注意力各步都正常，问题在 FFN、输出层或 loss"
        )
        if not logits_ok
        else "the forward is finite on this batch / 这批数据前向正常",
    }


# ----------------------------------------------------------------------------- debugger
class AttentionDebugger:
    """Training callback that warns on attention symptoms and bisects NaNs (exercise 4)."""

    def __init__(
        self,
        print_fn: Callable[[str], None] | None = print,
        *,
        entropy_high: float = 0.99,
        entropy_low: float = 0.01,
        logit_std_max: float = 10.0,
        jacobian_min: float = 1e-4,
        grace: int = 200,
        patience: int = 5,
        probe_every: int = 100,
        row_sum_tol: float = 1e-3,
        future_tol: float = 1e-6,
    ):
        self.print_fn = print_fn
        self.entropy_high, self.entropy_low = entropy_high, entropy_low
        self.logit_std_max, self.jacobian_min = logit_std_max, jacobian_min
        self.grace, self.patience, self.probe_every = grace, patience, probe_every
        self.row_sum_tol, self.future_tol = row_sum_tol, future_tol
        self.warnings: list[dict] = []
        self.nan_report: dict | None = None
        self._streak: dict[tuple[int, str], int] = {}
        self._active: set[tuple[int, str]] = set()
        self._probe: Tensor | None = None

    # ------------------------------------------------------------------- reporting
    def _say(self, msg: str) -> None:
        if self.print_fn is not None:
            self.print_fn(msg)

    def _condition(
        self,
        step: int,
        layer: int,
        kind: str,
        hit: bool,
        value: float,
        threshold: float,
        message: str,
        patience: int | None = None,
    ) -> None:
        """Warn once when a condition has held ``patience`` times in a row; re-arm when it clears."""
        key = (layer, kind)
        if not hit:
            self._streak.pop(key, None)
            self._active.discard(key)
            return
        self._streak[key] = self._streak.get(key, 0) + 1
        if self._streak[key] >= (patience or self.patience) and key not in self._active:
            self._active.add(key)
            self.warnings.append(
                {"step": step, "layer": layer, "kind": kind, "value": value, "threshold": threshold, "message": message}
            )
            self._say(f"[debugger] step {step} 层 layer {layer}: {message}")

    # --------------------------------------------------------------------- checks
    def check_record(self, step: int, record: dict) -> None:
        """The three numbers of §1.13.1, from the trainer's per-layer record."""
        for layer, d in enumerate(record.get("layers") or []):
            ent, std, jac = d.get("weight_entropy"), d.get("logit_std"), d.get("jacobian_fro")
            if ent is not None and math.isfinite(ent):
                self._condition(
                    step,
                    layer,
                    "entropy_high",
                    step >= self.grace and ent > self.entropy_high,
                    ent,
                    self.entropy_high,
                    f"熵 {ent:.4f} > {self.entropy_high}：注意力接近平均（缩放过度？用了 d_k 而不是 "
                    f"√d_k）/ entropy above {self.entropy_high}: attention is an average "
                    f"(over-scaled? d_k instead of sqrt(d_k))",
                )
                self._condition(
                    step,
                    layer,
                    "entropy_low",
                    ent < self.entropy_low,
                    ent,
                    self.entropy_low,
                    f"熵 {ent:.4f} < {self.entropy_low}：注意力接近 one-hot（缩放缺失或 q、k 尺度失控）"
                    f"/ entropy below {self.entropy_low}: attention is one-hot (missing scaling "
                    f"or q, k out of scale)",
                )
            if std is not None and math.isfinite(std):
                self._condition(
                    step,
                    layer,
                    "logit_std",
                    std > self.logit_std_max,
                    std,
                    self.logit_std_max,
                    f"logit 标准差 {std:.3g} > {self.logit_std_max}：softmax 将饱和 / logit std "
                    f"above {self.logit_std_max}: the softmax is saturating",
                )
            if jac is not None and math.isfinite(jac):
                self._condition(
                    step,
                    layer,
                    "jacobian_small",
                    jac < self.jacobian_min,
                    jac,
                    self.jacobian_min,
                    f"‖J‖_F {jac:.2e} < {self.jacobian_min:g}：注意力层已冻结，梯度传不回去 / "
                    f"softmax Jacobian below {self.jacobian_min:g}: the layer is frozen",
                )

    @torch.no_grad()
    def probe(self, step: int, model: TinyGPT) -> None:
        """Rows sum to 1 and the future gets exactly 0, on a fixed random input."""
        cfg = model.cfg
        device = next(model.parameters()).device
        if self._probe is None or self._probe.device != device:
            gen = torch.Generator().manual_seed(0)
            self._probe = torch.randint(2, cfg.vocab_size, (2, cfg.block_size), generator=gen).to(device)
        was = model.training
        model.eval()
        try:
            patterns = model.attention_patterns(self._probe)
        finally:
            model.train(was)
        for layer, p in enumerate(patterns):
            p = p.float()
            rows = p.sum(-1)
            if not torch.isfinite(rows).all():
                continue  # a NaN forward is on_nonfinite's business
            dev = float((rows - 1).abs().max())
            self._condition(
                step,
                layer,
                "row_sum",
                dev > self.row_sum_tol,
                float(rows.max()),
                1.0,
                f"权重行和 {float(rows.min()):.4f}…{float(rows.max()):.4f} ≠ 1（缩放写在 softmax 之后？）"
                f"/ rows of weights do not sum to 1 (scale applied after the softmax?)",
                patience=1,
            )
            leak = float(p.triu(diagonal=1).sum(-1).max())
            self._condition(
                step,
                layer,
                "future_leak",
                leak > self.future_tol,
                leak,
                self.future_tol,
                f"未来位置拿到权重 {leak:.4f}（掩码用了 0 而不是 -inf？）/ weight {leak:.4f} "
                f"reaches future positions (mask filled with 0 instead of -inf?)",
                patience=1,
            )

    # ------------------------------------------------------------------ callbacks
    def on_step_end(self, step: int, record: dict, model: TinyGPT) -> None:
        self.check_record(step, record)
        if self.probe_every and step % self.probe_every == 0:
            self.probe(step, model)

    def on_nonfinite(self, step: int, batch: tuple[Tensor, Tensor], model: TinyGPT) -> dict:
        report = diagnose_nonfinite(model, batch[0])
        report["step"] = step
        self.nan_report = report
        self.warnings.append(
            {
                "step": step,
                "layer": report["layer"],
                "kind": "nonfinite",
                "value": None,
                "threshold": None,
                "message": report["cause"],
            }
        )
        self._say(
            f"[debugger] step {step}: loss 为 nan/inf，逐步插桩重跑这一批 / non-finite loss, "
            f"re-running the batch stage by stage"
        )
        for c in report["checks"]:
            rng = "" if c["min"] is None else f"  范围 range [{c['min']:.3g}, {c['max']:.3g}]"
            self._say(
                f"  层 layer {c['layer']} {c['stage']:<9} 有限 finite? {c['ok']}  inf {c['inf']}  nan {c['nan']}{rng}"
            )
        if report["stage_index"] is not None:
            where = "" if report["layer"] is None else f"层 layer {report['layer']} 头 head {report['head']}, "
            self._say(
                f"[debugger] 第一个出问题的位置 / first broken stage: {report['stage']} ({where}"
                f"{report.get('label', '')}) -> {report['cause']}"
            )
        else:
            self._say(f"[debugger] {report['cause']}")
        return report

    # chapter-style names (exercise 4 sketch)
    def check(self, step: int, record: dict, model: TinyGPT | None = None) -> None:
        self.check_record(step, record)
        if model is not None:
            self.probe(step, model)

    def on_nan(self, model: TinyGPT, x: Tensor) -> dict:
        return self.on_nonfinite(-1, (x, x), model)
