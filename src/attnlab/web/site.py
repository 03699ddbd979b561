"""The static site: ``attnlab site --out DIR`` writes the playground as plain files.

A folder any static host serves (GitHub Pages, ``python -m http.server``) with no Python
behind it: the soft lookup, 实验 1-1, 实验 1-2 on the four case models that ship with attnlab,
the big pair's timeline, the training curves, the case report and the lab book.

How it stays the same site as ``attnlab serve``:

* the pages are the server's own (``web/static``), their absolute links (``/lookup``,
  ``/static/x.js``) rewritten to relative ones so a sub-path host works;
* one script, ``site_static/site.js``, answers the pages' ``fetch('/api/...')`` in the
  browser: ``POST /api/attention`` runs the model with onnxruntime-web (vendored in
  ``web/vendor``, no CDN) and converts simplified input with opencc-js, as
  :func:`attnlab.chinese.prepare` does; every other answer (``/api/info``, ``/api/live``,
  ``/api/timeline/<run>``, ``/api/case``...) is a JSON file this module dumps at build
  time by calling the server's own route functions, so it is the server's JSON;
* the model graphs are ONNX files exported by ``scripts/export_onnx.py`` and committed
  (``data/case_onnx``) *without* their weights: each keeps its initializers as external
  data, and the build writes that ``weights.bin`` from the shipped ``ckpt.pt`` (float16
  or float32, as float32, exactly as the server loads it). The manifest records the
  sha256 of the checkpoint and of the weights each graph was exported and checked with;
  a checkpoint that changed since is refused with the command that re-exports it. (The
  graphs compute in float64 throughout, as the server's /api/attention does: the collapsed
  unscaled model's saturated softmax would otherwise turn the runtimes' different float32
  rounding into several 1e-4 of difference.)

What ``--out`` may be: a new folder, an empty one, or provably an earlier site. Every site carries a
mark (``.attnlab-site.json``) listing each file the build wrote with its sha256; a folder is replaced
only when its mark is such a list and the folder holds exactly those files, unchanged. Anything
else (a ``.git``, a ``CNAME``, a reader's file, an empty or edited mark) is refused in one line naming
what is in the way, before anything is built: nothing attnlab did not write is ever deleted.

What it deliberately leaves out: anything that needs the server at run time (training,
a run of the reader's own, the live table's "running" state: a static copy is a
snapshot, so a run is never "running" there). The SVG export outlines only the
characters of the pages and the shipped data; other characters stay text.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AttnlabError, CheckpointError, OutputError
from ..io import umask_mask

PACKAGE = Path(__file__).resolve().parents[1]
WEB = Path(__file__).resolve().parent
STATIC = WEB / "static"
SITE_STATIC = WEB / "site_static"
VENDOR = WEB / "vendor"
SHIPPED_RUNS = PACKAGE / "data" / "case_runs"  # runs/case/<name> of the case's first seed
ONNX_DIR = PACKAGE / "data" / "case_onnx"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "attnlab-onnx-v1"  # attnlab.schemas.OnnxManifest
MANIFEST_MAX_BYTES = 4 * 10**6  # the committed one is 15 kB
WEIGHTS_FILE = "weights.bin"  # the external-data location every exported graph names
CASE_RUNS = (  # the four models of the case's first seed, in the order the pages list them
    "case/small_scaled_s20261014",
    "case/small_unscaled_s20261014",
    "case/big_scaled",
    "case/big_unscaled",
)
MARK = ".attnlab-site.json"  # in every site this module writes: each file it wrote, with its sha256
SITE_FORMAT = "attnlab-site-v2"  # v2: the mark lists every file (a v1 site is not replaced: nothing proves it whole)
BUILD_MARK = ".attnlab-site-build.json"  # in a build's temporary folder from its first moment
BUILD_FORMAT = "attnlab-site-build-v1"
RESIDUE = ".attnlab-site-"  # the start of the names of a build's lock and folders beside --out
MARK_MAX_BYTES = 4 * 10**6
WALK_MAX = 100_000  # entries looked at in an --out before it is refused (a site has about 60)
NAMED = 4  # entries named in a refusal, then how many more
# route -> file in the site; every absolute link of the pages must be one of these
SITE_PAGES = {
    "/": "index.html",
    "/lookup": "lookup.html",
    "/exp1-1": "exp1-1.html",
    "/exp1-2": "exp1-2.html",
    "/runs": "runs.html",
    "/timeline": "timeline.html",
    "/next": "next.html",
    "/train": "train.html",
    "/book": "book.html",
    "/workbook": "workbook.html",
}
CASE_PAGE = "case.html"
REPORT_FILES = {"book": ("reports/lab_book.html", "lab_book.html"), "case": ("reports/ch1_case.html", "ch1_case.html")}
CASE_JSON = ("data/ch1_case.json", "ch1_case.json")
VENDORED = {  # vendor folder -> the files a site needs from it (the rest is licences and notes)
    "onnxruntime-web": ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm", "LICENSE"),
    "opencc-js": ("cn2t.js", "LICENSE", "THIRD_PARTY_LICENSES.md"),
    "tfjs": (
        "tf-core.min.js",
        "tf-backend-wasm.min.js",
        "tfjs-backend-wasm.wasm",
        "tfjs-backend-wasm-simd.wasm",
        "tf-backend-webgpu.min.js",
    ),
    "fflate": ("fflate.min.js", "LICENSE"),
    "js-sha256": ("sha256.min.js", "LICENSE"),
}
GLYPH_CHUNK = 700  # characters per call of the server's glyph function (it stops at 800)


class SiteError(AttnlabError):
    """A site that cannot be built: a shipped file missing or changed, an --out in the way."""


# ------------------------------------------------------------------ weights for a graph
def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weights_blob(state: dict, tensors: list[dict]) -> bytes:
    """The external data of an exported graph, from a checkpoint's state_dict.

    ``tensors``: the manifest's list of {"name", "key", "shape", "offset", "length"}; each
    initializer is ``state[key]`` as little-endian float32 (a float16 checkpoint is widened
    exactly as ``load_state_dict`` widens it into the float32 model), at its offset.
    """
    size = max((t["offset"] + t["length"] for t in tensors), default=0)
    out = bytearray(size)
    for t in tensors:
        value = state.get(t["key"])
        if value is None:
            raise CheckpointError(f"the checkpoint has no tensor {t['key']!r} that the ONNX graph needs")
        arr = value.detach().float().cpu().numpy().astype("<f4", copy=False)
        if list(arr.shape) != list(t["shape"]) or arr.nbytes != t["length"]:
            raise CheckpointError(
                f"tensor {t['key']!r} has shape {list(arr.shape)} in the checkpoint, {t['shape']} in the ONNX graph"
            )
        out[t["offset"] : t["offset"] + t["length"]] = arr.tobytes()
    return bytes(out)


def read_manifest(onnx_dir: str | os.PathLike = ONNX_DIR) -> dict:
    """The ONNX manifest, read within bounds and checked against its schema (attnlab.schemas,
    ``onnx_manifest``) at the door, as every JSON attnlab reads: one line naming the file, the field
    and the fix for a manifest that is missing, not a regular file, too large or deep, not JSON, or of
    the wrong shape (offsets that overrun the weights included)."""
    from ..schemas import load

    path = Path(onnx_dir) / MANIFEST
    if not os.path.lexists(path):
        raise SiteError(
            f"the ONNX export of the case models is missing ({path}); reinstall attnlab, or in a checkout "
            "run `python scripts/export_onnx.py`"
        )
    return load("onnx_manifest", path, error=SiteError, max_bytes=MANIFEST_MAX_BYTES)


# ------------------------------------------------------------------------ the server's JSON
def _route(app, path: str, method: str = "GET"):
    for r in app.routes:
        if getattr(r, "path", None) == path and method in (getattr(r, "methods", None) or ()):
            return r.endpoint
    raise SiteError(f"the server has no route {method} {path}; attnlab's site and server are out of step")


def _answer(fn, *args, **kw) -> dict:
    """{"status", "body"} of one route function call, an HTTPException as its status and detail."""
    from fastapi import HTTPException

    try:
        return {"status": 200, "body": fn(*args, **kw)}
    except HTTPException as e:
        return {"status": e.status_code, "body": {"detail": e.detail}}


def frozen(run: dict) -> dict:
    """A run's state as a static copy shows it: nothing trains behind a site, and "updated N s ago"
    would be the age at build time."""
    run = dict(run)
    if run.get("state") == "running":
        run["state"] = "stopped"
    if "updated_s_ago" in run:
        run["updated_s_ago"] = None
    return run


def server_data(runs_root: Path, case_json: Path | None, names: list[str]) -> dict:
    """Every GET answer of the server the site replays, computed by the server's own route functions
    (``create_app`` on the shipped runs), plus each model's /api/model description."""
    from .server import ModelRequest, create_app

    app = create_app(
        runs_dir=str(runs_root),
        case_json=str(case_json) if case_json else str(runs_root / "no-case.json"),
        book_html=str(runs_root / "no-book.html"),
    )
    info = _answer(_route(app, "/api/info"))
    if info["status"] != 200 or not info["body"].get("checkpoint"):
        why = info["body"].get("detail") or info["body"].get("hint") or "no checkpoint found"
        raise SiteError(f"the server loads no model from {runs_root} ({why})")
    models = {n: _answer(_route(app, "/api/model", "POST"), ModelRequest(run=n)) for n in names}
    for n, m in models.items():
        if m["status"] != 200:
            raise SiteError(f"the server cannot load the case model {n}: {m['body'].get('detail')}")
    live = _answer(_route(app, "/api/live"))
    runs = _answer(_route(app, "/api/runs"))
    listed = [r["name"] for r in live["body"].get("runs", [])] if live["status"] == 200 else []
    timeline = {n: _answer(_route(app, "/api/timeline/{name:path}"), name=n) for n in listed}
    timeline = {n: {**a, "body": frozen(a["body"])} if a["status"] == 200 else a for n, a in timeline.items()}
    details = {}
    if runs["status"] == 200:
        shown = dict.fromkeys([*runs["body"].get("runs", []), *listed])  # the runs page overlays any listed run
        details = {n: _answer(_route(app, "/api/runs/{name}"), name=n) for n in shown}
    if live["status"] == 200:
        live = {**live, "body": {**live["body"], "runs": [frozen(r) for r in live["body"].get("runs", [])]}}
    return {
        "app": app,
        "info": info,
        "models": models,
        "live": live,
        "runs": runs,
        "runs_detail": details,
        "timeline": timeline,
        "case": _answer(_route(app, "/api/case")),
    }


def glyphs(app, text: str) -> dict:
    """The server's glyph outlines (POST /api/glyphs) of every distinct character of ``text``."""
    from .server import GlyphRequest

    fn = _route(app, "/api/glyphs", "POST")
    chars = "".join(dict.fromkeys(c for c in text if c.strip()))
    out: dict[str, Any] = {"glyphs": {}, "missing": []}
    for i in range(0, len(chars), GLYPH_CHUNK):
        got = fn(GlyphRequest(text=chars[i : i + GLYPH_CHUNK]))
        out.update({k: v for k, v in got.items() if k not in ("glyphs", "missing")})
        out["glyphs"].update(got["glyphs"])
        out["missing"] += got["missing"]
    return out


# ------------------------------------------------------------------------------ the pages
_HTML_LINK = re.compile(r'(?P<attr>\b(?:href|src)=")/(?P<path>[^"]*)"')
_JS_LINK = re.compile(r"""(?P<q>["'`])/(?P<name>[a-z][a-z0-9-]*)(?P<end>[/?#"'`])""")


def _site_path(path: str, where: str) -> str:
    """The site's relative path for an absolute path of the server ("lookup?x" -> "lookup.html?x")."""
    base, rest = re.match(r"([^?#]*)(.*)", path, re.S).groups()
    if base.startswith("static/"):
        return base + rest
    route = "/" + base
    if route == "/case":
        return CASE_PAGE + rest
    if route not in SITE_PAGES:
        raise SiteError(f"{where} links to /{base}, which the static site has no page for")
    return SITE_PAGES[route] + rest


def relative_links(text: str, where: str, script: bool = False) -> str:
    """Absolute links of a page (``href="/lookup"``, ``src="/static/x.js"``) or of a script's strings
    (`` `/timeline?run=` ``) made relative to the site's root, so a sub-path host works; ``"/api/..."``
    stays (site.js answers it). An absolute link to anything else is an error, so a new page cannot
    ship a link that breaks on the static site."""
    if not script:
        return _HTML_LINK.sub(lambda m: m["attr"] + _site_path(m["path"], where) + '"', text)

    def fix(m: re.Match) -> str:
        if m["name"] == "api":
            return m.group(0)
        if m["name"] == "static" and m["end"] == "/":
            return m["q"] + "static/"
        if m["end"] == "/":
            raise SiteError(f"{where} links to /{m['name']}/…, which the static site has no page for")
        return m["q"] + _site_path(m["name"], where) + m["end"]

    return _JS_LINK.sub(fix, text)


def site_header(route: str) -> str:
    """The server's page header (its links made relative by :func:`relative_links` with the page)."""
    from .server import page_header

    return page_header(route)


SITE_SCRIPT = '<script src="static/site.js"></script>\n</head>'


def page_html(route: str, name: str) -> str:
    """One playground page as the site serves it: header, relative links, site.js before the page's scripts."""
    from .server import HEADER_MARK

    html = (STATIC / name).read_text(encoding="utf-8").replace(HEADER_MARK, site_header(route), 1)
    html = relative_links(html, name)
    if "</head>" not in html:
        raise SiteError(f"{name} has no </head>: site.js cannot be put before its scripts")
    html = html.replace("</head>", SITE_SCRIPT, 1)
    if route == "/":
        html = html.replace("</ul>", _index_extra() + "  </ul>", 1)
    return html


def _index_extra() -> str:
    return (
        '  <li class="note">这是静态版：模型在浏览器里运行（onnxruntime-web），不连接任何服务器。\n'
        '      <span class="en">This is the static edition: the model runs in your browser (onnxruntime-web); '
        "nothing is sent anywhere.</span></li>\n"
    )


_LOCAL_REF = re.compile(r"""(?P<pre>\bsrc=["']|url\(["']?)(?P<ref>(?!data:|#|https?:|mailto:)[^"')]+)""")
REPORT_FILE_MAX_BYTES = 32 * 10**6  # one figure or font a report embeds
MIME = {".png": "image/png", ".svg": "image/svg+xml", ".otf": "font/otf", ".woff2": "font/woff2", ".ttf": "font/ttf"}


def self_contained(html: str, base: Path, where: str) -> str:
    """A report with every local file it references (figures, fonts) embedded as a data: URI, so it
    works copied alone. Only files inside the report's folder or the ``figures/`` beside it are
    embedded (links resolved first): a reference by absolute path, or one leading elsewhere, is an
    error naming it, as is a referenced file that is missing."""
    import base64

    from ..io import read_bounded

    allowed = [base.resolve(), (base.parent / "figures").resolve()]

    def embed(m: re.Match) -> str:
        ref = m["ref"]
        path = (base / ref).resolve()
        mime = MIME.get(path.suffix.lower())
        if mime is None:
            raise SiteError(f"{where} references {ref}, which the site cannot embed")
        if (
            os.path.isabs(ref)
            or re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", ref)
            or not any(path.is_relative_to(a) for a in allowed)
        ):
            raise SiteError(
                f"{where} references {ref}, outside the folders a report embeds from ({allowed[0]}, "
                f"{allowed[1]}); the site embeds no other file: rebuild the report"
            )
        if not path.is_file():
            raise SiteError(f"{where} references {ref}, which is missing ({path}); rebuild the report")
        data = read_bounded(path, REPORT_FILE_MAX_BYTES, error=SiteError, hint="; rebuild the report")
        return m["pre"] + f"data:{mime};base64," + base64.b64encode(data).decode("ascii")

    return _LOCAL_REF.sub(embed, html)


# ------------------------------------------------------------------------------- finding files
def shipped_file(here: str, name: str) -> Path | None:
    """A committed file: the checkout's own (``here`` from the repository root) when attnlab runs
    from one, else the copy in the package (``data/published/<name>``); None when neither exists."""
    from ..corpus import REPO_ROOT

    for p in (REPO_ROOT / here, PACKAGE / "data" / "published" / name):
        if p.is_file():
            return p
    return None


def shipped_checkpoints(runs_root: Path, manifest: dict, names: list[str]) -> dict[str, dict]:
    """Each case model's checkpoint, loaded, once it is proved the one its ONNX graph was exported from;
    one line naming the real problem otherwise (a link, a loop of links, a missing, damaged or
    retrained file), before anything is built."""
    from ..checkpoint import read_checkpoint
    from ..errors import CheckpointError

    restore = "reinstall attnlab, or in a checkout restore it (git checkout src/attnlab/data/case_runs)"
    payloads = {}
    for n in names:
        ckpt, entry = runs_root / n / "ckpt.pt", manifest["runs"][n]
        where = f"the case model {n} that ships with attnlab ({ckpt})"
        if ckpt.is_symlink():
            try:
                os.stat(ckpt)
                why = f"is a link (to {os.readlink(ckpt)}); attnlab reads no linked checkpoint"
            except OSError as e:
                why = "is a link in a loop" if e.errno == errno.ELOOP else f"is a link to nothing ({os.readlink(ckpt)})"
            raise SiteError(f"{where} {why}; {restore}")
        if not ckpt.is_file():
            what = "is a folder, not a file" if ckpt.is_dir() else "is missing"
            raise SiteError(f"{where} {what}; {restore}")
        digest = sha256_file(ckpt)
        if digest != entry["ckpt_sha256"]:
            try:
                read_checkpoint(ckpt)
            except CheckpointError:
                size = ckpt.stat().st_size
                raise SiteError(
                    f"{where} is damaged: it does not load as a checkpoint ({size:,} bytes; truncated, or not a "
                    f"checkpoint); {restore}"
                ) from None
            raise SiteError(
                f"the ONNX graph of {n} was exported from another ckpt.pt (sha256 {entry['ckpt_sha256'][:12]}…, "
                f"now {digest[:12]}…): after retraining, re-export with `python scripts/export_onnx.py`; "
                "otherwise the shipped model is damaged: reinstall attnlab (or git checkout src/attnlab/data)"
            )
        try:
            payloads[n] = read_checkpoint(ckpt)
        except CheckpointError as e:
            raise SiteError(f"{where} does not load ({e}); {restore}") from None
    return payloads


# ------------------------------------------------------------------------------ the build
@dataclass
class SiteResult:
    out: Path
    runs: list[str]
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    replaced: bool = False
    sizes: dict[str, int] = field(default_factory=dict)  # bytes by top folder (models, static, data, pages)
    note: str | None = None  # what the reader should know (an earlier site that could not be deleted)


def check_out(out: Path) -> bool:
    """Refuse an --out that is not a new folder, an empty one or provably an earlier site (one line
    naming why, before anything is built or written); True when there is a folder to replace."""
    try:
        if out.is_symlink():
            raise OutputError(f"--out {out} is a link; give the folder itself")
        if not out.exists():
            for parent in out.parents:  # a file where a folder of the path should be
                if parent.exists() and not parent.is_dir():
                    raise OutputError(f"--out {out}: {parent} is a file, not a folder; choose another path")
            return False
        if not out.is_dir():
            raise OutputError(f"--out {out} is a file; give a new folder, an empty one or an earlier attnlab site")
        if is_mount_point(out):
            raise OutputError(
                f"--out {out} is a mount point: a site is put in place by renaming, which a mount point refuses; "
                f"give a folder inside it (e.g. {out / 'site'})"
            )
        names = os.listdir(out)
        cwd = Path.cwd().resolve()
        if cwd == out.resolve() or out.resolve() in cwd.parents:
            raise OutputError(f"--out {out} is the folder you are in; give another one (the site replaces it)")
        why = site_problem(out, names)
    except OutputError:
        raise
    except OSError as e:
        raise _out_error(out, e) from None
    if why:
        raise OutputError(f"--out {out} {why}")
    return True


def is_mount_point(path: Path) -> bool:
    """Whether ``path`` is where a file system is mounted (a bind mount of a folder included, which
    os.path.ismount does not see)."""
    if os.path.ismount(path):
        return True
    try:
        table = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return False
    real = os.path.realpath(path)
    unescape = functools.partial(re.sub, r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)))
    return any(len(f) > 4 and unescape(f[4]) == real for f in (line.split(" ") for line in table.splitlines()))


def site_problem(folder: Path, names: list[str] | None = None) -> str | None:
    """Why ``folder`` may not be replaced (words that follow its name), or None when it is empty or
    provably a site this module wrote: its mark is a regular file that parses, names ``attnlab site``
    and lists every file, and the folder holds nothing else, each listed file unchanged since."""
    names = os.listdir(folder) if names is None else names
    if not names:
        return None
    give = "give a new or empty folder (nothing in it was changed)"
    if MARK not in names:
        return f"is not an earlier attnlab site: it holds {_named(sorted(names))}; {give}"
    doc, why = read_mark(folder / MARK)
    if why:
        return f"holds {MARK}, but not one attnlab wrote ({why}), so it is not provably an earlier site; {give}"
    extra, changed = _compare(folder, doc["files"])
    if extra:
        return (
            f"is an earlier attnlab site plus {_named(extra)}; a site is replaced only when it holds nothing "
            "else: move those out, or build into a new folder and copy the site over (docs/teaching.md)"
        )
    if changed:
        return (
            f"is an earlier attnlab site, but {_named(changed, 'changed since it was built')}; "
            "keep your edits elsewhere, or delete the folder yourself and build again"
        )
    return None


def read_mark(path: Path) -> tuple[dict | None, str | None]:
    """(the mark, None) when ``path`` is a site mark attnlab wrote; (None, why) otherwise."""
    from ..errors import DataError
    from ..io import read_json
    from ..schemas import problem

    try:
        st = os.lstat(path)
    except OSError as e:
        return None, f"it cannot be read: {e.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return None, "it is a link" if stat.S_ISLNK(st.st_mode) else "it is a folder or a device, not a file"
    if st.st_size == 0:
        return None, "it is empty"
    try:
        doc = read_json(path, max_bytes=MARK_MAX_BYTES)
    except DataError as e:
        return None, str(e).replace(str(path), "it")
    if isinstance(doc, dict) and doc.get("format") == "attnlab-site-v1":
        return None, "an older attnlab wrote it without the list of its files"
    why = problem("site_mark", doc)
    return (None, why) if why else (doc, None)


def _compare(folder: Path, files: dict) -> tuple[list[str], list[str]]:
    """(entries of ``folder`` its mark does not list, listed files whose bytes differ); links are never
    followed, and a folder the mark does not list counts once ("x/"), however much it holds."""
    dirs = {"/".join(rel.split("/")[:i]) for rel in files for i in range(1, rel.count("/") + 1)}
    extra, changed, listed, seen, stack = [], [], [], 0, [""]
    while stack:
        here = stack.pop()
        with os.scandir(folder / here if here else folder) as entries:
            for e in entries:
                seen += 1
                if seen > WALK_MAX:
                    return [f"more than {WALK_MAX:,} files and folders"], []
                rel = f"{here}/{e.name}" if here else e.name
                if e.is_symlink():
                    extra.append(f"{rel} (a link)")
                elif e.is_dir(follow_symlinks=False) and rel in dirs:
                    stack.append(rel)
                elif e.is_dir(follow_symlinks=False):
                    extra.append(rel + "/")
                elif rel == MARK:
                    continue
                elif rel not in files or not e.is_file(follow_symlinks=False):
                    extra.append(rel)
                elif e.stat(follow_symlinks=False).st_size != files[rel]["bytes"]:
                    changed.append(rel)
                else:
                    listed.append(rel)
    if extra:
        return sorted(extra, key=lambda r: (r.count("/"), r)), []
    changed += [rel for rel in listed if sha256_file(folder / rel) != files[rel]["sha256"]]
    return [], sorted(changed)


def _named(entries: list[str], what: str = "it did not write") -> str:
    """ "3 entries it did not write (a, b, c)": the first NAMED, then how many more."""
    shown = ", ".join(entries[:NAMED]) + (f" and {len(entries) - NAMED:,} more" if len(entries) > NAMED else "")
    n = len(entries)
    if what == "it did not write":
        return f"{n:,} {'entry' if n == 1 else 'entries'} attnlab did not write ({shown})"
    return f"{n:,} of its files {'was' if n == 1 else 'were'} {what} ({shown})"


def _out_error(out: Path, e: OSError) -> OutputError:
    why = e.strerror or type(e).__name__
    return OutputError(f"--out {out} cannot be used ({why}); choose another folder")


def build_site(
    out: str | os.PathLike,
    runs_root: str | os.PathLike = SHIPPED_RUNS,
    onnx_dir: str | os.PathLike = ONNX_DIR,
    case_json: str | os.PathLike | None = None,
    reports: dict[str, str | os.PathLike] | None = None,
) -> SiteResult:
    """Write the static site to ``out`` (a new folder, an empty one or an earlier site, replaced whole).

    The site is written into a temporary folder beside ``out`` and renamed into place, so an
    interrupted build leaves ``out`` as it was. ``runs_root``, ``onnx_dir``, ``case_json`` and
    ``reports`` ({"book": path, "case": path}) default to what ships with attnlab.

    Beside ``out``, while it builds: ``.attnlab-site-<tag>.lock`` (one build per ``out`` at a time),
    ``.attnlab-site-<tag>-*.tmp`` (the new site, with a build mark inside from its first moment) and,
    for a moment, ``.attnlab-site-old-<tag>-*`` (the earlier site moved aside). A build that ends in
    any way but kill -9 removes all three; the next build removes what a killed one left, each only
    when what is inside proves attnlab wrote it.
    """
    started = time.perf_counter()
    out = Path(out)
    replace = check_out(out)
    runs_root, onnx_dir = Path(runs_root), Path(onnx_dir)
    manifest = read_manifest(onnx_dir)
    names = [n for n in CASE_RUNS if n in manifest["runs"]] + sorted(set(manifest["runs"]) - set(CASE_RUNS))
    for n in names:
        graph = onnx_dir / manifest["runs"][n]["onnx"]
        if graph.is_symlink() or not graph.is_file() or sha256_file(graph) != manifest["runs"][n]["onnx_sha256"]:
            raise SiteError(f"{graph} is missing or not the file the manifest names; re-export the ONNX graphs")
    payloads = shipped_checkpoints(runs_root, manifest, names)
    if case_json is None:
        case_json = shipped_file(*CASE_JSON)
    found = {k: (Path(v) if v else None) for k, v in (reports or {}).items()}
    for key, (here, name) in REPORT_FILES.items():
        if key not in found:
            found[key] = shipped_file(here, name)
    parent, tag = out.absolute().parent, _tag(out)
    with _Lock(out, parent / f"{RESIDUE}{tag}.lock"):
        with _sigterm_as_interrupt():
            replace = check_out(out)  # again, now that no other build of ``out`` runs
            notes = _clean_residue(parent, tag, out)
            try:
                tmp = Path(tempfile.mkdtemp(prefix=f"{RESIDUE}{tag}-", suffix=".tmp", dir=parent))
            except OSError as e:
                raise _out_error(out, e) from None
            try:
                build = {"format": BUILD_FORMAT, "generator": "attnlab site", "out": out.absolute().name}
                _dump(tmp / BUILD_MARK, {**build, "pid": os.getpid()})  # what lets a later build remove it
                os.chmod(tmp, 0o777 & ~umask_mask())  # mkdtemp makes 0700; a web server must read the site
                result = _write(tmp, runs_root, onnx_dir, manifest, payloads, case_json and Path(case_json), found)
                _seal(tmp, names)
                _count(tmp, result)
                old = _swap(tmp, out, parent / f"{RESIDUE}old-{tag}-{os.getpid()}-{time.monotonic_ns()}")
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        if old is not None:  # the new site is in place: the earlier one goes, proved once more
            notes += _remove_old(old, out)
    result.out, result.replaced, result.note = out, replace, "; ".join(notes) or None
    result.seconds = time.perf_counter() - started
    return result


def _tag(out: Path) -> str:
    """A short name for ``out`` in the names of its build's lock and folders beside it."""
    return hashlib.sha256(out.absolute().name.encode("utf-8", "surrogateescape")).hexdigest()[:10]


class _Lock:
    """``with _Lock(out, path)``: the only build of ``out`` (an OS lock on ``path``, released by the
    kernel however the process ends); a second is refused naming the first. The file is removed on
    release; one a killed build left is taken over (it is no longer locked)."""

    def __init__(self, out: Path, path: Path):
        self.out, self.path, self.fd = out, path, None

    def __enter__(self):
        from ..runfolder import take_lock

        for _ in range(5):
            fd = take_lock(
                self.path,
                lambda why: f"--out {self.out} cannot be used ({why}); choose another folder",
                lambda holder: (
                    f"--out {self.out} is being built by {holder}; wait for it to finish (two builds at once "
                    "would replace each other's site)"
                ),
            )
            try:
                if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                    self.fd = fd
                    return self
            except OSError:
                pass
            os.close(fd)  # the file was removed by the build that held it: take the new one
        raise OutputError(f"--out {self.out}: cannot take the lock {self.path}; try again")

    def __exit__(self, *exc):
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM (``kill``, a scheduler's stop) raises KeyboardInterrupt while the site is built, so the
    temporary folder is removed and ``out`` left as it was, as for Ctrl-C (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise KeyboardInterrupt("stopped (SIGTERM) before the site was in place: --out is as it was")

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _clean_residue(parent: Path, tag: str, out: Path) -> list[str]:
    """Remove the folders a killed build of ``out`` left in ``parent`` (called under its lock, so no
    live build owns them): a temporary folder whose build mark names ``out``, or that is a complete
    site; an earlier site moved aside that is still provably one. Notes on what had to stay."""
    notes = []
    pattern = re.compile(rf"{re.escape(RESIDUE)}(?:{tag}-.*\.tmp|old-{tag}-.*)", re.S)
    try:
        entries = [e for e in os.scandir(parent) if pattern.fullmatch(e.name)]
    except OSError:
        return notes
    for e in entries:
        folder = Path(e.path)
        if e.is_symlink() or not e.is_dir(follow_symlinks=False):
            continue
        try:
            ours = (e.name.endswith(".tmp") and _build_mark_names(folder / BUILD_MARK, out)) or not site_problem(folder)
        except OSError:
            ours = False
        if not ours:
            notes.append(
                f"{folder} looks like a folder of an earlier build but holds files attnlab did not write: left"
            )
            continue
        try:
            _remove_site(folder)
        except OSError as err:
            notes.append(
                f"{folder}, left by an interrupted build, cannot be deleted ({err.strerror}): delete it yourself"
            )
    return notes


def _build_mark_names(path: Path, out: Path) -> bool:
    from ..errors import DataError
    from ..io import read_json

    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        doc = read_json(path, max_bytes=64_000)
    except (OSError, DataError):
        return False
    return isinstance(doc, dict) and doc.get("format") == BUILD_FORMAT and doc.get("out") == out.absolute().name


def _swap(tmp: Path, out: Path, old: Path) -> Path | None:
    """tmp becomes out. Whatever out is now is checked again (it may have changed during the build);
    an earlier site is moved aside to ``old`` first. Returns ``old`` when something was moved there."""
    moved = None
    if check_out(out):
        try:
            os.rename(out, old)
            moved = old
        except OSError as e:
            raise OutputError(
                f"--out {out} cannot be replaced ({e.strerror or type(e).__name__}); nothing was changed: "
                "give a new folder"
            ) from None
    try:
        os.rename(tmp, out)
    except BaseException:
        if moved is not None:
            os.rename(moved, out)
        raise
    return moved


def _remove_old(old: Path, out: Path) -> list[str]:
    """Delete the earlier site moved aside to ``old``, after proving it again (a file added between the
    last check and the move is kept). Notes when something is left."""
    try:
        why = site_problem(old)
    except OSError as e:
        why = e.strerror or type(e).__name__
    if why:
        return [f"{out} changed while the site was built; what it held is kept in {old}: look through it"]
    try:
        _remove_site(old)
    except OSError as e:
        why = e.strerror or type(e).__name__
        return [f"the earlier site was moved to {old} but cannot be deleted ({why}); delete it yourself (rm -r {old})"]
    return []


def _remove_site(folder: Path) -> None:
    """Delete a folder attnlab wrote: everything but its marks first, its marks last, so that what a
    failed or interrupted deletion leaves is still recognisably attnlab's."""
    with os.scandir(folder) as entries:
        for e in entries:
            if e.name in (MARK, BUILD_MARK):
                continue
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
    for name in (MARK, BUILD_MARK):
        if os.path.lexists(folder / name):
            os.unlink(folder / name)
    os.rmdir(folder)


def _seal(dest: Path, names: list[str]) -> None:
    """Write the mark: every file of the site with its size and sha256 (what proves it an earlier site)."""
    from .. import __version__

    files = {}
    for p in sorted(dest.rglob("*")):
        rel = p.relative_to(dest).as_posix()
        if p.is_file() and rel not in (MARK, BUILD_MARK):
            files[rel] = {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
    mark = {"format": SITE_FORMAT, "generator": "attnlab site", "attnlab": __version__, "runs": names, "files": files}
    _dump(dest / MARK, mark)
    if (dest / BUILD_MARK).exists():  # the mark proves the folder attnlab's from now on
        os.unlink(dest / BUILD_MARK)


def _count(dest: Path, result: SiteResult) -> None:
    for p in dest.rglob("*"):
        if p.is_file():
            size = p.stat().st_size
            result.files += 1
            result.bytes += size
            top = p.relative_to(dest).parts[0] if len(p.relative_to(dest).parts) > 1 else "pages"
            result.sizes[top] = result.sizes.get(top, 0) + size


def _dump(path: Path, obj: Any) -> int:
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


def _write(
    dest: Path,
    runs_root: Path,
    onnx_dir: Path,
    manifest: dict,
    payloads: dict[str, dict],
    case_json: Path | None,
    reports: dict[str, Path | None],
) -> SiteResult:
    names = list(payloads)
    data = server_data(runs_root, case_json, names)
    # ---- models: the committed graph, its weights from the shipped checkpoint
    models = {}
    for i, n in enumerate(names):
        entry, payload = manifest["runs"][n], payloads[n]
        graph = onnx_dir / entry["onnx"]
        blob = weights_blob(payload["model"], entry["tensors"])
        if hashlib.sha256(blob).hexdigest() != entry["weights_sha256"]:
            raise SiteError(f"the weights of {n} do not match its ONNX export; re-export the ONNX graphs")
        folder = dest / "models" / str(i)
        folder.mkdir(parents=True)
        shutil.copyfile(graph, folder / "model.onnx")
        (folder / WEIGHTS_FILE).write_bytes(blob)
        info = data["models"][n]["body"]
        from .nextchar import FORWARD_FILE, browser_config, forward_files  # the /next page's in-browser forward

        index, rest = forward_files(payload["model"], entry["tensors"], payload["config"].get("tie_weights", True))
        (folder / FORWARD_FILE).write_bytes(weights_blob(payload["model"], rest))
        forward = {"config": browser_config(payload["config"]), "tensors": index}
        meta = {"run": n, "itos": payload["itos"], "outputs": entry["outputs"], "info": info, "forward": forward}
        _dump(folder / "model.json", meta)
        models[n] = f"models/{i}/"
    # ---- the server's answers
    files: dict[str, str] = {}

    def put(kind: str, key: str, answer: dict) -> dict:
        """Large answers go to their own file, small ones stay in the index."""
        if answer["status"] != 200 or len(json.dumps(answer["body"])) < 4096:
            return answer
        rel = f"data/{kind}-{len(files)}.json"
        files[rel] = key
        _dump(dest / rel, answer["body"])
        return {"status": 200, "file": rel}

    index = {
        "format": SITE_FORMAT,
        "default": data["info"]["body"]["run"],
        "info": data["info"],
        "models": models,
        "model_info": {n: data["models"][n] for n in names},
        "live": data["live"],
        "runs": data["runs"],
        "runs_detail": {n: put("run", n, a) for n, a in data["runs_detail"].items()},
        "timeline": {n: put("timeline", n, a) for n, a in data["timeline"].items()},
        "case": put("case", "case", data["case"]),
    }
    # ---- pages, scripts, styles, fonts, vendored runtimes
    shutil.copytree(STATIC, dest / "static", ignore=shutil.ignore_patterns("*.html"))
    for js in (dest / "static").glob("*.js"):
        js.write_text(relative_links(js.read_text(encoding="utf-8"), js.name, script=True), encoding="utf-8")
    shutil.copyfile(SITE_STATIC / "site.js", dest / "static" / "site.js")
    for folder, wanted in VENDORED.items():
        (dest / "static" / "vendor" / folder).mkdir(parents=True)
        for f in wanted:
            shutil.copyfile(VENDOR / folder / f, dest / "static" / "vendor" / folder / f)
    from .server import PAGES, with_report_nav
    from .trainexport import write_site_files

    write_site_files(dest / "train")  # the train page's initial weights and batches, from attnlab train's code
    page_text = ""
    for route, name in PAGES.items():
        html = page_html(route, name)
        (dest / SITE_PAGES[route]).write_text(html, encoding="utf-8")
        page_text += html
    for key, file in (("book", SITE_PAGES["/book"]), ("case", CASE_PAGE)):
        src = reports.get(key)
        if src is None or not src.is_file():
            html = _missing_report(key)
        else:
            html = self_contained(src.read_text(encoding="utf-8"), src.parent, src.name)
            html = with_report_nav(html, lambda route, f=file: _site_path(route[1:], f))  # the way back home
        (dest / file).write_text(html, encoding="utf-8")
    # ---- glyphs for the SVG export: the pages' own text, run names and the probes' characters
    texts = [page_text, *(p.read_text(encoding="utf-8") for p in (dest / "static").glob("*.js"))]
    texts.append(json.dumps(index, ensure_ascii=False))
    texts += [(dest / rel).read_text(encoding="utf-8") for rel in files if rel.startswith("data/timeline")]
    texts.append("".join(chr(c) for c in range(0x20, 0x7F)))
    index["glyphs"] = put("glyphs", "glyphs", {"status": 200, "body": glyphs(data["app"], "".join(texts))})
    _dump(dest / "data" / "site.json", index)
    (dest / ".nojekyll").write_text("", encoding="utf-8")  # GitHub Pages: serve the files as they are
    return SiteResult(dest, names)


def _missing_report(key: str) -> str:
    zh, en, cmd = {
        "book": ("全章实验", "lab book", "attnlab book"),
        "case": ("案例报告", "case report", "attnlab case"),
    }[key]
    return (
        '<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>attnlab</title></head>'
        f"<body><p>这个静态网站生成时没有{zh}（先运行 <code>{cmd}</code>）。 "
        f"This site was built without the {en} (run <code>{cmd}</code> first).</p>"
        '<p><a href="index.html">返回 Back</a></p></body></html>\n'
    )
