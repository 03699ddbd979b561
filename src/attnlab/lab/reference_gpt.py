"""A plainly written GPT of the same shape as TinyGPT, as a yardstick for speed.

nanoGPT style, top to bottom in data-flow order: separate q, k, v projections
(``nn.Linear``), attention written out (scores, ``masked_fill`` with -inf,
softmax, weighted sum), Pre-LN blocks, tied head. No taps, no diagnostics, no
variants, no SDPA: what a careful person would write in an afternoon.
``attnlab bench train`` times TinyGPT against it, so the cost of TinyGPT's
taps and per-step recording shows up as a ratio.

Parameter count equals TinyGPT's for the same Config (q, k, v as three C x C
matrices instead of one C x 3C matrix). Only the book's architecture is
supported: learned positions, LayerNorm, multi-head attention.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import Config
from ..model import scale_factor


class ReferenceAttention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        C = cfg.d_model
        self.n_head, self.d_head = cfg.n_head, cfg.d_head
        self.scale = scale_factor(cfg.scaled, cfg.d_head)
        self.q = nn.Linear(C, C, bias=False)
        self.k = nn.Linear(C, C, bias=False)
        self.v = nn.Linear(C, C, bias=False)
        self.proj = nn.Linear(C, C, bias=False)
        mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("mask", mask.view(1, 1, cfg.block_size, cfg.block_size))

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        nh, hs = self.n_head, self.d_head
        q = self.q(x).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k(x).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.v(x).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        att = (q @ k.transpose(-2, -1)) * self.scale  # (B, nh, T, T)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.proj(y)


class ReferenceBlock(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = ReferenceAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc = nn.Linear(cfg.d_model, cfg.d_ff)
        self.out = nn.Linear(cfg.d_ff, cfg.d_model)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class ReferenceGPT(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        if (
            cfg.pos != "learned"
            or cfg.norm != "layernorm"
            or cfg.kv_heads != cfg.n_head
            or cfg.qk_norm
            or cfg.learn_temp
            or cfg.emb_scale
            or not cfg.residual
            or cfg.bug is not None
        ):
            raise ValueError(
                "ReferenceGPT covers the book's architecture only "
                "(learned positions, LayerNorm, MHA, residuals, no bug)"
            )
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        self.blocks = nn.ModuleList(ReferenceBlock(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=cfg.init_std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: Tensor, targets: Tensor | None = None):
        B, T = idx.shape
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss
