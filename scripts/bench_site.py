"""Page load of the static site to its first attention map, measured in headless Chromium.

    .venv/bin/python scripts/bench_site.py                 # builds the site into a temporary folder
    .venv/bin/python scripts/bench_site.py --site DIR      # a site built with `attnlab site --out DIR`

Serves the site with Python's http.server on 127.0.0.1 (no network shaping: a local disk, so
this is the browser's own cost: parsing, fetching ~20 MB from localhost, compiling the
WebAssembly runtime, loading the model, one forward pass, drawing) and opens 实验 1-2
``--repeat`` times, each in a fresh browser context (an empty cache), then once more in the
same context (the browser's cache warm). Reported per load: milliseconds from navigation start
(``performance.now()`` in the page) to the first map's canvas, and to switching to the big
unscaled model. Needs Chromium (scripts/ci_system_deps.sh) and playwright (the test extra).

When: after a change to the static site's pages, its vendored runtimes or the shipped ONNX graphs, to
see what a reader's first page load costs.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def serve(folder: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def first_map(page, url: str) -> dict:
    page.goto(f"{url}exp1-2.html")
    page.get_by_test_id("map-L0H0").wait_for(timeout=120_000)
    first = page.evaluate("performance.now()")
    marks = page.evaluate(
        "Object.fromEntries(performance.getEntriesByType('mark').filter((m) => m.name.startsWith('attnlab:'))"
        ".map((m) => [m.name.slice(8), Math.round(m.startTime)]))"
    )
    fetched = page.evaluate(
        "Object.fromEntries(performance.getEntriesByType('resource').filter((e) => /wasm|weights|NotoSans/.test(e.name))"
        ".map((e) => [e.name.split('/').pop(), Math.round(e.responseEnd)]))"
    )
    page.get_by_test_id("run-select").select_option("case/big_unscaled")
    page.get_by_test_id("run-name").filter(has_text="case/big_unscaled").wait_for()
    before = page.evaluate("performance.now()")
    page.evaluate("window.attnlab.attention('举头望明月，低头思故乡。', 'case/big_unscaled')")
    return {
        "first_map_ms": round(first),
        "big_model_first_answer_ms": round(page.evaluate("performance.now()") - before),
        "marks_ms": marks,  # site.js's performance marks, ms since navigation start
        "fetched_ms": fetched,  # when the largest files had arrived
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, help="a built site (default: build one now)")
    ap.add_argument("--repeat", type=int, default=3, help="cold loads (each in a fresh context)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            from attnlab.web.site import build_site

            site = Path(tmp) / "site"
            built = build_site(site)
            print(f"built {built.files} files, {built.bytes / 1e6:.1f} MB in {built.seconds:.1f} s")
        httpd, url = serve(site)
        cold, warm = [], None
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for _ in range(args.repeat):
                context = browser.new_context()
                cold.append(first_map(context.new_page(), url))
                context.close()
            context = browser.new_context()
            first_map(context.new_page(), url)
            warm = first_map(context.new_page(), url)
            context.close()
            browser.close()
        httpd.shutdown()
    ms = [c["first_map_ms"] for c in cold]
    print(json.dumps({"cold": cold, "cold_median_first_map_ms": statistics.median(ms), "warm": warm}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
