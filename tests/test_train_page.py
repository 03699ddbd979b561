"""The train page (动手训练 / Train): the browser trains the chapter's model as ``attnlab train`` does.

Fast: the vendored runtimes are the npm releases; a bundle holds attnlab's initial weights and
batches; serve answers the train routes with cross-origin isolation; a browser run folder is
listed only when intact. In Chromium under ``python -m http.server`` (a minimal static folder
written with the site's own functions): the first steps of the small and the big model equal
PyTorch's loss and per-layer entropies within 1e-4; a downloaded run is read by serve, a tampered
one refused; without a WebGPU adapter the page trains on WebAssembly and says why. Slow (``-m slow``):
the first 20 steps (the table goes to tests/data/browser_train_equality.json), the big unscaled
model's collapse by step 150, and the WebGPU gate where Chromium offers an adapter (SwiftShader
here; its outcome goes to tests/data/webgpu_gate.json) with its forced fallback.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import math
import shutil
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnlab.config import PRESETS, Config, preset
from attnlab.snapshots import read_snapshots
from attnlab.web import trainexport as te
from attnlab.web import trainsite

VENDOR = Path(te.__file__).parent / "vendor"
TRAIN_VENDOR_SHA256 = {  # @tensorflow/tfjs-core, -backend-wasm and -backend-webgpu 4.22.0, fflate 0.8.3, js-sha256 1.0.0; web/vendor/README.md
    "tfjs/tf-core.min.js": "0924438788ff7da57b14d0f7c45a05d81611a5a4b52653da6d065e86d348757c",
    "tfjs/tf-backend-wasm.min.js": "691bbec0ef8b5a7f17f212e9c5d85832030f90d030b46e99acb4dea1fb16f009",
    "tfjs/tfjs-backend-wasm.wasm": "70a5d516060464e5269f01c74bac1772d6b8ab6cb612acf16b5cdaf61f78d892",
    "tfjs/tfjs-backend-wasm-simd.wasm": "77ebb28a6d34f371dbbf2086b7f2de8994acd8ea5a3cf1fa24d2c26c840cac7b",
    "tfjs/tf-backend-webgpu.min.js": "c02ae6ef5e7fff6dc9cec8b14b45e36e8894614f3ef006973e98f7568b590f3f",
    "fflate/fflate.min.js": "462ef8041fc970e3615a20a9dd2b2e3047a073b2da729ef4f02b634bba8b7b83",
    "js-sha256/sha256.min.js": "a050d794e170699bd1a69d33908d0942c68901cb88347016064b60b240f0067e",
}
EQUALITY = Path(__file__).parent / "data" / "browser_train_equality.json"
WEBGPU_GATE = Path(__file__).parent / "data" / "webgpu_gate.json"
TOL = 1e-4
TINY = dict(n_layer=1, n_head=2, d_model=16, block_size=16, batch_size=4, max_steps=20, warmup=5, device="cpu")


def test_vendored_training_runtimes_are_the_published_files():
    readme = (VENDOR / "README.md").read_text(encoding="utf-8")
    for rel, digest in TRAIN_VENDOR_SHA256.items():
        assert hashlib.sha256((VENDOR / rel).read_bytes()).hexdigest() == digest, rel
        assert digest in readme and rel in readme
    assert "4.22.0" in readme and "0.8.3" in readme and (VENDOR / "fflate" / "LICENSE").is_file()
    assert "js-sha256" in readme and "1.0.0" in readme and (VENDOR / "js-sha256" / "LICENSE").is_file()


def test_init_bundle_holds_attnlab_trains_weights_and_batches():
    import torch

    from attnlab.model import TinyGPT
    from attnlab.train import get_batch, split_data

    cfg = Config(**TINY)
    header, arrays = te.unpack(te.init_bundle(cfg))
    torch.manual_seed(cfg.seed)
    ref = TinyGPT(cfg).state_dict()
    for name, a in arrays.items():
        if name not in ("batch_starts", "val_starts"):
            assert np.array_equal(a, ref[name].numpy()), name
    assert arrays["batch_starts"].shape == (cfg.max_steps, cfg.batch_size)
    _, _, ids = te.corpus_ids(cfg)
    train_ids, _ = split_data(ids, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    for step in range(3):  # the windows get_batch draws, step by step
        x, _ = get_batch(train_ids, cfg.block_size, cfg.batch_size, gen)
        want = torch.stack([train_ids[s : s + cfg.block_size] for s in arrays["batch_starts"][step].tolist()])
        assert torch.equal(x, want)
    assert header["init_sha256"] == te.init_sha256(te.init_weights(cfg))
    # the scaling does not change the initial weights: one bundle serves the pair
    assert te.init_sha256(te.init_weights(cfg.replace(scaled=False))) == header["init_sha256"]


def test_browser_refuses_what_it_does_not_implement():
    with pytest.raises(te.BrowserTrainError, match="pos='rope' is not supported"):
        te.check_browser_config(Config(pos="rope"))


def test_serve_train_routes_and_isolation(tmp_path):
    from fastapi.testclient import TestClient

    from attnlab.web.server import create_app

    client = TestClient(create_app(runs_dir=str(tmp_path)), base_url="http://127.0.0.1:8000")
    page = client.get("/train")
    assert page.status_code == 200 and "动手训练" in page.text and "/static/train.js" in page.text
    for path in ("/train", "/", "/static/vendor/tfjs/tf-core.min.js"):
        r = client.get(path)
        assert r.headers["cross-origin-opener-policy"] == "same-origin", path
        assert r.headers["cross-origin-embedder-policy"] == "require-corp", path
    assert "'wasm-unsafe-eval'" in page.headers["content-security-policy"]
    header, arrays = te.unpack(client.get("/api/train/corpus").content)
    assert header["kind"] == "corpus" and arrays["ids"].dtype == np.uint16
    r = client.post("/api/train/init", json={"set": {**{k: v for k, v in TINY.items() if k != "device"}, "seed": 7}})
    header, _ = te.unpack(r.content)
    assert header["config"]["seed"] == 7 and header["config"]["d_model"] == 16
    bad = client.post("/api/train/init", json={"set": {"pos": "rope"}})
    assert bad.status_code == 422 and "pos='rope'" in bad.json()["detail"] and "\n" not in bad.json()["detail"]
    bad = client.post("/api/train/init", json={"set": {"d_model": 130}})
    assert bad.status_code == 422 and "d_model" in bad.json()["detail"]


# ------------------------------------------------------------------ a browser run folder, checked
def _browser_run(folder: Path, cfg: Config, steps: int = 2, init: str | None = None) -> None:
    """A run folder as the train page writes it (records here are made up: serve checks the files)."""
    records = [{"step": s, "loss": 7.0 - s, "lr": 0.001, "grad_norm": 1.0} for s in range(steps)]
    files = {
        "config.json": json.dumps(cfg.to_dict()),
        "metrics.jsonl": "".join(json.dumps(r) + "\n" for r in records),
        "summary.json": json.dumps({"steps": steps, "config": cfg.to_dict()}),
    }
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    sums = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in files.items()}
    init = init or te.init_sha256(te.init_weights(cfg))
    manifest = {"format": "attnlab-browser-run-v1", "steps": steps, "init_sha256": init, "files": sums}
    (folder / "browser_run.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_serve_lists_an_intact_browser_run_and_refuses_a_damaged_one(tmp_path):
    from attnlab.web.sources import Sources

    cfg = Config(**TINY)
    _browser_run(tmp_path / "good", cfg)
    _browser_run(tmp_path / "edited", cfg)
    p = tmp_path / "edited" / "metrics.jsonl"
    p.write_text(p.read_text().replace("7.0", "1.0"))
    _browser_run(tmp_path / "truncated", cfg)
    (tmp_path / "truncated" / "summary.json").unlink()
    _browser_run(tmp_path / "cut", cfg, steps=3)
    p = tmp_path / "cut" / "metrics.jsonl"
    text = "".join(p.read_text().splitlines(keepends=True)[:2])
    p.write_text(text)  # cut, and the manifest's checksum made to match: the step count still tells
    m = json.loads((tmp_path / "cut" / "browser_run.json").read_text())
    m["files"]["metrics.jsonl"] = hashlib.sha256(text.encode()).hexdigest()
    (tmp_path / "cut" / "browser_run.json").write_text(json.dumps(m))
    other = cfg.replace(seed=8)  # a consistent folder whose weights were another config's
    _browser_run(tmp_path / "other", other, init=te.init_sha256(te.init_weights(cfg)))
    listing = Sources.single(tmp_path).listing()
    assert set(listing.runs) == {"good"}
    why = {line.split(":", 1)[0]: line for line in listing.skipped}
    assert "changed after the download" in why["edited"]
    assert "summary.json is missing" in why["truncated"]
    assert "holds 2 steps" in why["cut"]
    assert "initial weights" in why["other"]
    assert all("\n" not in line for line in listing.skipped)


# ------------------------------------------------------------------------------- in Chromium
@pytest.fixture(scope="module")
def static_site(tmp_path_factory):
    """The train page as `attnlab site` writes it, with only what it needs, under python -m http.server."""
    out = tmp_path_factory.mktemp("trainsite")
    trainsite.write_train_page(out)
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def train_page(static_site):
    from tests.test_web_browser import CHROMIUM_ARGS, find_chromium, unavailable

    exe = find_chromium()
    if exe is None:
        unavailable("no Chromium found")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page(accept_downloads=True)
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(f"{static_site}/train.html")
        yield page
        browser.close()


def compare(page, name: str, scaled: bool, steps: int, **options) -> list[dict]:
    """Rows (step, |Δloss|, max |Δentropy| over layers) of the browser against attnlab train.
    options: more of attnlab.train's arguments (backend, gate_perturb)."""
    cfg = preset(name, scaled=scaled, device="cpu")
    ref = te.reference_records(cfg, steps)
    arg = {"set": {**PRESETS[name], "scaled": scaled}, "steps": steps, **options}
    got = page.evaluate("(a) => attnlab.train(a)", arg)
    assert [r["step"] for r in got] == list(range(steps))
    assert set(got[0]) == set(ref[0]) - {"_batch"} and len(got[0]["layers"]) == cfg.n_layer
    assert set(got[0]["layers"][0]) == set(ref[0]["layers"][0])
    rows = []
    for g, r in zip(got, ref):
        d_ent = max(abs(a["weight_entropy"] - b["weight_entropy"]) for a, b in zip(g["layers"], r["layers"]))
        rows.append({"step": g["step"], "d_loss": abs(g["loss"] - r["loss"]), "d_entropy": d_ent})
    return rows


def reference_snapshot(cfg: Config):
    """(patterns, metrics, tokens) of attnlab's snapshot of the initial model for cfg's probe."""
    from attnlab.snapshots import probe_ids, take_snapshot
    from attnlab.train import train

    text, tok, _ = te.corpus_ids(cfg)
    ids = probe_ids(cfg, tok)
    got = []

    class Take:
        def on_train_begin(self, start, model):
            got.append(take_snapshot(model, ids))
            raise te._Enough

    with pytest.raises(te._Enough):
        train(text, cfg, callbacks=[Take()])
    return (*got[0], [tok.itos[i] for i in ids])


@pytest.mark.browser
@pytest.mark.parametrize("name", ["small", "big"])
def test_first_steps_equal_pytorch(train_page, name):
    rows = compare(train_page, name, scaled=False, steps=2)
    assert all(r["d_loss"] < TOL and r["d_entropy"] < TOL for r in rows), rows
    assert not train_page.errors


@pytest.mark.browser
def test_downloaded_run_is_read_by_serve_and_a_tampered_one_refused(train_page, tmp_path):
    from fastapi.testclient import TestClient

    from attnlab.web.server import create_app

    train_page.evaluate("attnlab.train({set: {d_model: 256, n_head: 1, scaled: false}, steps: 2})")
    with train_page.expect_download() as dl:
        train_page.evaluate("attnlab.download()")
    blob = Path(dl.value.path()).read_bytes()
    runs = tmp_path / "runs"
    zipfile.ZipFile(io.BytesIO(blob)).extractall(runs)
    name = "browser_api_api_s20261014"
    assert (runs / name / "browser_run.json").is_file()
    # the probe's snapshots as a CLI run keeps them: the initial model's equal attnlab's own
    snap = read_snapshots(runs / name / "snapshots.npz")
    assert snap.steps.tolist() == [0, 1, 2] and snap.patterns.shape[:3] == (3, 2, 1)
    ref_patterns, ref_metrics, ref_tokens = reference_snapshot(preset("big", scaled=False, device="cpu"))
    assert snap.meta["tokens"] == ref_tokens
    assert np.abs(snap.patterns[0].astype(np.float32) - ref_patterns.astype(np.float32)).max() <= 1e-3  # float16
    assert np.abs(snap.metrics[0] - ref_metrics).max() < TOL
    shutil.copytree(runs / name, runs / "edited")
    p = runs / "edited" / "config.json"
    p.write_text(p.read_text().replace('"lr": 0.003', '"lr": 0.004'))
    client = TestClient(create_app(runs_dir=str(runs)), base_url="http://127.0.0.1:8000")
    assert name in client.get("/api/runs").json()["runs"]
    metrics = client.get(f"/api/runs/{name}").json()
    timeline = client.get(f"/api/timeline/{name}").json()  # the timeline page draws its maps
    assert timeline["snapshots"]["steps"] == [0, 1, 2] and timeline["snapshot_error"] is None
    assert len(metrics["steps"] if "steps" in metrics else metrics["loss"]) == 2
    live = client.get("/api/live").json()
    assert "edited" not in client.get("/api/runs").json()["runs"]
    assert any(s.startswith("edited: config.json was changed") for s in live["skipped"])
    # the workbook's exercise checks read a browser run as a run of the CLI: a run cut short by `steps`
    # is refused as unfinished, one trained to its max_steps is read with its final validation loss
    from attnlab.workbook.measured import RunError, read_run

    with pytest.raises(RunError):
        read_run(runs / name)
    train_page.evaluate(
        "attnlab.train({set: {d_model: 256, n_head: 1, scaled: false, max_steps: 3, warmup: 1}, steps: 3})"
    )
    with train_page.expect_download() as dl:
        train_page.evaluate("attnlab.download()")
    done = tmp_path / "done"
    zipfile.ZipFile(io.BytesIO(Path(dl.value.path()).read_bytes())).extractall(done)
    (folder,) = [d for d in done.iterdir() if d.is_dir()]
    cfg, val = read_run(folder)
    assert (cfg.d_model, cfg.n_head, cfg.scaled, cfg.max_steps) == (256, 1, False, 3) and math.isfinite(val)


@pytest.mark.browser
def test_serve_page_trains_under_its_security_policy(train_page, tmp_path):
    """Under `attnlab serve` (cross-origin isolated, Content-Security-Policy script-src 'self'):
    the worker, its two runtimes and a config the site does not carry train, with no CSP refusal."""
    from tests.test_web_browser import ServerThread

    from attnlab.web.server import create_app

    with ServerThread(create_app(runs_dir=str(tmp_path))) as url:
        context = train_page.context.browser.new_context()
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: m.type == "error" and "status of 4" not in m.text and errors.append(m.text))
        try:
            page.goto(f"{url}/train")
            records = page.evaluate("attnlab.train({set: {n_head: 2, seed: 7}, steps: 1})")
            info = page.evaluate("attnlab.last")
        finally:
            context.close()
    assert len(records) == 1 and math.isfinite(records[0]["loss"])
    assert info["isolated"] and info["attention"].startswith("onnxruntime-web") and info["attention_threads"] >= 1
    assert not errors, errors


@pytest.mark.browser
def test_checksums_without_crypto_subtle(train_page):
    """On a plain-http address that is not localhost (no secure context: no crypto.subtle) the
    download's browser_run.json carries the same sha256 digests, from the vendored js-sha256."""
    train_page.evaluate("attnlab.train({set: {d_model: 256, n_head: 1}, steps: 1})")
    manifest = "attnlab.runFiles().then((f) => [f['browser_run.json'], f['config.json']])"
    secure, config = train_page.evaluate(manifest)
    train_page.evaluate("Object.defineProperty(self.crypto, 'subtle', {value: undefined, configurable: true})")
    try:
        assert train_page.evaluate("self.crypto.subtle === undefined")
        plain, _ = train_page.evaluate(manifest)
    finally:
        train_page.evaluate("delete self.crypto.subtle")
    files = json.loads(plain)["files"]
    assert files == json.loads(secure)["files"] and set(files) >= {"config.json", "snapshots.npz"}
    assert files["config.json"] == hashlib.sha256(config.encode("utf-8")).hexdigest()
    assert not train_page.errors


@pytest.mark.browser
def test_without_a_webgpu_adapter_the_page_trains_on_wasm_and_says_why(train_page):
    """The tests' Chromium (--disable-gpu) offers no WebGPU adapter: asked for WebGPU, the page
    trains on WebAssembly and says why, Chinese first; a backend it does not know is refused."""
    if train_page.evaluate("(async () => Boolean(navigator.gpu && await navigator.gpu.requestAdapter()))()"):
        pytest.skip("this Chromium offers a WebGPU adapter: the slow gate test covers it")
    train_page.evaluate("attnlab.train({set: {d_model: 256, n_head: 1}, steps: 1, backend: 'webgpu'})")
    last = train_page.evaluate("({backend: attnlab.last.backend, gate: attnlab.last.gate})")
    assert last == {"backend": "wasm", "gate": {"backend": "wasm", "reason": "no-adapter"}}
    text = train_page.inner_text("[data-testid=backend]")
    assert text.index("没有 WebGPU 适配器") < text.index("no WebGPU adapter")
    with pytest.raises(Exception, match="must be auto, webgpu or wasm"):
        train_page.evaluate("attnlab.train({set: {d_model: 256, n_head: 1}, steps: 1, backend: 'cuda'})")
    assert not train_page.errors


@pytest.fixture(scope="module")
def webgpu_page(train_page, static_site):
    """The train page in a second Chromium, one that offers WebGPU (SwiftShader's software adapter here)."""
    from tests.test_web_browser import CHROMIUM_ARGS, find_chromium

    browser = train_page.context.browser.browser_type.launch(
        executable_path=find_chromium(), args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"]
    )
    try:
        page = browser.new_page()
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(f"{static_site}/train.html")
        if not page.evaluate("(async () => Boolean(navigator.gpu && await navigator.gpu.requestAdapter()))()"):
            pytest.skip("this Chromium offers no WebGPU adapter, even with --enable-unsafe-webgpu")
        yield page
    finally:
        browser.close()


@pytest.mark.browser
def test_a_software_webgpu_adapter_is_not_tried_unless_asked(webgpu_page):
    """SwiftShader's adapter is a fallback (tens of times slower than WebAssembly, the gate alone
    minutes): by default the page trains on WebAssembly without trying it, and says so."""
    if not webgpu_page.evaluate("(async () => (await navigator.gpu.requestAdapter()).info.isFallbackAdapter)()"):
        pytest.skip("this Chromium's WebGPU adapter is not a software fallback")
    records = webgpu_page.evaluate("attnlab.train({set: {d_model: 256, n_head: 1}, steps: 1})")
    assert len(records) == 1 and math.isfinite(records[0]["loss"])
    last = webgpu_page.evaluate("({backend: attnlab.last.backend, gate: attnlab.last.gate})")
    assert last == {"backend": "wasm", "gate": {"backend": "wasm", "reason": "software"}}
    text = webgpu_page.inner_text("[data-testid=backend]")
    assert text.index("软件模拟") < text.index("software fallback")
    assert not webgpu_page.errors


# ------------------------------------------------------------------------------------- slow
@pytest.mark.slow
@pytest.mark.browser
def test_webgpu_gate_and_its_forced_fallback(webgpu_page):
    """Where the browser has an adapter the gate's comparison runs (its outcome goes to
    tests/data/webgpu_gate.json, whichever it is); with WebGPU's losses perturbed by 1 (the test
    hook) the gate refuses and the page says so. Either way the run equals PyTorch's first steps."""
    page, outcome = webgpu_page, {}
    for case, perturb in (("as_is", 0), ("perturbed", 1.0)):
        rows = compare(page, "small", False, 2, backend="webgpu", gate_perturb=perturb)
        assert all(r["d_loss"] < TOL and r["d_entropy"] < TOL for r in rows), (case, rows)
        last = page.evaluate("({backend: attnlab.last.backend, gate: attnlab.last.gate})")
        gate = last["gate"]
        assert gate["reason"] in {"passed", "slower", "differs", "nan", "error", "no-start"}, gate
        assert last["backend"] == ("webgpu" if gate["reason"] == "passed" else "wasm")
        outcome[case] = {
            **{k: v for k, v in gate.items() if k != "type"},
            "page": page.inner_text("[data-testid=backend]"),
        }
    bad = outcome["perturbed"]
    assert bad["backend"] == "wasm" and bad["reason"] in {"differs", "nan"}, bad
    if bad["reason"] == "differs":
        assert bad["d_loss"] > 0.5 and bad["page"].index("WebGPU 的结果不对") < bad["page"].index("result is wrong")
    assert not page.errors
    WEBGPU_GATE.write_text(
        json.dumps(
            {
                "what": "the train page's WebGPU gate in headless Chromium (--enable-unsafe-webgpu), small unscaled "
                "config: its first 3 steps on TensorFlow.js WebGPU against WebAssembly (loss and per-layer weight "
                "entropy, largest difference; median ms per step after the first), as is and with WebGPU's losses "
                "perturbed by 1",
                "created": time.strftime("%Y-%m-%d"),
                "outcome": outcome,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


# ------------------------------------------------------------------------------------- slow (PyTorch equality)
@pytest.mark.slow
@pytest.mark.browser
def test_twenty_steps_equal_pytorch_and_table(train_page):
    table = {}
    for name in ("small", "big"):
        for scaled in (True, False):
            rows = compare(train_page, name, scaled, 20)
            table[f"{name}_{'scaled' if scaled else 'unscaled'}"] = rows
            assert all(r["d_loss"] < TOL and r["d_entropy"] < TOL for r in rows), (name, scaled, rows)
    EQUALITY.parent.mkdir(exist_ok=True)
    EQUALITY.write_text(
        json.dumps(
            {
                "what": "attnlab.train({set, steps: 20}) in Chromium (TensorFlow.js wasm; the attention and the parameter gradients "
                "in onnxruntime-web) "
                "against attnlab train "
                "(PyTorch, CPU), same initial weights and batches; |loss difference| and the largest |entropy "
                "difference| over the layers, per step",
                "tolerance": TOL,
                "created": time.strftime("%Y-%m-%d"),
                "runs": table,
            },
            indent=1,
        )
        + "\n"
    )


@pytest.mark.slow
@pytest.mark.browser
def test_big_unscaled_collapses_by_step_150(train_page):
    got = train_page.evaluate(
        "attnlab.train({set: {d_model: 256, n_head: 1, scaled: false}, steps: 151}).then("
        "(rs) => rs.map((r) => r.layers[0].weight_entropy))"
    )
    first = next(i for i, e in enumerate(got) if e < 0.01)
    assert first <= 150
    data = json.loads(EQUALITY.read_text()) if EQUALITY.is_file() else {}
    data["big_unscaled_collapse"] = {"first_step_layer0_entropy_below_0.01": first, "entropy_at_150": got[150]}
    EQUALITY.write_text(json.dumps(data, indent=1) + "\n")


@pytest.mark.browser
def test_pause_resume_stop_and_download_buttons(train_page):
    page = train_page
    page.select_option("#shape", "small")
    page.uncheck("#scale-none")
    page.fill("#snaps", "0, 1")
    page.click("#start")
    count = "() => attnlab.pageRuns().reduce((n, r) => n + r.records.length, 0)"
    page.wait_for_function(f"({count})() >= 2", timeout=120_000)
    page.click("#pause")
    paused, deadline = page.evaluate(count), time.time() + 60
    while time.time() < deadline:  # the step under way finishes, then nothing more
        time.sleep(3)
        now = page.evaluate(count)
        if now == paused:
            break
        paused = now
    time.sleep(4)
    assert page.evaluate(count) == paused  # nothing trains while paused
    page.click("#pause")  # resume
    page.wait_for_function(f"({count})() > {paused}", timeout=120_000)
    page.click("#stop")
    page.wait_for_selector("[data-testid=download-scaled]", timeout=120_000)
    assert "stopped" in page.inner_text("#status")
    assert page.locator("[data-testid^=map-scaled-0-]").count() == 4  # the probe's maps, four heads of layer 0
    assert not page.errors
