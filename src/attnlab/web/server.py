"""The local attention playground: a small FastAPI app and the ``serve`` subcommand.

The pages live in ``static/`` as plain HTML/JS/CSS (no build step, nothing
fetched from another host):

* ``/lookup``  soft lookup of §1.5.3, computed entirely in the browser;
* ``/exp1-1``  experiment 1-1 (random q, k; scaled vs unscaled), in the browser;
* ``/exp1-2``  experiment 1-2, attention maps of the loaded checkpoint, via
  ``POST /api/attention`` (computed in float64 from the checkpoint's float32 weights: a more
  exact evaluation of the same model, equal to the static site's in-browser maps);
* ``/runs``    any listed runs (``GET /api/runs/<run>``) and the case JSON's traces side by side on
  shared axes with a table of final numbers, and a live table of every run (``GET /api/live``),
  refreshed while runs train;
* ``/timeline`` attention snapshots of a run beside its twin (the run of the same shape and seed with
  the other scaling, ``/api/live``'s ``twin``), with its curves (``GET /api/timeline/<run>``; see
  ``attnlab.web.timeline``);
* ``/next``    text → next character, the chapter's opening five steps (``POST /api/next``, see
  ``attnlab.web.nextchar``);
* ``/book`` and ``/case`` the lab book and the case report, with a way back home on top.

Every page keeps its state in its URL (``history.replaceState``), read on load: a link reproduces the view.

Every figure has PNG/SVG buttons (``static/export.js``); ``POST /api/glyphs``
gives the glyph outlines that make an exported SVG independent of fonts.

What the server deliberately does not do: take a file path from a request.
The checkpoint is chosen when the server starts; runs are addressed by the
name of a directory directly inside ``runs_dir`` and nothing else (symlinks are
refused at every level below it: every file there is opened through
``attnlab.web.runfiles.RunsRoot``, never following a link, and size-bounded;
a damaged file is shown per run, never a lost page). It answers only requests whose ``Host`` is its
own (127.0.0.1, localhost or ``--host``, with its port), so a page on another
site cannot reach it through DNS rebinding. Every
request body is size-limited and validated by a pydantic model, and every
error comes back as ``{"detail": "<message>"}`` with a 4xx status, never a
traceback.
"""

from __future__ import annotations

import collections
import json
import math
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..chinese import converted_line, prepare, unknown_line
from ..config import SCALINGS
from ..errors import AttnlabError
from ..train import METRICS_FILE, parse_metrics
from .runfiles import MAX_RUN_NAME, RunsRoot, valid_run_name  # noqa: F401  (valid_run_name: re-exported)
from .shipped import DamagedShippedFile
from .sources import Sources

STATIC = Path(__file__).parent / "static"
PAGES = {
    "/": "index.html",
    "/lookup": "lookup.html",
    "/exp1-1": "exp11.html",
    "/exp1-2": "exp12.html",
    "/runs": "runs.html",
    "/timeline": "timeline.html",
    "/workbook": "workbook.html",
    "/next": "next.html",
    "/train": "train.html",
}
# the header of every page, in one place: (route, 中文, English)
NAV = (
    ("/lookup", "软查表", "Soft lookup"),
    ("/exp1-1", "实验 1-1", ""),
    ("/exp1-2", "实验 1-2", ""),
    ("/runs", "训练曲线", "Runs"),
    ("/timeline", "时间线", "Timeline"),
    ("/next", "下一个字", "Next character"),
    ("/train", "动手训练", "Train"),
    ("/book", "全章实验", "Lab book"),
    ("/workbook", "练习册", "Workbook"),
    ("/case", "案例报告", "Case report"),
)
HEADER_MARK = "<!--attnlab:header-->"


def page_header(route: str) -> str:
    """The site header with ``route`` marked as the current page."""
    links = []
    for href, zh, en in NAV:
        here = ' class="here"' if href == route else ""
        label = zh + (f' <span class="en">{en}</span>' if en else "")
        links.append(f'    <a{here} href="{href}">{label}</a>')
    nav = "\n".join(links)
    return f'<header class="top">\n  <a class="brand" href="/">attnlab 注意力实验台</a>\n  <nav>\n{nav}\n  </nav>\n</header>'


def report_nav(href: Callable[[str], str] = str) -> str:
    """The way back from a report page (lab book, case report), which has no site header: a small bar of
    links, styled inline (the reports allow inline styles only); ``href`` maps a route to a link."""
    style = (
        "font-family:sans-serif;font-size:14px;padding:8px 16px;background:#fff;"
        "border-bottom:1px solid #d6dae1;margin:0 0 12px"
    )
    links = " · ".join(
        f'<a href="{href(r)}">{zh}{f" <span lang=en>{en}</span>" if en else ""}</a>' for r, zh, en in NAV
    )
    return f'<nav class="attnlab-back" style="{style}"><a href="{href("/")}">← attnlab 注意力实验台</a> · {links}</nav>'


def with_report_nav(html: str, href: Callable[[str], str] = str) -> str:
    """A report's HTML with :func:`report_nav` at the top of its body and an empty icon in its head (as
    every page has: no request for /favicon.ico, which a static host answers 404)."""
    import re

    m = re.search(r"<body\b[^>]*>", html, re.I)
    html = html[: m.end()] + report_nav(href) + html[m.end() :] if m else report_nav(href) + html
    if 'rel="icon"' not in html:
        m = re.search(r"<head\b[^>]*>", html, re.I)
        if m:
            html = html[: m.end()] + '<link rel="icon" href="data:,">' + html[m.end() :]
    return html


MAX_BODY_BYTES = 16 * 1024  # a request body larger than this is refused before parsing
MAX_TEXT_CHARS = 2048  # hard cap; the real limit is the checkpoint's block_size
MAX_POINTS = 2000  # curves are thinned to at most this many points
MAX_METRICS_LINE = 1 << 20  # a longer metrics.jsonl line is skipped as malformed
MAX_LAYERS = 256  # a row with more layers than this is malformed
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")  # names a local browser uses for this machine
LAYER_KEYS = ("weight_entropy", "jacobian_fro", "logit_std", "q_std", "k_std")
NO_CHECKPOINT_HINT = (
    "没有加载模型：运行目录（--runs-dir）里没有带 ckpt.pt 的运行。先训练一个，"
    "或用 `attnlab serve --checkpoint runs/<名字>/ckpt.pt` 启动。 "
    "No checkpoint loaded: no run with a ckpt.pt under --runs-dir; train one, or start the server with "
    "`attnlab serve --checkpoint runs/<name>/ckpt.pt`."
)
# The pages only ever talk to the server that served them.
BOOK_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
CSP = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
# cross-origin isolation (every page's resources are this server's own): the train page's WebAssembly
# may then use threads (SharedArrayBuffer)
ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}


class ModelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    run: str = Field(max_length=4 * MAX_RUN_NAME)


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    run: str | None = Field(default=None, max_length=4 * MAX_RUN_NAME)  # the page's model; None: the default


@dataclass
class Loaded:
    """A checkpoint ready to answer: the model, its tokenizer and config, and the run it names."""

    path: str
    model: Any
    tok: Any
    cfg: Any
    head_metrics: Callable[[Any], dict]
    run: str = ""  # the run folder as the page names it (case/small_scaled_s20261014)
    step: int | None = None
    exact: Any = field(default=None, repr=False, compare=False)  # the float64 copy, once asked for

    def float64(self) -> Any:
        """The model in float64, made once per loaded model (callers hold the server's lock): the
        same float32 weights, widened exactly, evaluated more exactly. ``/api/attention`` runs this
        copy so that its maps are the static site's (whose ONNX graph computes in float64 too) to
        ~1e-8 even where a saturated softmax turns float32 rounding into ~3e-4 changes of a weight;
        training and every diagnostic keep the float32 model."""
        if self.exact is None:
            import copy

            self.exact = copy.deepcopy(self.model).double().eval()
        return self.exact


CHECKPOINT_FILE = "ckpt.pt"
DEFAULT_RUN = "case/small_scaled_s20261014"  # the case's small scaled model, the chapter's own
MAX_CHECKPOINT_BYTES = 4 * 2**30  # a ckpt.pt larger than this is not loaded by the server
MAX_MODELS = 8  # models kept loaded at once (each page chooses its own; the least recently used goes)


def run_label(path: str | Path, runs_root: Path) -> str:
    """The run a checkpoint file belongs to, relative to runs_root when inside it (never just "ckpt.pt")."""
    folder = Path(path).resolve().parent
    try:
        return folder.relative_to(runs_root.resolve()).as_posix()
    except ValueError:
        return folder.name or str(folder)


def _load(path: str, runs_root: Path = Path("runs"), run: str | None = None, source=None) -> Loaded:
    """Load a checkpoint (torch is imported only when one is asked for). With ``source`` ((RunsRoot, parts)
    of its folder) the file is opened through the runs root: no link is followed, a swapped folder is refused."""
    from attnlab.checkpoint import from_payload, read_checkpoint
    from attnlab.diagnostics import head_metrics

    if source is None:
        payload = read_checkpoint(path)
    else:
        root, parts = source
        again = (
            " — 这是随包附带的模型，重新安装 attnlab 即可恢复 / a model that ships with attnlab: reinstall it "
            "(pip install --force-reinstall attnlab, or git checkout src/attnlab/data in a clone)"
            if (run or "").startswith("shipped:")
            else ""
        )
        try:
            with root.open((*parts, CHECKPOINT_FILE), MAX_CHECKPOINT_BYTES) as f:
                payload = read_checkpoint(run or path, fileobj=f)
        except DamagedShippedFile as e:  # says itself how to restore the file
            raise AttnlabError(f"{run or path}: {e}") from None
        except OSError as e:
            raise AttnlabError(f"{run or path}: ckpt.pt cannot be opened ({e}){again}") from None
        except AttnlabError as e:
            raise AttnlabError(f"{e}{again}") from None
    model, tok, cfg = from_payload(payload, run or path)
    model.eval()
    step = payload.get("step") if isinstance(payload.get("step"), int) else None
    return Loaded(str(path), model, tok, cfg, head_metrics, run or run_label(path, runs_root), step)


def checkpoint_runs(root: Path) -> dict[str, Path]:
    """{name: ckpt.pt} of every run folder under root (up to 3 levels) holding a checkpoint.

    Names are the folders' relative paths ("mine", "case/small_scaled_s20261014"); every part
    is a plain name (runfiles.valid_run_name) and no symlink is followed, so a name from a request
    is only ever looked up here, never joined onto a path (see :class:`attnlab.web.sources.Sources`).
    """
    found = Sources.single(root).listing().checkpoints
    return {name: Path(src.path, *parts, CHECKPOINT_FILE) for name, (src, parts) in found.items()}


def _root_parts(where) -> tuple[RunsRoot, tuple[str, ...]]:
    src, parts = where
    return src.root, parts


def default_run(names: Iterable[str]) -> str | None:
    """The run the playground shows first: the case's small scaled model (the user's own case in
    runs/, then make case's in mine/, then the one that ships with attnlab, then the quick try's),
    else another small scaled one of the case, else the first run of the user's, else None."""
    names = list(names)
    for name in (DEFAULT_RUN, f"mine:{DEFAULT_RUN}", f"shipped:{DEFAULT_RUN}", f"quick:{DEFAULT_RUN}"):
        if name in names:
            return name
    case = sorted(n for n in names if n.split(":", 1)[-1].startswith("case/small_scaled"))
    if case:
        return case[0]
    return names[0] if names else None


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``max_bytes`` before anything parses them.

    The whole (small) body is buffered and replayed, so a chunked upload
    without Content-Length is capped too.
    """

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        too_big = JSONResponse({"detail": f"request body over {self.max_bytes} bytes"}, status_code=413)
        if declared is not None:
            if not declared.isdigit():
                return await JSONResponse({"detail": "bad Content-Length"}, status_code=400)(scope, receive, send)
            if int(declared) > self.max_bytes:
                return await too_big(scope, receive, send)
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                return await too_big(scope, receive, send)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """The Host headers ``attnlab serve --host HOST --port PORT`` answers:
    ``127.0.0.1:PORT``, ``localhost:PORT`` and ``HOST:PORT`` (IPv6 in brackets)."""

    def name(h: str) -> str:
        h = h.strip().lower()
        return f"[{h}]" if ":" in h and not h.startswith("[") else h

    return sorted({f"{name(h)}:{port}" for h in ("127.0.0.1", "localhost", host, *extra)})


class HostCheck:
    """ASGI middleware against DNS rebinding: a page on another site whose name
    resolves to 127.0.0.1 reaches this server with its own name in ``Host``;
    such requests get 421 before any route runs.

    ``hosts``: exact ``name:port`` values; None accepts the loopback names on any
    port (for an app built in a script or a test).
    """

    def __init__(self, app, hosts: Iterable[str] | None):
        self.app = app
        self.hosts = None if hosts is None else {h.lower() for h in hosts}

    def _ok(self, host: str) -> bool:
        host = host.strip().lower()
        if self.hosts is not None:
            return host in self.hosts
        name, sep, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not sep or not port.isdigit():
            name = host
        return name in LOOPBACK

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        values = [v for k, v in scope.get("headers") or [] if k == b"host"]
        if len(values) != 1:
            response = JSONResponse({"detail": "request needs exactly one Host header"}, status_code=400)
            return await response(scope, receive, send)
        host = values[0].decode("latin-1")
        if not self._ok(host):
            response = JSONResponse(
                {"detail": f"this server answers only requests for {', '.join(sorted(self.hosts or LOOPBACK))}"},
                status_code=421,
            )
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def _finite(x: float, nd: int = 4) -> float | None:
    x = float(x)
    return round(x, nd) if math.isfinite(x) else None


def _thin(n: int) -> list[int]:
    """Indices of at most MAX_POINTS evenly spread rows, always keeping the last."""
    if n <= MAX_POINTS:
        return list(range(n))
    step = n / MAX_POINTS
    idx = sorted({int(i * step) for i in range(MAX_POINTS)} | {n - 1})
    return idx


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _row_ok(r: dict) -> bool:
    """A metrics row the curves can use: a finite numeric step and a layers list (or none) of sane length."""
    layers = r.get("layers")
    return _number(r["step"]) and (layers is None or (isinstance(layers, list) and len(layers) <= MAX_LAYERS))


def metric_rows(f) -> tuple[list[dict], int]:
    """The usable rows of a metrics.jsonl opened in binary, and how many lines were skipped as malformed
    (not JSON, nested too deeply, over MAX_METRICS_LINE bytes, a non-numeric step, ``"layers": 5``...)."""
    rows, bad = [], 0
    while line := f.readline(MAX_METRICS_LINE + 1):
        if len(line) > MAX_METRICS_LINE:
            bad += 1
            while line and not line.endswith(b"\n"):  # the rest of the overlong line
                line = f.readline(MAX_METRICS_LINE)
            continue
        try:
            got, skipped = parse_metrics([line.decode("utf-8", errors="replace")])
        except (RecursionError, OverflowError):
            got, skipped = [], 1
        ok = [r for r in got if _row_ok(r)]
        rows += ok
        bad += skipped + len(got) - len(ok)
    return rows, bad


def read_metrics(root: RunsRoot, rel) -> dict:
    """Columns of one run's metrics.jsonl (opened without following links); malformed lines are
    counted and skipped, never the run's curves. Raises OSError when the file cannot be read."""
    from .timeline import MAX_METRICS_BYTES

    with root.open(rel, MAX_METRICS_BYTES) as f:
        rows, bad = metric_rows(f)
    val = [(r["step"], r["val_loss"]) for r in rows if isinstance(r.get("val_loss"), (int, float))]
    keep = [rows[i] for i in _thin(len(rows))]
    n_layer = max((len(r.get("layers") or []) for r in keep), default=0)

    def num(v):
        return _finite(v, 6) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    layers = []
    for li in range(n_layer):
        cols = {k: [] for k in LAYER_KEYS}
        for r in keep:
            lay = r.get("layers") or []
            d = lay[li] if li < len(lay) and isinstance(lay[li], dict) else {}
            for k in LAYER_KEYS:
                cols[k].append(num(d.get(k)))
        layers.append(cols)
    return {
        "step": [r["step"] for r in keep],
        "loss": [num(r["loss"]) for r in keep],
        "lr": [num(r.get("lr")) for r in keep],
        "grad_norm": [num(r.get("grad_norm")) for r in keep],
        "val_step": [s for s, _ in val],
        "val_loss": [num(v) for _, v in val],
        "layers": layers,
        "rows": len(rows),
        "skipped_lines": bad,
    }


def create_app(
    checkpoint: str | None = None,
    runs_dir: str = "runs",
    case_json: str = "data/ch1_case.json",
    hosts: Iterable[str] | None = None,
    book_html: str = "reports/lab_book.html",
    sources: Sources | None = None,
    case_html: str = "reports/ch1_case.html",
) -> FastAPI:
    """Build the app. A checkpoint that cannot be loaded raises CheckpointError here.

    hosts: the Host headers answered (see :func:`allowed_hosts`); None = loopback names only.
    sources: the run roots listed (:mod:`attnlab.web.sources`); None = ``runs_dir`` alone.
    Each page chooses its own model (``run`` in ``POST /api/attention``): one reader choosing a model
    never switches it for another; ``POST /api/model`` only describes a run (loading it).
    """
    sources = sources if sources is not None else Sources.single(runs_dir)
    if checkpoint and Path(checkpoint).is_dir():  # a run folder names its checkpoint
        checkpoint = str(Path(checkpoint) / CHECKPOINT_FILE)
    models: collections.OrderedDict[str, Loaded] = collections.OrderedDict()  # run -> loaded, LRU
    state: dict[str, Any] = {"default": None, "problem": None}
    started: dict[str, Loaded] = {}  # the --checkpoint run stays choosable, even outside every root
    if checkpoint:
        first = _load(checkpoint, Path(runs_dir))
        started[first.run] = first
        state["default"] = first.run
    else:
        found = sources.listing().checkpoints
        pick = default_run(found)
        if pick is not None:
            try:
                models[pick] = _load(pick, Path(runs_dir), pick, _root_parts(found[pick]))
                state["default"] = pick
            except AttnlabError as e:  # a broken run folder must not stop the server
                state["problem"] = str(e)
    lock = threading.Lock()  # one forward pass at a time; guards the model cache too

    def model_of(name: str | None) -> Loaded:
        """The loaded model of run ``name`` (the default when None), loading it when it is listed."""
        name = name or state["default"]
        if name is None:
            raise HTTPException(409, NO_CHECKPOINT_HINT)
        if name in started:
            return started[name]
        with lock:
            if name in models:
                models.move_to_end(name)
                return models[name]
        where = sources.checkpoint(name)
        if where is None:
            raise HTTPException(
                404, f"没有这个运行 / no run with a checkpoint named {name[:80]!r} in the runs directories"
            )
        try:
            loaded = _load(name, Path(runs_dir), name, _root_parts(where))
        except AttnlabError as e:
            raise HTTPException(422, str(e)) from None
        with lock:
            models[name] = loaded
            while len(models) > MAX_MODELS:
                models.popitem(last=False)
        return loaded

    case_path = Path(case_json)
    lock = threading.Lock()  # one forward pass at a time: the model is shared

    app = FastAPI(title="attnlab playground", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.model_run = state["default"]  # for serve's start line
    app.state.model_problem = state["problem"]
    app.state.sources = sources  # serve's start lines name the folders it skipped (a damaged browser run)

    @app.middleware("http")
    async def harden(request: Request, call_next):
        if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in request.scope["path"]):  # a route's `$` ignores a %0A
            response = JSONResponse({"detail": "路径里有控制字符 / a control character in the path"}, status_code=404)
        else:
            response = await call_next(request)
        if "content-security-policy" not in response.headers:  # /book sets its own, stricter one
            response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers.update(ISOLATION)
        return response

    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    app.add_middleware(HostCheck, hosts=hosts)  # outermost: runs first

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError):
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
        return JSONResponse({"detail": "invalid request: " + "; ".join(parts)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "error"
        return JSONResponse({"detail": detail}, status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception):
        return JSONResponse({"detail": f"internal error ({type(exc).__name__})"}, status_code=500)

    # ------------------------------------------------------------------ pages
    def page(route: str, name: str):
        html = (STATIC / name).read_text(encoding="utf-8").replace(HEADER_MARK, page_header(route), 1)

        async def serve_page():
            return HTMLResponse(html)

        return serve_page

    for route, name in PAGES.items():
        app.add_api_route(route, page(route, name), methods=["GET", "HEAD"], include_in_schema=False)
    app.mount("/static/vendor", StaticFiles(directory=STATIC.parent / "vendor"), name="vendor")
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    def report_page(file: str, zh_name: str, en_name: str, command: str) -> HTMLResponse:
        # A self-contained report (inline CSS, data: images and font, no script) with the way back on top.
        # A missing or unreadable one is a page that says so (a reader followed a link), not raw JSON.
        path = Path(file)
        if not path.is_file():
            return book_problem(
                404,
                f"还没有{zh_name}：先运行 `{command}`（或 `attnlab report` 从提交的数据重写）。",
                f"No {en_name} yet: run `{command}` (or `attnlab report` to rewrite it from the committed data).",
            )
        try:
            html = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = "它不是 UTF-8 文本 it is not UTF-8 text" if isinstance(e, UnicodeDecodeError) else e.strerror
            return book_problem(
                422,
                f"{zh_name}文件无法读取（{why}）：重新运行 `{command}`。",
                f"The {en_name} cannot be read ({why}): run `{command}` again.",
            )
        return HTMLResponse(with_report_nav(html), headers={"Content-Security-Policy": BOOK_CSP})

    @app.get("/book", include_in_schema=False)
    def lab_book():
        return report_page(book_html, "全章实验", "lab book", "attnlab book --render")

    @app.get("/case", include_in_schema=False)
    def case_report():
        return report_page(case_html, "案例报告", "case report", "attnlab case")

    def book_problem(status: int, zh: str, en: str) -> HTMLResponse:
        import html as _html

        body = (
            '<!doctype html><html lang="zh"><meta charset="utf-8"><link rel="icon" href="data:,"><title>attnlab</title>'
            f'<body style="font-family:sans-serif;max-width:40em;margin:3em auto"><p>{_html.escape(zh)}</p>'
            f'<p lang="en">{_html.escape(en)}</p><p><a href="/">← attnlab</a></p></body></html>'
        )
        return HTMLResponse(body, status_code=status, headers={"Content-Security-Policy": BOOK_CSP})

    # -------------------------------------------------------------------- api
    def info_payload(loaded: Loaded | None) -> dict:
        listing = sources.listing()  # once per answer: each call checks every folder's time
        runs = list(dict.fromkeys([*started, *listing.checkpoints]))
        groups = sources.labels()
        extra = {"groups": groups, **sources.notes(listing)}
        if loaded is None:
            hint = NO_CHECKPOINT_HINT if not state["problem"] else f"{state['problem']} {NO_CHECKPOINT_HINT}"
            return {"checkpoint": None, "hint": hint, "runs": runs, **extra}
        cfg = loaded.cfg
        return {
            "checkpoint": loaded.run,
            "run": loaded.run,
            "default": state["default"],
            "step": loaded.step,
            "runs": runs,
            "block_size": cfg.block_size,
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
            "d_model": cfg.d_model,
            "scaled": getattr(cfg, "scaled", None),
            "vocab_size": len(loaded.tok.itos),
            **extra,
        }

    @app.get("/api/info")
    def info() -> dict:
        return info_payload(model_of(None) if state["default"] else None)

    @app.post("/api/model")
    def choose_model(req: ModelRequest) -> dict:
        # A description of the run the page chose; the server's default and other readers' pages stay
        # as they are. Only a listed run: a name is looked up, never joined onto a path.
        return info_payload(model_of(req.run))

    def encoded(typed_text: str, loaded: Loaded):
        """(prepare's result, ids, tokens) of a text for a model; a text longer than block_size is refused."""
        prep = prepare(typed_text, loaded.tok.stoi)  # simplified -> traditional where the vocabulary needs it
        text = prep.converted
        block = loaded.cfg.block_size
        ids = loaded.tok.encode(text)
        if len(ids) > block:
            raise HTTPException(
                422,
                f"文本有 {len(ids)} 个字，超过模型的 block_size={block}。 "
                f"The text has {len(ids)} tokens, more than the model's block_size={block}.",
            )
        itos = loaded.tok.itos
        unk = 1
        chars = list(text) if len(text) == len(ids) else [itos[i] for i in ids]
        typed = list(typed_text) if len(typed_text) == len(chars) else chars
        tokens = [
            {"text": "<unk>" if i == unk else itos[i], "char": c, "typed": t, "unk": i == unk}
            for i, c, t in zip(ids, chars, typed)
        ]
        return prep, ids, tokens

    @app.post("/api/attention")
    def attention(req: AttentionRequest) -> dict:
        if not req.text.strip():
            raise HTTPException(422, "文本为空，请输入至少一个字。 The text is empty: type at least one character.")
        loaded = model_of(req.run)
        prep, ids, tokens = encoded(req.text, loaded)
        text, block = prep.converted, loaded.cfg.block_size
        import torch  # only reached with a checkpoint, which needs torch anyway

        device = next(loaded.model.parameters()).device
        idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
        with lock, torch.no_grad():
            # float64: a more exact evaluation of the same float32 weights (Loaded.float64)
            patterns = loaded.float64().attention_patterns(idx)  # n_layer x (1, nh, T, T)
            layers = []
            for li, p in enumerate(patterns):
                p = p.cpu()
                with warnings.catch_warnings():  # one-token text: std over nothing
                    warnings.simplefilter("ignore", UserWarning)
                    m = loaded.head_metrics(p)
                heads = []
                for h in range(p.shape[1]):
                    heads.append(
                        {
                            "weights": [[_finite(x) for x in row] for row in p[0, h].tolist()],
                            "metrics": {k: _finite(m[k][h]) for k in ("entropy", "diag", "prev", "distance")},
                        }
                    )
                layers.append({"layer": li, "heads": heads})
        return {
            "run": loaded.run,
            "step": loaded.step,
            "tokens": tokens,
            "n_unk": sum(t["unk"] for t in tokens),
            "unknown": prep.unknown,
            "unknown_line": unknown_line(prep),
            "converted": prep.was_converted,
            "converted_text": text,
            "converted_line": converted_line(prep),
            "block_size": block,
            "layers": layers,
        }

    @app.post("/api/next")
    def next_character(req: AttentionRequest) -> dict:
        # the /next page: the text's path to the next character's logits (attnlab.web.nextchar), float64
        from .nextchar import next_payload

        if not req.text.strip():
            raise HTTPException(422, "文本为空，请输入至少一个字。 The text is empty: type at least one character.")
        loaded = model_of(req.run)
        prep, ids, tokens = encoded(req.text, loaded)
        cfg = loaded.cfg
        with lock:
            path = next_payload(loaded.float64(), cfg, ids)
        return {
            "run": loaded.run,
            "step": loaded.step,
            "block_size": cfg.block_size,
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
            "d_model": cfg.d_model,
            "scaling": SCALINGS[cfg.scaled],
            "tokens": [{**t, "id": i} for t, i in zip(tokens, ids)],
            "n_unk": sum(t["unk"] for t in tokens),
            "unknown_line": unknown_line(prep),
            "converted_line": converted_line(prep),
            "vocab": list(loaded.tok.itos),
            **path,
        }

    @app.get("/api/runs")
    def runs() -> dict:
        # run folders directly in a run root (symlinks refused at every level below it)
        listing = sources.listing()
        return {"runs": [n for n, (_, parts) in listing.runs.items() if len(parts) == 1], **sources.notes(listing)}

    @app.get("/api/runs/{name}")
    def run_metrics(name: str) -> dict:
        # Only names that were listed are served (one or two parts: "tiny", "shipped:case/big_unscaled"),
        # looked up, never joined onto a path: no "..", no symlinks.
        from .timeline import run_sinks

        gone = HTTPException(404, f"no run named {name[:80]!r} in the runs directories")
        where = sources.resolve(name) if len(name) <= 4 * MAX_RUN_NAME else None
        if where is None:
            raise gone
        root, parts = _root_parts(where)
        try:
            metrics = read_metrics(root, (*parts, METRICS_FILE))
        except OSError as e:
            if not root.is_dir(parts):
                sources.forget()
                raise gone from None
            raise HTTPException(
                422, f"训练曲线文件损坏，无法读取。 metrics.jsonl of {name[:80]!r} cannot be read: {e}"
            ) from None
        return {"name": name, **metrics, "sinks": run_sinks(root, parts)}

    @app.get("/api/runs/{top}/{sub}")
    def nested_run_metrics(top: str, sub: str) -> dict:  # a run one folder down (case/big_unscaled)
        return run_metrics(f"{top}/{sub}")

    @app.get("/api/case")
    def case() -> dict:
        if not case_path.is_file():
            raise HTTPException(
                404, "还没有案例数据：先运行 `attnlab case`。 No case data yet: run `attnlab case` first."
            )
        try:
            data = json.loads(case_path.read_text(encoding="utf-8"))
            pairs = data["pairs"]
            assert isinstance(pairs, dict)
        except (OSError, ValueError, KeyError, TypeError, AssertionError, RecursionError):
            raise HTTPException(422, "案例文件无法解析。 The case file could not be parsed.") from None
        return {"pairs": pairs}

    add_timeline_routes(app, sources)
    from .trainroutes import add_train_routes

    add_train_routes(app)

    @app.api_route("/api/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
    def unknown_api(rest: str):
        raise HTTPException(404, "unknown API endpoint")

    return app


# ------------------------------------------------------------- timeline, live, export
class GlyphRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(max_length=4096)


def add_timeline_routes(app: FastAPI, sources: Sources) -> None:
    """/api/live (runs and their state), /api/timeline/<run> (curves + snapshots), /api/glyphs.

    Runs may sit one level down (the case's runs/case/big_unscaled) and in any run root
    (``shipped:case/big_unscaled``); a name is served only when it is one of the listed runs.
    """
    from . import timeline as tl

    @app.get("/api/live")
    def live() -> dict:
        listing = sources.listing()
        out = tl.list_runs_of((name, src.root, parts) for name, (src, parts) in listing.runs.items())
        return {"runs": out, **sources.notes(listing)}

    @app.get("/api/timeline/{name:path}")
    def timeline(name: str) -> dict:
        where = sources.resolve(name) if len(name) <= 4 * MAX_RUN_NAME else None
        data = tl.run_payload(where[0].root, where[1], name, read_metrics) if where else None
        if data is None:
            sources.forget()
            raise HTTPException(404, f"no run named {name[:80]!r} in the runs directories")
        return data

    @app.post("/api/glyphs")
    def glyphs(req: GlyphRequest) -> dict:
        return tl.glyph_outlines(req.text)
