"""``attnlab precision``: float formats and the attention failures they cause (§1.17, ⑯).

The numbers come from ``attnlab.attention.precision``; this module only picks
the sections and lays them out, Chinese first with English alongside.
"""

from __future__ import annotations

import json
import sys

SECTIONS = ("limits", "overflow", "bf16", "mask", "all")


def add_parser(subparsers):
    p = subparsers.add_parser(
        "precision",
        help="数值格式的范围与注意力的溢出 / float formats and attention overflow (§1.17)",
        description="float32/float16/bfloat16 的上限、exp 溢出门槛、机器精度，以及加性掩码的失效。"
        "\nLimits, exp overflow threshold and epsilon of float32/float16/bfloat16, and where additive masks fail.",
    )
    p.add_argument(
        "--section",
        choices=SECTIONS,
        default="all",
        help="只看某一部分：limits 范围，overflow 溢出，bf16 精度，mask 加性掩码"
        " / show one part only: limits, overflow, bf16 precision, additive mask",
    )
    p.add_argument("--json", action="store_true", help="输出 JSON 而不是表格 / print JSON instead of tables")
    return p


def collect(section: str = "all") -> dict:
    """The data behind the command, keyed by section."""
    from attnlab.attention import precision as P

    out = {}
    if section in ("limits", "all"):
        out["limits"] = P.format_limits()
    if section in ("overflow", "all"):
        out["fp16_overflow"] = P.fp16_overflow_table()
        out["exp_overflow_float32"] = {
            str(std): dict(zip(("inf", "of"), P.exp_overflow_count(std))) for std in (1.6, 5477.0)
        }
    if section in ("bf16", "all"):
        out["bf16_rounding"] = P.bf16_rounding_demo()
        out["low_precision_sum"] = [P.low_precision_sum_demo(dtype=d) for d in ("float32", "float16", "bfloat16")]
    if section in ("mask", "all"):
        out["additive_mask"] = P.additive_mask_demo()
        out["fully_masked_row"] = P.fully_masked_row_demo()
    return out


def _print_tables(data: dict, file) -> None:
    w = lambda *a: print(*a, file=file)  # noqa: E731
    if "limits" in data:
        w("三种格式的可用范围 / Range of the three formats (torch.finfo)")
        w(f"  {'格式 format':<12}{'最大值 max':>14}{'exp 门槛 ln(max)':>18}{'机器精度 eps':>16}")
        for r in data["limits"]:
            w(f"  {r['dtype']:<12}{r['max']:>14.4g}{r['exp_limit']:>18.1f}{r['eps']:>16.2g}")
        w()
    if "fp16_overflow" in data:
        w("不缩放时 4 倍标准差的 logits 在 fp16 下是否溢出 / Do 4-sigma unscaled logits overflow exp in fp16?")
        w(f"  {'d_head':>6}{'标准差 std':>12}{'常见最大值 4σ':>16}{'fp16':>10}{'bf16':>8}")
        for r in data["fp16_overflow"]:
            yn = lambda b: "溢出 inf" if b else "ok"  # noqa: E731
            w(
                f"  {r['d_head']:>6}{r['std']:>12.1f}{r['common_max']:>16.1f}{yn(r['overflows_float16']):>10}"
                f"{yn(r['overflows_bfloat16']):>8}"
            )
        for std, c in data["exp_overflow_float32"].items():
            w(f"  float32 exp，logits 标准差 {std} / std {std}: inf {c['inf']} / {c['of']}")
        w()
    if "bf16_rounding" in data:
        r = data["bf16_rounding"]
        w(f"bf16 的精度代价 / The precision bf16 gives up: {r['value']} 存进去再读出来 / stored and read back")
        for k in ("float32", "float16", "bfloat16"):
            w(f"  {k:<9} {r[k]:.6f}")
        for s in data["low_precision_sum"]:
            w(f"  逐个累加 {s['n']} 个权重 {s['weight']:.3g}（{s['dtype']}）行和 / row sum = {s['row_sum']:.4g}")
        w()
    if "additive_mask" in data:
        w("检查点 ⑯：加性掩码 vs masked_fill / Checkpoint 16: additive mask vs masked_fill")
        w("  被屏蔽的键本该得到 0 权重 / the masked key must get exactly 0 weight")
        w(
            f"  {'logit 尺度 scale':>16}  {'格式 dtype':<10}{'写法 variant':<28}{'屏蔽位权重 masked w':>20}  结论 verdict"
        )
        for r in data["additive_mask"]:
            mw = "nan" if r["nan"] else f"{r['masked_weight']:.3g}"
            w(f"  {r['logit_scale']:>16g}  {r['dtype']:<10}{r['variant']:<28}{mw:>20}  {r['verdict']}")
        w("  整行都被屏蔽时 / when every key of a row is masked:")
        for r in data["fully_masked_row"]:
            w(
                f"  {r['dtype']:<10}{r['variant']:<28}{'nan' if r['nan'] else 'uniform ' + str(round(r['weights'][0], 3))}"
            )


def main(args) -> int:
    data = collect(args.section)
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        _print_tables(data, sys.stdout)
    return 0
