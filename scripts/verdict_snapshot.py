"""Every verdict the committed JSON gives when judged again by today's code, as one JSON map.

    python scripts/verdict_snapshot.py            # print the map
    python scripts/verdict_snapshot.py --write    # write tests/data/verdicts_baseline.json

The map is keyed by claim id (the case's own JSON under ``ch1_case:<id>``) and holds what a
reader sees of each claim: its kind, verdict, and the family-wise (``holm``) and sequential
(``seq``) verdicts beside it. Nothing is written into data/: the case and every lab-book entry
are re-judged in memory, exactly as ``attnlab report`` judges them. tests/test_verdicts_unchanged.py
compares today's map with the baseline, so moving code can never change a verdict unnoticed;
a claim re-specified on purpose is recorded as an amendment, never by editing the baseline.

When: after a deliberate re-specification (an amendment in the claims registry), to update the
baseline for exactly the claims it changed; check that ``git diff`` touches only those.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tests" / "data" / "verdicts_baseline.json"


def _row(c: dict) -> dict:
    seq = c.get("seq")
    return {
        "kind": c.get("kind"),
        "verdict": c.get("verdict"),
        "holm": c.get("holm"),
        "seq": seq.get("verdict") if isinstance(seq, dict) else seq,
    }


def snapshot(root: Path = ROOT) -> dict[str, dict]:
    """{claim id: {kind, verdict, holm, seq}} of the case and the lab book in ``root``/data, re-judged."""
    from attnlab.lab import EXPERIMENTS
    from attnlab.lab.case.claims import check_claims
    from attnlab.lab.case.run import read_case_json
    from attnlab.lab.labbook import read_entries, rejudged_book
    from attnlab.verdicts import with_holm

    data = root / "data"
    out: dict[str, dict] = {}
    for c in check_claims(read_case_json(data / "ch1_case.json")):
        out[f"ch1_case:{c['id']}"] = _row(c)
    _, changed = rejudged_book(EXPERIMENTS, root, data)
    docs = read_entries(EXPERIMENTS, data)
    for p, doc in changed.items():
        if p.parent.name == "lab_book":
            docs[p.stem] = doc
    claims = [c for eid in sorted(docs) for c in docs[eid]["claims"]]
    for c in with_holm(claims):  # Holm across each family of the whole book, as the book shows it
        if c["id"] in out:
            raise SystemExit(f"claim id {c['id']} appears twice in the lab book")
        out[c["id"]] = _row(c)
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {BASELINE.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    snap = snapshot()
    text = json.dumps(snap, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    if args.write:
        BASELINE.parent.mkdir(parents=True, exist_ok=True)
        BASELINE.write_text(text, encoding="utf-8")
        print(f"{BASELINE.relative_to(ROOT)}: {len(snap)} claims")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
