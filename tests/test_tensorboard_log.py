import json
import sys

import pytest

from attnlab import train
from attnlab.cli import main
from attnlab.train import TrainingInterrupted

pytestmark = pytest.mark.usefixtures("one_thread")
PROBE = "床前明月光"


def events(run_dir):
    """Scalars and images as TensorBoard itself reads them back."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    return acc


def test_event_files_round_trip_against_metrics_jsonl(tmp_path, text, tiny_cfg):
    pytest.importorskip("tensorboard")
    cfg = tiny_cfg.replace(probe=PROBE, snapshot_dense=2, snapshot_every=5, max_steps=10)
    train(text, cfg, out_dir=tmp_path, tensorboard=True)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    acc = events(tmp_path)
    tags = acc.Tags()
    want = {
        "train/loss",
        "train/lr",
        "train/grad_norm",
        "val/loss",
        "layer0/weight_entropy",
        "layer1/jacobian_fro",
        "layer1/logit_std",
        "layer0/q_std",
    }
    assert want <= set(tags["scalars"]), tags["scalars"]

    def series(tag):
        return {e.step: e.value for e in acc.Scalars(tag)}

    assert series("train/loss") == pytest.approx({r["step"]: r["loss"] for r in rows}, rel=1e-6)
    assert series("train/lr") == pytest.approx({r["step"]: r["lr"] for r in rows}, rel=1e-6)
    assert series("val/loss") == pytest.approx({r["step"]: r["val_loss"] for r in rows if "val_loss" in r}, rel=1e-6)
    assert series("layer1/jacobian_fro") == pytest.approx(
        {r["step"]: r["layers"][1]["jacobian_fro"] for r in rows}, rel=1e-6
    )
    # one image per head and snapshot: steps 0, 1, 5, 10; T x T pixels
    assert {"attention/L0H0", "attention/L1H1"} <= set(tags["images"])
    imgs = acc.Images("attention/L1H1")
    assert [i.step for i in imgs] == [0, 1, 5, 10]
    assert (imgs[0].width, imgs[0].height) == (len(PROBE), len(PROBE))


def test_resume_does_not_log_steps_twice(tmp_path, text, tiny_cfg):
    pytest.importorskip("tensorboard")
    cfg = tiny_cfg.replace(probe=PROBE, snapshot_every=0, max_steps=10, ckpt_every=4)
    with pytest.raises(TrainingInterrupted):
        train(text, cfg, out_dir=tmp_path, tensorboard=True, stop_after=6)  # checkpoint at 6
    train(text, cfg, out_dir=tmp_path, tensorboard=True, resume=True)
    steps = [e.step for e in events(tmp_path).Scalars("train/loss")]
    assert steps == list(range(10))


def test_without_the_package_one_clear_line(tmp_path, text, tiny_cfg, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard -> ModuleNotFoundError
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--no-progress",
            "--tensorboard",
            "--set",
            "max_steps=2",
            "--set",
            "d_model=16",
            "--set",
            "n_head=2",
            "--set",
            "block_size=16",
            "--set",
            "vocab_size=40",
            "--set",
            "batch_size=4",
            "--set",
            "device=cpu",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--tensorboard needs the tensorboard package" in err[0] and "pip install" in err[0]
    assert not (out / "ckpt.pt").exists()  # refused before training


def test_runner_passes_tensorboard_to_every_run(tmp_path, text, tiny_cfg):
    pytest.importorskip("tensorboard")
    from attnlab.runner import Run, execute

    runs = [Run(f"r{i}", tiny_cfg.replace(max_steps=3, seed=i), group="g") for i in range(2)]
    execute(runs, text, tmp_path, executor="serial", progress=False, log=lambda m: None, tensorboard=True)
    for i in range(2):
        steps = [e.step for e in events(tmp_path / "g" / f"r{i}").Scalars("train/loss")]
        assert steps == [0, 1, 2]


def test_runner_without_the_package_fails_before_any_run(tmp_path, text, tiny_cfg, monkeypatch):
    from attnlab.runner import Run, execute
    from attnlab.tensorboard_log import TensorBoardMissing

    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(TensorBoardMissing, match="pip install"):
        execute([Run("r", tiny_cfg)], text, tmp_path, executor="serial", progress=False, tensorboard=True)
    assert not (tmp_path / "r").exists()
