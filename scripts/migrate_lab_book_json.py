"""Rewrite the committed lab-book results once into today's shape (a one-off, run before the
readers of older shapes are deleted).

Eleven lab-book entries used to migrate older shapes of their committed results at every read:
lists in seed order instead of per-seed tables (``_legacy_table``, ``legacy_tables``, ``upgrade``),
and, for the ablation, the exercise-1 pairs and the deep model's two-layer reach, rows brought in
from the case (data/ch1_case.json), from §1.9 (data/lab_book/positions.json) and from the head
portraits (data/head_portrait.json). This script applies those readers once and writes what they
return in today's shape: ``per_seed`` (and the deep model's ``long_per_seed``), the sweep's
``points``, and exercise 2's per-point diagnostic means of the seeds whose per-seed diagnostics
were not kept (``legacy_means``, kept as ``diag_means``).

Nothing is measured and no number changes: where a table the readers return differs from one the
results already hold, the script stops and names it (measure that entry again instead). A file is
written only when its text changes.

Usage: python scripts/migrate_lab_book_json.py [--data DATA] [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnlab.io import read_json, write_json_if_changed
from attnlab.lab import (
    ablation,
    deep,
    dynamics,
    exercise1,
    exercise2,
    kv_cache,
    markov,
    positions,
    qk_norm,
    sweep,
    temperature,
)

RENAMED = {"exercise2": {"legacy_means": "diag_means"}}


def _optional(data: Path, name: str) -> dict | None:
    p = data / name
    return read_json(p) if p.is_file() else None


def migrated_tables(eid: str, res: dict, data: Path, doc: dict) -> dict:
    """{key: table} of today's shape that the readers of older shapes return for ``res``."""
    if eid == "ablation":
        return {
            "per_seed": ablation.legacy_table(
                res, _optional(data, "ch1_case.json"), _optional(data, "lab_book/positions.json")
            )
        }
    if eid == "deep":
        table, long = deep.legacy_tables(res, doc.get("claims"), _optional(data, "head_portrait.json"))
        return {"per_seed": table, "long_per_seed": long}
    if eid == "exercise1":
        return {
            "per_seed": exercise1.tabulate(**exercise1.legacy_tables(res, _optional(data, "ch1_case.json")))["per_seed"]
        }
    if eid == "exercise2":
        table, means, _ = exercise2._legacy(res)
        return {"per_seed": table, "diag_means": means}
    if eid == "sweep":
        return {"points": sweep._legacy_points(res)}
    return {"per_seed": TABLE_ONLY[eid]._legacy_table(res)}


# the entries whose older shapes held one per-seed table
TABLE_ONLY = {m.__name__.rsplit(".", 1)[-1]: m for m in (dynamics, kv_cache, markov, positions, qk_norm, temperature)}
ENTRIES = ("ablation", "deep", "exercise1", "exercise2", "sweep", *TABLE_ONLY)


def migrate(eid: str, data: Path) -> tuple[dict, list[str]]:
    """(the entry's document in today's shape, what changed in words); SystemExit if a number would."""
    path = data / "lab_book" / f"{eid}.json"
    doc = read_json(path)
    res = doc.get("results") or {}
    if not res:
        return doc, []
    rename = RENAMED.get(eid, {})
    out = {rename.get(k, k): v for k, v in res.items()}  # renamed in place: the keys keep their order
    said = [f"results.{a} -> results.{b}" for a, b in rename.items() if a in res]
    for key, table in migrated_tables(eid, res, data, doc).items():
        if key in out and out[key] != table:
            sys.exit(f"{path}: results.{key} would change its numbers; measure it again (`attnlab book --only {eid}`)")
        if key not in out:
            out[key] = table
            said.append(f"results.{key} added")
    return {**doc, "results": out}, said


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("data"), help="the folder holding lab_book/ (default: data)")
    ap.add_argument("--check", action="store_true", help="say what would change, write nothing")
    args = ap.parse_args(argv)
    for eid in ENTRIES:
        doc, said = migrate(eid, args.data)
        path = args.data / "lab_book" / f"{eid}.json"
        if not said:
            print(f"{path}: already in today's shape")
            continue
        wrote = False if args.check else write_json_if_changed(path, doc)
        print(f"{path}: {'; '.join(said)}{'' if wrote else ' (not written: --check)' if args.check else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
