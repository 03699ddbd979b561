"""Take the README's screenshots of the playground pages (docs/screenshots/*.png).

Starts the server on a free 127.0.0.1 port in this process, as `attnlab serve` does with no
argument in an empty folder (the shipped case models; experiment 1-2 opens on the small scaled
one, the timeline on the big pair), and drives Debian's Chromium with Playwright:

    .venv/bin/python scripts/screenshots.py [--checkpoint runs/x/ckpt.pt] [--runs-dir runs]

--only site builds `attnlab site` into a temporary folder, serves it with Python's http.server (as
`python -m http.server` does: no attnlab behind it) and takes site-exp1-2.png (the poem, the model
running in the browser) and site-timeline.png.

--only train is a new reader on the static site's 动手训练 / Train page: it opens train.html under
http.server, makes the one click a reader makes (Start: the page's defaults train the big pair,
1/√d_k beside none, until it collapses), takes train-collapsing.png the moment the unscaled
model's layer-0 entropy first falls below 0.01 (the scaled curve beside it) and train-finished.png
when the page stops the pair (the committed case's PyTorch curves overlaid, dashed). It writes the
reader's time from opening the page to that moment, the step times and the load average to
--timing-out (default data/train_reader_time.json). About 10 minutes of one core.

--only next takes the static site's text-to-next-character page (site-next.png) after it has
generated a line of verse in the browser.

--only student-runs takes the curves page of `attnlab serve` on two of a student's runs side by side
(runs-student.png): train them first, e.g. exercise 1's n_head 2 and 4,

    attnlab train --set n_head=2 --set max_steps=150 --out my_runs/h2
    attnlab train --set n_head=4 --set max_steps=150 --out my_runs/h4
    .venv/bin/python scripts/screenshots.py --only student-runs --runs-dir my_runs --student-runs h2,h4

--only timeline takes just the timeline shots (timeline-before/during/after.png, the shipped
big pair unless --run/--twin name others).

--only nocjk takes experiment 1-2 the way a reader without CJK fonts sees it: Chromium
is started with a fontconfig that knows only DejaVu Sans (no CJK font at all), a
simplified-Chinese line is typed (converted to traditional on the page), and one map is
enlarged (exp1-2-simplified-nocjk.png, exp1-2-enlarged.png):

    .venv/bin/python scripts/screenshots.py --only nocjk

When: after a visible change to the playground or the static site, to refresh docs/screenshots/.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def slide_to(page, step: int) -> None:
    """Move the timeline's slider (it walks snapshot indices) to the first snapshot at ``step`` or later."""
    last = int(page.get_by_test_id("timeline-slider").get_attribute("max"))
    for i in range(last + 1):
        page.get_by_test_id("timeline-slider").fill(str(i))
        if int(page.get_by_test_id("timeline-step").get_attribute("data-step")) >= step:
            return


# per run of the train page: records so far, the last layer-0 entropy, the first step it was below 0.01
PAGE_RUNS = """() => window.attnlab.pageRuns().map((r) => {
  const first = r.records.find((x) => x.layers && x.layers[0].weight_entropy < 0.01);
  const last = r.records[r.records.length - 1];
  return { scaling: r.scaling, steps: r.records.length, entropy: last && last.layers ? last.layers[0].weight_entropy : null,
           first_below: first ? first.step : null, ms: r.ms.length ? r.ms.reduce((a, b) => a + b, 0) / r.ms.length : null };
})"""


def train_page(page, base: str, out: Path, timing_out: Path) -> list[Path]:
    """A new reader on the static train page: open, click Start, watch for the collapse (see the docstring)."""
    import json
    import os

    from attnlab.io import write_json

    load_start = os.getloadavg()
    t0 = time.monotonic()
    page.goto(f"{base}/train.html")
    page.get_by_test_id("start").click()  # the page's defaults: the big pair, until it collapses
    clicked = time.monotonic() - t0
    while True:
        runs = page.evaluate(PAGE_RUNS)
        unscaled = [r for r in runs if r["scaling"] == "unscaled"]
        if unscaled and unscaled[0]["first_below"] is not None:
            break
        if time.monotonic() - t0 > 3600:
            raise SystemExit("no collapse within an hour")
        time.sleep(0.25)
    seen = time.monotonic() - t0
    load_seen = os.getloadavg()
    page.wait_for_timeout(500)  # the page redraws its charts at most every 0.4 s
    page.evaluate("document.fonts.ready")
    shots = [out / "train-collapsing.png"]
    page.screenshot(path=str(shots[0]), full_page=True)
    page.get_by_test_id("download-unscaled").wait_for(timeout=3_600_000)  # the page stopped the pair
    finished = time.monotonic() - t0
    runs = page.evaluate(PAGE_RUNS)
    page.wait_for_timeout(300)
    page.evaluate("document.fonts.ready")
    shots.append(out / "train-finished.png")
    page.screenshot(path=str(shots[1]), full_page=True)
    result = {
        "what": "a new reader on the static site (attnlab site under python -m http.server, Chromium): seconds from "
        "opening train.html to the page's first record of the unscaled big model's layer-0 entropy below 0.01, "
        "the page's defaults and one click (Start)",
        "clicks": 1,
        "seconds_to_start_clicked": round(clicked, 1),
        "seconds_to_collapse_seen": round(seen, 1),
        "seconds_to_pair_stopped": round(finished, 1),
        "runs": runs,
        "status": page.get_by_test_id("status").inner_text(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_at_collapse": [round(x, 2) for x in load_seen],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(timing_out, result)
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return shots


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="screenshots of the playground pages")
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--runs-dir", default=None, help="a runs directory listed before the shipped models (default none)")
    ap.add_argument("--case-json", default=str(ROOT / "data" / "ch1_case.json"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument(
        "--only",
        choices=["pages", "timeline", "nocjk", "site", "train", "next", "student-runs"],
        default=None,
        help="only the playground pages, only the timeline, or only experiment 1-2 without CJK fonts "
        "(default: pages and timeline)",
    )
    ap.add_argument("--run", default="shipped:case/big_unscaled", help="timeline run (beside its twin --twin)")
    ap.add_argument("--twin", default="shipped:case/big_scaled")
    ap.add_argument("--text", default="床前明月光，疑是地上霜。举头望明月，低头思故乡。", help="the nocjk shots' input")
    ap.add_argument(
        "--steps-shown", default="0,75,200", help="snapshot steps for the before/during/after shots (default 0,75,200)"
    )
    ap.add_argument("--student-runs", default="h2,h4", help="--only student-runs: the runs (names in --runs-dir)")
    ap.add_argument("--timing-out", default=str(ROOT / "data" / "train_reader_time.json"))
    args = ap.parse_args(argv)

    import uvicorn
    from playwright.sync_api import sync_playwright

    from attnlab.web.server import create_app
    from attnlab.web.sources import Sources

    tmp = tempfile.TemporaryDirectory()
    pages = args.only in (None, "pages")
    runs_dir = args.runs_dir or str(Path(tmp.name) / "runs")  # none of this machine's runs unless asked
    sources = Sources.default(runs_dir, user_roots=False)
    app = create_app(args.checkpoint, runs_dir=runs_dir, case_json=args.case_json, sources=sources)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    if args.only in ("site", "train", "next"):  # the static site, served by a plain file server instead
        import functools
        import http.server

        from attnlab.web.site import build_site

        build_site(Path(tmp.name) / "site")

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a):
                pass

        handler = functools.partial(Quiet, directory=str(Path(tmp.name) / "site"))
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    env = None
    if args.only == "nocjk":  # a machine without CJK fonts: fontconfig sees DejaVu Sans only
        import os
        import shutil

        import matplotlib

        fonts = Path(tmp.name) / "fonts"
        fonts.mkdir()
        shutil.copy(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf", fonts)
        conf = Path(tmp.name) / "fonts.conf"
        conf.write_text(
            '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
            f"<fontconfig><dir>{fonts}</dir><cachedir>{Path(tmp.name) / 'cache'}</cachedir></fontconfig>\n",
            encoding="utf-8",
        )
        env = {**os.environ, "FONTCONFIG_FILE": str(conf)}

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS, env=env)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        shots = []

        def shot(name: str) -> None:
            page.evaluate("document.fonts.ready")
            path = out / f"{name}.png"
            page.screenshot(path=str(path), full_page=True)
            shots.append(path)

        if args.only == "nocjk":
            page.set_viewport_size({"width": 1280, "height": 1400})  # down to the first layer's maps
            page.goto(f"{base}/exp1-2")
            page.get_by_test_id("map-L0H0").wait_for()
            page.get_by_test_id("text-input").fill(args.text)
            page.get_by_test_id("run-attention").click()
            page.get_by_test_id("converted-text").wait_for()
            page.wait_for_timeout(300)
            page.evaluate("document.fonts.ready")
            page.screenshot(path=str(out / "exp1-2-simplified-nocjk.png"), full_page=False)
            shots.append(out / "exp1-2-simplified-nocjk.png")
            page.set_viewport_size({"width": 1280, "height": 900})
            page.get_by_test_id("map-L0H1").click()
            page.get_by_test_id("map-large").wait_for()
            page.wait_for_timeout(200)
            page.screenshot(path=str(out / "exp1-2-enlarged.png"), full_page=False)
            shots.append(out / "exp1-2-enlarged.png")
        if args.only == "site":
            page.goto(f"{base}/exp1-2.html")
            page.get_by_test_id("map-L0H0").wait_for(timeout=60_000)
            page.get_by_test_id("text-input").fill(args.text)
            page.get_by_test_id("run-attention").click()
            page.get_by_test_id("converted-text").wait_for()
            page.wait_for_timeout(300)
            shot("site-exp1-2")
            page.goto(f"{base}/timeline.html?run=case/big_unscaled&twin=case/big_scaled")
            page.get_by_test_id("twin-map-L0H0").wait_for(timeout=60_000)
            slide_to(page, 200)  # the collapse has happened
            page.wait_for_timeout(300)
            shot("site-timeline")
        if args.only == "next":
            page.goto(f"{base}/next.html")
            page.get_by_test_id("top-0").wait_for(timeout=60_000)
            page.get_by_test_id("generate").click()
            page.wait_for_function(
                "() => document.querySelector('[data-testid=verse]').dataset.generated !== undefined", timeout=120_000
            )
            page.wait_for_timeout(300)
            shot("site-next")
        if args.only == "student-runs":
            names = args.student_runs.split(",")
            page.goto(f"{base}/runs?" + "&".join(f"run={n}" for n in names))
            page.get_by_test_id("chart-loss").wait_for()
            page.wait_for_timeout(500)
            shot("runs-student")
        if args.only == "train":
            shots += train_page(page, base, out, Path(args.timing_out))
        if args.only in (None, "timeline"):
            steps = [int(x) for x in args.steps_shown.split(",")]
            page.goto(f"{base}/timeline?run={args.run}&twin={args.twin}")
            page.get_by_test_id("twin-map-L0H0").wait_for()
            page.evaluate('document.fonts.load(\'13px "AttnlabCJK"\', "层头")')
            for label, want in zip(("before", "during", "after"), steps):
                slide_to(page, want)
                page.wait_for_timeout(200)
                shot(f"timeline-{label}")
        if pages:
            page.goto(f"{base}/")
            shot("index")
            page.goto(f"{base}/lookup")
            page.get_by_test_id("preset-book").click()
            shot("lookup")
            page.goto(f"{base}/exp1-1")
            page.get_by_test_id("dk-slider").fill("8")
            shot("exp1-1")
            page.goto(f"{base}/exp1-2")
            page.get_by_test_id("map-L0H0").wait_for()
            page.get_by_test_id("text-input").fill(args.text)
            page.get_by_test_id("run-attention").click()
            page.get_by_test_id("converted-text").wait_for()
            page.wait_for_timeout(300)
            shot("exp1-2")
            page.goto(f"{base}/runs")
            page.get_by_test_id("chart-loss").wait_for()
            shot("runs")
        browser.close()

    server.should_exit = True
    thread.join(timeout=5)
    tmp.cleanup()
    for path in shots:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
