"""The §1.13.4 ablation checklist: one change at a time, same seed and batches."""

import json

import pytest

from attnlab import train
from attnlab.cli import main
from attnlab.lab.ablation import CHANGES, checklist_table, clip_activity, run
from attnlab.tools import ExperimentError
from conftest import SAMPLE_TEXT, TINY_MODEL

CFG = TINY_MODEL.replace(max_steps=8, record_every=0)


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def test_checklist_rows_and_deltas():
    r = run(SAMPLE_TEXT, CFG)
    rows = r["rows"]
    assert list(rows) == list(CHANGES)
    assert rows["baseline"]["delta_val_loss"] == 0.0
    _, _, hist = train(SAMPLE_TEXT, CFG)  # the baseline is a plain run
    assert rows["baseline"]["val_loss_end"] == hist.val[-1][1]
    for row in rows.values():
        assert row["diverged"] is False and row["delta_val_loss"] == pytest.approx(
            row["val_loss_end"] - rows["baseline"]["val_loss_end"]
        )
    # each row's config differs from the baseline in exactly the change it names, and moves the loss
    base_cfg = rows["baseline"]["config"]
    for name, row in rows.items():
        if name == "baseline":
            continue
        changed = {k for k in base_cfg if row["config"][k] != base_cfg[k]}
        assert changed == set(CHANGES[name]), (name, changed)
        # clipping acts only when a gradient norm exceeds the threshold; every other change acts
        acts = name != "no_clipping" or rows["baseline"]["max_grad_norm"] > CFG.grad_clip
        assert (row["val_loss_end"] != rows["baseline"]["val_loss_end"]) == acts, name
    assert rows["untied"]["params"] == rows["baseline"]["params"] + CFG.vocab_size * CFG.d_model
    # warmup and clipping change nothing before they act: the first loss is the same
    assert rows["no_warmup"]["loss_start"] == rows["baseline"]["loss_start"]
    assert "去掉残差 / no residual" in checklist_table(r)


def test_divergence_is_reported():
    r = run(SAMPLE_TEXT, CFG.replace(lr=1e9, warmup=0, max_steps=10), changes=["no_clipping"])
    row = r["rows"]["no_clipping"]
    assert row["diverged"] and row["delta_val_loss"] is None


def test_unknown_change():
    with pytest.raises(ExperimentError, match="unknown change"):
        run(SAMPLE_TEXT, CFG, changes=["no_attention"])


def test_cli_ablate(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
    out = tmp_path / "a.json"
    args = ["ablate", "--corpus", str(corpus), "--steps", "3", "--only", "no_positions", "--out", str(out)]
    for kv in (
        "n_layer=1",
        "n_head=2",
        "d_model=16",
        "block_size=16",
        "vocab_size=60",
        "batch_size=4",
        "device=cpu",
        "eval_batches=1",
    ):
        args += ["--set", kv]
    assert main(args) == 0
    assert "d val" in capsys.readouterr().out
    assert set(json.loads(out.read_text(encoding="utf-8"))["rows"]) == {"baseline", "no_positions"}
    assert main(["ablate", "--only", "typo", "--steps", "1"]) == 2


def test_clip_activity_counts_clipping_after_warmup():
    quiet = [{"step": 0, "grad_norm": 40.0}] + [{"step": s, "grad_norm": 0.5} for s in range(1, 100)]
    a = clip_activity(quiet, grad_clip=1.0, warmup=10)  # the warmup spike at step 0 is not counted
    assert a == {"steps": 90, "clipped_share": 0.0, "max_grad_norm": 0.5, "max_over_threshold": 0.5}
    spike = clip_activity(quiet + [{"step": 100, "grad_norm": 30.0}], grad_clip=1.0, warmup=10)
    assert spike["max_over_threshold"] == 30.0
    busy = clip_activity([{"step": s, "grad_norm": 1.2} for s in range(100)], grad_clip=1.0, warmup=10)
    assert busy["clipped_share"] == 1.0
    with pytest.raises(ExperimentError, match="after warmup"):
        clip_activity(quiet, grad_clip=1.0, warmup=500)
