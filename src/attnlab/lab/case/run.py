"""The chapter's case study (§1.1-§1.4, §1.7.6-§1.7.7, §1.12, §1.19) in one run.

Parts, each recorded in ``data/ch1_case.json``:
  init_sweep  §1.3   untrained one-layer one-head models, d_head 32..512, 400 inits each
  pairs       §1.2/§1.4  small (d_head 32) and big (d_head 256), scaled and unscaled,
                     same seed and batches, diagnostics at every step
  seeds       §1.19.2    the small pair on three seeds
  qk_scale    §1.7.7     q, k, logit scale and ||W_qkv|| before and after training
  samples     §1.4       the same prompt and sampling seed for each model
  claims      every qualitative statement, checked against the numbers above

Each training run lives in its own directory under ``<out>/runs/case/``; a run
that finished is reused and an interrupted one resumes, so stopping the case and
starting it again continues where it stopped. The runs train in batches
(:func:`case_stages`): the book's own protocol first, then the other seeds and the
weight-decay pairs; the result (and, from ``attnlab case``, the report) is written
after every batch, true to the runs finished so far.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ...config import PRESETS, Config
from ...corpus import DEFAULT_CORPUS, load_corpus, repo_relative
from ...diagnostics import DIAG_KEYS
from ...errors import AttnlabError, CheckpointError
from ...io import check_writable, write_json
from ...model import TinyGPT, generate
from ...runner import Run, check_run_folders, execute, local_processes
from ...tokenizer import CharTokenizer
from ...tools import environment, model_at_step, provenance, validation_batches
from ...train import History
from ...verdicts import count_line
from ..common import unigram_entropy
from ..labbook import beside, holds_less, write_unless_less
from ..runs import BOOK_STEPS, runs_by_name
from ..runs import keep_case_weights as case_run
from . import claims as C
from .claims import check_claims
from .settings import BOOK_SEED, CaseSettings

SMALL = PRESETS["small"]  # d_head 32 (the defaults)
BIG = PRESETS["big"]  # d_head 256
PROMPT = "秦川雄帝宅"


class CaseError(AttnlabError):
    pass


# ------------------------------------------------------------------------ init sweep
class _Observed(Exception):
    """Raised by a hook once the first layer's attention pattern is out: nothing after it is needed."""


def _stop(module, args, output) -> None:
    raise _Observed


@torch.no_grad()
def observe_first_attention(model: TinyGPT, x: torch.Tensor, taps: tuple[str, ...]) -> dict[str, list[torch.Tensor]]:
    """What ``model.capture(*taps)`` records of ``model(x)`` in layer 0's attention, the forward pass
    stopped right after that layer's pattern (the last of its taps): the projection, the MLP, later
    layers and the head change none of these values, and they were most of the init sweep's time."""
    with model.capture(*taps) as store:
        stop = model.blocks[0].attn.tap_pattern.register_forward_hook(_stop)  # after capture's own hook
        try:
            model(x)
        except _Observed:
            pass
        finally:
            stop.remove()
    return store


@torch.no_grad()
def init_sweep(
    d_heads=(32, 64, 128, 256, 512),
    samples: int = 400,
    seed: int = 0,
    on_sample: Callable[[], None] | None = None,
    d_model: int | None = None,
) -> list[dict]:
    """§1.3 / §1.19.1: logit scale of untrained models, scaled and unscaled.

    Protocol: n_head=1 (d_head = d_model), n_layer=1, vocab 300, block 32; one
    fixed batch of ids in [2, 300) of shape (8, 32) drawn from a generator seeded
    with ``seed``; ``samples`` independent initialisations (torch seeds seed,
    seed+1, ...) per d_head. Scaled and unscaled share each initialisation: the
    scaled twin gets the unscaled model's weights. Both are observed through their
    taps (the scores and the attention pattern each model computes itself; nothing
    of the attention is written again here). Statistics pool the causal entries (or
    rows) of all samples, in float64.

    ``d_model`` given: d_model stays fixed and n_head = d_model / d_head (issue 11: the
    book's sweep ties d_model to d_head, so Var(q_i) = d_model σ² grows with d_head too;
    holding d_model separates the two). Statistics then pool every head.
    """
    from ...diagnostics import jacobian_frobenius, masked_std, weight_entropy

    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(2, 300, (8, 32), generator=gen)
    T = x.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    n_valid = torch.arange(2, T + 1)  # rows 1..T-1
    taps = ("tap_scores", "tap_pattern", "tap_q", "tap_k")
    out = []
    for d in d_heads:
        dm = d if d_model is None else d_model
        cfg = Config(d_model=dm, n_head=dm // d, n_layer=1, vocab_size=300, block_size=32, scaled=False, device="cpu")
        seen: dict[str, list[torch.Tensor]] = {}
        twin = TinyGPT(cfg.replace(scaled=True)).eval()  # built once: each sample reseeds before its model
        for s in range(samples):
            torch.manual_seed(seed + s)
            model = TinyGPT(cfg).eval()
            # the same initialisation, divided by sqrt(d_head): the twin takes the model's tensors themselves
            twin.load_state_dict(model.state_dict(), assign=True)
            for name, m in (("unscaled", model), ("scaled", twin)):
                st = observe_first_attention(m, x, taps)
                for tap in taps:
                    seen.setdefault(f"{name}.{tap}", []).append(st[f"blocks.0.attn.{tap}"][0])
            if on_sample:
                on_sample()
        pooled = {k: torch.cat(v).double() for k, v in seen.items()}  # (samples*B, nh, T, T) / (..., hs)
        q = pooled["unscaled.tap_q"]
        row = {"d_head": d, "d_model": dm, "n_head": dm // d, "samples": samples, "theory_sqrt_d_head": math.sqrt(d)}
        for name in ("unscaled", "scaled"):
            p = pooled[f"{name}.tap_pattern"][..., 1:, :]
            row[f"logit_std_{name}"] = masked_std(pooled[f"{name}.tap_scores"], causal).item()
            row[f"entropy_{name}"] = weight_entropy(p, n_valid).mean().item()
            row[f"jacobian_{name}"] = jacobian_frobenius(p).mean().item()
        row["ratio_unscaled_to_theory"] = row["logit_std_unscaled"] / row["theory_sqrt_d_head"]
        var_q = dm * cfg.init_std**2  # eq. 1.1: Var(q_i) ≈ d_model σ²
        row["var_q_formula"] = var_q
        row["var_q_measured"] = q.var().item()
        row["formula_logit_std"] = var_q * math.sqrt(d)  # eq. 1.2: std = v sqrt(d_head)
        row["q_std"] = q.std().item()
        row["k_std"] = pooled["unscaled.tap_k"].std().item()
        out.append(row)
    return out


# --------------------------------------------------------------------- q/k scale
@torch.no_grad()
def qk_scale(model: TinyGPT, x: torch.Tensor) -> list[dict]:
    """§1.7.7 per layer on one batch: q std, k std, std and max |.| of the logits
    actually fed to the softmax (causal entries), and ||W_qkv||_F."""
    from ...diagnostics import masked_std

    was = model.training
    model.eval()
    with model.capture("tap_scores", "tap_q", "tap_k") as st:
        model(x)
    model.train(was)
    T = x.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    rows = []
    for i, blk in enumerate(model.blocks):
        s = st[f"blocks.{i}.attn.tap_scores"][0].double()
        rows.append(
            {
                "layer": i,
                "q_std": st[f"blocks.{i}.attn.tap_q"][0].std().item(),
                "k_std": st[f"blocks.{i}.attn.tap_k"][0].std().item(),
                "logit_std": masked_std(s, causal).item(),
                "logit_absmax": s[causal.expand_as(s)].abs().max().item(),
                "W_qkv_fro": blk.attn.qkv.weight.norm().item(),
            }
        )
    return rows


# ------------------------------------------------------------------------- runs
def case_runs(s: CaseSettings) -> tuple[list[list[Run]], dict[str, str]]:
    """Groups of same-shape runs and the name of each of the four pairs' runs.

    Groups: the small pair on every seed; the big pair on the first ``big_seeds``
    seeds and its unscaled member on the first ``big_unscaled_seeds`` (the first seed
    keeps its historical names ``big_unscaled`` / ``big_scaled``); the big pair at each
    weight decay in ``wd_values`` on the first ``wd_seeds`` seeds (names
    ``big_{tag}_wd{wd}_s{seed}``).
    """
    base = Config(
        max_steps=s.steps,
        device=s.device,
        record_every=1,
        eval_every=max(1, s.steps // 15),
        ckpt_every=max(50, s.steps // 6),
    )
    small = []
    for seed in s.seeds:
        for scaled in (False, True):
            tag = "scaled" if scaled else "unscaled"
            small.append(case_run(f"small_{tag}_s{seed}", base.replace(**SMALL, scaled=scaled, seed=seed)))
    n_big = {False: max(1, s.big_unscaled_seeds or s.big_seeds), True: max(1, s.big_seeds)}
    big = [
        case_run(big_name(sc, seed, s.seeds[0]), base.replace(**BIG, scaled=sc, seed=seed))
        for i, seed in enumerate(s.seeds)
        for sc in (False, True)
        if i < n_big[sc]
    ]
    wd = []
    for value in s.wd_values:
        for seed in s.seeds[: max(1, s.wd_seeds)]:
            for sc in (False, True):
                wd.append(
                    case_run(wd_name(sc, value, seed), base.replace(**BIG, scaled=sc, seed=seed, weight_decay=value))
                )
    first = s.seeds[0]
    pairs = {
        "small_unscaled": f"small_unscaled_s{first}",
        "small_scaled": f"small_scaled_s{first}",
        "big_unscaled": big_name(False, first, first),
        "big_scaled": big_name(True, first, first),
    }
    return [g for g in (small, big, wd) if g], pairs


def big_name(scaled: bool, seed: int, first_seed: int) -> str:
    """The big pair's run names: the book's seed keeps its historical ``big_unscaled`` / ``big_scaled``
    (as ``attnlab.lab.runs.case_run`` names them, so a case of other seeds finds the same folders)."""
    tag = "scaled" if scaled else "unscaled"
    return f"big_{tag}" if seed == BOOK_SEED else f"big_{tag}_s{seed}"


def wd_name(scaled: bool, wd: float, seed: int) -> str:
    return f"big_{'scaled' if scaled else 'unscaled'}_wd{wd:g}_s{seed}"


# --------------------------------------------------------------------- summaries
def seed_row(seed: int, u: dict, s: dict) -> dict:
    """One seed of the small pair: both members' end losses and the gap (validation and training)."""
    return {
        "seed": seed,
        "loss_end_unscaled": u["loss_end"],
        "loss_end_scaled": s["loss_end"],
        "val_loss_end_unscaled": u["val_loss_end"],
        "val_loss_end_scaled": s["val_loss_end"],
        "gap": u["val_loss_end"] - s["val_loss_end"],
        "gap_train": u["loss_end"] - s["loss_end"],
    }


def run_summary(history: History, window: int) -> dict:
    """History.summary plus the per-step trace the figures and claims are made from."""
    recs = history.records
    n_layer = len(next(r["layers"] for r in recs if r.get("layers")))
    val = history.val
    trace = {
        "step": [r["step"] for r in recs],
        "loss": [r["loss"] for r in recs],
        "grad_norm": [r["grad_norm"] for r in recs],
        "val_step": [s for s, _ in val],
        "val_loss": [v for _, v in val],
        "layers": [
            {key: [r["layers"][i][key] if r.get("layers") else None for r in recs] for key in DIAG_KEYS}
            for i in range(n_layer)
        ],
    }
    s = history.summary(window)
    return {
        **{k: s[k] for k in ("steps", "loss_start", "loss_end", "loss_last", "val_loss_end", "diverged_at")},
        "trace": trace,
    }


# ---------------------------------------------------------------------------- run
def compact_summary(history: History, window: int, digits: int = 5) -> dict:
    """A run of another seed or weight decay: end losses and the layer-0 trace the claims use,
    rounded to ``digits`` significant digits (the first seed keeps the full trace in ``pairs``)."""
    full = run_summary(history, window)
    r = lambda v: None if v is None else float(f"{v:.{digits}g}")
    tr = full["trace"]
    full["trace"] = {
        "step": tr["step"],
        "loss": [r(v) for v in tr["loss"]],
        "val_step": tr["val_step"],
        "val_loss": [r(v) for v in tr["val_loss"]],
        "layers": [
            {
                k: [r(v) for v in tr["layers"][0][k]]
                for k in ("weight_entropy", "jacobian_fro", "logit_std", "q_std", "k_std")
            }
        ],
    }
    return full


def case_stages(s: CaseSettings) -> list[tuple[str, list[Run]]]:
    """The order the case trains in, one batch after another: the book's own protocol first (the
    small pair on the first three seeds, §1.19.2, and both pairs' first seed), then each further
    seed's runs, then each weight decay's pairs. The report is written after every batch."""
    groups, pairs = case_runs(s)
    runs = [r for g in groups for r in g]
    by = {r.name: r for r in runs}
    first = s.seeds[0]
    book_seeds = s.seeds[:3]
    protocol = [by[f"small_{t}_s{seed}"] for seed in book_seeds for t in ("unscaled", "scaled")]
    protocol += [by[pairs["big_unscaled"]], by[pairs["big_scaled"]]]
    stages = [
        (
            f"书中的协议 / the book's protocol: small pair × {len(book_seeds)} seeds, big pair seed {first}",
            protocol,
        )
    ]
    taken = {r.name for r in protocol}
    for seed in s.seeds[1:]:
        names = [f"small_{t}_s{seed}" for t in ("unscaled", "scaled")]
        names += [big_name(sc, seed, first) for sc in (False, True)]
        batch = [by[n] for n in names if n in by and n not in taken]
        if batch:
            stages.append((f"种子 / seed {seed}: {', '.join(r.name for r in batch)}", batch))
            taken |= {r.name for r in batch}
    for value in s.wd_values:
        batch = [r for r in runs if r.name not in taken and r.cfg.weight_decay == value and "_wd" in r.name]
        if batch:
            stages.append((f"权重衰减 / weight decay {value:g}: {len(batch)} runs", batch))
            taken |= {r.name for r in batch}
    rest = [r for r in runs if r.name not in taken]  # nothing, unless case_runs grows a group
    if rest:
        stages.append(("其余 / the rest", rest))
    return stages


class CaseMeasure:
    """The case's measure: it opens the finished runs (``results``: name -> (model, tokenizer, history))
    and returns the result's sections, per seed. Each measurement is made once (qk and entries cached)."""

    def __init__(self, settings: CaseSettings, text: str, device, groups: list[list[Run]], pair_names: dict):
        self.settings, self.text, self.device = settings, text, device
        self.groups, self.pair_names = groups, pair_names
        self.results: dict[str, tuple] = {}
        self.tok: CharTokenizer | None = None
        self._qk: dict[str, dict] = {}
        self._entry: dict[str, dict] = {}
        self._first: tuple | None = None  # the pairs, their qk and samples: measured once

    def tokenizer(self, runs: list[Run]) -> CharTokenizer:
        if self.tok is None:
            first = next(iter(self.results.values()), None)
            self.tok = first[1] if first else CharTokenizer(self.text, runs[0].cfg.vocab_size)
        return self.tok

    def qk_of(self, name: str) -> dict:
        """§1.7.7's q/k scale of run ``name`` before and after training, on its fixed validation batch."""
        if name not in self._qk:
            cfg = _spec(self.groups, name)
            x = validation_batches(self.text, self.tok, cfg, 1, seed_offset=1)[0][0].to(self.device)  # seed+1
            before = model_at_step(cfg, 0).to(self.device)
            after = self.results[name][0].to(self.device)
            self._qk[name] = {"before": qk_scale(before, x), "after": qk_scale(after, x)}
        return self._qk[name]

    def entry(self, name: str) -> dict:
        """A run of another seed or weight decay: its config, compact summary and q/k scale."""
        if name not in self._entry:
            self._entry[name] = {
                "run": name,
                "config": _spec(self.groups, name).to_dict(),
                **compact_summary(self.results[name][2], self.settings.loss_window),
                "qk": self.qk_of(name),
            }
        return self._entry[name]

    def pairs(self) -> tuple[dict, dict, dict]:
        """(pairs, qk_scale, samples) of the four pair members on the first seed."""
        pairs, qk, samples = {}, {}, {}
        for key, name in self.pair_names.items():
            model, _, history = self.results[name]
            pairs[key] = {
                "run": name,
                "config": _spec(self.groups, name).to_dict(),
                **run_summary(history, self.settings.loss_window),
            }
            qk[key] = self.qk_of(name)
            samples[key] = generate(
                model, self.tok, PROMPT, self.settings.sample_tokens, seed=self.settings.sample_seed
            )
        return pairs, qk, samples

    def seed_runs(self, kept: dict[str, list], all_seeds: list[int]) -> dict[str, list]:
        """Each pair member's runs on the other seeds: ``kept`` and every finished one."""
        out = {k: list(v) for k, v in kept.items()}
        first = self.settings.seeds[0]
        for key in self.pair_names:
            size, tag = key.split("_")
            for seed in self.settings.seeds[1:]:
                name = f"small_{tag}_s{seed}" if size == "small" else big_name(tag == "scaled", seed, first)
                if name in self.results:
                    out.setdefault(key, []).append(self.entry(name))
        return order_seed_runs(out, all_seeds)

    def wd_pairs(self, kept: list[dict], wd_values: list[float], all_seeds: list[int]) -> list[dict]:
        """The big pair at each weight decay: ``kept`` and every pair whose two members finished."""
        out = list(kept)
        s = self.settings
        for value in s.wd_values:
            for seed in s.seeds[: max(1, s.wd_seeds)]:
                nu, ns = wd_name(False, value, seed), wd_name(True, value, seed)
                if nu in self.results and ns in self.results:
                    out.append(
                        {"weight_decay": value, "seed": seed, "unscaled": self.entry(nu), "scaled": self.entry(ns)}
                    )
        return sorted(out, key=lambda p: (wd_values.index(p["weight_decay"]), all_seeds.index(p["seed"])))

    def book_steps(self, book_steps: dict, runs: list[Run], root: Path, on_disk: set[str]) -> None:
        """§1.12.1's steps on fixed validation batches, for every big run that kept its weights (in place)."""
        for r in runs:
            big = r.cfg.d_model == BIG["d_model"] and r.cfg.n_head == BIG["n_head"]
            if big and (r.name in self.results or r.name in on_disk) and r.name not in book_steps["runs"]:
                d = diagnostics_at_steps(
                    r.dir(root), self.text, self.tok, r.cfg, (0, *BOOK_STEPS), book_steps["batches"], self.device
                )
                if len(d["steps"]) > 1:
                    book_steps["runs"][r.name] = d

    def sections(
        self,
        base: dict | None,
        runs: list[Run],
        all_seeds: list,
        wd_values: list,
        book_steps: dict,
        root: Path,
        on_disk,
    ) -> dict:
        """The result's measured sections from what finished so far (``base``'s kept as they are, its runs
        not measured again): pairs, qk_scale, samples, seeds, seed_runs, wd_pairs; book_steps in place."""
        self.tokenizer(runs)
        s = self.settings
        if base is not None:
            out = {"pairs": base["pairs"], "qk_scale": base["qk_scale"], "samples": base["samples"]}
        else:
            if self._first is None:
                self._first = self.pairs()
            pairs, qk, samples = self._first
            head = {"prompt": PROMPT, "seed": s.sample_seed, "max_new_tokens": s.sample_tokens}
            out = {"pairs": pairs, "qk_scale": qk, "samples": {**head, **samples}}
        out["seed_runs"] = self.seed_runs(base.get("seed_runs", {}) if base else {}, all_seeds)
        kept = base["seeds"] if base else {"runs": []}  # a row per seed whose two small members are stored
        rows = seed_rows(out["pairs"], out["seed_runs"], kept["runs"], all_seeds)
        out["seeds"] = {**kept, **seeds_summary(rows)} if len(rows) > len(kept["runs"]) else kept
        kept_wd = list(base.get("weight_decay", {}).get("pairs", [])) if base else []
        out["wd_pairs"] = self.wd_pairs(kept_wd, wd_values, all_seeds)
        self.book_steps(book_steps, runs, root, on_disk)
        return out


def judge(result: dict) -> list[dict]:
    """The case's judge: every claim from the numbers ``result`` stores (pure; what `attnlab report` re-runs)."""
    return check_claims(result)


def _init_sweeps(settings: CaseSettings, progress: bool, log: Callable[[str], None], timings: dict) -> list[dict]:
    """§1.3's sweep with a bar, its time in ``timings``."""
    n_init = settings.init_samples * len(settings.init_d_heads)
    if not progress:
        log(f"初始化扫描 / init sweep: {len(settings.init_d_heads)} d_head × {settings.init_samples} inits …")
    from tqdm.auto import tqdm  # a bar with ETA for the sweep (the runner draws its own for the training)

    bar = tqdm(total=n_init, unit="sample", dynamic_ncols=True, desc="init sweep", disable=not progress)
    try:
        t0 = time.perf_counter()
        sweep = init_sweep(
            settings.init_d_heads, settings.init_samples, settings.init_seed, on_sample=lambda: bar.update(1)
        )
        timings["init_sweep_s"] = time.perf_counter() - t0
    finally:
        bar.close()
    if not progress:
        log(f"初始化扫描完成 / init sweep done in {timings['init_sweep_s']:.0f} s")
    return sweep


def _fixed_sweeps(settings: CaseSettings, base: dict | None, timings: dict) -> tuple[list[dict], dict]:
    """§1.3 with d_model held at 512, and §1.8.4's 4-head model (untrained: cheap); a base's kept."""
    if base is not None and "init_sweep_fixed_d_model" in base and "init_four_heads" in base:
        return base["init_sweep_fixed_d_model"], base["init_four_heads"]  # kept, not redrawn
    t0 = time.perf_counter()
    fixed = init_sweep(settings.init_d_heads, settings.init_samples_fixed, settings.init_seed, d_model=512)
    four = init_sweep((64,), settings.init_samples_fixed, settings.init_seed, d_model=256)[0]
    timings["init_sweep_fixed_s"] = time.perf_counter() - t0
    return fixed, four


def _config_section(settings: CaseSettings, m: CaseMeasure, corpus: Path | None) -> dict:
    return {
        "settings": {
            **settings.to_dict(),
            "seeds": list(settings.seeds),
            "init_d_heads": list(settings.init_d_heads),
            "wd_values": list(settings.wd_values),
        },
        "small": _spec(m.groups, m.pair_names["small_scaled"]).to_dict(),
        "big": _spec(m.groups, m.pair_names["big_scaled"]).to_dict(),
        "corpus": repo_relative(corpus or DEFAULT_CORPUS),
        "corpus_chars": len(m.text),
        "corpus_unigram_entropy": unigram_entropy(m.text, m.tok),
        "qk_protocol": "layer by layer on one fixed validation batch: the first batch "
        "(batch_size x block_size) drawn from the validation split with a "
        "generator seeded seed+1 (the trainer's first evaluation batch); "
        "before = the run's own initialisation, after = end of training",
        "loss_end_protocol": f"loss_end = mean training loss of the last "
        f"{settings.loss_window} steps; gaps use validation loss",
    }


def _reused_config(
    cfg: dict, base: dict, settings: CaseSettings, stored: set[str], seed_runs, wd_pairs, book_steps, seeds_n: int, log
) -> dict:
    """``--reuse-json``: the config of a result merged into ``base`` (what this pass measured, in ``added``)."""
    old_cfg = base["config"]
    entries = [e["run"] for v in seed_runs.values() for e in v]
    entries += [p[t]["run"] for p in wd_pairs for t in ("unscaled", "scaled")]
    new_book = set(book_steps["runs"]) - set(base.get("book_steps", {}).get("runs", {}))
    added = sorted((set(entries) - stored) | new_book)  # what this pass measured
    log(
        f"--reuse-json: kept {len(stored)} stored runs; added {len(added)}"
        + (f" ({', '.join(added)})" if added else "")
        + f"; small seeds {seeds_n}, big unscaled "
        f"{len(seed_runs.get('big_unscaled', [])) + 1}"
        f", big scaled {len(seed_runs.get('big_scaled', [])) + 1}, weight-decay pairs {len(wd_pairs)}"
    )
    return {
        **cfg,
        **{k: old_cfg[k] for k in ("small", "big", "corpus", "corpus_unigram_entropy") if k in old_cfg},
        "settings": merged_settings(old_cfg["settings"], settings),
        "reused_from_json": "every section of the earlier data/ch1_case.json is kept as it was (init "
        "sweeps, pairs, qk_scale, samples, timings, environment, and each stored seeds row, seed run, "
        "weight-decay pair and book-steps run); the runs finished under runs/case that it did not "
        "hold are measured and added (config.added lists them)",
        "added": [*old_cfg.get("added", []), *added],
    }


def _train_stage(stage_runs, k, stages, runs, text, out, settings, progress, log, tensorboard, shown, state) -> dict:
    """Train one batch of runs; ``state`` keeps the names done, trained (config, steps) and reused."""
    from ...runner import steps_on_disk

    label = stages[k][0]
    if progress:
        log(f"第 {k + 1}/{len(stages)} 批 / batch {k + 1}/{len(stages)}: {label}")
    else:
        log(f"训练第 {k + 1}/{len(stages)} 批 / training batch {k + 1}/{len(stages)}: {label}")
    before = {r.name: steps_on_disk(r.dir(out / "runs")) for r in stage_runs}
    count = {"n": len(state["done"])}

    def said(r: dict) -> None:
        if r["status"] in ("trained", "resumed", "reused"):
            count["n"] += 1
        how = {"reused": "已完成，复用 / reused", "failed": f"失败 / failed: {r.get('error')}"}.get(
            r["status"], f"{r['status']} in {r['seconds']:.0f} s"
        )
        log(f"  {r['name']}: {how} — 已完成 / done {count['n']}/{len(runs)} runs")

    finished = execute(
        stage_runs,
        text,
        out / "runs",
        settings.execution.replace(progress=progress),
        log=log,
        desc=lambda: _bar_desc(k, len(stages), count["n"], len(runs), shown),
        tensorboard=tensorboard,
        on_result=said,
    )
    for name, f in finished.items():
        state["done"].append(name)
        if f.status == "reused":
            state["reused"].add(name)
        else:
            state["trained"].append((f.run.cfg, max(0, f.run.cfg.max_steps - before.get(name, 0))))
    return finished


def run_case(
    settings: CaseSettings,
    out: Path,
    corpus: Path | None = None,
    progress: bool | None = None,
    log: Callable[[str], None] = print,
    base: dict | None = None,
    tensorboard: bool = False,
    on_stage: Callable[[dict, dict], None] | None = None,
    overwrite: bool = False,
) -> dict:
    """Run every part of the case, write ``out/data/ch1_case.json``; return the result.

    The case's runs are data (:func:`case_runs`, trained in the batches of :func:`case_stages`), its
    measure opens them (:class:`CaseMeasure`), and its judge is pure (:func:`judge`); this function
    orchestrates the three. A result that holds less than the one already there (:func:`result_holds`:
    fewer runs measured, a claim judged on fewer seeds, fewer steps) goes beside it, to
    ``ch1_case.partial.json``, until it holds as much; with ``overwrite`` a smaller result replaces it
    once it is complete. ``on_stage``'s ``info["data"]`` is the file written.

    The runs train in batches: the book's own protocol first, then the other seeds and the weight-decay
    pairs. After each batch the result of everything finished so far is written (claims whose seeds are
    missing are INCONCLUSIVE) and ``on_stage(result, info)`` is called (``attnlab case`` rewrites the
    report there); ``result["progress"]`` says which runs the result holds and which are still to train.

    ``base``: an earlier result of the same steps and first seed (``attnlab case --reuse-json``).
    Nothing is trained then, and nothing ``base`` holds is dropped or measured again: its
    sections (``init_sweep``, ``pairs``, ``qk_scale``, ``samples``, ``timings``, and every row of
    ``seeds``, entry of ``seed_runs``, pair of ``weight_decay`` and run of ``book_steps``) are
    kept as they are, and every run of ``settings`` that finished under ``out/runs/case`` and
    that ``base`` does not hold is measured as the full case measures it and added (a seeds row
    for each small seed whose two members are then stored). Seeds may be added this way
    (``settings.seeds`` longer than ``base``'s), the unscaled big member on more seeds than the
    scaled one included.
    """
    from ...perf import measure_rates
    from ...runner import Finished, finished_history
    from ...train import resolve_device

    progress = settings.execution.progress if progress is None else progress  # the runner's bar and the case's
    out = Path(out)
    check_writable(out)
    text = load_corpus(corpus or DEFAULT_CORPUS, min_chars=65)
    device = resolve_device(settings.device)
    groups, pair_names = case_runs(settings)
    runs = [run for g in groups for run in g]
    m = CaseMeasure(settings, text, device, groups, pair_names)
    timings: dict = {}
    on_disk: set[str] = set()  # --reuse-json: the runs of settings finished under out/runs
    stored: set[str] = set()
    if base is not None:
        _check_base(base, settings, text)
        stored = stored_runs(base)
        for r in runs:
            try:
                if finished_history(r.dir(out / "runs"), r.cfg):
                    on_disk.add(r.name)
                    if r.name not in stored:  # what base holds is never measured again
                        m.results[r.name] = tuple(Finished(r, r.dir(out / "runs"), "reused"))
            except CheckpointError:
                pass
        sweep, stages, rates = base["init_sweep"], [("--reuse-json", [])], None
        merged = merged_settings(base["config"]["settings"], settings)
        all_seeds, wd_values = merged["seeds"], merged["wd_values"]
    else:
        check_run_folders(runs, out / "runs")  # every batch's folders, before the first batch trains
        stages = case_stages(settings)
        log(
            f"本章案例共 {len(runs)} 次训练，分 {len(stages)} 批；第 1 批完成后即写出报告 / the case trains "
            f"{len(runs)} runs in {len(stages)} batches; the report is written after batch 1 and rewritten "
            "after each further batch"
        )
        t0 = time.perf_counter()
        rates = measure_rates([r.cfg for r in runs], device=device)
        timings["matmul_rate_measure_s"] = time.perf_counter() - t0
        sweep = _init_sweeps(settings, progress, log, timings)
        timings.update(train_wall_s=0.0, analysis_s=0.0, executor=settings.execution.executor)
        timings["workers"] = _workers_used(settings, len(runs))
        all_seeds, wd_values = list(settings.seeds), list(settings.wd_values)

    book_steps = {"batches": settings.val_batches, "layer": 0, "runs": {}}
    if base is not None and "book_steps" in base:
        book_steps = {**base["book_steps"], "runs": dict(base["book_steps"]["runs"])}
    state: dict = {"done": [], "trained": [], "reused": set()}
    fixed = four = None
    result: dict = {}
    for k, (_, stage_runs) in enumerate(stages):
        if base is None:
            t0 = time.perf_counter()
            finished = _train_stage(
                stage_runs, k, stages, runs, text, out, settings, progress, log, tensorboard, result, state
            )
            timings["train_wall_s"] += time.perf_counter() - t0
            m.results.update({name: tuple(f) for name, f in finished.items()})  # (model, tok, history)

        t0 = time.perf_counter()  # measure: what finished so far, each run once
        sec = m.sections(base, runs, all_seeds, wd_values, book_steps, out / "runs", on_disk)
        seed_runs, wd_pairs = sec["seed_runs"], sec["wd_pairs"]
        analysis = time.perf_counter() - t0
        timings["analysis_s"] = timings.get("analysis_s", 0.0) + analysis if base is None else analysis
        if fixed is None:
            fixed, four = _fixed_sweeps(settings, base, timings)

        if base is None:
            floor = _floor_timings(
                rates, state["trained"], state["reused"], settings, device, len(runs), timings["train_wall_s"]
            )
            timings.update(floor)
            env, stage_timings = environment(device), timings
        else:  # the earlier run's timings stay as they were; this pass's own under other names
            stage_timings = {
                **base["timings"],
                "reuse_analysis_s": timings["analysis_s"],
                **{k2: timings[k2] for k2 in ("init_sweep_fixed_s",) if k2 in timings},
            }
            env = base["environment"]
        cfg_section = _config_section(settings, m, corpus)
        if base is not None:
            n_seeds = len(sec["seeds"]["runs"])
            cfg_section = _reused_config(
                cfg_section, base, settings, stored, seed_runs, wd_pairs, book_steps, n_seeds, log
            )
        pending = [r.name for later in stages[k + 1 :] for r in later[1]]
        result = {
            "kind": "ch1_case",
            **provenance(),
            "config": cfg_section,
            "init_sweep": sweep,
            "init_sweep_fixed_d_model": fixed,
            "init_four_heads": four,
            "pairs": sec["pairs"],
            "seeds": sec["seeds"],
            "seed_runs": seed_runs,
            "weight_decay": {"values": wd_values, "pairs": wd_pairs},
            "book_steps": {**book_steps, "runs": dict(book_steps["runs"])},
            "qk_scale": sec["qk_scale"],
            "samples": sec["samples"],
            "timings": dict(stage_timings),
            "environment": env,
        }
        if base is None:
            result["progress"] = {
                "batch": k + 1,
                "batches": len(stages),
                "complete": not pending,
                "runs_done": len(state["done"]),
                "runs_planned": len(runs),
                "pending": pending,
            }
        result["claims"] = judge(result)
        written = write_result(out, result, overwrite=overwrite, log=log)
        if on_stage is not None:
            nxt = stages[k + 1][0] if k + 1 < len(stages) else None
            on_stage(result, {"batch": k + 1, "batches": len(stages), "next": nxt, "data": written})
    return result


def _bar_desc(k: int, n_stages: int, done: int, n_runs: int, shown: dict) -> str:
    """The progress bar's label: the batch training, the runs done, and what the report shows."""
    from ...verdicts import FAIL, INCONCLUSIVE, PASS, counts

    if shown.get("claims"):
        c = counts(shown["claims"]).get("book", {})
        report = f"report: {c.get(PASS, 0)} PASS {c.get(FAIL, 0)} FAIL {c.get(INCONCLUSIVE, 0)} INCONCL."
    else:
        report = "report after this batch"
    return f"case batch {k + 1}/{n_stages} · done {done}/{n_runs} runs · {report}"


def _floor_timings(
    rates: dict,
    trained: list[tuple[Config, int]],
    reused: set[str],
    settings: CaseSettings,
    device,
    n_runs: int,
    train_wall: float,
) -> dict:
    """The training's floor and matmuls-alone time over the runs this invocation trained (reused
    runs and steps already on disk left out), from the rates measured before training."""
    import os

    from ...perf import floor_of

    cores = os.cpu_count() or 1
    if device.type == "cuda":
        parallel = 1
    elif settings.execution.executor == "local":
        workers, threads = local_processes(settings.execution.workers, n_runs)
        parallel = workers * threads  # the runner's processes x threads each
    elif settings.execution.executor == "ray":
        parallel = cores
    else:
        parallel = torch.get_num_threads()
    f = floor_of(trained, rates, parallel)
    has = f["floor_s"] > 0
    return {
        "train_flops": f["flops"],
        "matmul_rate_flops_per_s": rates["rate"],
        "matmul_rate_per": "core" if device.type == "cpu" else str(device),
        "matmul_rate_cores": parallel,
        "matmul_rate_protocol": rates["protocol"],
        "matmul_rate_load": rates["load"],
        "matmul_rate_reliable": rates["reliable"],
        "floor_runs": len(trained),
        "floor_steps": sum(steps for _, steps in trained),
        "train_floor_s": f["floor_s"],
        "train_matmuls_only_s": f["matmuls_only_s"],
        "matmuls_only_over_floor": f["matmuls_only_s"] / f["floor_s"] if has else None,
        "train_wall_over_floor": train_wall / f["floor_s"] if has else None,
        "reused_runs": bool(reused),
        "reused_run_names": sorted(reused),
    }


def _check_base(base: dict, settings: CaseSettings, text: str) -> None:
    """Refuse a base whose stored runs were measured otherwise than ``settings`` would measure new ones."""
    missing = [
        k for k in ("init_sweep", "pairs", "seeds", "qk_scale", "samples", "timings", "environment") if k not in base
    ]
    if missing:
        raise CaseError(f"the existing case result lacks {', '.join(missing)}; run `attnlab case` without --reuse-json")
    old = base["config"]["settings"]
    old_seeds = list(old.get("seeds", []))
    if old.get("steps") != settings.steps or old_seeds[:1] != list(settings.seeds[:1]):
        raise CaseError(
            f"the existing case result was run with steps {old.get('steps')} and first seed "
            f"{old_seeds[:1]}, not {settings.steps} and {list(settings.seeds[:1])}; run "
            f"`attnlab case` without --reuse-json"
        )
    for key in ("loss_window", "val_batches"):
        if key in old and old[key] != getattr(settings, key):
            raise CaseError(
                f"the existing case result measured with {key} {old[key]}, not {getattr(settings, key)}: "
                f"new runs would not be comparable; run `attnlab case` without --reuse-json"
            )
    chars = base["config"].get("corpus_chars")
    if chars is not None and chars != len(text):
        raise CaseError(
            f"the existing case result was trained on a corpus of {chars} characters, this one has "
            f"{len(text)}; pass the same --corpus"
        )


def settings_scale(s: CaseSettings) -> dict[str, int]:
    """What a case of ``s`` measures, in the units :func:`result_scale` reads from a result."""
    n = len(s.seeds)
    big = min(n, max(1, s.big_seeds))
    return {
        "steps": s.steps,
        "small seeds": n,
        "big seeds": big,
        "big unscaled seeds": min(n, max(big, s.big_unscaled_seeds or big)),
        "weight-decay pairs": len(s.wd_values) * min(max(1, s.wd_seeds), len(s.seeds)),
    }


def result_scale(res: dict) -> dict[str, int]:
    """What a stored case result measured: steps per run and the runs it holds."""
    from .claims import runs

    wd = (res.get("weight_decay") or {}).get("pairs", [])
    return {
        "steps": res["config"]["settings"]["steps"],
        "small seeds": len(res["seeds"]["runs"]),
        "big seeds": len(runs(res, "big_scaled")),
        "big unscaled seeds": len(runs(res, "big_unscaled")),
        "weight-decay pairs": len(wd),
    }


def check_not_smaller(out: Path, settings: CaseSettings, overwrite: bool = False) -> None:
    """Refuse (OverwriteError, one line) a case that would replace ``out/data/ch1_case.json`` made at a
    larger scale, unless ``overwrite``. An unreadable file is left to the run to replace."""
    from ...outputs import refuse_smaller_than_stored

    path = Path(out) / "data" / "ch1_case.json"
    refuse_smaller_than_stored(path, lambda p: result_scale(read_case_json(p)), settings_scale(settings), overwrite)


def result_holds(res: dict) -> dict:
    """What a case result actually holds (not what it planned), for the engine's ``holds_less``: steps
    per run, runs measured, and the seeds each claim was judged on."""
    claims = {}
    for c in res.get("claims") or []:
        if isinstance(c, dict) and isinstance(c.get("id"), str):
            n = c.get("n")
            ok = isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n)
            claims[c["id"]] = n if ok else 0
    steps = res["config"]["settings"]["steps"]
    return {"steps per run": steps, "runs measured": len(stored_runs(res)), "claims judged on fewer seeds": claims}


def write_result(out: Path, result: dict, overwrite: bool = False, log: Callable[[str], None] = print) -> Path:
    """Write ``result`` to ``out/data/ch1_case.json``, or beside it: to ``ch1_case.retrained.json`` when
    ``out`` measured some of its runs before with other numbers (one run per (config, seed),
    :func:`retrained`), else as the engine keeps any result that holds more (labbook.write_unless_less),
    unless ``overwrite`` and ``result`` is complete. Returns the path written. An unreadable file
    there is replaced."""
    path = Path(out) / "data" / "ch1_case.json"
    again = retrained(out, result)
    if again:
        aside = beside(path, "retrained")
        write_json(aside, result)
        runs = ", ".join(sorted({d["name"] for d in again}))
        log(
            f"这些运行本文件夹已测过，这次重训得到不同的数：{runs}。已判定的数不变；这次的结果写到 {aside}，"
            f"差异记在 data/run_store.json（复现差异）。要从头测一遍，请换一个文件夹（--out mine）/ this folder "
            f"measured these runs before and this training gives other numbers: {runs}. The judged numbers stay; "
            f"this result went to {aside} and the differences to data/run_store.json (reproducibility "
            "differences). To measure afresh, use another folder (--out mine)"
        )
        return aside
    less: list[str] = []
    if path.is_file() and not (overwrite and (result.get("progress") or {}).get("complete", True)):
        try:
            less = holds_less(result_holds(result), result_holds(read_case_json(path)))
        except (CaseError, KeyError, TypeError, AttributeError):
            less = []
    return write_unless_less(path, result, less, log)


def retrained(out: Path, result: dict) -> list[dict]:
    """The runs of ``result`` that ``out`` measured before with another final validation loss (its run
    store: data/run_store.json and the case already in data/), each a reproducibility difference, saved
    in the folder's data/run_store.json. A case is the first measurement of its runs or a retraining;
    it never replaces the numbers judged (attnlab.runstore)."""
    from ...runstore import RunStore, case_records

    store = RunStore.load(Path(out))
    source = beside(Path("data") / "ch1_case.json", "retrained").as_posix()
    found = []
    for member, r in case_records(result):
        name = f"case/{r.get('run') or member}"
        d = store.measured(Config.from_dict(r["config"]), name, r.get("val_loss_end"), source)
        if d is not None:
            found.append(d)
    if found:
        store.save(Path(out))
    return found


def seeds_summary(rows: list[dict]) -> dict:
    """The small pair's per-seed rows and their gaps' mean, min and max."""
    gaps = [r["gap"] for r in rows]
    return {"runs": rows, "mean_gap": sum(gaps) / len(gaps), "min_gap": min(gaps), "max_gap": max(gaps)}


def stored_runs(res: dict) -> set[str]:
    """Names of the runs a case result holds measurements of (pairs, seed_runs, weight_decay)."""
    wd = (res.get("weight_decay") or {}).get("pairs", [])
    return set(runs_by_name(res)) | {p[tag]["run"] for p in wd for tag in ("unscaled", "scaled")}


def merged_settings(old: dict, s: CaseSettings) -> dict:
    """The settings of a result that merges ``s``'s runs into one made with ``old``: seeds and weight
    decays the union (old ones first, in their order), seed counts the larger, the rest as ``old``."""
    seeds = [*old.get("seeds", []), *(x for x in s.seeds if x not in old.get("seeds", []))]
    wds = [*old.get("wd_values", []), *(v for v in s.wd_values if v not in old.get("wd_values", []))]
    new = s.to_dict()
    new_unscaled = s.big_unscaled_seeds or s.big_seeds
    old_unscaled = old.get("big_unscaled_seeds") or old.get("big_seeds", 1)
    return {
        **new,
        **old,
        "seeds": seeds,
        "wd_values": wds,
        "init_d_heads": list(old.get("init_d_heads", s.init_d_heads)),
        "big_seeds": max(old.get("big_seeds", 1), s.big_seeds),
        "big_unscaled_seeds": max(old_unscaled, new_unscaled),
        "wd_seeds": max(old.get("wd_seeds", 1), s.wd_seeds),
        **{k: new[k] for k in ("executor", "workers", "ray_address", "device")},
    }


def order_seed_runs(seed_runs: dict[str, list], seeds: list[int]) -> dict[str, list]:
    """Each pair member's runs, the seeds its partner also has first, then its own extra seeds, each
    group in the order of ``seeds``. Readers pair the two members by position (``zip`` of
    ``claims.runs``), so the paired seeds line up even when one member has more seeds than the other
    (issue 22: the big unscaled member beyond the big scaled one) or a seed of one is missing."""
    rank = {x: i for i, x in enumerate(seeds)}
    seed_of = lambda e: e["config"]["seed"]
    out = {}
    for key, entries in seed_runs.items():
        size, tag = key.split("_")
        partner = seed_runs.get(f"{size}_{'unscaled' if tag == 'scaled' else 'scaled'}", [])
        theirs = {seed_of(e) for e in partner}
        out[key] = sorted(entries, key=lambda e: (seed_of(e) not in theirs, rank.get(seed_of(e), len(rank))))
    return out


def seed_rows(pairs: dict, seed_runs: dict[str, list], rows: list[dict], seeds: list[int]) -> list[dict]:
    """The small pair's rows: ``rows`` (those a stored result keeps) and, after them in the order of ``seeds``,
    one for every other seed whose two small members are measured, from their end losses."""
    have = {r["seed"] for r in rows}
    member = {
        tag: {e["config"]["seed"]: e for e in [pairs[f"small_{tag}"], *seed_runs.get(f"small_{tag}", [])]}
        for tag in ("unscaled", "scaled")
    }
    out = list(rows)
    for seed in seeds:
        u, s = member["unscaled"].get(seed), member["scaled"].get(seed)
        if seed in have or u is None or s is None:
            continue
        out.append(seed_row(seed, u, s))
    return out


def _spec(groups: list[list[Run]], name: str) -> Config:
    return next(sp.cfg for g in groups for sp in g if sp.name == name)


@torch.no_grad()
def diagnostics_at_steps(
    run_dir: Path, text: str, tok: CharTokenizer, cfg: Config, steps: tuple[int, ...], batches: int, device
) -> dict:
    """Layer-0 diagnostics of one run's model at each of ``steps``, each on the same ``batches``
    fixed validation batches: mean and sd over the batches (issue 11: single training batches are
    noisy). Step 0 is the initial model (rebuilt from the seed), other steps the weights the run
    kept (checkpoint.KeepWeights); steps without kept weights are left out."""
    xs = [x.to(device) for x, _ in validation_batches(text, tok, cfg, batches)]
    out: dict = {"steps": [], **{k: {"mean": [], "sd": []} for k in DIAG_KEYS}}
    for step in steps:
        model = model_at_step(cfg, step, run_dir)
        if model is None:
            continue
        model = model.to(device).eval()
        per_batch = []
        for x in xs:
            with model.recording():
                model(x)
            per_batch.append(model.blocks[0].attn.last_diag)
        out["steps"].append(step)
        for k in DIAG_KEYS:
            vals = torch.tensor([d[k] for d in per_batch], dtype=torch.float64)
            out[k]["mean"].append(vals.mean().item())
            out[k]["sd"].append(vals.std().item() if len(vals) > 1 else 0.0)
    return out


def _workers_used(settings: CaseSettings, n_runs: int) -> int:
    if settings.execution.executor != "local":
        return 1 if settings.execution.executor == "serial" else 0
    return local_processes(settings.execution.workers, n_runs)[0]


# ------------------------------------------------------------------- reading results
def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{int(s // 60)} min {s % 60:02.0f} s"


def _entropy_at(res: dict, key: str, step: int) -> tuple[int, float] | None:
    """Layer-0 weight entropy of pair member ``key`` at the book's ``step``: on the fixed validation
    batches where the run kept that step's weights (book_steps), else the last-50-step training mean."""
    from .claims import end_mean

    d = (res.get("book_steps") or {}).get("runs", {}).get(res["pairs"][key]["run"])
    if d and step in d["steps"]:
        return step, d["weight_entropy"]["mean"][d["steps"].index(step)]
    run = res["pairs"][key]
    return (run["trace"]["step"][-1] + 1, end_mean(run, "weight_entropy")) if run["trace"]["step"] else None


def summary_lines(res: dict, phases: dict[str, float], quick: bool, full_plan: dict | None = None) -> list[str]:
    """What ``attnlab case`` ends with: a few lines, Chinese first, every number from ``res`` (and the
    wall times in ``phases``; ``full_plan``: ``case --plan``'s estimate for the full case, which a quick
    run names as what ``make case`` adds)."""
    from ...book import book_values
    from ...verdicts import REASON_LABELS, verdict_of
    from .claims import big_seed_gaps, small_seed_gaps

    S = res["config"]["settings"]
    steps, n_seeds = S["steps"], len(res["seeds"]["runs"])
    n_runs = len(stored_runs(res))
    B = book_values()
    dyn, loss = B["dynamics_big_1_12"], B["case_loss_1_2_and_1_4"]
    lines = []
    shown = [("初始化扫描 / init sweeps", phases.get("sweeps_s")), ("训练 / training", phases.get("train_s"))]
    shown += [("分析 / analysis", phases.get("analysis_s")), ("报告 / report", phases.get("report_s"))]
    other = phases["total_s"] - sum(v for _, v in shown if v is not None)
    shown += [("其余 / other", other)] if other >= 0.5 else []
    parts = " · ".join(f"{k} {_seconds(v)}" for k, v in shown if v is not None)
    head = "快速试跑 / quick run" if quick else "本章案例 / the case"
    lines.append(f"{head}：用时 / took {_seconds(phases['total_s'])}（{parts}）")
    lines.append(
        f"  训练了 / trained: {n_runs} 次 × {steps} 步，{n_seeds} 个种子 / {n_runs} runs × {steps} steps, "
        f"{n_seeds} seed(s)（书中 / the book: {C.BOOK_RUN_STEPS} steps）；初始化 / inits per d_head {S['init_samples']} + "
        f"{S['init_samples_fixed']}"
    )
    at = C.COLLAPSE_STEP  # the book's step 222
    ent = {k: _entropy_at(res, k, at) for k in ("big_unscaled", "big_scaled")}
    u_tr = res["pairs"]["big_unscaled"]["trace"]
    e_u = u_tr["layers"][0]["weight_entropy"]
    first = next((u_tr["step"][i] for i, e in enumerate(e_u) if e is not None and e < 0.01), None)
    fell = (
        f"，第 {first} 步跌破 0.01 / below 0.01 at step {first}"
        if first is not None
        else "，未跌破 0.01 / never below 0.01"
    )
    if ent["big_unscaled"] and ent["big_scaled"]:
        (su, eu), (_, es) = ent["big_unscaled"], ent["big_scaled"]
        e0u, e0s = e_u[0], res["pairs"]["big_scaled"]["trace"]["layers"][0]["weight_entropy"][0]
        i222 = dyn["steps"].index(at)
        lines.append(
            f"  核心结论 / headline (§1.4): d_head 256 不缩放 / unscaled 权重熵 / weight entropy {e0u:.3f} → {eu:.4f}"
            f"（第 {su} 步 / step {su}{fell}；书中 / book {dyn['unscaled']['weight_entropy'][0]} → "
            f"{dyn['unscaled']['weight_entropy'][i222]} at step {at}）；缩放 / scaled {e0s:.3f} → {es:.3f}（书中 / book "
            f"{dyn['scaled']['weight_entropy'][i222]}）"
        )
    g_big, g_small = big_seed_gaps(res), small_seed_gaps(res)
    lines.append(
        f"  验证 loss 差距 / val-loss gap (unscaled − scaled): d_head 256 {sum(g_big) / len(g_big):.2f}（书中 / book "
        f"{loss['gap_big']}），d_head 32 {sum(g_small) / len(g_small):.2f}（书中 / book {loss['gap_small']}）"
    )
    why: dict[str, int] = {}
    for c in res["claims"]:
        if c.get("kind") == "book" and verdict_of(c) == "FAIL":
            cat = (c.get("reason") or {}).get("category", "unexplained")
            why[cat] = why.get(cat, 0) + 1
    lines.append(f"  论断 / claims: {count_line(res['claims'])}")
    if why:
        order = [k for k in REASON_LABELS if k in why] + sorted(k for k in why if k not in REASON_LABELS)
        lines.append(
            "  FAIL 的原因 / why they fail: " + "，".join(f"{REASON_LABELS.get(k, k)} {why[k]}" for k in order)
        )
    if quick:
        lines.append(
            f"  快速判定只是冒烟测试，不是证据 / a quick verdict is a smoke run, not evidence: {n_seeds} 个种子、{steps} "
            f"步 / {n_seeds} seed(s), {steps} steps；FAIL（规模差异 / scale）= 这么短的运行检验不了 / too short to "
            f"test，INCONCLUSIVE = 种子不够 / needs more seeds"
        )
        if full_plan:
            full = CaseSettings()
            wd = "、".join(f"{v:g}" for v in full.wd_values)
            lines.append(
                f"  完整案例 / the full case（attnlab case）补上 / adds: {len(full.seeds)} 个种子 / seeds（大模型 / big {full.big_seeds}）、"
                f"{full.steps} 步 / steps、权重衰减 / weight decay {wd} 对照：{full_plan['runs']} 次训练 / runs，"
                f"约 / about {full_plan['wall']}（{full_plan['core']}；attnlab case --plan 的估计 / its estimate）"
            )
    return lines


def read_case_json(path: Path) -> dict:
    """A case result read back for the report, its shape checked before anything uses it."""
    from ...io import read_json

    path = Path(path)
    if not path.exists() and not path.is_symlink():  # a FIFO, a folder or a loop: read_json names it
        raise CaseError(f"case results not found: {path} (run `attnlab case` first)")
    result = read_json(path, error=CaseError, hint="; run `attnlab case` again")
    if not isinstance(result, dict):
        raise CaseError(f"{path} holds a JSON {type(result).__name__}, not a case result (an object)")
    missing = [k for k in ("init_sweep", "pairs", "seeds", "qk_scale", "claims") if k not in result]
    if missing:
        raise CaseError(f"{path} lacks {', '.join(missing)}: not a case result")
    from ...schemas import problem

    wrong = problem("case", result)  # the declared shape of a case result (attnlab.schemas.CaseResult)
    if wrong:
        raise CaseError(f"{path} does not have the shape of a case result ({wrong}); run `attnlab case` again")
    return result
