"""Export the case models that ship with attnlab as ONNX graphs for the static site (``attnlab site``).

    .venv/bin/python -m pip install -e '.[onnx]'      # onnx + onnxruntime: only this script needs them
    .venv/bin/python scripts/export_onnx.py           # data/case_runs -> data/case_onnx (+ manifest.json)
    .venv/bin/python scripts/export_onnx.py --check   # exit 1 when the committed graphs no longer match

Each graph takes token ids ``ids`` (1, T), 1 <= T <= block_size, and returns every layer's attention
pattern ``pattern_<layer>`` (1, nh, T, T), float32: ``TinyGPT.attention_patterns`` traced by torch's
TorchScript exporter (``dynamo=False``, opset 17, no constant folding, so every initializer is a
parameter of the state_dict under its own name). What the patterns do not depend on (the last
layer's MLP, the final norm, the head) is left out of the graph by the exporter.

The graphs are committed *without* their weights: every initializer that is a checkpoint tensor is
stored as ONNX external data (location ``weights.bin``, an offset and a length recorded in the
manifest), and ``attnlab site`` writes that file from the shipped ``ckpt.pt``
(:func:`attnlab.web.site.weights_blob`), so the package carries each model's weights once. The
manifest records the sha256 of the checkpoint, of the graph and of the weights each graph was
checked with: before anything is written, onnxruntime (CPU) runs the graph on those weights on
the probe, the poem, a one-character text, a text of block_size characters and random ids, and
its patterns must be as close to the float64 model as torch's float32 patterns are (:func:`check`;
the distances are recorded). tests/test_site.py fails when a shipped checkpoint drifts from its
export.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import io
import json
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnlab.io import write_bytes, write_text  # noqa: E402
from attnlab.web.site import (  # noqa: E402
    CASE_RUNS,
    MANIFEST,
    MANIFEST_FORMAT,
    ONNX_DIR,
    SHIPPED_RUNS,
    WEIGHTS_FILE,
    sha256_file,
    weights_blob,
)

OPSET = 17
FLOOR = 1e-5  # onnxruntime this close to the float64 model always passes ...
FACTOR = 2.0  # ... else it may be at most this many times as far from it as torch's float32 is
POEM = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"
ALIGN = 64  # each tensor's offset in weights.bin


def load(ckpt: Path):
    from attnlab.checkpoint import from_payload, read_checkpoint

    payload = read_checkpoint(ckpt)
    model, tok, cfg = from_payload(payload, ckpt)
    return payload, model.eval(), tok, cfg


@contextlib.contextmanager
def float64_scores():
    """While tracing: the attention core (q·kᵀ times the scale, the causal mask, the softmax) in float64.

    The unscaled d_head 256 model's logits have a standard deviation of thousands: a float32
    q·kᵀ is off by ~1e-3 there, and its saturated softmax turns that into ~1e-4 changes of a weight,
    differently in every float32 runtime (onnxruntime-web's WebAssembly kernels have no FMA). In
    float64 this step adds no error of its own; q, k and v stay the model's float32 values, and
    so does everything else (LayerNorm, the projections, the MLP).
    """
    import attnlab.model as M

    original = M.scaled_scores
    M.scaled_scores = lambda q, k, cfg, scale: original(q.double(), k.double(), cfg, scale)
    try:
        yield
    finally:
        M.scaled_scores = original


def trace(model, cfg) -> bytes:
    """The TorchScript exporter's graph of the attention patterns (weights inline, as exported)."""
    import torch

    class Patterns(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, ids):  # (1, T) -> n_layer x (1, nh, T, T), float32
            return tuple(p.float() for p in self.model.attention_patterns(ids))

    outputs = [f"pattern_{i}" for i in range(cfg.n_layer)]
    example = torch.arange(2, 2 + min(8, cfg.block_size)).remainder(cfg.vocab_size).view(1, -1)
    buf = io.BytesIO()
    with warnings.catch_warnings(), float64_scores():
        warnings.simplefilter("ignore")  # TracerWarnings about the block_size check, the exporter's deprecation
        torch.onnx.export(
            Patterns(model),
            (example,),
            buf,
            dynamo=False,
            opset_version=OPSET,
            do_constant_folding=False,
            input_names=["ids"],
            output_names=outputs,
            dynamic_axes={"ids": {1: "T"}, **{o: {2: "T", 3: "T"} for o in outputs}},
        )
    return buf.getvalue()


def externalize(graph_bytes: bytes, state: dict) -> tuple[bytes, list[dict]]:
    """The graph with every checkpoint tensor moved to external data, and those tensors' layout."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(graph_bytes)
    tensors, offset = [], 0
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        key = init.name.removeprefix("model.")
        src = state.get(key)
        if src is not None and arr.dtype == np.float32 and np.array_equal(arr, src.float().numpy()):
            length = arr.nbytes
            tensors.append(
                {"name": init.name, "key": key, "shape": list(arr.shape), "offset": offset, "length": length}
            )
            init.ClearField("raw_data")
            init.ClearField("float_data")
            init.data_location = onnx.TensorProto.EXTERNAL
            del init.external_data[:]
            for k, v in (("location", WEIGHTS_FILE), ("offset", str(offset)), ("length", str(length))):
                entry = init.external_data.add()
                entry.key, entry.value = k, v
            offset += -(-length // ALIGN) * ALIGN
        elif arr.nbytes > 4096:
            raise SystemExit(
                f"initializer {init.name} ({arr.nbytes} bytes) is no checkpoint tensor; cannot externalize"
            )
    return model.SerializeToString(), tensors


def check(graph: bytes, blob: bytes, model, cfg, itos) -> dict:
    """onnxruntime's patterns on test texts against the same model computed in float64 by torch,
    beside torch's own float32 patterns (what the server shows). Passes when onnxruntime is as close
    to float64 as torch's float32 is: within FLOOR, or at most FACTOR times torch's distance. For a
    well-conditioned model both are ~1e-6 away; the unscaled d_head 256 model's saturated softmax
    amplifies float32 rounding in its second layer to ~1e-4 in either runtime (measured, recorded).
    The distances are maxima over all the texts: on one text either runtime may round luckily."""
    import numpy as np
    import onnxruntime as ort
    import torch

    stoi = {c: i for i, c in enumerate(itos)}
    probe = [stoi.get(c, 1) for c in cfg.probe][: cfg.block_size]
    poem = [stoi.get(c, 1) for c in POEM][: cfg.block_size]
    gen = torch.Generator().manual_seed(0)
    cases = {
        "probe": probe,
        "poem": poem,
        "one character": probe[:1],
        "block_size characters": (probe * cfg.block_size)[: cfg.block_size],
        "random ids": torch.randint(0, len(itos), (cfg.block_size // 2 + 1,), generator=gen).tolist(),
    }
    exact = copy.deepcopy(model).double()
    gap = {"onnxruntime_vs_torch": 0.0, "onnxruntime_vs_float64": 0.0, "torch_vs_float64": 0.0}
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "model.onnx").write_bytes(graph)
        (Path(d) / WEIGHTS_FILE).write_bytes(blob)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # as site.js runs it
        session = ort.InferenceSession(str(Path(d) / "model.onnx"), opts, providers=["CPUExecutionProvider"])
        for what, ids in cases.items():
            x = torch.tensor([ids])
            f32 = [p.numpy() for p in model.attention_patterns(x)]
            f64 = [p.numpy() for p in exact.attention_patterns(x)]
            got = session.run(None, {"ids": x.numpy()})
            if [g.shape for g in got] != [w.shape for w in f32]:
                raise SystemExit(f"onnxruntime's patterns have shapes {[g.shape for g in got]} on the {what}")
            here = {
                "onnxruntime_vs_torch": max(float(np.abs(g - w).max()) for g, w in zip(got, f32)),
                "onnxruntime_vs_float64": max(float(np.abs(g - w).max()) for g, w in zip(got, f64)),
                "torch_vs_float64": max(float(np.abs(g - w).max()) for g, w in zip(f32, f64)),
            }
            gap = {k: max(v, here[k]) for k, v in gap.items()}
    # over all texts: on one text either runtime may happen to round luckily
    if gap["onnxruntime_vs_float64"] > max(FLOOR, FACTOR * gap["torch_vs_float64"]):
        raise SystemExit(
            f"onnxruntime is up to {gap['onnxruntime_vs_float64']:.2e} from the float64 model, torch's float32 "
            f"{gap['torch_vs_float64']:.2e}: the graph is not the model"
        )
    return {"texts": list(cases), **gap, "floor": FLOOR, "factor": FACTOR}


def export_run(runs: Path, name: str) -> tuple[str, bytes, dict]:
    import onnx
    import onnxruntime
    import torch

    ckpt = runs / name / "ckpt.pt"
    payload, model, tok, cfg = load(ckpt)
    graph, tensors = externalize(trace(model, cfg), payload["model"])
    blob = weights_blob(payload["model"], tensors)
    checked = check(graph, blob, model, cfg, tok.itos)
    file = name.rsplit("/", 1)[-1] + ".onnx"
    entry = {
        "onnx": file,
        "onnx_sha256": hashlib.sha256(graph).hexdigest(),
        "ckpt": f"{name}/ckpt.pt",
        "ckpt_sha256": sha256_file(ckpt),
        "step": payload.get("step"),
        "weights_sha256": hashlib.sha256(blob).hexdigest(),
        "weights_bytes": len(blob),
        "tensors": tensors,
        "inputs": {"ids": ["1", "T"]},
        "outputs": [f"pattern_{i}" for i in range(cfg.n_layer)],
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "block_size": cfg.block_size,
        "vocab": len(tok.itos),
        "checked": checked,
        "exporter": {
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
            "opset": OPSET,
        },
    }
    return file, graph, entry


def stale(runs: Path, out: Path) -> list[str]:
    """What no longer matches between the shipped checkpoints and the committed export."""
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [f"{out / MANIFEST}: {e}"]
    problems = []
    for name in CASE_RUNS:
        entry = manifest.get("runs", {}).get(name)
        ckpt = runs / name / "ckpt.pt"
        if entry is None:
            problems.append(f"{name}: not exported")
        elif not ckpt.is_file():
            problems.append(f"{name}: {ckpt} is missing")
        elif sha256_file(ckpt) != entry["ckpt_sha256"]:
            problems.append(f"{name}: ckpt.pt changed since its export")
        elif not (out / entry["onnx"]).is_file() or sha256_file(out / entry["onnx"]) != entry["onnx_sha256"]:
            problems.append(f"{name}: {entry['onnx']} is missing or changed")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=SHIPPED_RUNS, help="folder holding case/<run>/ckpt.pt")
    ap.add_argument("--out", type=Path, default=ONNX_DIR, help="where the graphs and manifest.json go")
    ap.add_argument("--check", action="store_true", help="only say whether the committed export is current")
    ap.add_argument("--run", action="append", help="export only this run (repeatable; default: the four case runs)")
    args = ap.parse_args(argv)
    if args.check:
        problems = stale(args.runs, args.out)
        print("\n".join(problems) or "the ONNX export matches the shipped checkpoints")
        return 1 if problems else 0
    import torch

    torch.set_num_threads(1)
    names = args.run or list(CASE_RUNS)
    missing = [n for n in names if not (args.runs / n / "ckpt.pt").is_file()]
    if missing:
        print(f"missing checkpoints under {args.runs}: {', '.join(missing)}", file=sys.stderr)
        return 2
    runs, graphs = {}, {}
    for name in names:
        file, graph, entry = export_run(args.runs, name)
        graphs[file], runs[name] = graph, entry
        c = entry["checked"]
        print(
            f"{name}: {len(graph):,} bytes of graph, {entry['weights_bytes']:,} of weights; max |Δ weight| "
            f"onnxruntime vs torch {c['onnxruntime_vs_torch']:.1e}, vs float64 {c['onnxruntime_vs_float64']:.1e} "
            f"(torch's float32 vs float64 {c['torch_vs_float64']:.1e})"
        )
    for file, graph in graphs.items():
        write_bytes(args.out / file, graph)
    manifest = {"format": MANIFEST_FORMAT, "weights_file": WEIGHTS_FILE, "runs": runs}
    write_text(args.out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {args.out / MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
