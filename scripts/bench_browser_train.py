"""Milliseconds per training step: the train page in Chromium (TensorFlow.js and onnxruntime-web, WebAssembly) against
``attnlab train`` (PyTorch, one thread), both book models, measured interleaved in one run.

    python scripts/bench_browser_train.py [--steps 6] [--rounds 2] [--threads 2] [--no-matmul] [--out data/bench_browser_train.json]

Each round trains, for each model, the PyTorch run and then the browser run from the same initial
weights and batches (attnlab.web.trainexport) for ``--steps`` steps; a model's ms/step is the
median over its steps after the first (which compiles and allocates) of all rounds. The browser
runs once with one WebAssembly thread (the page on a plain static host: no cross-origin
isolation) and once cross-origin isolated (COOP/COEP headers, as ``attnlab serve`` sends), asking
for ``--threads`` threads; TensorFlow.js grants at most half the logical cores, and the result
records how many it used. The load average is recorded before and after: on a busy machine the
ratio, measured interleaved, is what stays comparable.

Then (unless ``--no-matmul``) the step's matrix products one by one, each shape timed in the page's
worker on one thread in TensorFlow.js (XNNPACK) and in onnxruntime-web (MLAS), and right after in
PyTorch on one thread: the forward and dX form ``X W`` and the weight-gradient form ``X^T dY``
(TensorFlow.js: an explicit transpose, then the product; onnxruntime: Gemm with transA).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attnlab.config import BOOK_MODELS, PRESETS, preset  # noqa: E402
from attnlab.io import write_json  # noqa: E402
from attnlab.web import trainexport as te  # noqa: E402
from attnlab.web import trainsite  # noqa: E402


class Handler(http.server.SimpleHTTPRequestHandler):
    isolate = False

    def end_headers(self):
        if self.isolate:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, *args):
        pass


def serve(folder: Path, isolate: bool) -> str:
    handler = type("H", (Handler,), {"isolate": isolate})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}"


# the matrix products one by one, in a worker that loads the page's worker script (its load and onnxModel)
MATMUL_WORKER = """
importScripts("static/train-worker.js");
self.onmessage = async (e) => {
  const { base, m, k, n, transA, reps } = e.data;
  try {
    if (!self.loaded) { await load(base, 1); self.loaded = true; }
    const attrs = transA ? { transA: 1 } : {};
    const model = onnxModel([onnxNode("Gemm", ["a", "b"], ["c"], attrs)], ["a", "b"], ["c"], []);
    const sess = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
    const rnd = (count) => Float32Array.from({ length: count }, () => Math.random() - 0.5);
    const aShape = transA ? [k, m] : [m, k], A = rnd(m * k), B = rnd(k * n);
    const a = tf.tensor(A, aShape), b = tf.tensor(B, [k, n]);
    const feeds = { a: new ort.Tensor("float32", A, aShape), b: new ort.Tensor("float32", B, [k, n]) };
    const tfjs = () => { const c = tf.tidy(() => tf.matMul(transA ? tf.transpose(a) : a, b)); c.dataSync(); c.dispose(); };
    const onnx = async () => { await sess.run(feeds); };
    const times = { tfjs: [], ort: [] };
    tfjs(); await onnx();
    for (let r = 0; r < reps; r++) {
      let t0 = performance.now(); tfjs(); times.tfjs.push(performance.now() - t0);
      t0 = performance.now(); await onnx(); times.ort.push(performance.now() - t0);
    }
    tf.dispose([a, b]); await sess.release();
    postMessage({ ok: true, times });
  } catch (err) { postMessage({ ok: false, message: String(err && err.stack || err) }); }
};
"""


def matmul_shapes() -> list[tuple[str, str, int, int, int, bool]]:
    """(model, product, m, k, n, transA) of the book models' step: each linear layer (in, out) and the tied head
    (C, V) as the step multiplies them: X W forward, dY W^T backward (W transposed first, small), X^T dY for the weight
    (the head's: dlogits^T x)."""
    out = []
    for name in BOOK_MODELS:
        cfg = preset(name)
        N, C, F, V = cfg.batch_size * cfg.block_size, cfg.d_model, cfg.d_ff, cfg.vocab_size
        for i, o in ((C, 3 * C), (C, C), (C, F), (F, C)):
            out += [(name, "X W", N, i, o, False), (name, "dY W^T", N, o, i, False), (name, "X^T dY", i, N, o, True)]
        out += [(name, "X W", N, C, V, False), (name, "dY W^T", N, V, C, False), (name, "X^T dY", V, N, C, True)]
    return out


def matmul_table(page, base: str, reps: int = 5) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    page.evaluate(f"window.mmWorker = new Worker('{base}/matmul-worker.js')")
    rows = []
    for name, product, m, k, n, trans in matmul_shapes():
        got = page.evaluate(
            """(a) => new Promise((ok) => { mmWorker.onmessage = (e) => ok(e.data); mmWorker.postMessage(a); })""",
            {"base": f"{base}/static/vendor/", "m": m, "k": k, "n": n, "transA": trans, "reps": reps},
        )
        if not got["ok"]:
            raise SystemExit(got["message"])
        a = torch.randn(k, m) if trans else torch.randn(m, k)
        b = torch.randn(k, n)
        times = []
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            (a.t() if trans else a) @ b
            times.append((time.perf_counter() - t0) * 1000)
        ms = {
            "tfjs_xnnpack": statistics.median(got["times"]["tfjs"]),
            "onnxruntime_mlas": statistics.median(got["times"]["ort"]),
            "pytorch_1_thread": statistics.median(times[1:]),
        }
        rows.append(
            {
                "model": name,
                "product": product,
                "m_k_n": [m, k, n],
                "gflop": round(2 * m * k * n / 1e9, 3),
                **{f"{key}_ms": round(v, 1) for key, v in ms.items()},
                **{
                    f"{key}_over_pytorch": round(v / ms["pytorch_1_thread"], 2)
                    for key, v in ms.items()
                    if "pytorch" not in key
                },
            }
        )
    page.evaluate("mmWorker.terminate()")
    return rows


def pytorch_ms(name: str, steps: int) -> list[float]:
    import torch

    from attnlab.train import train

    torch.set_num_threads(1)
    times: list[float] = []
    last = [time.perf_counter()]

    class Clock:
        def on_train_begin(self, start, model):
            last[0] = time.perf_counter()

        def on_step_end(self, step, record, model):
            now = time.perf_counter()
            times.append((now - last[0]) * 1000)
            last[0] = now
            if len(times) >= steps:
                raise te._Enough

    text, _ = te._corpus()
    try:
        train(text, preset(name, device="cpu"), callbacks=[Clock()])
    except te._Enough:
        pass
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-matmul", action="store_true", help="skip the table of matrix products")
    ap.add_argument("--out", default="data/bench_browser_train.json")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_web_browser import CHROMIUM_ARGS, find_chromium

    folder = Path(tempfile.mkdtemp(prefix="attnlab-bench-train-"))
    trainsite.write_train_page(folder)
    (folder / "matmul-worker.js").write_text(MATMUL_WORKER, encoding="utf-8")
    plain, isolated = serve(folder, False), serve(folder, True)
    load_start = os.getloadavg()
    ms: dict = {name: {"pytorch_1_thread": [], "browser_1_thread": [], "browser_isolated": []} for name in BOOK_MODELS}
    info = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        pages = {}
        for key, url in (
            ("browser_1_thread", f"{plain}/train.html"),
            ("browser_isolated", f"{isolated}/train.html?threads={args.threads}"),
        ):
            pages[key] = browser.new_page()
            pages[key].goto(url)
        for _ in range(args.rounds):
            for name in BOOK_MODELS:
                ms[name]["pytorch_1_thread"] += pytorch_ms(name, args.steps)[1:]
                for key, page in pages.items():
                    page.evaluate("(a) => attnlab.train(a)", {"set": PRESETS[name], "steps": args.steps})
                    last = page.evaluate("attnlab.last")
                    ms[name][key] += last["ms"][1:]
                    info[key] = {
                        "backend": last["backend"],
                        "threads": last["threads"],
                        "simd": last["simd"],
                        "multithread_build": last.get("threaded"),
                        "attention": last.get("attention"),
                        "attention_threads": last.get("attention_threads"),
                        "cross_origin_isolated": page.evaluate("self.crossOriginIsolated"),
                    }
        load_matmul = os.getloadavg()
        matmul = [] if args.no_matmul else matmul_table(pages["browser_1_thread"], plain)
        version = browser.version
        browser.close()
    table = {}
    for name in BOOK_MODELS:
        med = {k: statistics.median(v) for k, v in ms[name].items()}
        base = med["pytorch_1_thread"]
        table[name] = {
            k: {"ms_per_step": round(v, 1), "ratio_to_pytorch_1_thread": round(v / base, 2)} for k, v in med.items()
        }
    result = {
        "what": "ms per training step (median after each run's first step), the train page in Chromium against "
        "attnlab train with one PyTorch thread, interleaved per round",
        "steps": args.steps,
        "rounds": args.rounds,
        "models": table,
        "browser": {"chromium": version, **info},
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_matmul],
        "matmul": {
            "what": "each matrix product of a step alone, ms (median of 5), one thread: the page's worker "
            "(TensorFlow.js XNNPACK, onnxruntime-web MLAS) then PyTorch; X^T dY: TensorFlow.js transposes first, "
            "onnxruntime's Gemm takes transA",
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "rows": matmul,
        },
        "cpus": os.cpu_count(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
