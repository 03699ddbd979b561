"""The declared shape of every JSON file attnlab reads, checked at the door with pydantic.

Every reader goes through :func:`load` (or :func:`check` on a document already read with
:func:`attnlab.io.read_json`, which bounds its size and depth, refuses FIFOs and devices
without blocking, and refuses NaN and Infinity): the document is checked against the schema
of its kind *before* anything uses it or anything is written, and a document of the wrong
shape is refused in one line naming the file, the field and the command that rebuilds it::

    data/lab_book/markov.json: claims[3].verdict: 'MAYBE' is not one of 'PASS', 'FAIL', ...;
    rebuild it with `attnlab book --only markov`

The schemas check types strictly (a boolean is not a number, a string is not a mapping),
ranges (a count is not negative, a probability lies in [0, 1], a verdict, a claim kind, a
rule and a reason are named from their lists) and leave room for the keys a kind
legitimately carries beyond them (``extra="allow"``). They validate and return the
document unchanged: nothing is coerced, so what is read is what is written back.

One schema per kind (:data:`KINDS`):

  case              data/ch1_case.json (``attnlab case``)
  lab_book          data/lab_book.json (``attnlab book``)
  lab_book_entry    data/lab_book/<id>.json, with its timing record (``attnlab book --only <id>``)
  heads             a head portrait, data/head_portrait.json (``attnlab heads``)
  sweep             a sweep result, data/sweep_critical_dimension.json (``attnlab sweep``)
  failures          data/failure_symptoms.json (``attnlab failures``)
  run_config        RUN/config.json (and a checkpoint's config: :class:`attnlab.config.Config`)
  run_summary       RUN/summary.json
  run_timing        RUN/timing.json
  tokenizer         RUN/tokenizer.json
  plan_check        data/plan_check.json (``python scripts/plan_check.py``)
  bench_case_plan   data/bench_case_plan.json (``python scripts/bench_case_plan.py``)
  site_mark         SITE/.attnlab-site.json, the files ``attnlab site`` wrote there
  onnx_manifest     data/case_onnx/manifest.json (``python scripts/export_onnx.py``)
  slurm_config      ``--slurm-config`` (TOML or JSON)
  shipped_manifest  attnlab/data/case_runs/manifest.json (``python scripts/ship_case_models.py``)
  claims_registry   data/claims_registry.json (``attnlab claims --register`` / ``--amend``)
  run_store         data/run_store.json (``python scripts/run_store.py``, then ``attnlab book``)
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .config import MAX_STEPS
from .errors import AttnlabError, DataError

# ------------------------------------------------------------------ value types
Num = Annotated[float, Strict(), Field(allow_inf_nan=False)]  # a finite number; never a boolean or a string
NonNeg = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Prob = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Strict(), Field(ge=0)]
Pos = Annotated[int, Strict(), Field(ge=1)]
Steps = Annotated[int, Strict(), Field(ge=0, le=MAX_STEPS)]
Str = StrictStr
Loss = NonNeg  # a cross-entropy in nats: never negative (-1e308 is no loss), never NaN
RunCount = Annotated[int, Strict(), Field(ge=0, le=1_000_000)]  # runs of one entry: a 301-digit count is damage

# the names a stored claim may use (copies: attnlab.stats imports scipy; tests/test_schemas.py keeps them equal)
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "REPORTED", "NA")  # attnlab.stats.VERDICTS
CLAIM_KINDS = ("book", "question", "sanity", "prediction", "beyond")  # attnlab.verdicts.KINDS
REASONS = ("finding", "protocol", "ours", "scale", "unexplained")  # attnlab.verdicts.REASON_LABELS
RULES = ("effect", "value", "band", "every", "equivalence", "exact", "reported", "na", "all_of")  # attnlab.stats
STATUSES = ("done", "partial", "not_run")
PAIRS = ("small_unscaled", "small_scaled", "big_unscaled", "big_scaled")


class _Open(BaseModel):
    """A mapping with these fields checked and room for more (the kinds carry provenance, notes ...)."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)


# ------------------------------------------------------------------ claims (every judged kind)
class Reason(_Open):
    category: Literal[REASONS]  # type: ignore[valid-type]
    text: Str


class Look(_Open):
    """One look of a claim's sequential test (attnlab.sequential): its seeds, its p."""

    n: Pos
    p: Prob | None = None
    verdict: Literal[VERDICTS] | None = None  # type: ignore[valid-type]
    spent: Prob | None = None
    nominal: Prob | None = None


class Claim(_Open):
    """One judged statement (attnlab.verdicts.claim; older ones carry only ``pass``)."""

    id: Str
    kind: Literal[CLAIM_KINDS] = "book"  # type: ignore[valid-type]
    section: Str = ""
    statement: Str = ""
    rule: Literal[RULES] | None = None  # type: ignore[valid-type]
    inputs: dict[Str, Any] = {}
    verdict: Literal[VERDICTS] | None = None  # type: ignore[valid-type]
    passed: StrictBool | None = Field(None, alias="pass")
    interval: Annotated[list[Num | None], Field(min_length=2, max_length=2)] | None = None
    n: Count | None = None
    n_needed: Count | None = None
    seeds: list[Count] | None = None
    reason: Reason | None = None
    p: Prob | None = None  # the test's p-value
    seq: Literal[VERDICTS] | None = None  # type: ignore[valid-type]  # the sequential verdict over its looks
    seq_n_needed: Count | None = None
    looks: list[Look] = []
    holm: Literal[VERDICTS] | None = None  # type: ignore[valid-type]  # the verdict after Holm within its family

    @model_validator(mode="after")
    def _consistent(self):
        if self.verdict is not None and self.passed is not None and self.passed != (self.verdict == "PASS"):
            raise ValueError(f"pass is {self.passed} but verdict is {self.verdict}")
        lo, hi = self.interval or (None, None)
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"interval [{lo}, {hi}] has its ends the wrong way round")
        return self


Claims = list[Claim]


# ------------------------------------------------------------------ the case
class ModelConfig(_Open):
    """A run's config as stored in a result: the fields a judge reads."""

    n_layer: Pos
    n_head: Pos
    d_model: Pos
    scaled: StrictBool
    max_steps: Annotated[int, Strict(), Field(ge=1, le=MAX_STEPS)]
    seed: Count
    lr: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)] = 3e-3
    weight_decay: NonNeg = 0.1
    val_fraction: Prob = 0.1


class Trace(_Open):
    step: list[Steps]
    loss: list[Loss]
    grad_norm: list[Num | None] = []
    val_step: list[Steps] = []
    val_loss: list[Loss] = []
    layers: list[dict[Str, list[Num | None]]] = []

    @model_validator(mode="after")
    def _aligned(self):
        if len(self.step) != len(self.loss):
            raise ValueError(f"step has {len(self.step)} entries but loss {len(self.loss)}")
        if len(self.val_step) != len(self.val_loss):
            raise ValueError(f"val_step has {len(self.val_step)} entries but val_loss {len(self.val_loss)}")
        return self


class QkRow(_Open):
    layer: Count
    q_std: NonNeg
    k_std: NonNeg
    logit_std: NonNeg


class QkScale(_Open):
    before: list[QkRow]
    after: list[QkRow]


class RunEntry(_Open):
    """One trained run of the case (pairs.<pair>, seed_runs.<pair>[i], weight_decay.pairs[i].<side>)."""

    run: Str = ""
    config: ModelConfig
    steps: Steps
    loss_start: Loss
    loss_end: Loss
    val_loss_end: Loss
    loss_last: Loss | None = None
    diverged_at: Count | None = None
    trace: Trace
    qk: QkScale | None = None


class SeedRow(_Open):
    seed: Count
    gap: Num


class Seeds(_Open):
    runs: list[SeedRow]


class InitRow(_Open):
    d_head: Pos
    d_model: Pos
    n_head: Pos
    samples: Pos


class WeightDecayPair(_Open):
    weight_decay: NonNeg
    seed: Count
    unscaled: RunEntry
    scaled: RunEntry


class WeightDecay(_Open):
    values: list[NonNeg]
    pairs: list[WeightDecayPair]


class CaseSettings(_Open):
    steps: Annotated[int, Strict(), Field(ge=1, le=MAX_STEPS)]
    seeds: list[Count]


class CaseConfig(_Open):
    settings: CaseSettings | None = None


class CaseResult(_Open):
    """data/ch1_case.json."""

    kind: Literal["ch1_case"] = "ch1_case"
    config: CaseConfig = CaseConfig()
    init_sweep: list[InitRow]
    init_sweep_fixed_d_model: list[InitRow] = []
    pairs: dict[Literal[PAIRS], RunEntry]  # type: ignore[valid-type]
    seeds: Seeds
    seed_runs: dict[Literal[PAIRS], list[RunEntry]] = {}  # type: ignore[valid-type]
    weight_decay: WeightDecay | None = None
    qk_scale: dict[Literal[PAIRS], QkScale]  # type: ignore[valid-type]
    samples: dict[Str, Any] = {}
    timings: dict[Str, Any] = {}
    claims: Claims


# ------------------------------------------------------------------ the lab book
class Scale(_Open):
    quick: StrictBool
    steps: Annotated[int, Strict(), Field(ge=1, le=MAX_STEPS)]
    seeds: Pos


class RunConditions(_Open):
    """One run's machine while it trained (attnlab.runfolder.training_conditions)."""

    state: Literal["idle", "busy", "unknown"]
    cpu_s: NonNeg | None = None
    load: NonNeg | None = None
    load_start: NonNeg | None = None
    cpus: Pos | None = None
    threads: Pos | None = None


class TimingRecord(_Open):
    """An entry's "timings": what its runs cost (attnlab book --plan / case --plan read it)."""

    analysis_s: NonNeg = 0.0
    train_s: NonNeg = 0.0
    compute_s: NonNeg = 0.0
    runs: RunCount = 0
    timed_runs: RunCount = 0
    per_run: dict[Str, NonNeg] = {}
    # what each timed run's sessions say of the machine (runfolder.training_conditions); runs
    # timed before CPU time and load were recorded have none: their cores are unknown
    per_run_conditions: dict[Str, RunConditions] = {}


class RunRef(_Open):
    name: Str
    group: Str = ""
    done: StrictBool = False
    status: Str = ""


# an entry's per-seed table: seed (a string of digits) -> that seed's numbers
PerSeed = dict[Annotated[StrictStr, Field(pattern=r"^[0-9]+$")], dict[Str, Any]]


class PerSeedResults(_Open):
    per_seed: PerSeed


class DeepResults(PerSeedResults):
    long_per_seed: PerSeed  # the stretched control


class SweepEntryResults(_Open):
    points: list[dict[Str, Any]]  # one per d_head


# the results of these entries keep their numbers in these tables, the only shape read: the older
# shapes (lists in seed order, one seed's checklist, table rows only) were migrated once
# (scripts/migrate_lab_book_json.py, in git history) and are refused
ENTRY_RESULTS: dict[str, type[BaseModel]] = {
    **dict.fromkeys(
        ("ablation", "dynamics", "exercise1", "exercise2", "kv_cache", "markov", "positions", "qk_norm", "temperature"),
        PerSeedResults,
    ),
    "deep": DeepResults,
    "sweep": SweepEntryResults,
}


def results_problem(entry_id: str | None, results: Any) -> str | None:
    """What keeps the (non-empty) ``results`` of lab-book entry ``entry_id`` from today's shape, or None."""
    schema = ENTRY_RESULTS.get(entry_id or "")
    if schema is None or not results:
        return None
    why = _why(schema, results)
    return f"{why} (an older shape of results, no longer read)" if why and why.endswith(" is missing") else why


class LabBookEntry(_Open):
    """data/lab_book/<id>.json: one experiment in the common envelope (its results in today's shape:
    :data:`ENTRY_RESULTS`)."""

    kind: Literal["lab_book_experiment"] = "lab_book_experiment"
    id: Str
    section: Str = ""
    status: Literal[STATUSES]  # type: ignore[valid-type]
    scale: Scale | None = None
    runs: list[RunRef] = []
    results: dict[Str, Any] = {}
    claims: Claims = []
    figures: list[Str] = []
    notes: list[Str] = []
    timings: TimingRecord | None = None

    @field_validator("results")
    @classmethod
    def _today(cls, results: dict, info) -> dict:
        why = results_problem(info.data.get("id"), results)
        if why is not None:
            raise ValueError(why)
        return results


class BookSummary(_Open):
    experiments: Count
    done: Count = 0
    partial: Count = 0
    not_run: Count = 0
    claims: Count = 0
    passed: Count = Field(0, alias="pass")
    fail: Count = 0
    inconclusive: Count = 0


class Section(_Open):
    section: Str
    title: Str = ""
    experiments: list[Str]
    claims: Claims = []


class BookTimings(_Open):
    experiments: dict[Str, TimingRecord] = {}
    book: TimingRecord | None = None


class LabBook(_Open):
    """data/lab_book.json: the index of every entry, sections in the chapter's order."""

    kind: Literal["lab_book"] = "lab_book"
    summary: BookSummary
    status: dict[Str, Literal[STATUSES]] = {}  # type: ignore[valid-type]
    sections: list[Section]
    scale: Scale | None = None
    timings: BookTimings = BookTimings()


# ------------------------------------------------------------------ other results
class HeadRow(_Open):
    layer: Count
    head: Count
    entropy: NonNeg
    diag: Prob | None = None  # attention shares: on the diagonal, on the previous token
    prev: Prob | None = None
    distance: NonNeg | None = None


class HeadsResult(_Open):
    """A head portrait (attnlab heads): what ``heads --rejudge`` and the lab book judge again."""

    heads: list[HeadRow] = []
    claims: Claims = []
    other_seeds: list[dict[Str, Any]] = []


class SweepRow(_Open):
    status: Str = "done"
    seed: Count | None = None
    d_head: Pos | None = None
    scaled: StrictBool | None = None
    steps: Steps | None = None
    diverged_at: Count | None = None
    loss_end: float | None = None  # NaN only where the trial diverged (checked below)
    val_loss_end: float | None = None

    @model_validator(mode="after")
    def _nan_only_when_diverged(self):
        for name in ("loss_end", "val_loss_end"):
            v = getattr(self, name)
            if v is not None and not math.isfinite(v) and self.diverged_at is None:
                raise ValueError(f"{name} is {v} but the trial did not diverge (diverged_at is null)")
        return self


class SweepResult(_Open):
    """A sweep (attnlab sweep, data/sweep_critical_dimension.json): its trials and the gaps."""

    trials: list[SweepRow] = []
    gap: list[dict[Str, Any]] = []
    claims: Claims = []


class FailuresResult(_Open):
    claims: Claims = []


# ------------------------------------------------------------------ run folders
class RunConfigFile(_Open):
    """RUN/config.json (its fields are checked by :meth:`attnlab.config.Config.from_dict`)."""


class ScheduleSegment(_Open):
    from_step: Steps
    max_steps: Annotated[int, Strict(), Field(ge=1, le=MAX_STEPS)]


class Fingerprint(_Open):
    corpus_sha256: Str | None = None


class RunSummary(_Open):
    """RUN/summary.json (a diverged run's losses may be NaN: read with allow_nan)."""

    steps: Steps | None = None
    diverged_at: Count | None = None
    final_layers: list[dict[Str, Any]] = []
    fingerprint: Fingerprint | None = None
    schedule: list[ScheduleSegment] | None = None


class Session(_Open):
    seconds: NonNeg = 0.0
    # since CPU time and load were recorded (older sessions lack them: their cores are unknown)
    cpu_s: NonNeg | None = None  # the training process's CPU time, user + system
    load_start: NonNeg | None = None  # the machine's 1-minute load average at the start and end
    load_end: NonNeg | None = None
    cpus: Pos | None = None  # the machine's CPU count
    threads: Pos | None = None  # torch's threads


class RunTiming(_Open):
    """RUN/timing.json: one record per training session."""

    sessions: list[Session]


class PlanCheckRun(_Open):
    """One run of scripts/plan_check.py: the plan's estimate beside what it took."""

    name: Str
    config: dict[Str, Any]
    seconds: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
    cpu_s: NonNeg | None = None
    load: NonNeg | None = None
    load_start: NonNeg | None = None
    cpus: Pos | None = None
    threads: Pos | None = None
    estimate_s: NonNeg | None = None


class PlanCheckProbe(_Open):
    """The speed probe beside the calibration: ``steps`` training steps of ``config`` on one thread,
    the least CPU time of ``repeats`` (attnlab.lab.plan.probe); ``--plan`` runs it again and scales."""

    config: dict[Str, Any]
    steps: Annotated[int, Strict(), Field(gt=0, le=1000)]
    repeats: Annotated[int, Strict(), Field(gt=0, le=100)]
    cpu_s: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
    how: Literal["measured", "transferred"]


class PlanCheck(_Open):
    """data/plan_check.json: the plan against measurement (scripts/plan_check.py)."""

    kind: Literal["plan_check"] = "plan_check"
    runs: list[PlanCheckRun]
    probe: PlanCheckProbe | None = None


class BenchReference(_Open):
    """The run the factors are multiples of: its config and its timed CPU seconds alone."""

    config: dict[Str, Any]
    cpu_s: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


class BenchFactors(_Open):
    reference: BenchReference
    outside_timed: NonNeg
    sweeps: NonNeg
    report: NonNeg
    concurrency: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


class BenchCasePlan(_Open):
    """data/bench_case_plan.json: what `make case` spends beside its runs' timed training
    (scripts/bench_case_plan.py), as multiples of one reference run."""

    kind: Literal["bench_case_plan"] = "bench_case_plan"
    factors: BenchFactors


class TokenizerFile(_Open):
    type: Literal["char"] = "char"
    itos: list[Str]


class SlurmConfig(BaseModel):
    """--slurm-config: a small TOML or JSON table (attnlab.slurm_executor.SlurmOptions)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    partition: Str | None = None
    time: Str | Annotated[int, Strict(), Field(ge=1, le=10**7)] | None = None
    time_min: Annotated[int, Strict(), Field(ge=1, le=10**7)] | None = None
    cpus: Annotated[int, Strict(), Field(ge=1, le=4096)] | None = None
    parallelism: Annotated[int, Strict(), Field(ge=1, le=100_000)] | None = None
    mem_gb: Annotated[float, Strict(), Field(gt=0, le=1e6, allow_inf_nan=False)] | None = None
    max_requeues: Annotated[int, Strict(), Field(ge=0, le=1000)] | None = None
    folder: Str | None = None
    cluster: Literal["slurm", "local", "debug"] | None = None
    extra: dict[Str, Str | int | float | bool] = {}


# ------------------------------------------------------------------ the static site (attnlab.web.site)
Sha256 = Annotated[str, Strict(), Field(pattern=r"^[0-9a-f]{64}$")]
WEIGHTS_MAX_BYTES = 1 << 28  # one graph's weights.bin: the shipped ones are 1.4 and 4.2 MB


def _relative_path(rel: str) -> str:
    """A path inside a folder, as a manifest names it: relative, "/"-separated, no "." or ".." part."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{rel!r} is not a path inside the site")
    return rel


class SiteFile(_Open):
    bytes: Count
    sha256: Sha256


class SiteMark(_Open):
    """SITE/.attnlab-site.json: what ``attnlab site`` wrote there, file by file; a folder is replaced
    only when it holds nothing else (attnlab.web.site.check_out)."""

    format: Literal["attnlab-site-v2"]
    generator: Literal["attnlab site"]
    files: dict[Str, SiteFile]

    @field_validator("files")
    @classmethod
    def _inside(cls, files: dict) -> dict:
        for rel in files:
            _relative_path(rel)
        return files


class OnnxTensor(_Open):
    name: Str
    key: Str
    shape: list[Pos]
    offset: Annotated[int, Strict(), Field(ge=0, le=WEIGHTS_MAX_BYTES)]
    length: Annotated[int, Strict(), Field(ge=0, le=WEIGHTS_MAX_BYTES)]

    @model_validator(mode="after")
    def _size(self):
        if self.length != 4 * math.prod(self.shape):
            raise ValueError(f"{self.key}: length {self.length} is not 4 bytes x shape {self.shape}")
        return self


class OnnxRun(_Open):
    onnx: Str
    onnx_sha256: Sha256
    ckpt_sha256: Sha256
    weights_sha256: Sha256
    weights_bytes: Annotated[int, Strict(), Field(ge=0, le=WEIGHTS_MAX_BYTES)]
    tensors: list[OnnxTensor]
    outputs: Annotated[list[Str], Field(min_length=1)]

    @field_validator("onnx")
    @classmethod
    def _a_file_name(cls, name: str) -> str:
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise ValueError(f"{name!r} is not a file name in the manifest's folder")
        return name

    @model_validator(mode="after")
    def _tiled(self):
        """The tensors lie one after the other and fill weights.bin exactly (as the export writes them)."""
        end = 0
        for t in sorted(self.tensors, key=lambda t: t.offset):
            if t.offset != end:
                raise ValueError(f"tensor {t.key} starts at byte {t.offset}, not {end} where the one before ends")
            end += t.length
        if end != self.weights_bytes:
            raise ValueError(f"the tensors fill {end} bytes of weights.bin, not weights_bytes={self.weights_bytes}")
        return self


class OnnxManifest(_Open):
    """data/case_onnx/manifest.json (``python scripts/export_onnx.py``)."""

    format: Literal["attnlab-onnx-v1"]
    runs: dict[Str, OnnxRun]


# ------------------------------------------------------------------ the claims registry, the run store
class Spec(_Open):
    """A claim's specification (attnlab.claims_registry): a rule of attnlab.stats with its parameters and
    the input it reads; an all_of has parts; one registered in words has rule None and a criterion."""

    rule: Literal[RULES] | None = None  # type: ignore[valid-type]
    params: dict[Str, Any] | None = None
    reads: Str | None = None
    parts: list[Spec] | None = None
    criterion: Str | None = None
    reconstructed: StrictBool | None = None


class RegistryStamp(_Open):
    """When a claim was registered, or first judged on committed data."""

    commit: Str | None = None
    date: Str | None = None


class Amendment(_Open):
    date: Str
    what: Str = ""
    spec: Spec | None = None
    from_: Spec | None = Field(None, alias="from")
    kind: Literal[CLAIM_KINDS] | None = None  # type: ignore[valid-type]
    kind_from: Literal[CLAIM_KINDS] | None = None  # type: ignore[valid-type]
    verdict_before: Literal[VERDICTS] | None = None  # type: ignore[valid-type]
    why: Str = ""


class RegistryEntry(_Open):
    kind: Literal[CLAIM_KINDS] | None = None  # type: ignore[valid-type]
    spec: Spec | None = None
    registered: RegistryStamp | None = None
    first_data: RegistryStamp | None = None
    post_hoc: StrictBool = False
    amendments: list[Amendment] = []


class ClaimsRegistry(_Open):
    """data/claims_registry.json: each claim's specification and its history (attnlab.claims_registry)."""

    kind: Literal["claims_registry"]
    claims: dict[Str, RegistryEntry]


class StoredRun(_Open):
    seed: Annotated[int, Strict()]
    names: Annotated[list[Str], Field(min_length=1)]
    val_loss_end: Loss | None = None
    source: Str | None = None
    config: dict[Str, Any]


class Reproduction(_Open):
    """A retraining whose numbers disagreed with the stored run (attnlab.runstore.RunStore._differ)."""

    key: Str
    seed: Annotated[int, Strict()]
    name: Str
    stored: Loss | None = None
    retrained: Loss | None = None
    stored_source: Str | None = None
    retrained_source: Str | None = None
    delta: Num | None = None


class RunStoreFile(_Open):
    """data/run_store.json (attnlab.runstore): the first measurement of every (config, seed)."""

    kind: Literal["run_store"]
    runs: dict[Str, StoredRun]
    differences: list[Reproduction] = []


class PlannedClaim(_Open):
    experiment: Str
    seeds: Annotated[int, Strict(), Field(ge=0, le=1000)] | None = None
    power: Num
    core_s: Num
    bought: bool
    why: Str
    spec: dict[Str, Any] | None = None
    spec_sha256: Str


class ConfirmatoryPlan(_Open):
    """data/confirmatory_plan.json (attnlab.lab.confirm): the confirmatory round, registered before its runs."""

    kind: Literal["confirmatory_plan"]
    frozen: Str
    seed_start: Annotated[int, Strict(), Field(ge=0)]
    budget_core_s: Num
    spent_core_s: Num
    runs: dict[Str, list[Str]] = {}
    claims: dict[Str, PlannedClaim]


class ShippedFile(_Open):
    bytes: Count
    sha256: Sha256


class ShippedRun(_Open):
    files: dict[Str, ShippedFile]


class ShippedManifest(_Open):
    """attnlab/data/case_runs/manifest.json (scripts/ship_case_models.py): each shipped file's size and sha256."""

    runs: dict[Str, ShippedRun]


# ------------------------------------------------------------------ kinds
KINDS: dict[str, tuple[type[BaseModel] | Any, str]] = {
    # kind: (schema, the command that rebuilds such a file)
    "case": (CaseResult, "attnlab case"),
    "lab_book": (LabBook, "attnlab book --no-train"),
    "lab_book_entry": (LabBookEntry, "attnlab book --only {id}"),
    "heads": (HeadsResult, "attnlab heads"),
    "sweep": (SweepResult, "attnlab sweep"),  # read with allow_nan: a diverged trial
    "failures": (FailuresResult, "attnlab failures"),
    "run_config": (RunConfigFile, "train the run again (attnlab train --overwrite)"),
    "run_summary": (RunSummary, "train the run again (attnlab train --overwrite)"),
    "run_timing": (RunTiming, "delete it (the run's training time is then unknown)"),
    "tokenizer": (TokenizerFile, "train the run again (attnlab train --overwrite)"),
    "plan_check": (PlanCheck, "python scripts/plan_check.py"),
    "bench_case_plan": (BenchCasePlan, "python scripts/bench_case_plan.py"),
    "site_mark": (SiteMark, "it is not a mark attnlab wrote: give a new or empty folder"),
    "onnx_manifest": (OnnxManifest, "reinstall attnlab, or in a checkout run `python scripts/export_onnx.py`"),
    "slurm_config": (SlurmConfig, "fix the file (see `attnlab book --help`, --slurm-config)"),
    "claims_registry": (
        ClaimsRegistry,
        "restore it (git checkout -- data/claims_registry.json) or rebuild it: python scripts/backfill_registry.py",
    ),
    "run_store": (RunStoreFile, "rebuild it: python scripts/run_store.py"),
    "confirmatory_plan": (
        ConfirmatoryPlan,
        "restore it (git checkout -- data/confirmatory_plan.json): a registered plan is never rewritten",
    ),
    "shipped_manifest": (ShippedManifest, "reinstall attnlab (or python scripts/ship_case_models.py in a clone)"),
}


class SchemaError(DataError):
    """A JSON document of the wrong shape for its kind."""


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(
            ("function-", "literal[", "tuple[", "list[", "dict[", "union[", "nullable[", "[key]")
        ):
            continue  # pydantic's names of the branches it tried (and of a mapping's key)
        else:
            out += f".{part}" if out else str(part)
    return out or "the top level"


def _short(x: Any, n: int = 40) -> str:
    r = repr(x) if not isinstance(x, (dict, list)) else f"a {type(x).__name__} of {len(x)}"
    return r if len(r) <= n else r[: n - 1] + "…"


def problem(kind: str, obj: Any) -> str | None:
    """What is wrong with ``obj`` as a document of ``kind`` (``field: problem``), or None."""
    return _why(KINDS[kind][0], obj)


def _why(schema: type[BaseModel], obj: Any) -> str | None:
    """What is wrong with ``obj`` against ``schema`` (``field: problem``), or None."""
    try:
        schema.model_validate(obj)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where, msg, typ = _where(err["loc"]), err["msg"], err["type"]
        if typ == "missing":
            return f"{where} is missing"
        if typ == "model_type" or typ.endswith("_type"):
            got = "a boolean" if isinstance(err["input"], bool) else type(err["input"]).__name__
            want = {"model_type": "a mapping", "dict_type": "a mapping", "list_type": "a list"}.get(typ)
            return f"{where} is {got} ({_short(err['input'])}), not {want or msg.replace('Input should be ', '')}"
        if typ == "extra_forbidden":
            return f"unknown option {where}; known: {', '.join(sorted(schema.model_fields))}"
        msg = msg.replace("Input should be", "should be").replace("Value error, ", "")
        return f"{where}: {_short(err['input'])} {msg}" if typ != "value_error" else f"{where}: {msg}"
    return None


def _hint(kind: str, fmt: dict) -> str:
    """ "; rebuild it with `COMMAND`" (or the kind's own advice) for a file of ``kind``."""
    again = KINDS[kind][1].format(**fmt) if "{" in KINDS[kind][1] else KINDS[kind][1]
    return f"; rebuild it with `{again}`" if again.startswith("attnlab") else f"; {again}"


def check(kind: str, obj: Any, path: str | os.PathLike, *, error: type[AttnlabError] = SchemaError, **fmt) -> Any:
    """``obj`` unchanged when it has the shape of ``kind``; else ``error`` in one line naming
    ``path``, the field and the command that rebuilds it (``fmt`` fills the command, e.g. id=)."""
    why = problem(kind, obj)
    if why is not None:
        raise error(f"{path}: {why}{_hint(kind, {'id': Path(path).stem, **fmt})}")
    return obj


def load(
    kind: str,
    path: str | os.PathLike,
    *,
    error: type[AttnlabError] = SchemaError,
    allow_nan: bool = False,
    max_bytes: int | None = None,
    **fmt,
) -> Any:
    """The JSON document of ``kind`` in ``path``, read within bounds (:func:`attnlab.io.read_json`)
    and checked against its schema; one line naming the file, the field and the fix otherwise."""
    from .io import JSON_MAX_BYTES, read_json

    kw = {"max_bytes": max_bytes or JSON_MAX_BYTES}
    obj = read_json(path, error=error, hint=_hint(kind, {"id": Path(path).stem, **fmt}), allow_nan=allow_nan, **kw)
    return check(kind, obj, path, error=error, **fmt)
