"""Build data/run_store.json from the committed JSON: one run per (config, seed).

    python scripts/run_store.py            # print what it would write
    python scripts/run_store.py --write    # write data/run_store.json

In the order the numbers were measured: the case's runs (data/ch1_case.json) first, then the
learning-rate map's grid (data/lab_book/lr_sensitivity.json: its points at the book's learning
rate are the case's runs, and its ``reproducibility`` list the map's own retrainings of them), then the models shipped in the package
(src/attnlab/data/case_runs, the case's first seed trained again). The first measurement of a
(config, seed) is the stored one; a later one that disagrees is listed as a reproducibility
difference beside it (attnlab.runstore). ``attnlab book`` adds the runs it measures later.

When: to rebuild data/run_store.json from scratch, after the committed case or learning-rate map was
measured again or the store was lost (attnlab.runstore names this script then).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from attnlab.config import Config
from attnlab.lab import runs as R
from attnlab.lab.lr_sensitivity import lr_run
from attnlab.runstore import RunStore

ROOT = Path(__file__).resolve().parents[1]
LR = Path("data") / "lab_book" / "lr_sensitivity.json"
SHIPPED = Path("src") / "attnlab" / "data" / "case_runs"


def build(root: Path = ROOT) -> RunStore:
    store = RunStore()
    store.add_case(json.loads((root / "data" / "ch1_case.json").read_text(encoding="utf-8")), "data/ch1_case.json")
    lr = json.loads((root / LR).read_text(encoding="utf-8"))
    scale = R.Scale(quick=lr["scale"]["quick"], steps=lr["scale"]["steps"], seeds=lr["scale"]["seeds"])
    for seed, cells in sorted(lr["results"]["per_seed"].items(), key=lambda kv: int(kv[0])):
        for cell, row in cells.items():
            size, scaling, rate = cell.split("|")
            run = lr_run(scale, size, scaling, float(rate), int(seed))
            store.measured(run.cfg, f"{run.group}/{run.name}", row.get("val"), f"{LR.as_posix()} ({cell})")
    store.add_differences(lr.get("reproducibility") or [])  # its retrainings of case runs, no longer read
    manifest = json.loads((root / SHIPPED / "manifest.json").read_text(encoding="utf-8"))
    for name, rec in manifest["runs"].items():
        cfg = Config.from_dict(json.loads((root / SHIPPED / "case" / name / "config.json").read_text(encoding="utf-8")))
        store.measured(cfg, f"case/{name}", rec["val_loss_end"], f"{SHIPPED.as_posix()}/manifest.json ({name})")
    return store


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write data/run_store.json")
    args = ap.parse_args(argv)
    store = build()
    if args.write:
        p = store.save(ROOT)
        print(f"{p.relative_to(ROOT)}: {len(store.runs)} runs, {len(store.differences)} reproducibility differences")
    else:
        json.dump(store.to_dict(), sys.stdout, ensure_ascii=False, indent=1)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
