"""The local attention playground: a small FastAPI app and the ``serve`` subcommand.

Four pages live in ``static/`` as plain HTML/JS/CSS (no build step, nothing
fetched from another host):

* ``/lookup``  soft lookup of §1.5.3, computed entirely in the browser;
* ``/exp1-1``  experiment 1-1 (random q, k; scaled vs unscaled), in the browser;
* ``/exp1-2``  experiment 1-2, attention maps of the loaded checkpoint, via
  ``POST /api/attention``;
* ``/runs``    training curves of ``runs/*/metrics.jsonl`` and of the case JSON, and a
  live table of every run (``GET /api/live``), refreshed while runs train;
* ``/timeline`` attention snapshots of a run beside a twin, with its curves
  (``GET /api/timeline/<run>``; see ``attnlab.web.timeline``).

Every figure has PNG/SVG buttons (``static/export.js``); ``POST /api/glyphs``
gives the glyph outlines that make an exported SVG independent of fonts.

What the server deliberately does not do: take a file path from a request.
The checkpoint is chosen when the server starts; runs are addressed by the
name of a directory directly inside ``runs_dir`` and nothing else (symlinks are
refused at every level below it). It answers only requests whose ``Host`` is its
own (127.0.0.1, localhost or ``--host``, with its port), so a page on another
site cannot reach it through DNS rebinding. Every
request body is size-limited and validated by a pydantic model, and every
error comes back as ``{"detail": "<message>"}`` with a 4xx status, never a
traceback.
"""

from __future__ import annotations

import json
import math
import os
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..train import METRICS_FILE, parse_metrics

STATIC = Path(__file__).parent / "static"
PAGES = {
    "/": "index.html",
    "/lookup": "lookup.html",
    "/exp1-1": "exp11.html",
    "/exp1-2": "exp12.html",
    "/runs": "runs.html",
    "/timeline": "timeline.html",
}
# the header of every page, in one place: (route, 中文, English)
NAV = (
    ("/lookup", "软查表", "Soft lookup"),
    ("/exp1-1", "实验 1-1", ""),
    ("/exp1-2", "实验 1-2", ""),
    ("/runs", "训练曲线", "Runs"),
    ("/timeline", "时间线", "Timeline"),
    ("/book", "全章实验", "Lab book"),
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


MAX_BODY_BYTES = 16 * 1024  # a request body larger than this is refused before parsing
MAX_TEXT_CHARS = 2048  # hard cap; the real limit is the checkpoint's block_size
MAX_POINTS = 2000  # curves are thinned to at most this many points
MAX_RUN_NAME = 128
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")  # names a local browser uses for this machine
LAYER_KEYS = ("weight_entropy", "jacobian_fro", "logit_std", "q_std", "k_std")
NO_CHECKPOINT_HINT = (
    "没有加载模型。请用 `attnlab serve --checkpoint runs/<名字>/ckpt.pt` 启动。 "
    "No checkpoint loaded: start the server with "
    "`attnlab serve --checkpoint runs/<name>/ckpt.pt`."
)
# The pages only ever talk to the server that served them.
BOOK_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(max_length=MAX_TEXT_CHARS)


@dataclass
class Loaded:
    """A checkpoint ready to answer: the model, its tokenizer and config."""

    path: str
    model: Any
    tok: Any
    cfg: Any
    head_metrics: Callable[[Any], dict]


def _load(path: str) -> Loaded:
    """Load a checkpoint (torch is imported only when one is asked for)."""
    from attnlab.checkpoint import load_checkpoint
    from attnlab.diagnostics import head_metrics

    model, tok, cfg = load_checkpoint(path)
    model.eval()
    return Loaded(str(path), model, tok, cfg, head_metrics)


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


def valid_run_name(name: str) -> bool:
    """A run folder's name as listed and served: one path component, any
    printable Unicode (CJK, spaces), no leading dot, no separators."""
    return (
        0 < len(name) <= MAX_RUN_NAME
        and name.isprintable()
        and not name.startswith(".")
        and "/" not in name
        and "\\" not in name
        and name.strip() == name
    )


def _no_symlink(path: Path) -> Path:
    if path.is_symlink():
        raise PermissionError(f"{path} is a symlink")
    return path


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


def read_metrics(path: Path) -> dict:
    """Columns of one run's metrics.jsonl; malformed lines are counted and skipped."""
    # O_NOFOLLOW: a symlink swapped in after the listing is refused here too
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with open(fd, encoding="utf-8", errors="replace") as f:
        rows, bad = parse_metrics(f)
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
) -> FastAPI:
    """Build the app. A checkpoint that cannot be loaded raises CheckpointError here.

    hosts: the Host headers answered (see :func:`allowed_hosts`); None = loopback names only.
    """
    loaded = _load(checkpoint) if checkpoint else None
    runs_root = Path(runs_dir)
    case_path = Path(case_json)
    lock = threading.Lock()  # one forward pass at a time: the model is shared

    app = FastAPI(title="attnlab playground", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def harden(request: Request, call_next):
        response = await call_next(request)
        if "content-security-policy" not in response.headers:  # /book sets its own, stricter one
            response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
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
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/book", include_in_schema=False)
    def lab_book():
        # The self-contained lab book (attnlab book): inline CSS, data: images and font, no script.
        path = Path(book_html)
        if not path.is_file():
            raise HTTPException(
                404, "还没有全章实验：先运行 `attnlab book`。 No lab book yet: run `attnlab book` first."
            )
        return HTMLResponse(path.read_text(encoding="utf-8"), headers={"Content-Security-Policy": BOOK_CSP})

    # -------------------------------------------------------------------- api
    @app.get("/api/info")
    def info() -> dict:
        if loaded is None:
            return {"checkpoint": None, "hint": NO_CHECKPOINT_HINT}
        cfg = loaded.cfg
        return {
            "checkpoint": Path(loaded.path).name,
            "block_size": cfg.block_size,
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
            "vocab_size": len(loaded.tok.itos),
        }

    @app.post("/api/attention")
    def attention(req: AttentionRequest) -> dict:
        if loaded is None:
            raise HTTPException(409, NO_CHECKPOINT_HINT)
        text = req.text
        if not text.strip():
            raise HTTPException(422, "文本为空，请输入至少一个字。 The text is empty: type at least one character.")
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
        tokens = [{"text": "<unk>" if i == unk else itos[i], "char": c, "unk": i == unk} for i, c in zip(ids, chars)]
        import torch  # only reached with a checkpoint, which needs torch anyway

        device = next(loaded.model.parameters()).device
        idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
        with lock, torch.no_grad():
            patterns = loaded.model.attention_patterns(idx)  # n_layer x (1, nh, T, T)
            layers = []
            for li, p in enumerate(patterns):
                p = p.float().cpu()
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
        return {"tokens": tokens, "n_unk": sum(t["unk"] for t in tokens), "block_size": block, "layers": layers}

    def run_names() -> list[str]:
        """Run folders directly in runs_dir; symlinks refused at every level below it."""
        if not runs_root.is_dir():
            return []
        names = []
        for d in runs_root.iterdir():
            m = d / METRICS_FILE
            if valid_run_name(d.name) and not d.is_symlink() and d.is_dir() and not m.is_symlink() and m.is_file():
                names.append(d.name)
        return sorted(names)

    @app.get("/api/runs")
    def runs() -> dict:
        return {"runs": run_names()}

    @app.get("/api/runs/{name}")
    def run_metrics(name: str) -> dict:
        # Only names that were listed are served: no separators, no "..", no symlinks.
        if not valid_run_name(name) or ".." in name or name not in run_names():
            raise HTTPException(404, f"no run named {name[:80]!r} in the runs directory")
        from .timeline import run_sinks

        try:
            d = _no_symlink(runs_root / name)
            return {"name": name, **read_metrics(d / METRICS_FILE), "sinks": run_sinks(d)}
        except OSError:
            raise HTTPException(404, f"no run named {name[:80]!r} in the runs directory") from None

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
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            raise HTTPException(422, "案例文件无法解析。 The case file could not be parsed.") from None
        return {"pairs": pairs}

    add_timeline_routes(app, runs_root)

    @app.api_route("/api/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
    def unknown_api(rest: str):
        raise HTTPException(404, "unknown API endpoint")

    return app


# ------------------------------------------------------------- timeline, live, export
class GlyphRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(max_length=4096)


def add_timeline_routes(app: FastAPI, runs_root: Path) -> None:
    """/api/live (runs and their state), /api/timeline/<run> (curves + snapshots), /api/glyphs.

    Runs may sit one level down (the case's runs/case/big_unscaled); a name is
    served only when it is one of the listed run directories.
    """
    from . import timeline as tl

    @app.get("/api/live")
    def live() -> dict:
        return {"runs": tl.list_runs(runs_root)}

    @app.get("/api/timeline/{name:path}")
    def timeline(name: str) -> dict:
        data = tl.timeline_payload(runs_root, name, read_metrics)
        if data is None:
            raise HTTPException(404, f"no run named {name[:80]!r} in the runs directory")
        return data

    @app.post("/api/glyphs")
    def glyphs(req: GlyphRequest) -> dict:
        return tl.glyph_outlines(req.text)
