"""Exercise 4 (§1.20.4): an attention debugger with the chapter's interface.

The loop records each step before calling ``check(step)``, so ``model.blocks[l].attn.last_diag``
holds that step's weight_entropy, logit_std and jacobian_fro (§1.13.1). ``on_nan()`` replays the
failing batch through §1.13.3's four stages per layer and names the first that broke."""

import warnings

import numpy as np

ENTROPY_HIGH, ENTROPY_LOW, LOGIT_STD_MAX = 0.99, 0.01, 10.0


class AttentionDebugger:
    def __init__(self, model, log_every=50):
        self.model, self.log_every = model, log_every

    def check(self, step):
        if step % self.log_every:
            return []
        said = []
        for layer, block in enumerate(self.model.blocks):
            d = block.attn.last_diag or {}
            ent, std = d.get("weight_entropy"), d.get("logit_std")
            if ent is not None and not ENTROPY_LOW <= ent <= ENTROPY_HIGH:
                said.append(f"step {step} layer {layer}: 熵 entropy {ent:.4f} outside [{ENTROPY_LOW}, {ENTROPY_HIGH}]")
            if std is not None and std > LOGIT_STD_MAX:
                said.append(f"step {step} layer {layer}: logit std {std:.3g} > {LOGIT_STD_MAX}")
        for s in said:
            warnings.warn(s, stacklevel=2)
        return []

    def on_nan(self):
        for layer in range(len(self.model.blocks)):
            q, k, v, mask = self.model.attention_inputs(layer)
            scores = q @ np.swapaxes(k, -1, -2)
            if not np.isfinite(scores).all():
                return layer, 1
            scores = np.where(mask, scores / np.sqrt(q.shape[-1]), -np.inf)
            # -inf is the mask itself: a row is broken by a NaN, a +inf or no finite entry at all
            if np.isnan(scores).any() or np.isposinf(scores).any() or (~np.isfinite(scores)).all(-1).any():
                return layer, 2
            with np.errstate(over="ignore"):
                e = np.exp(scores)
            if not np.isfinite(e).all() or (e.sum(-1) == 0).any():
                return layer, 3
            with np.errstate(invalid="ignore", divide="ignore"):
                w = e / e.sum(-1, keepdims=True)
            if not np.isfinite(w).all():
                return layer, 4
        return None
