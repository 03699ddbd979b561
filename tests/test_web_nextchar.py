"""The /next page (text → next character): POST /api/next is the model's own forward, and the static
site's in-browser forward (static/forward.js, float64) gives the server's numbers on the same text.

Tolerance: every number (norms, attention rows, logits) within FORWARD_TOL of the server's float64
forward. Both sides compute in float64 from the same float32 weights; they differ only in the order of
float64 sums (measured: under 1e-12 on the four shipped models).
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.web.server import create_app  # noqa: E402
from attnlab.web.site import CASE_RUNS, SHIPPED_RUNS  # noqa: E402
from test_web_browser import browser, expect, page  # noqa: E402, F401  (fixtures: Chromium, a page whose requests stay local)

FORWARD_TOL = 1e-9
TEXTS = ["秦川雄帝宅，函谷壯皇居。", "床前明月光，疑是地上", "月", "举头望明月，低头思故乡。" * 5]


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(runs_dir=str(SHIPPED_RUNS)), base_url="http://127.0.0.1")


def test_the_logits_are_the_model_s_own(client):
    import torch

    from attnlab.checkpoint import from_payload, read_checkpoint

    run = "case/big_unscaled"
    d = client.post("/api/next", json={"text": TEXTS[0], "run": run}).json()
    model, tok, _ = from_payload(read_checkpoint(SHIPPED_RUNS / run / "ckpt.pt"), run)
    ids = [t["id"] for t in d["tokens"]]
    assert ids == tok.encode(TEXTS[0]) and len(d["vocab"]) == len(tok.itos)
    with torch.no_grad():
        exact = model.double().eval()(torch.tensor([ids]))[0][0, -1]
    assert max(abs(a - b) for a, b in zip(d["logits"], exact.tolist())) < 1e-9
    # the probe's 函 is outside the vocabulary and is said so
    assert [t["char"] for t in d["tokens"] if t["unk"]] == ["函"] and "函" in d["unknown_line"]
    # the residual stream: each stage adds to the one before, the norms are of the same vectors
    last = d["blocks"][-1]
    assert len(d["blocks"]) == d["n_layer"] == 2 and len(last["attention"]) == d["n_head"]
    assert all(math.isclose(sum(row), 1, abs_tol=1e-9) for b in d["blocks"] for row in b["attention"])
    assert d["scaling"] == "none" and len(d["final_norm"]) == len(ids)


def test_bad_texts_are_refused_with_one_line(client):
    assert client.post("/api/next", json={"text": "  "}).status_code == 422
    r = client.post("/api/next", json={"text": "月" * 65})
    assert r.status_code == 422 and "block_size=64" in r.json()["detail"]
    assert client.post("/api/next", json={"text": "月", "run": "nope"}).status_code == 404


def gap(a, b) -> float:
    if isinstance(a, dict):
        assert set(a) == set(b)
        return max(gap(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        return max((gap(x, y) for x, y in zip(a, b)), default=0.0)
    if a is None or b is None:
        assert a is None and b is None
        return 0.0
    return abs(a - b)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from attnlab.web.site import build_site
    from test_site import Static

    out = tmp_path_factory.mktemp("nextsite") / "site"
    build_site(out)
    with Static(out) as url:
        yield url


@pytest.mark.browser
def test_the_browser_forward_equals_the_server_s(client, served, page):  # noqa: F811
    url = served
    page.goto(f"{url}next.html")
    page.get_by_test_id("top-0").wait_for(timeout=60_000)  # the page itself runs in the browser
    worst = {}
    for run in CASE_RUNS:
        for text in TEXTS:
            server = client.post("/api/next", json={"text": text, "run": run}).json()
            here = page.evaluate("([t, r]) => window.attnlab.next(t, r)", [text, run])
            assert [t["id"] for t in here["tokens"]] == [t["id"] for t in server["tokens"]]
            assert here["vocab"] == server["vocab"] and here["unknown_line"] == server["unknown_line"]
            numbers = ("embedding", "blocks", "final_norm", "logits")
            worst[run, text] = gap({k: here[k] for k in numbers}, {k: server[k] for k in numbers})
    print(f"largest |browser - server| over {len(worst)} model-text pairs: {max(worst.values()):.1e}")
    assert max(worst.values()) < FORWARD_TOL, worst
    # the page generates a line in the browser
    page.get_by_test_id("generate").click()
    page.wait_for_function("document.getElementById('verse').dataset.generated !== undefined", timeout=60_000)
    assert page.get_by_test_id("verse").inner_text().startswith("床前明月光")


@pytest.mark.browser
def test_the_static_site_s_first_pages_are_mended(served, page):  # noqa: F811
    from attnlab.snapshots import read_snapshots

    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    for report in ("book.html", "case.html"):  # the reports carry the way back home
        page.goto(f"{served}{report}")
        back = page.locator("nav.attnlab-back")
        assert back.locator('a[href="index.html"]').count() == 1 and back.locator('a[href="next.html"]').count() == 1
    page.goto(f"{served}runs.html")  # nothing refreshes on a static copy, and the page does not say it does
    expect(page.get_by_test_id("refresh-note")).to_contain_text("static edition")
    # the timeline's words match its first frame: the entropies are read from the run's snapshots
    snap = read_snapshots(SHIPPED_RUNS / "case" / "big_unscaled" / "snapshots.npz")
    first = f"{snap.metrics[0, 0, 0, snap.meta['metrics'].index('entropy')]:.3f}"
    page.goto(f"{served}timeline.html")
    expect(page.get_by_test_id("first-frame")).to_contain_text(f"entropy per layer {first}")
    assert "nearly uniform" not in page.locator("main").inner_text()
    assert missing == []  # no favicon.ico or other file a page asks for is missing
