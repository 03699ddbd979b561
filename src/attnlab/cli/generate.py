"""``attnlab generate``: sample text from a checkpoint."""

from __future__ import annotations

from pathlib import Path

from . import common

# logits / temperature must stay finite in float32: below this, sampling is greedy anyway (--top-k 1)
MIN_TEMPERATURE = 1e-3


def add_parser(sub):
    p = sub.add_parser("generate", help="sample text from a checkpoint / 生成")
    p.add_argument("checkpoint", help="a checkpoint (ckpt.pt) or a run folder that holds one, e.g. runs/mine")
    p.add_argument("--prompt", default="秦川雄帝宅")
    p.add_argument("--max-new-tokens", type=common.int_range(0, 100_000, "a token count"), default=60)
    p.add_argument(
        "--temperature",
        type=common.float_range(MIN_TEMPERATURE, 100.0),
        default=1.0,
        help=f">= {MIN_TEMPERATURE}; lower is greedier, --top-k 1 is greedy (default 1.0)",
    )
    p.add_argument(
        "--top-k", type=common.positive_int, default=None, help="sample from the k most likely characters only (k >= 1)"
    )
    p.add_argument("--seed", type=common.seed_int, default=0)
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
