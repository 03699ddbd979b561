"""Grid sweeps: grid parsing, skip/resume/failure per trial, aggregation, local and Ray executors."""

import csv
import json

import pytest

from attnlab import Config, train
from attnlab.cli import main
from attnlab.errors import AttnlabError
from attnlab.lab.sweep import expand, parse_grid, sweep
from attnlab.runner import ExecutorOptions, RunFoldersRefused
from attnlab.tools import ExperimentError
from attnlab.train import TrainingInterrupted
from conftest import SAMPLE_TEXT

SERIAL = ExecutorOptions("serial", progress=False)

BASE = Config(
    n_layer=1,
    block_size=16,
    vocab_size=60,
    batch_size=4,
    max_steps=4,
    warmup=1,
    eval_batches=1,
    record_every=2,
    device="cpu",
)
SMALL = [
    "--set",
    "n_layer=1",
    "--set",
    "block_size=16",
    "--set",
    "vocab_size=60",
    "--set",
    "batch_size=4",
    "--set",
    "warmup=1",
    "--set",
    "eval_batches=1",
    "--set",
    "device=cpu",
]


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def test_grid_parsing_and_expansion():
    grid = parse_grid(["d_head=8,16", "scaled=true,false"])
    trials = expand(BASE, grid, seeds=2)
    assert len(trials) == 8
    cfg = Config.from_dict(trials[0]["config"])
    assert (cfg.n_head, cfg.d_model, cfg.d_head, cfg.scaled) == (1, 8, 8, True)
    assert {Config.from_dict(t["config"]).seed for t in trials} == {BASE.seed, BASE.seed + 1}
    assert trials[0]["name"] == "d_head=8__scaled=true__seed=0"
    with pytest.raises(ExperimentError, match="unknown grid key 'dhead'"):
        parse_grid(["dhead=8"])
    with pytest.raises(ExperimentError, match="--seeds"):
        parse_grid(["seed=1,2"])
    with pytest.raises(ExperimentError, match="KEY=V1"):
        parse_grid(["d_head"])
    with pytest.raises(AttnlabError, match="scaled"):
        expand(BASE, parse_grid(["scaled=maybe"]))


def test_serial_sweep_skips_finished_resumes_interrupted_and_reports_failures(tmp_path):
    out = tmp_path / "sw"
    grid = {"d_head": ["8", "16"], "scaled": ["true", "false"]}
    # interrupt one trial half way, as a killed job would leave it
    partial = expand(BASE, grid)[1]
    with pytest.raises(TrainingInterrupted):
        train(SAMPLE_TEXT, Config.from_dict(partial["config"]), out_dir=out / partial["name"], stop_after=2)
    r = sweep(out, grid, base=BASE, text=SAMPLE_TEXT, options=SERIAL)
    status = {x["name"]: x["status"] for x in r["runs"]}
    assert status[partial["name"]] == "resumed" and list(status.values()).count("trained") == 3
    _, _, hist = train(SAMPLE_TEXT, Config.from_dict(partial["config"]))
    resumed = [json.loads(l) for l in (out / partial["name"] / "metrics.jsonl").read_text().splitlines()]
    assert [x["loss"] for x in resumed] == [x["loss"] for x in hist.records]  # resume == uninterrupted

    rows = list(csv.DictReader((out / "sweep.csv").open(encoding="utf-8")))
    assert len(rows) == 4 and {x["status"] for x in rows} == {"done"}
    assert [g["d_head"] for g in r["gap"]] == [8, 16] and (out / "sweep_gap.png").stat().st_size > 5000
    data = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert data["gap"][0]["gap"] == pytest.approx(
        data["gap"][0]["val_loss_unscaled"] - data["gap"][0]["val_loss_scaled"]
    )

    again = sweep(out, grid, base=BASE, text=SAMPLE_TEXT, options=SERIAL)
    assert {x["status"] for x in again["runs"]} == {"reused"}
    # a different config into the same dir: every trial's folder is refused before anything is trained
    before = (out / "grid.json").read_text()
    with pytest.raises(RunFoldersRefused, match="different config") as e:
        sweep(out, grid, base=BASE, steps=5, text=SAMPLE_TEXT, options=SERIAL)
    assert set(e.value.failures) == {t["name"] for t in expand(BASE, grid)}
    assert (out / "grid.json").read_text() == before


def test_one_failing_trial_does_not_stop_the_others(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text(SAMPLE_TEXT[:300], encoding="utf-8")
    out = tmp_path / "sw"
    code = main(
        [
            "sweep",
            "--executor",
            "serial",
            "--grid",
            "block_size=8,4000",
            "--steps",
            "2",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            *SMALL[:2],
            *SMALL[4:],
        ]
    )
    assert code == 1
    text = capsys.readouterr().out
    assert "[failed] block_size=4000__seed=0" in text and "[trained] block_size=8__seed=0" in text
    rows = {x["trial"]: x for x in csv.DictReader((out / "sweep.csv").open(encoding="utf-8"))}
    assert rows["block_size=4000__seed=0"]["status"] == "failed"
    assert "CorpusError" in rows["block_size=4000__seed=0"]["error"]
    assert (out / "block_size=4000__seed=0" / "error.json").is_file()


def test_local_process_pool(tmp_path):
    r = sweep(
        tmp_path / "sw",
        {"scaled": ["true", "false"]},
        base=BASE.replace(n_head=2, d_model=16),
        steps=2,
        text=SAMPLE_TEXT,
        options=ExecutorOptions("local", workers=2, progress=False),
    )
    assert sorted(x["status"] for x in r["runs"]) == ["trained", "trained"]


def test_bad_input_messages(tmp_path, capsys):
    assert main(["sweep", "--grid", "nope=1", "--out", str(tmp_path / "a")]) == 2
    assert (
        main(
            [
                "sweep",
                "--executor",
                "ray",
                "--address",
                "127.0.0.1:1",
                "--grid",
                "d_head=8",
                "--steps",
                "1",
                "--out",
                str(tmp_path / "b"),
                *SMALL,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "unknown grid key 'nope'" in err[0] and "cannot reach a Ray cluster" in err[1]


def test_ray_executor(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'attnlab[ray]'")
    ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        r = sweep(
            tmp_path / "sw",
            {"d_head": ["8"], "scaled": ["true", "false"]},
            base=BASE,
            steps=2,
            text=SAMPLE_TEXT,
            options=ExecutorOptions("ray", progress=False),
        )
    finally:
        ray.shutdown()
    assert sorted(x["status"] for x in r["runs"]) == ["trained", "trained"]
    assert len(r["gap"]) == 1
