"""Several same-shape training runs trained together as one stacked model.

The case study trains pairs that differ only in ``scaled`` (and in ``seed``
across repeats). Trained one after another, each small run leaves a GPU mostly
idle between tiny kernels; stacked, R runs become one model whose every weight
has a leading run axis R and whose matmuls are batched (``torch.bmm``), so R
runs cost about as many kernel launches as one. (A CPU's matmuls are already
compute-bound at this size: there stacking gains little, see ``attnlab bench
train``.)::

    weight of one run (out, in)  ->  stacked weight (R, out, in)
    activations (B, T, C)        ->  (R, B*T, C), attention on (R*B, nh, T, hs)

Every run keeps its own everything: initial weights (built by ``TinyGPT(cfg)``
after ``torch.manual_seed(cfg.seed)``, exactly as ``train`` builds them), batch
generator, validation batches, scale factor, learning rate, AdamW moments,
gradient-clipping coefficient, diagnostics and ``History``. The loss that is
back-propagated is the *sum* over runs of each run's mean cross-entropy, so the
gradient reaching run r's slice is run r's own gradient; AdamW and clipping are
elementwise per run. The result is the same training, not an approximation:
``tests/test_batched.py`` checks it against separate
``train`` runs. It is not bit for bit the same: a batched matmul may add up its
products in another order than the single-run matmul, the per-run mean losses
come from one cross-entropy call over all runs, and when runs of different
scales share one SDPA call the queries are pre-multiplied by each run's scale
(SDPA takes a single float). Each of these moves a float32 result by an ulp or
so; over 12 steps the losses of the tests stay within 5e-7 of ``train``.

Checkpoints are written per run in ``train``'s own format (``ckpt.pt`` with the
optimizer state sliced per run), so ``train(..., resume=True)`` can continue a
run that ``train_many`` started, and an interrupted ``train_many`` resumes from
them bit for bit.

Why a hand-written stacked forward rather than ``torch.func.vmap`` over
``functional_call(TinyGPT)``: the scale factor differs per run, which vmap
cannot pass as the Python float the model uses; the diagnostics call
``.tolist()`` inside the forward, which vmap forbids; and on CPU vmap has no
batching rule for SDPA, so it loops over runs there. Measured on the shared
2-core development CPU (forward + backward of the book model, R = 2 / 6):
bmm 1114 / 2174 ms, vmap 927 / 2199 ms, a difference within that machine's
noise. The forward below mirrors ``attnlab.model`` line by line, variants
(positions, norms, QK-norm, GQA, injected bugs) included.
"""
from __future__ import annotations

import json
import math
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .attention.positions import apply_rope, sinusoidal_table
from .checkpoint import config_diff, read_checkpoint, save_checkpoint
from .config import Config
from .diagnostics import pattern_summary
from .errors import CheckpointError, ConfigError, CorpusError
from .io import write_json, write_text
from .model import TinyGPT, _causal_mask
from .tokenizer import CharTokenizer
from .train import (History, TrainingInterrupted, _fire, _progress, _StopRequest, get_batch,
                    lr_at, make_optimizer, resolve_device, split_data, summarize)

# Fields that may differ between the runs of one stack; everything else shapes
# the computation and must be equal.
PER_RUN_FIELDS = ("scaled", "seed", "lr")
DIAG_KEYS = ("weight_entropy", "jacobian_fro", "logit_std", "logit_absmax", "q_std", "k_std")

Result = tuple[TinyGPT, CharTokenizer, History]


def check_stackable(cfgs: Sequence[Config]) -> None:
    """Raise ConfigError unless the configs differ only in scaled, seed and lr."""
    if not cfgs:
        raise ConfigError("train_many needs at least one config")
    first = cfgs[0]
    for i, cfg in enumerate(cfgs[1:], start=1):
        diff = config_diff(first, cfg, ignore=PER_RUN_FIELDS)
        if diff:
            raise ConfigError(f"train_many: config {i} differs from config 0 in more than "
                              f"{', '.join(PER_RUN_FIELDS)} ({diff}); stacked runs must share "
                              f"every other field")


# ============================================================== the stacked forward
# Shapes: R runs, B batch, T time, C channels, nh heads, hs head size, nkv kv heads.
# Parameters are stacked TinyGPT parameters: name -> (R, *shape of one run).

def _linear(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """x (R, N, in), w (R, out, in), b (R, out) -> (R, N, out)."""
    if b is None:
        return torch.bmm(x, w.transpose(1, 2))
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def _norm(kind: str, x: Tensor, P: dict[str, Tensor], name: str) -> Tensor:
    """Per-run norm over the last axis; x (R, ..., D), weights (R, D)."""
    if kind == "none":
        return x
    shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    w = P[f"{name}.weight"].view(shape)
    if kind == "layernorm":
        return torch.addcmul(P[f"{name}.bias"].view(shape), F.layer_norm(x, x.shape[-1:], eps=1e-5), w)
    return F.rms_norm(x, x.shape[-1:]) * w                 # nn.RMSNorm(eps=None)


def _attention(P: dict[str, Tensor], pre: str, x: Tensor, cfg: Config, B: int, T: int,
               pos: Tensor, scales: Tensor, scale_groups, record: bool) -> tuple[Tensor, list | None]:
    """x (R, B*T, C) -> (R, B*T, C); mirrors CausalSelfAttention.forward."""
    R, _, C = x.shape
    nh, nkv, hs = cfg.n_head, cfg.kv_heads, cfg.d_head
    q, k, v = _linear(x, P[f"{pre}.qkv.weight"]).split([C, nkv * hs, nkv * hs], dim=2)
    q = q.reshape(R * B, T, nh, hs).transpose(1, 2)        # (R*B, nh, T, hs)
    k = k.reshape(R * B, T, nkv, hs).transpose(1, 2)       # (R*B, nkv, T, hs)
    v = v.reshape(R * B, T, nkv, hs).transpose(1, 2)       # (R*B, nkv, T, hs)
    if cfg.qk_norm:
        q = _norm("layernorm", q.reshape(R, B, nh, T, hs), P, f"{pre}.q_norm").view(R * B, nh, T, hs)
        k = _norm("layernorm", k.reshape(R, B, nkv, T, hs), P, f"{pre}.k_norm").view(R * B, nkv, T, hs)
    if cfg.pos == "rope":
        q, k = apply_rope(q, pos), apply_rope(k, pos)
    if nkv != nh:
        k = k.repeat_interleave(nh // nkv, dim=1)          # (R*B, nh, T, hs)
        v = v.repeat_interleave(nh // nkv, dim=1)
    diag = None
    if record or cfg.bug is not None:
        y, diag = _explicit(q, k, v, cfg, R, B, scales, record)
    else:
        y = _fast(q, k, v, R, B, scales, scale_groups)
    y = y.transpose(1, 2).reshape(R, B * T, C)             # (R, B*T, C): heads side by side
    return _linear(y, P[f"{pre}.proj.weight"]), diag


def _fast(q: Tensor, k: Tensor, v: Tensor, R: int, B: int, scales: Tensor,
          scale_groups) -> Tensor:
    """SDPA. It takes one float scale: with runs of different scales, each run's
    queries are multiplied by its own scale first and SDPA is called with 1."""
    if len(scale_groups) == 1:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale_groups[0][0])
    q = _times(q.view(R, B, *q.shape[1:]), scales.view(R, 1, 1, 1, 1)).view(q.shape)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)


def _times(t: Tensor, s: Tensor) -> Tensor:
    """t * per-run scale s (float32), computed in float32 and rounded once to
    t's dtype, as ``t * python_float`` is: under bf16 autocast the scale itself
    must not be rounded to bf16."""
    return t * s if t.dtype == s.dtype else (t.float() * s).to(t.dtype)


def _explicit(q: Tensor, k: Tensor, v: Tensor, cfg: Config, R: int, B: int, scales: Tensor,
              record: bool) -> tuple[Tensor, list | None]:
    """Scores, mask, softmax, weighted sum written out, as CausalSelfAttention._explicit."""
    bug, hs = cfg.bug, cfg.d_head
    T = q.shape[2]
    s5 = scales.view(R, 1, 1, 1, 1)
    scores = q @ k.transpose(-2, -1)                       # (R*B, nh, T, T)
    if bug == "divide_by_d_k":
        scores = scores / hs
    elif bug != "scale_after_softmax":
        scores = _times(scores.view(R, B, *scores.shape[1:]), s5).view(scores.shape)
    scores = scores.to(torch.promote_types(scores.dtype, torch.float32))
    mask = _causal_mask(T, T, q.device)
    if bug == "mask_zero":
        masked = scores * mask
    else:
        masked = scores + torch.zeros_like(mask, dtype=scores.dtype).masked_fill(~mask, float("-inf"))
    if bug == "no_max_subtraction":
        e = masked.exp()
        p = e / e.sum(-1, keepdim=True)
    else:
        p = masked.softmax(-1)
    if bug == "scale_after_softmax":                       # scale is 1 for unscaled runs
        p = _times(p.view(R, B, *p.shape[1:]), s5).view(p.shape)
    diag = None
    if record:
        with torch.no_grad():
            f32 = lambda t: t.to(torch.promote_types(t.dtype, torch.float32))
            view = lambda t: t.view(R, B, *t.shape[1:])    # (R, B, nh, ...)
            sc, pp, qq, kk = view(scores), view(p), view(f32(q)), view(f32(k))
            diag = [torch.stack(list(pattern_summary(sc[r], pp[r], qq[r], kk[r]).values()))
                    for r in range(R)]                     # R x (len(DIAG_KEYS),)
    return p.to(v.dtype) @ v, diag                         # (R*B, nh, T, hs)


def stacked_forward(P: dict[str, Tensor], cfg: Config, idx: Tensor, scales: Tensor,
                    scale_groups, record: bool = False, pos_table: Tensor | None = None,
                    ) -> tuple[Tensor, Tensor | None]:
    """idx (R, B, T) -> (logits (R, B*T, V), diagnostics (R, n_layer, 6) or None)."""
    R, B, T = idx.shape
    V, C = cfg.vocab_size, cfg.d_model
    pos = torch.arange(T, device=idx.device)
    emb = P["tok_emb.weight"]                              # (R, V, C)
    offset = (torch.arange(R, device=idx.device) * V).view(R, 1, 1)
    x = F.embedding(idx + offset, emb.reshape(R * V, C))   # (R, B, T, C): run r reads its table
    if cfg.pos == "learned":
        x = x + P["pos_emb.weight"][:, :T].unsqueeze(1)    # (R, 1, T, C)
    elif cfg.pos == "sinusoidal":
        x = x + pos_table[:T]
    x = x.reshape(R, B * T, C)                             # (R, B*T, C)
    diags = []
    for i in range(cfg.n_layer):
        pre = f"blocks.{i}"
        a, d = _attention(P, f"{pre}.attn", _norm(cfg.norm, x, P, f"{pre}.ln1"), cfg, B, T,
                          pos, scales, scale_groups, record)
        x = x + a if cfg.residual else a
        h = _norm(cfg.norm, x, P, f"{pre}.ln2")
        h = _linear(h, P[f"{pre}.mlp.0.weight"], P[f"{pre}.mlp.0.bias"])
        h = _linear(F.gelu(h), P[f"{pre}.mlp.2.weight"], P[f"{pre}.mlp.2.bias"])
        x = x + h if cfg.residual else h
        if d is not None:
            diags.append(torch.stack(d))                   # (R, 6)
    x = _norm(cfg.norm, x, P, "ln_f")
    head = P["tok_emb.weight"] if cfg.tie_weights else P["head.weight"]
    logits = _linear(x, head)                              # (R, B*T, V)
    return logits, (torch.stack(diags, 1) if diags else None)


def per_run_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy of each run, (R,), from one cross_entropy call over all runs."""
    R, N, V = logits.shape
    losses = F.cross_entropy(logits.float().view(R * N, V), targets.reshape(R * N), reduction="none")
    return losses.view(R, N).mean(1)


# =================================================================== optimizer
class StackedAdamW:
    """AdamW (torch's single-tensor algorithm) on stacked parameters, per-run lr.

    Elementwise, so every run's slice is updated exactly as ``make_optimizer``'s
    AdamW would update that run: weight decay on matrices only (dim >= 2 per
    run), betas (0.9, 0.95), eps 1e-8.
    """

    def __init__(self, params: dict[str, Tensor], weight_decay: float,
                 betas=(0.9, 0.95), eps: float = 1e-8):
        self.params = params
        self.betas, self.eps = betas, eps
        self.decay = {n: (weight_decay if p.dim() - 1 >= 2 else 0.0) for n, p in params.items()}
        self.exp_avg = {n: torch.zeros_like(p) for n, p in params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in params.items()}
        self.steps = 0

    @torch.no_grad()
    def step(self, lrs: list[float]) -> None:
        beta1, beta2 = self.betas
        self.steps += 1
        bias_correction1 = 1 - beta1 ** self.steps
        bias_correction2_sqrt = (1 - beta2 ** self.steps) ** 0.5
        same = all(lr == lrs[0] for lr in lrs)
        for n, p in self.params.items():
            g, m, v = p.grad, self.exp_avg[n], self.exp_avg_sq[n]
            shape = (len(lrs),) + (1,) * (p.dim() - 1)
            per_run = lambda vals: torch.tensor(vals, dtype=p.dtype, device=p.device).view(shape)
            wd = self.decay[n]
            if wd != 0:
                p.mul_(1 - lrs[0] * wd if same else per_run([1 - lr * wd for lr in lrs]))
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / bias_correction2_sqrt).add_(self.eps)
            if same:
                p.addcdiv_(m, denom, value=-(lrs[0] / bias_correction1))
            else:    # addcdiv computes p + (value * m) / denom; keep that order per run
                p.addcdiv_(m * per_run([-(lr / bias_correction1) for lr in lrs]), denom)


@torch.no_grad()
def clip_per_run(params: dict[str, Tensor], max_norm: float) -> Tensor:
    """clip_grad_norm_ for each run separately; returns each run's total norm (R,)."""
    grads = [p.grad for p in params.values()]
    norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), 2, dim=1) for g in grads], 1)
    total = torch.linalg.vector_norm(norms, 2, dim=1)     # (R,)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef.view((-1,) + (1,) * (g.dim() - 1)))
    return total


# ======================================================================= runs
class _Run:
    """One run's own state while it trains inside a stack."""

    def __init__(self, i: int, cfg: Config, out: Path | None, train_ids: Tensor,
                 val_ids: Tensor, device: torch.device, callbacks: list):
        self.i, self.cfg, self.out, self.callbacks = i, cfg, out, callbacks
        self.ckpt_path = out / "ckpt.pt" if out else None
        self.train_ids = train_ids
        torch.manual_seed(cfg.seed)                        # same initial weights as train()
        self.model = TinyGPT(cfg).to(device)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        val_gen = torch.Generator().manual_seed(cfg.seed + 1)
        self.val_batches = [get_batch(val_ids, cfg.block_size, cfg.batch_size, val_gen)
                            for _ in range(cfg.eval_batches)]
        self.history = History()
        self.start = 0
        self.opt_state: dict[str, dict[str, Tensor]] = {}   # name -> exp_avg, exp_avg_sq
        self.opt_steps = 0
        self.lr = cfg.lr
        self.metrics_file = None

    @property
    def done(self) -> bool:
        return self.history.diverged_at is not None or self.start >= self.cfg.max_steps

    def load(self, payload: dict) -> None:
        try:
            self.model.load_state_dict(payload["model"])
            opt = make_optimizer(self.model, self.cfg)
            opt.load_state_dict(payload["optimizer"])
            for n, p in self.model.named_parameters():
                st = opt.state.get(p)
                if st:
                    self.opt_state[n] = {"exp_avg": st["exp_avg"], "exp_avg_sq": st["exp_avg_sq"]}
                    self.opt_steps = int(st["step"])
            self.gen.set_state(payload["gen_state"])
            self.history = History.from_dict(payload["history"])
            self.start = int(payload["step"])
        except (KeyError, RuntimeError, ValueError) as e:
            raise CheckpointError(f"cannot resume from {self.ckpt_path}: {e}") from None

    def optimizer_state_dict(self) -> dict:
        """The run's optimizer in torch AdamW's state_dict format (as train saves it)."""
        opt = make_optimizer(self.model, self.cfg)
        for g in opt.param_groups:
            g["lr"] = self.lr
        if self.opt_steps:
            for n, p in self.model.named_parameters():
                opt.state[p] = {"step": torch.tensor(float(self.opt_steps)),
                                "exp_avg": self.opt_state[n]["exp_avg"],
                                "exp_avg_sq": self.opt_state[n]["exp_avg_sq"]}
        return opt.state_dict()

    def checkpoint(self, tok: CharTokenizer, step: int) -> None:
        if self.ckpt_path is not None:
            save_checkpoint(self.ckpt_path, self.model, tok, optimizer=self.optimizer_state_dict(),
                            gen_state=self.gen.get_state(), history=self.history.to_dict(),
                            step=step)

    def open_outputs(self, tok: CharTokenizer) -> None:
        if self.out is None:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / "config.json", self.cfg.to_dict())
        tok.save(self.out / "tokenizer.json")
        write_text(self.out / "metrics.jsonl",
                   "".join(json.dumps(r) + "\n" for r in self.history.records))
        self.metrics_file = open(self.out / "metrics.jsonl", "a", encoding="utf-8")

    def log(self, record: dict) -> None:
        if self.metrics_file:
            self.metrics_file.write(json.dumps(record) + "\n")
            self.metrics_file.flush()

    def finish(self) -> None:
        if self.metrics_file:
            self.metrics_file.close()
            self.metrics_file = None
        if self.out is not None:
            write_json(self.out / "summary.json", summarize(self.history, self.cfg, self.model))
        self.model.eval()


class _Stack:
    """The live runs of one group as stacked tensors; runs can leave (divergence)."""

    def __init__(self, runs: list[_Run], device: torch.device):
        self.runs, self.device = runs, device
        names = [n for n, _ in runs[0].model.named_parameters()]
        self.params = {n: torch.stack([dict(r.model.named_parameters())[n].detach() for r in runs])
                       .clone().requires_grad_(True) for n in names}
        self.opt = StackedAdamW(self.params, runs[0].cfg.weight_decay)
        self.opt.steps = runs[0].opt_steps
        for n in names:
            if all(n in r.opt_state for r in runs):
                self.opt.exp_avg[n].copy_(torch.stack([r.opt_state[n]["exp_avg"] for r in runs]))
                self.opt.exp_avg_sq[n].copy_(torch.stack([r.opt_state[n]["exp_avg_sq"] for r in runs]))
        cfg = runs[0].cfg
        self.pos_table = (sinusoidal_table(cfg.block_size, cfg.d_model, device=device)
                          if cfg.pos == "sinusoidal" else None)
        self._index_scales()

    def _index_scales(self) -> None:
        vals = [1.0 / math.sqrt(r.cfg.d_head) if r.cfg.scaled else 1.0 for r in self.runs]
        self.scales = torch.tensor(vals, device=self.device)
        groups: dict[float, list[int]] = {}
        for j, s in enumerate(vals):
            groups.setdefault(s, []).append(j)
        self.scale_groups = [(s, torch.tensor(ix, device=self.device)) for s, ix in groups.items()]

    def forward(self, idx: Tensor, record: bool):
        return stacked_forward(self.params, self.runs[0].cfg, idx, self.scales, self.scale_groups,
                               record=record, pos_table=self.pos_table)

    @torch.no_grad()
    def sync(self, which: Iterable[int] | None = None) -> None:
        """Copy the stacked weights and moments into the runs' own models and state."""
        for j in (range(len(self.runs)) if which is None else which):
            run = self.runs[j]
            for n, p in run.model.named_parameters():
                p.copy_(self.params[n][j])
                run.opt_state[n] = {"exp_avg": self.opt.exp_avg[n][j].clone(),
                                    "exp_avg_sq": self.opt.exp_avg_sq[n][j].clone()}
            run.opt_steps = self.opt.steps

    def drop(self, leaving: list[int]) -> None:
        """Take runs out of the stack (after sync), keep the others' tensors."""
        keep = [j for j in range(len(self.runs)) if j not in leaving]
        ix = torch.tensor(keep, device=self.device)
        with torch.no_grad():
            for n in list(self.params):
                grad = self.params[n].grad
                self.params[n] = self.params[n].index_select(0, ix).requires_grad_(True)
                if grad is not None:
                    self.params[n].grad = grad.index_select(0, ix)
                self.opt.exp_avg[n] = self.opt.exp_avg[n].index_select(0, ix)
                self.opt.exp_avg_sq[n] = self.opt.exp_avg_sq[n].index_select(0, ix)
        self.opt.params = self.params
        self.runs = [self.runs[j] for j in keep]
        if self.runs:
            self._index_scales()


# =================================================================== training
def train_many(text: str, cfgs: Sequence[Config], *, out_dirs: Sequence[str | Path] | None = None,
               resume: bool = False, progress: bool = False,
               callbacks: Iterable[Any] | Sequence[Iterable[Any]] | None = None,
               on_step: Callable[[int, list[dict | None]], None] | None = None,
               tok: CharTokenizer | None = None, stop_after: int | None = None,
               ) -> list[Result]:
    """Train R same-shape runs as one stacked model; returns [(model, tok, history)] per run.

    Each run is trained as ``train(text, cfgs[r], out_dir=out_dirs[r])`` would
    train it (see the module docstring for what "as" means). ``cfgs`` may differ
    only in scaled, seed and lr. callbacks: one iterable used for every run, or
    one iterable per run; each gets the events of ``train`` with that run's
    model. on_step(step, records): called after every step with one record per
    run (None for a run that has stopped). resume: continue each run from its
    out_dir/ckpt.pt (written by ``train_many`` or ``train``); runs at different
    steps are trained in groups. stop_after: stop every run with a checkpoint
    after this many steps, as Ctrl-C would.
    """
    cfgs = list(cfgs)
    check_stackable(cfgs)
    R = len(cfgs)
    if out_dirs is not None and len(out_dirs) != R:
        raise ConfigError(f"train_many: {len(out_dirs)} out_dirs for {R} configs")
    outs = [Path(d) for d in out_dirs] if out_dirs is not None else [None] * R
    if out_dirs is not None and len(set(outs)) != R:
        raise ConfigError("train_many: every run needs its own out_dir")
    cb_lists = _callback_lists(callbacks, R)
    cfg0 = cfgs[0]
    device = resolve_device(cfg0.device)

    payloads: list[dict | None] = [None] * R
    if resume:
        if out_dirs is None:
            raise CheckpointError("resume needs the output directories holding each run's ckpt.pt")
        for r, (cfg, out) in enumerate(zip(cfgs, outs)):
            payloads[r] = payload = read_checkpoint(out / "ckpt.pt")
            diff = config_diff(Config.from_dict(payload["config"]), cfg, ignore=("device",))
            if diff:
                raise CheckpointError(f"cannot resume {out / 'ckpt.pt'}: it was trained with a "
                                      f"different config ({diff})")
        itos = [p["itos"] for p in payloads]
        if any(i != itos[0] for i in itos):
            raise CheckpointError("cannot resume: the runs' checkpoints have different tokenizers")
        tok = CharTokenizer.from_itos(itos[0])
    tok = tok or CharTokenizer(text, cfg0.vocab_size)
    if len(tok) > cfg0.vocab_size:
        raise CorpusError(f"tokenizer has {len(tok)} entries but vocab_size is {cfg0.vocab_size}")
    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    train_ids, val_ids = split_data(ids, cfg0)

    runs = [_Run(r, cfg, outs[r], train_ids, val_ids, device, cb_lists[r])
            for r, cfg in enumerate(cfgs)]
    for run, payload in zip(runs, payloads):
        if payload is not None:
            run.load(payload)

    try:
        for run in runs:
            run.open_outputs(tok)
        groups: dict[int, list[_Run]] = {}
        for run in runs:
            if not run.done:
                groups.setdefault(run.start, []).append(run)
        for start in sorted(groups):
            _train_group(groups[start], tok, device, progress, on_step, stop_after, R)
    finally:
        for run in runs:
            if run.metrics_file:
                run.metrics_file.close()
                run.metrics_file = None
    for run in runs:
        run.finish()
    return [(run.model, tok, run.history) for run in runs]


def _callback_lists(callbacks, R: int) -> list[list]:
    if callbacks is None:
        return [[] for _ in range(R)]
    callbacks = list(callbacks)
    if len(callbacks) == R and all(isinstance(c, (list, tuple)) for c in callbacks):
        return [list(c) for c in callbacks]
    return [callbacks for _ in range(R)]


def _train_group(runs: list[_Run], tok: CharTokenizer, device: torch.device, progress: bool,
                 on_step, stop_after: int | None, n_total: int) -> None:
    cfg = runs[0].cfg
    start = runs[0].start
    stack = _Stack(runs, device)
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if cfg.dtype == "bf16"
                else nullcontext())
    max_norm = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
    bar = _progress(start, cfg.max_steps, progress)
    stopper = _StopRequest()
    try:
        with stopper.installed():
            for step in range(start, cfg.max_steps):
                if not stack.runs:
                    break
                if stopper.requested or (stop_after is not None and step >= start + stop_after):
                    stack.sync()
                    for run in stack.runs:
                        run.checkpoint(tok, step)
                    raise TrainingInterrupted(step, stack.runs[0].ckpt_path)
                pairs = _stacked_step(stack, step, device, autocast, max_norm)
                last = step == cfg.max_steps - 1
                if (cfg.eval_every and (step + 1) % cfg.eval_every == 0) or last:
                    vals = _evaluate(stack, autocast)
                    live = {id(run): v for run, v in zip(stack.runs, vals)}
                    for run, rec in pairs:
                        if id(run) in live:
                            rec["val_loss"] = live[id(run)]
                _finish_step(stack, pairs, step, tok, on_step, n_total)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=" ".join(f"{rec['loss']:.3f}" for _, rec in pairs),
                                    refresh=False)
                if stack.runs and cfg.ckpt_every and (step + 1) % cfg.ckpt_every == 0 and not last:
                    stack.sync()
                    for run in stack.runs:
                        run.checkpoint(tok, step + 1)
        stack.sync()
        for run in stack.runs:
            run.checkpoint(tok, len(run.history.records))
    finally:
        if bar is not None:
            bar.close()


def _stacked_step(stack: _Stack, step: int, device, autocast,
                  max_norm: float) -> list[tuple[_Run, dict]]:
    """One optimizer step of every run in the stack -> [(run, record)].

    A run whose loss is not finite takes no step (as in ``train``): it leaves
    the stack with the weights that produced that loss, its record flagged
    ``_diverged``. Records carry the batch as ``_batch`` for on_nonfinite.
    """
    runs, cfg = stack.runs, stack.runs[0].cfg
    lrs = [lr_at(step, run.cfg) for run in runs]
    batches = [get_batch(run.train_ids, cfg.block_size, cfg.batch_size, run.gen) for run in runs]
    x = torch.stack([b[0] for b in batches]).to(device, non_blocking=True)   # (R, B, T)
    y = torch.stack([b[1] for b in batches]).to(device, non_blocking=True)
    record_now = cfg.record_every > 0 and step % cfg.record_every == 0
    with autocast:
        logits, diag = stack.forward(x, record_now)
    losses = per_run_loss(logits, y)                       # (R,)
    loss_vals = losses.tolist()
    pairs = [(run, {"step": step, "loss": loss_vals[j], "lr": lrs[j], "grad_norm": float("nan"),
                    "_batch": (x[j], y[j])}) for j, run in enumerate(runs)]
    if diag is not None:
        for (run, rec), layers in zip(pairs, diag.tolist()):   # R x n_layer x 6
            rec["layers"] = [dict(zip(DIAG_KEYS, layer)) for layer in layers]
            for blk, layer in zip(run.model.blocks, rec["layers"]):
                blk.attn.last_diag = layer
    bad = [j for j, v in enumerate(loss_vals) if not math.isfinite(v)]
    kept = [j for j in range(len(runs)) if j not in bad]
    for p in stack.params.values():
        p.grad = None
    if kept:
        # each run's own mean loss: the gradient on run r's slice is run r's gradient
        (losses[kept] if bad else losses).sum().backward()
        norms = clip_per_run(stack.params, max_norm).tolist()
    if bad:
        stack.sync(bad)
        for j in bad:
            runs[j].history.diverged_at = step
            pairs[j][1]["_diverged"] = True
        stack.drop(bad)
    if kept:
        stack.opt.step([lrs[j] for j in kept])
        for j in kept:
            pairs[j][1]["grad_norm"] = norms[j]
            runs[j].lr = lrs[j]
    return pairs


def _finish_step(stack: _Stack, pairs, step: int, tok: CharTokenizer, on_step,
                 n_total: int) -> None:
    """History, metrics.jsonl and events of each run, in train's order."""
    if any(run.callbacks for run, rec in pairs if not rec.get("_diverged")):
        stack.sync([j for j, run in enumerate(stack.runs) if run.callbacks])
    everyone: list[dict | None] = [None] * n_total
    for run, rec in pairs:
        batch = rec.pop("_batch")
        if rec.pop("_diverged", False):
            _fire(run.callbacks, "on_nonfinite", step, batch, run.model)
            run.history.records.append(rec)
            run.checkpoint(tok, step)
        else:
            run.history.records.append(rec)
            run.log(rec)
            _fire(run.callbacks, "on_step_end", step, rec, run.model)
        everyone[run.i] = rec
    if on_step is not None:
        on_step(step, everyone)


@torch.no_grad()
def _evaluate(stack: _Stack, autocast) -> list[float]:
    """Mean validation loss of each run over its own fixed batches (as train.evaluate)."""
    runs = stack.runs
    totals = [0.0] * len(runs)
    with autocast:
        for b in range(len(runs[0].val_batches)):
            x = torch.stack([run.val_batches[b][0] for run in runs]).to(stack.device)
            y = torch.stack([run.val_batches[b][1] for run in runs]).to(stack.device)
            logits, _ = stack.forward(x, False)
            for j, v in enumerate(per_run_loss(logits, y).tolist()):
                totals[j] += v
    return [t / len(runs[0].val_batches) for t in totals]


def stacked_stepper(cfgs: Sequence[Config], train_ids: Tensor) -> Callable[[int], list[dict]]:
    """A function doing one stacked training step of fresh runs per call: step -> records.

    No outputs, evaluation or checkpoints: what ``attnlab bench train`` times.
    """
    cfgs = list(cfgs)
    check_stackable(cfgs)
    device = resolve_device(cfgs[0].device)
    runs = [_Run(r, c, None, train_ids, train_ids, device, []) for r, c in enumerate(cfgs)]
    stack = _Stack(runs, device)
    cfg = cfgs[0]
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if cfg.dtype == "bf16"
                else nullcontext())
    max_norm = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")

    def step(i: int) -> list[dict]:
        return [rec for _, rec in _stacked_step(stack, i, device, autocast, max_norm)]

    return step
