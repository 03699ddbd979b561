"""``attnlab generate``: sample text from a checkpoint."""

from __future__ import annotations

from pathlib import Path

from . import common

# logits / temperature must stay finite in float32: below this, sampling is greedy anyway (--top-k 1)
MIN_TEMPERATURE = 1e-3


def add_parser(sub):
    p = sub.add_parser(
        "generate",
        help="用检查点续写诗句 / sample text from a checkpoint",
        description="从检查点（或运行文件夹）按提示续写；简体字先转成繁体，词表外的字会被指出。"
        "\nSample text from a checkpoint (or a run folder) after a prompt; simplified characters are "
        "converted to traditional first, and characters outside the vocabulary are named.",
    )
    p.add_argument(
        "checkpoint",
        help="检查点 ckpt.pt 或含有它的运行文件夹，如 runs/mine"
        " / a checkpoint (ckpt.pt) or a run folder that holds one, e.g. runs/mine",
    )
    p.add_argument("--prompt", type=common.text_arg, default="秦川雄帝宅", help="开头的提示 / the prompt to continue")
    p.add_argument(
        "--max-new-tokens",
        type=common.int_range(0, 100_000, "a token count"),
        default=60,
        metavar="N",
        help="最多续写的字数 / characters to generate at most",
    )
    p.add_argument(
        "--temperature",
        type=common.float_range(MIN_TEMPERATURE, 100.0),
        default=1.0,
        metavar="T",
        help=f"采样温度，>= {MIN_TEMPERATURE}；越低越贪心，--top-k 1 即贪心"
        f" / sampling temperature, >= {MIN_TEMPERATURE}; lower is greedier, --top-k 1 is greedy",
    )
    p.add_argument(
        "--top-k",
        type=common.positive_int,
        default=None,
        metavar="K",
        help="只从最可能的 K 个字里采样（默认：全部词表）/ sample from the K most likely characters only "
        "(default: the whole vocabulary)",
    )
    p.add_argument("--seed", type=common.seed_int, default=0, help="采样种子 / sampling seed")
    return p


def main(args) -> int:
    import sys
    import warnings

    from ..checkpoint import load_checkpoint
    from ..chinese import converted_line, prepare, unknown_line
    from ..model import generate

    path = Path(args.checkpoint)
    model, tok, _ = load_checkpoint(path / "ckpt.pt" if path.is_dir() else path)  # a run folder, as `heads` takes
    prompt = prepare(args.prompt, tok.stoi)  # simplified -> traditional, <unk> named in one line
    with warnings.catch_warnings():  # the <unk> line below says it
        warnings.simplefilter("ignore", UserWarning)
        text = generate(model, tok, prompt.converted, args.max_new_tokens, args.temperature, args.top_k, args.seed)
    for line in (converted_line(prompt), unknown_line(prompt)):  # after sampling: an error stays one line
        if line:
            print(line, file=sys.stderr)
    print(text)
    return 0
