"""Typed, frozen configuration for the chapter's tiny GPT and its trainer.

Field names and defaults follow the chapter (§1.1, §1.18.4). ``Config`` is
immutable: derive variants with ``cfg.replace(**changes)`` or build one from
``key=value`` strings with ``Config.from_overrides``. Every impossible value
raises :class:`~attnlab.errors.ConfigError` naming the field.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from dataclasses import InitVar, dataclass, fields
from typing import Any

from .errors import ConfigError

POS_KINDS = ("learned", "sinusoidal", "rope", "none")
NORM_KINDS = ("layernorm", "rmsnorm", "none")
BUGS = ("mask_zero", "scale_after_softmax", "no_max_subtraction", "divide_by_d_k")
DTYPES = ("fp32", "bf16")
# how q·k is scaled before the softmax: Config.scaled's three values and their names; the names are
# also accepted as values of `scaled` and of its input alias `attn_scale`
SCALINGS = {True: "1/sqrt(d)", False: "none", "1/d": "1/d"}
ATTN_SCALES = tuple(SCALINGS.values())
DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d{1,3})?)$")
SEED_MAX = 2**53  # seeds travel through JSON and JavaScript, exact up to 2**53
# Sane maxima, checked before anything is built: far above every run of the book (its longest run
# trains 10,000 steps, its largest model has d_model 256), far below what hangs or overflows
# (a list or module tree sized by the value). Whether a size fits in memory is checked where the
# model is built (attnlab.limits, attnlab.train.check_fits).
MAX_STEPS = 1_000_000
LIMITS = {
    "n_layer": 1024,
    "n_head": 65_536,
    "d_model": 2**20,
    "d_ff": 2**22,
    "block_size": 2**20,
    "vocab_size": 2**21,  # more than every Unicode character
    "batch_size": 2**20,
    "n_kv_head": 65_536,
    "max_steps": MAX_STEPS,
    "warmup": MAX_STEPS,
    "eval_batches": 10_000,
    "lr": 1e12,  # the divergence tests train at 1e9; 1e308 overflowed float32
    "init_std": 1e12,
    "weight_decay": 1e6,
    "grad_clip": 1e12,
}


# Fields that never change a run's numbers, left out of its identity (Config.run_key): the device it
# runs on (another machine is a reproducibility difference, not another run), how often it is
# validated (no_grad, on batches drawn before training from their own generator), when it checkpoints,
# and its attention snapshots (no_grad). record_every stays in: a recorded step takes the explicit
# attention path (attnlab.model), whose float32 rounding differs from the fused kernel's.
NOT_IDENTITY = frozenset({"device", "eval_every", "ckpt_every", "probe", "snapshot_every", "snapshot_dense"})


@dataclass(frozen=True)
class Config:
    # model (chapter §1.1, §1.18.4)
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 128
    d_ff: int | None = None  # None -> 2 * d_model, as in the book
    block_size: int = 64
    vocab_size: int = 1200
    # the scores q·k times 1/sqrt(d_head) (True, the book's), 1 (False) or 1/d_head ("1/d", muP):
    # the case study's one variable. `attn_scale="1/sqrt(d)" | "none" | "1/d"` is accepted as an input
    # alias, normalised here, and a run's stored config keeps the two keys every run was written with
    scaled: bool | str = True
    attn_scale: InitVar[str | None] = None
    tie_weights: bool = True
    init_std: float = 0.02
    # model variants (later experiments)
    pos: str = "learned"  # learned | sinusoidal | rope | none
    emb_scale: bool = False  # token embeddings x sqrt(d_model) before positions are added (Vaswani et al. §3.4)
    norm: str = "layernorm"  # layernorm | rmsnorm | none
    residual: bool = True
    qk_norm: bool = False
    learn_temp: bool = False  # exercise ⑬: a learnable temperature per head (starts at 1)
    n_kv_head: int | None = None  # None -> n_head (MHA); 1 -> MQA; else GQA
    bug: str | None = None  # injected bug of §1.11.7, None = correct
    # optimisation (§1.18.3)
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 100
    max_steps: int = 1500
    weight_decay: float = 0.1
    grad_clip: float = 1.0  # 0 disables clipping
    seed: int = 20261014
    device: str = "auto"  # auto -> cuda when present, else cpu
    dtype: str = "fp32"  # fp32 | bf16 (autocast; softmax and loss stay fp32)
    # evaluation and bookkeeping
    val_fraction: float = 0.1
    eval_every: int = 100
    eval_batches: int = 8
    record_every: int = 1  # per-layer attention diagnostics every N steps (0 = never)
    ckpt_every: int = 500
    # attention snapshots of one probe text during training (attnlab.snapshots, the /timeline page)
    probe: str = "秦川雄帝宅，函谷壯皇居。"  # the book's prompt line; cropped to block_size
    snapshot_every: int = 25  # snapshot every N steps (0 = never) ...
    snapshot_dense: int = 20  # ... and at every step below this one, where attention forms

    def __post_init__(self, attn_scale: str | None) -> None:
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", 2 * self.d_model)
        self._canonical_scale(attn_scale)
        self._check_types()
        self._check_values()

    def _canonical_scale(self, alias: str | None) -> None:
        """``scaled`` is True, False or "1/d"; its names ("1/sqrt(d)", "none") and the alias
        ``attn_scale`` become that value here, at the door."""
        by_name = {name: value for value, name in SCALINGS.items()}
        s = self.scaled
        if isinstance(s, str) and s in by_name:
            s = by_name[s]
        if not (s is True or s is False or s == "1/d"):
            raise ConfigError(
                f"config field 'scaled' = {self.scaled!r}: must be true (1/sqrt(d_head), the book's), "
                f"false (no scaling) or '1/d' (muP)"
            )
        if alias is not None:
            if alias not in by_name:
                raise ConfigError(f"config field 'attn_scale' = {alias!r}: must be one of {', '.join(ATTN_SCALES)}")
            if s is not True and by_name[alias] != s:  # scaled=True is the default: the alias says more
                raise ConfigError(
                    f"config field 'attn_scale' = {alias!r} contradicts scaled={self.scaled!r}; set only scaled"
                )
            s = by_name[alias]
        object.__setattr__(self, "scaled", s)

    # ------------------------------------------------------------------ derived
    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    @property
    def kv_heads(self) -> int:
        return self.n_head if self.n_kv_head is None else self.n_kv_head

    # ---------------------------------------------------------------- checking
    def _check_types(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            if f.name == "scaled":  # True, False or "1/d": checked by _canonical_scale
                continue
            value = getattr(self, f.name)
            want = hints[f.name]
            optional = _is_optional(want)
            base = [a for a in typing.get_args(want) if a is not type(None)][0] if optional else want
            if value is None and optional:
                continue
            ok = isinstance(value, base) and not (base is int and isinstance(value, bool))
            if base is float and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, f.name, float(value))
                ok = True
            if not ok:
                raise ConfigError(
                    f"config field '{f.name}' must be {base.__name__}, got {value!r} ({type(value).__name__})"
                )

    def _check_values(self) -> None:
        def need(cond: bool, name: str, why: str) -> None:
            if not cond:
                raise ConfigError(f"config field '{name}' = {getattr(self, name)!r}: {why}")

        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float):
                need(math.isfinite(v), f.name, "must be a finite number")
            if isinstance(v, str):  # bytes of another encoding arrive from the shell as lone surrogates
                need(
                    not any("\ud800" <= c <= "\udfff" for c in v),
                    f.name,
                    "holds bytes that are not UTF-8 (the shell passed another encoding); type it as UTF-8",
                )
        need(0 <= self.seed <= SEED_MAX, "seed", f"must be between 0 and 2**53 = {SEED_MAX}")
        for name, top in LIMITS.items():
            v = getattr(self, name)
            top_s = f"{top:,}" if isinstance(top, int) else f"{top:g}"
            need(v is None or v <= top, name, f"must be at most {top_s} (a sane maximum; {_book(name)})")
        for name in ("n_layer", "n_head", "d_model", "d_ff", "block_size", "batch_size"):
            need(getattr(self, name) > 0, name, "must be positive")
        need(
            self.d_model % self.n_head == 0,
            "d_model",
            f"must be divisible by n_head={self.n_head} (each head gets d_model/n_head dims)",
        )
        need(self.vocab_size >= 3, "vocab_size", "must be at least 3 (<pad>, <unk> and one character)")
        need(self.max_steps >= 0, "max_steps", "must be >= 0")
        need(self.warmup >= 0, "warmup", "must be >= 0")
        need(self.lr > 0, "lr", "must be positive")
        need(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        need(self.grad_clip >= 0, "grad_clip", "must be >= 0 (0 disables clipping)")
        need(self.init_std > 0, "init_std", "must be positive")
        need(0 < self.val_fraction < 1, "val_fraction", "must be between 0 and 1")
        need(self.eval_every >= 0, "eval_every", "must be >= 0 (0 = only at the end)")
        need(self.eval_batches > 0, "eval_batches", "must be positive")
        need(self.record_every >= 0, "record_every", "must be >= 0 (0 = never)")
        need(self.ckpt_every >= 0, "ckpt_every", "must be >= 0")
        need(self.snapshot_every >= 0, "snapshot_every", "must be >= 0 (0 = no snapshots)")
        need(self.snapshot_dense >= 0, "snapshot_dense", "must be >= 0")
        need(
            bool(self.probe) or self.snapshot_every == 0,
            "probe",
            "must be a non-empty text when snapshots are on (or set snapshot_every=0)",
        )
        need(self.pos in POS_KINDS, "pos", f"must be one of {', '.join(POS_KINDS)}")
        need(self.norm in NORM_KINDS, "norm", f"must be one of {', '.join(NORM_KINDS)}")
        need(self.bug is None or self.bug in BUGS, "bug", f"must be None or one of {', '.join(BUGS)}")
        need(self.dtype in DTYPES, "dtype", f"must be one of {', '.join(DTYPES)}")
        need(bool(DEVICE.match(self.device)), "device", "must be auto, cpu, mps, cuda or cuda:N")
        if self.pos == "rope":
            need(self.d_head % 2 == 0, "d_model", "RoPE needs an even head size (d_model/n_head)")
        if self.n_kv_head is not None:
            need(
                self.n_kv_head > 0 and self.n_head % self.n_kv_head == 0,
                "n_kv_head",
                f"must divide n_head={self.n_head} (GQA groups of equal size)",
            )

    # --------------------------------------------------------------- identity
    def identity(self) -> dict[str, Any]:
        """The fields that make a run's numbers what they are (the seed included), in canonical form:
        every field but those in ``NOT_IDENTITY`` (where and how often a run is looked at)."""
        return {k: v for k, v in self.to_dict().items() if k not in NOT_IDENTITY}

    def run_key(self) -> str:
        """A run's identity: a fingerprint of ``identity()``. Two names for one config and seed give
        the same key; a change to anything that changes training (or the validation it ends with)
        gives another. One (config, seed) is measured once: attnlab.runstore keeps its first numbers."""
        import hashlib
        import json

        text = json.dumps(self.identity(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    # ----------------------------------------------------------- construction
    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes``; d_ff follows d_model unless given or set explicitly."""
        unknown = set(changes) - {f.name for f in fields(self)} - {"attn_scale"}
        if unknown:
            raise ConfigError(
                f"unknown config key(s): {', '.join(sorted(unknown))}{_did_you_mean(unknown)}; "
                f"known keys: {', '.join(f.name for f in fields(self))}"
            )
        if "d_model" in changes and "d_ff" not in changes and self.d_ff == 2 * self.d_model:
            changes["d_ff"] = None
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Config:
        known = {f.name for f in fields(cls)} | {"attn_scale"}  # the stored form's second scaling key
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown config key(s): {', '.join(sorted(unknown))}{_did_you_mean(unknown)}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        """The stored form (config.json, checkpoints, run keys): every field, ``scaled`` as the two
        keys every run has been written with — scaled (True for "1/d" too) and attn_scale ("1/d" or None)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "scaled":
                out["scaled"], out["attn_scale"] = value is not False, ("1/d" if value == "1/d" else None)
            else:
                out[f.name] = value
        return out

    @classmethod
    def from_overrides(cls, items: list[str], base: Config | None = None) -> Config:
        """Parse ``["key=value", ...]`` (the CLI's ``--set``) into a Config."""
        base = base or cls()
        hints = typing.get_type_hints(cls)
        changes: dict[str, Any] = {}
        from .keyvalue import pairs  # the one KEY=VALUE parser, shared with --grid

        for key, raw in pairs(items, "--set"):
            if key not in hints:
                raise ConfigError(
                    f"unknown config key '{key}'{_did_you_mean([key])}; "
                    f"known keys: {', '.join(f.name for f in fields(cls))}"
                )
            changes[key] = _parse_value(key, raw, hints[key])
        return base.replace(**changes)


def _did_you_mean(keys) -> str:
    """`` (did you mean 'max_steps'?)`` for the first unknown key close to a field name, else ''."""
    names = [f.name for f in fields(Config)]
    for key in sorted(keys):
        close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)
        if close:
            return f" (did you mean '{close[0]}'?)"
    return ""


def _book(name: str) -> str:
    """The book's value of a limited field, for the message (the default or the big pair's)."""
    special = {
        "d_model": "the book's largest is 256",
        "d_ff": "the book's largest is 512",
        "n_kv_head": "at most n_head",
        "max_steps": "the book's longest run has 10,000",
    }
    return special.get(name) or f"the book uses {getattr(Config, name)!r}"


def _is_optional(hint: Any) -> bool:
    """``X | None`` (types.UnionType) or ``Optional[X]`` (typing.Union)."""
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _parse_value(key: str, raw: str, hint: Any) -> Any:
    if key in ("scaled", "attn_scale"):  # true/false, or a scaling's name ("1/d"): Config checks it
        low = raw.lower()
        return True if low in ("1", "true", "yes", "on") else False if low in ("0", "false", "no", "off") else raw
    optional = _is_optional(hint)
    base = [a for a in typing.get_args(hint) if a is not type(None)][0] if optional else hint
    if optional and raw.lower() in ("none", "null", ""):
        return None
    try:
        if base is bool:
            low = raw.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if base is int:
            return int(raw)
        if base is float:
            return float(raw)
        return raw
    except ValueError:
        raise ConfigError(f"config key '{key}' expects {base.__name__}, got {raw!r}") from None


# Named presets: dicts of overrides on top of the defaults.
PRESETS: dict[str, dict[str, Any]] = {
    "small": {},  # d_head 32, the chapter's model
    "big": {"d_model": 256, "n_head": 1},  # d_head 256, the case's second pair
    "tiny": {
        "n_layer": 1,
        "n_head": 2,
        "d_model": 32,
        "block_size": 32,
        "vocab_size": 200,
        "batch_size": 8,
        "max_steps": 50,
        "warmup": 5,
    },
}

BOOK_MODELS = ("small", "big")  # the chapter's two models (the case's pairs; `attnlab bench train`'s configs)

# §1.13.4's ablation checklist: the baseline and one Config change each (`attnlab ablate`, the lab book's
# ablation entry and its command line all read this one list)
ABLATIONS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "no_scaling": {"scaled": False},
    "no_residual": {"residual": False},
    "no_layernorm": {"norm": "none"},
    "untied": {"tie_weights": False},
    "no_positions": {"pos": "none"},
    "no_warmup": {"warmup": 0},
    "no_clipping": {"grad_clip": 0.0},
}


def preset(name: str, **changes: Any) -> Config:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset '{name}'; known: {', '.join(PRESETS)}")
    return Config().replace(**{**PRESETS[name], **changes})
