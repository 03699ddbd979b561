"""``attnlab bench train|attention``: speed of training steps and of attention."""

from __future__ import annotations

from . import common


def add_parser(sub):
    from ..experiments.bench import CONFIGS

    p = sub.add_parser("bench", help="speed: training steps and attention / 速度测量")
    bench = p.add_subparsers(dest="bench_cmd", required=True, parser_class=type(p))

    t = bench.add_parser("train", help="ms/step, tokens/s and GFLOP/s of training steps")
    t.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    t.add_argument(
        "--records",
        nargs="+",
        type=common.nonneg_int,
        default=[1, 0],
        metavar="N",
        help="record_every values (default 1 0)",
    )
    t.add_argument("--repeats", type=common.positive_int, default=5, help="interleaved rounds (median reported)")
    t.add_argument("--warmup", type=common.nonneg_int, default=2, help="untimed steps per variant first")
    t.add_argument("--no-reference", action="store_true")
    t.add_argument("--no-snapshots", action="store_true", help="do not time attention snapshots")
    common.add_set(t, help="override a Config field of every timed model, e.g. --set batch_size=8")
    t.add_argument("--matmul-sizes", nargs="+", type=common.int_range(1, 16384, "a matrix size"), default=[1024, 2048])
    common.add_device(t)
    t.add_argument(
        "--threads",
        type=common.int_range(1, 1024, "a thread count"),
        default=None,
        help="torch CPU threads (default: torch's choice; 1 on a busy shared machine)",
    )
    t.add_argument("--json", default=None, metavar="PATH", help="also write the result as JSON")

    a = bench.add_parser("attention", help="SDPA vs explicit vs blocked attention over n (§1.14.2)")
    a.add_argument(
        "--n", nargs="+", type=common.int_range(1, 1 << 20, "a sequence length"), default=[512, 1024, 2048, 4096, 8192]
    )
    a.add_argument("--heads", type=common.int_range(1, 1024, "a head count"), default=8)
    a.add_argument("--d-head", type=common.int_range(1, 65536, "a head size"), default=64)
    a.add_argument("--repeats", type=common.positive_int, default=10)
    a.add_argument("--warmup", type=common.nonneg_int, default=3)
    a.add_argument(
        "--budget",
        type=common.float_range(0.0, open_lo=True),
        default=60.0,
        help="seconds for the whole sweep (default 60)",
    )
    a.add_argument("--block-size", type=common.positive_int, default=256, help="key block of blocked_attention")
    a.add_argument(
        "--methods", nargs="+", choices=["sdpa", "explicit", "blocked"], default=["sdpa", "explicit", "blocked"]
    )
    common.add_device(a)
    a.add_argument(
        "--threads", type=common.int_range(1, 1024, "a thread count"), default=None, help="torch CPU threads"
    )
    a.add_argument(
        "--out",
        "--figure",
        dest="figure",
        default=None,
        metavar="PNG",
        help="write the timing figure here (default: none; nothing is written unless asked)",
    )
    a.add_argument("--json", default=None, metavar="PATH")

    e = bench.add_parser(
        "executors", help="the case's runs serially and with local workers: time ratio and equal results"
    )
    e.add_argument("--steps", type=common.positive_steps, default=100, help="steps per run (default 100)")
    e.add_argument("--workers", type=common.positive_int, default=None, help="local workers (default: cores)")
    e.add_argument("--seeds", type=common.positive_int, default=3, help="seeds of the case (default 3)")
    e.add_argument("--device", default="cpu")
    e.add_argument(
        "--threads",
        type=common.int_range(1, 1024, "a thread count"),
        default=None,
        help="torch CPU threads of the serial run",
    )
    e.add_argument("--json", default=None, metavar="PATH")
    return p


def _log(msg: str) -> None:
    print(f"attnlab: {msg}", flush=True)


def _outputs(*paths) -> None:
    """Output folders are checked before any timing starts."""
    from ..io import check_output_file

    for path in paths:
        if path:
            check_output_file(path)  # a directory in the way is refused too


def _inputs_fit(args) -> None:
    """q, k, v and the output at the largest n must fit in half this machine's memory."""
    import os

    from ..errors import UsageError

    need = 4 * 4 * args.heads * max(args.n) * args.d_head
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if need > have / 2:
        raise UsageError(
            f"--heads {args.heads} x --d-head {args.d_head} x n {max(args.n)} needs "
            f"{need / 1e9:,.1f} GB for q, k, v and the output, more than half of this "
            f"machine's {have / 1e9:,.0f} GB; lower them"
        )


def _threads(args) -> None:
    # On a CPU shared with other jobs, OpenMP workers that wait on each other
    # can make 2 threads 10-20x slower than 1; the JSON records the count used.
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)


def main(args) -> int:
    from ..experiments import bench as B
    from ..io import write_json

    common.check_device(args.device)
    _threads(args)
    if args.bench_cmd == "executors":
        _outputs(args.json)
        result = B.bench_executors(args.steps, args.workers, args.seeds, log=_log)
        print(B.format_executors(result))
        if args.json:
            print(f"wrote {write_json(args.json, result)}")
        return 0
    if args.bench_cmd == "train":
        _outputs(args.json)
        from ..config import Config

        Config.from_overrides(args.overrides)  # a bad --set fails before any timing
        result = B.bench_train(
            tuple(args.configs),
            tuple(args.records),
            args.repeats,
            args.warmup,
            args.device,
            tuple(args.matmul_sizes),
            reference=not args.no_reference,
            overrides=tuple(args.overrides),
            log=_log,
            snapshots=not args.no_snapshots,
        )
        print(B.format_train(result))
    else:
        _outputs(args.figure, args.json)
        _inputs_fit(args)
        result = B.bench_attention(
            tuple(args.n),
            args.heads,
            args.d_head,
            repeats=args.repeats,
            warmup=args.warmup,
            budget_s=args.budget,
            block_size=args.block_size,
            device=args.device,
            methods=tuple(args.methods),
            log=_log,
        )
        print(B.format_attention(result))
        if args.figure:
            print(f"wrote {B.plot_attention(result, args.figure)}")
    if args.json:
        print(f"wrote {write_json(args.json, result)}")
    return 0
