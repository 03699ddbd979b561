"""The case's settings: its seeds, run length, sweep sizes and executor (:class:`CaseSettings`).

Below both :mod:`attnlab.lab.case.run` (which runs a case of these settings) and
:mod:`attnlab.lab.case.claims` (whose ``scale_reason`` compares a result with the full case's
sizes), so neither has to import the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ...runner import ExecutorOptions
from ..runs import BOOK_RUN_STEPS, BOOK_SEED


@dataclass(frozen=True)
class CaseSettings:
    steps: int = BOOK_RUN_STEPS  # the book's run (§1.4)
    seeds: tuple[int, ...] = (BOOK_SEED, BOOK_SEED + 1, BOOK_SEED + 2)
    init_d_heads: tuple[int, ...] = (32, 64, 128, 256, 512)
    init_samples: int = 400
    init_samples_fixed: int = 100  # the d_model = 512 sweep (issue 11) and §1.8.4's 4-head point
    init_seed: int = 0
    sample_tokens: int = 40
    sample_seed: int = 0
    loss_window: int = 50  # loss_end = mean training loss of the last N steps
    # how the runs are executed (attnlab.runner.ExecutorOptions: executor, workers, ray_address, progress,
    # slurm); local: one process per core, one thread each
    execution: ExecutorOptions = ExecutorOptions("local")
    big_seeds: int = 3  # the big pair on the first N seeds (issue 11: spread for big claims)
    big_unscaled_seeds: int | None = None  # the big unscaled member alone on the first N seeds
    # (None: big_seeds; issue 22: its logit-scale claims read that member only)
    wd_values: tuple[float, ...] = (0.0, 0.01)  # the big pair also at these weight decays (§1.18.3
    # never states one; the default 0.1 is ours)
    wd_seeds: int = 1  # ... on the first N seeds
    val_batches: int = 8  # fixed validation batches for the diagnostics at §1.12.1's steps
    device: str = "auto"

    def to_dict(self) -> dict:
        """The settings as a result records them: the execution's executor, workers and ray_address in
        its place, flat (attnlab.runner.ExecutorOptions.record)."""
        out: dict = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out.update(value.record() if f.name == "execution" else {f.name: value})
        return out

    @classmethod
    def quick(cls, steps: int | None = None) -> CaseSettings:
        """The smoke run (``attnlab case --quick``, what the default tests run), about 2 minutes on 2 cores.

        It measures every part of the case once, small: the four runs of the book's protocol on the book's
        seed for 225 steps (the book's warmup and schedule; 225 reaches the book's step 222, where the
        unscaled big model has collapsed, and its weights there are measured on 2 fixed validation batches),
        the §1.3 sweep with 8 initialisations per d_head and the d_model-512 sweep with 3. It leaves to the
        full case (``make case``) the other seeds, the 1500 steps, the weight-decay pairs, 400 / 100 inits
        and 8 validation batches: its FAILs that come from the smaller scale say so (claims.scale_reason).
        """
        return cls(
            steps=steps or 225,
            seeds=(BOOK_SEED,),
            init_samples=8,
            init_samples_fixed=3,
            wd_values=(),
            val_batches=2,
        )
