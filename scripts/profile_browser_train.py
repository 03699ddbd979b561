"""Where a training step of the train page's worker spends its time, kernel by kernel.

    python scripts/profile_browser_train.py [--steps 3] [--models small big] [--out data/profile_browser_train.json]

Loads ``static/train-worker.js`` in a Web Worker of headless Chromium (one WebAssembly thread),
trains each book model from its exported initial weights and batches, and wraps ``--steps`` steps
after the first in ``tf.profile``: every kernel's time is summed by kernel name and by
(kernel, input shapes); what the step spends outside the kernels (the diagnostics and the
embedding's scatter-add in JavaScript, reading tensors back) is the step's time minus the kernels'.
Profiling adds a little to every kernel: the shares are what count, not the absolute times.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnlab.config import BOOK_MODELS, PRESETS, preset  # noqa: E402
from attnlab.io import write_json  # noqa: E402
from attnlab.web import trainsite  # noqa: E402

# a worker that reuses the page's worker script (its Trainer, load and unpack) and profiles steps
PROFILE_WORKER = """
importScripts("static/train-worker.js");
self.onmessage = async (e) => {
  const { base, init, corpus, set, steps } = e.data;
  try {
    const info = await load(base, 1);
    const header = unpack(init).header;
    const trainer = new Trainer(init, { ids: unpack(corpus).arrays.ids.data }, { ...header.config, ...set }, run.attention);
    await trainer.trainStep();
    const byKernel = {}, byShape = {};
    let wall = 0, kernels = 0;
    run.attention.ms = 0; run.attention.gradMs = 0; trainer.phases = {};
    for (let i = 0; i < steps; i++) {
      const t0 = performance.now();
      const prof = await tf.profile(async () => { await trainer.trainStep(); });
      wall += performance.now() - t0;
      for (const k of prof.kernels) {
        const ms = await k.kernelTimeMs;
        kernels += ms;
        const key = `${k.name} ${JSON.stringify(k.inputShapes)}`;
        (byKernel[k.name] ??= { ms: 0, calls: 0 }).ms += ms; byKernel[k.name].calls++;
        (byShape[key] ??= { ms: 0, calls: 0 }).ms += ms; byShape[key].calls++;
      }
    }
    postMessage({ ok: true, info, steps, wall, kernels, attention: run.attention.ms, grads: run.attention.gradMs, phases: trainer.phases, byKernel, byShape });
  } catch (err) { postMessage({ ok: false, message: String(err && err.stack || err) }); }
};
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=list(BOOK_MODELS))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    from tests.test_web_browser import CHROMIUM_ARGS, find_chromium

    folder = Path(tempfile.mkdtemp(prefix="attnlab-profile-train-"))
    trainsite.write_train_page(folder)
    (folder / "profile-worker.js").write_text(PROFILE_WORKER, encoding="utf-8")
    index = json.loads((folder / "train" / "index.json").read_text(encoding="utf-8"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    result = {}
    load = os.getloadavg()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(f"{url}/train.html")
        for name in args.models:
            set_ = PRESETS[name]
            cfg = preset(name)
            file = next(
                f
                for f, e in index["inits"].items()
                if (e["config"]["d_model"], e["config"]["n_head"]) == (cfg.d_model, cfg.n_head)
            )
            out = page.evaluate(
                """async ([url, file, corpus, set, steps]) => {
                    const get = async (u) => (await fetch(u)).arrayBuffer();
                    const [init, cp] = await Promise.all([get(`${url}/train/${file}`), get(`${url}/train/${corpus}`)]);
                    const w = new Worker(`${url}/profile-worker.js`);
                    const r = await new Promise((ok) => { w.onmessage = (e) => ok(e.data);
                      w.postMessage({ base: `${url}/static/vendor/`, init, corpus: cp, set, steps }); });
                    w.terminate();
                    return r;
                }""",
                [url, file, index["corpus"], set_, args.steps],
            )
            if not out["ok"]:
                raise SystemExit(out["message"])
            steps = out["steps"]
            step_ms = out["wall"] / steps
            kernel_ms = out["kernels"] / steps
            attention_ms = out["attention"] / steps
            grads_ms = out["grads"] / steps
            rows = sorted(out["byKernel"].items(), key=lambda kv: -kv[1]["ms"])
            shapes = sorted(out["byShape"].items(), key=lambda kv: -kv[1]["ms"])
            print(
                f"\n== {name}: {step_ms:.0f} ms/step profiled, kernels {kernel_ms:.0f} ms, outside kernels "
                f"{step_ms - kernel_ms:.0f} ms, of which attention in onnxruntime {attention_ms:.0f} ms, parameter "
                f"gradients in onnxruntime {grads_ms:.0f} ms "
                f"({out['info']['threads']} thread(s), simd {out['info']['simd']})"
            )
            print("  phases: " + ", ".join(f"{k} {v / steps:.0f} ms" for k, v in out["phases"].items()))
            for k, v in rows[: args.top]:
                print(
                    f"  {v['ms'] / steps:8.1f} ms {100 * v['ms'] / out['wall']:5.1f} %  {v['calls'] // steps:4d}x  {k}"
                )
            print("  -- by shape")
            for k, v in shapes[: args.top]:
                print(
                    f"  {v['ms'] / steps:8.1f} ms {100 * v['ms'] / out['wall']:5.1f} %  {v['calls'] // steps:4d}x  {k}"
                )
            result[name] = {
                "ms_per_step_profiled": round(step_ms, 1),
                "outside_kernels_ms": round(step_ms - kernel_ms, 1),
                "attention_onnxruntime_ms": round(attention_ms, 1),
                "parameter_gradients_onnxruntime_ms": round(grads_ms, 1),
                "phases_ms": {k: round(v / steps, 1) for k, v in out["phases"].items()},
                "kernels": {
                    k: {"ms_per_step": round(v["ms"] / steps, 1), "calls_per_step": v["calls"] // steps}
                    for k, v in rows
                },
                "top_shapes": {
                    k: {"ms_per_step": round(v["ms"] / steps, 1), "calls_per_step": v["calls"] // steps}
                    for k, v in shapes[: args.top]
                },
                "info": out["info"],
            }
        browser.close()
    srv.shutdown()
    if args.out:
        write_json(
            args.out,
            {
                "what": "kernel times of the train page's worker step (tf.profile, one WebAssembly thread); the "
                "attention's onnxruntime-web time measured around its two graphs; shares count, not absolute times",
                "steps": args.steps,
                "models": result,
                "load_average_start": [round(x, 2) for x in load],
                "load_average_end": [round(x, 2) for x in os.getloadavg()],
                "cpus": os.cpu_count(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            },
        )


if __name__ == "__main__":
    main()
