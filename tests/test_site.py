"""The static site (attnlab.web.site, ``attnlab site``): its files, its links, the ONNX export that
stands for the shipped checkpoints (float64 throughout, as the server's /api/attention), the command's
errors; and, in headless Chromium, a site served by a plain ``http.server`` whose in-browser model
(onnxruntime-web) gives the server's attention weights to 1e-4 on 20 texts, every model and layer.

The site is built once per module (``site`` fixture) from what ships with attnlab.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import re
import threading
from pathlib import Path

import pytest

from attnlab.web.site import (
    CASE_RUNS,
    MARK,
    ONNX_DIR,
    SHIPPED_RUNS,
    VENDOR,
    SiteError,
    build_site,
    read_manifest,
    relative_links,
    sha256_file,
)
from test_web_browser import browser, page  # noqa: F401  (fixtures: Chromium, a page whose requests stay local)

PAGES = (
    "index.html",
    "lookup.html",
    "exp1-1.html",
    "exp1-2.html",
    "runs.html",
    "timeline.html",
    "book.html",
    "case.html",
)
VENDOR_SHA256 = {  # as published on npm (onnxruntime-web 1.30.0, opencc-js 1.4.2); see web/vendor/README.md
    "onnxruntime-web/ort.wasm.min.js": "faece07e84faa9001f5104bbe4e5c70861d06cb2376a0dea1fa0ad33a67adc81",
    "onnxruntime-web/ort-wasm-simd-threaded.mjs": "e13f7f94fc51b4ca72b12faeb1ee95f4ace6dfbc8939bc718aabdc0a27c4299b",
    "onnxruntime-web/ort-wasm-simd-threaded.wasm": "3398c10d07d229bd91b364548e130e0e51a8e5704b88c7c083ebbeb78842dee2",
    "opencc-js/cn2t.js": "d66d920069ab526db08c6f2bc15fcf6feb7d07de3cf98e7e27c0aaf7d136baee",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    result = build_site(out)
    return out, result


def site_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.is_file()]


# ------------------------------------------------------------------------- contents
def test_the_site_holds_every_page_model_and_runtime(site):
    out, result = site
    for name in PAGES:
        assert (out / name).is_file(), name
    assert json.loads((out / MARK).read_text())["runs"] == list(CASE_RUNS)
    index = json.loads((out / "data" / "site.json").read_text())
    assert index["default"] == "case/small_scaled_s20261014"
    assert sorted(index["models"]) == sorted(CASE_RUNS)
    for name, folder in index["models"].items():
        for f in ("model.onnx", "weights.bin", "model.json"):
            assert (out / folder / f).stat().st_size > 0, (name, f)
        meta = json.loads((out / folder / "model.json").read_text())
        assert meta["run"] == name and meta["itos"][:2] == ["<pad>", "<unk>"]
    assert {"case/big_unscaled", "case/big_scaled"} <= set(index["timeline"])
    for rel in VENDOR_SHA256:
        assert (out / "static" / "vendor" / rel).is_file(), rel
    assert result.files == len(site_files(out)) and result.bytes == sum(p.stat().st_size for p in site_files(out))


def test_vendored_runtimes_are_the_published_files_with_their_licences():
    for rel, digest in VENDOR_SHA256.items():
        assert sha256_file(VENDOR / rel) == digest, f"{rel} differs from the npm release named in vendor/README.md"
    for folder in ("onnxruntime-web", "opencc-js"):
        assert "MIT License" in (VENDOR / folder / "LICENSE").read_text()
    assert "Apache License" in (VENDOR / "opencc-js" / "THIRD_PARTY_LICENSES.md").read_text()
    readme = (VENDOR / "README.md").read_text()
    assert all(d in readme for d in VENDOR_SHA256.values()) and "1.30.0" in readme and "1.4.2" in readme


# a resource load: what a browser fetches by itself (not a link the reader may follow)
LOADS = [
    re.compile(r"<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc\s*=\s*[\"']?([^\"'\s>]+)", re.I),
    re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?([^\"'\s>]+)", re.I),
    re.compile(r"url\(\s*[\"']?([^\"')]+)", re.I),
    re.compile(r"@import\s+[\"']([^\"']+)", re.I),
    re.compile(r"\b(?:fetch|import)\(\s*[\"'`]([^\"'`]+)", re.I),
]


def loads(text: str) -> list[str]:
    return [m.group(1) for rx in LOADS for m in rx.finditer(text)]


def test_no_page_loads_anything_from_another_host(site):
    out, _ = site
    remote = {}
    for p in site_files(out):
        if p.suffix in (".html", ".js", ".mjs", ".css"):
            found = [u for u in loads(p.read_text(encoding="utf-8")) if re.match(r"(?i)(https?:)?//", u)]
            if found:
                remote[str(p.relative_to(out))] = found[:3]
    assert not remote, remote


def test_every_local_file_a_page_references_exists(site):
    out, _ = site
    broken = []
    for p in site_files(out):
        if p.suffix != ".html":
            continue
        html = p.read_text(encoding="utf-8")
        refs = loads(html) + re.findall(r"<a\b[^>]*\bhref=\"([^\"]+)\"", html)
        for ref in refs:
            if re.match(r"(?i)(data:|#|mailto:|https?:|javascript:)", ref):
                continue
            target = (p.parent / ref.split("#")[0].split("?")[0]).resolve()
            if not target.is_file():
                broken.append(f"{p.name} -> {ref}")
    for js in (out / "static").glob("*.js"):  # script-built links and the runtimes site.js loads
        text = js.read_text(encoding="utf-8")
        for ref in re.findall(r"[\"'`]((?:vendor|static)/[^\"'`$]+|[a-z0-9-]+\.html)", text):
            target = (out / "static" if ref.startswith("vendor/") else out) / ref.split("?")[0]
            if not (target.is_dir() if ref.endswith("/") else target.is_file()):
                broken.append(f"{js.name} -> {ref}")
    assert not broken, broken
    assert not re.search(r"(href|src)=\"/(?!/)", "".join((out / p).read_text(encoding="utf-8") for p in PAGES))


def test_links_become_relative_and_an_unknown_absolute_link_is_refused():
    assert (
        relative_links('<a href="/lookup">x</a> <a href="/">h</a>', "t")
        == '<a href="lookup.html">x</a> <a href="index.html">h</a>'
    )
    assert relative_links('<script src="/static/a.js"></script>', "t") == '<script src="static/a.js"></script>'
    js = 'href: `/timeline?run=${n}`, x.split("/"), json("/api/info"), "/runs"'
    assert (
        relative_links(js, "t", script=True)
        == 'href: `timeline.html?run=${n}`, x.split("/"), json("/api/info"), "runs.html"'
    )
    with pytest.raises(SiteError, match="/nowhere"):
        relative_links('<a href="/nowhere">', "page.html")
    with pytest.raises(SiteError, match="/settings"):
        relative_links('go("/settings")', "x.js", script=True)


# ---------------------------------------------------------------------- the ONNX export
def test_the_onnx_manifest_matches_the_shipped_checkpoints():
    manifest = read_manifest()
    assert sorted(manifest["runs"]) == sorted(CASE_RUNS)
    for name, entry in manifest["runs"].items():
        assert sha256_file(SHIPPED_RUNS / name / "ckpt.pt") == entry["ckpt_sha256"], (
            f"{name}: ckpt.pt changed since its ONNX export; run scripts/export_onnx.py"
        )
        assert sha256_file(ONNX_DIR / entry["onnx"]) == entry["onnx_sha256"], entry["onnx"]
        assert (ONNX_DIR / entry["onnx"]).stat().st_size < 200_000  # the graph only: weights come from ckpt.pt
        c = entry["checked"]  # onnxruntime (CPU) on the graph vs torch's float64 model
        assert c["onnxruntime_vs_float64"] <= c["tolerance"] <= 1e-9, (name, c)


def export_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("export_onnx", Path(__file__).parents[1] / "scripts/export_onnx.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_graphs_erf_is_torch_s_to_an_ulp():
    import torch

    erf64 = export_script().erf64
    edges = [0.0, 1e-300, 1e-20, 0.84375, 1.25, 1 / 0.35, 6.0, 30.0]
    x = torch.cat(
        [
            torch.linspace(-8, 8, 200_001, dtype=torch.float64),
            torch.randn(100_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3,
            torch.tensor(edges + [-e for e in edges], dtype=torch.float64),
        ]
    )
    got = erf64(x)
    assert got.dtype == torch.float64 and bool(torch.isfinite(got).all())
    assert float((got - torch.erf(x)).abs().max()) <= 2.3e-16  # float64's ulp at 1 is 2.2e-16


def test_every_graph_computes_in_float64():
    """Each graph reads its weights as float32 (weights.bin) and casts them once; every other
    floating-point value, the outputs included, is float64 (no float32 op anywhere)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto

    for name, entry in read_manifest()["runs"].items():
        graph = onnx.load(ONNX_DIR / entry["onnx"], load_external_data=False)
        inferred = onnx.shape_inference.infer_shapes(graph).graph
        stored = {t["name"] for t in entry["tensors"]}
        single = {i.name for i in graph.graph.initializer if i.data_type == TensorProto.FLOAT}
        assert single == stored, name  # the checkpoint's tensors, nothing else, are float32
        typed = {v.name: v.type.tensor_type.elem_type for v in [*inferred.value_info, *inferred.output]}
        assert all(o in typed for node in graph.graph.node for o in node.output), name  # every value has a type
        floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}
        assert not {v for v, t in typed.items() if t in floats}, name
        assert [typed[o] for o in entry["outputs"]] == [TensorProto.DOUBLE] * len(entry["outputs"]), name
        assert "Erf" not in {n.op_type for n in graph.graph.node}  # onnxruntime has no float64 Erf


def test_the_site_s_weights_are_those_the_export_was_checked_with(site):
    out, _ = site
    manifest = read_manifest()
    index = json.loads((out / "data" / "site.json").read_text())
    for name, folder in index["models"].items():
        data = (out / folder / "weights.bin").read_bytes()
        assert hashlib.sha256(data).hexdigest() == manifest["runs"][name]["weights_sha256"]


def test_the_site_replays_the_server_s_json(site):
    from fastapi.testclient import TestClient

    from attnlab.web.server import create_app

    out, _ = site
    index = json.loads((out / "data" / "site.json").read_text())
    client = TestClient(create_app(runs_dir=str(SHIPPED_RUNS)), base_url="http://127.0.0.1")

    def stored(a):
        return json.loads((out / a["file"]).read_text()) if "file" in a else a["body"]

    def static(run: dict) -> dict:  # a site is a snapshot: never "running", no "updated N s ago"
        assert run["state"] != "running" and run["updated_s_ago"] is None
        return {k: v for k, v in run.items() if k not in ("state", "updated_s_ago")}

    def live(run: dict) -> dict:
        return {k: v for k, v in run.items() if k not in ("state", "updated_s_ago")}

    assert stored(index["info"]) == client.get("/api/info").json()
    for name in ("case/big_unscaled", "case/big_scaled"):
        assert static(stored(index["timeline"][name])) == live(client.get(f"/api/timeline/{name}").json())
    served = {r["name"]: r for r in client.get("/api/live").json()["runs"]}
    assert [static(r) for r in stored(index["live"])["runs"]] == [
        live(served[r["name"]]) for r in stored(index["live"])["runs"]
    ]
    assert sorted(r["name"] for r in stored(index["live"])["runs"]) == sorted(served)


# ----------------------------------------------------------------- errors of the command
def run_cli(capsys, *argv) -> tuple[int, str]:
    from attnlab.cli import main

    code = main(["site", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_an_out_that_is_not_an_earlier_site_is_refused(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    (tmp_path / "file").write_text("x")
    for out, words in (
        (tmp_path / "mine", "not an earlier attnlab site"),
        (tmp_path / "file", "is a file"),
        (tmp_path / "file" / "site", "is a file, not a folder"),
        (tmp_path / ("a" * 300), "File name too long"),
    ):
        code, text = run_cli(capsys, "--out", str(out))
        assert code == 2, text
        assert text.startswith("attnlab: error: --out") and words in text and len(text.strip().splitlines()) == 1, text
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "mine"]  # nothing else was written


def test_a_missing_shipped_model_is_named(tmp_path):
    with pytest.raises(SiteError, match="case/small_scaled_s20261014 .*missing"):
        build_site(tmp_path / "site", runs_root=tmp_path / "nowhere")
    assert not (tmp_path / "site").exists() and not list(tmp_path.glob(".site*"))


def test_a_checkpoint_that_changed_since_its_export_is_refused(tmp_path):
    import shutil

    (tmp_path / "onnx").mkdir()
    manifest = read_manifest()
    name = next(iter(manifest["runs"]))
    manifest["runs"][name]["ckpt_sha256"] = "0" * 64
    (tmp_path / "onnx" / "manifest.json").write_text(json.dumps(manifest))
    for entry in manifest["runs"].values():
        shutil.copy(ONNX_DIR / entry["onnx"], tmp_path / "onnx")
    with pytest.raises(SiteError, match=f"{name}.*another ckpt.pt.*export_onnx.py"):
        build_site(tmp_path / "site", onnx_dir=tmp_path / "onnx")
    assert not (tmp_path / "site").exists() and not list(tmp_path.glob(".site*"))


def test_a_failed_build_leaves_an_earlier_site_as_it_was(tmp_path, monkeypatch):
    import attnlab.web.site as S

    earlier = tmp_path / "site"
    earlier.mkdir()
    (earlier / "index.html").write_text("earlier")
    S._seal(earlier, [])  # its mark: an earlier site (tests/test_site_safety.py: what else is refused)

    def broken(dest, *a, **k):
        (dest / "half.html").write_text("half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(S, "_write", broken)
    with pytest.raises(OSError, match="No space left"):
        build_site(earlier)
    assert (earlier / "index.html").read_text() == "earlier" and not (earlier / "half.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


# ------------------------------------------------------------------------ in Chromium
class Static:
    """A plain http.server on 127.0.0.1 serving the site folder, in a daemon thread."""

    def __init__(self, folder: Path):
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = functools.partial(Quiet, directory=str(folder))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def served(site):
    with Static(site[0]) as url:
        yield url


def texts(block_size: int) -> list[str]:
    """20 texts: the corpus's poems, simplified input, unknown characters, 1 character, block_size."""
    poem = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"
    return [
        "床前明月光，疑是地上霜。举头望明月，低头思故乡。",  # simplified where the corpus is traditional
        "秦川雄帝宅，函谷壯皇居。",  # the probe of the snapshots
        poem,
        "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。",
        "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。",
        "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
        "理发店里的头发，后来云里的山峰。",  # s2t's phrases (头发 -> 頭髮) and characters the corpus keeps
        "干燥的天气，面条与面孔。",
        "Hello, world! 😀",  # nothing of it in the vocabulary
        "𠀀𠀁古",  # CJK Extension B: two UTF-16 units per character in the browser
        "こんにちは、月。",
        "2026年，春天。",
        "床前明月光，\n疑是地上霜。",
        "  明月  光 \u3000",
        "月",
        "😀",
        (poem * 8)[:block_size],  # exactly block_size
        ("举头望明月，低头思故乡。" * 8)[:block_size],  # block_size, simplified
        "君不見黃河之水天上來，奔流到海不復回。",
        "独在异乡为异客，每逢佳节倍思亲。",
    ]


def server_answers(runs: list[str], block_size: int) -> dict:
    from fastapi.testclient import TestClient

    from attnlab.web.server import create_app

    client = TestClient(create_app(runs_dir=str(SHIPPED_RUNS)), base_url="http://127.0.0.1")
    out = {}
    for run in runs:
        for t in texts(block_size):
            r = client.post("/api/attention", json={"text": t, "run": run})
            assert r.status_code == 200, (run, t, r.text)
            out[run, t] = r.json()
    return out


def max_gap(a, b) -> float:
    """Largest |Δ| between two numbers, or nested lists of numbers of the same shape (None = NaN on both)."""
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        return max((max_gap(x, y) for x, y in zip(a, b)), default=0.0)
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return 0.0
    return abs(a - b)


ROUNDING = 1e-4 + 1e-9  # both sides round to 4 decimals: at most one rounding step apart
EXACT = 1e-6  # unrounded: the browser's float64 graph vs the server's float64 forward (measured ~5e-9)


@pytest.mark.browser
def test_the_browser_model_gives_the_server_s_attention_on_20_texts(served, page):  # noqa: F811
    """window.attnlab.attention equals POST /api/attention on 20 texts and all four models: tokens,
    conversion and messages exactly; weights and head metrics to 1e-4 (both round to 4 decimals) on
    every model and layer, with no exception: the unscaled d_head 256 model's second layer, whose
    saturated softmax turns float32 rounding into ~3e-4 changes of a weight, included. Unrounded,
    the browser's weights are within EXACT of the server's own float64 forward (Loaded.float64): both
    evaluate the same float32 weights in float64. Printed beside: how far the float32 model is from
    that (what the server's page showed before it computed in float64)."""
    import numpy as np
    import torch

    from attnlab.web.server import _load

    page.goto(f"{served}exp1-2.html")
    page.get_by_test_id("map-L0H0").wait_for(timeout=120_000)
    info = page.evaluate("window.attnlab.info()")
    ts = texts(info["block_size"])
    assert len(ts) == 20 and len(ts[16]) == info["block_size"]
    want = server_answers(list(CASE_RUNS), info["block_size"])
    keys = ("entropy", "diag", "prev", "distance")
    ask = "([ts, run, exact]) => Promise.all(ts.map((t) => window.attnlab.attention(t, run, {exact})))"
    report = {}
    for run in CASE_RUNS:
        loaded = _load(str(SHIPPED_RUNS / run / "ckpt.pt"))  # what the server loads, and its float64 copy
        gaps = [
            {"json": 0.0, "metrics": 0.0, "exact": 0.0, "float32_vs_float64": 0.0} for _ in range(loaded.cfg.n_layer)
        ]
        got, exact = (page.evaluate(ask, [ts, run, e]) for e in (False, True))
        for t, g, e in zip(ts, got, exact):
            w = want[run, t]
            assert {k: v for k, v in g.items() if k != "layers"} == {k: v for k, v in w.items() if k != "layers"}, t
            assert [len(L["heads"]) for L in g["layers"]] == [len(L["heads"]) for L in w["layers"]]
            ids = torch.tensor([loaded.tok.encode(w["converted_text"])])
            with torch.no_grad():
                p64, p32 = loaded.float64().attention_patterns(ids), loaded.model.attention_patterns(ids)
            for gap, gl, wl, el, a, b in zip(gaps, g["layers"], w["layers"], e["layers"], p64, p32):
                for gh, wh in zip(gl["heads"], wl["heads"]):
                    gap["json"] = max(gap["json"], max_gap(gh["weights"], wh["weights"]))
                    metrics = [gh["metrics"][k] for k in keys], [wh["metrics"][k] for k in keys]
                    gap["metrics"] = max(gap["metrics"], max_gap(*metrics))
                in_browser = np.array([h["weights"] for h in el["heads"]], dtype=np.float64)
                assert in_browser.shape == tuple(a.shape[1:]), (run, t)
                gap["exact"] = max(gap["exact"], float(np.abs(in_browser - a[0].numpy()).max()))
                gap["float32_vs_float64"] = max(gap["float32_vs_float64"], float((b.double() - a).abs().max()))
        report[run] = gaps
    print("\nmax |Δ| over 20 texts, per model and layer (json: browser vs server, rounded as served;")
    print("exact: unrounded browser vs the server's float64 forward; float32_vs_float64: the float32 model):")
    for run, gaps in report.items():
        for li, gap in enumerate(gaps):
            print(f"  {run} layer {li}: " + ", ".join(f"{k} {v:.1e}" for k, v in gap.items()))
    for run, gaps in report.items():
        for li, gap in enumerate(gaps):
            assert gap["json"] <= ROUNDING and gap["metrics"] <= ROUNDING and gap["exact"] <= EXACT, (run, li, gap)


@pytest.mark.browser
def test_the_browser_refuses_what_the_server_refuses(served, page):  # noqa: F811
    from fastapi.testclient import TestClient

    from attnlab.web.server import create_app

    client = TestClient(create_app(runs_dir=str(SHIPPED_RUNS)), base_url="http://127.0.0.1")
    page.goto(f"{served}exp1-2.html")
    block = page.evaluate("window.attnlab.info()")["block_size"]
    ask = (
        "async (b) => { const r = await fetch('/api/attention', {method: 'POST', body: JSON.stringify(b)});"
        " return [r.status, (await r.json()).detail]; }"
    )
    for body in ({"text": "  \n"}, {"text": "月" * (block + 1)}, {"text": "月", "run": "case/nothing"}):
        want = client.post("/api/attention", json=body)
        assert page.evaluate(ask, body) == [want.status_code, want.json()["detail"]], body


@pytest.mark.browser
def test_experiment_1_2_draws_a_map_and_switches_model(served, page):  # noqa: F811
    page.goto(f"{served}exp1-2.html")
    page.get_by_test_id("map-L0H0").wait_for(timeout=120_000)
    assert "case/small_scaled_s20261014" in page.get_by_test_id("run-name").inner_text()
    page.get_by_test_id("run-select").select_option("case/big_unscaled")
    page.get_by_test_id("run-name").filter(has_text="case/big_unscaled").wait_for()
    page.get_by_test_id("text-input").fill("举头望明月，低头思故乡。")
    page.get_by_test_id("converted-text").filter(has_text="舉頭望明月").wait_for()
    page.get_by_test_id("map-L0H0").wait_for()
    assert not page.get_by_test_id("attn-message").inner_text()


@pytest.mark.browser
def test_the_timeline_shows_the_big_pair(served, page):  # noqa: F811
    page.goto(f"{served}timeline.html")
    page.get_by_test_id("twin-map-L0H0").wait_for(timeout=60_000)
    assert page.get_by_test_id("timeline-run").input_value() == "case/big_unscaled"
    assert page.get_by_test_id("timeline-twin").input_value() == "case/big_scaled"
    page.get_by_test_id("timeline-slider").fill("5")
    assert page.get_by_test_id("timeline-step").get_attribute("data-step") not in (None, "0")
    assert not page.get_by_test_id("timeline-msg").inner_text()


def test_the_static_runs_page_promises_no_refresh(site):
    """The refresh note is the script's to say (serve only): the shipped page does not say it before the script runs."""
    assert "每 2 秒" not in (Path(site[0]) / "runs.html").read_text(encoding="utf-8")


@pytest.mark.browser
def test_the_other_pages_work_without_a_server(served, page):  # noqa: F811
    page.goto(f"{served}lookup.html")
    assert page.get_by_test_id("out-2-0").inner_text() == "1.203"
    page.goto(f"{served}runs.html")
    page.get_by_test_id("chart-loss").wait_for()
    # nothing of the reader's can join a static site: the page says where their own runs open
    assert "attnlab serve" in page.get_by_test_id("static-note").inner_text()
    assert "每 2 秒" not in page.get_by_test_id("refresh-note").inner_text()
    page.get_by_test_id("live-link-case/big_unscaled").click()
    page.get_by_test_id("twin-map-L0H0").wait_for(timeout=60_000)
    assert page.url.split("/")[-1].startswith("timeline.html?run=case")
    page.goto(f"{served}index.html")
    for link in ("case.html", "book.html", "exp1-2.html"):
        assert page.locator(f'a[href="{link}"]').count() >= 1


@pytest.mark.browser
def test_a_site_missing_a_model_file_says_so_on_the_page(site, page, tmp_path):  # noqa: F811
    import shutil

    out = tmp_path / "site"
    shutil.copytree(site[0], out)
    index = json.loads((out / "data" / "site.json").read_text())
    (out / index["models"][index["default"]] / "weights.bin").unlink()
    page.on("console", lambda m: None)
    with Static(out) as url:
        page.goto(f"{url}exp1-2.html")
        msg = page.get_by_test_id("attn-message")
        msg.filter(has_text="weights.bin").wait_for(timeout=60_000)
        assert "缺少文件" in msg.inner_text() and "attnlab site --out" in msg.inner_text()
    page.errors.clear()  # the 404 of the missing file is the point of this test


@pytest.mark.browser
def test_the_train_page_counts_until_it_collapses_to_the_case_s_collapse(served, page):  # noqa: F811
    """A reader who opens the train page and clicks Start (the big pair, until it collapses) is told
    how long to the collapse, not to step 1500: the progress bar and the time left count to the step
    where the committed case's unscaled run of that config and seed met the page's stopping rule
    (layer-0 entropy below 0.01 ten steps in a row)."""
    from attnlab.web.site import CASE_JSON, shipped_file

    trace = json.loads(shipped_file(*CASE_JSON).read_text(encoding="utf-8"))["pairs"]["big_unscaled"]["trace"]
    below = [e < 0.01 for e in trace["layers"][0]["weight_entropy"]]
    stop = next(trace["step"][i + 9] for i in range(len(below) - 9) if all(below[i : i + 10]))
    page.goto(f"{served}train.html")
    page.get_by_test_id("start").click()
    page.wait_for_function(
        "() => document.querySelector('#status').textContent.includes('ms per step')", timeout=180_000
    )
    got = page.evaluate(
        "() => ({status: document.querySelector('#status').textContent, bar: document.querySelector('#progress').value,"
        " done: attnlab.pageRuns().reduce((n, r) => n + r.records.length, 0), n: attnlab.pageRuns().length})"
    )
    page.get_by_test_id("stop").click()
    page.get_by_test_id("download-unscaled").wait_for(timeout=180_000)
    assert f"到约第 {stop} 步" in got["status"] and f"about step {stop}" in got["status"], got
    assert got["done"] >= 1 and abs(got["bar"] - got["done"] / (got["n"] * stop)) < 1.01 / (got["n"] * stop), got
