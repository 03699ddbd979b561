import numpy as np
import pytest
import torch

from attnlab import Config, train
from attnlab.snapshots import FILENAME, METRICS, SnapshotError, read_snapshots, snapshot_steps, take_snapshot
from attnlab.train import TrainingInterrupted

pytestmark = pytest.mark.usefixtures("one_thread")
PROBE = "床前明月光，疑是地上霜。"


@pytest.fixture
def cfg(tiny_cfg):
    return tiny_cfg.replace(probe=PROBE, snapshot_dense=3, snapshot_every=4, max_steps=12)


def test_default_schedule_is_dense_early_and_about_80_for_the_case():
    steps = snapshot_steps(Config())
    assert steps[:20] == list(range(20)) and steps[20:23] == [25, 50, 75]
    assert steps[-1] == 1500 and len(steps) == 80
    assert snapshot_steps(Config(snapshot_every=0)) == []
    assert snapshot_steps(Config(max_steps=30, snapshot_dense=2, snapshot_every=25)) == [0, 1, 25, 30]


def test_old_configs_load_and_compare_equal():
    old = {k: v for k, v in Config().to_dict().items() if k not in ("probe", "snapshot_every", "snapshot_dense")}
    assert Config.from_dict(old) == Config()


def test_bad_snapshot_settings_name_the_field():
    with pytest.raises(ValueError, match="snapshot_every"):
        Config(snapshot_every=-1)
    with pytest.raises(ValueError, match="probe"):
        Config(probe="")
    Config(probe="", snapshot_every=0)  # no snapshots, no probe needed


def test_snapshots_match_the_models_own_patterns(tmp_path, text, cfg):
    model, tok, _ = train(text, cfg, out_dir=tmp_path)
    snap = read_snapshots(tmp_path / FILENAME)
    assert snap.steps.tolist() == snapshot_steps(cfg) == [0, 1, 2, 4, 8, 12]
    T = len(PROBE)
    assert snap.patterns.shape == (6, 2, 2, T, T) and snap.patterns.dtype == np.float16
    assert snap.metrics.shape == (6, 2, 2, len(METRICS)) and snap.meta["tokens"] == list(PROBE)
    # the last snapshot is the trained model; float16 keeps ~3 significant digits
    ids = torch.tensor([tok.encode(PROBE)])
    want = torch.stack([p[0] for p in model.attention_patterns(ids)]).numpy()
    np.testing.assert_allclose(snap.patterns[-1].astype(np.float32), want, atol=1e-3)
    rows = snap.patterns.astype(np.float32).sum(-1)
    np.testing.assert_allclose(rows, 1.0, atol=1e-2)
    assert np.all(np.triu(snap.patterns.astype(np.float32), 1) == 0)  # causal: no future weight
    ent = snap.metrics[..., METRICS.index("entropy")]
    assert np.all((ent > 0) & (ent <= 1.0 + 1e-6))


def test_snapshot_zero_is_the_initial_model(tmp_path, text, cfg):
    _, tok, _ = train(text, cfg, out_dir=tmp_path)
    from attnlab.model import TinyGPT

    torch.manual_seed(cfg.seed)
    patterns, _ = take_snapshot(TinyGPT(cfg), tok.encode(PROBE))
    snap = read_snapshots(tmp_path / FILENAME)
    assert np.array_equal(snap.patterns[0], patterns)


def test_snapshots_leave_training_bit_for_bit_unchanged(tmp_path, text, cfg):
    m_on, _, h_on = train(text, cfg, out_dir=tmp_path / "on")
    m_off, _, h_off = train(text, cfg.replace(snapshot_every=0), out_dir=tmp_path / "off")
    assert (tmp_path / "on" / FILENAME).is_file() and not (tmp_path / "off" / FILENAME).exists()
    assert h_on.records == h_off.records
    for (n, a), (_, b) in zip(m_on.state_dict().items(), m_off.state_dict().items()):
        assert torch.equal(a, b), n


def test_resume_continues_the_file_without_duplicate_or_gap(tmp_path, text, cfg):
    train(text, cfg, out_dir=tmp_path / "full")
    cut = tmp_path / "cut"
    with pytest.raises(TrainingInterrupted):  # steps 0..5 run, checkpoint at step 6
        train(text, cfg, out_dir=cut, stop_after=6)
    assert read_snapshots(cut / FILENAME).steps.tolist() == [0, 1, 2, 4]
    at_six = (cut / "ckpt.pt").read_bytes()
    with pytest.raises(TrainingInterrupted):  # steps 6..8 run: snapshot 8 is taken
        train(text, cfg, out_dir=cut, resume=True, stop_after=3)
    assert read_snapshots(cut / FILENAME).steps.tolist() == [0, 1, 2, 4, 8]
    # a crash after snapshot 8 but before the checkpoint that follows it: back to step 6
    (cut / "ckpt.pt").write_bytes(at_six)
    train(text, cfg, out_dir=cut, resume=True)
    full, res = read_snapshots(tmp_path / "full" / FILENAME), read_snapshots(cut / FILENAME)
    assert res.steps.tolist() == full.steps.tolist() == [0, 1, 2, 4, 8, 12]
    assert np.array_equal(res.patterns, full.patterns) and np.array_equal(res.metrics, full.metrics)


def test_corrupt_or_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SnapshotError, match="no attention snapshots"):
        read_snapshots(tmp_path / FILENAME)
    (tmp_path / FILENAME).write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(SnapshotError, match="corrupt"):
        read_snapshots(tmp_path / FILENAME)


def test_resume_over_a_corrupt_file_keeps_it_aside_and_goes_on(tmp_path, text, cfg):
    with pytest.raises(TrainingInterrupted):
        train(text, cfg, out_dir=tmp_path, stop_after=4)
    (tmp_path / FILENAME).write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="corrupt"):
        train(text, cfg, out_dir=tmp_path, resume=True)
    assert (tmp_path / (FILENAME + ".corrupt")).read_bytes() == b"garbage"
    assert read_snapshots(tmp_path / FILENAME).steps.tolist() == [4, 8, 12]


def test_cli_resume_over_a_snapshot_file_whose_meta_is_a_list_is_one_line(tmp_path, text):
    """`train --resume` on a folder whose snapshots meta is a JSON list: one warning line, the resume
    goes on, and an earlier set-aside file is kept (was: AttributeError traceback)."""
    import io
    import zipfile

    from attnlab.cli import main
    from attnlab.snapshots import SnapshotWarning
    from conftest import set_args

    corpus, out = tmp_path / "c.txt", tmp_path / "r"
    corpus.write_text(text, encoding="utf-8")
    args = ["train", "--corpus", str(corpus), "--out", str(out), "--no-progress"]
    snap = ["--set", "snapshot_every=2", "--set", "snapshot_dense=1", "--set", "ckpt_every=2"]
    assert main([*args, *set_args(max_steps=4), *snap]) == 0
    with zipfile.ZipFile(out / FILENAME) as z:
        members = {n: z.read(n) for n in z.namelist()}
    buf = io.BytesIO()
    np.save(buf, np.array("[1, 2]"))
    with zipfile.ZipFile(out / FILENAME, "w") as z:
        for n, data in {**members, "meta.npy": buf.getvalue()}.items():
            z.writestr(n, data)
    (out / (FILENAME + ".corrupt")).write_bytes(b"earlier")
    with pytest.warns(SnapshotWarning) as caught:
        assert main([*args, *set_args(max_steps=6), *snap, "--resume"]) == 0
    msg = str(caught[0].message)
    assert "meta is a JSON list" in msg and "\n" not in msg and FILENAME + ".corrupt.1" in msg
    assert (out / (FILENAME + ".corrupt")).read_bytes() == b"earlier"
    assert read_snapshots(out / FILENAME).steps.tolist() == [4, 6]  # retaken from the checkpoint on
