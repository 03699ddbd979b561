"""Run roots behind one naming scheme (attnlab.web.sources): prefixes, shadowing, a folder swapped for a
link between listing and loading, unreadable folders named and skipped, a bounded and cached listing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.web import sources as src_mod  # noqa: E402
from attnlab.web.runfiles import RunsRoot  # noqa: E402
from attnlab.web.server import create_app  # noqa: E402
from attnlab.web.sources import SHIPPED_RUNS, Source, Sources  # noqa: E402

LOCAL = "http://127.0.0.1"
SMALL = SHIPPED_RUNS / "case" / "small_scaled_s20261014"


def run_copy(dest: Path) -> Path:
    shutil.copytree(SMALL, dest)
    return dest


def two_roots(tmp_path) -> Sources:
    run_copy(tmp_path / "runs" / "a")
    run_copy(tmp_path / "other" / "case" / "b")
    return Sources([Source("", tmp_path / "runs", "yours"), Source("mine", tmp_path / "other", "mine")], ttl_s=0)


def test_names_carry_their_root_and_are_only_looked_up(tmp_path):
    s = two_roots(tmp_path)
    listing = s.listing()
    assert set(listing.runs) == {"a", "mine:case/b"} == set(listing.checkpoints)
    assert s.resolve("mine:case/b")[1] == ("case", "b") and s.resolve("case/b") is None
    assert s.resolve("mine:../runs/a") is None and s.resolve("nope:case/b") is None


def test_a_folder_in_the_first_root_cannot_pose_as_another_roots_run(tmp_path):
    s = two_roots(tmp_path)
    run_copy(tmp_path / "runs" / "mine:case")  # would read as mine:case/... in a naive listing
    assert "mine:case" not in s.listing().runs and set(s.listing().runs) == {"a", "mine:case/b"}


def test_a_run_swapped_for_a_link_after_listing_is_refused_not_followed(tmp_path):
    s = two_roots(tmp_path)
    outside = run_copy(tmp_path / "outside")
    (outside / "marker").write_text("outside")
    s.ttl_s = 3600  # the listing is trusted unchecked: the swap happens between listing and loading
    client = TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(tmp_path / "runs"), sources=s))
    assert client.get("/api/info").json()["run"] == "a"  # the default; mine:case/b listed, not yet loaded
    assert "mine:case/b" in client.get("/api/info").json()["runs"]
    victim = tmp_path / "other" / "case" / "b"
    shutil.rmtree(victim)
    os.symlink(outside, victim)
    r = client.post("/api/model", json={"run": "mine:case/b"})
    assert r.status_code == 422 and "ckpt.pt cannot be opened" in r.json()["detail"]
    assert str(tmp_path) not in r.json()["detail"]  # names relative to the runs root, no server paths
    assert client.post("/api/attention", json={"text": "明月", "run": "mine:case/b"}).status_code == 422
    shutil.rmtree(tmp_path / "runs" / "a")  # the model already loaded keeps answering; nothing outside is read
    assert client.post("/api/attention", json={"text": "明月"}).json()["run"] == "a"


def test_an_unreadable_folder_is_named_and_skipped_and_the_server_starts(tmp_path, monkeypatch):
    s = two_roots(tmp_path)
    run_copy(tmp_path / "runs" / "locked" / "r")
    real = RunsRoot.try_listdir

    def deny(self, rel=()):
        return None if tuple(rel) == ("locked",) else real(self, rel)

    monkeypatch.setattr(RunsRoot, "try_listdir", deny)  # as root, chmod 000 would not stop us
    client = TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(tmp_path / "runs"), sources=s))
    info = client.get("/api/info").json()
    assert info["skipped"] == ["locked"] and info["checkpoint"] in ("a", "mine:case/b")
    assert client.get("/api/live").json()["skipped"] == ["locked"]


def test_a_new_run_or_checkpoint_is_seen_at_once(tmp_path):
    root = tmp_path / "runs"
    (root / "case").mkdir(parents=True)
    s = Sources.single(root)
    assert s.listing().runs == {}
    (root / "grow").mkdir()
    (root / "grow" / "metrics.jsonl").touch()
    assert "grow" in s.listing().runs and "grow" not in s.listing().checkpoints
    (root / "grow" / "ckpt.pt").touch()  # its first checkpoint
    assert "grow" in s.listing().checkpoints
    (root / "case" / "b").mkdir()
    (root / "case" / "b" / "metrics.jsonl").touch()
    assert "case/b" in s.listing().runs


def test_the_listing_is_bounded_and_cached(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    for i in range(12):  # listing reads names only: empty files will do
        (root / f"r{i:02d}").mkdir(parents=True)
        (root / f"r{i:02d}" / "metrics.jsonl").touch()
        (root / f"r{i:02d}" / "ckpt.pt").touch()
    monkeypatch.setattr(src_mod, "MAX_LISTED", 5)
    s = Sources.single(root)
    first = s.listing()
    assert len(first.runs) == 5 and len(first.checkpoints) <= 5
    assert s.listing() is first  # nothing changed: no new walk of the tree
    shutil.rmtree(root / "r00")
    assert "r00" not in s.listing().runs  # a removed run is seen at once
    (root / "r05" / "new").mkdir()
    second = s.listing()
    assert second is not first and s.listing() is second


def _empty_runs(root: Path, n: int) -> None:
    """``n`` run folders holding the two files the listing looks for (empty: it reads names only)."""
    for i in range(n):
        d = root / f"r{i:04d}"
        d.mkdir(parents=True)
        (d / "metrics.jsonl").touch()
        (d / "ckpt.pt").touch()


def test_thousands_of_runs_in_one_root_hide_no_other_root_and_the_cut_is_said(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _empty_runs(tmp_path / "mine" / "runs", 2000)
    quick = tmp_path / "quick" / "case" / "runs" / "case" / "q"
    quick.mkdir(parents=True)
    (quick / "metrics.jsonl").touch()
    s = Sources.default("runs")
    listing = s.listing()
    shipped = {
        f"shipped:case/{m}"
        for m in ("big_scaled", "big_unscaled", "small_scaled_s20261014", "small_unscaled_s20261014")
    }
    assert "quick:case/q" in listing.runs and shipped <= set(listing.checkpoints) and shipped <= set(listing.runs)
    assert sum(n.startswith("mine:") for n in listing.runs) == src_mod.MAX_LISTED and listing.cut == ["mine"]
    client = TestClient(base_url=LOCAL, app=create_app(None, runs_dir="runs", sources=s))
    live = client.get("/api/live").json()
    assert "quick:case/q" in {r["name"] for r in live["runs"]} and live["cut"] == ["mine"]
    assert (
        live["cut_line"].startswith("运行太多")
        and "too many runs" in live["cut_line"]
        and "mine/runs" in live["cut_line"]
    )
    info = client.get("/api/info").json()  # experiment 1-2 opens on a shipped model, and says the list was cut
    assert info["run"] == "shipped:case/small_scaled_s20261014" and shipped <= set(info["runs"])
    assert info["cut_line"] == live["cut_line"] and client.get("/api/runs").json()["cut"] == ["mine"]
    for js, testid in (("runs.js", "live-cut"), ("exp12.js", "runs-cut")):  # the pages show that line
        text = (Path(src_mod.__file__).parent / "static" / js).read_text(encoding="utf-8")
        assert "cut_line" in text and testid in text


def test_a_root_under_its_cap_is_not_said_to_be_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(src_mod, "MAX_LISTED", 5)
    _empty_runs(tmp_path / "runs", 5)
    (tmp_path / "runs" / "a-file").touch()  # not a folder: nothing was left out
    s = Sources.single(tmp_path / "runs")
    assert len(s.listing().runs) == 5 and s.listing().cut == [] and s.notes(s.listing()) == {}
    _empty_runs(tmp_path / "runs" / "more", 1)
    assert s.listing().cut == [""] and "cut_line" in s.notes(s.listing())


@pytest.mark.parametrize("name", ["ｓhipped:case", "shipped：case", "Shipped:case", "ＭＩＮＥ:x"])
def test_a_folder_that_only_looks_like_another_roots_run_is_not_listed(tmp_path, name):
    s = two_roots(tmp_path)
    s.sources.append(Source("shipped", tmp_path / "none", "shipped"))
    run_copy(tmp_path / "runs" / name / "big_unscaled")
    plain = name.replace(":", "_").replace("：", "_")  # no colon: an ordinary run of the first root
    run_copy(tmp_path / "runs" / plain)
    assert set(s.listing().runs) == {"a", "mine:case/b", plain}
