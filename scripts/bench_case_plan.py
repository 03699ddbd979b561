"""What ``attnlab case`` spends beside its runs' timed training, as factors the plan prices.

The plan (attnlab.lab.plan) prices a run by its timed training loop (RUN/timing.json), calibrated on
the runs ``scripts/plan_check.py`` trained two at a time on two one-thread workers. ``make case``
spends more than that: each batch of runs starts worker processes (Python, torch, the corpus and the
tokenizer before the first timed step; the summary after the last), the case sweeps untrained models
(§1.3) before any training, and it writes its report and figures after every batch. This script
measures each as a multiple of the timed CPU seconds of one reference run, the case's small model
alone (``--steps`` steps; 300 is plan_check's ``pc_small_300``, the same recipe), in one run,
interleaved, so that the ratios carry to a machine of another speed:

  concurrency   a case run alone in its own process, and two at once (each its own process, one
                thread), small and big models, ``--rounds`` rounds, alone and two at once back to back
                in alternating order: a run's timed CPU seconds two at once over alone
  outside_timed a run's process CPU time (spawn to exit) minus its timed training's
  sweeps        the case's init sweeps (§1.3 and the d_model-512 one) at ``--sweep-share`` of their
                inits, scaled to the full count
  report        the case's report and figures, from the committed data/ch1_case.json

Writes data/bench_case_plan.json ("factors" is what the plan reads: attnlab.lab.plan.Factors). CPU
time, not wall: on shared cores the wall stretches with the load, the CPU time of the same work much
less; the file records the load. On a loaded machine "alone" is not alone (other processes share the
cores), so the concurrency ratio there says little: measure it on idle cores.

    nice -n 10 python scripts/bench_case_plan.py              # about 10 min on two idle cores
    python scripts/bench_case_plan.py --report                # the table again from the JSON

When: after a change to what a run costs beside its training loop (the runner's workers, the sweeps,
the report), or on a new kind of machine.
"""

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnlab.io import read_json, write_json  # noqa: E402

OUT = ROOT / "data" / "bench_case_plan.json"


def _one(task: dict, conn) -> None:
    """A child process: a case run as the runner's worker trains it (one thread); its timing back."""
    import signal

    from attnlab.runtime import die_with_parent

    die_with_parent(signal.SIGKILL)  # a killed benchmark leaves no run training on
    os.environ["OMP_NUM_THREADS"] = "1"
    from attnlab.run_task import train_one
    from attnlab.runfolder import training_conditions, training_seconds

    train_one(task)
    got = {"seconds": training_seconds(task["dir"]), **(training_conditions(task["dir"]) or {})}
    conn.send({**got, "process_cpu_s": time.process_time()})  # the whole process: start, imports, training
    conn.close()


def _runs(cfgs: list, root: Path, text: str, tag: str) -> list[dict]:
    """Train ``cfgs`` at once, each in its own spawned process: per run its process wall, timed
    seconds and CPU time."""
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for i, (name, cfg) in enumerate(cfgs):
        d = root / f"{tag}_{i}_{name}"
        task = {"name": name, "dir": str(d), "config": cfg.to_dict(), "text": text, "threads": 1}
        a, b = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_one, args=(task, b))
        procs.append((p, a, time.perf_counter()))
        p.start()
    out = []
    for p, a, t0 in procs:
        got = a.recv()
        p.join()
        out.append({"process_s": time.perf_counter() - t0, **got})
    return out


def case_configs(steps: int) -> dict:
    """The case's small and big unscaled runs at ``steps`` steps, on two seeds (its own recipe:
    diagnostics every step, 15 validations, checkpoints, snapshots)."""
    from attnlab.lab.case.run import CaseSettings, case_runs

    groups, pairs = case_runs(CaseSettings(steps=steps, seeds=(20261014, 20261015)))
    by = {r.name: r for g in groups for r in g}
    return {
        "small": [by["small_unscaled_s20261014"].cfg, by["small_unscaled_s20261015"].cfg],
        "big": [by[pairs["big_unscaled"]].cfg, by["big_unscaled_s20261015"].cfg],
    }


def concurrency(steps: int, rounds: int, text: str, root: Path) -> dict:
    shapes = case_configs(steps)
    rows: dict[str, list] = {k: [] for k in shapes}
    for r in range(rounds):
        for shape, (c1, c2) in shapes.items():
            order = ("alone", "pair") if r % 2 == 0 else ("pair", "alone")
            got = {}
            for how in order:
                cfgs = [(shape, c1)] if how == "alone" else [(shape, c1), (shape, c2)]
                got[how] = _runs(cfgs, root, text, f"r{r}_{how}")
            alone, pair = got["alone"][0], got["pair"]
            rows[shape].append(
                {
                    "alone_s": alone["seconds"],
                    "alone_cpu_s": alone.get("cpu_s"),
                    "alone_process_s": alone["process_s"],
                    "pair_s": [x["seconds"] for x in pair],
                    "pair_cpu_s": [x.get("cpu_s") for x in pair],
                    "pair_process_s": [x["process_s"] for x in pair],
                    "alone_process_cpu_s": alone["process_cpu_s"],
                    "pair_process_cpu_s": [x["process_cpu_s"] for x in pair],
                    "load": max(x.get("load") or 0 for x in [alone, *pair]),
                }
            )
            print(f"round {r + 1}/{rounds} {shape}: {rows[shape][-1]}", flush=True)
    return rows


def non_training(share: float) -> dict:
    """The case's sweeps (at ``share`` of their inits, scaled to the full count) and its report, CPU seconds."""
    from attnlab.lab.case.run import CaseSettings, init_sweep
    from attnlab.report.case_report import build_report

    s = CaseSettings()
    n, nf = max(1, round(s.init_samples * share)), max(1, round(s.init_samples_fixed * share))
    t0 = time.process_time()
    init_sweep(s.init_d_heads, n, s.init_seed)
    sweep = (time.process_time() - t0) * s.init_samples / n
    t0 = time.process_time()
    init_sweep(s.init_d_heads, nf, s.init_seed, d_model=512)
    init_sweep((64,), nf, s.init_seed, d_model=256)
    fixed = (time.process_time() - t0) * s.init_samples_fixed / nf
    res = read_json(ROOT / "data" / "ch1_case.json")
    with tempfile.TemporaryDirectory(prefix="bench_case_plan_report_") as tmp:
        t0 = time.process_time()
        build_report(res, Path(tmp))
        report = time.process_time() - t0
    return {"sweep_cpu_s": sweep, "sweep_fixed_cpu_s": fixed, "report_cpu_s": report, "sweep_share": share}


def summarize(doc: dict) -> dict:
    """Per shape: medians over rounds of a run two at once over alone (wall and CPU time), and of a
    run's process beside its timed loop (wall and CPU)."""
    out = {}
    for shape, rows in doc["concurrency"].items():
        wall = [statistics.mean(r["pair_s"]) / r["alone_s"] for r in rows]
        cpu = [statistics.mean(r["pair_cpu_s"]) / r["alone_cpu_s"] for r in rows]
        over = [r["alone_process_s"] - r["alone_s"] for r in rows]
        over += [p - s for r in rows for p, s in zip(r["pair_process_s"], r["pair_s"], strict=True)]
        over_cpu = [r["alone_process_cpu_s"] - r["alone_cpu_s"] for r in rows]
        over_cpu += [p - s for r in rows for p, s in zip(r["pair_process_cpu_s"], r["pair_cpu_s"], strict=True)]
        out[shape] = {
            "pair_over_alone_wall": statistics.median(wall),
            "pair_over_alone_cpu": statistics.median(cpu),
            "outside_timed_s": statistics.median(over),
            "outside_timed_cpu_s": statistics.median(over_cpu),
            "alone_s": statistics.median(r["alone_s"] for r in rows),
            "alone_cpu_s": statistics.median(r["alone_cpu_s"] for r in rows),
        }
    return out


def factors(doc: dict) -> dict:
    """What the plan reads (attnlab.lab.plan.Factors): each cost a multiple of the reference run's
    timed CPU seconds (the case's small model alone). CPU time, not wall: on shared cores the wall
    stretches with the load, the CPU time of the same work much less."""
    s, nt = doc["summary"], doc["non_training"]
    ref = s["small"]["alone_cpu_s"]
    return {
        "reference": {"config": case_configs(doc["steps"])["small"][0].to_dict(), "cpu_s": ref},
        "outside_timed": round(statistics.mean(s[k]["outside_timed_cpu_s"] for k in s) / ref, 4),
        "sweeps": round((nt["sweep_cpu_s"] + nt["sweep_fixed_cpu_s"]) / ref, 4),
        "report": round(nt["report_cpu_s"] / ref, 4),
        "concurrency": round(statistics.mean(s[k]["pair_over_alone_cpu"] for k in s), 4),
    }


def table(doc: dict) -> str:
    s, f = doc["summary"], doc["factors"]
    lines = [
        f"{'shape':6} {'alone s':>8} {'CPU s':>7} {'2 at once/alone: wall':>22} {'CPU':>6} "
        f"{'beside the timed loop: wall s':>30} {'CPU s':>6}"
    ]
    for shape, x in s.items():
        lines.append(
            f"{shape:6} {x['alone_s']:8.1f} {x['alone_cpu_s']:7.1f} {x['pair_over_alone_wall']:22.3f} "
            f"{x['pair_over_alone_cpu']:6.3f} {x['outside_timed_s']:30.2f} {x['outside_timed_cpu_s']:6.2f}"
        )
    nt = doc["non_training"]
    lines.append(
        f"sweeps {nt['sweep_cpu_s'] + nt['sweep_fixed_cpu_s']:.1f} CPU s, report {nt['report_cpu_s']:.1f} CPU s; "
        f"factors (x the small run alone, {f['reference']['cpu_s']:.1f} CPU s): beside the timed loop "
        f"{f['outside_timed']:.3f} per run, sweeps {f['sweeps']:.2f}, report {f['report']:.3f} per batch, "
        f"two at once {f['concurrency']:.3f}; {doc['rounds']} rounds of {doc['steps']} steps, "
        f"1-min load {doc['load_min']:.1f}-{doc['load_max']:.1f} on {doc['machine']['cpus']} CPUs"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--steps", type=int, default=300, help="steps of each case run (default 300: plan_check's small run)"
    )
    ap.add_argument("--rounds", type=int, default=2, help="rounds of alone / two at once (default 2)")
    ap.add_argument("--sweep-share", type=float, default=0.1, help="share of the sweeps' inits measured")
    ap.add_argument("--report", action="store_true", help="print the table of the JSON; measure nothing")
    args = ap.parse_args(argv)
    if args.report:
        print(table(read_json(OUT)))
        return 0
    import torch

    from attnlab.corpus import load_corpus

    torch.set_num_threads(1)
    text = load_corpus(None)
    with tempfile.TemporaryDirectory(prefix="bench_case_plan_") as tmp:
        conc = concurrency(args.steps, args.rounds, text, Path(tmp))
    doc = {
        "kind": "bench_case_plan",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__},
        "steps": args.steps,
        "rounds": args.rounds,
        "concurrency": conc,
    }
    loads = [r["load"] for rows in conc.values() for r in rows]
    doc["load_min"], doc["load_max"] = min(loads), max(loads)
    doc["summary"] = summarize(doc)
    doc["non_training"] = non_training(args.sweep_share)
    doc["factors"] = factors(doc)
    write_json(OUT, doc)
    print(table(doc))
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
