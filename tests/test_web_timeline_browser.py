"""End-to-end in headless Chromium: the /timeline page, export buttons and the live runs table.

Shares the browser, server and page fixtures of test_web_browser (same rules:
skipped without Chromium outside CI, every request must stay on 127.0.0.1).
"""

from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET

import pytest

from test_web_browser import ServerThread, browser, expect, page  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser
TEXT = "床前明月光，疑是地上霜。举头望明月，低头思故乡。\n" * 30
PROBE = "明月光"
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from attnlab import Config, train

    root = tmp_path_factory.mktemp("timeline") / "runs"
    cfg = Config(
        n_layer=1,
        n_head=2,
        d_model=16,
        block_size=16,
        vocab_size=40,
        max_steps=12,
        batch_size=4,
        warmup=2,
        lr=3e-2,
        eval_every=4,
        device="cpu",
        probe=PROBE,
        snapshot_dense=3,
        snapshot_every=3,
    )
    for scaled in (False, True):
        train(TEXT, cfg.replace(scaled=scaled), out_dir=root / "case" / ("tiny_scaled" if scaled else "tiny_unscaled"))
    train(TEXT, cfg.replace(max_steps=2, snapshot_every=0), out_dir=root / "old")
    train(TEXT, cfg.replace(max_steps=2), out_dir=root / "broken")
    (root / "broken" / "snapshots.npz").write_bytes(b"PK\x03\x04 cut short")
    return root


@pytest.fixture(scope="module")
def url(runs, browser):  # noqa: F811
    from attnlab.web.server import create_app

    with ServerThread(create_app(None, runs_dir=str(runs))) as u:
        yield u


def map_pixels(pg, testid):
    return pg.get_by_test_id(testid).evaluate("c => c.toDataURL()")


def shown_step(pg) -> int:
    return int(pg.get_by_test_id("timeline-step").get_attribute("data-step"))


def test_timeline_slider_keys_play_and_twin(page, url):  # noqa: F811
    page.goto(f"{url}/timeline?run=case/tiny_unscaled")
    page.get_by_test_id("twin-map-L0H1").wait_for()  # the scaled twin is chosen by name
    assert page.get_by_test_id("timeline-twin").input_value() == "case/tiny_scaled"
    assert shown_step(page) == 0 and page.get_by_test_id("metrics-L0H0").is_visible()
    first, twin_first = map_pixels(page, "map-L0H0"), map_pixels(page, "twin-map-L0H0")
    page.get_by_test_id("timeline-slider").fill("6")  # steps 0 1 2 3 6 9 12
    assert shown_step(page) == 12
    assert map_pixels(page, "map-L0H0") != first and map_pixels(page, "twin-map-L0H0") != twin_first
    cursor = page.get_by_test_id("timeline-chart-entropy").locator("line.cursor")
    assert cursor.get_attribute("data-x") == "12"  # the curves' cursor follows
    page.locator("body").press("ArrowLeft")
    assert shown_step(page) == 9 and cursor.get_attribute("data-x") == "9"
    page.get_by_test_id("timeline-slider").fill("0")
    page.locator("h1").click()
    page.keyboard.press(" ")  # space plays ...
    expect(page.get_by_test_id("timeline-play")).to_have_attribute("data-playing", "true")
    expect(page.get_by_test_id("timeline-step")).to_have_attribute("data-step", "12", timeout=10_000)
    expect(page.get_by_test_id("timeline-play")).to_have_attribute("data-playing", "false")  # ... to the end


def test_runs_without_or_with_broken_snapshots_say_so(page, url):  # noqa: F811
    page.goto(f"{url}/timeline?run=old&twin=broken")
    expect(page.get_by_test_id("snapshot-msg")).to_contain_text("no attention snapshots")
    expect(page.get_by_test_id("twin-snapshot-msg")).to_contain_text("corrupt")
    assert page.get_by_test_id("timeline-chart-loss").is_visible()  # the curves still show


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_export_svg_outlines_the_probe_and_png_is_the_picture(page, url):  # noqa: F811
    page.goto(f"{url}/timeline?run=case/tiny_unscaled&twin=")
    fig = page.locator("figure").filter(has=page.get_by_test_id("map-L0H0"))
    with page.expect_download() as d:
        fig.get_by_test_id("export-svg").click()
    svg = ET.parse(d.value.path()).getroot()
    assert svg.tag == f"{SVG_NS}svg"
    chars = {p.get("data-char") for p in svg.iter(f"{SVG_NS}path")}
    assert set(PROBE) <= chars  # outlines, no font needed
    assert not [t for t in svg.iter(f"{SVG_NS}text") if set(t.text or "") & set(PROBE)]
    assert len([r for r in svg.iter(f"{SVG_NS}rect")]) >= len(PROBE) ** 2
    with page.expect_download() as d:
        fig.get_by_test_id("export-png").click()
    # the PNG is the exported picture (title, colour scale) at twice its size, not the bare canvas
    assert png_size(open(d.value.path(), "rb").read()) == (2 * int(svg.get("width")), 2 * int(svg.get("height")))
    assert any((g.get("data-text") or "").startswith("case/tiny_unscaled · step") for g in svg.iter(f"{SVG_NS}g"))
    chart = page.locator(".fig").filter(has=page.get_by_test_id("timeline-chart-loss"))
    with page.expect_download() as d:
        chart.get_by_test_id("export-png").click()
    assert png_size(open(d.value.path(), "rb").read()) == (540, 270)  # the chart's size at ratio 1
    with page.expect_download() as d:
        chart.get_by_test_id("export-svg").click()
    root = ET.parse(d.value.path()).getroot()
    assert {"l", "o", "s"} <= {p.get("data-char") for p in root.iter(f"{SVG_NS}path")}


def test_runs_page_updates_live_and_links_the_timeline(page, url, runs):  # noqa: F811
    grow = runs / "growing"
    grow.mkdir()
    (grow / "config.json").write_text(json.dumps({"max_steps": 100}))
    rows = [{"step": i, "loss": 5.0 - i * 0.1, "lr": 1e-3, "grad_norm": 1.0} for i in range(8)]
    (grow / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    page.goto(f"{url}/runs")
    expect(page.get_by_test_id("live-state-growing")).to_contain_text("running")
    expect(page.get_by_test_id("live-state-case/tiny_scaled")).to_contain_text("finished")
    page.get_by_test_id("pick-growing").check()
    expect(page.get_by_test_id("runs-summary")).to_contain_text("3 行")
    with (grow / "metrics.jsonl").open("a") as f:  # the run writes more steps
        f.write("".join(json.dumps(r) + "\n" for r in rows[3:]))
    expect(page.get_by_test_id("live-steps-growing")).to_have_text("8 / 100", timeout=10_000)
    expect(page.get_by_test_id("runs-summary")).to_contain_text("8 行", timeout=10_000)
    page.get_by_test_id("live-link-case/tiny_unscaled").click()
    page.get_by_test_id("map-L0H0").wait_for()
    assert page.get_by_test_id("timeline-run").input_value() == "case/tiny_unscaled"


def test_playground_matrices_export(page, url):  # noqa: F811
    page.goto(f"{url}/lookup")
    card = page.locator(".card").filter(has=page.locator("#out-weights"))
    with page.expect_download() as d:
        card.get_by_test_id("export-svg").click()
    svg = ET.parse(d.value.path()).getroot()
    texts = [g.get("data-text") for g in svg.iter(f"{SVG_NS}g")]
    row2 = [page.get_by_test_id(f"w-2-{j}").inner_text().strip() for j in range(3)]
    assert set(row2) <= set(texts) and "—" not in row2  # the numbers on screen
    assert "权重" in "".join(t or "" for t in texts)  # the title, outlined
    assert {"权", "重", "4", "2"} <= {p.get("data-char") for p in svg.iter(f"{SVG_NS}path")}
    with page.expect_download() as d:
        card.get_by_test_id("export-png").click()
    w, h = page.locator("#out-weights table").evaluate(
        "t => { const r = t.getBoundingClientRect(); return [Math.ceil(r.width) + 2, Math.ceil(r.height) + 22]; }"
    )
    assert png_size(open(d.value.path(), "rb").read()) == (w, h)
