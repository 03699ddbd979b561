"""Count how the CLI answers the hostile-input table of tests/test_hostile_inputs.py.

Each row runs in its own process (``python -m attnlab.cli``) in an empty working directory,
under a timeout and an address-space limit, so a hang or a runaway allocation is counted
instead of taking the machine down. The counts are docs/hostile-inputs.md's: tried / clean (exit 2 and one
``attnlab: error:`` line naming the problem) / traceback / hang / other (any other ending,
e.g. exit 0 with a wrong result). Usage::

    PYTHONPATH=src python scripts/hostile_probe.py [--timeout 60] [--json out.json]

When: after a change to how the CLI checks its input, to recount docs/hostile-inputs.md's table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]


def _limit(gb: float):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (int(gb * 2**30), int(gb * 2**30)))
        os.nice(10)

    return apply


def classify(rc: int | None, err: str, phrase: str) -> str:
    if rc is None:
        return "hang"
    if "Traceback" in err:
        return "traceback"
    lines = err.strip().splitlines()
    if rc == 2 and len(lines) == 1 and lines[0].startswith("attnlab: error: ") and not lines[0].endswith(":"):
        return "clean" if phrase in lines[0] else "clean, wrong problem"
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--memory-gb", type=float, default=6)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default=None, help="substring of the row ids to run")
    ap.add_argument("--from-row", default=None, help="run the rows of the table from this row id on")
    ap.add_argument("--with-bad-inputs", action="store_true", help="also the table of tests/test_bad_inputs.py")
    args = ap.parse_args()
    import test_hostile_inputs as T

    d = Path(tempfile.mkdtemp(prefix="hostile-probe-"))
    holes = T.prepare(d)
    table = [(case_id, argv, phrase, holes, None) for case_id, argv, phrase in T.CASES]
    if args.from_row:
        table = table[[t[0] for t in table].index(args.from_row) :]
    if args.with_bad_inputs:
        import test_bad_inputs as B

        class Factory:
            def mktemp(self, name):
                return Path(tempfile.mkdtemp(prefix=name, dir=d))

        lab = B.lab.__wrapped__(Factory())
        table += [(f"bad_inputs: {i}", argv, phrase, lab, lab["d"]) for i, argv, phrase in B.CASES]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    rows = []
    for case_id, argv, phrase, holes, cwd in table:
        if args.only and args.only not in case_id:
            continue
        argv = [a.format(**holes) for a in argv]
        cwd = cwd or Path(tempfile.mkdtemp(prefix="cwd-", dir=d))
        t0 = time.monotonic()
        try:
            r = subprocess.run(
                [sys.executable, "-m", "attnlab.cli", *argv],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=args.timeout,
                preexec_fn=_limit(args.memory_gb),
            )
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
        kind = classify(rc, err, phrase)
        took = time.monotonic() - t0
        last = (err.strip().splitlines() or [""])[-1][:160]
        rows.append({"id": case_id, "kind": kind, "rc": rc, "s": round(took, 1), "last": last})
        print(f"{kind:<22} rc={rc!s:<4} {took:5.1f}s  {case_id}: {last}", flush=True)
    counts = {
        k: sum(r["kind"] == k for r in rows) for k in ("clean", "clean, wrong problem", "traceback", "hang", "other")
    }
    print(f"tried {len(rows)}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "tried": len(rows), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
