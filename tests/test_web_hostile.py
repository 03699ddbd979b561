"""Hostile run folders and requests against the playground (issue 24): the server never follows a
symlink below the runs directory, never answers 5xx, and bounds what it decompresses.

``test_hostile_probe_table`` sends every request of the table to an app whose runs directory holds
every damaged or hostile run folder below, and prints the counts the issue's note reports:
probes / 2xx / 4xx / 5xx / symlink reads (run with ``-s`` to see them).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.snapshots import SnapshotError, Snapshots, read_snapshots  # noqa: E402
from attnlab.web import timeline as tl  # noqa: E402
from attnlab.web.server import create_app  # noqa: E402

SECRET_PROBE = "OUTSIDE-SECRET"
SECRET_STEPS = 777777
SECRET_LOSS = 77.7777
MARKERS = (SECRET_PROBE, str(SECRET_STEPS), str(SECRET_LOSS))
PROBE = "床前明月"


# ------------------------------------------------------------------------ building run folders
def _metrics(rows: int = 3, loss: float = 3.0) -> str:
    return "".join(
        json.dumps({"step": i, "loss": loss, "lr": 1e-3, "layers": [{"weight_entropy": 1.0}]}) + "\n"
        for i in range(rows)
    )


def _snap_bytes(probe: str = PROBE, meta=None) -> bytes:
    T, N = len(probe), 2
    patterns = np.tril(np.ones((T, T), np.float16)) / np.arange(1, T + 1, dtype=np.float16)[:, None]
    patterns = np.broadcast_to(patterns, (N, 1, 2, T, T)).copy()
    metrics = np.zeros((N, 1, 2, 6), np.float32)
    m = meta if meta is not None else {"format": 1, "probe": probe, "tokens": list(probe), "metrics": list("abcdef")}
    return Snapshots(np.arange(N, dtype=np.int64), patterns, metrics, m).to_bytes()


def _npy_header(shape, descr="<f2") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _npz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _members(snap: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(snap)) as z:
        return {n: z.read(n) for n in z.namelist()}


def _bomb(path: Path, mb: int = 400) -> None:
    """A snapshots.npz of a few hundred kB whose patterns inflate to ``mb`` MB (a valid npy)."""
    T = int((mb * 2**20 / 2) ** 0.5)
    header = _npy_header((1, 1, 1, T, T))
    ok = _members(_snap_bytes())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name in ("steps.npy", "metrics.npy", "meta.npy"):
            z.writestr(name, ok[name])
        with z.open("patterns.npy", "w", force_zip64=True) as f:
            f.write(header)
            left, chunk = T * T * 2, bytes(8 << 20)
            while left:
                f.write(chunk[: min(left, len(chunk))])
                left -= min(left, len(chunk))


def _run(root: Path, name: str, metrics: str | bytes | None = None, **files) -> Path:
    d = root / name
    d.mkdir(parents=True)
    m = _metrics() if metrics is None else metrics
    (d / "metrics.jsonl").write_bytes(m.encode() if isinstance(m, str) else m)
    for fname, data in files.items():
        fname = fname.replace("_", ".")
        (d / fname).write_bytes(data.encode() if isinstance(data, str) else data)
    return d


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "runs", base / "outside"
    secret = _run(
        outside,
        "secret",
        metrics=_metrics(7, SECRET_LOSS),
        snapshots_npz=_snap_bytes(SECRET_PROBE),
        config_json=json.dumps({"max_steps": SECRET_STEPS}),
        summary_json="{}",
        tokenizer_json=json.dumps({"itos": [SECRET_PROBE]}),
    )
    ok = {"snapshots_npz": _snap_bytes(), "config_json": json.dumps({"max_steps": 3})}
    _run(root, "good", **ok, summary_json="{}")
    _run(root, "春晓运行", **ok)  # a Chinese run name
    # symlinks at every level
    _run(root, "link-snap", config_json=ok["config_json"])
    (root / "link-snap" / "snapshots.npz").symlink_to(secret / "snapshots.npz")
    _run(root, "link-config", snapshots_npz=ok["snapshots_npz"])
    (root / "link-config" / "config.json").symlink_to(secret / "config.json")
    _run(root, "link-summary")
    (root / "link-summary" / "summary.json").symlink_to(secret / "summary.json")
    _run(root, "link-tokenizer")
    (root / "link-tokenizer" / "tokenizer.json").symlink_to(secret / "tokenizer.json")
    (root / "link-metrics").mkdir()
    (root / "link-metrics" / "metrics.jsonl").symlink_to(secret / "metrics.jsonl")
    (root / "link-dir").symlink_to(secret, target_is_directory=True)
    _run(root / "group", "inner", **ok)
    (root / "group" / "linked").symlink_to(secret, target_is_directory=True)
    (root / "link-group").symlink_to(outside, target_is_directory=True)
    # a FIFO where a file should be: opening it must not block the server
    _run(root, "fifo")
    os.mkfifo(root / "fifo" / "snapshots.npz")
    os.mkfifo(root / "fifo" / "config.json")
    # malformed metrics lines: each is skipped, not the run's curves
    bad_lines = [
        json.dumps({"step": 0, "loss": 3.0}),
        json.dumps({"step": 1, "loss": 2.0, "layers": 5}),
        "[" * 100_000,
        json.dumps({"step": "x", "loss": 1.0}),
        json.dumps({"step": 2, "loss": 1.0, "layers": [{}] * 5000}),
        '{"step": 1e999, "loss": 1}',
        json.dumps({"step": 2, "loss": 1.0, "pad": "x" * (2 << 20)}),
        '\xff\xfe{"step": 3}',
        "[1, 2, 3]",
        json.dumps({"step": 4, "loss": 1.0}),
    ]
    _run(root, "layers5", metrics="\n".join(bad_lines) + "\n")
    # damaged and hostile snapshot files
    _run(root, "meta-list", snapshots_npz=_snap_bytes(meta=[1, 2]))
    _run(root, "meta-deep", snapshots_npz=_npz({**_members(_snap_bytes()), "meta.npy": _npy_meta("[" * 100_000)}))
    tib = {**_members(_snap_bytes()), "patterns.npy": _npy_header((1, 1, 1, 1_400_000, 1_400_000)) + bytes(64)}
    _run(root, "huge-header", snapshots_npz=_npz(tib))
    obj = {**_members(_snap_bytes()), "steps.npy": _npy_header((2,), "|O") + bytes(16)}
    _run(root, "object-dtype", snapshots_npz=_npz(obj))
    _run(root, "garbage", snapshots_npz=os.urandom(4096))
    _run(root, "extra-members", snapshots_npz=_npz({**_members(_snap_bytes()), "x.npy": b"0"}))
    _run(root, "bomb")
    _bomb(root / "bomb" / "snapshots.npz")
    # damaged config, odd metrics files, clocks
    _run(root, "config-deep", config_json="[" * 100_000)
    _run(root, "config-bytes", config_json=b"\xff\xfe\x00")
    _run(root, "empty", metrics="")
    (root / "metrics-dir" / "metrics.jsonl").mkdir(parents=True)
    future = _run(root, "future")
    t = time.time() + 86_400
    os.utime(future / "metrics.jsonl", (t, t))
    bad_case = base / "case.json"
    bad_case.write_text("[" * 100_000)
    bad_book = base / "book.html"
    bad_book.write_bytes(b"<html>\xff\xfe</html>")
    return {"root": root, "outside": outside, "case": bad_case, "book": bad_book}


def _npy_meta(text: str) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array(text))
    return buf.getvalue()


def _client(lab, **kw):
    app = create_app(None, runs_dir=str(lab["root"]), case_json=str(lab["case"]), book_html=str(lab["book"]), **kw)
    return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)


class OutsideOpens:
    """Counts files opened (by path) that resolve into the outside folder (an audit hook)."""

    def __init__(self, outside: Path):
        self.outside = str(outside.resolve())
        self.count, self.on = 0, False
        sys.addaudithook(self)

    def __call__(self, event, args):
        if not self.on or event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = os.fsdecode(args[0])
        if os.path.isabs(path) and os.path.realpath(path).startswith(self.outside):
            self.count += 1


RUNS = [
    "good",
    "春晓运行",
    "link-snap",
    "link-config",
    "link-summary",
    "link-tokenizer",
    "link-metrics",
    "link-dir",
    "group/inner",
    "group/linked",
    "link-group/secret",
    "fifo",
    "layers5",
    "meta-list",
    "meta-deep",
    "huge-header",
    "object-dtype",
    "garbage",
    "extra-members",
    "bomb",
    "config-deep",
    "config-bytes",
    "empty",
    "metrics-dir",
    "future",
]
HOSTILE_NAMES = [
    "..",
    "%2e%2e",
    "..%2Foutside%2Fsecret",
    "group/..%2Flink-dir",
    "group/../link-dir",
    "%2Fetc%2Fpasswd",
    "secret",
    "good%00",
    "good/",
    "a" * 5000,
    "\u202egood",
    " good",
    "good/metrics.jsonl",
    "group/inner/x",
    ".",
    "%ff%fe",
    "春晓运行%2F..",
    "good%0A",
    "group/inner%0A",
    "good%0D",
    "good%C2%85",
    "%0Agood",
]


def _requests() -> list[tuple[str, str, dict]]:
    reqs = [("GET", p, {}) for p in ("/api/live", "/api/runs", "/api/case", "/book", "/api/info", "/runs", "/timeline")]
    for name in RUNS + HOSTILE_NAMES:
        reqs += [("GET", f"/api/timeline/{name}", {}), ("GET", f"/api/runs/{name}", {})]
    reqs += [("GET", f"/static/{p}", {}) for p in ("../server.py", "%2e%2e/runfiles.py", "style.css")]
    deep = "[" * 8000 + "]" * 8000
    bodies = [
        deep,
        '{"text": ' + deep[:6000] + "}",
        b"\xff\xfe\x00",
        '{"text": "\\ud800"}',
        '{"text": 5}',
        '{"text": "x", "path": "../../etc/passwd"}',
        "x" * 20_000,
        "",
    ]
    for body in bodies:
        for path in ("/api/glyphs", "/api/attention", "/api/timeline/good"):
            reqs.append(("POST", path, {"content": body, "headers": {"content-type": "application/json"}}))
    for method in ("HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"):
        for path in ("/api/live", "/api/runs/good", "/api/timeline/good", "/api/glyphs", "/book", "/"):
            reqs.append((method, path, {}))
    for query in ("?run=../../etc", "?x=" + "%00" * 100, "?" + "a=1&" * 500, "?run=春晓运行"):
        reqs += [("GET", "/api/live" + query, {}), ("GET", "/api/timeline/good" + query, {})]
    reqs += [
        ("POST", "/api/glyphs", {"content": b"{}", "headers": {"content-length": "abc"}}),
        ("POST", "/api/glyphs", {"content": b"{}", "headers": {"content-length": str(10**30)}}),
        ("GET", "/api/live", {"headers": {"host": "evil.example"}}),
    ]
    return reqs


def test_hostile_probe_table(lab, monkeypatch, capsys):
    c = _client(lab)
    watch = OutsideOpens(lab["outside"])
    statuses, leaks, bodies = [], [], {}
    watch.on = True
    try:
        for method, path, kw in _requests():
            t0 = time.perf_counter()
            r = c.request(method, path, **kw)
            took = time.perf_counter() - t0
            statuses.append(r.status_code)
            bodies.setdefault((method, path), r)
            if any(m in r.text for m in MARKERS):
                leaks.append(path)
            assert took < 10, (path, took)  # nothing hangs (FIFO, bomb)
            assert r.status_code < 500, (method, path, r.status_code, r.text[:200])
        # a run folder removed between the listing and the read
        real = tl.run_dirs
        monkeypatch.setattr(tl, "run_dirs", lambda root: {**real(root), "ghost": ("ghost",)})
        r = c.get("/api/live")
        statuses.append(r.status_code)
        assert r.status_code == 200 and "ghost" not in {x["name"] for x in r.json()["runs"]}
    finally:
        watch.on = False
    n4 = sum(400 <= s < 500 for s in statuses)
    n5 = sum(s >= 500 for s in statuses)
    with capsys.disabled():
        print(
            f"\nattnlab HTTP probes: {len(statuses)} requests over {len(RUNS)} hostile run folders; "
            f"2xx {sum(s < 300 for s in statuses)}, 4xx {n4}, 5xx {n5}, "
            f"symlink reads {watch.count + len(leaks)} (outside files opened {watch.count}, responses with outside content {len(leaks)})"
        )
    assert n5 == 0 and not leaks and watch.count == 0, leaks

    live = {x["name"]: x for x in bodies[("GET", "/api/live")].json()["runs"]}
    listed = set(live)
    assert {"good", "春晓运行", "group/inner", "layers5", "bomb", "future"} <= listed
    assert not listed & {"link-metrics", "link-dir", "group/linked", "link-group/secret", "metrics-dir"}
    assert live["good"]["state"] == "finished" and live["good"]["max_steps"] == 3
    assert live["link-summary"]["state"] != "finished"  # the linked summary.json is not seen
    assert live["link-config"]["max_steps"] is None and live["link-snap"]["snapshots"] is False
    assert live["future"]["state"] == "stopped"  # stamped a day ahead: not "running" forever
    assert live["config-deep"]["max_steps"] is None and live["config-bytes"]["max_steps"] is None
    assert live["fifo"]["max_steps"] is None and live["fifo"]["snapshots"] is False

    def timeline(name):
        return bodies[("GET", f"/api/timeline/{name}")]

    cn = timeline("春晓运行").json()
    assert cn["snapshots"]["probe"] == PROBE and cn["snapshot_error"] is None
    assert bodies[("GET", "/api/runs")].json()["runs"].count("春晓运行") == 1
    m = timeline("layers5").json()["metrics"]
    assert m["step"] == [0, 4] and m["skipped_lines"] == 8  # every malformed line skipped, the rest kept
    for name in ("meta-list", "meta-deep", "huge-header", "object-dtype", "garbage", "extra-members", "bomb"):
        d = timeline(name).json()
        assert d["snapshots"] is None and "损坏" in d["snapshot_error"] and d["metrics"]["rows"] == 3, name
        assert str(lab["root"]) not in d["snapshot_error"]
    runs_js = (Path(tl.__file__).parent / "static" / "runs.js").read_text(encoding="utf-8")
    assert f'{tl.DAMAGED}: "损坏' in runs_js  # the page names the server's damaged state
    assert "1400000" in timeline("huge-header").json()["snapshot_error"]  # refused from the header alone
    assert "bytes of snapshots uncompressed" in timeline("bomb").json()["snapshot_error"]
    for name in ("link-dir", "group/linked", "link-group/secret", "link-metrics", *HOSTILE_NAMES):
        assert timeline(name).status_code in (404, 422), name
    assert bodies[("GET", "/api/case")].status_code == 422
    book = bodies[("GET", "/book")]  # a page the reader followed a link to: it says why, in HTML
    assert book.status_code == 422 and "UTF-8" in book.text and book.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("fd_walk", [True, False], ids=["dir-fd", "lstat-walk"])
def test_symlinked_files_are_never_served(lab, fd_walk, monkeypatch):
    """``ln -sf /elsewhere/snapshots.npz runs/r/snapshots.npz`` (and config.json, a linked subfolder):
    the outside maps, probe text and max_steps never reach a response."""
    from attnlab.web import runfiles

    monkeypatch.setattr(runfiles, "FD_WALK", fd_walk)
    tl._SNAPS.clear()
    c = _client(lab)
    d = c.get("/api/timeline/link-snap").json()
    assert d["snapshots"] is None and SECRET_PROBE not in json.dumps(d)
    assert c.get("/api/runs/link-snap").json()["sinks"] is None
    live = {x["name"]: x for x in c.get("/api/live").json()["runs"]}
    assert live["link-config"]["max_steps"] is None
    assert c.get("/api/timeline/link-config").json()["max_steps"] is None
    assert c.get("/api/timeline/group/linked").status_code == 404
    assert "group/linked" not in live and "link-group/secret" not in live
    for r in (c.get("/api/live"), c.get("/api/runs"), c.get("/api/timeline/link-summary")):
        assert not any(m in r.text for m in MARKERS)


@pytest.mark.parametrize("fd_walk", [True, False], ids=["dir-fd", "lstat-walk"])
def test_a_link_swapped_in_after_the_listing_is_refused(lab, tmp_path, fd_walk):
    """The check and the read are one: the file is opened O_NOFOLLOW below descriptors of its folders
    (or, without dir_fd, after an lstat of every component)."""
    from attnlab.web.runfiles import RunFileError, RunsRoot

    root = tmp_path / "runs"
    d = _run(root, "r")
    rr = RunsRoot(root, fd_walk=fd_walk)
    assert rr.read_text("r/metrics.jsonl", 1 << 20).startswith('{"step": 0')
    (d / "metrics.jsonl").unlink()
    (d / "metrics.jsonl").symlink_to(lab["outside"] / "secret" / "metrics.jsonl")
    with pytest.raises(RunFileError):
        rr.open("r/metrics.jsonl")
    d.rename(tmp_path / "r-real")
    (root / "r").symlink_to(lab["outside"] / "secret", target_is_directory=True)
    with pytest.raises(RunFileError):
        rr.open("r/config.json")
    assert rr.lstat("r/config.json") is None and rr.listdir("r") == []
    with pytest.raises(RunFileError):
        rr.open("../outside/secret/config.json")


def test_snapshot_files_are_decompressed_once_per_version(lab, monkeypatch):
    """A bomb is refused from the zip directory alone (no inflating), and a good file is read once."""
    import attnlab.snapshots as snapshots

    calls = []
    real = snapshots.read_snapshots_from
    monkeypatch.setattr(snapshots, "read_snapshots_from", lambda *a, **k: calls.append(1) or real(*a, **k))
    tl._SNAPS.clear()
    c = _client(lab)
    t0 = time.perf_counter()
    for _ in range(3):
        assert c.get("/api/timeline/bomb").json()["snapshots"] is None
        assert c.get("/api/timeline/good").json()["snapshots"]["steps"] == [0, 1]
    assert time.perf_counter() - t0 < 5 and len(calls) == 2
    os.utime(lab["root"] / "good" / "snapshots.npz")  # a new version is read again
    c.get("/api/timeline/good")
    assert len(calls) == 3


def test_damaged_metrics_file_is_a_damaged_run_not_a_lost_page(lab, monkeypatch):
    monkeypatch.setattr(tl, "MAX_METRICS_BYTES", 10)
    c = _client(lab)
    live = {x["name"]: x for x in c.get("/api/live").json()["runs"]}
    assert live["good"]["state"] == "damaged" and "metrics.jsonl" in live["good"]["problem"]
    d = c.get("/api/timeline/good")
    assert d.status_code == 200 and d.json()["state"] == "damaged" and "损坏" in d.json()["error"]
    r = c.get("/api/runs/good")
    assert r.status_code == 422 and "损坏" in r.json()["detail"]


def test_read_snapshots_refuses_hostile_files_in_one_message(tmp_path):
    cases = {
        "meta-list": _snap_bytes(meta=[1, 2]),
        "huge": _npz({**_members(_snap_bytes()), "patterns.npy": _npy_header((1, 1, 1, 1_400_000, 1_400_000))}),
        "negative": _npz({**_members(_snap_bytes()), "patterns.npy": _npy_header((1, 1, 1, -4, 4))}),
        "deep": _npz({**_members(_snap_bytes()), "meta.npy": _npy_meta("[" * 100_000)}),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SnapshotError) as e:
            read_snapshots(tmp_path / name)
        assert str(tmp_path / name) in str(e.value) and "\n" not in str(e.value), name
    (tmp_path / "ok").write_bytes(_snap_bytes())
    assert read_snapshots(tmp_path / "ok").meta["probe"] == PROBE
    with pytest.raises(SnapshotError, match="more than the 1,000"):
        read_snapshots(tmp_path / "ok", max_bytes=1000)


# ------------------------------------------------------------------------ slow connections
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> float | None:
    """Seconds until the server closed ``sock`` (sending ``trickle`` a byte at a time meanwhile), or None."""
    sock.settimeout(0.1)
    t0 = time.monotonic()
    for i in range(10_000):
        if time.monotonic() - t0 > seconds:
            return None
        try:
            if trickle:
                sock.sendall(trickle[i % len(trickle) : i % len(trickle) + 1])
            data = sock.recv(4096)
            if not data:
                return time.monotonic() - t0
        except TimeoutError:
            continue
        except OSError:  # reset or broken pipe: closed
            return time.monotonic() - t0
    return None


@contextlib.contextmanager
def _serving(app, **timeouts):
    """``attnlab serve``'s uvicorn configuration in a daemon thread; yields the port."""
    import uvicorn

    from attnlab.web.httpserver import server_config

    port = _free_port()
    server = uvicorn.Server(server_config(app, port=port, **timeouts))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 20
        while not server.started:
            assert time.time() < deadline and thread.is_alive()
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_slow_connections_are_closed_within_the_timeouts(tmp_path):
    app = create_app(None, runs_dir=str(tmp_path))
    socks = []
    with _serving(app, header_timeout=1.0, body_timeout=1.0) as port:
        host = f"127.0.0.1:{port}".encode()
        head = b"GET /api/runs HTTP/1.1\r\nHost: " + host + b"\r\n"
        post = b"POST /api/glyphs HTTP/1.1\r\nHost: " + host + b"\r\nContent-Length: 500\r\n\r\n"
        try:
            for kind in ["silent"] * 10 + ["slow-head"] * 10 + ["slow-body"] * 10:
                s = socket.create_connection(("127.0.0.1", port))
                if kind == "slow-body":
                    s.sendall(post)
                elif kind == "slow-head":
                    s.sendall(head)
                socks.append((kind, s))
            results = {}
            for kind, s in socks:
                trickle = b"X-Pad: aaaaaaaa\r\n" if kind == "slow-head" else b"[" if kind == "slow-body" else b""
                results.setdefault(kind, []).append(_closed_within(s, 4.0, trickle))
            for kind, times in results.items():
                assert all(t is not None for t in times), (kind, times)  # none still open after 4 s
            # a normal request on a fresh connection is still answered
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(head + b"\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            s.close()
        finally:
            for _, s in socks:
                s.close()


def test_no_5xx_while_runs_change_under_200_requests(tmp_path):
    """Run folders removed, recreated, their snapshots replaced and metrics appended while four
    clients read /api/live, /api/runs and every run's timeline: never a 5xx."""
    import http.client
    import shutil

    root = tmp_path / "runs"
    for i in range(4):
        _run(root, f"r{i}", snapshots_npz=_snap_bytes(), config_json='{"max_steps": 3}')
    stop, statuses = threading.Event(), []

    def churn():
        k = 0
        while not stop.is_set():
            d = root / f"r{k % 4}"
            shutil.rmtree(d, ignore_errors=True)
            _run(root, d.name, snapshots_npz=_snap_bytes(), config_json='{"max_steps": 3}')
            tmp = d / "snapshots.npz.tmp"
            tmp.write_bytes(_snap_bytes(meta=[1]) if k % 3 == 0 else _snap_bytes())
            os.replace(tmp, d / "snapshots.npz")
            with (root / "r0" / "metrics.jsonl").open("a") as f:
                f.write('{"step": 9, "loss": 1.0, "lay')  # a line cut mid-write
            k += 1

    def client(port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for j in range(50):
            path = ("/api/live", "/api/runs", f"/api/timeline/r{j % 4}", f"/api/runs/r{j % 4}")[j % 4]
            conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
            r = conn.getresponse()
            r.read()
            statuses.append(r.status)
        conn.close()

    with _serving(create_app(None, runs_dir=str(root))) as port:
        mutator = threading.Thread(target=churn, daemon=True)
        mutator.start()
        readers = [threading.Thread(target=client, args=(port,)) for _ in range(4)]
        for t in readers:
            t.start()
        for t in readers:
            t.join(timeout=60)
        stop.set()
        mutator.join(timeout=10)
    assert len(statuses) == 200 and all(s < 500 for s in statuses), sorted(set(statuses))


def _raw_requests(port: int) -> list[tuple[str, bytes]]:
    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (1000, b"a" * 1000) for _ in range(20)) + b"0\r\n\r\n"
    return [
        ("garbage", b"GARBAGE\r\n\r\n"),
        ("tls hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\xaa" * 300),  # https to http
        ("unfinished head", b"GET /api/live HTTP/1.1\r\n" + host),
        ("long target", b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n" + host + b"\r\n"),
        ("long header", b"GET /api/live HTTP/1.1\r\n" + host + b"X-A: " + b"a" * 20_000 + b"\r\n\r\n"),
        (
            "many headers",
            b"GET /api/live HTTP/1.1\r\n" + host + b"".join(b"X-%d: 1\r\n" % i for i in range(3000)) + b"\r\n",
        ),
        ("no host", b"GET /api/live HTTP/1.1\r\n\r\n"),
        ("http/1.0 no host", b"GET /api/live HTTP/1.0\r\n\r\n"),
        ("two hosts", b"GET /api/live HTTP/1.1\r\n" + host + host + b"\r\n"),
        ("foreign host", b"GET /api/live HTTP/1.1\r\nHost: evil.example\r\n\r\n"),
        ("non-ascii host", b"GET /api/live HTTP/1.1\r\nHost: \xff\xfe\r\n\r\n"),
        ("absolute uri", b"GET http://evil.example/api/live HTTP/1.1\r\n" + host + b"\r\n"),
        ("raw utf-8 target", "GET /api/timeline/春晓运行 HTTP/1.1\r\n".encode() + host + b"\r\n"),
        ("nul in target", b"GET /api/runs/good\x00 HTTP/1.1\r\n" + host + b"\r\n"),
        ("dot-dot target", b"GET /../../etc/passwd HTTP/1.1\r\n" + host + b"\r\n"),
        ("encoded dot-dot", b"GET /api/timeline/%2e%2e/%2e%2e/outside/secret HTTP/1.1\r\n" + host + b"\r\n"),
        ("linked snapshots", b"GET /api/timeline/link-snap HTTP/1.1\r\n" + host + b"\r\n"),
        ("linked config", b"GET /api/timeline/link-config HTTP/1.1\r\n" + host + b"\r\n"),
        (
            "chunked 20 kB body",
            b"POST /api/glyphs HTTP/1.1\r\n" + host + b"Transfer-Encoding: chunked\r\n\r\n" + chunked,
        ),
        (
            "cl and te",
            b"POST /api/glyphs HTTP/1.1\r\n"
            + host
            + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        ("negative cl", b"POST /api/glyphs HTTP/1.1\r\n" + host + b"Content-Length: -1\r\n\r\n"),
        ("huge cl", b"POST /api/glyphs HTTP/1.1\r\n" + host + b"Content-Length: 99999999999999999999\r\n\r\n"),
        ("bad chunk", b"POST /api/glyphs HTTP/1.1\r\n" + host + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n"),
        ("websocket", b"GET /api/live HTTP/1.1\r\n" + host + b"Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
        (
            "pipelined",
            (b"GET /api/live HTTP/1.1\r\n" + host + b"\r\n") * 19
            + b"GET / HTTP/1.1\r\n"
            + host
            + b"Connection: close\r\n\r\n",
        ),
        ("bare lf", b"GET /api/live HTTP/1.1\n" + host.replace(b"\r\n", b"\n") + b"\n"),
    ]


def test_raw_http_probes_through_uvicorn(lab, capsys):
    """Malformed HTTP at the socket, through `attnlab serve`'s uvicorn configuration: every answer
    is 2xx-4xx (or the connection is closed), never 5xx, never outside content."""
    statuses, closed, leaks, by_label = [], [], [], {}
    with _serving(_client(lab).app, header_timeout=2.0, body_timeout=2.0) as port:
        for label, raw in _raw_requests(port):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            data = b""
            try:
                s.sendall(raw)
                while chunk := s.recv(65536):
                    data += chunk
                    if data.startswith(b"HTTP/") and label != "pipelined":
                        break
            except TimeoutError:
                pass
            except OSError:  # reset by the server
                pass
            finally:
                s.close()
            codes = [int(c) for c in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)]
            if not codes:
                closed.append(label)
            by_label[label] = codes
            statuses += codes
            if any(m.encode() in data for m in MARKERS):
                leaks.append(label)
            assert all(c < 500 for c in codes), (label, codes, data[:200])
    with capsys.disabled():
        print(
            f"\nattnlab raw HTTP probes: {len(_raw_requests(0))} malformed requests at the socket; "
            f"{len(statuses)} responses: 2xx {sum(c < 300 for c in statuses)}, "
            f"4xx {sum(400 <= c < 500 for c in statuses)}, 5xx {sum(c >= 500 for c in statuses)}; "
            f"closed without an answer {len(closed)}; outside content {len(leaks)}"
        )
    assert not leaks and closed == ["unfinished head"], (leaks, closed)  # closed at the head deadline
    assert by_label["long header"] == by_label["many headers"] == by_label["long target"] == [431]
    assert by_label["pipelined"] == [200] * 20 and by_label["foreign host"] == [421]
    assert by_label["chunked 20 kB body"] == by_label["huge cl"] == [413]


def test_a_client_that_stops_reading_is_dropped():
    """A response the client stops reading is aborted after body_timeout, not buffered forever."""
    size = 32 << 20
    payload = bytes(size)

    async def big(scope, receive, send):  # a large response, as a timeline of a long run can be
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % size)]})
        await send({"type": "http.response.body", "body": payload})

    with _serving(big, header_timeout=1.0, body_timeout=1.0) as port:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        time.sleep(2.5)  # not reading
        s.settimeout(5)
        got = 0
        try:
            while chunk := s.recv(1 << 20):
                got += len(chunk)
        except OSError:  # reset
            pass
        s.close()
    assert 0 < got < size // 2, got  # what the kernel had buffered, then the server let go
