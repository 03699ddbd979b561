"""A run folder downloaded from the train page, checked before ``attnlab serve`` lists it.

The page writes ``browser_run.json`` beside the run's files: the sha256 of each of them, the
number of steps and the sha256 of the initial weights it started from. A folder holding that file
is listed only when every file named there is present and unchanged, metrics.jsonl holds exactly
the steps 0..n-1, config.json is a valid config equal to summary.json's, and the initial weights
attnlab builds for that config and seed are the ones the run started from. Anything else (a
truncated download, an edited file, a config.json swapped in from another run) is refused with
one line naming the problem; serve shows it among the folders it skipped.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from .runfiles import RunsRoot

MANIFEST = "browser_run.json"
FORMAT = "attnlab-browser-run-v1"
REQUIRED = ("config.json", "metrics.jsonl", "summary.json")
MAX_FILE = 64 * 10**6  # bytes of one file of a browser run (1500 steps are about 1.5 MB)


def is_browser_run(root: RunsRoot, parts: tuple) -> bool:
    return root.lstat((*parts, MANIFEST)) is not None


def problem(root: RunsRoot, parts: tuple) -> str | None:
    """None when the browser run in root/parts is intact, else one line saying what is wrong."""
    stamp = tuple(_stamp(root, (*parts, name)) for name in (MANIFEST, *REQUIRED))
    return _problem(root.root, parts, stamp)


def _stamp(root: RunsRoot, parts: tuple):
    st = root.lstat(parts)
    return None if st is None else (st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=256)
def _problem(root_path, parts: tuple, stamp: tuple) -> str | None:
    root = RunsRoot(root_path)
    fix = "download it again from the train page (动手训练), or move the folder away"
    try:
        manifest = json.loads(root.read_bytes((*parts, MANIFEST), 10**6))
        files, steps, init = manifest["files"], manifest["steps"], manifest["init_sha256"]
        if manifest.get("format") != FORMAT or not isinstance(files, dict) or not isinstance(steps, int):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return f"{MANIFEST} is not the train page's manifest; {fix}"
    for name in REQUIRED:
        if name not in files:
            return f"{MANIFEST} names no {name}; {fix}"
    texts = {}
    for name, digest in files.items():
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            return f"{MANIFEST} names a file outside the run folder ({str(name)[:40]!r}); {fix}"
        try:
            raw = root.read_bytes((*parts, name), MAX_FILE)
        except OSError:
            return f"{name} is missing or unreadable (a truncated download?); {fix}"
        if hashlib.sha256(raw).hexdigest() != digest:
            return f"{name} was changed after the download (its sha256 differs from {MANIFEST}); {fix}"
        texts[name] = raw.decode("utf-8", errors="replace")
    lines = [line for line in texts["metrics.jsonl"].splitlines() if line.strip()]
    try:
        got = [json.loads(line)["step"] for line in lines]
    except (ValueError, KeyError, TypeError):
        return f"metrics.jsonl has a line that is not a step record; {fix}"
    if got != list(range(steps)):
        return f"metrics.jsonl holds {len(got)} steps, not the steps 0..{steps - 1} {MANIFEST} promises; {fix}"
    from ..config import Config
    from ..errors import AttnlabError

    try:
        cfg = Config.from_dict(json.loads(texts["config.json"]))
        summary = json.loads(texts["summary.json"])
    except (AttnlabError, ValueError, TypeError) as e:
        return f"config.json is not a valid config ({str(e)[:120]}); {fix}"
    if not isinstance(summary, dict) or summary.get("config") != json.loads(texts["config.json"]):
        return f"summary.json belongs to another config than config.json; {fix}"
    if init != _init_sha256(json.dumps(cfg.to_dict(), sort_keys=True)):
        return (
            f"the run did not start from attnlab's initial weights for its config.json (another config "
            f"or seed than it was trained with); {fix}"
        )
    return None


@lru_cache(maxsize=32)
def _init_sha256(cfg_json: str) -> str:
    from ..config import Config
    from .trainexport import init_sha256, init_weights

    return init_sha256(init_weights(Config.from_dict(json.loads(cfg_json))))
