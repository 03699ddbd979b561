"""Copy the case's four first-seed runs into the package, so a fresh clone or an installed wheel
opens the playground on trained models (``attnlab serve`` with no argument, ``attnlab site``).

    python scripts/ship_case_models.py [--from runs] [--texts 64]

Reads ``<from>/case/{small_scaled_s20261014, small_unscaled_s20261014, big_scaled, big_unscaled}``
(what ``attnlab case`` trains at 1500 steps) and writes ``src/attnlab/data/case_runs/case/<name>/``:
the run's config, vocabulary, metrics, summary and attention snapshots as trained, and a
``ckpt.pt`` holding only what serving needs (config, vocabulary, weights, step: no optimizer, no
history). Weights are stored in float16 when every attention weight the float16 model gives stays
within ``HEADROOM × TOLERANCE`` of the float32 model's, measured on ``--texts`` validation windows of
full block length and the chapter's poem (the headroom covers texts nobody measured); otherwise in float32. What was measured and chosen is written
to ``src/attnlab/data/case_runs/manifest.json`` (tests/test_shipped_models.py reads it back).

When: after the case's first seed was trained again at 1500 steps; then scripts/export_onnx.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import torch

from attnlab.checkpoint import FORMAT, from_payload, read_checkpoint
from attnlab.corpus import load_corpus
from attnlab.io import save_torch, write_json
from attnlab.train import split_data

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "attnlab" / "data" / "case_runs"
NAMES = ("small_scaled_s20261014", "small_unscaled_s20261014", "big_scaled", "big_unscaled")
COPIED = ("config.json", "tokenizer.json", "metrics.jsonl", "summary.json", "snapshots.npz")
TOLERANCE = 1e-3  # the largest |Δ attention weight| float16 storage may cause
HEADROOM = 0.5  # ... measured on these texts at most HEADROOM × TOLERANCE, so texts not measured stay within it
POEM = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"


def windows(cfg, tok, n: int) -> list[torch.Tensor]:
    """``n`` validation windows of block_size tokens, evenly spread, and the poem."""
    _, val = split_data(torch.tensor(tok.encode(load_corpus()), dtype=torch.long), cfg)
    T = cfg.block_size
    starts = torch.linspace(0, len(val) - T - 1, n).long().tolist()
    return [val[s : s + T][None] for s in starts] + [torch.tensor([tok.encode(POEM)])]


@torch.no_grad()
def max_pattern_gap(a, b, texts) -> float:
    gap = 0.0
    for idx in texts:
        for pa, pb in zip(a.attention_patterns(idx), b.attention_patterns(idx)):
            gap = max(gap, (pa.float() - pb.float()).abs().max().item())
    return gap


def ship(run_dir: Path, dest: Path, n_texts: int) -> dict:
    payload = read_checkpoint(run_dir / "ckpt.pt")
    model, tok, cfg = from_payload(payload, run_dir / "ckpt.pt")
    half = {k: v.half() if v.is_floating_point() else v for k, v in payload["model"].items()}
    slim = {"format": FORMAT, "config": payload["config"], "itos": payload["itos"], "step": payload["step"]}
    model16, _, _ = from_payload({**slim, "model": half}, "float16 copy")
    gap = max_pattern_gap(model, model16, windows(cfg, tok, n_texts))
    dtype = "float16" if gap <= HEADROOM * TOLERANCE else "float32"
    weights = half if dtype == "float16" else {k: v.clone() for k, v in payload["model"].items()}
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in COPIED:
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, tmp / name)
    save_torch(tmp / "ckpt.pt", {**slim, "model": weights, "weights_dtype": dtype})
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return {
        "step": payload["step"],
        "weights_dtype": dtype,
        "max_attention_gap_float16": gap,
        "texts": n_texts + 1,
        "params": sum(v.numel() for v in weights.values()),
        "files": {
            f.name: {"bytes": f.stat().st_size, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}
            for f in sorted(dest.iterdir())
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="src", default="runs", help="the runs root holding case/<name> (default runs)")
    ap.add_argument("--texts", type=int, default=64, help="validation windows the float16 check reads (default 64)")
    args = ap.parse_args(argv)
    src = Path(args.src) / "case"
    missing = [n for n in NAMES if not (src / n / "summary.json").is_file()]
    if missing:
        print(f"ship_case_models: not finished under {src}: {', '.join(missing)}; run `attnlab case` first")
        return 2
    pairs = json.loads((REPO / "data" / "ch1_case.json").read_text(encoding="utf-8"))["pairs"]
    committed = {v["run"]: v["val_loss_end"] for v in pairs.values()}
    runs = {}
    for name in NAMES:
        runs[name] = ship(src / name, OUT / "case" / name, args.texts)
        summary = json.loads((src / name / "summary.json").read_text(encoding="utf-8"))
        # the same config and seed trained here and for data/ch1_case.json: equal only on the same CPU
        runs[name]["val_loss_end"] = summary["val_loss_end"]
        runs[name]["committed_case_val_loss_end"] = committed.get(name)
        print(
            f"{name}: {runs[name]['weights_dtype']} (max |Δ attention| in float16 {runs[name]['max_attention_gap_float16']:.2e})"
        )
    write_json(
        OUT / "manifest.json",
        {
            "what": "the case's first seed (1500 steps), as `attnlab case` trains it; ckpt.pt holds serving weights only",
            "tolerance": TOLERANCE,
            "headroom": HEADROOM,
            "runs": runs,
            "total_bytes": sum(f["bytes"] for r in runs.values() for f in r["files"].values()),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
