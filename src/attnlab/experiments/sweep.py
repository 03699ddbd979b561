"""Grid sweeps (exercise 2: the critical head size), run locally or on a Ray cluster.

A trial is one training run in its own directory, ``OUT/<key=value__...__seed=N>/``,
holding what ``train(out_dir=...)`` writes: config.json, metrics.jsonl,
ckpt.pt and, once finished, summary.json. So a sweep can be stopped and rerun:
finished trials (summary.json present, same config) are skipped, an
interrupted trial (ckpt.pt, no summary.json) resumes from its checkpoint, and
a failing trial is recorded in its error.json and reported without stopping
the others. The results are gathered in ``OUT/sweep.csv`` and ``OUT/sweep.json``;
the figure ``OUT/sweep_gap.png`` (unscaled minus scaled final validation loss
against d_head) is drawn from sweep.json alone.

Grid keys are Config fields, plus ``d_head``, which sets ``n_head=1`` and
``d_model=d_head`` as the book's case does. Executors: ``local`` (a process
pool, spawn context), ``ray`` (Ray tasks on a running cluster, one CPU each)
and ``serial`` (in this process, for debugging).
"""
from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import math
import os
import socket
import time
import traceback
from dataclasses import fields
from pathlib import Path
from typing import Callable, Sequence

from ..config import Config
from ..io import write_json, write_text
from .common import ExperimentError, provenance

DEFAULT_GRID = {"d_head": ["32", "64", "96", "128", "192", "256"], "scaled": ["true", "false"]}
EXECUTORS = ("local", "ray", "serial")


# ----------------------------------------------------------------------------- grid
def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """``["d_head=32,64", "scaled=true,false"]`` -> {"d_head": ["32", "64"], ...}, keys checked."""
    known = {f.name for f in fields(Config)} | {"d_head"}
    grid: dict[str, list[str]] = {}
    for item in items:
        if "=" not in item:
            raise ExperimentError(f"--grid expects KEY=V1,V2,..., got {item!r}")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in known:
            raise ExperimentError(f"unknown grid key '{key}'; use a Config field or d_head "
                                  f"(known: d_head, {', '.join(sorted(known - {'d_head'}))})")
        if key in ("seed", "max_steps"):
            raise ExperimentError(f"grid key '{key}' is set by --seeds / --steps")
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if not values:
            raise ExperimentError(f"grid key '{key}' has no values")
        grid[key] = values
    return grid


def trial_config(base: Config, point: dict[str, str], seed: int) -> Config:
    items = []
    for key, value in point.items():
        if key == "d_head":
            items += ["n_head=1", f"d_model={value}"]
        else:
            items.append(f"{key}={value}")
    return Config.from_overrides(items, base=base).replace(seed=seed)


def expand(base: Config, grid: dict[str, list[str]], seeds: int = 1) -> list[dict]:
    """Every combination of the grid times ``seeds`` seeds (base.seed, base.seed + 1, ...).

    Every configuration is built here, so an impossible value fails before any training.
    """
    if seeds < 1:
        raise ExperimentError(f"--seeds must be at least 1, got {seeds}")
    keys = list(grid)
    trials = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, combo))
        for s in range(seeds):
            cfg = trial_config(base, point, base.seed + s)
            name = "__".join([f"{k}={v}" for k, v in point.items()] + [f"seed={s}"])
            trials.append({"name": name, "point": point, "seed_index": s, "config": cfg.to_dict()})
    return trials


# ---------------------------------------------------------------------------- a trial
def run_trial(spec: dict) -> dict:
    """Run (or skip, or resume) one trial; never raises for a failing run.

    spec: name, dir (absolute), config (dict), and text or corpus (path or None).
    Runs in a worker process or a Ray task, so it only takes and returns plain data.
    """
    import torch

    from ..corpus import load_corpus
    from ..train import train

    out = Path(spec["dir"])
    cfg = Config.from_dict(spec["config"])
    status = {"name": spec["name"], "dir": str(out)}
    summary_path = out / "summary.json"
    try:
        if summary_path.is_file():
            done = json.loads(summary_path.read_text(encoding="utf-8"))
            if done.get("config") != cfg.to_dict():
                raise ExperimentError(f"{out} holds a finished run with a different config; "
                                      f"use a new --out or delete that directory")
            return {**status, "status": "skipped"}
        if spec.get("threads"):
            torch.set_num_threads(spec["threads"])
        text = spec.get("text")
        if text is None:
            text = load_corpus(spec.get("corpus"), min_chars=cfg.block_size + 1)
        resume = (out / "ckpt.pt").is_file()
        t0 = time.perf_counter()
        train(text, cfg, out_dir=out, resume=resume)
        (out / "error.json").unlink(missing_ok=True)
        return {**status, "status": "resumed" if resume else "done",
                "seconds": round(time.perf_counter() - t0, 3)}
    except Exception as e:                       # one trial's failure must not stop the sweep
        error = f"{type(e).__name__}: {e}"
        try:
            write_json(out / "error.json", {"error": error, "traceback": traceback.format_exc()})
        except OSError:
            pass
        return {**status, "status": "failed", "error": error}


# --------------------------------------------------------------------------- executors
def _failed(spec: dict, e: BaseException) -> dict:
    return {"name": spec["name"], "dir": spec["dir"], "status": "failed",
            "error": f"{type(e).__name__}: {e}"}


def _serial(specs, on_result, **_):
    for spec in specs:
        on_result(run_trial(spec))


def _local(specs, on_result, workers: int | None = None, **_):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = max(1, min(workers or os.cpu_count() or 1, len(specs)))
    threads = max(1, (os.cpu_count() or 1) // workers)
    ctx = multiprocessing.get_context("spawn")   # fork + torch threads can deadlock
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(run_trial, {**spec, "threads": threads}): spec for spec in specs}
        for fut in as_completed(futures):
            try:
                on_result(fut.result())
            except Exception as e:               # a worker that died (killed, out of memory)
                on_result(_failed(futures[fut], e))


def _check_reachable(address: str) -> None:
    """Fail fast with one message instead of Ray's long retry loop."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return                                   # let Ray interpret it ("auto", "local", ...)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise ExperimentError(f"cannot reach a Ray cluster at {address} ({e.strerror or e}); start one "
                              f"with `ray start --head` and pass its address, or use --executor local"
                              ) from None


def _ray(specs, on_result, address: str | None = "auto", **_):
    try:
        import ray
    except ImportError:
        raise ExperimentError("the ray executor needs Ray: pip install 'attnlab[ray]'") from None
    started = False
    if not ray.is_initialized():
        if address:
            _check_reachable(address)
        try:
            ray.init(address=None if address == "local" else address, logging_level="ERROR",
                     log_to_driver=False)
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ExperimentError(f"cannot connect to a Ray cluster at {address}: {first}; start one with "
                                  f"`ray start --head`, or use --executor local") from None
        started = True
    try:
        remote = ray.remote(num_cpus=1)(run_trial)
        pending = {}
        for spec in specs:
            spec = {**spec, "threads": 1}
            pending[remote.remote(spec)] = spec
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                spec = pending.pop(ref)
                try:
                    on_result(ray.get(ref))
                except Exception as e:           # the task or its worker died
                    on_result(_failed(spec, e))
    finally:
        if started:
            ray.shutdown()


# ------------------------------------------------------------------------ aggregation
def _trial_row(trial: dict, out: Path) -> dict:
    d = out / trial["name"]
    cfg = Config.from_dict(trial["config"])
    row = {"trial": trial["name"], **trial["point"], "seed": cfg.seed, "d_head": cfg.d_head,
           "scaled": cfg.scaled, "status": "missing", "steps": None, "loss_end": None,
           "val_loss_end": None, "diverged_at": None, "weight_entropy_end": None, "error": None}
    if (d / "summary.json").is_file():
        s = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        layers = s.get("final_layers") or []
        ent = [l["weight_entropy"] for l in layers]
        row.update(status="done", steps=s["steps"], loss_end=s["loss_end"], val_loss_end=s["val_loss_end"],
                   diverged_at=s["diverged_at"], weight_entropy_end=sum(ent) / len(ent) if ent else None)
    elif (d / "error.json").is_file():
        row.update(status="failed", error=json.loads((d / "error.json").read_text(encoding="utf-8"))["error"])
    elif (d / "ckpt.pt").is_file():
        row["status"] = "interrupted"
    return row


def scaling_gap(rows: list[dict]) -> list[dict]:
    """Per d_head: mean val loss without scaling minus with scaling (seeds paired when possible)."""
    by: dict[int, dict[bool, dict[int, float]]] = {}
    for r in rows:
        v = r["val_loss_end"]
        if r["status"] == "done" and v is not None and math.isfinite(v):
            by.setdefault(r["d_head"], {}).setdefault(bool(r["scaled"]), {})[r["seed"]] = v
    gap = []
    for d_head in sorted(by):
        on, off = by[d_head].get(True, {}), by[d_head].get(False, {})
        if not on or not off:
            continue
        paired = [off[s] - on[s] for s in sorted(set(on) & set(off))]
        mean_gap = sum(off.values()) / len(off) - sum(on.values()) / len(on)
        std = (math.sqrt(sum((g - sum(paired) / len(paired)) ** 2 for g in paired) / (len(paired) - 1))
               if len(paired) > 1 else None)
        gap.append({"d_head": d_head, "gap": mean_gap, "gap_std": std, "seeds": len(paired),
                    "val_loss_scaled": sum(on.values()) / len(on),
                    "val_loss_unscaled": sum(off.values()) / len(off)})
    return gap


def aggregate(trials: list[dict], out: Path, grid: dict, extra: dict | None = None,
              runs: Sequence[dict] = ()) -> dict:
    """sweep.csv, sweep.json and the gap figure from the trial directories.

    ``runs`` supplies errors that left no error.json behind (a worker that died).
    """
    failed = {r["name"]: r["error"] for r in runs if r["status"] == "failed"}
    rows = [_trial_row(t, out) for t in trials]
    for row in rows:
        if row["status"] in ("missing", "interrupted") and row["trial"] in failed:
            row.update(status="failed", error=failed[row["trial"]])
    cols = ["trial", *grid, "seed", "d_head", "scaled", "status", "steps", "loss_end", "val_loss_end",
            "diverged_at", "weight_entropy_end", "error"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(dict.fromkeys(cols)), extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    write_text(out / "sweep.csv", buf.getvalue())
    result = {"kind": "sweep", "grid": grid, "trials": rows, "gap": scaling_gap(rows),
              **(extra or {}), **provenance()}
    write_json(out / "sweep.json", result)
    if result["gap"]:
        from .plots import plot_sweep_gap

        result["figure"] = str(plot_sweep_gap(result, out / "sweep_gap.png"))
    return result


# ------------------------------------------------------------------------------- sweep
def sweep(out: str | Path, grid: dict[str, list[str]] | None = None, *, base: Config | None = None,
          seeds: int = 1, steps: int | None = None, corpus: str | None = None, text: str | None = None,
          executor: str = "local", address: str | None = "auto", workers: int | None = None,
          on_result: Callable[[dict], None] | None = None) -> dict:
    """Run every trial of ``grid`` × ``seeds`` (skipping finished ones) and aggregate.

    ``text`` (for tests and notebooks) is used instead of reading ``corpus``.
    Returns the content of sweep.json plus "runs": what happened to each trial now.
    """
    if executor not in EXECUTORS:
        raise ExperimentError(f"unknown executor '{executor}'; use one of {', '.join(EXECUTORS)}")
    grid = grid if grid is not None else DEFAULT_GRID
    base = base or Config()
    if steps is not None:
        base = base.replace(max_steps=steps)
    trials = expand(base, grid, seeds)
    if text is None:                         # fail here, once, rather than in every trial
        from ..corpus import load_corpus

        load_corpus(corpus, min_chars=2)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "grid.json", {"grid": grid, "seeds": seeds, "base": base.to_dict(),
                                   "trials": [t["name"] for t in trials]})
    specs = [{"name": t["name"], "dir": str(out / t["name"]), "config": t["config"],
              "corpus": str(Path(corpus).resolve()) if corpus else None,
              **({"text": text} if text is not None else {})} for t in trials]
    runs: list[dict] = []

    def collect(r: dict) -> None:
        runs.append(r)
        if on_result is not None:
            on_result(r)

    t0 = time.perf_counter()
    {"serial": _serial, "local": _local, "ray": _ray}[executor](
        specs, collect, workers=workers, address=address)
    result = aggregate(trials, out, grid, {"executor": executor, "seeds": seeds,
                                           "base": base.to_dict(), "corpus": corpus or "data/corpus.txt",
                                           "seconds": round(time.perf_counter() - t0, 3)}, runs)
    result["runs"] = runs
    return result


def sweep_table(result: dict) -> str:
    from .common import format_table

    keys = list(result["grid"])
    headers = keys + ["种子 / seed", "状态 / status", "验证 loss / val", "熵 / entropy"]
    rows = [[t.get(k) for k in keys] + [t["seed"], t["status"], t["val_loss_end"], t["weight_entropy_end"]]
            for t in result["trials"]]
    table = format_table(headers, rows, fmt=".4f")
    if result["gap"]:
        table += "\n\n" + format_table(
            ["d_head", "不缩放−缩放 / gap", "±", "缩放 / scaled", "不缩放 / unscaled"],
            [[g["d_head"], g["gap"], g["gap_std"], g["val_loss_scaled"], g["val_loss_unscaled"]]
             for g in result["gap"]], fmt=".4f")
    return table


# -------------------------------------------------------------------------------- CLI
def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="grid sweep, e.g. the critical head size / 临界维度扫描",
                       description="Train every point of a grid (× seeds), locally or on Ray; rerunning "
                                   "skips finished trials and resumes interrupted ones. Default grid: "
                                   "d_head 32..256 × scaled on/off (exercise 2).")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a Config field or d_head (sets n_head=1, d_model=d_head); repeatable")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--steps", type=int, default=None, help="training steps per trial (default max_steps)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="base config shared by every trial")
    p.add_argument("--corpus", default=None, help="UTF-8 corpus (default data/corpus.txt)")
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--address", default="auto",
                   help="Ray cluster address for --executor ray (default auto: the running cluster; "
                        "'local' starts one in this process)")
    p.add_argument("--workers", type=int, default=None, help="processes for --executor local")
    p.add_argument("--out", required=True, help="sweep directory (one subdirectory per trial)")
    p.set_defaults(func=cli_run)


def cli_run(args: argparse.Namespace) -> int:
    base = Config.from_overrides(args.overrides)
    grid = parse_grid(args.grid) if args.grid else DEFAULT_GRID

    def report(r: dict) -> None:
        extra = f"  {r['error']}" if r["status"] == "failed" else ""
        print(f"  [{r['status']}] {r['name']}{extra}", flush=True)

    result = sweep(args.out, grid, base=base, seeds=args.seeds, steps=args.steps, corpus=args.corpus,
                   executor=args.executor, address=args.address, workers=args.workers, on_result=report)
    print(sweep_table(result))
    failed = [r for r in result["runs"] if r["status"] == "failed"]
    print(f"结果 / results: {args.out}/sweep.csv, {args.out}/sweep.json"
          + (f", {result['figure']}" if result.get("figure") else ""))
    if failed:
        print(f"{len(failed)} 个试验失败 / trial(s) failed: " + ", ".join(r["name"] for r in failed))
        return 1
    return 0
