"""Data behind the /timeline page, the live runs table and the SVG export's glyph outlines.

* :func:`list_runs`: every run directory under the runs directory, one or two
  levels deep (``tiny``, ``case/big_unscaled``), each with its state: running
  (metrics.jsonl written in the last ``RUNNING_WINDOW_S`` seconds and no
  summary newer than it), finished (summary.json), or stopped (neither), and its twin
  (:func:`twins`: the run of the same shape and seed with the other scaling, from the configs).
* :func:`timeline_payload`: one run's curves (metrics.jsonl) and snapshots
  (snapshots.npz), with each snapshot's attention-sink share per head
  (:func:`sinks_of`), or a clear message when the run has none or the file is
  corrupt: the page shows the message, never a blank.
* :func:`glyph_outlines`: SVG path outlines of characters from the packaged
  CJK font (fontTools, which matplotlib already needs), so an exported SVG
  shows its Chinese on a machine without the font.

Run names are relative paths of one or two components, each a plain name
(any printable Unicode, :func:`attnlab.web.runfiles.valid_run_name`); nothing
else (no "..", no separators beyond the one) is served, and every file is read
through :class:`attnlab.web.runfiles.RunsRoot`, which never follows a link.
"""

from __future__ import annotations

import collections
import functools
import math
import os
import stat
import threading
import time
from pathlib import Path

import numpy as np

from ..train import METRICS_FILE
from .runfiles import RunsRoot, file_key, valid_run_name

RUNNING_WINDOW_S = 120.0
CLOCK_SLACK_S = 5.0  # a metrics.jsonl stamped further in the future than this is not "running"
MAX_SNAPSHOT_VALUES = 4_000_000  # patterns sent to the page at once (about 25 MB of JSON)
MAX_SNAPSHOT_BYTES = 64 * 2**20  # a snapshot file's arrays, uncompressed, read by the server at most
MAX_METRICS_BYTES = 512 * 2**20  # a metrics.jsonl larger than this is shown as damaged
MAX_CONFIG_BYTES = 1 << 20
REPORT_FONT = Path(__file__).resolve().parents[1] / "report" / "fonts" / "NotoSansCJKtc-subset.otf"
MAX_GLYPHS = 800
DAMAGED = "damaged"


def _root(root) -> RunsRoot:
    return root if isinstance(root, RunsRoot) else RunsRoot(root)


def _is_run(root: RunsRoot, parts: tuple[str, ...]) -> bool:
    return root.is_dir(parts) and root.is_file((*parts, METRICS_FILE))


def run_dirs(root) -> dict[str, tuple[str, ...]]:
    """{name: path parts below root} of runs directly under root or one level below; no part is a link."""
    root = _root(root)
    out: dict[str, tuple[str, ...]] = {}
    for top in root.listdir():
        if not valid_run_name(top) or not root.is_dir(top):
            continue
        if _is_run(root, (top,)):
            out[top] = (top,)
            continue
        for sub in root.listdir(top):
            if valid_run_name(sub) and _is_run(root, (top, sub)):
                out[f"{top}/{sub}"] = (top, sub)
    return out


def resolve_run(root, name: str) -> tuple[str, ...] | None:
    """The path parts of a listed run, or None (never a path built from unchecked input)."""
    parts = name.split("/")
    if not 1 <= len(parts) <= 2 or not all(valid_run_name(p) for p in parts):
        return None
    parts, root = tuple(parts), _root(root)
    if len(parts) == 2 and _is_run(root, parts[:1]):
        return None  # a run's subfolder is not listed as a run
    return parts if _is_run(root, parts) else None


def _config(root: RunsRoot, parts) -> dict:
    import json

    try:
        cfg = json.loads(root.read_text((*parts, "config.json"), MAX_CONFIG_BYTES))
    except (OSError, ValueError, TypeError, RecursionError, OverflowError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def _int(x) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


SHAPE_KEYS = ("n_layer", "n_head", "d_model", "block_size")


SCALINGS = ("1/sqrt(d)", "none", "1/d")
OTHER_SCALING = {"1/sqrt(d)": "none", "none": "1/sqrt(d)", "1/d": "1/sqrt(d)"}  # the twin a run is compared with


def _shape(cfg: dict) -> list[int] | None:
    """The model's shape (n_layer, n_head, d_model, block_size): a twin must have the same."""
    shape = [cfg.get(k) for k in SHAPE_KEYS]
    return shape if all(_int(x) is not None for x in shape) else None


def _scaling(cfg: dict) -> str | None:
    """The run's attention scaling as config.SCALINGS spells it ("1/sqrt(d)", "none", "1/d"), from its config:
    ``attn_scale`` when set, else ``scaled``; None when the config says neither."""
    a = cfg.get("attn_scale")
    if a in SCALINGS:
        return a
    if a is None and isinstance(cfg.get("scaled"), bool):
        return "1/sqrt(d)" if cfg["scaled"] else "none"
    return None


def twins(runs: list[dict]) -> dict[str, str | None]:
    """{name: twin} for rows of :func:`list_runs_of`: a run's twin is a run of the same shape (n_layer,
    n_head, d_model, block_size) and the same seed (when both configs have one) with the other scaling
    (scaled <-> unscaled; 1/d -> scaled), chosen from the configs, never from the names. Among several,
    the one in the same run root and folder, then with the same max_steps, then the longest common
    name prefix, then the first by name; None when there is none."""
    out: dict[str, str | None] = {}
    for r in runs:
        want = OTHER_SCALING.get(r.get("scaling"))
        if want is None or r.get("shape") is None:
            out[r["name"]] = None
            continue
        found = [
            c
            for c in runs
            if c["name"] != r["name"]
            and c.get("scaling") == want
            and c.get("shape") == r["shape"]
            and (r.get("seed") is None or c.get("seed") is None or c["seed"] == r["seed"])
        ]
        out[r["name"]] = min(found, key=lambda c: _closeness(r, c))["name"] if found else None
    return out


def _closeness(run: dict, other: dict) -> tuple:
    """Sort key: smaller = a likelier twin of ``run``."""
    a, b = run["name"], other["name"]
    common = len(os.path.commonprefix([a, b]))
    return (
        a.rpartition("/")[0] != b.rpartition("/")[0],  # same root and folder ("shipped:case", "runs/h2")
        run.get("max_steps") != other.get("max_steps"),
        -common,
        b,
    )


_CACHE_LOCK = threading.Lock()  # the caches below are shared by the server's worker threads
_LINES: dict[tuple, int] = {}  # file_key -> non-empty lines, so the live table does not re-read unchanged files


def _count_lines(root: RunsRoot, parts) -> int:
    with root.open((*parts, METRICS_FILE), MAX_METRICS_BYTES) as f:
        key = file_key(f)
        with _CACHE_LOCK:
            n = _LINES.get(key)
        if n is None:
            n = sum(1 for line in f if line.strip())
            with _CACHE_LOCK:
                if len(_LINES) > 512:
                    _LINES.clear()
                _LINES[key] = n
        return n


def run_state(root, parts, now: float | None = None) -> dict:
    """State of one run: finished (summary.json as new as its metrics), running (metrics written within
    RUNNING_WINDOW_S and not stamped in the future), stopped, or damaged (metrics unreadable, with why).
    Raises FileNotFoundError when the run folder is gone."""
    root = _root(root)
    now = time.time() if now is None else now
    st = root.lstat((*parts, METRICS_FILE))
    if st is None:
        raise FileNotFoundError("/".join(parts))
    m_time = st.st_mtime
    age = now - m_time
    summary = root.lstat((*parts, "summary.json"))
    done = summary is not None and stat.S_ISREG(summary.st_mode) and summary.st_mtime >= m_time - 1.0
    if done:
        state = "finished"
    elif -CLOCK_SLACK_S <= age <= RUNNING_WINDOW_S:
        state = "running"
    else:  # old, or stamped in the future (a clock stepped back): never "running" forever
        state = "stopped"
    problem = None
    try:
        steps = _count_lines(root, parts)
    except OSError as e:
        if root.lstat((*parts, METRICS_FILE)) is None:
            raise FileNotFoundError("/".join(parts)) from None  # removed while we looked
        steps, state, problem = 0, DAMAGED, f"训练曲线文件损坏，无法读取。 metrics.jsonl cannot be read: {e}"
    cfg = _config(root, parts)
    return {
        "state": state,
        "steps": steps,
        "max_steps": _int(cfg.get("max_steps")),
        "shape": _shape(cfg),
        "scaling": _scaling(cfg),
        "seed": _int(cfg.get("seed")),
        "snapshots": root.is_file((*parts, "snapshots.npz")),
        "updated_s_ago": round(age, 1) if age >= -CLOCK_SLACK_S else None,
        **({"problem": problem} if problem else {}),
    }


def list_runs(root) -> list[dict]:
    """Every listed run with its state; a run removed while listing is left out, never an error."""
    root = _root(root)
    return list_runs_of((name, root, parts) for name, parts in run_dirs(root).items())


def list_runs_of(runs) -> list[dict]:
    """The state of each (name, root, parts), with its twin (:func:`twins`); a run removed while listing is
    left out, never an error."""
    now = time.time()
    out = []
    for name, root, parts in runs:
        try:
            out.append({"name": name, **run_state(root, parts, now)})
        except FileNotFoundError:
            continue
    pair = twins(out)
    return [{**r, "twin": pair[r["name"]]} for r in out]


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


_SNAPS: collections.OrderedDict = collections.OrderedDict()  # file_key -> Snapshots | SnapshotError
_SNAPS_BYTES = 4 * MAX_SNAPSHOT_BYTES  # what the cache may hold


def load_snapshots(root, parts):
    """A run's Snapshots read without following links, bounded (MAX_SNAPSHOT_BYTES uncompressed), and cached
    per file version (device, inode, mtime, size): a file is decompressed once, not on every request.
    Raises SnapshotError (damaged, too large, a link, unreadable)."""
    from attnlab.snapshots import FILENAME, SnapshotError, read_snapshots_from

    root = _root(root)
    try:
        f = root.open((*parts, FILENAME))
    except OSError as e:
        raise SnapshotError(f"{FILENAME} cannot be read: {e}") from None
    with f:
        key = file_key(f)
        with _CACHE_LOCK:
            hit = _SNAPS.get(key)
            if hit is not None:
                _SNAPS.move_to_end(key)
        if hit is None:
            try:
                hit = read_snapshots_from(f, FILENAME, MAX_SNAPSHOT_BYTES)
            except SnapshotError as e:
                hit = e
            except MemoryError:
                hit = SnapshotError(f"{FILENAME} is too large to read into memory")
            with _CACHE_LOCK:
                _SNAPS[key] = hit
                while len(_SNAPS) > 1 and sum(_nbytes(v) for v in _SNAPS.values()) > _SNAPS_BYTES:
                    _SNAPS.popitem(last=False)
    if isinstance(hit, SnapshotError):
        raise SnapshotError(str(hit))
    return hit


def _nbytes(v) -> int:
    return 0 if isinstance(v, Exception) else v.patterns.nbytes + v.metrics.nbytes + v.steps.nbytes


def snapshots_payload(root, parts) -> dict:
    """{"snapshots": {...}} or {"snapshot_error": message}."""
    from attnlab.snapshots import FILENAME, SnapshotError

    root = _root(root)
    if root.lstat((*parts, FILENAME)) is None:
        return {
            "snapshots": None,
            "snapshot_error": "这次训练没有注意力快照（它早于这个功能，或 snapshot_every=0）；重新训练即可得到。 "
            "This run has no attention snapshots (it predates them or ran with snapshot_every=0); "
            "train it again to get them.",
        }
    try:
        snap = load_snapshots(root, parts)
    except SnapshotError as e:
        return {"snapshots": None, "snapshot_error": f"快照文件损坏，无法读取。 {e}".replace(str(root.root), "runs")}
    if snap.patterns.size > MAX_SNAPSHOT_VALUES:
        return {
            "snapshots": None,
            "snapshot_error": f"快照太大，无法在页面中显示。 The snapshots hold {snap.patterns.size:,} weights, "
            f"more than the page shows ({MAX_SNAPSHOT_VALUES:,}); use a shorter probe.",
        }
    patterns = np.round(snap.patterns.astype(np.float64), 4)
    metrics = [[[[_num(v) for v in head] for head in layer] for layer in step] for step in snap.metrics]
    meta = snap.meta
    return {
        "snapshots": {
            "steps": snap.steps.tolist(),
            "probe": meta.get("probe") if isinstance(meta.get("probe"), str) else None,
            "tokens": _strings(meta.get("tokens")),
            "metric_names": _strings(meta.get("metrics")),
            "patterns": patterns.tolist(),  # (N, L, nh, T, T)
            "metrics": metrics,  # (N, L, nh, M)
            "sinks": sinks_of(snap.patterns),
        },
        "snapshot_error": None,
    }


def _strings(x) -> list[str] | None:
    return [str(v)[:64] for v in x] if isinstance(x, list) else None


def sinks_of(patterns: np.ndarray) -> dict:
    """The attention-sink metric of every snapshot (attnlab.diagnostics.sink_share): each head's
    share of attention on the first position, mean over queries i >= 1, with the uniform baseline
    of the probe's length and the threshold. ``patterns`` (N, L, nh, T, T) -> share (N, L, nh)."""
    import torch

    from attnlab.diagnostics import SINK_THRESHOLD, sink_baseline, sink_share

    share = sink_share(torch.from_numpy(patterns.astype(np.float32)))
    T = patterns.shape[-1]
    return {
        "share": [[[_num(round(float(v), 4)) for v in layer] for layer in step] for step in share.numpy()],
        "baseline": _num(round(sink_baseline(T), 4)) if T > 1 else None,
        "threshold": SINK_THRESHOLD,
    }


def run_sinks(root, parts) -> dict | None:
    """A run's sink shares by snapshot step ({"steps", "share", "baseline", "threshold"}), or None
    when it has no readable snapshots (the runs page then draws no sink chart)."""
    from attnlab.snapshots import SnapshotError

    try:
        snap = load_snapshots(root, parts)
    except SnapshotError:
        return None
    return {"steps": snap.steps.tolist(), **sinks_of(snap.patterns)}


def timeline_payload(root, name: str, read_metrics) -> dict | None:
    """One listed run's state, curves and snapshots; None when no run has that name. A run whose
    metrics.jsonl cannot be read is shown "damaged" with why, never an error."""
    root = _root(root)
    parts = resolve_run(root, name)
    return None if parts is None else run_payload(root, parts, name, read_metrics)


def run_payload(root, parts, name: str, read_metrics) -> dict | None:
    """The payload of :func:`timeline_payload` for the run folder ``parts`` of ``root``, named ``name``."""
    root = _root(root)
    try:
        state = run_state(root, parts)
    except FileNotFoundError:
        return None
    try:
        metrics = read_metrics(root, (*parts, METRICS_FILE))
    except OSError as e:
        if root.lstat((*parts, METRICS_FILE)) is None:
            return None  # removed while we looked
        problem = f"训练曲线文件损坏，无法读取。 metrics.jsonl cannot be read: {e}"
        return {"name": name, **state, "state": DAMAGED, "problem": problem, "error": problem, "metrics": None}
    return {"name": name, **state, "metrics": metrics, **snapshots_payload(root, parts)}


# ------------------------------------------------------------------------ glyphs
@functools.lru_cache(maxsize=1)
def _font():
    from fontTools.ttLib import TTFont

    font = TTFont(str(REPORT_FONT), lazy=True)
    return font, font.getBestCmap(), font.getGlyphSet()


def glyph_outlines(text: str) -> dict:
    """Outlines (SVG path data, font units, y up) and advances of the distinct characters of text."""
    from fontTools.pens.svgPathPen import SVGPathPen

    font, cmap, glyphs = _font()
    upem = font["head"].unitsPerEm
    hhea = font["hhea"]
    out, missing = {}, []
    for ch in dict.fromkeys(text):
        if len(out) + len(missing) >= MAX_GLYPHS:
            break
        name = cmap.get(ord(ch))
        if name is None:
            missing.append(ch)
            continue
        pen = SVGPathPen(glyphs)
        glyphs[name].draw(pen)
        out[ch] = {"d": pen.getCommands(), "adv": glyphs[name].width}
    return {"units_per_em": upem, "ascender": hhea.ascent, "descender": hhea.descent, "glyphs": out, "missing": missing}
