"""``attnlab memory kv-cache|attention|book``: memory formulas of §1.8.7 and §1.13.5.

Thin entry point over ``attnlab.attention.memory``. Sizes are printed in the
book's decimal units (MB = 10^6 B, GB = 10^9 B) with binary MiB/GiB alongside.
"""

from __future__ import annotations

import json
import sys

from attnlab.attention.memory import LLAMA2_70B  # light: the formulas, no torch
from attnlab.errors import UsageError


def add_parser(subparsers):
    p = subparsers.add_parser(
        "memory",
        help="KV 缓存与注意力矩阵的显存 / KV-cache and attention-matrix memory (§1.8.7, §1.13.5)",
        description="按书中的公式算显存：KV 缓存（式 1.20）、n × n 注意力矩阵（式 1.45），或重算书中全部显存数字；"
        "MB = 10⁶ B、GB = 10⁹ B，旁注 MiB/GiB。"
        "\nMemory by the chapter's formulas: the KV cache (eq. 1.20), the n x n attention matrices (eq. 1.45), "
        "or every memory figure of the chapter again; MB = 10^6 B, GB = 10^9 B, with MiB/GiB alongside.",
    )
    sub = p.add_subparsers(dest="memory_cmd", required=True, parser_class=type(p), help="要算的 / what to compute")

    kv = sub.add_parser(
        "kv-cache",
        help="KV 缓存 (式 1.20) / KV cache (eq. 1.20); defaults: Llama-2 70B",
        description="KV 缓存 = 2 × 层数 × KV 头数 × 每头维度 × 序列长度 × 字节数 × 批大小（式 1.20）；默认值为 Llama-2 70B。"
        "\nKV cache = 2 x n_layer x n_kv_head x d_head x seq_len x bytes_per x batch (eq. 1.20); the defaults "
        "are Llama-2 70B's.",
    )
    kv.add_argument("--n-layer", type=int, default=LLAMA2_70B["n_layer"], metavar="N", help="层数 / layers")
    kv.add_argument(
        "--n-kv-head",
        type=int,
        default=LLAMA2_70B["n_head"],
        metavar="N",
        help="KV 头数：MHA=n_head，GQA=组数，MQA=1 / key-value heads: MHA n_head, GQA groups, MQA 1",
    )
    kv.add_argument("--d-head", type=int, default=LLAMA2_70B["d_head"], metavar="N", help="每头维度 / head size")
    kv.add_argument("--seq-len", type=int, default=4096, metavar="N", help="序列长度 / tokens")
    kv.add_argument(
        "--bytes-per", type=int, default=2, metavar="N", help="每个数的字节数（fp16=2）/ bytes per number (fp16 2)"
    )
    kv.add_argument("--batch", type=int, default=1, metavar="N", help="批大小 / batch size")

    at = sub.add_parser(
        "attention",
        help="注意力矩阵 (式 1.45) / n x n score matrices (eq. 1.45)",
        description="注意力矩阵显存 ≈ n² × 头数 × 层数 × 字节数（式 1.45）。"
        "\nThe memory of the attention matrices ≈ n^2 x n_head x n_layer x bytes_per (eq. 1.45).",
    )
    at.add_argument("--n", type=int, default=4096, metavar="N", help="序列长度 / sequence length")
    at.add_argument("--n-head", type=int, default=32, metavar="N", help="头数 / heads")
    at.add_argument("--n-layer", type=int, default=32, metavar="N", help="层数 / layers")
    at.add_argument("--bytes-per", type=int, default=2, metavar="N", help="每个数的字节数 / bytes per number")

    sub.add_parser(
        "book",
        help="重算书中所有显存数字 / recompute every memory figure in the chapter",
        description="重算书中所有显存数字，并与书中的值并列。\nRecompute every memory figure of the chapter, beside the book's value.",
    )

    for q in (kv, at, p):
        q.add_argument("--json", action="store_true", help="输出 JSON / print JSON")
    return p


def _sizes(nbytes: int) -> dict:
    from attnlab.attention import memory as M

    return {"bytes": nbytes, "MB": M.mb(nbytes), "GB": M.gb(nbytes), "MiB": M.mib(nbytes), "GiB": M.gib(nbytes)}


def collect(args) -> dict:
    from attnlab.attention import memory as M

    if args.memory_cmd == "kv-cache":
        total = M.kv_cache_bytes(args.n_layer, args.n_kv_head, args.d_head, args.seq_len, args.bytes_per, args.batch)
        per_token = M.kv_cache_bytes(args.n_layer, args.n_kv_head, args.d_head, 1, args.bytes_per, args.batch)
        inputs = {k: getattr(args, k) for k in ("n_layer", "n_kv_head", "d_head", "seq_len", "bytes_per", "batch")}
        return {"kind": "kv-cache", "inputs": inputs, "per_token": _sizes(per_token), "total": _sizes(total)}
    if args.memory_cmd == "attention":
        total = M.attention_matrix_bytes(args.n, args.n_head, args.n_layer, args.bytes_per)
        inputs = {k: getattr(args, k) for k in ("n", "n_head", "n_layer", "bytes_per")}
        return {"kind": "attention", "inputs": inputs, "total": _sizes(total)}
    return {"kind": "book", "rows": M.book_examples()}


def _fmt(s: dict) -> str:
    return f"{s['bytes']:,} B = {s['MB']:.4g} MB = {s['GB']:.4g} GB  ({s['MiB']:.4g} MiB = {s['GiB']:.4g} GiB)"


MAX_VALUE = 10**15  # a sane maximum for every count (10**200 overflowed the conversion to MB)


def main(args) -> int:
    for name in ("n_layer", "n_kv_head", "d_head", "seq_len", "bytes_per", "batch", "n", "n_head"):
        value = getattr(args, name, None)
        if value is not None and value > MAX_VALUE:
            shown = f"{value:.3g}" if value < 10**300 else f"10**{len(str(value)) - 1}"
            raise UsageError(f"--{name.replace('_', '-')} {shown} is more than the sane maximum of 10**15")
    try:
        data = collect(args)
    except ValueError as e:  # the formulas check their own inputs
        raise UsageError(str(e)) from None
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
        return 0
    if data["kind"] == "kv-cache":
        i = data["inputs"]
        print("KV 缓存 = 2 × 层数 × KV 头数 × 每头维度 × 序列长度 × 字节数 × 批大小")
        print("KV cache = 2 x n_layer x n_kv_head x d_head x seq_len x bytes_per x batch")
        print(
            f"  2 × {i['n_layer']} × {i['n_kv_head']} × {i['d_head']} × {i['seq_len']} × {i['bytes_per']} × {i['batch']}"
        )
        print(f"  每个 token / per token: {_fmt(data['per_token'])}")
        print(f"  合计 / total:           {_fmt(data['total'])}")
    elif data["kind"] == "attention":
        i = data["inputs"]
        print("注意力矩阵显存 ≈ n² × 头数 × 层数 × 字节数 / attention matrices ≈ n^2 x n_head x n_layer x bytes_per")
        print(f"  {i['n']}² × {i['n_head']} × {i['n_layer']} × {i['bytes_per']}")
        print(f"  合计 / total: {_fmt(data['total'])}")
    else:
        print("书中的显存数字（MB/GB 为十进制）/ The chapter's memory figures (decimal MB/GB)")
        for r in data["rows"]:
            print(
                f"  {r['label']:<44} {r['value']:>9.4g} {r['unit']}  (书 book: {r['book']} {r['unit']}, {r['where']})"
            )
    return 0
