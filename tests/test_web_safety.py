"""The playground answers only its own Host, never follows a symlink under runs/,
answers HEAD on pages and lists run folders with any printable Unicode name."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.web.server import allowed_hosts, create_app  # noqa: E402

ROW = {"step": 0, "loss": 3.0, "lr": 0.001, "grad_norm": 1.0}


def _run(root: Path, name: str, rows: int = 3) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "metrics.jsonl").write_text(
        "".join(json.dumps({**ROW, "step": i}) + "\n" for i in range(rows)), encoding="utf-8"
    )
    return d


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    _run(root, "plain")
    _run(root, "春晓 run")  # CJK and a space
    outside = _run(tmp_path / "outside", "secret", rows=7)
    (root / "linked-dir").symlink_to(outside, target_is_directory=True)
    d = root / "linked-file"
    d.mkdir()
    (d / "metrics.jsonl").symlink_to(outside / "metrics.jsonl")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "metrics.jsonl").write_text(json.dumps(ROW) + "\n")
    return root


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8123", "127.0.0.1.evil.example", "localhost.:8123", "127.0.0.1:9999"]
)
def test_other_hosts_get_421(runs, host):
    app = create_app(None, runs_dir=str(runs), hosts=allowed_hosts("127.0.0.1", 8123))
    c = TestClient(app, base_url=f"http://{host}")
    for path in ("/api/runs", "/api/runs/plain", "/", "/api/case", "/static/style.css"):
        r = c.get(path)
        assert r.status_code == 421 and "answers only" in r.json()["detail"], (host, path)
    assert c.post("/api/attention", json={"text": "床前"}).status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1:8123", "localhost:8123", "LOCALHOST:8123", "lab.local:8123"])
def test_own_hosts_are_answered(runs, host):
    app = create_app(None, runs_dir=str(runs), hosts=allowed_hosts("lab.local", 8123))
    assert TestClient(app, base_url=f"http://{host}").get("/api/runs").status_code == 200


def test_default_app_answers_loopback_names_only(runs):
    app = create_app(None, runs_dir=str(runs))
    assert TestClient(app, base_url="http://127.0.0.1:5000").get("/api/runs").status_code == 200
    assert TestClient(app, base_url="http://localhost").get("/api/runs").status_code == 200
    assert TestClient(app, base_url="http://[::1]:5000").get("/api/runs").status_code == 200
    assert TestClient(app, base_url="http://evil.example").get("/api/runs").status_code == 421


def test_symlinks_refused_at_every_level_and_unicode_names_listed(runs):
    c = TestClient(create_app(None, runs_dir=str(runs)), base_url="http://127.0.0.1")
    assert c.get("/api/runs").json()["runs"] == sorted(["plain", "春晓 run"])
    for name in ("linked-dir", "linked-file", ".hidden", "..", "secret"):
        r = c.get(f"/api/runs/{name}")
        assert r.status_code == 404 and "7" not in str(r.json().get("rows", "")), name
    r = c.get("/api/runs/春晓 run")
    assert r.status_code == 200 and r.json()["rows"] == 3 and r.json()["name"] == "春晓 run"


def test_head_on_pages(runs):
    c = TestClient(create_app(None, runs_dir=str(runs)), base_url="http://127.0.0.1")
    for page in ("/", "/lookup", "/exp1-1", "/exp1-2", "/runs"):
        r = c.head(page)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html") and not r.content


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_attnlab_serve_refuses_a_foreign_host_header(runs):
    """`curl -H 'Host: evil.example' http://127.0.0.1:PORT/api/runs` against the real command."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnlab.cli", "serve", "--port", str(port), "--runs-dir", str(runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        deadline = time.time() + 60

        def get(host: str) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/runs", headers={"Host": host})
            status = conn.getresponse().status
            conn.close()
            return status

        while True:
            try:
                ok = get(f"127.0.0.1:{port}")
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert ok == 200
        assert get(f"localhost:{port}") == 200
        assert get("evil.example") == 421
        assert get(f"evil.example:{port}") == 421
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_on_a_busy_port_or_unknown_host_is_one_line(capsys):
    from attnlab.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"cannot listen on 127.0.0.1:{port}" in err
    assert main(["serve", "--host", "no-such-host.invalid"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not an address of this machine" in err
