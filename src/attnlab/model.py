"""The chapter's tiny character-level GPT, in the order data flows through it.

    token ids -> token embedding + positions -> N x Block -> final norm -> head (tied) -> logits
    Block:  x = x + Attention(LN(x));  x = x + MLP(LN(x))          (Pre-LN, §1.18.2)

Shape vocabulary, used in the comments on every reshape:
    B batch, T time (sequence), C channels (d_model), nh heads, hs head size (d_head),
    nkv key/value heads (GQA/MQA), V vocabulary.

Attention is one function, :func:`attention`: softmax(q·kᵀ·scale + M) v, the chapter's formula
(its NumPy twin: ``attnlab.attention.reference``). ``CausalSelfAttention`` runs it two ways that
compute the same function: PyTorch's fused ``scaled_dot_product_attention``, and
:func:`attention` written out, which passes the intermediate tensors through named taps
(``blocks.0.attn.tap_scores``, ``...tap_pattern``, ...) that cost nothing when nobody listens.
Listening on a tap (which is how ``model.recording()`` and ``record=True`` compute the
diagnostics) selects the written-out path: every recorded training step trains on it (see
``CausalSelfAttention``). Tests check that both paths give the same logits and gradients. One more
tap, ``tap_hidden``, passes the residual stream after the last block (the blocks' output, before
the final norm). The injected bugs of §1.11 live apart, in ``attnlab.attention.faults``: a model
built with ``Config.bug`` has that module's fault installed in its attention layers.

``causal=False`` (``model(idx, causal=False)``) runs every attention layer without
the causal mask, on either path: §1.9.1's set-to-set attention, the control of the
lab book's permutation test (attnlab.lab.positions). The default is the chapter's
model; a KV cache (generation) is causal by nature and refuses it.

Deliberately left out: dropout (the book's model has none), biases in the
attention projections, flash kernels of our own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention.faults import install_fault
from .attention.positions import apply_rope, sinusoidal_table
from .config import Config
from .diagnostics import DIAG_KEYS, pattern_summary
from .errors import AttnlabError

RECORDED_TAPS = ("tap_q", "tap_k", "tap_scores", "tap_pattern")


# --------------------------------------------------------------------------- attention
def _unseen(x: Tensor) -> Tensor:
    return x


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: float,
    causal: bool = True,
    *,
    tap_scores: Callable[[Tensor], Tensor] = _unseen,
    tap_weights: Callable[[Tensor], Tensor] = _unseen,
) -> Tensor:
    """softmax(q·kᵀ·scale + M) v, with M = 0 where query i may look at key j and -inf above the
    diagonal (exactly 0 weight after the softmax; none with ``causal=False``).

    The chapter's formula written out, in torch; :func:`attnlab.attention.reference.attention` is
    the same formula in NumPy with its conventions and shape checks, and the tests hold this one
    to PyTorch's ``scaled_dot_product_attention`` in float64. Shapes: q (B, nh, Tq, hs), k and v
    (B, nh, Tk, hs); query i sits at absolute position Tk - Tq + i (a KV cache makes Tk > Tq).
    The scores are float32 or wider even under bf16 autocast (§1.17.5). ``tap_scores`` and
    ``tap_weights`` see the scores (scaled, before the mask) and the weights on their way.
    """
    scores = tap_scores(_at_least_fp32(q @ k.transpose(-2, -1) * scale))  # (B, nh, Tq, Tk)
    if causal:
        scores = scores + causal_bias(scores)  # + M
    weights = tap_weights(scores.softmax(-1))  # (B, nh, Tq, Tk), rows sum to 1
    return weights.to(v.dtype) @ v  # (B, nh, Tq, hs)


def causal_bias(scores: Tensor) -> Tensor:
    """M for scores (..., Tq, Tk): 0 where query i may look at key j, -inf where it may not."""
    may_look = causal_mask(scores.shape[-2], scores.shape[-1], scores.device)
    return torch.zeros_like(may_look, dtype=scores.dtype).masked_fill(~may_look, float("-inf"))


def causal_mask(Tq: int, Tk: int, device) -> Tensor:
    """(Tq, Tk) bool, True = may look; query i sits at absolute position Tk - Tq + i."""
    return torch.ones(Tq, Tk, dtype=torch.bool, device=device).tril(diagonal=Tk - Tq)


def _at_least_fp32(x: Tensor) -> Tensor:
    return x.to(torch.promote_types(x.dtype, torch.float32))


class SequenceTooLongError(AttnlabError, ValueError):
    """A sequence longer than block_size with learned positions."""


class Tap(nn.Module):
    """Identity with a name in the module tree; forward hooks observe the value."""

    def forward(self, x: Tensor) -> Tensor:
        return x

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


@dataclass
class KVCache:
    """Keys and values of the positions seen so far, one per attention layer."""

    k: Tensor | None = None  # (B, nkv, T_past, hs)
    v: Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]


def make_norm(kind: str, dim: int) -> nn.Module:
    if kind == "layernorm":
        return nn.LayerNorm(dim)
    if kind == "rmsnorm":
        return nn.RMSNorm(dim)
    return nn.Identity()


# ----------------------------------------------------------------------- attention layer
class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: project x to q, k, v, run :func:`attention` per head,
    put the heads side by side and project back.

    Which path trains: an unrecorded step runs PyTorch's fused
    ``F.scaled_dot_product_attention`` (one call, same function, faster). A recorded step
    (``record_every``, every step by default, and any listening on a tap) runs :func:`attention`
    written out, because the diagnostics need the scores and weights the fused kernel never hands
    out; the training step then learns from that path's numbers. The two agree to float64
    rounding (tests), not bit for bit in float32, which is why ``record_every`` belongs to a
    run's identity (``Config.run_key``).
    """

    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.n_head, self.d_head, self.n_kv = cfg.n_head, cfg.d_head, cfg.kv_heads
        kv_dim = self.n_kv * self.d_head
        # One matrix for q, k and v (MHA: C -> 3C); GQA/MQA shrink the k, v part.
        self.qkv = nn.Linear(cfg.d_model, cfg.d_model + 2 * kv_dim, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        if cfg.qk_norm:  # §1.7.8: fix the scale of q and k explicitly
            self.q_norm = nn.LayerNorm(self.d_head)
            self.k_norm = nn.LayerNorm(self.d_head)
        if cfg.learn_temp:  # exercise ⑬: scores * exp(log_inv_temp) per head, 1 at init
            self.log_inv_temp = nn.Parameter(torch.zeros(self.n_head))
        self.tap_q, self.tap_k, self.tap_v = Tap(), Tap(), Tap()
        self.tap_scores, self.tap_pattern = Tap(), Tap()
        self.scale = scale_factor(cfg.scaled, self.d_head)
        self.last_diag: dict[str, float] | None = None

    def forward(self, x: Tensor, pos: Tensor, cache: KVCache | None = None, causal: bool = True) -> Tensor:
        B, T, C = x.shape
        nh, nkv, hs = self.n_head, self.n_kv, self.d_head
        q, k, v = self.qkv(x).split([C, nkv * hs, nkv * hs], dim=2)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, nkv, hs).transpose(1, 2)  # (B, nkv, T, hs)
        v = v.view(B, T, nkv, hs).transpose(1, 2)  # (B, nkv, T, hs)
        if self.cfg.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if self.cfg.pos == "rope":
            q, k = apply_rope(q, pos), apply_rope(k, pos)
        if self.cfg.learn_temp:  # dividing the scores by a temperature = scaling q
            q = q * self.log_inv_temp.exp().view(1, nh, 1, 1)
        if cache is not None:
            if cache.k is not None:
                k = torch.cat([cache.k, k], dim=2)  # (B, nkv, T_past + T, hs)
                v = torch.cat([cache.v, v], dim=2)
            cache.k, cache.v = k, v
        if nkv != nh:  # share each k, v among nh/nkv query heads
            k = k.repeat_interleave(nh // nkv, dim=1)  # (B, nh, Tk, hs)
            v = v.repeat_interleave(nh // nkv, dim=1)
        y = self.attend(q, k, v, causal)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return self.proj(y)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, causal: bool = True) -> Tensor:
        """:func:`attention` written out when someone listens on a tap, else the fused kernel."""
        taps = (self.tap_q, self.tap_k, self.tap_v, self.tap_scores, self.tap_pattern)
        if any(t.active for t in taps):
            # k copied to one block per head first: kᵀ in q·kᵀ is then a view the matrix multiply reads
            # as it is, not a strided transpose it first copies (the same numbers, bit for bit, sooner)
            q, k, v = self.tap_q(q), self.tap_k(k.contiguous()), self.tap_v(v)
            return attention(q, k, v, self.scale, causal, tap_scores=self.tap_scores, tap_weights=self.tap_pattern)
        Tq, Tk = q.shape[2], k.shape[2]
        if Tq == Tk or not causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=self.scale)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(Tq, Tk, q.device), scale=self.scale)


def scale_factor(scaled: bool | str, d_head: int) -> float:
    """The factor on q·k for ``Config.scaled``: 1/sqrt(d_head) (True, the book's), 1 (False) or
    1/d_head ("1/d", muP)."""
    return {True: 1.0 / math.sqrt(d_head), False: 1.0, "1/d": 1.0 / d_head}[scaled]


# ------------------------------------------------------------------------------- block
class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.residual = cfg.residual
        self.ln1 = make_norm(cfg.norm, cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = make_norm(cfg.norm, cfg.d_model)
        self.mlp = nn.Sequential(  # mlp[2] is the residual output layer
            nn.Linear(cfg.d_model, cfg.d_ff),
            nn.GELU(),
            nn.Linear(cfg.d_ff, cfg.d_model),
        )

    def forward(self, x: Tensor, pos: Tensor, cache: KVCache | None = None, causal: bool = True) -> Tensor:
        a = self.attn(self.ln1(x), pos, cache=cache, causal=causal)
        x = x + a if self.residual else a
        m = self.mlp(self.ln2(x))
        return x + m if self.residual else m


# ------------------------------------------------------------------------------- model
class TinyGPT(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.pos == "learned":
            self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        elif cfg.pos == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(cfg.block_size, cfg.d_model), persistent=False)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.tap_hidden = Tap()  # the blocks' output (B, T, C), before the final norm
        self.ln_f = make_norm(cfg.norm, cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self._init_weights()
        if cfg.tie_weights:  # "word -> vector" and "vector -> word" share one table
            self.head.weight = self.tok_emb.weight
        if cfg.bug is not None:  # §1.11's injected bugs, from outside the correct path
            install_fault(self, cfg.bug)

    def _init_weights(self) -> None:
        std = self.cfg.init_std
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        # GPT-2's residual scaling: two residual branches per layer add up their variance.
        resid_std = std / math.sqrt(2 * self.cfg.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("attn.proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, mean=0.0, std=resid_std)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def positions(self, start: int, T: int, device) -> tuple[Tensor, Tensor | None]:
        """(position ids (T,), additive position vectors (T, C) or None)."""
        pos = torch.arange(start, start + T, device=device)
        if self.cfg.pos == "learned":
            if start + T > self.cfg.block_size:
                raise SequenceTooLongError(
                    f"sequence reaches position {start + T - 1} but block_size is "
                    f"{self.cfg.block_size} with learned positions; crop the input to "
                    f"{self.cfg.block_size} tokens (positions past it were never trained)"
                )
            return pos, self.pos_emb(pos)
        if self.cfg.pos == "sinusoidal":
            table = (
                self.pos_table
                if start + T <= self.pos_table.shape[0]
                else sinusoidal_table(start + T, self.cfg.d_model, device=device)
            )
            return pos, table[start : start + T]
        return pos, None  # rope (inside attention) or none

    def forward(
        self,
        idx: Tensor,
        targets: Tensor | None = None,
        record: bool = False,
        kv_cache: list[KVCache] | None = None,
        causal: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """idx (B, T) token ids -> (logits (B, T, V), mean cross-entropy or None).

        record=True is the book's spelling of ``with model.recording(): model(idx)``:
        it fills ``blocks[i].attn.last_diag``. Targets equal to -100 are ignored by the loss.
        causal=False: every position sees every other (no causal mask; not with a KV cache).
        """
        if record:
            with self.recording():
                return self(idx, targets, kv_cache=kv_cache, causal=causal)
        if idx.dim() != 2:
            raise ValueError(f"idx must be (B, T) token ids, got shape {tuple(idx.shape)}")
        if kv_cache is not None and not causal:
            raise ValueError("causal=False cannot use a KV cache: generation sees only the past; drop kv_cache")
        B, T = idx.shape
        start = kv_cache[0].length if kv_cache else 0
        pos, pos_vec = self.positions(start, T, idx.device)
        x = self.tok_emb(idx)  # (B, T, C)
        if self.cfg.emb_scale:  # the original Transformer's scale: characters on the positions' footing
            x = x * math.sqrt(self.cfg.d_model)
        if pos_vec is not None:
            x = x + pos_vec
        for i, block in enumerate(self.blocks):
            x = block(x, pos, cache=kv_cache[i] if kv_cache else None, causal=causal)
        x = self.ln_f(self.tap_hidden(x))
        logits = self.head(x)  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.float().view(B * T, -1), targets.reshape(B * T))
        return logits, loss

    # ------------------------------------------------------------------ observation
    @contextmanager
    def capture(self, *tap_names: str) -> Iterator[dict[str, list[Tensor]]]:
        """Record what passes through taps, e.g. ``capture("tap_pattern")``.

        Yields {"blocks.0.attn.tap_pattern": [tensor, ...], ...}; hooks are
        removed when the context ends, even on error.
        """
        store: dict[str, list[Tensor]] = {}
        handles = []
        for name, module in self.named_modules():
            if isinstance(module, Tap) and name.rsplit(".", 1)[-1] in tap_names:
                store[name] = []
                handles.append(
                    module.register_forward_hook(lambda m, args, out, key=name: store[key].append(out.detach()))
                )
        try:
            yield store
        finally:
            for h in handles:
                h.remove()

    @torch.no_grad()
    def attention_patterns(self, idx: Tensor) -> list[Tensor]:
        """Attention weights of every layer: list of (B, nh, T, T)."""
        with self.capture("tap_pattern") as store:
            self(idx)
        return [store[f"blocks.{i}.attn.tap_pattern"][0] for i in range(len(self.blocks))]

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Per-layer attention diagnostics of the last forward pass inside the block.

        Listens on the q, k, scores and pattern taps (which selects the explicit path) and
        computes each layer's :func:`~attnlab.diagnostics.pattern_summary` as soon as its weights
        pass (while they are still in the cache), then moves every layer's numbers to the host in
        one transfer: one sync per step, not one per layer. The numbers land in
        ``blocks[i].attn.last_diag`` (see ``diagnostics()``).
        """
        seen: dict[tuple[int, str], Tensor] = {}
        rows: dict[int, Tensor] = {}

        def listener(i: int, tap: str):
            def hook(module, args, out) -> None:
                if tap != "tap_pattern":
                    seen[i, tap] = out.detach()
                    return
                q, k, scores = (seen[i, t] for t in RECORDED_TAPS[:3])
                with torch.no_grad():
                    summary = pattern_summary(scores, out.detach(), _at_least_fp32(q), _at_least_fp32(k))
                    rows[i] = torch.stack(list(summary.values()))

            return hook

        handles = [
            getattr(block.attn, tap).register_forward_hook(listener(i, tap))
            for i, block in enumerate(self.blocks)
            for tap in RECORDED_TAPS
        ]
        try:
            yield
        finally:
            for h in handles:
                h.remove()
        if len(rows) < len(self.blocks):
            return  # no forward pass happened
        values = torch.stack([rows[i] for i in range(len(self.blocks))]).tolist()  # the one host sync
        for block, vals in zip(self.blocks, values):
            block.attn.last_diag = dict(zip(DIAG_KEYS, vals))

    def diagnostics(self) -> list[dict[str, float]]:
        """``last_diag`` of every layer from the latest recorded forward."""
        return [b.attn.last_diag for b in self.blocks]


# ---------------------------------------------------------------------------- generate
@torch.no_grad()
def _not_finite(logits: Tensor, temperature: float) -> None:
    """One line instead of torch.multinomial's traceback when sampling has no distribution."""
    if not bool(torch.isfinite(logits).all()):
        raise AttnlabError(
            "the model's logits are not finite: its weights are those of a run that diverged "
            "(see diverged_at in its summary.json); train it again, e.g. with a smaller lr"
        )
    raise AttnlabError(
        f"temperature {temperature:g} is too small: logits / temperature overflow; use a temperature of 1e-3 or more"
    )


def generate(
    model: TinyGPT,
    tok,
    prompt: str,
    max_new_tokens: int = 50,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int | None = 0,
    use_cache: bool = True,
) -> str:
    """Sample a continuation of ``prompt``. Same seed, same model -> same text.

    Prompt characters outside the vocabulary become <unk> (with a warning). The
    KV cache is used while the text fits in block_size; past it the context is
    cropped to the last block_size tokens and recomputed, as without a cache.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    ids = tok.encode_warn(prompt) or [1]
    gen = torch.Generator(device=device)
    if seed is not None:
        gen.manual_seed(seed)
    block = model.cfg.block_size
    idx = torch.tensor([ids], dtype=torch.long, device=device)
    if idx.shape[1] > block:
        idx = idx[:, -block:]
    cache = [KVCache() for _ in model.blocks] if use_cache else None
    logits, _ = model(idx, kv_cache=cache)
    out = list(ids)
    for _ in range(max_new_tokens):
        # only ids the tokenizer has: a vocab_size above the corpus's characters leaves
        # untrained rows in the head, and sampling one of them would decode to nothing
        next_logits = logits[0, -1, : len(tok)].float() / temperature
        if top_k is not None:
            kth = torch.topk(next_logits, min(top_k, next_logits.numel())).values[-1]
            next_logits = next_logits.masked_fill(next_logits < kth, float("-inf"))
        probs = next_logits.softmax(-1)
        if not bool(torch.isfinite(probs).all()):
            _not_finite(logits[0, -1], temperature)
        nxt = int(torch.multinomial(probs, 1, generator=gen))
        out.append(nxt)
        step = torch.tensor([[nxt]], device=device)
        if cache is not None and cache[0].length + 1 <= block:
            logits, _ = model(step, kv_cache=cache)
        else:
            cache = None
            logits, _ = model(torch.tensor([out[-block:]], device=device))
    model.train(was_training)
    return tok.decode(out)


def parameter_table(cfg: Config) -> dict[str, int]:
    """Parameters per part, counted from the real module tree (shared weights once).

    The model is built on the ``meta`` device: shapes without storage, so even a
    config far too large to train (``d_model=262144``) is counted without allocating.
    """
    with torch.device("meta"):
        model = TinyGPT(cfg)
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    table: dict[str, int] = {}
    table["token embedding (tied head)" if cfg.tie_weights else "token embedding"] = model.tok_emb.weight.numel()
    if not cfg.tie_weights:
        table["output head"] = model.head.weight.numel()
    table["positions"] = model.pos_emb.weight.numel() if cfg.pos == "learned" else 0
    for i, blk in enumerate(model.blocks):
        table[f"layer {i} attention"] = n(blk.attn)
        table[f"layer {i} FFN"] = n(blk.mlp)
        table[f"layer {i} norms"] = n(blk.ln1) + n(blk.ln2)
    table["final norm"] = n(model.ln_f)
    table["total"] = model.num_params()
    return table
