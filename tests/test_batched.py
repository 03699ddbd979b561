"""train_many trains R runs as one stacked model; each run must equal its own ``train``.

Not bit for bit: a batched matmul (bmm) over R runs may sum its products in a
different order than the single-run matmul, so per-step values differ by a few
float32 ulps (measured: <= 5e-7 on losses over 12 steps on CPU). The tolerances
below (1e-5 absolute on losses, 1e-4 relative on diagnostics) leave room for
that and nothing else: a wrong scale, batch, clip or optimizer slice shows up
as differences of 1e-3 or more from the first step on.

ATTNLAB_TEST_DEVICE=cuda runs the comparisons on the GPU (scripts/gpu_check.sh).
"""
import math
import os

import pytest
import torch

from attnlab import Config, TinyGPT, train
from attnlab.batched import DIAG_KEYS, train_many
from attnlab.errors import ConfigError
from attnlab.train import TrainingInterrupted

DEVICE = os.environ.get("ATTNLAB_TEST_DEVICE", "cpu")
# CUDA kernels (SDPA, cuBLAS batched vs single gemm) reorder sums more freely.
LOSS_TOL = 1e-5 if DEVICE == "cpu" else 1e-4
DIAG_RTOL = 1e-4 if DEVICE == "cpu" else 1e-3
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device (torch.cuda.is_available() is False)")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models gain nothing from threads, and on a busy shared CPU two
    OpenMP threads waiting on each other run these tests 10x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cfg(tiny_cfg) -> Config:
    return tiny_cfg.replace(device=DEVICE)


def assert_same_run(h, ref, loss_tol=LOSS_TOL, diag_rtol=DIAG_RTOL):
    """h (from train_many) equals ref (from train) up to float32 reordering."""
    assert len(h.records) == len(ref.records)
    assert h.diverged_at == ref.diverged_at
    for a, b in zip(h.records, ref.records):
        assert a.keys() == b.keys(), a["step"]
        assert a["step"] == b["step"] and a["lr"] == b["lr"]
        for key in ("loss", "val_loss", "grad_norm"):
            if key in b and math.isfinite(b[key]):
                assert a[key] == pytest.approx(b[key], abs=loss_tol, rel=loss_tol), (key, a["step"])
            elif key in b:
                assert not math.isfinite(a[key])
        for la, lb in zip(a.get("layers") or [], b.get("layers") or []):
            assert la.keys() == lb.keys() == set(DIAG_KEYS)
            for k in lb:
                assert la[k] == pytest.approx(lb[k], rel=diag_rtol, abs=1e-7, nan_ok=True), (k, a["step"])


def assert_same_weights(m, ref, tol=LOSS_TOL):
    for (n, a), (_, b) in zip(m.state_dict().items(), ref.state_dict().items()):
        if n.endswith("k_norm.bias"):
            # Adding one vector to every key shifts a row's scores by a constant,
            # which the softmax ignores: this gradient is exactly 0 in exact
            # arithmetic, so both runs step on rounding noise, which AdamW
            # normalises to full-size steps of arbitrary sign.
            continue
        assert torch.allclose(a.cpu(), b.cpu(), atol=tol, rtol=tol), n


def test_each_run_equals_its_own_train(text, cfg):
    cfgs = [cfg.replace(scaled=False), cfg, cfg.replace(seed=7, lr=1e-2),
            cfg.replace(seed=7, scaled=False)]
    results = train_many(text, cfgs)
    assert len(results) == 4
    for c, (model, tok, hist) in zip(cfgs, results):
        ref_model, ref_tok, ref_hist = train(text, c)
        assert tok.itos == ref_tok.itos
        assert isinstance(model, TinyGPT) and model.cfg == c
        assert_same_run(hist, ref_hist)
        assert_same_weights(model, ref_model)
        assert model.diagnostics()[0].keys() == set(DIAG_KEYS)
        assert not model.training


def test_initial_weights_are_trains(text, cfg):
    cfgs = [cfg.replace(max_steps=0), cfg.replace(max_steps=0, seed=3, scaled=False)]
    for c, (model, _, hist) in zip(cfgs, train_many(text, cfgs)):
        torch.manual_seed(c.seed)
        ref = TinyGPT(c)
        assert hist.records == []
        for (n, a), (_, b) in zip(model.state_dict().items(), ref.state_dict().items()):
            assert torch.equal(a.cpu(), b), n


def test_record_every_zero_takes_the_fast_path(text, cfg):
    cfgs = [cfg.replace(record_every=0, scaled=False), cfg.replace(record_every=0)]
    for c, (_, _, hist) in zip(cfgs, train_many(text, cfgs)):
        _, _, ref = train(text, c)
        assert all("layers" not in r for r in hist.records)
        assert_same_run(hist, ref)


def test_interrupted_train_many_resumes_bit_for_bit(tmp_path, text, cfg):
    cfgs = [cfg.replace(scaled=False), cfg]
    full = train_many(text, cfgs, out_dirs=[tmp_path / "f0", tmp_path / "f1"])
    cut = [tmp_path / "c0", tmp_path / "c1"]
    with pytest.raises(TrainingInterrupted):
        train_many(text, cfgs, out_dirs=cut, stop_after=7)
    assert len((cut[0] / "metrics.jsonl").read_text().splitlines()) == 7
    resumed = train_many(text, cfgs, out_dirs=cut, resume=True)
    for (m_full, _, h_full), (m_res, _, h_res), d in zip(full, resumed, cut):
        if DEVICE == "cpu":
            assert h_res.records == h_full.records
            for (n, a), (_, b) in zip(m_full.state_dict().items(), m_res.state_dict().items()):
                assert torch.equal(a, b), n
        else:   # CUDA attention backward kernels add with atomics: not reproducible bit for bit
            assert_same_run(h_res, h_full)
            assert_same_weights(m_res, m_full)
        assert len((d / "metrics.jsonl").read_text().splitlines()) == cfg.max_steps
        assert (d / "summary.json").is_file() and (d / "config.json").is_file()


def test_train_resumes_a_train_many_checkpoint(tmp_path, text, cfg):
    cfgs = [cfg.replace(scaled=False), cfg]
    dirs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(TrainingInterrupted):
        train_many(text, cfgs, out_dirs=dirs, stop_after=6)
    model, _, hist = train(text, cfgs[1], out_dir=dirs[1], resume=True)
    ref_model, _, ref_hist = train(text, cfgs[1])
    assert_same_run(hist, ref_hist)
    assert_same_weights(model, ref_model)


def test_runs_at_different_steps_resume_in_groups(tmp_path, text, cfg):
    cfgs = [cfg.replace(scaled=False), cfg]
    dirs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(TrainingInterrupted):
        train(text, cfgs[0], out_dir=dirs[0], stop_after=3)
    with pytest.raises(TrainingInterrupted):
        train(text, cfgs[1], out_dir=dirs[1], stop_after=8)
    for c, (_, _, hist) in zip(cfgs, train_many(text, cfgs, out_dirs=dirs, resume=True)):
        assert_same_run(hist, train(text, c)[2])


def test_a_diverging_run_leaves_the_stack_and_the_others_go_on(text, cfg):
    cfgs = [cfg, cfg.replace(lr=1e12, scaled=False)]     # the second goes NaN at step 1
    seen = []

    class Watch:
        def on_nonfinite(self, step, batch, model):
            seen.append((step, batch[0].shape, all(torch.isfinite(p).all() for p in model.parameters())))

    results = train_many(text, cfgs, callbacks=[[], [Watch()]])
    for c, (model, _, hist) in zip(cfgs, results):
        ref_model, _, ref_hist = train(text, c)
        assert_same_run(hist, ref_hist)
        assert_same_weights(model, ref_model)
    assert results[1][2].diverged_at == 1 and results[0][2].diverged_at is None
    assert seen == [(1, (cfg.batch_size, cfg.block_size), True)]


def test_callbacks_and_on_step_see_each_run(text, cfg):
    cfgs = [cfg.replace(max_steps=3, scaled=False), cfg.replace(max_steps=3)]
    events, steps = [], []

    class Spy:
        def on_step_end(self, step, record, model):
            events.append((step, model.cfg.scaled, record["loss"], model.diagnostics()[0]))

    results = train_many(text, cfgs, callbacks=[Spy()],
                         on_step=lambda step, recs: steps.append((step, len(recs))))
    assert steps == [(0, 2), (1, 2), (2, 2)]
    assert [(s, sc) for s, sc, _, _ in events] == [(0, False), (0, True), (1, False), (1, True),
                                                 (2, False), (2, True)]
    last = [e for e in events if e[0] == 2]
    for (_, scaled, loss, diag), (_, _, hist) in zip(last, results):
        assert loss == hist.records[-1]["loss"] and diag == hist.records[-1]["layers"][0]


def test_configs_must_share_their_shape(text, cfg):
    with pytest.raises(ConfigError, match="d_model"):
        train_many(text, [cfg, cfg.replace(d_model=64)])
    with pytest.raises(ConfigError, match="out_dir"):
        train_many(text, [cfg, cfg], out_dirs=["x"])


@pytest.mark.parametrize("changes", [{"pos": "rope", "norm": "rmsnorm"},
                                     {"pos": "sinusoidal", "qk_norm": True, "n_kv_head": 1},
                                     {"tie_weights": False, "residual": False, "norm": "none"},
                                     {"bug": "scale_after_softmax"}, {"bug": "mask_zero"}])
def test_model_variants_match_train(text, cfg, changes):
    base = cfg.replace(max_steps=4, **changes)
    cfgs = [base.replace(scaled=False), base]
    for c, (model, _, hist) in zip(cfgs, train_many(text, cfgs)):
        ref_model, _, ref_hist = train(text, c)
        assert_same_run(hist, ref_hist)
        assert_same_weights(model, ref_model)


# ------------------------------------------------------------------------------ CUDA
@needs_cuda
def test_cuda_training_matches_cpu(text, tiny_cfg):
    """A few steps on the GPU against the CPU: same batches and init, so the
    losses agree to float32 kernel differences (TF32 off by default for matmul)."""
    cfgs = [tiny_cfg.replace(max_steps=6, scaled=False), tiny_cfg.replace(max_steps=6)]
    gpu = train_many(text, [c.replace(device="cuda") for c in cfgs])
    for c, (_, _, hist) in zip(cfgs, gpu):
        _, _, ref = train(text, c)
        assert_same_run(hist, ref, loss_tol=1e-4, diag_rtol=1e-3)
        _, _, single = train(text, c.replace(device="cuda"))
        assert_same_run(hist, single, loss_tol=1e-4, diag_rtol=1e-3)


def test_bf16_autocast_matches_train(text, cfg):
    """bf16 autocast (CPU or CUDA) keeps softmax and the loss in float32 (§1.17.5).
    bf16 rounding flips amplify the reordering differences, hence 1e-3; against
    fp32 the losses agree to bf16 precision (~1e-2)."""
    cfgs = [cfg.replace(max_steps=6, dtype="bf16", scaled=s) for s in (False, True)]
    for c, (_, _, hist) in zip(cfgs, train_many(text, cfgs)):
        _, _, single = train(text, c)
        _, _, fp32 = train(text, c.replace(dtype="fp32"))
        assert_same_run(hist, single, loss_tol=1e-3, diag_rtol=1e-2)
        assert hist.records[0]["loss"] == pytest.approx(fp32.records[0]["loss"], abs=2e-2)
        assert all(math.isfinite(v) for r in hist.records for layer in r["layers"]
                   for v in layer.values())
