"""``attnlab info``: the parameter table of a config (nothing is allocated)."""

from __future__ import annotations

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "info",
        help="一个配置的参数账（不分配内存）/ parameter table of a config (nothing allocated)",
        description="列出一个配置各部件的参数量与占比；模型只在 meta 设备上计数，不分配内存。"
        "\nThe parameter count and share of every part of a config; the model is counted on the meta "
        "device, nothing is allocated.",
    )
    common.add_set(p)
    return p


def main(args) -> int:
    from ..config import SCALINGS, Config
    from ..model import parameter_table
    from ..tools import format_table

    cfg = Config.from_overrides(args.overrides)
    table = parameter_table(cfg)
    total = table["total"]
    print(
        f"d_model={cfg.d_model} n_head={cfg.n_head} d_head={cfg.d_head} n_layer={cfg.n_layer} "
        f"d_ff={cfg.d_ff} vocab={cfg.vocab_size} block={cfg.block_size} scale={SCALINGS[cfg.scaled]}"
    )
    rows = [[name, f"{n:,}", f"{n / total:.1%}"] for name, n in table.items()]
    print(format_table(["部件 / part", "参数量 / params", "占比 / share"], rows))  # CJK counted double width
    return 0
