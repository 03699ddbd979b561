"""Redraw committed figures from the committed JSON alone (nothing is trained or loaded).

    python scripts/redraw_figures.py                       # every figure below
    python scripts/redraw_figures.py attention_maps sinks  # some of them

attention_maps           figures/attention_maps.{png,svg}, from figures/attention_maps.json. Maps written before
                         attention_maps() recorded their model get it from data/head_portrait.json, the analysis
                         the same `attnlab heads --maps` command wrote (its first evaluation text is the maps'
                         text): the run, its shape, seed and step; it is added to the maps' JSON.
sweep_critical_dimension figures/sweep_critical_dimension.{png,svg}: the one-seed `attnlab sweep`
                         (data/sweep_critical_dimension.json) beside the lab book's exercise 2 on every seed
                         it has (data/lab_book/exercise2.json, the same protocol).
dynamics, markov, sinks  the lab book's figures of these experiments (figures/lab_book/), from
                         data/lab_book/<id>.json, as `attnlab report` draws them.

When: after a change to how one of these figures is drawn; nothing is trained, only the figures are
rewritten (tests/test_figure_labels.py loads its drawing functions).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnlab.io import write_json  # noqa: E402

LAB_BOOK = ("dynamics", "markov", "sinks")


def _json(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def maps_model(maps: dict, portrait: dict) -> dict:
    """The model the committed maps are of, from the head portrait written by the same command."""
    texts = (portrait.get("eval") or {}).get("texts") or []
    if not texts or texts[0] != maps["text"]:
        raise SystemExit(
            "figures/attention_maps.json and data/head_portrait.json are not from the same `attnlab heads --maps` "
            "run (the maps' text is not the portrait's first evaluation text): redraw them with `attnlab heads`"
        )
    cfg, src = portrait["config"], portrait.get("source") or {}
    ckpt = Path(src.get("checkpoint", ""))
    model = {k: cfg[k] for k in ("d_model", "n_head", "n_layer", "scaled", "seed")}
    if src.get("checkpoint"):
        model["run"] = (ckpt.parent if ckpt.name == "ckpt.pt" else ckpt).name
        model["checkpoint"] = src["checkpoint"]
    if src.get("step") is not None:
        model["step"] = int(src["step"])
    return model


def attention_maps() -> list[Path]:
    from attnlab.lab.plot import plot_attention_maps

    path = ROOT / "figures" / "attention_maps.json"
    maps = json.loads(path.read_text(encoding="utf-8"))
    if not maps.get("model"):
        maps["model"] = maps_model(maps, _json("data/head_portrait.json"))
        write_json(path, maps)
    return [plot_attention_maps(maps, ROOT / "figures" / "attention_maps.png")]


def exercise2_reference(doc: dict) -> dict:
    """The lab book's exercise 2 (n_head 1, d_model = d_head) as per-seed gaps by d_head."""
    r = doc["results"]
    gaps = {int(x["d_head"]): [float(g) for g in x["gaps"]] for x in r["summary"] if x.get("gaps")}
    counts = sorted({len(v) for v in gaps.values()})
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return {
        "label": f"练习二，实验手册 / exercise 2, lab book（{n} 个种子 / seeds）",
        "gaps": gaps,
        "note": "\n".join(
            [
                "同一协议（n_head 1，d_model = d_head，1500 步）。蓝：实验手册练习二的每个种子（data/lab_book/exercise2.json）；",
                "红：attnlab sweep 的一个种子（data/sweep_critical_dimension.json）。一个种子定不出临界维度。",
                "The same protocol. Blue: every seed of the lab book's exercise 2; red: the one-seed sweep.",
                "One seed cannot place the critical dimension.",
            ]
        ),
    }


def sweep_critical_dimension() -> list[Path]:
    from attnlab.lab.plot import plot_sweep_gap

    sweep = _json("data/sweep_critical_dimension.json")
    ref = exercise2_reference(_json("data/lab_book/exercise2.json"))
    return [plot_sweep_gap(sweep, ROOT / "figures" / "sweep_critical_dimension.png", reference=ref)]


def lab_book(eid: str) -> list[Path]:
    from attnlab.report.lab_book_figures import draw_figures

    return draw_figures(_json(f"data/lab_book/{eid}.json"), ROOT)


FIGURES = {
    "attention_maps": attention_maps,
    "sweep_critical_dimension": sweep_critical_dimension,
    **{eid: (lambda eid=eid: lab_book(eid)) for eid in LAB_BOOK},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help="some of: " + ", ".join(FIGURES) + " (default: all)")
    args = ap.parse_args(argv)
    if unknown := [n for n in args.names if n not in FIGURES]:
        ap.error(f"unknown figure {', '.join(unknown)}; known: {', '.join(FIGURES)}")
    for name in args.names or FIGURES:
        for path in FIGURES[name]():
            print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
