"""The runs the lab book's entries share, declared as data.

Every run is an :class:`attnlab.runner.Run`: a unique name, a ``Config`` and a
group (its folder under ``runs/``). Runs that the case study also trains use
the case's names, group and protocol, so the two share one folder and a run is
never trained twice. Each entry declares its own runs in its module; what two
entries share is here (the case's runs, the baseline, the QK-norm runs of §1.7.8
and the learning-rate map, §1.9's position runs and §1.13.4's "no positions"). ``quick`` shrinks every configuration the same way
(widths / 8, 20 steps, block 32): the tests exercise the whole book with it,
and its numbers mean nothing beyond "the plumbing works".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..book import book_values
from ..config import BOOK_MODELS, PRESETS, Config
from ..runner import Run

BOOK_SEED = 20261014
BOOK_RUN_STEPS = book_values("config_small")["max_steps"]  # the book's run (§1.4: 1500 steps)
# The weights entering these steps are kept beside every case run (checkpoint.KeepWeights):
# §1.12.1's table (222 … 1480), judged over several fixed validation batches, and the head
# dynamics of §1.12.4 (100, 500; the last is the trained model).
BOOK_STEPS = tuple(book_values("dynamics_big_1_12")["steps"][1:])
DYNAMICS_STEPS = (100, 500, BOOK_RUN_STEPS)
KEEP_WEIGHTS = tuple(sorted({*BOOK_STEPS, *DYNAMICS_STEPS[:-1]}))
SIZES = {name: PRESETS[name] for name in BOOK_MODELS}  # small: d_head 32, the chapter's model; big: d_head 256


@dataclass(frozen=True)
class Scale:
    """How large the book runs: full size (the committed results) or quick (tests)."""

    quick: bool = False
    steps: int = 1500
    seeds: int = 3
    first_seed: int = BOOK_SEED  # the confirmatory round (attnlab.lab.confirm) measures its own seed range

    @classmethod
    def make(cls, quick: bool) -> Scale:
        return cls(quick=True, steps=20, seeds=1) if quick else cls()

    def dynamics_steps(self) -> tuple[int, ...]:
        """§1.12.4's steps (the last is the trained model); the case's runs keep the others."""
        return (5, 10, 20) if self.quick else DYNAMICS_STEPS

    def seed_list(self, n: int | None = None) -> list[int]:
        return [self.first_seed + i for i in range(min(n or self.seeds, self.seeds))]

    def base(self) -> Config:
        """The case's protocol (attnlab.lab.case.run.case_runs): diagnostics every step,
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


def keep_case_weights(name: str, cfg: Config, keep_weights: tuple[int, ...] = KEEP_WEIGHTS) -> Run:
    """One run of the case: its folder is runs/case/NAME, and it keeps the weights of KEEP_WEIGHTS."""
    return Run(name, cfg, group="case", keep_weights=keep_weights)


def case_run(scale: Scale, size: str, scaled: bool, seed: int) -> Run:
    """A run of the case study (same name, group and config as attnlab.lab.case.run.case_runs)."""
    tag = "scaled" if scaled else "unscaled"
    name = f"{size}_{tag}_s{seed}" if size == "small" else f"big_{tag}"
    if size == "big" and seed != BOOK_SEED:
        name = f"big_{tag}_s{seed}"
    cfg = scale.cfg(**SIZES[size], scaled=scaled, seed=seed)
    if scale.quick:  # the weights the quick head dynamics reads
        return keep_case_weights(name, cfg, keep_weights=scale.dynamics_steps()[:-1])
    return keep_case_weights(name, cfg)


def baseline(scale: Scale, seed: int) -> Run:
    """The chapter's model (small, scaled, learned positions): the case's small scaled run."""
    return case_run(scale, "small", True, seed)


def qk_run(scale: Scale, size: str, scaled: bool, seed: int) -> Run:
    """§1.7.8's model with QK-norm (the case's design, one of its four runs); the learning-rate
    map's QK-norm points at the book's lr are these runs (one name formula, never trained twice)."""
    tag = "scaled" if scaled else "unscaled"
    return Run(
        f"qk_{size}_{tag}_s{seed}", scale.cfg(**SIZES[size], scaled=scaled, seed=seed, qk_norm=True), group="qk_norm"
    )


def position_run(scale: Scale, kind: str, seed: int, **changes) -> Run:
    """§1.9's runs: the chapter's model with positional scheme ``kind`` (``changes``, default
    ``pos=kind``); "learned" is the baseline. §1.13.4's ablation "no positions" is §1.9's "none"."""
    if kind == "learned":
        return baseline(scale, seed)
    return Run(
        f"pos_{kind}_s{seed}", scale.cfg(**SIZES["small"], **(changes or {"pos": kind}), seed=seed), group="positions"
    )


# ------------------------------------------------------------------- the case document's runs
def member_runs(res: dict, key: str) -> list[dict]:
    """The runs of the case's pair member ``key`` on every seed its document (data/ch1_case.json)
    stores: the first seed (``pairs``) first. The one reader of the case document's runs."""
    return [res["pairs"][key]] + list(res.get("seed_runs", {}).get(key, []))


def runs_by_name(res: dict) -> dict[str, dict]:
    """Every run the case document stores (its pairs and its further seeds), by run name."""
    out = {e["run"]: e for e in res.get("pairs", {}).values() if isinstance(e, dict) and "run" in e}
    for entries in res.get("seed_runs", {}).values():
        out.update({e["run"]: e for e in entries if "run" in e})
    return out
