"""``attnlab bench train|attention``: speed of training steps and of attention."""

from __future__ import annotations

from ..config import BOOK_MODELS
from . import common

THREADS = common.int_range(1, 1024, "a thread count")


def add_parser(sub):
    p = sub.add_parser(
        "bench",
        help="速度测量：训练步与注意力 / speed: training steps and attention",
        description="测速度：train 量训练步，attention 比较三种注意力实现随序列长度 n 的耗时，"
        "executors 比较串行与本机多进程跑案例。"
        "\nMeasure speed: train times training steps, attention compares three attention implementations "
        "over the sequence length n, executors runs the case serially and with local workers.",
    )
    bench = p.add_subparsers(dest="bench_cmd", required=True, parser_class=type(p), help="要测的 / what to time")

    t = bench.add_parser(
        "train",
        help="训练步的 ms/步、tokens/s 与 GFLOP/s / ms/step, tokens/s and GFLOP/s of training steps",
        description="训练步的耗时（ms/步）、吞吐（tokens/s）与 GFLOP/s，各变体交替计时、取中位数。"
        "\nms/step, tokens/s and GFLOP/s of training steps; the variants are timed in interleaved rounds "
        "and the median is reported.",
    )
    t.add_argument(
        "--configs",
        nargs="+",
        choices=list(BOOK_MODELS),
        default=list(BOOK_MODELS),
        help="要计时的预设模型 / the preset models to time",
    )
    t.add_argument(
        "--records",
        nargs="+",
        type=common.nonneg_int,
        default=[1, 0],
        metavar="N",
        help="要比较的 record_every 取值（0 = 不记录）/ record_every values to compare (0 = no records)",
    )
    t.add_argument(
        "--repeats",
        type=common.positive_int,
        default=5,
        metavar="N",
        help="交替计时的轮数（报告中位数）/ interleaved rounds (the median is reported)",
    )
    t.add_argument(
        "--warmup",
        type=common.nonneg_int,
        default=2,
        metavar="N",
        help="每个变体先跑的不计时步数 / untimed steps per variant first",
    )
    t.add_argument(
        "--no-reference",
        action="store_true",
        help="不计时参照实现 ReferenceGPT / do not time the reference implementation (ReferenceGPT)",
    )
    t.add_argument(
        "--no-snapshots",
        action="store_true",
        help="不计时注意力快照 / do not time attention snapshots",
    )
    common.add_set(
        t,
        help="改每个被计时模型的配置字段，可重复 / override a Config field of every timed model (repeatable), "
        "e.g. --set batch_size=8",
    )
    t.add_argument(
        "--matmul-sizes",
        nargs="+",
        type=common.int_range(1, 16384, "a matrix size"),
        default=[1024, 2048],
        metavar="N",
        help="量本机矩阵乘峰值用的方阵边长 / square matrix sizes that measure this machine's matmul speed",
    )
    common.add_device(t)
    t.add_argument(
        "--threads",
        type=THREADS,
        default=None,
        metavar="N",
        help="torch 的 CPU 线程数（默认：torch 自定；繁忙的共享机器上用 1）"
        " / torch CPU threads (default: torch's choice; 1 on a busy shared machine)",
    )
    t.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        help="同时把结果写成 JSON（默认：不写）/ also write the result as JSON (default: none)",
    )

    a = bench.add_parser(
        "attention",
        help="SDPA、显式与分块注意力随 n 的耗时（§1.14.2）/ SDPA vs explicit vs blocked attention over n (§1.14.2)",
        description="在不同序列长度 n 上比较 PyTorch 的 SDPA、显式 softmax(QKᵀ/√d)V 与分块注意力的耗时（§1.14.2）。"
        "\nTime PyTorch's SDPA, explicit softmax(QKᵀ/√d)V and blocked attention over the sequence length n "
        "(§1.14.2).",
    )
    a.add_argument(
        "--n",
        nargs="+",
        type=common.int_range(1, 1 << 20, "a sequence length"),
        default=[512, 1024, 2048, 4096, 8192],
        metavar="N",
        help="序列长度 / sequence lengths",
    )
    a.add_argument(
        "--heads", type=common.int_range(1, 1024, "a head count"), default=8, metavar="N", help="头数 / heads"
    )
    a.add_argument(
        "--d-head",
        type=common.int_range(1, 65536, "a head size"),
        default=64,
        metavar="N",
        help="头维度 d_head / head size d_head",
    )
    a.add_argument("--repeats", type=common.positive_int, default=10, metavar="N", help="计时次数 / timed repeats")
    a.add_argument(
        "--warmup", type=common.nonneg_int, default=3, metavar="N", help="先跑的不计时次数 / untimed runs first"
    )
    a.add_argument(
        "--budget",
        type=common.float_range(0.0, open_lo=True),
        default=60.0,
        metavar="SECONDS",
        help="整次扫描的秒数上限 / seconds for the whole sweep",
    )
    a.add_argument(
        "--block-size",
        type=common.positive_int,
        default=256,
        metavar="N",
        help="blocked_attention 每块的键数 / key block of blocked_attention",
    )
    a.add_argument(
        "--methods",
        nargs="+",
        choices=["sdpa", "explicit", "blocked"],
        default=["sdpa", "explicit", "blocked"],
        help="要计时的实现 / the implementations to time",
    )
    common.add_device(a)
    a.add_argument(
        "--threads",
        type=THREADS,
        default=None,
        metavar="N",
        help="torch 的 CPU 线程数（默认：torch 自定）/ torch CPU threads (default: torch's choice)",
    )
    a.add_argument(
        "--out",
        "--figure",
        dest="figure",
        default=None,
        metavar="PNG",
        help="把计时图写到这里（默认：不写；不要求就什么都不写）"
        " / write the timing figure here (default: none; nothing is written unless asked)",
    )
    a.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        help="同时把结果写成 JSON（默认：不写）/ also write the result as JSON (default: none)",
    )

    e = bench.add_parser(
        "executors",
        help="案例的运行串行与本机多进程各跑一遍：时间比与结果相同 / the case's runs serially and with local "
        "workers: time ratio and equal results",
        description="把案例的运行串行跑一遍、用本机工作进程再跑一遍，报告时间比并核对两次结果相同。"
        "\nRun the case's runs serially and again with local workers; report the time ratio and check that "
        "the results are equal.",
    )
    e.add_argument(
        "--steps", type=common.positive_steps, default=100, metavar="N", help="每次运行的步数 / steps per run"
    )
    e.add_argument(
        "--workers",
        type=common.positive_int,
        default=None,
        metavar="N",
        help="本机工作进程数（默认：核数）/ local workers (default: cores)",
    )
    e.add_argument("--seeds", type=common.positive_int, default=3, metavar="N", help="案例的种子数 / seeds of the case")
    common.add_device(e, default="cpu")
    e.add_argument(
        "--threads",
        type=THREADS,
        default=None,
        metavar="N",
        help="串行那一遍的 torch CPU 线程数（默认：torch 自定）/ torch CPU threads of the serial run "
        "(default: torch's choice)",
    )
    e.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        help="同时把结果写成 JSON（默认：不写）/ also write the result as JSON (default: none)",
    )
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
    """q, k, v and the output at the largest n must fit in half the memory available
    (attnlab.limits.available_bytes, the one notion every memory guard uses)."""
    from ..errors import UsageError
    from ..limits import available_bytes, gb

    need = 4 * 4 * args.heads * max(args.n) * args.d_head
    have = available_bytes("cpu")
    if have is None:
        return
    if need > have / 2:
        raise UsageError(
            f"--heads {args.heads} x --d-head {args.d_head} x n {max(args.n)} needs "
            f"{need / 1e9:,.1f} GB for q, k, v and the output, more than half of this "
            f"machine's {gb(have)} available; lower them"
        )


def _threads(args) -> None:
    # On a CPU shared with other jobs, OpenMP workers that wait on each other
    # can make 2 threads 10-20x slower than 1; the JSON records the count used.
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)


def main(args) -> int:
    from ..io import write_json
    from ..lab import bench as B

    common.check_device(args.device)
    _threads(args)
    if args.bench_cmd == "executors":
        _outputs(args.json)
        from ..lab.case.run import BOOK_SEED, CaseSettings, case_runs

        groups, _ = case_runs(CaseSettings(steps=args.steps, seeds=tuple(BOOK_SEED + i for i in range(args.seeds))))
        result = B.bench_executors([r for g in groups for r in g], args.workers, log=_log)
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
