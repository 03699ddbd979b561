"""Head portrait, ablation, attention maps and dynamics on a tiny trained model."""

import json
import unicodedata
import warnings

import pytest
import torch

from attnlab import Config, train
from attnlab.cli import main
from attnlab.diagnostics import head_metrics
from attnlab.errors import CheckpointError
from attnlab.lab.portrait import (
    ablate_heads,
    analyze,
    attention_maps,
    dynamics,
    head_removed,
    poem_windows,
    portrait,
)
from attnlab.model import SequenceTooLongError
from attnlab.tools import is_book_model, load_model
from attnlab.train import TrainingInterrupted
from conftest import SAMPLE_TEXT, TINY_MODEL

CFG = TINY_MODEL


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("heads")
    corpus = d / "corpus.txt"
    corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
    model, tok, _ = train(SAMPLE_TEXT, CFG, out_dir=d / "run")
    torch.save(model.state_dict(), d / "bare.pt")
    return {
        "dir": d,
        "corpus": corpus,
        "ckpt": d / "run" / "ckpt.pt",
        "bare": d / "bare.pt",
        "model": model,
        "tok": tok,
    }


def test_checkpoint_and_bare_state_dict_give_the_same_portrait(trained):
    a = analyze(trained["ckpt"], corpus=trained["corpus"])
    b = analyze(trained["bare"], corpus=trained["corpus"], cfg=CFG)
    assert a["source"]["source"] == "attnlab checkpoint" and b["source"]["source"] == "bare state_dict"
    assert any("state_dict" in n for n in b["notes"])
    assert a["heads"] == b["heads"] and len(a["heads"]) == CFG.n_layer * CFG.n_head
    for h in a["heads"]:
        assert 0 <= h["entropy"] <= 1 + 1e-6 and 0 <= h["diag"] <= 1 and 0 <= h["prev"] <= 1
        assert h["distance"] >= 0 and h["distance_std"] >= 0
    assert a["book"] is None  # tiny config: no book table beside
    assert is_book_model(Config()) and is_book_model(Config(max_steps=100, seed=1))


def test_default_eval_set_is_three_windows_from_line_starts_of_the_validation_split(trained):
    r = analyze(trained["ckpt"], corpus=trained["corpus"], ablate=False)
    texts = r["eval"]["texts"]
    assert len(texts) == 3 and all(len(t) == CFG.block_size for t in texts)
    val = SAMPLE_TEXT[-max(int(len(SAMPLE_TEXT) * CFG.val_fraction), CFG.block_size + 1) :]
    assert all(t in val and val[val.index(t) - 1] == "\n" for t in texts)
    assert poem_windows("abc", 2, 2) == ["ab", "bc"]  # no line breaks: evenly spaced


def test_pooled_portrait_equals_head_metrics_on_the_batch(trained):
    model, tok = trained["model"], trained["tok"]
    texts = ["床前明月光，疑是地上霜。", "白日依山盡，黃河入海流。"]
    pooled = portrait(model, tok, texts)
    pats = model.attention_patterns(torch.tensor([tok.encode(t) for t in texts]))
    for layer, p in enumerate(pats):
        m = head_metrics(p)
        for h in range(CFG.n_head):
            row = pooled[layer * CFG.n_head + h]
            for k in ("entropy", "diag", "prev", "distance", "distance_std"):
                assert row[k] == pytest.approx(float(m[k][h]), abs=1e-5), k


def test_bad_input_is_one_clear_error(trained, tmp_path, capsys):
    with pytest.raises(SequenceTooLongError, match="block_size"):
        analyze(trained["ckpt"], text="床" * (CFG.block_size + 1), ablate=False)
    with pytest.raises(CheckpointError, match="not found"):
        analyze(tmp_path / "nope.pt")
    with pytest.raises(CheckpointError, match="does not fit"):
        load_model(trained["bare"], corpus=trained["corpus"])  # default Config() shapes
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError):
        analyze(junk)
    assert main(["heads", str(tmp_path / "nope.pt")]) == 2
    assert main(["heads", str(trained["ckpt"]), "--no-ablate", "--text", "床" * 40]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("attnlab: error:") for line in err)


def test_ablation_zeroes_one_head_and_always_restores(trained):
    model = trained["model"]
    W = model.blocks[1].attn.proj.weight
    before = W.detach().clone()
    hs = CFG.d_head
    with head_removed(model, 1, 1):
        assert (W[:, hs : 2 * hs] == 0).all() and torch.equal(W[:, :hs], before[:, :hs])
    assert torch.equal(W, before)
    with pytest.raises(RuntimeError, match="boom"):
        with head_removed(model, 1, 0):
            raise RuntimeError("boom")
    assert torch.equal(W, before)

    batches = [(torch.randint(2, 40, (2, 16)), torch.randint(2, 40, (2, 16))) for _ in range(3)]
    calls = {"n": 0}
    original = model.forward

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] > 5:  # fail in the middle of the ablation
            raise RuntimeError("forward failed")
        return original(*a, **k)

    model.forward = flaky
    try:
        with pytest.raises(RuntimeError, match="forward failed"):
            ablate_heads(model, batches)
    finally:
        del model.forward
    assert torch.equal(W, before) and all(torch.isfinite(p).all() for p in model.parameters())


def test_ablation_result_on_validation_batches(trained):
    r = analyze(trained["ckpt"], corpus=trained["corpus"], ablate_batches=3)
    a = r["ablation"]
    assert a["batches"] == 3 and len(a["heads"]) == 4
    # recompute one head's Δ by hand on the same validation batches, with head_removed
    from attnlab.tools import validation_batches

    model, tok = trained["model"], trained["tok"]
    model.eval()
    batches = validation_batches(SAMPLE_TEXT, tok, model.cfg, 3)
    with torch.no_grad():
        base = [model(x, y)[1].item() for x, y in batches]
        with head_removed(model, 1, 0):
            lost = [model(x, y)[1].item() for x, y in batches]
    d = [b - a_ for a_, b in zip(base, lost)]
    h10 = next(h for h in a["heads"] if (h["layer"], h["head"]) == (1, 0))
    assert h10["delta_loss"] == pytest.approx(sum(d) / 3, abs=1e-6)
    assert a["base_loss"] == pytest.approx(sum(base) / 3, abs=1e-6)
    assert h10["delta_loss_min"] == pytest.approx(min(d), abs=1e-6)
    assert any(abs(h["delta_loss"]) > 1e-4 for h in a["heads"])  # removing a head moves the loss


def test_attention_maps_png_with_chinese(trained, tmp_path):
    from attnlab.lab.plot import plot_attention_maps

    maps = attention_maps(trained["model"], trained["tok"], "床前明月光，疑是地上霜。")
    assert maps["chars"][0] == "床" and len(maps["layers"]) == 2 and len(maps["layers"][0]) == 2
    for head in maps["layers"][1]:
        assert all(sum(row) == pytest.approx(1, abs=1e-4) for row in head)
        assert all(v == 0 for i, row in enumerate(head) for v in row[i + 1 :])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = plot_attention_maps(maps, tmp_path / "maps.png")
    assert out.stat().st_size > 10_000
    assert not [w for w in caught if "missing from" in str(w.message) or "Glyph" in str(w.message)]


def test_dynamics_snapshots_are_points_of_one_run(trained, tmp_path):
    cfg = CFG.replace(max_steps=6)
    r = dynamics(SAMPLE_TEXT, cfg, [0, 3, 6], tmp_path / "dyn")
    assert [s["step"] for s in r["snapshots"]] == [0, 3, 6]
    # the step-3 weights are those of a 3-step prefix of the same run (same schedule: max_steps 6)
    with pytest.raises(TrainingInterrupted):
        train(SAMPLE_TEXT, cfg, stop_after=3, out_dir=tmp_path / "prefix")
    three, _, _, _ = load_model(tmp_path / "prefix" / "ckpt.pt")
    kept, _, _, _ = load_model(tmp_path / "dyn" / "dynamics" / "weights" / "step3.pt")
    for a, b in zip(three.state_dict().values(), kept.state_dict().values()):
        assert torch.equal(a, b)
    final, _, _ = train(SAMPLE_TEXT, cfg)
    snap, _, _, _ = load_model(tmp_path / "dyn" / "dynamics" / "ckpt.pt")
    for a, b in zip(final.state_dict().values(), snap.state_dict().values()):
        assert torch.equal(a, b)
    assert r["snapshots"][0]["heads"][0]["entropy"] > 0.99  # untrained heads are uniform
    # a rerun reuses the run and gives the same portraits
    again = dynamics(SAMPLE_TEXT, cfg, [0, 3, 6], tmp_path / "dyn")
    assert again["snapshots"] == r["snapshots"]


def test_dynamics_names_a_step_whose_weights_were_not_kept(tmp_path):
    from attnlab.lab.portrait import dynamics_of_run
    from attnlab.tools import ExperimentError

    cfg = CFG.replace(max_steps=6)
    dynamics(SAMPLE_TEXT, cfg, [3, 6], tmp_path / "dyn")
    with pytest.raises(ExperimentError, match="step 4"):
        dynamics_of_run(tmp_path / "dyn" / "dynamics", SAMPLE_TEXT, [4, 6])


def test_cli_heads_writes_json_and_table(trained, tmp_path, capsys):
    out = tmp_path / "h.json"
    maps = tmp_path / "m.png"
    assert (
        main(
            [
                "heads",
                str(trained["dir"] / "run"),
                "--corpus",
                str(trained["corpus"]),
                "--out",
                str(out),
                "--ablate-batches",
                "2",
                "--maps",
                str(maps),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "平均熵 / entropy" in text and "L1.H1" in text
    lines = text.splitlines()
    first = next(i for i, x in enumerate(lines) if "平均熵" in x)
    table = "\n".join(x for x in lines[first:] if x.startswith(("层", "-", "L")))
    # no ambiguous-width character (·, ±, Δ, —): a CJK terminal would draw it two columns wide
    assert not [c for c in table if unicodedata.east_asian_width(c) == "A"]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["kind"] == "head_portrait" and "torch" in data and maps.is_file()


def test_plain_tables_line_up_in_a_cjk_terminal_too():
    from attnlab.tools import format_table

    table = format_table(["层·头 / L·H", "Δloss", "±"], [["L0·H1", "+0.1", None], ["书 — book", 2.0, "a×b→c ≈ ‖J‖ √d"]])
    assert not [c for c in table if unicodedata.east_asian_width(c) == "A"], table
    assert "L0.H1" in table and "+/-" in table and "x" in table and "->" in table
    # every line has the same display width once CJK characters count double
    widths = {
        sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line.rstrip())
        for line in table.splitlines()[:2]
    }
    assert len(widths) == 1
