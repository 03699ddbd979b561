"""What every command shares: the parser class, the shared options and argument types.

Each shared option (``--set``, ``--corpus``, ``--device``, ``--out``,
``--executor``/``--workers``/``--ray-address``) is defined here once; a command
adds the ones it takes. Argument types refuse bad values at the door with a
message naming the argument, so a command's ``main`` only sees checked values.
"""

from __future__ import annotations

import argparse
import math

from ..config import MAX_STEPS
from ..errors import UsageError
from ..runner import EXECUTORS


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error becomes a :class:`UsageError` (one line, exit 2)
    instead of a usage block and ``SystemExit``."""

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


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


# ------------------------------------------------------------------ shared options
def add_set(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=help or "override a Config field, e.g. --set scaled=false --set n_head=1",
    )


def add_corpus(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--corpus",
        type=path_arg,
        default=None,
        help="UTF-8 text file (default: the Tang-poem corpus shipped with attnlab)",
    )


def add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")


def add_out(p: argparse.ArgumentParser, default: str | None, help: str, required: bool = False) -> None:
    p.add_argument("--out", type=path_arg, default=default, required=required, help=help)


def add_runs(p: argparse.ArgumentParser) -> None:
    """Where the runs of a many-run command live: a temporary folder unless given."""
    p.add_argument(
        "--runs",
        type=path_arg,
        default=None,
        metavar="DIR",
        help="keep the run folders under DIR: a rerun reuses finished runs and resumes interrupted ones "
        "(default: a temporary folder, removed afterwards)",
    )


def add_executor(p: argparse.ArgumentParser, default: str = "serial") -> None:
    """How many runs are executed: one after another, in local processes, or on Ray."""
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=default,
        help=f"serial (this process), local (worker processes), ray or slurm (default {default})",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="worker processes for --executor local (default: one per core)",
    )
    p.add_argument(
        "--ray-address",
        "--address",
        dest="ray_address",
        default=None,
        help="Ray cluster for --executor ray (default: RAY_ADDRESS, else a local Ray)",
    )


def add_slurm(p: argparse.ArgumentParser) -> None:
    """--executor slurm's resources (attnlab.slurm_executor): options over a config file."""
    g = p.add_argument_group("slurm (--executor slurm, through submitit)")
    g.add_argument("--slurm-partition", default=None, help="the partition to submit to (default: the cluster's)")
    g.add_argument("--slurm-time", default=None, help="time limit per job (one run): 90, 1:30:00, 2h (default 2h)")
    g.add_argument("--slurm-cpus", type=positive_int, default=None, help="CPUs per job = threads per run (default 1)")
    g.add_argument(
        "--slurm-parallelism", type=positive_int, default=None, help="jobs of the array at once (default 32)"
    )
    g.add_argument(
        "--slurm-config",
        default=None,
        metavar="FILE",
        help="a TOML or JSON file: partition, time, cpus, parallelism, mem_gb, [extra] sbatch options",
    )


def slurm_options(args):
    """The SlurmOptions the command line asks for (None unless --executor slurm)."""
    from ..slurm_executor import make_options

    given = [a for a in ("partition", "time", "cpus", "parallelism", "config") if getattr(args, f"slurm_{a}", None)]
    if getattr(args, "executor", None) != "slurm":
        if given:
            raise UsageError(f"--slurm-{given[0]} belongs to --executor slurm: add --executor slurm")
        return None
    return make_options(
        args.slurm_config,
        partition=args.slurm_partition,
        time=args.slurm_time,
        cpus=args.slurm_cpus,
        parallelism=args.slurm_parallelism,
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
