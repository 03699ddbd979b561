"""Data behind the /timeline page, the live runs table and the SVG export's glyph outlines.

* :func:`list_runs`: every run directory under the runs directory, one or two
  levels deep (``tiny``, ``case/big_unscaled``), each with its state: running
  (metrics.jsonl written in the last ``RUNNING_WINDOW_S`` seconds and no
  summary newer than it), finished (summary.json), or stopped (neither).
* :func:`timeline_payload`: one run's curves (metrics.jsonl) and snapshots
  (snapshots.npz), with each snapshot's attention-sink share per head
  (:func:`sinks_of`), or a clear message when the run has none or the file is
  corrupt: the page shows the message, never a blank.
* :func:`glyph_outlines`: SVG path outlines of characters from the packaged
  CJK font (fontTools, which matplotlib already needs), so an exported SVG
  shows its Chinese on a machine without the font.

Run names are relative paths of one or two components, each a plain name;
nothing else (no "..", no separators beyond the one, no symlinks) is served.
"""

from __future__ import annotations

import functools
import math
import re
import time
from pathlib import Path

import numpy as np

from ..train import METRICS_FILE

RUN_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RUNNING_WINDOW_S = 120.0
MAX_SNAPSHOT_VALUES = 4_000_000  # patterns sent to the page at once (about 25 MB of JSON)
REPORT_FONT = Path(__file__).resolve().parents[1] / "report" / "fonts" / "NotoSansCJKtc-subset.otf"
MAX_GLYPHS = 800


def _is_run(d: Path) -> bool:
    return d.is_dir() and not d.is_symlink() and (d / METRICS_FILE).is_file() and not (d / METRICS_FILE).is_symlink()


def run_dirs(root: Path) -> dict[str, Path]:
    """{name: directory} of runs directly under root or one level below."""
    out: dict[str, Path] = {}
    if not root.is_dir():
        return out
    for d in sorted(root.iterdir()):
        if not RUN_PART.match(d.name) or d.is_symlink() or not d.is_dir():
            continue
        if _is_run(d):
            out[d.name] = d
            continue
        for sub in sorted(d.iterdir()):
            if RUN_PART.match(sub.name) and _is_run(sub):
                out[f"{d.name}/{sub.name}"] = sub
    return out


def resolve_run(root: Path, name: str) -> Path | None:
    """The directory of a listed run, or None (never a path built from unchecked input)."""
    parts = name.split("/")
    if not 1 <= len(parts) <= 2 or not all(RUN_PART.match(p) and p not in (".", "..") for p in parts):
        return None
    return run_dirs(root).get(name)


def _config(d: Path) -> dict:
    import json

    try:
        cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        return cfg if isinstance(cfg, dict) else {}
    except (OSError, ValueError):
        return {}


def _max_steps(d: Path) -> int | None:
    try:
        return int(_config(d)["max_steps"])
    except (KeyError, TypeError, ValueError):
        return None


SHAPE_KEYS = ("n_layer", "n_head", "d_model", "block_size")


def _shape(d: Path) -> list[int] | None:
    """The model's shape (n_layer, n_head, d_model, block_size): a twin must have the same."""
    cfg = _config(d)
    shape = [cfg.get(k) for k in SHAPE_KEYS]
    return shape if all(isinstance(x, int) for x in shape) else None


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def run_state(d: Path, now: float | None = None) -> dict:
    now = time.time() if now is None else now
    metrics = d / METRICS_FILE
    m_time = metrics.stat().st_mtime
    summary = d / "summary.json"
    done = summary.is_file() and summary.stat().st_mtime >= m_time - 1.0
    if done:
        state = "finished"
    elif now - m_time <= RUNNING_WINDOW_S:
        state = "running"
    else:
        state = "stopped"
    return {
        "state": state,
        "steps": _count_lines(metrics),
        "max_steps": _max_steps(d),
        "shape": _shape(d),
        "snapshots": (d / "snapshots.npz").is_file(),
        "updated_s_ago": round(max(0.0, now - m_time), 1),
    }


def list_runs(root: Path) -> list[dict]:
    now = time.time()
    return [{"name": name, **run_state(d, now)} for name, d in run_dirs(root).items()]


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def snapshots_payload(d: Path) -> dict:
    """{"snapshots": {...}} or {"snapshot_error": message}."""
    from attnlab.snapshots import FILENAME, SnapshotError, read_snapshots

    path = d / FILENAME
    if not path.is_file():
        return {
            "snapshots": None,
            "snapshot_error": "这次训练没有注意力快照（它早于这个功能，或 snapshot_every=0）；重新训练即可得到。 "
            "This run has no attention snapshots (it predates them or ran with snapshot_every=0); "
            "train it again to get them.",
        }
    try:
        snap = read_snapshots(path)
    except SnapshotError as e:
        return {"snapshots": None, "snapshot_error": f"快照文件损坏，无法读取。 {e}".replace(str(d), d.name)}
    if snap.patterns.size > MAX_SNAPSHOT_VALUES:
        return {
            "snapshots": None,
            "snapshot_error": f"快照太大，无法在页面中显示。 The snapshots hold {snap.patterns.size:,} weights, "
            f"more than the page shows ({MAX_SNAPSHOT_VALUES:,}); use a shorter probe.",
        }
    patterns = np.round(snap.patterns.astype(np.float64), 4)
    metrics = [[[[_num(v) for v in head] for head in layer] for layer in step] for step in snap.metrics]
    return {
        "snapshots": {
            "steps": snap.steps.tolist(),
            "probe": snap.meta.get("probe"),
            "tokens": snap.meta.get("tokens"),
            "metric_names": snap.meta.get("metrics"),
            "patterns": patterns.tolist(),  # (N, L, nh, T, T)
            "metrics": metrics,  # (N, L, nh, M)
            "sinks": sinks_of(snap.patterns),
        },
        "snapshot_error": None,
    }


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


def run_sinks(d: Path) -> dict | None:
    """A run's sink shares by snapshot step ({"steps", "share", "baseline", "threshold"}), or None
    when it has no readable snapshots (the runs page then draws no sink chart)."""
    from attnlab.snapshots import FILENAME, SnapshotError, read_snapshots

    try:
        snap = read_snapshots(d / FILENAME)
    except SnapshotError:
        return None
    return {"steps": snap.steps.tolist(), **sinks_of(snap.patterns)}


def timeline_payload(root: Path, name: str, read_metrics) -> dict | None:
    d = resolve_run(root, name)
    if d is None:
        return None
    return {"name": name, **run_state(d), "metrics": read_metrics(d / METRICS_FILE), **snapshots_payload(d)}


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
