"""End-to-end: the playground pages in a real headless Chromium (Debian's).

The server runs in a thread on a free 127.0.0.1 port; every request a page
makes is recorded and must stay on that address. Outside CI these tests skip
when no Chromium is installed; with CI=true a missing browser is a failure.
Install the browser with scripts/ci_system_deps.sh (never `playwright install`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
TEXT = "床前明月光，疑是地上霜。举头望明月，低头思故乡。\n" * 30


def find_chromium() -> str | None:
    for candidate in (
        os.environ.get("ATTNLAB_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def unavailable(why: str):
    """Skip locally; in CI a missing browser must fail loudly, never skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {why}; run scripts/ci_system_deps.sh", pytrace=False)
    pytest.skip(f"{why} (install with scripts/ci_system_deps.sh; set ATTNLAB_CHROMIUM to use another binary)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """uvicorn in a daemon thread, stopped cleanly at teardown."""

    def __init__(self, app):
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("playground server did not start")
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    exe = find_chromium()
    if exe is None:
        unavailable("no Chromium found")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    from attnlab import Config, train

    root = tmp_path_factory.mktemp("weblab")
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=16, vocab_size=40, max_steps=3, batch_size=4, device="cpu")
    train(TEXT, cfg, out_dir=root / "runs" / "tiny")
    trace = {
        "step": [0, 10, 20],
        "loss": [7.0, 5.0, 4.2],
        "layers": [
            {"weight_entropy": [0.99, 0.5, 0.1], "jacobian_fro": [0.3, 0.1, 0.001], "logit_std": [1.0, 10.0, 100.0]}
        ],
    }
    pairs = {
        k: {"loss_start": 7.0, "loss_end": 4.2, "val_loss_end": 4.3, "trace": trace}
        for k in ("small_unscaled", "small_scaled", "big_unscaled", "big_scaled")
    }
    (root / "case.json").write_text(json.dumps({"pairs": pairs}))
    return root


@pytest.fixture(scope="module")
def base(lab, browser):
    from attnlab.web.server import create_app

    app = create_app(
        str(lab / "runs" / "tiny" / "ckpt.pt"), runs_dir=str(lab / "runs"), case_json=str(lab / "case.json")
    )
    with ServerThread(app) as url:
        yield url


@pytest.fixture()
def page(browser):
    """A fresh page that records every request and every script error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.requests, pg.errors = [], []
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: m.type == "error" and "status of 4" not in m.text and pg.errors.append(m.text))
    yield pg
    hosts = {(urlsplit(u).scheme, urlsplit(u).hostname) for u in pg.requests}
    context.close()
    assert pg.requests, "the page made no requests at all?"
    assert all(scheme == "data" or host == "127.0.0.1" for scheme, host in hosts), hosts
    assert not pg.errors, pg.errors


def expect(locator):
    from playwright.sync_api import expect as _expect  # the page's CSP forbids eval-based waits

    return _expect(locator)


def cell(page, testid: str) -> str:
    return page.get_by_test_id(testid).inner_text().strip()


def out_row(page, i: int, d: int = 2) -> list[str]:
    return [cell(page, f"out-{i}-{j}") for j in range(d)]


# ----------------------------------------------------------------- soft lookup
def test_lookup_book_example_scaled_and_unscaled(page, base):
    page.goto(f"{base}/lookup")
    assert page.get_by_test_id("toggle-scale").is_checked()
    assert page.get_by_test_id("toggle-mask").is_checked()
    assert out_row(page, 2) == ["1.203", "0.797"]
    page.get_by_test_id("toggle-scale").uncheck()
    assert out_row(page, 2) == ["1.267", "0.733"]
    # §1.5.2: with the causal mask, rows 0 and 1 are [2, 0] and [0.538, 1.462] ...
    assert out_row(page, 0) == ["2.000", "0.000"]
    assert out_row(page, 1) == ["0.538", "1.462"]
    assert [cell(page, f"w-2-{j}") for j in range(3)] == ["0.422", "0.155", "0.422"]
    # ... and the mask does not change the third position (③)
    page.get_by_test_id("toggle-mask").uncheck()
    assert out_row(page, 2) == ["1.267", "0.733"]
    assert out_row(page, 1) != ["0.538", "1.462"]
    assert cell(page, "w-0-2") != "0.000"
    page.get_by_test_id("toggle-scale").check()
    assert out_row(page, 2) == ["1.203", "0.797"]


def test_lookup_edits_recompute_and_bad_cells_are_contained(page, base):
    page.goto(f"{base}/lookup")
    before = out_row(page, 2)
    page.get_by_test_id("v-0-1").fill("5")
    after = out_row(page, 2)
    assert after != before and after[0] == before[0]
    # §1.5.3 ③: V rows [1,0],[0,1],[1,1], Q row 2 = [1,0]: unscaled output is again [1.267, 0.733]
    page.get_by_test_id("toggle-scale").uncheck()
    for (i, j), v in {(0, 0): "1", (0, 1): "0", (1, 0): "0", (1, 1): "1", (2, 0): "1", (2, 1): "1"}.items():
        page.get_by_test_id(f"v-{i}-{j}").fill(v)
    page.get_by_test_id("preset-book").click()
    assert out_row(page, 2) == ["1.267", "0.733"]
    # a non-numeric cell: message, marked cell, affected rows blank, others still computed
    page.get_by_test_id("k-1-0").fill("abc")
    msg = page.get_by_test_id("cell-msg")
    assert "K[1,0]" in msg.inner_text() and "abc" in msg.inner_text()
    assert page.get_by_test_id("k-1-0").get_attribute("aria-invalid") == "true"
    assert out_row(page, 0) == ["2.000", "0.000"]  # row 0 never sees key 1 (causal)
    assert out_row(page, 1) == ["—", "—"] and out_row(page, 2) == ["—", "—"]
    page.get_by_test_id("k-1-0").fill("0")
    assert msg.inner_text().strip() == ""
    assert out_row(page, 2) == ["1.267", "0.733"]


def test_lookup_presets_and_shape(page, base):
    page.goto(f"{base}/lookup")
    page.get_by_test_id("preset-self").click()
    for i in range(3):
        assert cell(page, f"w-{i}-{i}") == "1.000"
    assert out_row(page, 1) == ["0.000", "2.000"]  # the layer copies V
    page.get_by_test_id("preset-book").click()
    book_entropy = float(cell(page, "ent-2"))
    page.get_by_test_id("preset-sharp").click()
    sharp_entropy = float(cell(page, "ent-2"))
    assert sharp_entropy < book_entropy
    # §1.5.3 ④: doubling K's first row sharpens further
    page.get_by_test_id("k-0-0").fill("4")
    assert float(cell(page, "ent-2")) < sharp_entropy
    assert cell(page, "ent-0") == "—"  # one visible position: undefined
    # shape controls
    page.get_by_test_id("n-input").fill("5")
    page.get_by_test_id("d-input").fill("4")
    assert page.get_by_test_id("q-4-3").is_visible() and page.get_by_test_id("out-4-3").is_visible()
    page.get_by_test_id("n-input").fill("17")
    assert "1–16" in cell(page, "shape-msg")
    assert page.get_by_test_id("q-4-3").is_visible()


# ---------------------------------------------------------------- experiment 1-1
def test_experiment_1_1(page, base):
    page.goto(f"{base}/exp1-1")
    slider = page.get_by_test_id("dk-slider")
    slider.fill("10")
    assert cell(page, "dk-value") == "1024"
    u_std, s_std = float(cell(page, "u-std")), float(cell(page, "s-std"))
    assert 24 < u_std < 40 and 0.75 < s_std < 1.25  # ~sqrt(1024) and ~1
    assert float(cell(page, "u-ent")) < 0.2 < 0.8 < float(cell(page, "s-ent"))
    assert float(cell(page, "u-jac")) < float(cell(page, "s-jac"))
    slider.fill("1")
    assert cell(page, "dk-value") == "2"
    for testid in ("chart-std", "chart-ent", "chart-jac"):
        assert page.get_by_test_id(testid).locator("path").count() >= 2
    page.get_by_test_id("seed").fill("-3")
    assert cell(page, "e11-msg")


# ---------------------------------------------------------------- experiment 1-2
def test_experiment_1_2_maps(page, base):
    page.goto(f"{base}/exp1-2")
    page.get_by_test_id("map-L0H1").wait_for()
    assert "block_size 16" in cell(page, "ckpt-info")
    assert page.get_by_test_id("metrics-L0H0").is_visible()
    box = page.get_by_test_id("text-input")
    box.fill("明月Z光")
    page.get_by_test_id("run-attention").click()
    expect(page.get_by_test_id("tokens")).to_contain_text("<unk>")
    assert page.get_by_test_id("map-L0H0").is_visible()
    box.fill("")
    page.get_by_test_id("run-attention").click()
    expect(page.get_by_test_id("attn-message")).to_contain_text("empty")
    box.fill("明" * 20)
    page.get_by_test_id("run-attention").click()
    expect(page.get_by_test_id("attn-message")).to_contain_text("block_size=16")


def test_experiment_1_2_without_checkpoint(page, tmp_path):
    from attnlab.web.server import create_app

    # no run with a ckpt.pt anywhere (with one, serve shows it: tests/test_web_exp12_browser.py)
    with ServerThread(create_app(None, runs_dir=str(tmp_path / "runs"))) as url:
        page.goto(f"{url}/exp1-2")
        page.get_by_test_id("no-checkpoint").wait_for()
        assert "--checkpoint" in cell(page, "no-checkpoint")
        assert page.get_by_test_id("text-input").is_disabled()


# --------------------------------------------------------------------------- runs
def test_runs_page(page, base):
    page.goto(f"{base}/runs")
    page.get_by_test_id("chart-loss").wait_for()
    assert page.get_by_test_id("chart-loss").locator("path").count() == 4  # the case's 4 variants
    # serve refreshes the list and says so; a static copy never does
    expect(page.get_by_test_id("refresh-note")).to_contain_text("每 2 秒刷新")
    page.get_by_test_id("pick-tiny").check()  # beside the case's four
    expect(page.get_by_test_id("runs-summary")).to_contain_text("tiny:")
    assert page.get_by_test_id("chart-loss").locator("path").count() == 5
    assert page.get_by_test_id("chart-jacobian").locator("path").count() >= 1
    page.goto(f"{base}/")
    for name in ("软查表", "实验 1-1", "实验 1-2", "训练曲线"):
        assert page.get_by_role("link", name=name).first.is_visible()


def test_norm_bars_are_drawn_narrow(page, base):
    """‖J‖: the page's fonts draw ‖ from a Latin face, not as the CJK font's full-width glyph (a CJK character's width)."""
    page.goto(f"{base}/runs")
    page.get_by_test_id("chart-loss").wait_for()
    widths = page.evaluate(
        """async () => { await document.fonts.ready;
        const w = (t) => { const s = document.createElement("span"); s.textContent = t; document.body.append(s);
                           const x = s.getBoundingClientRect().width; s.remove(); return x; };
        return [w("‖‖‖‖"), w("熵熵熵熵")]; }"""
    )
    assert widths[0] < 0.7 * widths[1], widths


# ------------------------------------------------------- JS math against Python
def test_browser_math_matches_python(page, base):
    """attn.js (what the pages compute) equals NumPy attention and attnlab.diagnostics."""
    import numpy as np
    import torch

    from attnlab.diagnostics import jacobian_frobenius, weight_entropy

    page.goto(f"{base}/lookup")
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(6, 4)) for _ in range(3))
    for scale in (True, False):
        got = page.evaluate(
            "([Q, K, V, scale]) => Attn.attention(Q, K, V, {scale, causal: true})",
            [Q.tolist(), K.tolist(), V.tolist(), scale],
        )
        s = Q @ K.T / (np.sqrt(4) if scale else 1.0)
        s = np.where(np.tril(np.ones((6, 6), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        np.testing.assert_allclose(np.array(got["weights"]), p, atol=1e-12)
        np.testing.assert_allclose(np.array(got["out"]), p @ V, atol=1e-12)
        ent = weight_entropy(torch.tensor(p), torch.arange(1, 7)).numpy()
        np.testing.assert_allclose(np.array(got["entropy"][1:], float), ent[1:], atol=1e-9)
    # Jacobian norm, including rows so saturated that the naive formula cancels to noise
    rows = [[0.2, 0.3, 0.5], [1 - 2e-9, 1e-9, 1e-9], [1.0, 1e-14, 0.0], [0.25] * 4]
    got = page.evaluate("(rows) => rows.map(Attn.jacobianFro)", rows)
    for r, g in zip(rows, got):
        want = float(jacobian_frobenius(torch.tensor(r, dtype=torch.float64)))
        assert g == pytest.approx(want, rel=1e-9, abs=1e-300), r
