"""In headless Chromium: runs side by side on the runs page, the timeline's twin chosen again when the
run changes, and every page's state in its link (a link reproduces the view).

Shares the browser and page fixtures of test_web_browser and the trained runs of
test_web_timeline_browser (two tiny runs of one shape, unscaled and scaled).
"""

from __future__ import annotations

import pytest

from test_web_browser import ServerThread, browser, expect, page  # noqa: F401  (fixtures)
from test_web_timeline_browser import runs  # noqa: F401  (fixture)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(runs, browser):  # noqa: F811
    from attnlab.web.server import create_app

    with ServerThread(create_app(None, runs_dir=str(runs))) as u:
        yield u


def test_two_runs_side_by_side_with_their_final_numbers(page, url):  # noqa: F811
    import json

    page.goto(f"{url}/runs?run=case/tiny_unscaled")  # a link naming one run shows that one alone
    page.get_by_test_id("pick-case/tiny_scaled").check()
    expect(page.get_by_test_id("chart-loss").locator("path")).to_have_count(2)
    assert page.get_by_test_id("chart-entropy").locator("path").count() == 2  # one layer each
    for name, scaled in (("case/tiny_unscaled", False), ("case/tiny_scaled", True)):
        row = page.get_by_test_id(f"final-{name}")
        assert ("1/√d_k" in row.inner_text()) == scaled
        final = [json.loads(x)["loss"] for x in open(f"{url_runs[0]}/{name}/metrics.jsonl")][-1]
        assert float(page.get_by_test_id(f"final-loss-{name}").inner_text()) == pytest.approx(final, abs=5e-4)
        # the column names what it shows: a run of N steps ends at step N - 1 (the Every run table says N / N)
        last = [json.loads(x)["step"] for x in open(f"{url_runs[0]}/{name}/metrics.jsonl")][-1]
        assert page.get_by_test_id(f"final-step-{name}").inner_text() == str(last)
    assert "最后一步 last step" in page.get_by_test_id("runs-table").inner_text()
    page.get_by_test_id("metric-val_loss").uncheck()
    page.get_by_test_id("layer").select_option("0")
    link = page.url
    assert "run=case%2Ftiny_unscaled" in link and "layer=0" in link and "metric=" in link
    page.goto(link)  # the link reproduces the view
    expect(page.get_by_test_id("chart-loss").locator("path")).to_have_count(2)
    assert page.get_by_test_id("chart-val-loss").count() == 0
    assert page.get_by_test_id("layer").input_value() == "0"
    assert page.get_by_test_id("pick-case/tiny_scaled").is_checked()


url_runs: list = []


@pytest.fixture(autouse=True)
def _runs_root(runs):  # noqa: F811
    url_runs[:] = [runs]


def test_the_twin_is_chosen_again_when_the_run_changes(page, url):  # noqa: F811
    page.goto(f"{url}/timeline?run=case/tiny_unscaled")
    page.get_by_test_id("twin-map-L0H0").wait_for()
    assert page.get_by_test_id("timeline-twin").input_value() == "case/tiny_scaled"
    page.get_by_test_id("timeline-run").select_option("case/tiny_scaled")
    expect(page.get_by_test_id("timeline-twin")).to_have_value("case/tiny_unscaled")
    page.get_by_test_id("timeline-slider").fill("4")
    link = page.url
    assert "step=6" in link and "twin=case%2Ftiny_unscaled" in link
    page.goto(link)
    page.get_by_test_id("twin-map-L0H0").wait_for()
    expect(page.get_by_test_id("timeline-step")).to_have_attribute("data-step", "6")
    # the first frame in numbers, from the run's own snapshots
    assert "case/tiny_scaled" in page.get_by_test_id("first-frame").inner_text()


def test_a_run_without_a_twin_says_so(page, url, runs):  # noqa: F811
    import json

    lonely = runs / "lonely"
    lonely.mkdir()
    cfg = {"n_layer": 1, "n_head": 2, "d_model": 24, "block_size": 16, "scaled": False, "max_steps": 2}
    (lonely / "config.json").write_text(json.dumps(cfg))
    (lonely / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": 3.0}) + "\n")
    page.goto(f"{url}/timeline?run=case/tiny_unscaled")
    page.get_by_test_id("twin-map-L0H0").wait_for()
    page.get_by_test_id("timeline-run").select_option("lonely")
    expect(page.get_by_test_id("no-twin")).to_contain_text("no twin")
    assert page.get_by_test_id("timeline-twin").input_value() == ""


def test_every_page_keeps_its_state_in_the_link(page, url):  # noqa: F811
    page.goto(f"{url}/lookup")
    page.get_by_test_id("q-0-0").fill("3")
    page.get_by_test_id("toggle-scale").uncheck()
    link = page.url
    page.goto(link)
    assert page.get_by_test_id("q-0-0").input_value() == "3" and not page.get_by_test_id("toggle-scale").is_checked()

    page.goto(f"{url}/exp1-1")
    page.get_by_test_id("dk-slider").fill("8")
    assert "dk=256" in page.url
    page.goto(page.url)
    expect(page.get_by_test_id("dk-slider")).to_have_value("8")

    page.goto(f"{url}/exp1-2")
    page.get_by_test_id("map-L0H0").wait_for()
    page.get_by_test_id("text-input").fill("明月光")
    expect(page.get_by_test_id("tokens")).to_contain_text("3 个 token")
    page.goto(page.url)
    expect(page.get_by_test_id("text-input")).to_have_value("明月光")

    page.goto(f"{url}/next?text=明月&tau=0.5&k=5&seed=7")
    page.get_by_test_id("top-0").wait_for()
    assert (
        page.get_by_test_id("tau-value").inner_text() == "T = 0.50"
        and page.get_by_test_id("top").locator("tbody tr").count() == 5
    )
    assert "seed=7" in page.url and page.get_by_test_id("ids").locator("span").count() == 2
