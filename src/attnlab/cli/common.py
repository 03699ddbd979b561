"""What every command shares: the parser class, the help layout, the shared options and argument types.

Each shared option (``--set``, ``--corpus``, ``--device``, ``--out``,
``--executor``/``--workers``/``--ray-address``, ``--slurm-*``, ``--no-progress``) is
defined here once; a command adds the ones it takes. The executor's options become
one object here (:func:`executor_options`, an ``attnlab.runner.ExecutorOptions``)
that the command passes down whole. Argument types refuse bad values at the door with a
message naming the argument, so a command's ``main`` only sees checked values.

Help is Chinese first, English alongside; every option's default is shown by
:class:`HelpFormatter`, so a help text never repeats it. This module and every
command module import nothing heavy (no torch, numpy, matplotlib): ``--help``
builds every parser and must stay instant. Heavy imports go inside ``main``.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import unicodedata

from ..config import MAX_STEPS
from ..errors import UsageError

# = attnlab.runner.EXECUTORS (runner imports torch; tests/test_cli_help.py keeps the two equal)
EXECUTORS = ("serial", "local", "ray", "slurm")


# ------------------------------------------------------------------ help layout
def show_default(value) -> str:
    """A default as a reader would type it: ``1 0`` for a list, ``0.001`` for a float."""
    if isinstance(value, (list, tuple)):
        return " ".join(show_default(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if value == "":
        return '""'
    return str(value)


_FLAGS = (
    argparse._StoreConstAction,  # store_true / store_false too
    argparse._AppendConstAction,
    argparse._CountAction,
    argparse._HelpAction,
    argparse._VersionAction,
)


def has_default(action: argparse.Action) -> bool:
    """Whether the help shows a default: a value the option takes when not given (a flag's
    False, a None and an empty list are not shown; their help says what happens)."""
    if isinstance(action, _FLAGS) or isinstance(action, argparse._SubParsersAction):
        return False
    d = action.default
    return d is not None and d is not argparse.SUPPRESS and d != [] and d != ()


def _width(text: str) -> int:
    """Columns on a terminal: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else c != _JOIN for c in text)


_WIDE = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"
# a run of spaces, one wide character, or a run of other characters
_TOKEN = re.compile(rf"\s+|[{_WIDE}]|[^\s{_WIDE}]+")
_JOIN = "\u2060"  # word joiner: no line break here (inside a default value), removed on output
_OPENING = "(（[「『“‘《"
_CLOSING = ")）]」』”’》，。；：、！？,.;:!?"


def _tokens(text: str) -> list[str]:
    """The pieces a line may break between: no break after an opening bracket or before a
    closing one or a punctuation mark."""
    out: list[str] = []
    for t in _TOKEN.findall(text):
        glued = out and (out[-1][-1] in _OPENING + _JOIN or t[0] in _CLOSING + _JOIN)
        if glued and not t.isspace() and not out[-1].isspace():
            out[-1] += t
        else:
            out.append(t)
    return out


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken at spaces and between Chinese
    characters (textwrap breaks only at spaces and counts a Chinese character as one column).
    A line break in ``text`` is kept."""
    lines: list[str] = []
    for para in text.split("\n"):
        line, used = "", 0
        for token in _tokens(" ".join(para.split())):
            w = _width(token)
            if line and used + w > width and not token.isspace():
                lines.append(line.rstrip())
                line, used = "", 0
            if not line and token.isspace():
                continue
            line, used = line + token, used + w
        lines.append(line.rstrip())
    return [line.replace(_JOIN, "") for line in lines]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's layout with the default appended to every option's help
    (``(默认 / default: 8000)``), lines measured in terminal columns, and a line
    break in a text kept (Chinese on one line, English on the next)."""

    def __init__(self, prog, indent_increment=2, max_help_position=30, width=None):
        super().__init__(prog, indent_increment, max_help_position, width)

    def _get_help_string(self, action):
        text = action.help or ""
        if has_default(action) and "%(default)" not in text:
            value = _JOIN.join(show_default(action.default)).replace("%", "%%")
            text += f" (默认 / default: {value})"
        return text

    def _split_lines(self, text, width):
        return wrap(text, width)

    def _fill_text(self, text, width, indent):
        return "\n".join(indent + line for line in wrap(text, width - len(indent)))

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, "用法 / usage: " if prefix is None else prefix)


def suggest(word: str, choices) -> str:
    """`` 你是不是想要 / did you mean: X?`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return f"; 你是不是想要 / did you mean: {close[0]}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error becomes a :class:`UsageError` (one line, exit 2)
    instead of a usage block and ``SystemExit``; help in Chinese and English; a
    mistyped command, choice or option gets the nearest correct one suggested."""

    def __init__(self, *args, formatter_class=HelpFormatter, add_help=True, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, add_help=False, **kwargs)
        self._positionals.title = "位置参数 / positional arguments"
        self._optionals.title = "选项 / options"
        if add_help:
            self.add_argument(
                "-h",
                "--help",
                action="help",
                default=argparse.SUPPRESS,
                help="显示本帮助并退出 / show this help and exit",
            )

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)")

    def _check_value(self, action, value):
        if action.choices is None or value in action.choices:
            return
        if isinstance(action, argparse._SubParsersAction):
            hint = suggest(value, action.choices) or f"; 全部命令 / every command: `{self.prog} --help`"
            raise UsageError(f"没有命令 {value!r} / unknown command {value!r} (invalid choice){hint}")
        listed = ", ".join(map(repr, action.choices))
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r} (choose from {listed}){suggest(str(value), map(str, action.choices))}"
        )

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen = self._chosen(namespace)
            options = [o for a in chosen._actions for o in a.option_strings if o.startswith("--")]
            hints = "".join(suggest(e.split("=", 1)[0], options) for e in extras if e.startswith("-"))
            raise UsageError(
                f"不认识的参数 / unrecognized arguments: {' '.join(extras)}{hints} (see `{chosen.prog} --help`)"
            )
        return namespace

    def _chosen(self, namespace) -> argparse.ArgumentParser:
        """The (sub)command parser that ``namespace`` went through last: its options are the candidates."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(getattr(namespace, action.dest, None) or "")
                if sub is not None:
                    return sub._chosen(namespace) if isinstance(sub, Parser) else sub
        return self


# ------------------------------------------------------------------ argument types
def _number(kind, text: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'a whole number' if kind is int else 'a number'}, got {text!r}"
        ) from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def int_range(lo: int | None = None, hi: int | None = None, what: str = "a whole number"):
    """An argparse type: an int with lo <= value <= hi (either bound optional)."""

    def parse(text: str) -> int:
        value = _number(int, text)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = (
                f"between {lo} and {hi}"
                if lo is not None and hi is not None
                else f">= {lo}"
                if lo is not None
                else f"<= {hi}"
            )
            raise argparse.ArgumentTypeError(f"expected {what} {bounds}, got {text!r}")
        return value

    parse.__name__ = "int"
    return parse


def float_range(lo: float | None = None, hi: float | None = None, *, open_lo: bool = False):
    """An argparse type: a finite float above lo (strictly when open_lo) and up to hi."""

    def parse(text: str) -> float:
        value = _number(float, text)
        low_bad = lo is not None and (value <= lo if open_lo else value < lo)
        if low_bad or (hi is not None and value > hi):
            rel = ">" if open_lo else ">="
            bounds = f"{rel} {lo}" + (f" and <= {hi}" if hi is not None else "") if lo is not None else f"<= {hi}"
            raise argparse.ArgumentTypeError(f"expected a number {bounds}, got {text!r}")
        return value

    parse.__name__ = "float"
    return parse


positive_int = int_range(1, None, "a positive whole number")
nonneg_int = int_range(0, None, "a whole number")
SEED_MAX = 2**63 - 1  # torch.Generator.manual_seed's range
seed_int = int_range(0, SEED_MAX, "a seed")


def positive_steps(text: str) -> int:
    """Training steps: a positive whole number (the case's wording, kept), at most MAX_STEPS."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of steps, got {text!r}")
    if n > MAX_STEPS:
        raise argparse.ArgumentTypeError(
            f"{n:,} steps is more than the sane maximum of {MAX_STEPS:,} (the book's longest run has 10,000)"
        )
    return n


def path_arg(text: str) -> str:
    """A file or folder path: not empty (``--out ""`` would mean the current directory, silently)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return text


def text_arg(text: str) -> str:
    """Text typed by the reader (a prompt): valid Unicode, so OpenCC and the tokenizer can take it."""
    bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(
            f"holds bytes that are not UTF-8 (at character {bad + 1}: the terminal passed another encoding); "
            "type it as UTF-8"
        )
    return text


# ------------------------------------------------------------------ shared options
def add_set(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=help
        or "改一个配置字段，可重复 / override a Config field (repeatable), e.g. --set scaled=false --set d_model=256 --set n_head=1 (the book's d_head 256)",
    )


def add_corpus(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--corpus",
        type=path_arg,
        default=None,
        metavar="FILE",
        help="UTF-8 语料文本（默认：随包附带的唐诗语料）/ UTF-8 text file (default: the Tang-poem corpus shipped with attnlab)",
    )


def add_device(p: argparse.ArgumentParser, default: str = "auto") -> None:
    p.add_argument(
        "--device",
        default=default,
        help="计算设备：auto、cpu、cuda 或 cuda:N / where to compute: auto, cpu, cuda or cuda:N",
    )


def add_out(p: argparse.ArgumentParser, default: str | None, help: str, required: bool = False) -> None:
    p.add_argument("--out", type=path_arg, default=default, required=required, help=help)


def add_runs(p: argparse.ArgumentParser) -> None:
    """Where the runs of a many-run command live: a temporary folder unless given."""
    p.add_argument(
        "--runs",
        type=path_arg,
        default=None,
        metavar="DIR",
        help="把各次运行的文件夹留在 DIR 下：重跑时复用已完成的、续跑中断的（默认：临时文件夹，用完删除）"
        " / keep the run folders under DIR: a rerun reuses finished runs and resumes interrupted ones "
        "(default: a temporary folder, removed afterwards)",
    )


def add_executor(p: argparse.ArgumentParser, default: str = "serial") -> None:
    """How many runs are executed: one after another, in local processes, or on Ray."""
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=default,
        help="怎样执行多次运行：serial 本进程依次跑，local 本机多进程，ray 或 slurm 集群"
        " / how the runs are executed: serial (this process), local (worker processes), ray or slurm",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="--executor local 的工作进程数（默认：每核一个）/ worker processes for --executor local "
        "(default: one per core)",
    )
    p.add_argument(
        "--ray-address",
        "--address",
        dest="ray_address",
        default=None,
        metavar="ADDRESS",
        help="--executor ray 的集群地址（默认：RAY_ADDRESS，否则本机 Ray）/ Ray cluster for --executor ray "
        "(default: RAY_ADDRESS, else a local Ray)",
    )


def add_slurm(p: argparse.ArgumentParser) -> None:
    """--executor slurm's resources (attnlab.slurm_executor): options over a config file."""
    g = p.add_argument_group("slurm 集群 / slurm (--executor slurm, through submitit)")
    g.add_argument(
        "--slurm-partition",
        metavar="PARTITION",
        default=None,
        help="提交到哪个分区（默认：集群的默认分区）/ the partition to submit to (default: the cluster's)",
    )
    g.add_argument(
        "--slurm-time",
        metavar="TIME",
        default=None,
        help="每个作业（一次运行）的时限，如 90、1:30:00、2h（默认 2h）/ time limit per job (one run): "
        "90, 1:30:00, 2h (default 2h)",
    )
    g.add_argument(
        "--slurm-cpus",
        metavar="N",
        type=positive_int,
        default=None,
        help="每个作业的 CPU 数 = 每次运行的线程数（默认 1）/ CPUs per job = threads per run (default 1)",
    )
    g.add_argument(
        "--slurm-parallelism",
        metavar="N",
        type=positive_int,
        default=None,
        help="作业数组同时运行的作业数（默认 32）/ jobs of the array at once (default 32)",
    )
    g.add_argument(
        "--slurm-config",
        default=None,
        metavar="FILE",
        help="TOML 或 JSON 配置文件：partition、time、cpus、parallelism、mem_gb、[extra] sbatch 选项"
        " / a TOML or JSON file: partition, time, cpus, parallelism, mem_gb, [extra] sbatch options",
    )


def add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="不显示进度条 / no progress bar")


def add_no_probe(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-probe",
        action="store_true",
        help="配合 --plan：不测本机速度（约几秒），按校准机器的速度估计"
        " / with --plan: skip the few seconds' speed probe of this machine; price at the calibration machine's speed",
    )


def speed_probe(args):
    """The speed probe ``--plan`` runs (attnlab.lab.plan.probe), or None with --no-probe."""
    from ..lab.plan import probe

    return None if getattr(args, "no_probe", False) else probe


def slurm_options(args):
    """The SlurmOptions the command line asks for (None unless --executor slurm)."""
    from ..slurm_executor import make_options

    given = [a for a in ("partition", "time", "cpus", "parallelism", "config") if getattr(args, f"slurm_{a}", None)]
    if getattr(args, "executor", None) != "slurm":
        if given:
            raise UsageError(f"--slurm-{given[0]} belongs to --executor slurm: add --executor slurm")
        return None
    return make_options(
        getattr(args, "slurm_config", None),
        partition=getattr(args, "slurm_partition", None),
        time=getattr(args, "slurm_time", None),
        cpus=getattr(args, "slurm_cpus", None),
        parallelism=getattr(args, "slurm_parallelism", None),
    )


def executor_options(args, progress: bool = True):
    """The one ``attnlab.runner.ExecutorOptions`` of a command line: --executor, --workers,
    --ray-address, --no-progress and (with --executor slurm) the --slurm-* options, checked once
    here and passed down whole. ``progress``: the bar of a command without --no-progress."""
    from ..runner import ExecutorOptions

    return ExecutorOptions(
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=progress and not getattr(args, "no_progress", False),
        slurm=slurm_options(args),
    )


def check_trainable(cfg) -> None:
    """Refuse, before any folder is made, a config whose training step cannot fit in memory."""
    from ..train import check_fits, resolve_device

    check_fits(cfg, resolve_device(cfg.device))


def check_device(device: str) -> str:
    """Refuse a --device this build cannot use (one line instead of torch's traceback)."""
    from ..train import resolve_device

    resolve_device(device)
    return device
