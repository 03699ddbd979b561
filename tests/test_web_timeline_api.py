"""The timeline's API: run listing with states, one run's curves and snapshots, glyph outlines."""

import json
import os
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab import Config, train  # noqa: E402
from attnlab.web.server import create_app  # noqa: E402
from attnlab.web.timeline import RUNNING_WINDOW_S  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
PROBE = "床前明月"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from conftest import SAMPLE_TEXT

    runs = tmp_path_factory.mktemp("tl") / "runs"
    cfg = Config(
        n_layer=1,
        n_head=2,
        d_model=16,
        block_size=16,
        vocab_size=40,
        max_steps=6,
        batch_size=4,
        warmup=2,
        device="cpu",
        probe=PROBE,
        snapshot_dense=2,
        snapshot_every=3,
    )
    train(SAMPLE_TEXT, cfg, out_dir=runs / "case" / "a")
    train(SAMPLE_TEXT, cfg.replace(snapshot_every=0), out_dir=runs / "old")
    stale = runs / "stale"
    stale.mkdir()
    (stale / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": 3.0}) + "\n")
    old = time.time() - RUNNING_WINDOW_S - 60
    os.utime(stale / "metrics.jsonl", (old, old))
    live = runs / "live"
    live.mkdir()
    (live / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": 3.0}) + "\n")
    (runs / "case" / "notarun").mkdir()
    return runs


@pytest.fixture(scope="module")
def client(root):
    return TestClient(base_url="http://127.0.0.1", app=create_app(None, runs_dir=str(root)))


def test_live_lists_nested_runs_with_their_state(client):
    runs = {r["name"]: r for r in client.get("/api/live").json()["runs"]}
    assert set(runs) == {"case/a", "old", "stale", "live"}
    assert runs["case/a"]["state"] == "finished" and runs["case/a"]["steps"] == 6
    assert runs["case/a"]["max_steps"] == 6 and runs["case/a"]["snapshots"] is True
    assert runs["old"]["snapshots"] is False
    assert runs["stale"]["state"] == "stopped" and runs["live"]["state"] == "running"


def test_timeline_of_a_run(client):
    d = client.get("/api/timeline/case/a").json()
    snap = d["snapshots"]
    assert d["snapshot_error"] is None and snap["steps"] == [0, 1, 3, 6]
    assert snap["tokens"] == list(PROBE) and snap["probe"] == PROBE
    T = len(PROBE)
    assert len(snap["patterns"]) == 4 and len(snap["patterns"][0][0]) == 2  # steps, layers, heads
    for row_i, row in enumerate(snap["patterns"][-1][0][1]):
        assert len(row) == T and sum(row) == pytest.approx(1, abs=2e-3)
        assert all(w == 0 for w in row[row_i + 1 :])  # causal
    assert snap["metric_names"][0] == "entropy" and len(snap["metrics"][0][0][0]) == len(snap["metric_names"])
    assert d["metrics"]["step"] == list(range(6))


def test_timeline_without_or_with_corrupt_snapshots_explains(client, root):
    d = client.get("/api/timeline/old").json()
    assert d["snapshots"] is None and "no attention snapshots" in d["snapshot_error"]
    assert d["metrics"]["rows"] == 6  # the curves are still there
    (root / "stale" / "snapshots.npz").write_bytes(b"\x00" * 40)
    d = client.get("/api/timeline/stale").json()
    assert d["snapshots"] is None and "corrupt" in d["snapshot_error"]
    assert str(root) not in d["snapshot_error"]  # no server paths in messages


@pytest.mark.parametrize(
    "name",
    [
        "nope",
        "case",
        "case/notarun",
        "..%2Fold",
        "case%2F..%2F..%2Fold",
        "case/..%2Fold",
        "a/b/c",
        "%2e%2e/old",
        ".hidden",
    ],
)
def test_timeline_serves_listed_runs_only(client, name):
    r = client.get(f"/api/timeline/{name}")
    assert r.status_code == 404 and r.json()["detail"]


def test_symlinked_runs_are_not_served(tmp_path, root):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "link").symlink_to(root / "case" / "a")
    (runs / "nest").symlink_to(root / "case")
    c = TestClient(base_url="http://127.0.0.1", app=create_app(None, runs_dir=str(runs)))
    assert c.get("/api/live").json() == {"runs": []}
    assert c.get("/api/timeline/link").status_code == 404
    assert c.get("/api/timeline/nest/a").status_code == 404


def test_glyphs_are_outlines_from_the_packaged_font(client):
    d = client.post("/api/glyphs", json={"text": "秦川秦a\U0001f600"}).json()
    assert set(d["glyphs"]) == {"秦", "川", "a"} and d["missing"] == ["\U0001f600"]
    assert d["glyphs"]["秦"]["adv"] == d["units_per_em"]  # a full-width character
    assert d["glyphs"]["秦"]["d"].startswith("M") and len(d["glyphs"]["秦"]["d"]) > 100
    assert client.post("/api/glyphs", json={"text": 5}).status_code == 422
    assert client.post("/api/glyphs", json={"text": "x" * 5000}).status_code == 422
