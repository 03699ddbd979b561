"""The plan against measurement: train runs of several shapes, each estimated by the plan beforehand.

Trains ``RUNS`` (the book's protocol: diagnostics every step, 15 validations, 6 checkpoints; sizes,
d_head, layers and steps varied) through ``attnlab.runner.execute`` on ``--workers`` one-thread
local workers, in a fresh folder. Each run's timing record carries its wall and CPU time and the
machine's load (RUN/timing.json). Each run's estimate is the plan's (attnlab.lab.plan.calibrate
and Calibration.seconds, as ``attnlab book --plan`` computes it) from every committed lab-book record
and the other runs of this check, never its own: what the plan would have said of a run it had not
seen. Prints the table (run, estimate, measured, ratio, CPU time, load, idle or busy) and whether
every estimate is within ±20 % of the wall time it took; writes it to data/plan_check.json and the
generated blocks of the docs (scripts/docs_lab_book.py: docs/scale-out.md's check and the book's
plan, which calibrates on these runs too). About 3 min on two idle cores; shared cores stretch it.

    nice -n 10 python scripts/plan_check.py              # train, measure, write the JSON and the docs
    python scripts/plan_check.py --report                # the table again from data/plan_check.json
    nice -n 10 python scripts/plan_check.py --probe      # only the speed probe, carried to the stored runs

The speed probe (attnlab.lab.plan.probe: a few training steps of ``pc_small_300``'s model, one
thread, the least CPU time of a few repeats) is stored beside the runs ("probe"); ``book --plan``
and ``case --plan`` run it again on the reader's machine and scale every price by the ratio. A full
check measures it on the calibration's machine, before and after its runs (the least of both).
``--probe`` adds it to the stored runs without training them again: the probe and ``pc_small_300``
alone, ``--rounds`` times interleaved, here; the probe stored is the median of probe / reference
run CPU times here times the stored ``pc_small_300``'s CPU time ("how": "transferred": it assumes
the two scale alike from this machine to the calibration's, as the plan does from it to yours).

When: after a change to what a run costs (the training loop, the diagnostics, runner.train_cost or
lab.plan's calibration), on idle cores, to see whether the plan still holds.
"""

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnlab.config import Config  # noqa: E402
from attnlab.io import read_json, write_json  # noqa: E402
from attnlab.lab.plan import PLAN_CHECK, PROBE_REPEATS, PROBE_STEPS, calibrate, probe, read_run_records, run_record  # noqa: E402
from attnlab.lab.runs import BOOK_SEED, Scale  # noqa: E402
from attnlab.runfolder import IDLE, training_conditions, training_seconds  # noqa: E402
from attnlab.runner import Run, execute  # noqa: E402

PROBE_RUN = "pc_small_300"  # the probe trains this run's model; --probe carries the probe to it

OUT = ROOT / "data" / PLAN_CHECK
TOLERANCE = 0.2  # every estimate within ±20 % of the wall time measured
# (name, model, steps): the book's small and big models, d_head 64, four layers
RUNS = (
    ("small_300", {"d_model": 128, "n_head": 4}, 300),
    ("small_600", {"d_model": 128, "n_head": 4}, 600),
    ("big_150", {"d_model": 256, "n_head": 1}, 150),
    ("big_300", {"d_model": 256, "n_head": 1}, 300),
    ("dhead64_300", {"d_model": 128, "n_head": 2}, 300),
    ("deep4_200", {"d_model": 128, "n_head": 4, "n_layer": 4}, 200),
    ("deep4_400", {"d_model": 128, "n_head": 4, "n_layer": 4}, 400),
    ("big_4heads_200", {"d_model": 256, "n_head": 4}, 200),
)


def check_runs() -> list[Run]:
    return [
        Run(f"pc_{name}", Scale(steps=steps).cfg(**model, seed=BOOK_SEED), group="plan_check")
        for name, model, steps in RUNS
    ]


def estimates(measured: list[dict]) -> list[dict]:
    """Each run's plan estimate from the committed lab-book records and the other runs measured here."""
    from attnlab.lab import EXPERIMENTS

    book, sums = read_run_records(EXPERIMENTS, ROOT / "data" / "lab_book", Scale())
    records = [run_record(r["name"], "plan_check", Config.from_dict(r["config"]), r["seconds"], r) for r in measured]
    out = []
    for i, r in enumerate(measured):
        cal = calibrate(book + records[:i] + records[i + 1 :], sums)
        out.append(
            {**r, "state": records[i].state, "estimate_s": round(cal.seconds(records[i].cfg), 3), "basis": cal.basis}
        )
    return out


def probe_doc(cfg: Config, cpu_s: float, how: str, **more) -> dict:
    return {
        "config": cfg.to_dict(),
        "steps": PROBE_STEPS,
        "repeats": PROBE_REPEATS,
        "cpu_s": round(cpu_s, 4),
        "how": how,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **more,
    }


def measure(workers: int, keep: Path | None) -> dict:
    from attnlab.corpus import load_corpus

    runs = check_runs()
    text = load_corpus(None)
    ref = next(r.cfg for r in runs if r.name == PROBE_RUN)
    probes = [probe(ref)]  # the probe on this machine, before and after the runs: the least of both
    with tempfile.TemporaryDirectory(prefix="plan_check_") as tmp:
        root = keep or Path(tmp)
        t0 = time.perf_counter()
        execute(runs, text, root, executor="local", workers=workers, progress=False, log=lambda m: None)
        wall = time.perf_counter() - t0
        probes.append(probe(ref))
        measured = []
        for r in runs:
            c = training_conditions(r.dir(root)) or {}
            row = {"name": r.name, "config": r.cfg.to_dict(), "seconds": training_seconds(r.dir(root))}
            row.update({k: c[k] for k in ("cpu_s", "load", "load_start", "cpus", "threads") if k in c})
            measured.append(row)
    import torch

    return {
        "kind": "plan_check",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "platform": platform.platform(),
            "cpus": measured[0].get("cpus"),
            "torch": torch.__version__,
        },
        "workers": workers,
        "wall_s": round(wall, 1),
        "tolerance": TOLERANCE,
        "runs": estimates(measured),
        "probe": probe_doc(ref, min(p.cpu_s for p in probes), "measured", took_s=[round(p.took_s, 2) for p in probes]),
    }


def transfer(doc: dict, rounds: int) -> dict:
    """The probe carried to the stored runs: ``rounds`` times, interleaved, the probe and the
    reference run alone (one thread, a fresh folder); the stored probe is the median of their CPU
    ratios times the stored reference run's CPU time."""
    from statistics import median

    from attnlab.corpus import load_corpus

    stored = next((r for r in doc["runs"] if r["name"] == PROBE_RUN), None)
    if stored is None or not stored.get("cpu_s"):
        raise SystemExit(f"{OUT}: no {PROBE_RUN} with its CPU time: run `python scripts/plan_check.py` (all runs)")
    run = Run(PROBE_RUN, Config.from_dict(stored["config"]), group="plan_check")
    text = load_corpus(None)
    rows = []
    for i in range(rounds):
        with tempfile.TemporaryDirectory(prefix="plan_check_probe_") as tmp:
            first = probe(run.cfg) if i % 2 == 0 else None
            execute([run], text, Path(tmp), executor="local", workers=1, progress=False, log=lambda m: None)
            c = training_conditions(run.dir(Path(tmp))) or {}
            last = probe(run.cfg) if first is None else first
            rows.append({"probe_cpu_s": round(last.cpu_s, 4), "run_cpu_s": c["cpu_s"], "load": c.get("load")})
        print(f"round {i + 1}/{rounds}: {rows[-1]}", flush=True)
    ratio = median(r["probe_cpu_s"] / r["run_cpu_s"] for r in rows)
    return probe_doc(
        run.cfg,
        ratio * stored["cpu_s"],
        "transferred",
        transfer={"run": PROBE_RUN, "run_cpu_s": stored["cpu_s"], "rounds": rows, "platform": platform.platform()},
    )


def summary(doc: dict) -> dict:
    """Whether every estimate is within the tolerance of the wall (and of the CPU) time, and the loads."""
    tol = doc.get("tolerance", TOLERANCE)
    rows = doc["runs"]
    wall = [r["seconds"] / r["estimate_s"] for r in rows]
    cpu = [r["cpu_s"] / r["estimate_s"] for r in rows if r.get("cpu_s") is not None]
    loads = [r["load"] for r in rows if r.get("load") is not None]
    return {
        "within": all(abs(x - 1) <= tol for x in wall),
        "cpu_within": bool(cpu) and len(cpu) == len(rows) and all(abs(x - 1) <= tol for x in cpu),
        "worst": max(wall, key=lambda x: abs(x - 1)),
        "idle": sum(r.get("state") == IDLE for r in rows),
        "load_max": max(loads) if loads else None,
        "load_min": min(loads) if loads else None,
    }


def table(doc: dict) -> str:
    lines = [
        f"{'run':18} {'estimate':>9} {'measured':>9} {'ratio':>6} {'CPU s':>7} {'CPU/est':>7} {'load':>5}  cores  basis",
    ]
    for r in doc["runs"]:
        cpu = r.get("cpu_s")
        lines.append(
            f"{r['name']:18} {r['estimate_s']:9.1f} {r['seconds']:9.1f} {r['seconds'] / r['estimate_s']:6.2f} "
            f"{cpu if cpu is not None else float('nan'):7.1f} "
            f"{(cpu / r['estimate_s']) if cpu is not None else float('nan'):7.2f} "
            f"{r.get('load') if r.get('load') is not None else float('nan'):5.2f}  {r['state']:5}  {r['basis']}"
        )
    s = summary(doc)
    if doc.get("probe"):
        pr = doc["probe"]
        lines.append(
            f"speed probe ({pr['how']}): {pr['steps']} steps x best of {pr['repeats']}, {pr['cpu_s']:.3f} CPU s"
        )
    lines.append(
        f"every estimate within ±{doc['tolerance']:.0%} of the wall time: {'yes' if s['within'] else 'no'} "
        f"(worst ratio {s['worst']:.2f}); of the CPU time: {'yes' if s['cpu_within'] else 'no'}; "
        f"{s['idle']} of {len(doc['runs'])} runs on idle cores, 1-min load {s['load_min']}–{s['load_max']} "
        f"on {doc['machine']['cpus']} CPUs"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="one-thread local workers (default 2)")
    ap.add_argument("--keep", type=Path, help="train into this folder and keep it (default: a temporary one)")
    ap.add_argument("--report", action="store_true", help="print the table of data/plan_check.json; train nothing")
    ap.add_argument(
        "--probe", action="store_true", help=f"only the speed probe, carried to the stored runs by {PROBE_RUN}"
    )
    ap.add_argument("--rounds", type=int, default=3, help="--probe: rounds of probe and reference run (default 3)")
    args = ap.parse_args(argv)
    if args.report:
        print(table(read_json(OUT)))
        return 0
    if args.probe:
        doc = read_json(OUT)
        doc["probe"] = transfer(doc, args.rounds)
        write_json(OUT, doc)
        print(table(doc))
        print(f"wrote {OUT.relative_to(ROOT)}")
        return 0
    doc = measure(args.workers, args.keep)
    write_json(OUT, doc)
    print(table(doc))
    print(f"wrote {OUT.relative_to(ROOT)}")
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_lab_book", ROOT / "scripts" / "docs_lab_book.py")
    docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs)
    return docs.main([])


if __name__ == "__main__":
    sys.exit(main())
