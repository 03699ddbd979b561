"""The attention-sink share in the web API: /api/timeline's snapshots carry it per step, layer and head,
and /api/runs/<name> carries it for the runs page (None for a run without snapshots)."""

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab import Config, train  # noqa: E402
from attnlab.diagnostics import SINK_THRESHOLD, sink_baseline  # noqa: E402
from attnlab.snapshots import read_snapshots  # noqa: E402
from attnlab.web.server import create_app  # noqa: E402
from attnlab.web.timeline import sinks_of  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
PROBE = "床前明月光"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from conftest import SAMPLE_TEXT

    runs = tmp_path_factory.mktemp("sinks") / "runs"
    cfg = Config(
        n_layer=2,
        n_head=2,
        d_model=16,
        block_size=16,
        vocab_size=40,
        max_steps=4,
        batch_size=4,
        warmup=2,
        device="cpu",
        probe=PROBE,
        snapshot_dense=2,
        snapshot_every=2,
    )
    train(SAMPLE_TEXT, cfg, out_dir=runs / "a")
    train(SAMPLE_TEXT, cfg.replace(snapshot_every=0), out_dir=runs / "old")
    return runs


@pytest.fixture(scope="module")
def client(root):
    return TestClient(base_url="http://127.0.0.1", app=create_app(None, runs_dir=str(root)))


def test_timeline_snapshots_carry_the_sink_share(client, root):
    snap = client.get("/api/timeline/a").json()["snapshots"]
    sk = snap["sinks"]
    stored = read_snapshots(root / "a" / "snapshots.npz")
    assert np.array(sk["share"]).shape == (len(snap["steps"]), 2, 2)
    want = stored.patterns.astype(np.float64)[..., 1:, 0].mean(-1)  # the first column, rows i >= 1
    assert np.allclose(np.array(sk["share"]), want, atol=1e-3)
    assert sk["threshold"] == SINK_THRESHOLD
    assert sk["baseline"] == pytest.approx(sink_baseline(len(PROBE)), abs=1e-4)


def test_runs_page_payload_carries_the_sink_share(client):
    r = client.get("/api/runs/a").json()
    assert r["sinks"]["steps"] == [0, 1, 2, 4] and np.array(r["sinks"]["share"]).shape == (4, 2, 2)
    assert client.get("/api/runs/old").json()["sinks"] is None  # no snapshots: no sink chart


def test_hand_made_maps():
    T = 4
    first = np.zeros((1, 1, 3, T, T), dtype=np.float16)
    first[..., 0] = 1
    uni = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    first[0, 0, 1] = uni
    first[0, 0, 2] = np.eye(T)
    sk = sinks_of(first)
    assert sk["share"][0][0] == pytest.approx([1.0, sink_baseline(T), 0.0], abs=1e-3)
