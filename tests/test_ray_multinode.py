"""The quick lab book's runs on a simulated two-node Ray cluster (ray.cluster_utils.Cluster on this machine).

Each node has one CPU, its own custom resource and its own temporary folder (TMPDIR of its
processes), so a run trained on a node lives in that node's folder until the runner's return trip
writes it under the book's root. The test checks that runs land on both nodes, that every file of
every run folder was written by that return trip (none by a worker), that the results equal serial
at one thread, bit for bit, and that removing the second node mid-book (its raylet killed while a
run trains there) loses nothing: Ray retries its runs on the head node and the batch finishes.
The whole quick book (54 runs and every analysis) took over 15 min serially on the busy 2 cores,
so the test trains the quick book's 16 cheapest runs through the runner, as ``run_book`` does.
"""

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from attnlab import io as attnlab_io  # noqa: E402
from attnlab.corpus import load_corpus  # noqa: E402
from attnlab.lab import EXPERIMENTS  # noqa: E402
from attnlab.lab.runs import Scale  # noqa: E402
from attnlab.runner import ExecutorOptions, execute, train_cost  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


def start_node(cluster, tmp: Path, name: str, head: bool = False):
    """A node of one CPU whose processes put their temporary files under tmp/name."""
    d = tmp / name
    d.mkdir()
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(d)  # the raylet and its workers inherit it
    try:
        args = {"num_cpus": 1, "resources": {name: 1}}
        if head:
            return cluster.add_node(**args, include_dashboard=False), d
        return cluster.add_node(**args, temp_dir=str(tmp / f"ray-{name}")), d
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before


def run_dirs_in(folder: Path) -> list[Path]:
    return [p for p in folder.glob("attnlab-run-*") if p.is_dir()]


QUICK_BATCH = 16  # the quick book's cheapest runs: the whole quick book takes ~15 min on the busy 2 cores


def quick_batch():
    runs = {r.name: r for e in EXPERIMENTS for r in e.runs(Scale.make(True))}
    return sorted(runs.values(), key=lambda r: (train_cost(r.cfg), r.name))[:QUICK_BATCH]


def test_quick_batch_on_two_ray_nodes_survives_losing_one(tmp_path, monkeypatch):
    from attnlab.lab.plan import book_plan

    text = load_corpus(None, min_chars=200)
    runs = quick_batch()
    short = Path(tempfile.mkdtemp(prefix="al-", dir="/tmp"))  # Ray's socket paths must stay under 108 bytes
    cluster = Cluster()
    head, _ = start_node(cluster, short, "node_a", head=True)
    second, second_tmp = start_node(cluster, short, "node_b")
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        assert {n["NodeID"] for n in ray.nodes() if n["Alive"]} == {head.node_id, second.node_id}
        # the plan counts the cluster's advertised CPUs
        plan = book_plan(EXPERIMENTS, tmp_path / "book", Scale.make(True), EXPERIMENTS, options=ExecutorOptions("ray"))
        assert (plan.slots, plan.cpus) == (2, 2)

        written: set[Path] = set()
        real_write = attnlab_io.write_bytes

        def spy(path, data):  # the runner's return trip writes every file of a run folder through this
            written.add(Path(path).resolve())
            return real_write(path, data)

        monkeypatch.setattr(attnlab_io, "write_bytes", spy)
        node_of: dict[str, str] = {}
        removed = threading.Event()
        killed: list[str] = []  # the runs training on the second node when it was removed

        def remove_second_mid_run() -> None:
            """Once half the runs are back, the second node among them, kill it while it trains another."""
            t0 = time.time()
            while time.time() - t0 < 600:
                training = [m for d in run_dirs_in(second_tmp) for m in d.glob("*/metrics.jsonl")]
                if second.node_id in node_of.values() and len(node_of) >= len(runs) // 2 and training:
                    killed.extend(sorted({m.parent.name for m in training}))
                    cluster.remove_node(second, allow_graceful=False)
                    removed.set()
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=remove_second_mid_run, daemon=True)
        watcher.start()
        root = tmp_path / "book" / "runs"
        t0 = time.perf_counter()
        got = execute(
            runs,
            text,
            root,
            executor="ray",
            progress=False,
            on_result=lambda r: node_of.__setitem__(r["name"], r.get("node")),
        )
        seconds = time.perf_counter() - t0
        watcher.join(timeout=5)
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(short, ignore_errors=True)
    placed = {n: sum(1 for v in node_of.values() if v == n) for n in (head.node_id, second.node_id)}
    print(
        f"\n{len(runs)} quick-book runs on 2 Ray nodes in {seconds:.0f} s; runs per node: node_a "
        f"{placed[head.node_id]}, node_b {placed[second.node_id]}; killed with node_b mid-run: {', '.join(killed)}"
    )
    assert removed.is_set(), "the second node was never removed mid-run"
    assert placed[head.node_id] > 0 and placed[second.node_id] > 0  # both nodes trained runs
    assert set(got) == set(node_of) == {r.name for r in runs}  # every run came back: nothing lost
    assert killed and all(node_of[k] == head.node_id for k in killed)  # killed mid-run, trained again on the head
    # every file of every run folder came by the return trip, none from a worker
    on_disk = {p.resolve() for p in root.rglob("*") if p.is_file()}
    assert on_disk and on_disk <= written, sorted(on_disk - written)[:5]
    # the same runs serially at one thread: bit for bit
    torch.set_num_threads(1)
    serial = execute(runs, text, tmp_path / "serial", progress=False)
    for run in runs:
        a, b = got[run.name], serial[run.name]
        assert [r["loss"] for r in a.history.records] == [r["loss"] for r in b.history.records], run.name
        sa, sb = a.model.state_dict(), b.model.state_dict()
        assert all(torch.equal(sa[k], sb[k]) for k in sa), run.name
