"""Back-fill each lab-book claim's earlier looks from the git history of data/lab_book/*.json.

A look is a judgement of a claim at a seed count. Before claims recorded their looks, the only
record of the earlier ones is the committed JSON: every full-size commit of an entry whose claim
stood on fewer seeds than it does now is one earlier look (n, the verdict then and, where the
stored claim allows it, the p then). Judgements the decide loop made between two commits are not
in git and cannot be recovered: the looks are a lower bound, so the sequential verdicts computed
from them can only be too lenient by the looks left out, never by a look made up.

The p of an earlier look is recovered from the claim as stored then, for the rules whose stored
interval and inputs determine it (effect: its 95% interval; equivalence: its 90% interval and
margin; value: its prediction interval, book and tol). Of other rules (band, all_of) it stays
None, and such a look never counts as an earlier crossing (the sequential verdict is then judged
at the later looks only, the stricter reading).

Usage: python scripts/backfill_looks.py [--root .] [--data ROOT/data]   (then `attnlab report`
re-judges the claims over their looks)
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from pathlib import Path

from scipy import stats as st

from attnlab.io import read_json, write_json


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def recovered_p(c: dict) -> float | None:
    """The p of a stored claim's PASS test, from its interval and inputs (None where they do not fix it)."""
    n, iv, rule, inputs = c.get("n"), c.get("interval"), c.get("rule"), c.get("inputs") or {}
    if not isinstance(n, int) or n < 2 or not iv or None in iv:
        return None
    lo, hi = iv
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    if rule == "effect":  # the interval is stored in the data's units; "stated < 0" turns it round
        mid *= -1 if "stated < 0" in str(c.get("detail", "")) else 1
        se = half / st.t.isf(0.025, n - 1)
        return float(st.t.sf(mid / se if se > 0 else math.copysign(math.inf, mid), n - 1))
    if rule == "equivalence" and isinstance(inputs.get("margin"), (int, float)):
        se, m = half / st.t.isf(0.05, n - 1), inputs["margin"]
        if se <= 0:
            return 0.0 if abs(mid) < m else 1.0
        return float(max(st.t.sf((mid + m) / se, n - 1), st.t.sf((m - mid) / se, n - 1)))
    if rule == "value" and all(isinstance(inputs.get(k), (int, float)) for k in ("book", "tol")):
        scale, b, tol = half / st.t.isf(0.025, n - 1), inputs["book"], inputs["tol"]
        if scale <= 0:
            return 0.0 if abs(mid - b) < tol else 1.0
        return float(max(st.t.sf((mid - (b - tol)) / scale, n - 1), st.t.sf(((b + tol) - mid) / scale, n - 1)))
    return None


def history(root: Path) -> dict[tuple[str, str], list[dict]]:
    """(entry, claim) -> its committed full-size judgements, oldest first, one per seed count."""
    out: dict[tuple[str, str], list[dict]] = {}
    for line in git(root, "log", "--reverse", "--format=%H %ad", "--date=short", "--", "data/lab_book").splitlines():
        commit, date = line.split()
        for f in git(root, "ls-tree", "--name-only", commit, "data/lab_book/").split():
            if not f.endswith(".json"):
                continue
            try:
                doc = json.loads(git(root, "show", f"{commit}:{f}"))
            except (subprocess.CalledProcessError, json.JSONDecodeError):
                continue
            if not isinstance(doc, dict) or (doc.get("scale") or {}).get("quick") is not False:
                continue
            for c in doc.get("claims") or []:
                n = c.get("n")
                if not isinstance(n, int) or n < 2:
                    continue
                seen = out.setdefault((doc.get("id"), c["id"]), [])
                if not seen or seen[-1]["n"] != n:
                    seen.append(
                        {"n": n, "p": recovered_p(c), "verdict": c.get("verdict"), "commit": commit[:7], "date": date}
                    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the git checkout whose history is read")
    ap.add_argument("--data", default=None, help="the folder whose lab_book/*.json get the looks (ROOT/data)")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    hist = history(root)
    for path in sorted(Path(args.data or root / "data").glob("lab_book/*.json")):
        doc = read_json(path)
        changed = False
        for c in doc.get("claims") or []:
            if c.get("p") is None or not isinstance(c.get("n"), int):
                continue
            earlier = [x for x in hist.get((doc["id"], c["id"]), []) if x["n"] < c["n"]]
            kept = {x["n"] for x in c.get("looks") or []}
            new = [x for x in earlier if x["n"] not in kept]
            if new:
                c["looks"] = sorted([*new, *(c.get("looks") or [])], key=lambda x: x["n"])
                changed = True
                print(f"{doc['id']}.{c['id']}: looks at {[x['n'] for x in c['looks']]}")
        if changed:
            write_json(path, doc)


if __name__ == "__main__":
    main()
