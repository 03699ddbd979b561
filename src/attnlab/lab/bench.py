"""Speed measurements: ``attnlab bench train`` and ``attnlab bench attention``.

train (issue #7)
    ms per training step of the small (default Config) and big (d_model 256,
    n_head 1) models: TinyGPT recording diagnostics every step
    (``record_every=1``, explicit attention) and never (``0``, SDPA), a plainly
    written nanoGPT-style model of the same shape (``reference_gpt``), and
    the same step's matrix multiplies alone. Reported as ratios to the reference, as
    tokens/s, and as achieved GFLOP/s against this machine's float32 matmul
    rate, which is measured in the same interleaved loop.

attention (§1.14.2, §1.8.9)
    one causal attention forward, 8 heads, d_head 64, for n = 512, 1024, ...:
    ``F.scaled_dot_product_attention``, the explicit path (matmul, mask,
    softmax, matmul) and ``attnlab.attention.blocked_attention``, with peak
    memory, against the chapter's RTX A6000 numbers.

Protocol, everywhere: warm-up calls excluded, then ``repeats`` rounds in which
every variant is timed once in turn (A, B, C, A, B, C, ...) so that slow drifts
of a shared machine hit all variants alike; the number reported is the median
over rounds. On CUDA every timing is bracketed by ``torch.cuda.synchronize``.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..config import BOOK_MODELS, PRESETS, Config
from ..io import write_figure
from ..perf import interleaved, matmul_once, matmul_stepper, sync, train_flops
from ..runfolder import load_average, machine_cpus
from ..snapshots import snapshot_steps
from ..tools import environment, provenance
from ..train import get_batch, lr_at, make_optimizer, resolve_device, train_step
from .reference_gpt import ReferenceGPT

CONFIGS = {name: PRESETS[name] for name in BOOK_MODELS}
SNAPSHOT_RUN_STEPS = 1500  # snapshot cost is reported as an average over a run this long


# ==================================================================== bench train
def _token_stream(cfg: Config, n: int = 200_000) -> torch.Tensor:
    """Random token ids: the speed of a step does not depend on the text."""
    return torch.randint(cfg.vocab_size, (n,), generator=torch.Generator().manual_seed(0))


def attnlab_stepper(cfg: Config, data: torch.Tensor) -> Callable[[], dict]:
    """One step of ``attnlab.train``'s own step function per call."""
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    from ..model import TinyGPT

    model = TinyGPT(cfg).to(device)
    opt = make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.dtype == "bf16" else nullcontext()
    counter = iter(range(10**9))
    return lambda: train_step(
        model, opt, data=data, gen=gen, cfg=cfg, step=next(counter), device=device, autocast=autocast
    )


def snapshot_taker(cfg: Config, run_dir: Path) -> Callable[[], None]:
    """One attention snapshot per call, with the atomic rewrite of a file already holding a
    whole run's snapshots (the last and largest rewrite of a run: a conservative cost)."""
    from ..model import TinyGPT
    from ..snapshots import SnapshotRecorder
    from ..tokenizer import CharTokenizer

    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg).to(device)
    rec = SnapshotRecorder(run_dir, cfg, CharTokenizer(cfg.probe, cfg.vocab_size))
    full = max(1, len(snapshot_steps(cfg)))
    counter = iter(range(10**9))

    def take() -> None:
        rec._take(next(counter), model)
        if len(rec.steps) > full:  # keep the file at a full run's size
            del rec.steps[0], rec.patterns[0], rec.metrics[0]

    for _ in range(full - 1):
        take()
    return take


def reference_stepper(cfg: Config, data: torch.Tensor) -> Callable[[], float]:
    """One plain training step of ReferenceGPT per call (same optimizer, clip, batches)."""
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    model = ReferenceGPT(cfg).to(device)
    opt = make_optimizer(model, cfg)  # only needs .parameters()
    gen = torch.Generator().manual_seed(cfg.seed)
    counter = iter(range(10**9))

    def step() -> float:
        lr = lr_at(next(counter), cfg)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(data, cfg.block_size, cfg.batch_size, gen)
        x, y = x.to(device), y.to(device)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        return loss.item()

    return step


def bench_train(
    configs: tuple[str, ...] = ("small", "big"),
    records: tuple[int, ...] = (1, 0),
    repeats: int = 5,
    warmup: int = 2,
    device: str = "auto",
    matmul_sizes: tuple[int, ...] = (1024, 2048),
    reference: bool = True,
    overrides: tuple[str, ...] = (),
    log: Callable[[str], None] | None = None,
    snapshots: bool = True,
) -> dict:
    """Time training steps; returns a JSON-able dict (rows per config and variant).

    overrides: ``key=value`` strings applied to every config (the CLI's --set),
    e.g. to shrink the models in tests.
    """
    dev = resolve_device(device)
    result: dict[str, Any] = {
        "kind": "bench_train",
        **provenance(),
        "machine": environment(dev),
        "protocol": {
            "repeats": repeats,
            "warmup": warmup,
            "statistic": "median over interleaved rounds",
            "matmul_sizes": list(matmul_sizes),
        },
        "configs": {},
    }
    rate_rounds: list[float] = []
    mm = {n: matmul_once(n, dev) for n in matmul_sizes}
    for name in configs:
        base = Config().replace(**CONFIGS[name], device=str(dev), max_steps=10**6)
        cfg = Config.from_overrides(list(overrides), base)
        data = _token_stream(cfg)
        fns: dict[str, Callable] = {}
        runs: dict[str, int] = {}
        meta: dict[str, dict] = {}
        if reference:
            fns["reference"] = reference_stepper(cfg, data)
            runs["reference"] = 1
            meta["reference"] = {"impl": "reference", "R": 1, "record_every": 0}
        for rec in records:
            key = f"attnlab record_every={rec}"
            fns[key] = attnlab_stepper(cfg.replace(record_every=rec), data)
            runs[key], meta[key] = 1, {"impl": "attnlab", "R": 1, "record_every": rec}
        # the ceiling of this model's own matrix shapes
        fns["matmuls only"] = matmul_stepper(cfg, 1, dev)
        runs["matmuls only"], meta["matmuls only"] = 1, {"impl": "matmuls_only", "R": 1, "record_every": None}
        for n, fn in mm.items():  # the matmul roof, measured in the same rounds
            fns[f"matmul {n}"] = fn
        snap_dir = None
        if snapshots and 1 in records:  # attention snapshots of the probe (attnlab.snapshots)
            snap_dir = tempfile.TemporaryDirectory(prefix="attnlab-bench-")
            fns["snapshot"] = snapshot_taker(cfg.replace(max_steps=SNAPSHOT_RUN_STEPS), Path(snap_dir.name))
        if log:
            log(f"bench train {name}: {len(fns)} variants x {repeats} rounds")
        cpu: dict[str, list[float]] = {}
        load_start = load_average()
        times = interleaved(fns, repeats, warmup, dev, cpu=cpu)
        recording = recording_cost(times, cpu, records, load_start, load_average())
        snap_s = statistics.median(times.pop("snapshot")) if snap_dir else None
        if snap_dir:
            snap_dir.cleanup()
        rates = {n: statistics.median([2.0 * n**3 / t for t in times.pop(f"matmul {n}")]) for n in mm}
        rate = max(rates.values())
        rate_rounds.append(rate)
        flops = train_flops(cfg)
        tokens = cfg.batch_size * cfg.block_size
        ref_ms = statistics.median(times["reference"]) * 1e3 if reference else None
        rows = []
        for key, ts in times.items():
            ms = statistics.median(ts) * 1e3
            R = runs[key]
            rows.append(
                {
                    "variant": key,
                    **meta[key],
                    "ms_per_step": ms,
                    "ms_per_run_step": ms / R,
                    "ms_rounds": [t * 1e3 for t in ts],
                    "vs_reference": (ms / R) / ref_ms if ref_ms else None,
                    "tokens_per_s": R * tokens / (ms / 1e3),
                    "gflop_per_s": R * flops / (ms / 1e3) / 1e9,
                    "fraction_of_matmul_rate": R * flops / (ms / 1e3) / rate,
                }
            )
        snap_info = None
        if snap_s is not None:
            # A run of SNAPSHOT_RUN_STEPS steps at the default schedule takes n_snap snapshots:
            # its per-step cost is the recording step plus n_snap / steps of one snapshot.
            n_snap = len(snapshot_steps(cfg.replace(max_steps=SNAPSHOT_RUN_STEPS)))
            base_row = next(r for r in rows if r["variant"] == "attnlab record_every=1")
            extra_ms = snap_s * 1e3 * n_snap / SNAPSHOT_RUN_STEPS
            ms = base_row["ms_per_step"] + extra_ms
            rows.append(
                {
                    "variant": "attnlab record_every=1 + snapshots",
                    "impl": "attnlab",
                    "R": 1,
                    "record_every": 1,
                    "ms_per_step": ms,
                    "ms_per_run_step": ms,
                    "ms_rounds": None,
                    "vs_reference": ms / ref_ms if ref_ms else None,
                    "tokens_per_s": tokens / (ms / 1e3),
                    "gflop_per_s": flops / (ms / 1e3) / 1e9,
                    "fraction_of_matmul_rate": flops / (ms / 1e3) / rate,
                }
            )
            snap_info = {
                "ms_per_snapshot": snap_s * 1e3,
                "snapshots_per_run": n_snap,
                "run_steps": SNAPSHOT_RUN_STEPS,
                "ms_per_step_run_average": extra_ms,
                "overhead_fraction": extra_ms / base_row["ms_per_step"],
            }
        result["configs"][name] = {
            "config": cfg.to_dict(),
            "params": _params(cfg),
            "snapshots": snap_info,
            "recording": recording,
            "train_flops_per_step": flops,
            "tokens_per_step": tokens,
            "matmul_rate_flops": rate,
            "matmul_rates_by_size": rates,
            "rows": rows,
        }
    result["matmul_rate_flops"] = max(rate_rounds) if rate_rounds else None
    return result


def recording_cost(
    times: dict[str, list[float]],
    cpu: dict[str, list[float]],
    records: tuple[int, ...],
    load_start: float | None,
    load_end: float | None,
) -> dict | None:
    """What recording every step costs: recorded / unrecorded step time, both timed in each round.

    The ratio is taken per round (the two steps ran seconds apart, under the same load) and its
    median reported, with the quartiles, for wall time and for this process's CPU time (which a busy
    machine inflates less); with the 1-minute load at the start and end of the timing."""
    rec = next((r for r in records if r > 0), None)
    if rec is None or 0 not in records:
        return None
    a, b = f"attnlab record_every={rec}", "attnlab record_every=0"

    def ratios(ts: dict[str, list[float]]) -> dict:
        r = sorted(x / y for x, y in zip(ts[a], ts[b]))
        q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0], r[0], r[0]]
        return {"median": statistics.median(r), "q1": q[0], "q3": q[2], "rounds": r}

    return {
        "recorded": a,
        "unrecorded": b,
        "ms_unrecorded": statistics.median(times[b]) * 1e3,
        "ms_recorded": statistics.median(times[a]) * 1e3,
        "wall_ratio": ratios(times),
        "cpu_ratio": ratios(cpu),
        "load_start": load_start,
        "load_end": load_end,
        "cpus": machine_cpus(),
    }


def _params(cfg: Config) -> int:
    from ..model import TinyGPT

    return TinyGPT(cfg).num_params()


# ================================================================ bench attention
def explicit_attention(q, k, v, scale: float) -> torch.Tensor:
    """The textbook path: S = q kᵀ, mask, softmax, P v; every n x n matrix written out."""
    n = q.shape[-2]
    s = (q @ k.transpose(-2, -1)) * scale  # (B, nh, n, n)
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    s = s.masked_fill(~mask, float("-inf"))
    return s.softmax(-1) @ v  # (B, nh, n, hs)


def attention_methods(block_size: int) -> dict[str, Callable]:
    from ..attention import blocked_attention

    return {
        "sdpa": lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=c),
        "explicit": explicit_attention,
        "blocked": lambda q, k, v, c: blocked_attention(q, k, v, causal=True, block_size=block_size, scale=c),
    }


class _PeakRSS:
    """Highest resident set size seen while the block runs (sampled every ~0.5 ms)."""

    def __init__(self) -> None:
        import psutil

        self.proc = psutil.Process()
        self.peak = 0

    def __enter__(self):
        self.base = self.proc.memory_info().rss
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.0005)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def delta(self) -> int:
        return self.peak - self.base


def _peak_bytes(fn: Callable[[], Any], device: torch.device) -> tuple[int | None, str]:
    if device.type == "cuda":
        sync(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        sync(device)
        return torch.cuda.max_memory_allocated(device) - base, "cuda max_memory_allocated - before"
    try:
        with _PeakRSS() as w:
            fn()
        return w.delta, "peak RSS delta (psutil, sampled)"
    except ImportError:
        return None, "psutil missing"


def bench_attention(
    n_values: tuple[int, ...] = (512, 1024, 2048, 4096, 8192),
    heads: int = 8,
    d_head: int = 64,
    batch: int = 1,
    repeats: int = 10,
    warmup: int = 3,
    budget_s: float = 60.0,
    block_size: int = 256,
    device: str = "auto",
    methods: tuple[str, ...] = ("sdpa", "explicit", "blocked"),
    log: Callable[[str], None] | None = None,
) -> dict:
    """Time one causal attention forward per method and n, inside a time budget.

    Before each n the time of the whole measurement (warm-up + repeats, all
    methods) is predicted from the previous n by the n² law; the sweep stops at
    the first n whose prediction would overrun ``budget_s``. A method whose
    n x n matrices would not fit in free memory is skipped at that n.
    """
    dev = resolve_device(device)
    fns = {m: attention_methods(block_size)[m] for m in methods}
    scale = 1.0 / math.sqrt(d_head)
    start = time.perf_counter()
    rows: list[dict] = []
    stopped = None
    last_cost = None
    for i, n in enumerate(n_values):
        if last_cost is not None:
            predicted = last_cost * (n / n_values[i - 1]) ** 2
            if time.perf_counter() - start + predicted > budget_s:
                stopped = (
                    f"n={n}: predicted {predicted:.1f} s would pass the {budget_s:g} s budget "
                    f"({time.perf_counter() - start:.1f} s used)"
                )
                break
        t_n = time.perf_counter()
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(batch, heads, n, d_head, generator=g).to(dev) for _ in range(3))
        matrix_bytes = batch * heads * n * n * 4
        row: dict[str, Any] = {
            "n": n,
            "matrix_bytes": matrix_bytes,
            "ms": {},
            "ms_rounds": {},
            "peak_bytes": {},
            "skipped": {},
        }
        run = {}
        for m, fn in fns.items():
            if m == "explicit" and 3 * matrix_bytes > _free_bytes(dev) / 2:
                row["skipped"][m] = "three n x n float32 matrices would not fit in half the free memory"
                continue
            run[m] = lambda fn=fn, q=q, k=k, v=v: fn(q, k, v, scale)
        with torch.no_grad():
            times = interleaved(run, repeats, warmup, dev)
            for m, fn in run.items():
                row["peak_bytes"][m], how = _peak_bytes(fn, dev)
        row["memory_method"] = how if run else None
        for m, ts in times.items():
            row["ms"][m] = statistics.median(ts) * 1e3
            row["ms_rounds"][m] = [t * 1e3 for t in ts]
        rows.append(row)
        last_cost = time.perf_counter() - t_n
        if log:
            log(
                f"bench attention n={n}: "
                + ", ".join(f"{m} {ms:.2f} ms" for m, ms in row["ms"].items())
                + f" ({last_cost:.1f} s)"
            )
        del q, k, v
    return {
        "kind": "bench_attention",
        **provenance(),
        "machine": environment(dev),
        "protocol": {
            "heads": heads,
            "d_head": d_head,
            "batch": batch,
            "causal": True,
            "dtype": "float32",
            "warmup": warmup,
            "repeats": repeats,
            "statistic": "median over interleaved rounds",
            "block_size": block_size,
            "budget_s": budget_s,
            "memory": (
                "CUDA: torch.cuda.max_memory_allocated minus memory allocated "
                "before the call. CPU: peak resident set size during one call "
                "minus RSS before it, sampled by a psutil thread every ~0.5 ms "
                "(tracemalloc does not see torch's allocator); matrix_bytes is "
                "the theoretical size of one float32 n x n score tensor for all "
                "heads."
            ),
        },
        "rows": rows,
        "stopped": stopped,
        "book": book_timing(),
    }


def _free_bytes(device: torch.device) -> int:
    """Memory available on ``device`` (attnlab.limits.available_bytes, the one notion every guard
    uses); 8 GiB when it cannot be told."""
    from ..limits import available_bytes

    have = available_bytes(device)
    return 8 * 2**30 if have is None else have


def book_timing() -> dict:
    """The chapter's RTX A6000 table (§1.14.2) from the packaged reference values."""
    from ..book import book_values

    return book_values("sdpa_timing_rtx_a6000_1_14_2")


def plot_attention(result: dict, path: str | Path) -> Path:
    """Log-log ms vs n per method, an O(n²) line and the book's A6000 SDPA numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    rows = result["rows"]
    styles = {"sdpa": "o-", "explicit": "s-", "blocked": "^-"}
    for m in ("sdpa", "explicit", "blocked"):
        pts = [(r["n"], r["ms"][m]) for r in rows if m in r["ms"]]
        if pts:
            ax.plot(*zip(*pts), styles[m], label=f"{m} ({result['machine']['device']})")
    book = result["book"]
    ax.plot(book["n"], book["ms"], "k--", marker="x", label="SDPA, RTX A6000 (book §1.14.2)")
    anchor = next(((r["n"], r["ms"]["sdpa"]) for r in rows if "sdpa" in r["ms"]), None)
    if anchor:
        ns = [anchor[0] * 2**i for i in range(0, 1 + int(math.log2(max(book["n"]) / anchor[0])))]
        ax.plot(
            ns,
            [anchor[1] * (x / anchor[0]) ** 2 for x in ns],
            ":",
            color="gray",
            label="O(n²) from the first sdpa point",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("ms per forward (median)")
    p = result["protocol"]
    ax.set_title(f"causal attention, {p['heads']} heads, d_head {p['d_head']}, float32")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        return write_figure(path, fig, dpi=120, svg=False)
    finally:
        plt.close(fig)


# ====================================================================== tables
def format_train(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"device {m['device']}, {m['torch_threads']} threads, torch {m['torch']}; "
        f"median of {result['protocol']['repeats']} interleaved rounds"
    ]
    for name, c in result["configs"].items():
        cfg = c["config"]
        lines.append("")
        lines.append(
            f"{name}: d_model {cfg['d_model']}, n_head {cfg['n_head']}, {c['params']:,} params, "
            f"{c['train_flops_per_step'] / 1e9:.2f} GFLOP/step, "
            f"matmul roof {c['matmul_rate_flops'] / 1e9:.1f} GFLOP/s"
        )
        lines.append(
            f"  {'variant':<36}{'ms/step':>9}{'ms/run':>9}{'x ref':>7}{'tokens/s':>10}{'GFLOP/s':>9}{'% roof':>8}"
        )
        for r in c["rows"]:
            ratio = f"{r['vs_reference']:.2f}" if r["vs_reference"] else "-"
            lines.append(
                f"  {r['variant']:<36}{r['ms_per_step']:>9.1f}{r['ms_per_run_step']:>9.1f}"
                f"{ratio:>7}{r['tokens_per_s']:>10,.0f}{r['gflop_per_s']:>9.1f}"
                f"{100 * r['fraction_of_matmul_rate']:>7.0f}%"
            )
        rc = c.get("recording")
        if rc:
            w, u = rc["wall_ratio"], rc["cpu_ratio"]
            load = " -> ".join("?" if x is None else f"{x:.2f}" for x in (rc["load_start"], rc["load_end"]))
            lines.append(
                f"  recording: {rc['recorded']} / {rc['unrecorded']} = {w['median']:.3f} wall "
                f"(quartiles {w['q1']:.3f}-{w['q3']:.3f}), {u['median']:.3f} CPU time "
                f"(quartiles {u['q1']:.3f}-{u['q3']:.3f}); per-round ratios, median; "
                f"load {load} on {rc['cpus']} CPUs"
            )
        sn = c.get("snapshots")
        if sn:
            lines.append(
                f"  snapshots: {sn['ms_per_snapshot']:.1f} ms each (probe pass + atomic file rewrite), "
                f"{sn['snapshots_per_run']} per {sn['run_steps']}-step run = "
                f"+{sn['ms_per_step_run_average']:.2f} ms/step = "
                f"{100 * sn['overhead_fraction']:.2f}% of a recording step"
            )
    return "\n".join(lines)


def format_attention(result: dict) -> str:
    p, m = result["protocol"], result["machine"]
    book = dict(zip(result["book"]["n"], result["book"]["ms"]))
    methods = [k for k in ("sdpa", "explicit", "blocked") if any(k in r["ms"] for r in result["rows"])]
    lines = [
        f"causal attention forward, batch {p['batch']}, {p['heads']} heads, d_head {p['d_head']}, "
        f"float32, device {m['device']}; median of {p['repeats']} after {p['warmup']} warm-up"
    ]
    head = (
        f"{'n':>6}"
        + "".join(f"{k + ' ms':>13}" for k in methods)
        + f"{'sdpa x512':>10}"
        + f"{'n x n MB':>10}"
        + "".join(f"{k + ' peak MB':>17}" for k in methods)
        + f"{'A6000 ms':>10}"
    )
    lines.append(head)
    first = next((r["ms"].get("sdpa") for r in result["rows"]), None)
    for r in result["rows"]:
        cells = "".join(f"{r['ms'][k]:>13.2f}" if k in r["ms"] else f"{'skipped':>13}" for k in methods)
        rel = f"{r['ms']['sdpa'] / first:>9.1f}x" if first and "sdpa" in r["ms"] else f"{'-':>10}"
        peaks = "".join(
            f"{r['peak_bytes'][k] / 1e6:>17.1f}" if r["peak_bytes"].get(k) is not None else f"{'-':>17}"
            for k in methods
        )
        lines.append(
            f"{r['n']:>6}{cells}{rel}{r['matrix_bytes'] / 1e6:>10.1f}{peaks}{book.get(r['n'], float('nan')):>10.3f}"
        )
    if result["stopped"]:
        lines.append(f"stopped: {result['stopped']}")
    lines.append("memory: " + (result["rows"][0]["memory_method"] or "-") if result["rows"] else "")
    return "\n".join(lines)


# ================================================================= bench executors
def bench_executors(
    case_runs: list,
    workers: int | None = None,
    corpus: str | None = None,
    root: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """The case's training runs (``case_runs``, attnlab.lab.case.run.case_runs of the settings the
    caller chose) serially, then with local workers.

    Both into fresh folders, timed in this one process, and compared bit for bit:
    the speed-up of the default executor and the proof that it changes no number.
    """
    import tempfile

    from ..corpus import DEFAULT_CORPUS, load_corpus
    from ..runner import Run, execute

    text = load_corpus(corpus or DEFAULT_CORPUS)
    runs = [Run(sp.name, sp.cfg.replace(device="cpu")) for sp in case_runs]
    steps = runs[0].cfg.max_steps
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-", dir=root) as tmp:
        timings, losses = {}, {}
        for executor in ("serial", "local"):
            if log:
                log(f"bench executors: {len(runs)} runs x {steps} steps, {executor}")
            t0 = time.perf_counter()
            done = execute(runs, text, Path(tmp) / executor, executor=executor, workers=workers, progress=False)
            timings[executor] = time.perf_counter() - t0
            losses[executor] = {
                n: [r["loss"] for r in f.history.records] + [f.history.val[-1][1]] for n, f in done.items()
            }
    used = max(1, min(workers or os.cpu_count() or 1, len(runs)))
    return {
        "kind": "bench_executors",
        **provenance(),
        "machine": environment(torch.device("cpu")),
        "runs": [r.name for r in runs],
        "steps": steps,
        "workers": used,
        "serial_s": timings["serial"],
        "local_s": timings["local"],
        "local_over_serial": timings["local"] / timings["serial"],
        "identical": losses["serial"] == losses["local"],
    }


def format_executors(result: dict) -> str:
    return (
        f"{len(result['runs'])} runs x {result['steps']} steps: serial {result['serial_s']:.1f} s, "
        f"local x {result['workers']} workers {result['local_s']:.1f} s = "
        f"{result['local_over_serial']:.3f} x serial; results identical: {result['identical']}"
    )
