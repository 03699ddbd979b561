"""The timeline's twin: the run of the same shape (and seed) with the other scaling, read from the configs
(never from the names), listed per run by /api/live so a page picks it again whenever its run changes."""

import json

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.web.server import create_app  # noqa: E402
from attnlab.web.timeline import twins  # noqa: E402

SHAPE = {"n_layer": 2, "n_head": 2, "d_model": 32, "block_size": 16}


def run(root, name, **cfg):
    folder = root.joinpath(*name.split("/"))
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**SHAPE, "max_steps": 10, "seed": 1, **cfg}))
    (folder / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": 3.0}) + "\n")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("twins") / "runs"
    # exercise 1's four runs, named as a student would
    for h in (2, 4):
        for scaled in (False, True):
            run(root, f"h{h}_{str(scaled).lower()}", n_head=h, scaled=scaled)
    # the case's layout: the small pair with seeds in the name, the big pair without
    run(root, "case/small_unscaled_s7", scaled=False, seed=7)
    run(root, "case/small_scaled_s7", scaled=True, seed=7)
    run(root, "case/big_unscaled", scaled=False, d_model=256, n_head=1, seed=7)
    run(root, "case/big_scaled", scaled=True, d_model=256, n_head=1, seed=7)
    # a name that lies: "scaled" in the name, unscaled in the config
    run(root, "misnamed/scaled_one", scaled=False, d_model=48)
    run(root, "misnamed/other", scaled=True, d_model=48)
    # same shape, other scaling, but another seed: not a twin
    run(root, "seeds/a", scaled=False, d_model=64, seed=1)
    run(root, "seeds/b", scaled=True, d_model=64, seed=2)
    # 1/d is compared with 1/sqrt(d); a config without scaling has none
    run(root, "mup", attn_scale="1/d", d_model=96)
    run(root, "mup_ref", scaled=True, d_model=96)
    run(root, "bare", d_model=128)
    client = TestClient(base_url="http://127.0.0.1", app=create_app(None, runs_dir=str(root)))
    rows = client.get("/api/live").json()["runs"]
    return {r["name"]: r for r in rows}


def test_exercise_one_runs_get_their_twin_by_config(live):
    assert live["h2_false"]["twin"] == "h2_true" and live["h2_true"]["twin"] == "h2_false"
    assert live["h4_false"]["twin"] == "h4_true" and live["h4_true"]["twin"] == "h4_false"
    assert live["h2_false"]["scaling"] == "none" and live["h2_true"]["scaling"] == "1/sqrt(d)"


def test_the_case_s_small_run_gets_the_small_twin_not_the_big_one(live):
    assert live["case/small_unscaled_s7"]["twin"] == "case/small_scaled_s7"
    assert live["case/big_unscaled"]["twin"] == "case/big_scaled"
    assert live["case/big_scaled"]["twin"] == "case/big_unscaled"


def test_names_do_not_decide_and_seeds_must_match(live):
    assert live["misnamed/scaled_one"]["twin"] == "misnamed/other"
    assert live["seeds/a"]["twin"] is None and live["seeds/b"]["twin"] is None
    assert live["seeds/a"]["seed"] == 1


def test_other_scalings_and_configs_without_one(live):
    assert live["mup"]["scaling"] == "1/d" and live["mup"]["twin"] == "mup_ref"
    assert live["mup_ref"]["twin"] is None  # 1/sqrt(d)'s twin is the unscaled run, not the 1/d one
    assert live["bare"]["scaling"] is None and live["bare"]["twin"] is None


def test_the_closest_of_several_candidates_is_chosen():
    shape = [2, 2, 32, 16]
    rows = [
        {"name": "shipped:case/x_unscaled", "shape": shape, "scaling": "none", "seed": 1, "max_steps": 1500},
        {"name": "case/x_scaled", "shape": shape, "scaling": "1/sqrt(d)", "seed": 1, "max_steps": 1500},
        {"name": "shipped:case/x_scaled", "shape": shape, "scaling": "1/sqrt(d)", "seed": 1, "max_steps": 1500},
        {"name": "shipped:case/y_scaled", "shape": shape, "scaling": "1/sqrt(d)", "seed": 1, "max_steps": 200},
    ]
    assert twins(rows)["shipped:case/x_unscaled"] == "shipped:case/x_scaled"
