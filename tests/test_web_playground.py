"""The playground ready on arrival: `serve` without --checkpoint shows the case's small scaled
model (or another run it finds), names the run, switches runs only among the listed ones, and
converts simplified input to traditional on experiment 1-2."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab import Config  # noqa: E402
from attnlab.checkpoint import save_checkpoint  # noqa: E402
from attnlab.chinese import CONVERTED_NOTE  # noqa: E402
from attnlab.model import TinyGPT  # noqa: E402
from attnlab.tokenizer import CharTokenizer  # noqa: E402
from attnlab.web.server import DEFAULT_RUN, checkpoint_runs, create_app, default_run  # noqa: E402

LOCAL = "http://127.0.0.1"
CORPUS = (Path(__file__).resolve().parents[1] / "src" / "attnlab" / "data" / "corpus.txt").read_text(encoding="utf-8")
POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"


def corpus_run(folder: Path, n_head: int = 2, step: int = 7, seed: int = 0) -> Path:
    """A run folder with an (untrained) checkpoint whose vocabulary is the corpus's, as a trained one's is."""
    cfg = Config(n_layer=1, n_head=n_head, d_model=16, block_size=32, device="cpu")
    torch.manual_seed(seed)
    return save_checkpoint(folder / "ckpt.pt", TinyGPT(cfg), CharTokenizer(CORPUS, cfg.vocab_size), step=step)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("playground") / "runs"
    corpus_run(root / DEFAULT_RUN, step=7)
    corpus_run(root / "case" / "small_unscaled_s20261014", step=5)
    corpus_run(root / "mine", n_head=4, step=3)
    corpus_run(root / "lr" / "d32" / "lr3e-3", step=2)  # three levels down
    (root / "notes").mkdir()  # no checkpoint: not offered
    (root / "mine" / "weights").mkdir()
    return root


@pytest.fixture(scope="module")
def client(runs):
    return TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(runs)))


def test_every_run_with_a_checkpoint_is_found_and_the_case_small_scaled_one_is_the_default(runs):
    found = checkpoint_runs(runs)
    assert sorted(found) == sorted([DEFAULT_RUN, "case/small_unscaled_s20261014", "mine", "lr/d32/lr3e-3"])
    assert default_run(found) == DEFAULT_RUN
    assert default_run(["mine", "case/small_scaled_s1"]) == "case/small_scaled_s1"
    assert default_run(["mine"]) == "mine" and default_run([]) is None


def test_serve_without_checkpoint_shows_the_case_model_and_names_its_run(client):
    info = client.get("/api/info").json()
    assert info["checkpoint"] == DEFAULT_RUN == info["run"]  # the run, not just "ckpt.pt"
    assert info["step"] == 7 and info["n_head"] == 2
    assert set(info["runs"]) == {DEFAULT_RUN, "case/small_unscaled_s20261014", "mine", "lr/d32/lr3e-3"}
    r = client.post("/api/attention", json={"text": "明月"})
    assert r.status_code == 200 and r.json()["run"] == DEFAULT_RUN


def test_simplified_input_is_converted_on_the_page_api(client):
    data = client.post("/api/attention", json={"text": POEM}).json()
    assert data["converted"] is True and data["converted_line"].startswith(CONVERTED_NOTE)
    assert data["converted_text"] == "牀前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"
    assert data["n_unk"] == 0 and data["unknown_line"] == ""
    assert [t["typed"] for t in data["tokens"]][12:14] == ["举", "头"]
    assert [t["char"] for t in data["tokens"]][12:14] == ["舉", "頭"]
    plain = client.post("/api/attention", json={"text": "明月Z"}).json()
    assert plain["converted"] is False and plain["n_unk"] == 1 and "Z" in plain["unknown_line"]


def test_a_listed_run_can_be_chosen_and_nothing_else(client):
    r = client.post("/api/model", json={"run": "mine"})
    assert r.status_code == 200 and r.json()["run"] == "mine" and r.json()["n_head"] == 4
    heads = client.post("/api/attention", json={"text": "明月", "run": "mine"}).json()["layers"][0]["heads"]
    assert len(heads) == 4
    for bad in ("../mine", "/etc", "mine/../case", "notes", "mine/weights", "case"):
        assert client.post("/api/model", json={"run": bad}).status_code == 404, bad
        assert client.post("/api/attention", json={"text": "明月", "run": bad}).status_code == 404, bad
    assert client.post("/api/model", json={"run": DEFAULT_RUN}).json()["run"] == DEFAULT_RUN


def test_one_reader_choosing_a_model_does_not_switch_it_for_another(client):
    """In a classroom (serve --host) every page keeps its own model: the choice travels with each
    request, and the server's default is what a page that chose nothing sees."""
    assert client.post("/api/model", json={"run": "mine"}).json()["run"] == "mine"  # student A chooses
    assert client.get("/api/info").json()["run"] == DEFAULT_RUN  # student B's page opens on the default
    b = client.post("/api/attention", json={"text": "明月"}).json()
    a = client.post("/api/attention", json={"text": "明月", "run": "mine"}).json()
    assert b["run"] == DEFAULT_RUN and len(b["layers"][0]["heads"]) == 2
    assert a["run"] == "mine" and len(a["layers"][0]["heads"]) == 4


def test_explicit_checkpoint_is_named_by_its_run_folder(runs):
    app = create_app(str(runs / "mine"), runs_dir=str(runs))  # a run folder is accepted too
    info = TestClient(base_url=LOCAL, app=app).get("/api/info").json()
    assert info["run"] == "mine" and app.state.model_run == "mine"


def test_without_any_checkpoint_the_page_says_how_to_get_one(tmp_path):
    (tmp_path / "runs" / "empty").mkdir(parents=True)
    info = TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(tmp_path / "runs"))).get("/api/info").json()
    assert info["checkpoint"] is None and "--checkpoint" in info["hint"] and info["runs"] == []


def test_a_broken_default_run_does_not_stop_the_server(tmp_path):
    bad = tmp_path / "runs" / DEFAULT_RUN
    bad.mkdir(parents=True)
    (bad / "ckpt.pt").write_bytes(b"not a checkpoint")
    app = create_app(None, runs_dir=str(tmp_path / "runs"))
    info = TestClient(base_url=LOCAL, app=app).get("/api/info").json()
    assert info["checkpoint"] is None and "corrupt" in info["hint"]


def test_the_started_checkpoint_stays_choosable_even_outside_the_runs_dir(runs, tmp_path):
    outside = corpus_run(tmp_path / "elsewhere", step=11)
    client = TestClient(base_url=LOCAL, app=create_app(str(outside), runs_dir=str(runs)))
    info = client.get("/api/info").json()
    assert info["run"] == "elsewhere" and info["runs"][0] == "elsewhere" and DEFAULT_RUN in info["runs"]
    assert client.post("/api/model", json={"run": DEFAULT_RUN}).json()["run"] == DEFAULT_RUN
    assert client.post("/api/model", json={"run": "elsewhere"}).json()["step"] == 11
