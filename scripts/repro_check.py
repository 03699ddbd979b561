"""How far two trainings of one config and seed differ on this machine, and why.

    nice -n 10 python scripts/repro_check.py [--steps 200] [--out data/repro_check.json]
    nice -n 10 python scripts/repro_check.py --only torch --torch-python /path/to/other/venv/bin/python

Trains the case's small model (d_head 32; scaled and unscaled, the book's first seed) for a few
hundred steps, several times, each in its own process so that the thread count and the kernels
torch and MKL pick are fixed before torch is imported:

  same        the reference again, same settings               (expected: bit-identical)
  threads2    2 torch threads instead of 1                     (float32 sums split differently)
  avx2        ATEN_CPU_CAPABILITY=avx2 and MKL_CBWR=AVX2: the kernels an older CPU runs
  batches     the same init, the batch stream shifted by one draw (a different batch order)
  torch       another PyTorch release (the interpreter of another venv, ``--torch-python``; that venv
              needs attnlab's dependencies, attnlab itself comes from this checkout's src/)

``--only`` trains the reference and the variants named, and keeps the other variants' rows the JSON
at ``--out`` already holds (measured with the same steps).

and writes, for each, max |Δ val loss| against the reference over the validations, the final
|Δ val loss| and whether the final weights are bit-identical, to a JSON (docs/case.md reads it).

When: on a new machine or after a torch upgrade, to see how far a retrained run can differ from the
committed one (data/repro_check.json, its table in docs/case.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {  # name -> (threads, extra environment, perturbation)
    "reference": (1, {}, None),
    "same": (1, {}, None),
    "threads2": (2, {}, None),
    "avx2": (1, {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}, None),
    "batches": (1, {}, "batches"),
    "torch": (1, {}, None),  # run by --torch-python
}


def child(scaled: bool, steps: int, perturb: str | None) -> dict:
    """One training in this process (the parent set threads and kernels); its val losses and weights' hash."""
    import hashlib
    import importlib

    import torch

    T = importlib.import_module("attnlab.train")  # the module (attnlab.train is also a function)
    from attnlab.corpus import load_corpus
    from attnlab.lab import runs as R

    cfg = R.Scale().cfg(**R.SIZES["small"], scaled=scaled, seed=R.BOOK_SEED)
    cfg = cfg.replace(
        max_steps=steps, eval_every=steps // 4, record_every=0, snapshot_every=0, ckpt_every=0, device="cpu"
    )
    callbacks = []
    if perturb == "batches":  # the first generator get_batch sees is the validation one; shift the next
        seen: list = []
        plain = T.get_batch

        def shifted(data, block_size, batch_size, gen):
            if all(g is not gen for g in seen):
                seen.append(gen)
                if len(seen) == 2:
                    torch.randint(2, (1,), generator=gen)
            return plain(data, block_size, batch_size, gen)

        T.get_batch = shifted
    t0 = time.perf_counter()
    model, _, hist = T.train(load_corpus(), cfg, callbacks=callbacks)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return {
        "val": [[s, v] for s, v in hist.val],
        "weights_sha256": h.hexdigest()[:16],
        "threads": torch.get_num_threads(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def spawn(name: str, scaled: bool, steps: int, python: str = sys.executable) -> dict:
    threads, extra, perturb = VARIANTS[name]
    env = {**os.environ, **extra, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    args = [python, __file__, "--child", json.dumps([scaled, steps, perturb])]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"variant {name} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--out", default=str(ROOT / "data" / "repro_check.json"))
    ap.add_argument("--only", nargs="+", choices=[v for v in VARIANTS if v != "reference"], help="these variants")
    ap.add_argument("--torch-python", help="the interpreter of a venv with another PyTorch (the torch variant)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return 0
    import platform

    names = ["reference", *(args.only or [v for v in VARIANTS if v != "reference"])]
    if "torch" in names and not args.torch_python:
        if args.only:
            ap.error("the torch variant needs --torch-python (another venv's python)")
        names.remove("torch")
    kept = {}
    if args.only and Path(args.out).is_file():
        before = json.loads(Path(args.out).read_text(encoding="utf-8"))
        if before.get("steps") != args.steps:
            ap.error(f"{args.out} was measured with {before.get('steps')} steps: give --steps {before.get('steps')}")
        kept = {tag: m["variants"] for tag, m in before["models"].items()}
    result: dict = {"steps": args.steps, "machine": platform.processor() or platform.machine(), "models": {}}
    for scaled in (True, False):
        tag = "small_scaled" if scaled else "small_unscaled"
        raw = {
            name: spawn(name, scaled, args.steps, args.torch_python if name == "torch" else sys.executable)
            for name in names
        }
        ref = raw["reference"]
        rows = {k: v for k, v in kept.get(tag, {}).items() if k not in raw}
        for name, r in raw.items():
            if name == "reference":
                continue
            d = [abs(a[1] - b[1]) for a, b in zip(ref["val"], r["val"])]
            rows[name] = {
                "abs_delta_val": [[a[0], x] for a, x in zip(ref["val"], d)],  # by validation step
                "max_abs_delta_val": max(d),
                "final_abs_delta_val": d[-1],
                "weights_identical": r["weights_sha256"] == ref["weights_sha256"],
                "threads": r["threads"],
                "capability": r["capability"],
                "torch": r["torch"],
                "seconds": r["seconds"],
            }
            print(tag, name, rows[name], flush=True)
        result["models"][tag] = {
            "reference_val": ref["val"],
            "reference_capability": ref["capability"],
            "reference_torch": ref["torch"],
            "variants": {k: rows[k] for k in VARIANTS if k in rows},
        }
    from attnlab.io import write_json

    write_json(Path(args.out), result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
