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
