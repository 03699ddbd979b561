"""AttentionDebugger: threshold warnings, the invariant probe, and NaN bisection (§1.13.3)."""

import pytest
import torch

from attnlab import train
from attnlab.cli import main
from attnlab.lab.debugger import AttentionDebugger, diagnose_nonfinite
from attnlab.model import TinyGPT
from conftest import SAMPLE_TEXT, TINY_MODEL

CFG = TINY_MODEL


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


class Sabotage:
    """After step 0, multiply layer ``layer``'s query and key weights by ``factor``."""

    def __init__(self, factor, layer=1):
        self.factor, self.layer = factor, layer

    def on_step_end(self, step, record, model):
        if step == 0:
            C = model.cfg.d_model
            with torch.no_grad():
                model.blocks[self.layer].attn.qkv.weight[: 2 * C] *= self.factor


def kinds(dbg):
    return {w["kind"] for w in dbg.warnings}


def test_thresholds_on_records():
    lines = []
    dbg = AttentionDebugger(print_fn=lines.append, grace=10, patience=2)
    layer = {"weight_entropy": 0.995, "logit_std": 0.5, "jacobian_fro": 0.2}
    dbg.check_record(0, {"layers": [layer]})
    dbg.check_record(1, {"layers": [layer]})
    assert dbg.warnings == []  # uniform at the start is normal
    for step in (10, 11, 12):
        dbg.check_record(step, {"layers": [layer]})
    assert [w["step"] for w in dbg.warnings] == [11]  # after patience, and only once
    assert "0.99" in lines[0] and "熵" in lines[0]
    bad = {"weight_entropy": 0.001, "logit_std": 5000.0, "jacobian_fro": 1e-6}
    for step in (20, 21):
        dbg.check_record(step, {"layers": [layer, bad]})
    assert {(w["layer"], w["kind"]) for w in dbg.warnings[1:]} == {
        (1, "entropy_low"),
        (1, "logit_std"),
        (1, "jacobian_small"),
    }


@pytest.mark.parametrize(
    "bug, expected, absent",
    [
        ("mask_zero", {"future_leak"}, {"row_sum", "nonfinite"}),
        ("scale_after_softmax", {"row_sum"}, {"future_leak", "nonfinite"}),
        ("divide_by_d_k", {"entropy_high"}, {"row_sum", "future_leak", "nonfinite"}),
        ("no_max_subtraction", set(), {"row_sum", "future_leak", "nonfinite", "logit_std"}),
        (None, set(), {"row_sum", "future_leak", "nonfinite", "logit_std", "jacobian_small"}),
    ],
)
def test_each_injected_bug(bug, expected, absent):
    dbg = AttentionDebugger(print_fn=None, grace=5, patience=3, probe_every=5)
    _, _, hist = train(SAMPLE_TEXT, CFG.replace(bug=bug), callbacks=[dbg])
    assert hist.diverged_at is None
    assert expected <= kinds(dbg) and not (absent & kinds(dbg))


def test_entropy_alarm_fires_on_over_scaling_and_not_on_a_healthy_model():
    """In CFG's 20 steps even a healthy model's attention is still near uniform (> 0.99); with larger
    initial weights it is not, and then only the over-scaled (d_k) model raises entropy_high."""
    cfg = CFG.replace(init_std=0.1)
    for bug, fires in ((None, False), ("divide_by_d_k", True)):
        dbg = AttentionDebugger(print_fn=None, grace=5, patience=3, probe_every=5)
        _, _, hist = train(SAMPLE_TEXT, cfg.replace(bug=bug), callbacks=[dbg])
        assert hist.diverged_at is None
        assert ("entropy_high" in kinds(dbg)) == fires, (bug, kinds(dbg))


def test_forced_overflow_is_located_at_exp():
    lines = []
    dbg = AttentionDebugger(print_fn=lines.append, grace=0)
    _, _, hist = train(SAMPLE_TEXT, CFG.replace(bug="no_max_subtraction"), callbacks=[Sabotage(300.0), dbg])
    assert hist.diverged_at == 1
    r = dbg.nan_report
    assert (r["stage"], r["layer"]) == ("exp", 1) and r["head"] in (0, 1)
    assert [c["ok"] for c in r["checks"] if c["layer"] == 0] == [True] * 5
    assert any("first broken stage: exp" in line for line in lines)
    # the same weights with the max subtracted: no NaN at all
    dbg2 = AttentionDebugger(print_fn=None, grace=0, patience=1)
    _, _, hist2 = train(SAMPLE_TEXT, CFG.replace(max_steps=3), callbacks=[Sabotage(300.0), dbg2])
    assert hist2.diverged_at is None and dbg2.nan_report is None and "logit_std" in kinds(dbg2)


def test_overflowing_scores_are_located_at_scores():
    dbg = AttentionDebugger(print_fn=None)
    _, _, hist = train(SAMPLE_TEXT, CFG, callbacks=[Sabotage(1e20), dbg])
    assert hist.diverged_at == 1
    assert (dbg.nan_report["stage"], dbg.nan_report["layer"]) == ("scores", 1)


def test_diagnose_direct_cases():
    torch.manual_seed(0)
    model = TinyGPT(CFG)
    x = torch.randint(2, 60, (2, 16))
    assert diagnose_nonfinite(model, x)["stage"] is None  # healthy forward
    with torch.no_grad():
        model.blocks[0].mlp[0].weight[0, 0] = float("nan")
    r = diagnose_nonfinite(model, x)
    assert r["stage"] == "parameters" and "blocks.0.mlp.0.weight" in r["parameters"]


def test_cli_train_debug(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
    args = ["train", "--debug", "--no-progress", "--corpus", str(corpus), "--out", str(tmp_path / "run")]
    for kv in (
        "n_layer=1",
        "n_head=2",
        "d_model=16",
        "block_size=16",
        "vocab_size=60",
        "batch_size=4",
        "max_steps=3",
        "device=cpu",
        "bug=mask_zero",
    ):
        args += ["--set", kv]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "[debugger] step 0" in out and "未来位置" in out
