"""One-off (2026-12-02): the learning-rate map reads the case's runs as the case measured them.

The map (data/lab_book/lr_sensitivity.json) was measured before one run per (config, seed): six of
its points at the book's lr 3e-3 hold the map's own retraining of a case run (4.2685 where the case
measured 4.2898 for the first small unscaled run). This rewrites those points from the case's own
record of the run (data/ch1_case.json, its trace), with what ``attnlab book`` now does when it meets
such a point (attnlab.lab.lr_sensitivity.stored_cells): the retraining stays in the entry's
``reproducibility`` list and the run store. Then run ``attnlab report`` to judge, draw and render.

    python scripts/migrate_lr_case_cells.py
"""

from __future__ import annotations

from pathlib import Path

from attnlab.io import read_json, write_json
from attnlab.lab import lr_sensitivity as L
from attnlab.lab.labbook import Context
from attnlab.lab.runs import Scale
from attnlab.runstore import RunStore, reproducibility_note

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    path = ROOT / L.LR_JSON
    doc = read_json(path)
    scale = Scale(**doc["scale"])
    ctx = Context(scale, "", ROOT, {}, L.EXPERIMENT, train=False, store=RunStore.load(ROOT))
    res = doc["results"]
    for size in L.SIZES:
        for sc in res["scalings"]:
            name = L.key(size, sc, L.BOOK_LR)
            prev = {s: {name: row[name]} for s, row in res["per_seed"].items() if name in row}
            for s, cell in L.stored_cells(ctx, size, sc, L.BOOK_LR, prev).items():
                res["per_seed"][s].update(cell)
    res.update(L.tables(res))
    seen = doc.get("reproducibility") or []
    seen += [d for d in ctx.differences if d not in seen]
    doc["reproducibility"] = seen
    doc["notes"] = [reproducibility_note(d) for d in seen] + [
        n for n in doc["notes"] if not n.startswith("复现差异 / reproducibility difference")
    ]
    write_json(path, doc)
    print(f"{path.relative_to(ROOT)}: {len(ctx.differences)} points read from the case; now run `attnlab report`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
