"""The lookup page's §1.5.3 slip and the workbook page, in headless Chromium (skips without it)."""

from __future__ import annotations

import pytest

from test_web_browser import ServerThread, browser, expect, page  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base(browser):  # noqa: F811
    from attnlab.web.server import create_app
    from attnlab.web.sources import SHIPPED_RUNS

    app = create_app(str(SHIPPED_RUNS / "case" / "small_scaled_s20261014"), runs_dir=str(SHIPPED_RUNS))
    with ServerThread(app) as url:
        yield url


def test_lookup_states_the_slip_with_computed_numbers(page, base):  # noqa: F811
    page.goto(f"{base}/lookup")
    expect(page.get_by_test_id("slip-edited")).to_have_text("[0.845, 0.578]")
    expect(page.get_by_test_id("slip-original")).to_have_text("[1.267, 0.733]")
    page.get_by_test_id("preset-edited").click()
    assert not page.get_by_test_id("toggle-scale").is_checked()
    assert [page.get_by_test_id(f"out-2-{j}").inner_text().strip() for j in range(2)] == ["0.845", "0.578"]


def _result(pg, qid):
    return pg.get_by_test_id(f"{qid}-result")


def test_workbook_lists_every_item_and_opens_answers_after_an_attempt(page, base):  # noqa: F811
    from attnlab import workbook as wb

    page.goto(f"{base}/workbook?sigma=2")
    expect(page.get_by_test_id("item-cp1")).to_be_visible()
    assert page.locator("section.wb-item").count() == len(wb.ids())
    assert page.get_by_test_id("answer-q1").is_hidden()
    assert page.get_by_test_id("open-q1").is_disabled()
    page.get_by_test_id("attempt-q1").fill("让方差回到 1")
    page.get_by_test_id("open-q1").click()
    expect(page.get_by_test_id("answer-q1")).to_contain_text("要的是让方差等于 1")


def test_workbook_computed_questions(page, base):  # noqa: F811
    page.goto(f"{base}/workbook?sigma=2")
    # Q7: a wrong formula is told how far off; the right one passes and says what √d_k does
    page.get_by_test_id("q7-formula").fill("d*s^2")
    page.get_by_test_id("q7-check").click()
    expect(_result(page, "q7")).to_have_attribute("data-ok", "false")
    page.get_by_test_id("q7-formula").fill("d * σ^4")
    page.get_by_test_id("q7-check").click()
    expect(_result(page, "q7")).to_have_attribute("data-ok", "true")
    expect(_result(page, "q7")).to_contain_text("缩放不足")
    assert not page.get_by_test_id("open-q7").is_disabled()
    # Q10: the §1.24 code's w + 1 keys is told apart from the sentence's w keys
    page.get_by_test_id("q10-cond").fill("j <= i && i - j <= w")
    page.get_by_test_id("q10-check").click()
    expect(_result(page, "q10")).to_contain_text("w + 1")
    page.get_by_test_id("q10-cond").fill("j <= i and i - j < w")
    page.get_by_test_id("q10-compute").check()
    page.get_by_test_id("q10-memory").check()
    page.get_by_test_id("q10-check").click()
    expect(_result(page, "q10")).to_have_attribute("data-ok", "true")
    expect(_result(page, "q10")).to_contain_text("32")
    # Q9 from the student's arithmetic; Q3; Q8's row
    page.get_by_test_id("q9-arith").fill("2048^2 * 16 * 24 * 2 / 1e9")
    page.get_by_test_id("q9-check").click()
    expect(_result(page, "q9")).to_have_attribute("data-ok", "true")
    page.get_by_test_id("q3-dk").fill("512")
    page.get_by_test_id("q3-check").click()
    expect(_result(page, "q3")).to_have_attribute("data-ok", "false")
    page.get_by_test_id("q3-dk").fill("64")
    page.get_by_test_id("q3-check").click()
    expect(_result(page, "q3")).to_have_attribute("data-ok", "true")
    import math

    z = [1.2, -0.3, 0.5, 2.0]
    e = [math.exp(x) for x in z]
    p = [x / sum(e) for x in e]
    for j in range(4):
        page.get_by_test_id(f"q8-j{j}").fill(f"{p[1] * ((1 if j == 1 else 0) - p[j]):.5f}")
    page.get_by_test_id("q8-check").click()
    expect(_result(page, "q8")).to_have_attribute("data-ok", "true")
