import json
import math

import pytest
import torch

from attnlab import Config, get_batch, load_checkpoint, lr_at, train
from attnlab.errors import CheckpointError, CorpusError
from attnlab.train import TrainingInterrupted


def test_lr_schedule_shape():
    cfg = Config(lr=1e-2, warmup=10, max_steps=110)
    assert lr_at(0, cfg) == pytest.approx(1e-3)
    assert lr_at(9, cfg) == pytest.approx(1e-2)
    assert lr_at(10, cfg) == pytest.approx(1e-2)
    assert lr_at(60, cfg) == pytest.approx(1e-2 * (0.1 + 0.9 * 0.5))
    assert lr_at(110, cfg) == pytest.approx(1e-3)
    lrs = [lr_at(s, cfg) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))
    assert lr_at(0, Config(warmup=0, max_steps=10)) == pytest.approx(Config().lr)


def test_get_batch_is_fixed_by_the_generator():
    data = torch.arange(100)
    a = get_batch(data, 8, 4, torch.Generator().manual_seed(1))
    b = get_batch(data, 8, 4, torch.Generator().manual_seed(1))
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    x, y = a
    assert x.shape == (4, 8) and torch.equal(y, x + 1)


def test_training_lowers_the_loss_and_records_every_step(text, tiny_cfg):
    cfg = tiny_cfg.replace(max_steps=40, lr=1e-2)
    model, tok, hist = train(text, cfg)
    losses = hist["loss"]
    assert len(losses) == 40 and losses[-1] < losses[0] - 0.5
    assert all(len(r["layers"]) == 2 for r in hist.records)
    assert {"weight_entropy", "jacobian_fro", "logit_std", "q_std", "k_std"} <= set(hist.records[0]["layers"][0])
    assert [s for s, _ in hist.val] == [4, 9, 14, 19, 24, 29, 34, 39]


def test_scaled_and_unscaled_share_init_and_batches(text, tiny_cfg):
    _, _, a = train(text, tiny_cfg.replace(max_steps=1))
    _, _, b = train(text, tiny_cfg.replace(max_steps=1, scaled=False))
    la, lb = a.records[0]["layers"][0], b.records[0]["layers"][0]
    # same weights and batch: q and k are identical, and the only difference, the division,
    # makes the unscaled logit std exactly sqrt(d_head) times the scaled one
    assert la["q_std"] == pytest.approx(lb["q_std"], rel=1e-6)
    assert la["k_std"] == pytest.approx(lb["k_std"], rel=1e-6)
    assert lb["logit_std"] / la["logit_std"] == pytest.approx(tiny_cfg.d_head**0.5, rel=1e-6)
    # another seed gives other weights: the same check then fails
    _, _, c = train(text, tiny_cfg.replace(max_steps=1, scaled=False, seed=tiny_cfg.seed + 1))
    assert c.records[0]["layers"][0]["q_std"] != pytest.approx(la["q_std"], rel=1e-6)


def test_resume_is_bit_for_bit(tmp_path, text, tiny_cfg):
    full_dir, cut_dir = tmp_path / "full", tmp_path / "cut"
    m_full, _, h_full = train(text, tiny_cfg, out_dir=full_dir)
    with pytest.raises(TrainingInterrupted):
        train(text, tiny_cfg, out_dir=cut_dir, stop_after=7)
    assert len((cut_dir / "metrics.jsonl").read_text().splitlines()) == 7
    m_res, _, h_res = train(text, tiny_cfg, out_dir=cut_dir, resume=True)
    assert h_res.records == h_full.records
    for (n, a), (_, b) in zip(m_full.state_dict().items(), m_res.state_dict().items()):
        assert torch.equal(a, b), n
    assert (cut_dir / "metrics.jsonl").read_text() == (full_dir / "metrics.jsonl").read_text()
    summary = json.loads((cut_dir / "summary.json").read_text())
    assert summary["steps"] == tiny_cfg.max_steps
    # each session's training time is kept beside the run (the lab book sums it)
    from attnlab.runfolder import training_seconds, training_sessions

    cut, whole = training_sessions(cut_dir), training_sessions(full_dir)
    assert [(s["from_step"], s["to_step"]) for s in cut] == [(0, 7), (7, tiny_cfg.max_steps)]
    assert [(s["from_step"], s["to_step"]) for s in whole] == [(0, tiny_cfg.max_steps)]
    assert all(s["seconds"] > 0 and s["threads"] >= 1 for s in cut + whole)
    assert training_seconds(cut_dir) == pytest.approx(sum(s["seconds"] for s in cut), abs=1e-3)
    assert training_seconds(tmp_path) is None  # no record: not a run folder


def test_checkpoint_roundtrip_and_errors(tmp_path, text, tiny_cfg):
    model, tok, _ = train(text, tiny_cfg, out_dir=tmp_path)
    m2, tok2, cfg2 = load_checkpoint(tmp_path / "ckpt.pt")
    x = torch.randint(0, 40, (1, 8))
    assert torch.equal(model(x)[0], m2(x)[0]) and tok2.itos == tok.itos and cfg2 == tiny_cfg
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(tmp_path / "missing.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes((tmp_path / "ckpt.pt").read_bytes()[:500])
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="does not match"):
        load_checkpoint(tmp_path / "ckpt.pt", expect=tiny_cfg.replace(d_model=64))
    with pytest.raises(CheckpointError, match="different config"):
        train(text, tiny_cfg.replace(lr=0.5), out_dir=tmp_path, resume=True)


def test_any_utf8_corpus(tiny_cfg):
    english = "the quick brown fox jumps over the lazy dog. " * 30
    _, tok, hist = train(english, tiny_cfg.replace(max_steps=3))
    assert "o" in tok.stoi and math.isfinite(hist.records[-1]["loss"])


def test_short_corpus_is_an_error(tiny_cfg):
    with pytest.raises(CorpusError, match="block_size"):
        train("短", tiny_cfg)


def test_divergence_is_reported_not_raised(text, tiny_cfg):
    cfg = tiny_cfg.replace(lr=1e9, grad_clip=0.0, max_steps=20, warmup=0)
    _, _, hist = train(text, cfg)
    assert hist.diverged_at is not None and hist.diverged_at < 20


def test_atomic_writes_leave_no_temp_files_and_normal_permissions(tmp_path):
    import os
    import stat

    from attnlab.io import write_json

    path = write_json(tmp_path / "r.json", {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    mode = stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_failed_write_keeps_the_old_file(tmp_path):
    from attnlab.io import write_json

    path = write_json(tmp_path / "r.json", {"a": 1})
    with pytest.raises(TypeError):
        write_json(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_interrupted_checkpoint_write_keeps_the_previous_one(tmp_path):
    from attnlab.io import save_torch

    path = save_torch(tmp_path / "ckpt.pt", {"step": 1})
    with pytest.raises(Exception):
        save_torch(path, {"step": 2, "unpicklable": lambda: 0})  # fails halfway through pickling
    assert torch.load(path, weights_only=True) == {"step": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]
