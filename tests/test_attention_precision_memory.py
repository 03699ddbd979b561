"""Precision limits and demos, memory formulas, and their CLI entry points."""

from __future__ import annotations

import json

import pytest

from attnlab.attention import memory as M
from attnlab.attention import precision as P
from attnlab.cli import main


def test_limits_come_from_finfo():
    rows = {r["dtype"]: r for r in P.format_limits()}
    assert rows["float16"]["max"] == 65504.0
    assert rows["bfloat16"]["eps"] == 2.0**-7 and rows["float16"]["eps"] == 2.0**-10
    assert rows["float32"]["exp_limit"] > 88.7 > rows["float16"]["exp_limit"] * 8 - 1


def test_fp16_overflow_table_matches_section_1_17_2():
    rows = P.fp16_overflow_table()
    assert [r["d_head"] for r in rows] == [32, 64, 128, 256]
    assert [round(r["common_max"], 1) for r in rows] == [22.6, 32.0, 45.3, 64.0]
    assert all(r["overflows_float16"] and r["exp_in_float16"] == float("inf") for r in rows)
    assert not any(r["overflows_bfloat16"] or r["overflows_float32"] for r in rows)


def test_bf16_rounding_and_low_precision_sum():
    r = P.bf16_rounding_demo()
    assert round(r["float16"], 6) == 1.000977 and r["bfloat16"] == 1.0
    sums = {d: P.low_precision_sum_demo(dtype=d)["row_sum"] for d in ("float32", "float16", "bfloat16")}
    assert sums["float32"] == pytest.approx(1.0, abs=1e-6)
    assert sums["bfloat16"] < sums["float16"] < 0.9  # the row sum stalls in low precision


def test_additive_mask_demo_shows_where_it_breaks():
    rows = P.additive_mask_demo()
    verdict = {(r["logit_scale"], r["dtype"], r["variant"]): r["verdict"] for r in rows}
    # masked_fill(-inf) is right everywhere
    assert all(v == "ok" for (s, d, var), v in verdict.items() if var == "masked_fill(-inf)")
    # -1e9 rounded to float16 is -inf, and -inf * 0 on the visible keys is NaN
    assert verdict[(1.0, "float16", "add -1e9 (tensor in dtype)")] == "NaN"
    assert verdict[(1.0, "bfloat16", "add -1e9 (tensor in dtype)")] == "ok"
    # -1e4 is not "big" once logits reach the 1.6e4 the chapter measured
    assert verdict[(1.0, "float32", "add -1e4")] == "ok"
    assert all(verdict[(16656.0, d, "add -1e4")] == "leak" for d in ("float32", "float16", "bfloat16"))
    full = {(r["dtype"], r["variant"]): r for r in P.fully_masked_row_demo()}
    assert full[("float32", "masked_fill(-inf)")]["nan"]
    assert full[("bfloat16", "add -1e9 (python float)")]["weights"] == [0.25] * 4  # silent, not loud


def test_memory_bad_input_names_the_argument():
    for kwargs, word in (
        (dict(n_layer=0, n_kv_head=1, d_head=1, seq_len=1), "n_layer"),
        (dict(n_layer=1, n_kv_head=1, d_head=1, seq_len=-3), "seq_len"),
        (dict(n_layer=1, n_kv_head=1, d_head=1.5, seq_len=1), "d_head"),
    ):
        with pytest.raises(ValueError, match=word):
            M.kv_cache_bytes(**kwargs)
    with pytest.raises(ValueError, match="n_head"):
        M.attention_matrix_bytes(4, 0, 1)
    assert M.kv_cache_bytes(2, 3, 4, 5, bytes_per=4, batch=6) == 2 * 2 * 3 * 4 * 5 * 4 * 6


def test_book_examples_round_to_the_printed_values():
    for r in M.book_examples():
        places = len(str(r["book"]).split(".")[1]) if "." in str(r["book"]) else 0
        assert round(r["value"], places) == r["book"], r["label"]


def test_cli_precision_prints_chinese_and_english(capsys):
    assert main(["precision"]) == 0
    out = capsys.readouterr().out
    assert "三种格式" in out and "Range of the three formats" in out
    assert out.index("三种格式") < out.index("Range of the three formats")  # Chinese first
    assert main(["precision", "--section", "limits", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["limits"][1]["max"] == 65504.0


def test_cli_memory(capsys):
    assert main(["memory", "kv-cache", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["per_token"]["bytes"] == 2621440 and round(data["total"]["GB"], 1) == 10.7
    assert main(["memory", "attention", "--n", "2048", "--n-head", "16", "--n-layer", "24"]) == 0
    out = capsys.readouterr().out
    assert "3.221 GB" in out and "3 GiB" in out
    assert main(["memory", "book"]) == 0 and "10.74 GB" in capsys.readouterr().out
    assert main(["memory", "kv-cache", "--seq-len", "0"]) == 2
    err = capsys.readouterr().err
    assert "seq_len" in err and err.startswith("attnlab: error:") and len(err.splitlines()) == 1


def test_registered_in_the_main_cli(capsys):
    cli = pytest.importorskip("attnlab.cli")
    assert cli.main(["memory", "kv-cache", "--n-kv-head", "1", "--seq-len", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["bytes"] == 40960
    assert cli.main(["precision", "--section", "bf16"]) == 0
    assert "bfloat16" in capsys.readouterr().out
