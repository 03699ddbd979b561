"""What a reader meets first on `attnlab serve`: the home page lists every page the static site has, and
the lab book and the case report carry the way back home."""

import re

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.web.server import create_app  # noqa: E402
from attnlab.web.site import CASE_PAGE, SITE_PAGES  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("home")
    for name in ("book", "case"):
        (root / f"{name}.html").write_text(
            f"<!doctype html><html><head><title>{name}</title></head><body><h1>{name}</h1>"
        )
    app = create_app(runs_dir=str(root / "runs"), book_html=str(root / "book.html"), case_html=str(root / "case.html"))
    return TestClient(app, base_url="http://127.0.0.1")


def test_serve_s_home_lists_every_page_of_the_site_s(client):
    home = client.get("/").text
    listed = set(re.findall(r'<li><a href="(/[^"]*)"', home))
    assert listed == set(SITE_PAGES) - {"/"} | {"/case"}, listed
    assert CASE_PAGE == "case.html"  # the site's name of /case


@pytest.mark.parametrize("route", ["/book", "/case"])
def test_the_reports_carry_the_way_back(client, route):
    r = client.get(route)
    assert r.status_code == 200
    nav = re.search(r'<body><nav class="attnlab-back".*?</nav>', r.text).group(0)
    assert '<a href="/">' in nav and '<a href="/next">' in nav and '<a href="/runs">' in nav
    assert '<link rel="icon" href="data:,">' in r.text  # no request for /favicon.ico


def test_a_missing_report_is_a_page_with_the_command(tmp_path):
    c = TestClient(create_app(runs_dir=str(tmp_path), case_html=str(tmp_path / "no.html")), base_url="http://127.0.0.1")
    r = c.get("/case")
    assert r.status_code == 404 and "attnlab case" in r.text and 'href="/"' in r.text
