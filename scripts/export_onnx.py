"""Export the case models that ship with attnlab as ONNX graphs for the static site (``attnlab site``).

    .venv/bin/python -m pip install -e '.[onnx]'      # onnx + onnxruntime: only this script needs them
    .venv/bin/python scripts/export_onnx.py           # data/case_runs -> data/case_onnx (+ manifest.json)
    .venv/bin/python scripts/export_onnx.py --check   # exit 1 when the committed graphs no longer match

Each graph takes token ids ``ids`` (1, T), 1 <= T <= block_size, and returns every layer's attention
pattern ``pattern_<layer>`` (1, nh, T, T), float64: ``TinyGPT.attention_patterns`` of a float64 copy
of the model, traced by torch's TorchScript exporter (``dynamo=False``, opset 17, no constant
folding, so every initializer is a parameter of the state_dict under its own name). Every op runs
in float64, as the server's /api/attention does (a float64 copy of the loaded float32 model), so
browser and server evaluate the same function and agree to ~1e-12 even where a saturated softmax
(the unscaled d_head 256 model's second layer) turns float32 rounding into ~3e-4 changes of a
weight. onnxruntime has no float64 Erf, so the GELU's erf is written out in float64 ops
(:func:`erf64`). What the patterns do not depend on (the last layer's MLP, the final norm, the
head) is left out of the graph by the exporter.

The graphs are committed *without* their weights: every initializer that is a checkpoint tensor is
stored as ONNX external data (location ``weights.bin``, an offset and a length recorded in the
manifest), and ``attnlab site`` writes that file from the shipped ``ckpt.pt``
(:func:`attnlab.web.site.weights_blob`), so the package carries each model's weights once. The
manifest records the sha256 of the checkpoint, of the graph and of the weights each graph was
checked with: before anything is written, onnxruntime (CPU) runs the graph on those weights on
the probe, the poem, a one-character text, a text of block_size characters and random ids, and
its patterns must be within TOLERANCE of torch's float64 model (:func:`check`; the distances are
recorded, with torch's float32 distance for comparison). tests/test_site.py fails when a shipped checkpoint drifts from its
export.

When: after the shipped case models change (scripts/ship_case_models.py) or the attention patterns'
math does; tests/test_site.py says when the committed graphs are stale.
"""

from __future__ import annotations

import argparse
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
TOLERANCE = 1e-9  # onnxruntime's float64 graph vs torch's float64 model, any weight of any pattern
POEM = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"
ALIGN = 64  # each tensor's offset in weights.bin


def load(ckpt: Path):
    from attnlab.checkpoint import from_payload, read_checkpoint

    payload = read_checkpoint(ckpt)
    model, tok, cfg = from_payload(payload, ckpt)
    return payload, model.eval(), tok, cfg


# fdlibm's erf (s_erf.c, Sun Microsystems 1993): rational approximations on [0, 0.84375), [0.84375, 1.25),
# [1.25, 1/0.35), [1/0.35, 6) and 1 beyond; within 1 ulp of torch.erf in float64 (tests/test_site.py)
ERX = 8.45062911510467529297e-01
PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
      -5.77027029648944159157e-03, -2.37630166566501626084e-05)  # fmt: skip
QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
      1.32494738004321644526e-04, -3.96022827877536812320e-06)  # fmt: skip
PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
      3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
      -2.16637559486879084300e-03)  # fmt: skip
QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
      1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)  # fmt: skip
RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e01,
      -6.23753324503260060396e01, -1.62396669462573470355e02, -1.84605092906711035994e02,
      -8.12874355063065934246e01, -9.81432934416914548592e00)  # fmt: skip
SA = (1.0, 1.96512716674392571292e01, 1.37657754143519042600e02, 4.34565877475229228821e02,
      6.45387271733267880336e02, 4.29008140027567833386e02, 1.08635005541779435134e02,
      6.57024977031928170135e00, -6.04244152148580987438e-02)  # fmt: skip
RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e01,
      -1.60636384855821916062e02, -6.37566443368389627722e02, -1.02509513161107724954e03,
      -4.83519191608651397019e02)  # fmt: skip
SB = (1.0, 3.03380607434824582924e01, 3.25792512996573918826e02, 1.53672958608443695994e03,
      3.19985821950859553908e03, 2.55305040643316442583e03, 4.74528541206955367215e02,
      -2.24409524465858183362e01)  # fmt: skip


def _poly(s, coefficients):
    """c0 + c1 s + c2 s² + ... by Horner's rule."""
    acc = coefficients[-1] * s + coefficients[-2]
    for c in reversed(coefficients[:-2]):
        acc = acc * s + c
    return acc


def erf64(x):
    """erf(x) of a float64 tensor in ONNX ops that have float64 kernels in onnxruntime (CPU and
    WebAssembly): Abs, Mul, Add, Div, Exp, Less, Where. onnxruntime's Erf has a float32 kernel only,
    so the exact GELU (x/2 (1 + erf(x/√2))) is written with this one in the float64 graph. Every
    branch is evaluated everywhere and Where picks one; the others may be inf or NaN (1/x² at 0)."""
    import torch

    a = x.abs()
    z = x * x
    small = x + x * (_poly(z, PP) / _poly(z, QQ))  # |x| < 0.84375
    s1 = a - 1.0
    mid = ERX + _poly(s1, PA) / _poly(s1, QA)  # 0.84375 <= |x| < 1.25
    s = 1.0 / z
    ratio = torch.where(a < 1 / 0.35, _poly(s, RA) / _poly(s, SA), _poly(s, RB) / _poly(s, SB))
    far = 1.0 - torch.exp(-z - 0.5625 + ratio) / a  # 1.25 <= |x| < 6: 1 - erfc
    pos = torch.where(a < 1.25, mid, torch.where(a < 6.0, far, torch.ones_like(a)))
    return torch.where(a < 0.84375, small, torch.where(x < 0, -pos, pos))


def float64_model(model):
    """A float64 copy of the model (every parameter the float32 value, widened exactly) whose GELUs
    use :func:`erf64`: what the graph computes, op for op, and what the server's /api/attention
    computes (``model.double()``), up to float64 rounding."""
    import torch

    class Gelu64(torch.nn.Module):
        def forward(self, x):  # torch's exact GELU: x · ½ · (1 + erf(x / √2))
            return x * 0.5 * (1.0 + erf64(x * 0.7071067811865476))

    exact = copy.deepcopy(model).double()
    for parent in exact.modules():
        for name, child in parent.named_children():
            if isinstance(child, torch.nn.GELU):
                if child.approximate != "none":
                    raise SystemExit(f"GELU(approximate={child.approximate!r}) has no float64 export here")
                setattr(parent, name, Gelu64())
    return exact


def trace(model, cfg) -> bytes:
    """The TorchScript exporter's graph of the attention patterns, in float64 (weights inline, as exported)."""
    import torch

    class Patterns(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, ids):  # (1, T) -> n_layer x (1, nh, T, T), float64
            return tuple(self.model.attention_patterns(ids))

    outputs = [f"pattern_{i}" for i in range(cfg.n_layer)]
    example = torch.arange(2, 2 + min(8, cfg.block_size)).remainder(cfg.vocab_size).view(1, -1)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about the block_size check, the exporter's deprecation
        torch.onnx.export(
            Patterns(float64_model(model)),
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
    """The graph with every checkpoint tensor moved to external data, and those tensors' layout.

    The graph computes in float64, but a checkpoint tensor is stored as the float32 the server
    loads (``weights.bin`` is the same file a float32 graph would read): its initializer becomes
    ``<name>.float32`` and a Cast to double at the head of the graph gives ``<name>`` back, exactly
    (every float32 is a float64)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_from_string(graph_bytes)
    tensors, casts, offset = [], [], 0
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        key = init.name.removeprefix("model.")
        src = state.get(key)
        single = None if src is None else src.detach().float().cpu().numpy()
        if single is not None and arr.dtype == np.float64 and np.array_equal(arr, single.astype(np.float64)):
            name = f"{init.name}.float32"
            casts.append(helper.make_node("Cast", [name], [init.name], to=onnx.TensorProto.DOUBLE))
            init.CopyFrom(numpy_helper.from_array(single, name))
            length = single.nbytes
            tensors.append({"name": name, "key": key, "shape": list(arr.shape), "offset": offset, "length": length})
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
                f"initializer {init.name} ({arr.nbytes} bytes, {arr.dtype}) is no checkpoint tensor; cannot externalize"
            )
    nodes = casts + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model.SerializeToString(), tensors


def check(graph: bytes, blob: bytes, model, cfg, itos) -> dict:
    """onnxruntime's patterns on test texts against the same model computed in float64 by torch
    (``model.double()``, what the server's /api/attention runs). Both evaluate the float32 weights in
    float64, so they must agree to TOLERANCE on every model, the saturated softmax of the unscaled
    d_head 256 model's second layer included. Recorded beside it: how far torch's float32 patterns
    are from float64 (what the server showed before it computed in float64). The distances are
    maxima over all the texts."""
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
    gap = {"onnxruntime_vs_float64": 0.0, "torch_float32_vs_float64": 0.0}
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
            if [(g.shape, g.dtype) for g in got] != [(w.shape, np.float64) for w in f64]:
                raise SystemExit(
                    f"onnxruntime's patterns are {[(g.shape, str(g.dtype)) for g in got]} on the {what}, "
                    f"not float64 {[w.shape for w in f64]}"
                )
            here = {
                "onnxruntime_vs_float64": max(float(np.abs(g - w).max()) for g, w in zip(got, f64)),
                "torch_float32_vs_float64": max(float(np.abs(g - w).max()) for g, w in zip(f32, f64)),
            }
            gap = {k: max(v, here[k]) for k, v in gap.items()}
    if gap["onnxruntime_vs_float64"] > TOLERANCE:
        raise SystemExit(
            f"onnxruntime is up to {gap['onnxruntime_vs_float64']:.2e} from the float64 model (allowed "
            f"{TOLERANCE:.0e}): the graph is not the model"
        )
    return {"texts": list(cases), **gap, "tolerance": TOLERANCE}


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
            f"onnxruntime vs torch's float64 model {c['onnxruntime_vs_float64']:.1e} "
            f"(torch's float32 vs float64 {c['torch_float32_vs_float64']:.1e})"
        )
    for file, graph in graphs.items():
        write_bytes(args.out / file, graph)
    manifest = {"format": MANIFEST_FORMAT, "weights_file": WEIGHTS_FILE, "runs": runs}
    write_text(args.out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {args.out / MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
