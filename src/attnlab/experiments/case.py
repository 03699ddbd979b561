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
starting it again continues where it stopped.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from ..config import PRESETS, Config
from ..corpus import DEFAULT_CORPUS, load_corpus
from ..diagnostics import DIAG_KEYS
from ..errors import AttnlabError
from ..io import write_json
from ..model import TinyGPT, generate
from ..tokenizer import CharTokenizer
from ..runner import EXECUTORS, Run, execute
from ..train import History, get_batch, split_data
from .claims import check_claims
from .common import environment

BOOK_SEED = 20261014
SMALL = PRESETS["small"]                   # d_head 32 (the defaults)
BIG = PRESETS["big"]                       # d_head 256
PROMPT = "秦川雄帝宅"


@dataclass(frozen=True)
class CaseSettings:
    steps: int = 1500
    seeds: tuple[int, ...] = (BOOK_SEED, BOOK_SEED + 1, BOOK_SEED + 2)
    init_d_heads: tuple[int, ...] = (32, 64, 128, 256, 512)
    init_samples: int = 400
    init_seed: int = 0
    sample_tokens: int = 40
    sample_seed: int = 0
    loss_window: int = 50            # loss_end = mean training loss of the last N steps
    executor: str = "local"          # attnlab.runner: serial | local | ray
    workers: int | None = None       # local: processes (default: one per core, one thread each)
    ray_address: str | None = None
    device: str = "auto"

    @classmethod
    def quick(cls, steps: int | None = None) -> "CaseSettings":
        """A few hundred steps, one seed, fewer init samples: what the default tests run."""
        return cls(steps=steps or 250, seeds=(BOOK_SEED,), init_samples=40)


class CaseError(AttnlabError):
    pass


# ------------------------------------------------------------------------ init sweep
@torch.no_grad()
def init_sweep(d_heads=(32, 64, 128, 256, 512), samples: int = 400, seed: int = 0,
               on_sample: Callable[[], None] | None = None) -> list[dict]:
    """§1.3 / §1.19.1: logit scale of untrained models, scaled and unscaled.

    Protocol: n_head=1 (d_head = d_model), n_layer=1, vocab 300, block 32; one
    fixed batch of ids in [2, 300) of shape (8, 32) drawn from a generator seeded
    with ``seed``; ``samples`` independent initialisations (torch seeds seed,
    seed+1, ...) per d_head. Scaled and unscaled share each initialisation: the
    unscaled scores are captured and the scaled ones are the same divided by
    sqrt(d_head). Statistics pool the causal entries (or rows) of all samples.
    """
    from ..diagnostics import jacobian_frobenius, masked_std, weight_entropy

    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(2, 300, (8, 32), generator=gen)
    T = x.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    n_valid = torch.arange(2, T + 1)                        # rows 1..T-1
    out = []
    for d in d_heads:
        cfg = Config(d_model=d, n_head=1, n_layer=1, vocab_size=300, block_size=32,
                     scaled=False, device="cpu")
        scores_all, q_all, k_all = [], [], []
        for s in range(samples):
            torch.manual_seed(seed + s)
            model = TinyGPT(cfg).eval()
            with model.capture("tap_scores", "tap_q", "tap_k") as st:
                model(x)
            scores_all.append(st["blocks.0.attn.tap_scores"][0])      # (B, 1, T, T) unscaled
            q_all.append(st["blocks.0.attn.tap_q"][0])
            k_all.append(st["blocks.0.attn.tap_k"][0])
            if on_sample:
                on_sample()
        scores = torch.cat(scores_all).double()               # (samples*B, 1, T, T)
        q = torch.cat(q_all).double()
        row = {"d_head": d, "samples": samples, "theory_sqrt_d_head": math.sqrt(d)}
        for name, factor in (("unscaled", 1.0), ("scaled", 1.0 / math.sqrt(d))):
            sc = scores * factor
            p = sc.masked_fill(~causal, float("-inf")).softmax(-1)[..., 1:, :]
            row[f"logit_std_{name}"] = masked_std(sc, causal).item()
            row[f"entropy_{name}"] = weight_entropy(p, n_valid).mean().item()
            row[f"jacobian_{name}"] = jacobian_frobenius(p).mean().item()
        row["ratio_unscaled_to_theory"] = row["logit_std_unscaled"] / row["theory_sqrt_d_head"]
        var_q = d * cfg.init_std ** 2                           # eq. 1.1: Var(q_i) ≈ d_model σ²
        row["var_q_formula"] = var_q
        row["var_q_measured"] = q.var().item()
        row["formula_logit_std"] = var_q * math.sqrt(d)         # eq. 1.2: std = v sqrt(d_head)
        row["q_std"] = q.std().item()
        row["k_std"] = torch.cat(k_all).double().std().item()
        out.append(row)
    return out


# --------------------------------------------------------------------- q/k scale
@torch.no_grad()
def qk_scale(model: TinyGPT, x: torch.Tensor) -> list[dict]:
    """§1.7.7 per layer on one batch: q std, k std, std and max |.| of the logits
    actually fed to the softmax (causal entries), and ||W_qkv||_F."""
    from ..diagnostics import masked_std

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
        rows.append({
            "layer": i,
            "q_std": st[f"blocks.{i}.attn.tap_q"][0].std().item(),
            "k_std": st[f"blocks.{i}.attn.tap_k"][0].std().item(),
            "logit_std": masked_std(s, causal).item(),
            "logit_absmax": s[causal.expand_as(s)].abs().max().item(),
            "W_qkv_fro": blk.attn.qkv.weight.norm().item(),
        })
    return rows


# ------------------------------------------------------------------------- runs
@dataclass
class RunSpec:
    name: str
    cfg: Config


def case_runs(s: CaseSettings) -> tuple[list[list[RunSpec]], dict[str, str]]:
    """Groups of same-shape runs and the name of each of the four pairs' runs."""
    base = Config(max_steps=s.steps, device=s.device, record_every=1, eval_every=max(1, s.steps // 15),
                  ckpt_every=max(50, s.steps // 6))
    small = []
    for seed in s.seeds:
        for scaled in (False, True):
            tag = "scaled" if scaled else "unscaled"
            small.append(RunSpec(f"small_{tag}_s{seed}", base.replace(**SMALL, scaled=scaled, seed=seed)))
    big = [RunSpec(f"big_{'scaled' if sc else 'unscaled'}",
                   base.replace(**BIG, scaled=sc, seed=s.seeds[0])) for sc in (False, True)]
    first = s.seeds[0]
    pairs = {"small_unscaled": f"small_unscaled_s{first}", "small_scaled": f"small_scaled_s{first}",
             "big_unscaled": "big_unscaled", "big_scaled": "big_scaled"}
    return [small, big], pairs


# --------------------------------------------------------------------- summaries
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
        "layers": [{key: [r["layers"][i][key] if r.get("layers") else None for r in recs]
                    for key in DIAG_KEYS} for i in range(n_layer)],
    }
    s = history.summary(window)
    return {**{k: s[k] for k in ("steps", "loss_start", "loss_end", "loss_last", "val_loss_end",
                                  "diverged_at")}, "trace": trace}


# ---------------------------------------------------------------------------- run
def run_case(settings: CaseSettings, out: Path, corpus: Path | None = None,
             progress: bool = True, log: Callable[[str], None] = print, tensorboard: bool = False) -> dict:
    """Run every part of the case, write ``out/data/ch1_case.json``; return the result."""
    from ..train import resolve_device
    from ..perf import matmul_only_step_s, matmul_rate, train_flops

    out = Path(out)
    _check_writable(out)
    text = load_corpus(corpus or DEFAULT_CORPUS, min_chars=65)
    device = resolve_device(settings.device)
    groups, pair_names = case_runs(settings)
    timings: dict[str, float] = {}
    bar = _Progress(total=settings.init_samples * len(settings.init_d_heads), enabled=progress,
                    desc="init sweep")
    try:
        t0 = time.perf_counter()
        sweep = init_sweep(settings.init_d_heads, settings.init_samples, settings.init_seed,
                           on_sample=lambda: bar.update(1))
        timings["init_sweep_s"] = time.perf_counter() - t0
    finally:
        bar.close()

    t0 = time.perf_counter()
    runs = [Run(sp.name, sp.cfg, group="case") for g in groups for sp in g]
    finished = execute(runs, text, out / "runs", executor=settings.executor, workers=settings.workers,
                       ray_address=settings.ray_address, progress=progress, log=log, desc="ch1 case",
                       tensorboard=tensorboard)
    results = {name: tuple(f) for name, f in finished.items()}          # (model, tok, history)
    timings["train_wall_s"] = time.perf_counter() - t0
    timings["executor"] = settings.executor
    timings["workers"] = _workers_used(settings, len(runs))

    t0 = time.perf_counter()
    tok: CharTokenizer = next(iter(results.values()))[1]
    pairs = {}
    qk = {}
    samples = {}
    for key, name in pair_names.items():
        model, _, history = results[name]
        pairs[key] = {"run": name, "config": _spec(groups, name).to_dict(),
                      **run_summary(history, settings.loss_window)}
        cfg = _spec(groups, name)
        x = _fixed_val_batch(text, tok, cfg).to(device)
        torch.manual_seed(cfg.seed)
        before = TinyGPT(cfg).to(device)
        qk[key] = {"before": qk_scale(before, x), "after": qk_scale(model.to(device), x)}
        samples[key] = generate(model, tok, PROMPT, settings.sample_tokens, seed=settings.sample_seed)
    seeds = []
    for seed in settings.seeds:
        u = run_summary(results[f"small_unscaled_s{seed}"][2], settings.loss_window)
        s = run_summary(results[f"small_scaled_s{seed}"][2], settings.loss_window)
        seeds.append({"seed": seed,
                      "loss_end_unscaled": u["loss_end"], "loss_end_scaled": s["loss_end"],
                      "val_loss_end_unscaled": u["val_loss_end"], "val_loss_end_scaled": s["val_loss_end"],
                      "gap": u["val_loss_end"] - s["val_loss_end"],
                      "gap_train": u["loss_end"] - s["loss_end"]})
    gaps = [r["gap"] for r in seeds]
    timings["analysis_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    rate = matmul_rate(device=device)
    # the same matmuls at the models' own shapes, nothing else: the best any
    # implementation of these runs could do on this machine with this BLAS
    per_shape: dict[tuple, float] = {}
    matmuls_only = 0.0
    for g in groups:
        for sp in g:
            shape = (sp.cfg.d_model, sp.cfg.n_head, sp.cfg.n_layer, sp.cfg.batch_size, sp.cfg.block_size)
            if shape not in per_shape:
                per_shape[shape] = matmul_only_step_s(sp.cfg, device=device)
            matmuls_only += per_shape[shape] * sp.cfg.max_steps
    timings["matmul_rate_measure_s"] = time.perf_counter() - t0
    flops = sum(train_flops(sp.cfg, sp.cfg.max_steps) for g in groups for sp in g)
    train_wall = timings["train_wall_s"]
    timings.update({
        "train_flops": flops,
        "matmul_rate_flops_per_s": rate,
        "train_floor_s": flops / rate,
        "train_matmuls_only_s": matmuls_only,
        "matmuls_only_over_floor": matmuls_only / (flops / rate),
        "train_wall_over_floor": train_wall / (flops / rate),
        "reused_runs": train_wall < 0.5 * flops / rate,
    })
    result = {
        "config": {"settings": {**asdict(settings), "seeds": list(settings.seeds),
                                "init_d_heads": list(settings.init_d_heads)},
                   "small": _spec(groups, pair_names["small_scaled"]).to_dict(),
                   "big": _spec(groups, pair_names["big_scaled"]).to_dict(),
                   "corpus": str(corpus or DEFAULT_CORPUS), "corpus_chars": len(text),
                   "qk_protocol": "layer by layer on one fixed validation batch: the first batch "
                                  "(batch_size x block_size) drawn from the validation split with a "
                                  "generator seeded seed+1 (the trainer's first evaluation batch); "
                                  "before = the run's own initialisation, after = end of training",
                   "loss_end_protocol": f"loss_end = mean training loss of the last "
                                        f"{settings.loss_window} steps; gaps use validation loss"},
        "init_sweep": sweep,
        "pairs": pairs,
        "seeds": {"runs": seeds, "mean_gap": sum(gaps) / len(gaps), "min_gap": min(gaps),
                  "max_gap": max(gaps)},
        "qk_scale": qk,
        "samples": {"prompt": PROMPT, "seed": settings.sample_seed, "max_new_tokens": settings.sample_tokens,
                    **samples},
        "timings": timings,
        "environment": environment(device),
    }
    result["claims"] = check_claims(result)
    write_json(out / "data" / "ch1_case.json", result)
    return result


def _spec(groups: list[list[RunSpec]], name: str) -> Config:
    return next(sp.cfg for g in groups for sp in g if sp.name == name)


def _fixed_val_batch(text: str, tok: CharTokenizer, cfg: Config) -> torch.Tensor:
    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    _, val = split_data(ids, cfg)
    x, _ = get_batch(val, cfg.block_size, cfg.batch_size, torch.Generator().manual_seed(cfg.seed + 1))
    return x


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".attnlab-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise CaseError(f"cannot write to output directory {out}: {e.strerror}; "
                        f"choose another with --out DIR") from None


def _workers_used(settings: CaseSettings, n_runs: int) -> int:
    import os

    if settings.executor != "local":
        return 1 if settings.executor == "serial" else 0
    return max(1, min(settings.workers or os.cpu_count() or 1, n_runs))


class _Progress:
    """A bar with ETA for the init sweep (the runner draws its own for the training)."""

    def __init__(self, total: int, enabled: bool, desc: str):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="sample", dynamic_ncols=True, desc=desc)

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -------------------------------------------------------------------------- CLI
def _positive_int(value: str) -> int:
    import argparse

    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of steps, got {value!r}")
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of steps, got {value!r}")
    return n


def add_parser(sub) -> None:
    p = sub.add_parser("case", help="reproduce the chapter's case study / 复现第 1 章案例")
    p.add_argument("--steps", type=_positive_int, default=None, help="training steps per run (default 1500)")
    p.add_argument("--quick", action="store_true", help="a few hundred steps, one seed (what the tests run)")
    p.add_argument("--out", default=".", help="root for data/, figures/, reports/ and runs/ (default: here)")
    p.add_argument("--corpus", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="serial | local (worker processes, default) | ray")
    p.add_argument("--workers", type=int, default=None, help="processes for --executor local")
    p.add_argument("--ray-address", default=None, help="Ray cluster for --executor ray (default: RAY_ADDRESS "
                                                       "or a local instance)")
    p.add_argument("--tensorboard", action="store_true",
                   help="each run also writes TensorBoard event files (needs the tensorboard extra)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_case)

    p = sub.add_parser("report", help="rebuild figures and report from a case JSON / 由 JSON 重建图与报告")
    p.add_argument("json", nargs="?", default="data/ch1_case.json")
    p.add_argument("--out", default=None, help="root for figures/ and reports/ (default: two levels above JSON)")
    p.set_defaults(func=cmd_report)


def cmd_case(args) -> int:
    from ..report.case_report import build_report

    settings = CaseSettings.quick(args.steps) if args.quick else CaseSettings(steps=args.steps or 1500)
    settings = CaseSettings(**{**asdict(settings), "device": args.device,
                                      "executor": args.executor, "workers": args.workers,
                                      "ray_address": args.ray_address})
    out = Path(args.out)
    result = run_case(settings, out, corpus=Path(args.corpus) if args.corpus else None,
                      progress=not args.no_progress, log=lambda m: print(f"attnlab: {m}"),
                      tensorboard=args.tensorboard)
    paths = build_report(result, out)
    failed = [c for c in result["claims"] if not c["pass"]]
    print(f"论断 / claims: {len(result['claims']) - len(failed)} PASS, {len(failed)} FAIL")
    for c in failed:
        print(f"  FAIL {c['section']} {c['id']}: {c['statement']} (measured {c['measured']}, expected {c['expected']})")
    t = result["timings"]
    print(f"训练耗时 / training wall {t['train_wall_s']:.0f} s = {t['train_wall_over_floor']:.2f} x 算力下限 / floor "
          f"({t['train_flops'] / 1e12:.1f} TFLOP at {t['matmul_rate_flops_per_s'] / 1e9:.0f} GFLOP/s)")
    if "train_matmuls_only_s" in t:
        print(f"仅矩阵乘 / the same matmuls alone {t['train_matmuls_only_s']:.0f} s = "
              f"{t['matmuls_only_over_floor']:.2f} x floor")
    print("结果 / results: " + ", ".join(str(p) for p in [out / "data" / "ch1_case.json", *paths]))
    return 0


def cmd_report(args) -> int:
    import json

    from ..report.case_report import build_report

    path = Path(args.json)
    if not path.is_file():
        raise CaseError(f"case results not found: {path} (run `attnlab case` first)")
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise CaseError(f"{path} is not valid JSON ({e}); run `attnlab case` again") from None
    missing = [k for k in ("init_sweep", "pairs", "seeds", "qk_scale", "claims") if k not in result]
    if missing:
        raise CaseError(f"{path} lacks {', '.join(missing)}: not a case result")
    out = Path(args.out) if args.out else path.resolve().parent.parent
    for p in build_report(result, out):
        print(p)
    return 0
