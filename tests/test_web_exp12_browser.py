"""Experiment 1-2 in Chromium: ready on arrival (serve without --checkpoint shows a run and
names it), simplified input converted on the page, disabled controls that look disabled, and
maps that enlarge legibly and export with a title and a colour scale."""

from __future__ import annotations

import struct

import pytest

from attnlab.web.server import DEFAULT_RUN, create_app
from test_web_browser import ServerThread, browser, expect  # noqa: F401  (browser: the fixture)
from test_web_playground import POEM, corpus_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    runs = tmp_path_factory.mktemp("exp12") / "runs"
    corpus_run(runs / DEFAULT_RUN, step=7)
    corpus_run(runs / "mine", n_head=4, step=3)
    with ServerThread(create_app(None, runs_dir=str(runs))) as url:  # no --checkpoint
        yield url


@pytest.fixture()
def page(browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, errors


def test_serve_without_checkpoint_shows_the_case_model_by_name_and_can_switch(page, served):
    page.goto(f"{served}/exp1-2")
    page.get_by_test_id("map-L0H1").wait_for()
    assert DEFAULT_RUN in page.get_by_test_id("run-name").inner_text()
    assert "第 7 步" in page.get_by_test_id("run-name").inner_text()
    select = page.get_by_test_id("run-select")
    assert select.is_enabled() and page.get_by_test_id("text-input").is_enabled()
    assert sorted(select.locator("option").all_inner_texts()) == sorted([DEFAULT_RUN, "mine"])
    select.select_option("mine")
    page.get_by_test_id("map-L0H3").wait_for()  # the 4-head run's maps
    expect(page.get_by_test_id("run-name")).to_contain_text("mine")
    select.select_option(DEFAULT_RUN)
    expect(page.get_by_test_id("run-name")).to_contain_text(DEFAULT_RUN)


def test_simplified_input_is_converted_and_said_on_the_page(page, served):
    page.goto(f"{served}/exp1-2")
    page.get_by_test_id("map-L0H0").wait_for()
    page.get_by_test_id("text-input").fill(POEM)
    page.get_by_test_id("run-attention").click()
    expect(page.get_by_test_id("converted-note")).to_contain_text("已转换为繁体 / converted to traditional")
    expect(page.get_by_test_id("converted-text")).to_have_text("牀前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。")
    assert "<unk>" not in page.get_by_test_id("tokens").inner_text()
    assert page.get_by_test_id("unk-line").inner_text().strip() == ""
    page.get_by_test_id("text-input").fill("明月Zq")
    page.get_by_test_id("run-attention").click()
    expect(page.get_by_test_id("unk-line")).to_contain_text("2 个字不在字表里")
    expect(page.get_by_test_id("unk-line")).to_contain_text("Zq")
    assert page.get_by_test_id("converted-note").inner_text().strip() == ""


def test_a_disabled_control_looks_disabled(page, tmp_path):
    with ServerThread(create_app(None, runs_dir=str(tmp_path / "none"))) as url:
        page.goto(f"{url}/lookup")
        enabled = page.get_by_test_id("preset-book").evaluate("b => getComputedStyle(b).color")
        page.goto(f"{url}/exp1-2")
        page.get_by_test_id("no-checkpoint").wait_for()
        button = page.get_by_test_id("run-attention")
        assert button.is_disabled() and page.get_by_test_id("text-input").is_disabled()
        style = button.evaluate("b => [getComputedStyle(b).color, getComputedStyle(b).cursor]")
        assert style[0] != enabled and style[1] == "not-allowed"


def png_size(path) -> tuple[int, int]:
    head = open(path, "rb").read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_a_map_enlarges_legibly_and_exports_with_title_and_scale(page, served):
    page.goto(f"{served}/exp1-2")
    page.get_by_test_id("map-L0H1").wait_for()
    page.get_by_test_id("map-L0H1").click()
    dialog = page.get_by_test_id("map-dialog")
    expect(dialog).to_be_visible()
    big = page.get_by_test_id("map-large")
    title = page.get_by_test_id("map-dialog-title").inner_text()
    assert DEFAULT_RUN in title and "step 7" in title and "layer 0" in title and "head 1" in title
    axis = big.evaluate(
        """s => [...s.querySelectorAll('text[data-role=axis]')].map(t => t.getBoundingClientRect().height)"""
    )
    assert len(axis) == 2 * 12 and min(axis) >= 16  # 12 characters, readable at 1280 px (small maps: ~13 px)
    box = big.bounding_box()
    assert box["width"] > 500 and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    assert big.locator("[data-role=colour-scale] rect").count() > 10
    with page.expect_download() as dl:
        dialog.get_by_test_id("export-png").click()
    w, h = png_size(dl.value.path())
    assert w > 2 * box["width"] * 0.95 and h > 2 * box["height"] * 0.95  # twice the screen size
    with page.expect_download() as dl:
        dialog.get_by_test_id("export-svg").click()
    svg = open(dl.value.path(), encoding="utf-8").read()
    assert 'data-text="' + title + '"' in svg and "colour-scale" in svg
    page.get_by_test_id("map-dialog-close").click()
    expect(dialog).to_be_hidden()
    # the small map's own export carries the title too
    with page.expect_download() as dl:
        page.locator("figure").first.get_by_test_id("export-svg").click()
    assert "step 7" in open(dl.value.path(), encoding="utf-8").read()


def test_log_charts_always_have_two_y_ticks(page, served):
    page.goto(f"{served}/runs")
    counts = page.evaluate(
        """(ranges) => ranges.map(([lo, hi]) => {
          const div = document.createElement("div");
          const svg = UI.lineChart(div, { title: "t", logY: true,
            series: [{ name: "a", x: [0, 1], y: [lo, hi], color: "#000" }] });
          const labels = [...svg.querySelectorAll("text")].filter((t) => t.getAttribute("text-anchor") === "end");
          return [labels.length, new Set(labels.map((t) => t.textContent)).size];
        })""",
        # ranges that gave a single tick before (a small run's Jacobian norm among them)
        [[0.00219, 0.00275], [5.95, 12.46], [0.1238, 0.1565], [2.028, 2.353], [0.6376, 1.372], [30.4, 88.8]],
    )
    assert all(n >= 2 and distinct == n for n, distinct in counts), counts


def test_the_timeline_s_default_twin_has_the_same_shape_or_is_none(page, tmp_path):
    import json

    for name, n_layer in (("a_unscaled", 1), ("a_scaled", 2), ("b_unscaled", 1), ("b_scaled", 1)):
        d = tmp_path / "runs" / name
        d.mkdir(parents=True)
        (d / "metrics.jsonl").write_text('{"step": 0, "loss": 7.0}\n', encoding="utf-8")
        scaled = not name.endswith("unscaled")  # the twin is read from the config, not from the name
        cfg = {"n_layer": n_layer, "n_head": 2, "d_model": 16, "block_size": 16, "max_steps": 3, "scaled": scaled}
        (d / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    with ServerThread(create_app(None, runs_dir=str(tmp_path / "runs"))) as url:
        page.goto(f"{url}/timeline?run=a_unscaled")
        expect(page.get_by_test_id("timeline-run")).to_have_value("a_unscaled")
        # a_scaled has another shape; b_scaled is the one scaled run of a_unscaled's shape, whatever its name
        expect(page.get_by_test_id("timeline-twin")).to_have_value("b_scaled")
        page.goto(f"{url}/timeline?run=b_unscaled")
        expect(page.get_by_test_id("timeline-twin")).to_have_value("b_scaled")
        assert "<unk>" in page.get_by_test_id("timeline-legend").inner_text()
