"""``attnlab generate``: sample text from a checkpoint."""

from __future__ import annotations

from . import common

# logits / temperature must stay finite in float32: below this, sampling is greedy anyway (--top-k 1)
MIN_TEMPERATURE = 1e-3


def add_parser(sub):
    p = sub.add_parser("generate", help="sample text from a checkpoint / 生成")
    p.add_argument("checkpoint")
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
    from ..checkpoint import load_checkpoint
    from ..model import generate

    model, tok, _ = load_checkpoint(args.checkpoint)
    print(generate(model, tok, args.prompt, args.max_new_tokens, args.temperature, args.top_k, args.seed))
    return 0
