"""attnlab bench: FLOP counts, the timing protocol, the reference model, tiny end-to-end runs."""

import json
import os

import pytest
import torch

from attnlab import Config, TinyGPT
from attnlab.cli import main
from attnlab.lab.bench import bench_attention, bench_train, explicit_attention, format_train
from attnlab.lab.reference_gpt import ReferenceGPT
from attnlab.perf import forward_flops, interleaved, matmul_rate, matmul_stepper, train_flops

DEVICE = os.environ.get("ATTNLAB_TEST_DEVICE", "cpu")
TINY = ("batch_size=2", "block_size=16", "vocab_size=40")


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("cfg", [Config(), Config(d_model=256, n_head=1), Config(n_kv_head=1)])
def test_train_flops_counts_every_matmul_weight_and_attention(cfg):
    # every 2-D weight except the position table is used in one matmul per token
    weights = sum(p.numel() for n, p in TinyGPT(cfg).named_parameters() if p.dim() == 2 and n != "pos_emb.weight")
    B, T = cfg.batch_size, cfg.block_size
    attention = cfg.n_layer * 2 * 2 * B * cfg.n_head * T * T * cfg.d_head
    assert forward_flops(cfg) == 2 * B * T * weights + attention
    assert train_flops(cfg, 10) == pytest.approx(30 * forward_flops(cfg))


def test_book_model_step_is_5_5_gflop():
    assert train_flops(Config()) / 1e9 == pytest.approx(5.51, abs=0.01)


def test_matmul_rate_is_positive():
    assert matmul_rate(seconds=0.01, sizes=(64,)) > 1e6


def test_interleaved_alternates_and_skips_warmup():
    calls = []
    times = interleaved(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
        repeats=3,
        warmup=2,
        device=torch.device("cpu"),
    )
    assert calls == ["a", "a", "b", "b"] + ["a", "b"] * 3
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3}


def test_reference_gpt_computes_the_same_function_as_tinygpt():
    cfg = Config(n_layer=2, n_head=2, d_model=16, block_size=8, vocab_size=30)
    tiny, ref = TinyGPT(cfg), ReferenceGPT(cfg)
    assert ref.num_params() == tiny.num_params()
    C = cfg.d_model
    with torch.no_grad():
        t = dict(tiny.named_parameters())
        for name, p in ref.named_parameters():
            src = name.replace(".fc.", ".mlp.0.").replace(".out.", ".mlp.2.")
            for part, sl in (("q", slice(0, C)), ("k", slice(C, 2 * C)), ("v", slice(2 * C, 3 * C))):
                if name.endswith(f"attn.{part}.weight"):
                    src, value = None, t[name.replace(f"attn.{part}", "attn.qkv")][sl]
            p.copy_(t[src] if src else value)
    idx = torch.randint(30, (3, 8))
    assert torch.allclose(ref(idx)[0], tiny(idx)[0], atol=1e-5)


def test_explicit_attention_equals_sdpa():
    q, k, v = torch.randn(3, 1, 4, 32, 16).unbind(0)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
    assert torch.allclose(explicit_attention(q, k, v, 0.25), want, atol=1e-6)


def test_bench_train_tiny_end_to_end():
    r = bench_train(("small",), records=(1, 0), repeats=1, warmup=0, device=DEVICE, matmul_sizes=(64,), overrides=TINY)
    rows = {row["variant"]: row for row in r["configs"]["small"]["rows"]}
    assert set(rows) == {
        "reference",
        "attnlab record_every=1",
        "attnlab record_every=0",
        "matmuls only",
        "attnlab record_every=1 + snapshots",
    }
    assert rows["reference"]["vs_reference"] == 1.0
    one = rows["attnlab record_every=0"]
    assert one["tokens_per_s"] == pytest.approx(2 * 16 / (one["ms_per_step"] / 1e3))
    snap = r["configs"]["small"]["snapshots"]
    assert snap["ms_per_snapshot"] > 0 and snap["snapshots_per_run"] == 80 and snap["run_steps"] == 1500
    with_snap = rows["attnlab record_every=1 + snapshots"]["ms_per_step"]
    assert with_snap == pytest.approx(
        rows["attnlab record_every=1"]["ms_per_step"] + snap["ms_per_snapshot"] * 80 / 1500
    )
    assert r["matmul_rate_flops"] > 0
    rec = r["configs"]["small"]["recording"]  # recorded / unrecorded, per round, with the load
    assert rec["wall_ratio"]["rounds"] == [
        pytest.approx(rows["attnlab record_every=1"]["ms_rounds"][0] / rows["attnlab record_every=0"]["ms_rounds"][0])
    ]
    assert rec["cpu_ratio"]["median"] > 0 and "load_start" in rec and rec["cpus"] >= 1
    assert "recording: attnlab record_every=1 / attnlab record_every=0 = " in format_train(r)
    assert (
        bench_train(
            ("small",),
            records=(0,),
            repeats=1,
            warmup=0,
            device=DEVICE,
            matmul_sizes=(64,),
            overrides=TINY,
            reference=False,
            snapshots=False,
        )["configs"]["small"]["recording"]
        is None
    )
    json.dumps(r)


@pytest.mark.parametrize("overrides", [{}, {"d_model": 256, "n_head": 1}, {"n_kv_head": 2, "n_layer": 3}])
def test_matmul_stepper_does_exactly_the_training_flops(overrides):
    from torch.utils.flop_counter import FlopCounterMode

    cfg = Config(**overrides).replace(batch_size=2)
    with FlopCounterMode(display=False) as counter:
        matmul_stepper(cfg, R=3)()
    assert counter.get_total_flops() == 3 * train_flops(cfg)


def test_bench_attention_stops_at_the_budget_and_plots(tmp_path):
    out, fig = tmp_path / "a.json", tmp_path / "a.png"
    assert (
        main(
            [
                "bench",
                "attention",
                "--n",
                "64",
                "128",
                "--repeats",
                "2",
                "--warmup",
                "1",
                "--device",
                DEVICE,
                "--figure",
                str(fig),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    r = json.loads(out.read_text())
    assert [row["n"] for row in r["rows"]] == [64, 128]
    assert set(r["rows"][0]["ms"]) == {"sdpa", "explicit", "blocked"}
    assert r["rows"][1]["matrix_bytes"] == 8 * 128 * 128 * 4
    assert r["book"]["n"][0] == 512 and fig.stat().st_size > 1000
    short = bench_attention((64, 4096), repeats=1, warmup=0, budget_s=1e-9, device=DEVICE)
    assert [row["n"] for row in short["rows"]] == [64] and "4096" in short["stopped"]


def test_bench_attention_writes_no_figure_unless_asked(tmp_path, monkeypatch):
    """Issue 26: run anywhere (e.g. in the repo), it leaves no untracked figure behind."""
    monkeypatch.chdir(tmp_path)
    args = ["bench", "attention", "--n", "64", "--repeats", "1", "--warmup", "0", "--device", DEVICE]
    assert main(args) == 0
    assert list(tmp_path.rglob("*")) == []
    assert main([*args, "--out", "t.png"]) == 0
    assert (tmp_path / "t.png").stat().st_size > 1000
