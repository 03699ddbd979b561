"""The training runs of the lab book, declared as data.

Every run is an :class:`attnlab.runner.Run`: a unique name, a ``Config`` and a
group (its folder under ``runs/``). Runs that the case study also trains use
the case's names, group and protocol, so the two share one folder and a run is
never trained twice. ``quick`` shrinks every configuration the same way
(widths / 8, 20 steps, block 32): the tests exercise the whole book with it,
and its numbers mean nothing beyond "the plumbing works".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config import POS_KINDS, Config
from ..experiments import case
from ..runner import Run

BOOK_SEED = case.BOOK_SEED
SMALL = {"d_model": 128, "n_head": 4}  # d_head 32, the chapter's model
BIG = {"d_model": 256, "n_head": 1}  # d_head 256, the case's second pair
SIZES = {"small": SMALL, "big": BIG}


@dataclass(frozen=True)
class Scale:
    """How large the book runs: full size (the committed results) or quick (tests)."""

    quick: bool = False
    steps: int = 1500
    seeds: int = 3

    @classmethod
    def make(cls, quick: bool) -> Scale:
        return cls(quick=True, steps=20, seeds=1) if quick else cls()

    def dynamics_steps(self) -> tuple[int, ...]:
        """§1.12.4's steps (the last is the trained model); the case's runs keep the others."""
        return (5, 10, 20) if self.quick else case.DYNAMICS_STEPS

    def seed_list(self, n: int | None = None) -> list[int]:
        return [BOOK_SEED + i for i in range(min(n or self.seeds, self.seeds))]

    def base(self) -> Config:
        """The case's protocol (attnlab.experiments.case.case_runs): diagnostics every step,
        15 validations, 6 checkpoints. Sharing it lets the book reuse the case's runs."""
        s = self.steps
        cfg = Config(max_steps=s, record_every=1, eval_every=max(1, s // 15), ckpt_every=max(50, s // 6))
        if self.quick:
            cfg = cfg.replace(
                batch_size=4, block_size=32, vocab_size=200, warmup=5, eval_every=10, eval_batches=2, ckpt_every=10
            )
        return cfg

    def cfg(self, **changes) -> Config:
        """``base()`` with ``changes``; quick divides every width by 8 (head counts stay)."""
        if self.quick and "d_model" in changes:
            changes = {**changes, "d_model": max(changes["d_model"] // 8, changes.get("n_head", 4))}
        elif self.quick:
            changes = {**changes, "d_model": 16}
        return self.base().replace(**changes)


def case_run(scale: Scale, size: str, scaled: bool, seed: int) -> Run:
    """A run of the case study (same name, group and config as attnlab.experiments.case)."""
    tag = "scaled" if scaled else "unscaled"
    name = f"{size}_{tag}_s{seed}" if size == "small" else f"big_{tag}"
    if size == "big" and seed != BOOK_SEED:
        name = f"big_{tag}_s{seed}"
    cfg = scale.cfg(**SIZES[size], scaled=scaled, seed=seed)
    if scale.quick:  # the weights the quick head dynamics reads
        return case.case_run(name, cfg, keep_weights=scale.dynamics_steps()[:-1])
    return case.case_run(name, cfg)


def baseline(scale: Scale, seed: int) -> Run:
    """The chapter's model (small, scaled, learned positions): the case's small scaled run."""
    return case_run(scale, "small", True, seed)


def qk_norm_runs(scale: Scale) -> list[Run]:
    """§1.7.8: the case's four-run design with QK-norm, every seed."""
    return [
        Run(
            f"qk_{size}_{'scaled' if sc else 'unscaled'}_s{seed}",
            scale.cfg(**SIZES[size], scaled=sc, seed=seed, qk_norm=True),
            group="qk_norm",
        )
        for seed in scale.seed_list()
        for size in ("small", "big")
        for sc in (False, True)
    ]


# §1.9's schemes, and a control on the sinusoidal one: the table added to token embeddings scaled by
# sqrt(d_model), as the original Transformer does (this model's embeddings are 36 times smaller than it)
POS_CONTROL = "sinusoidal_emb_scale"
POSITIONS = {k: {"pos": k} for k in POS_KINDS} | {POS_CONTROL: {"pos": "sinusoidal", "emb_scale": True}}


def position_runs(scale: Scale, kind: str, seed: int) -> Run:
    if kind == "learned":
        return baseline(scale, seed)
    return Run(f"pos_{kind}_s{seed}", scale.cfg(**SMALL, **POSITIONS[kind], seed=seed), group="positions")


ABLATION = {  # §1.13.4, one Config change each (attnlab.experiments.ablate)
    "no_scaling": {"scaled": False},
    "no_residual": {"residual": False},
    "no_layernorm": {"norm": "none"},
    "untied": {"tie_weights": False},
    "no_positions": {"pos": "none"},
    "no_warmup": {"warmup": 0},
    "no_clipping": {"grad_clip": 0.0},
}


def ablation_run(scale: Scale, change: str, seed: int) -> Run:
    if change == "baseline":
        return baseline(scale, seed)
    if change == "no_scaling":
        return case_run(scale, "small", False, seed)
    if change == "no_positions":
        return position_runs(scale, "none", seed)
    return Run(f"abl_{change}_s{seed}", scale.cfg(**SMALL, **ABLATION[change], seed=seed), group="ablate")


def exercise1_run(scale: Scale, scaled: bool, seed: int) -> Run:
    """Exercise 1: n_head 2 at d_model 128 (d_head 64)."""
    return Run(
        f"ex1_{'scaled' if scaled else 'unscaled'}_s{seed}",
        scale.cfg(d_model=128, n_head=2, scaled=scaled, seed=seed),
        group="exercise1",
    )


def deep_run(scale: Scale, seed: int) -> Run:
    """§1.18.5 ③: four layers."""
    return Run(f"deep4_s{seed}", scale.cfg(**SMALL, n_layer=4, seed=seed), group="deep")


def deep_long_run(scale: Scale, n_layer: int, seed: int) -> Run:
    """§1.18.5 ③'s control: two and four layers trained twice as long (the whole schedule
    stretched: warmup, cosine and validations), to test "four layers are only undertrained"."""
    long = replace(scale, steps=2 * scale.steps)
    return Run(f"deep{n_layer}_long_s{seed}", long.cfg(**SMALL, n_layer=n_layer, seed=seed), group="deep")


def kv_run(scale: Scale, n_kv_head: int, seed: int) -> Run:
    """§1.8.8: GQA (2 KV heads) and MQA (1) at the small configuration; 4 = the baseline (MHA)."""
    if n_kv_head == 4:
        return baseline(scale, seed)
    return Run(f"kv{n_kv_head}_s{seed}", scale.cfg(**SMALL, n_kv_head=n_kv_head, seed=seed), group="gqa")


# the exercise's sequence, and 112 where the committed sweep and the 3-seed gaps put the change
EX2_D_HEADS = (32, 64, 96, 112, 128, 192, 256)


def exercise2_run(scale: Scale, d_head: int, scaled: bool, seed: int, fixed_d_model: bool = False) -> Run:
    """Exercise 2: n_head 1 and d_model = d_head (as the committed sweep), or d_model 256 fixed
    and n_head = 256 / d_head. At d_head 256 both are the case's big run (shared, never retrained)."""
    d_model, n_head = (256, 256 // d_head) if fixed_d_model else (d_head, 1)
    if {"d_model": d_model, "n_head": n_head} == BIG:  # d_head 256 in both variants: the case's big pair
        return case_run(scale, "big", scaled, seed)
    tag = "scaled" if scaled else "unscaled"
    return Run(
        f"ex2{'f' if fixed_d_model else ''}_d{d_head}_{tag}_s{seed}",
        scale.cfg(d_model=d_model, n_head=n_head, scaled=scaled, seed=seed),
        group="exercise2",
    )


def temperature_run(scale: Scale, seed: int) -> Run:
    """Exercise ⑬: the unscaled big model with a learnable temperature per head (1 at init)."""
    return Run(
        f"temp_big_unscaled_s{seed}", scale.cfg(**BIG, scaled=False, learn_temp=True, seed=seed), group="temperature"
    )


# Beyond the chapter (issue 23): learning-rate sensitivity of four attention scalings. The chapter's
# own point is lr 3e-3 ("实测这个值收敛最快", §1.18.4); the grid spans it by half-decades.
LR_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
LR_SCALINGS = {  # name -> Config changes
    "1/sqrt(d)": {},
    "none": {"scaled": False},
    "1/d": {"attn_scale": "1/d"},
    "qk_norm": {"qk_norm": True},
    "qk_norm_none": {"qk_norm": True, "scaled": False},
}
BOOK_LR = 3e-3


def lr_run(scale: Scale, size: str, scaling: str, lr: float, seed: int) -> Run:
    """One point of the learning-rate map. At the book's lr the model is the case's (1/sqrt(d), none)
    or the QK-norm experiment's (qk_norm, qk_norm_none) run: shared, never trained twice."""
    changes = LR_SCALINGS[scaling]
    if lr == BOOK_LR and scaling in ("1/sqrt(d)", "none"):
        return case_run(scale, size, scaling == "1/sqrt(d)", seed)
    if lr == BOOK_LR and scaling in ("qk_norm", "qk_norm_none"):
        sc = scaling == "qk_norm"
        return Run(
            f"qk_{size}_{'scaled' if sc else 'unscaled'}_s{seed}",
            scale.cfg(**SIZES[size], scaled=sc, seed=seed, qk_norm=True),
            group="qk_norm",
        )
    slug = {"1/sqrt(d)": "sqrt", "none": "none", "1/d": "inv_d", "qk_norm": "qk", "qk_norm_none": "qk_none"}[scaling]
    return Run(f"lr_{size}_{slug}_lr{lr:g}_s{seed}", scale.cfg(**SIZES[size], **changes, lr=lr, seed=seed), group="lr")
