"""The case's trained models ship: a reader with nothing trained (a fresh clone, or a wheel installed
in an empty folder) opens `attnlab serve` on the small scaled model, can choose all four, sees the big
pair's collapse on the timeline, and reads the lab book and the case curves.

The shipped folders are made by scripts/ship_case_models.py from a full-size `attnlab case`; its
manifest records, per model, the float16 check (largest |Δ attention weight| against float32).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import torch

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.cli import build_parser  # noqa: E402
from attnlab.cli.serve import make_app  # noqa: E402
from attnlab.web.sources import PUBLISHED, SHIPPED_RUNS  # noqa: E402
from wheel_install import install_wheel  # noqa: E402
from wheel_install import run as run_cmd  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NAMES = ("small_scaled_s20261014", "small_unscaled_s20261014", "big_scaled", "big_unscaled")
SHIPPED = [f"shipped:case/{n}" for n in NAMES]
MANIFEST = json.loads((SHIPPED_RUNS / "manifest.json").read_text(encoding="utf-8"))
POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
BUDGET_BYTES = 40 * 2**20  # what the shipped runs may add to the repository and the wheel


def client(*argv: str) -> TestClient:
    args = build_parser().parse_args(["serve", *argv])
    return TestClient(make_app(args), base_url="http://127.0.0.1:8000")


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """An empty folder: no runs/, mine/, quick/, data/ or reports/."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_manifest_describes_the_files_that_ship():
    assert set(MANIFEST["runs"]) == set(NAMES)
    total = 0
    for name, run in MANIFEST["runs"].items():
        folder = SHIPPED_RUNS / "case" / name
        assert sorted(p.name for p in folder.iterdir()) == sorted(run["files"]), name
        for fname, f in run["files"].items():
            data = (folder / fname).read_bytes()
            assert len(data) == f["bytes"] and hashlib.sha256(data).hexdigest() == f["sha256"], (name, fname)
            total += len(data)
        assert run["step"] == 1500
    assert total == MANIFEST["total_bytes"] <= BUDGET_BYTES


def test_float16_is_used_only_where_the_attention_maps_stay_within_tolerance():
    """The manifest's measurement decides: float16 only with every measured |Δ attention weight| at most
    headroom × 1e-3 (so texts nobody measured stay within 1e-3), else float32."""
    for name, run in MANIFEST["runs"].items():
        payload = torch.load(SHIPPED_RUNS / "case" / name / "ckpt.pt", weights_only=True)
        dtypes = {v.dtype for v in payload["model"].values() if v.is_floating_point()}
        assert dtypes == {getattr(torch, run["weights_dtype"])}, name
        assert payload["weights_dtype"] == run["weights_dtype"]
        limit = MANIFEST["headroom"] * MANIFEST["tolerance"]
        assert MANIFEST["tolerance"] == 1e-3 and 0 < MANIFEST["headroom"] <= 1
        if run["weights_dtype"] == "float16":
            assert run["max_attention_gap_float16"] <= limit, name
        else:
            assert run["max_attention_gap_float16"] > limit, name
        assert not {"optimizer", "history", "gen_state"} & set(payload), name  # serving weights only


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs git and a checkout")
def test_a_clone_has_them():
    """What git does not track does not exist for a reader: every shipped file is committed or staged."""
    tracked = set(
        subprocess.run(["git", "ls-files", "src/attnlab/data"], cwd=REPO, capture_output=True, text=True).stdout.split()
    )
    for name, run in MANIFEST["runs"].items():
        for fname in run["files"]:
            assert f"src/attnlab/data/case_runs/case/{name}/{fname}" in tracked
    assert "src/attnlab/data/case_runs/manifest.json" in tracked
    for f in ("ch1_case.json", "lab_book.html", "ch1_case.html"):
        assert f"src/attnlab/data/published/{f}" in tracked and (PUBLISHED / f).is_file()


def test_serve_with_no_argument_in_an_empty_folder_opens_on_the_small_scaled_model(elsewhere):
    c = client()
    info = c.get("/api/info").json()
    assert info["run"] == "shipped:case/small_scaled_s20261014" and info["step"] == 1500
    assert set(SHIPPED) <= set(info["runs"])
    data = c.post("/api/attention", json={"text": POEM}).json()
    assert data["converted_text"] == "牀前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。" and data["n_unk"] == 0
    for layer in data["layers"]:
        for head in layer["heads"]:
            assert all(abs(sum(row) - 1) < 1e-3 for row in head["weights"])  # rows of a softmax
    big = c.post("/api/attention", json={"text": POEM, "run": "shipped:case/big_unscaled"}).json()
    assert big["run"] == "shipped:case/big_unscaled" and len(big["layers"][0]["heads"]) == 1


def test_the_timeline_shows_the_big_pairs_collapse(elsewhere):
    c = client()
    live = {r["name"]: r for r in c.get("/api/live").json()["runs"]}
    assert live["shipped:case/big_unscaled"]["snapshots"] and live["shipped:case/big_scaled"]["snapshots"]
    ent = {}
    for tag in ("unscaled", "scaled"):
        t = c.get(f"/api/timeline/shipped:case/big_{tag}").json()
        snap = t["snapshots"]
        i = snap["metric_names"].index("entropy")
        ent[tag] = [step[0][0][i] for step in snap["metrics"]]  # layer 0, head 0, per snapshot
        assert snap["steps"][-1] >= 1400 and t["state"] == "finished"
    # the chapter's collapse: the unscaled big model's weights end near one-hot, the scaled one's do not
    assert ent["unscaled"][-1] < 0.05 < 0.5 < ent["scaled"][-1]
    assert ent["unscaled"][0] > 10 * ent["unscaled"][-1]  # it was spread at the start


def test_the_lab_book_and_the_case_curves_are_served_from_the_package(elsewhere):
    c = client()
    book = c.get("/book")
    assert book.status_code == 200 and "<html" in book.text[:2000].lower()
    case = c.get("/api/case")
    assert case.status_code == 200 and {"small_scaled", "big_unscaled"} <= set(case.json()["pairs"])


def test_serve_finds_make_case_and_quick_runs_without_flags(elsewhere):
    src = SHIPPED_RUNS / "case" / "small_scaled_s20261014"
    for where in ("mine/runs/case", "quick/case/runs/case"):
        shutil.copytree(src, elsewhere / where / "small_scaled_s20261014")
    info = client().get("/api/info").json()
    assert {"mine:case/small_scaled_s20261014", "quick:case/small_scaled_s20261014"} <= set(info["runs"])
    assert info["run"] == "mine:case/small_scaled_s20261014"  # make case's own model before the shipped one
    assert set(SHIPPED) <= set(info["runs"])
    explicit = client("--runs-dir", str(elsewhere / "mine" / "runs")).get("/api/info").json()
    assert "case/small_scaled_s20261014" in explicit["runs"] and set(SHIPPED) <= set(explicit["runs"])
    assert not any(r.startswith("quick:") for r in explicit["runs"])  # --runs-dir replaces the user roots


def test_a_damaged_shipped_model_is_one_clear_message(elsewhere, monkeypatch, tmp_path):
    bad = tmp_path / "pkg" / "case" / "small_scaled_s20261014"
    shutil.copytree(SHIPPED_RUNS / "case" / "small_scaled_s20261014", bad)
    data = (bad / "ckpt.pt").read_bytes()
    (bad / "ckpt.pt").write_bytes(data[: len(data) // 2])  # truncated
    shutil.copy(SHIPPED_RUNS / "manifest.json", tmp_path / "pkg")
    monkeypatch.setattr("attnlab.web.sources.SHIPPED", ("shipped", tmp_path / "pkg", "shipped"))
    info = client().get("/api/info").json()
    assert info["checkpoint"] is None and "damaged" in info["hint"] and "shipped:case/small_scaled" in info["hint"]
    assert "case/small_scaled_s20261014/ckpt.pt" in info["hint"] and "git checkout -- " in info["hint"]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    return (*install_wheel(tmp_path_factory.mktemp("wheel")), run_cmd)


def test_the_wheel_ships_the_models_the_book_and_the_case(wheel_env):
    wheel, py, work, run = wheel_env
    names = set(zipfile.ZipFile(wheel).namelist())
    for name, r in MANIFEST["runs"].items():
        assert {f"attnlab/data/case_runs/case/{name}/{f}" for f in r["files"]} <= names
    assert {f"attnlab/data/published/{f}" for f in ("ch1_case.json", "lab_book.html", "ch1_case.html")} <= names
    probe = (
        "import json, attnlab; from fastapi.testclient import TestClient; from attnlab.cli import build_parser;"
        "from attnlab.cli.serve import make_app;"
        "c = TestClient(make_app(build_parser().parse_args(['serve'])), base_url='http://127.0.0.1:8000');"
        "i = c.get('/api/info').json();"
        "print(json.dumps({'file': attnlab.__file__, 'run': i['run'], 'runs': i['runs'],"
        " 'book': c.get('/book').status_code, 'case': c.get('/api/case').status_code,"
        " 'map': len(c.post('/api/attention', json={'text': '明月'}).json()['layers'])}))"
    )
    out = run([str(py), "-c", probe], work).splitlines()  # stdout, then stderr (warnings)
    got = json.loads(next(line for line in out if line.startswith("{")))
    assert str(REPO) not in got["file"]  # the wheel's attnlab, not the checkout's
    assert got["run"] == "shipped:case/small_scaled_s20261014" and set(SHIPPED) <= set(got["runs"])
    assert got["book"] == 200 and got["case"] == 200 and got["map"] >= 1


def _damaged_copy(tmp_path, monkeypatch, run: str = "big_unscaled") -> Path:
    """The shipped runs copied (never the package's own files) with one byte of ``run``'s ckpt.pt flipped,
    installed as serve's shipped root."""
    import attnlab.web.sources as src_mod

    copy = tmp_path / "case_runs"
    shutil.copytree(SHIPPED_RUNS, copy)
    ckpt = copy / "case" / run / "ckpt.pt"
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0x01
    ckpt.write_bytes(bytes(data))
    monkeypatch.setattr(src_mod, "SHIPPED_RUNS", copy)
    monkeypatch.setattr(src_mod, "SHIPPED", ("shipped", copy, src_mod.SHIPPED[2]))
    monkeypatch.chdir(tmp_path)
    return copy


def test_a_damaged_shipped_file_is_refused_in_one_line_and_the_others_are_served(tmp_path, monkeypatch):
    import attnlab.web.shipped as shipped

    _damaged_copy(tmp_path, monkeypatch)
    made = []
    real = shipped.hashlib.sha256
    monkeypatch.setattr(shipped.hashlib, "sha256", lambda *a: made.append(1) or real(*a))
    c = client()
    r = c.post("/api/model", json={"run": "shipped:case/big_unscaled"})
    detail = r.json()["detail"]
    assert r.status_code == 422 and "\n" not in detail, detail
    assert "case/big_unscaled/ckpt.pt" in detail and "sha256" in detail and "损坏" in detail
    assert "pip install --force-reinstall attnlab" in detail and "git checkout -- " in detail
    assert c.post("/api/attention", json={"text": POEM, "run": "shipped:case/big_unscaled"}).status_code == 422
    ok = c.post("/api/attention", json={"text": POEM, "run": "shipped:case/big_scaled"})
    assert ok.status_code == 200 and ok.json()["run"] == "shipped:case/big_scaled"
    assert c.get("/api/timeline/shipped:case/big_scaled").status_code == 200 and c.get("/api/live").status_code == 200
    hashed = len(made)
    assert hashed > 0
    for _ in range(3):  # each file is hashed once per version, not once per read
        assert c.get("/api/timeline/shipped:case/big_scaled").status_code == 200
        c.get("/api/live")
    assert len(made) == hashed


def test_a_damaged_shipped_manifest_refuses_the_shipped_files_in_one_line(tmp_path, monkeypatch):
    copy = _damaged_copy(tmp_path, monkeypatch)
    (copy / "manifest.json").write_text("[1]", encoding="utf-8")
    r = client().post("/api/model", json={"run": "shipped:case/big_scaled"})
    assert r.status_code == 422 and "manifest.json" in r.json()["detail"] and "\n" not in r.json()["detail"]
    assert "reinstall" in r.json()["detail"]
