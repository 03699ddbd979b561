"""Command line: ``attnlab COMMAND ...``, one module per command in this package.

The logic lives in libraries that can be tested and imported in a notebook;
each command module only declares its arguments (``add_parser(sub)``) and
calls those libraries (``main(args) -> int``). Shared options are defined once
in :mod:`attnlab.cli.common`. Every error meant for the user is an
:class:`~attnlab.errors.AttnlabError` and becomes one line on stderr,
``attnlab: error: ...``, with exit status 2; nothing else prints errors.

To add a command: one module here with ``add_parser`` and ``main``, its name in
one group of ``GROUPS``. A command module imports nothing heavy at its top
(torch, numpy, matplotlib, scipy, fastapi go inside ``main``): ``--help``
builds every parser, and tests/test_cli_help.py checks it loads none of them.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys

from ..errors import AttnlabError
from .common import Parser

# the groups `attnlab --help` lists, in a reader's order; a command's module is its name with _ for -
GROUPS = (
    ("开始 / start", ("case", "serve", "site")),
    ("练习册与课堂 / workbook and class", ("exercise", "class")),
    ("训练与生成 / train and sample", ("train", "generate", "info")),
    ("实验与报告 / experiments and reports", ("book", "report", "claims", "heads", "failures", "ablate", "sweep")),
    ("语料 / corpus", ("corpus-stats", "build-corpus")),
    ("公式与速度 / formulas and speed", ("memory", "precision", "bench")),
)
COMMANDS = tuple(name for _, names in GROUPS for name in names)


def command_module(name: str):
    """The module of command ``name``, imported now (each is light; its ``main`` imports the rest)."""
    return importlib.import_module(f".{name.replace('-', '_')}", __name__)


def build_parser() -> Parser:
    parser = Parser(
        prog="attnlab",
        description="注意力实验室：第 1 章缩放点积注意力的全部实验——训练、权重熵、雅可比范数、消融与报告。"
        "\nattnlab: the chapter's experiments on scaled dot-product attention: training, weight entropy, "
        "Jacobian norm, ablations and reports.",
        epilog="每个命令的选项：attnlab COMMAND --help；新读者从 attnlab case --quick 开始。"
        "\neach command's options: attnlab COMMAND --help; new here? start with attnlab case --quick.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser, help="命令 / the command")
    for name in COMMANDS:
        module = command_module(name)
        p = module.add_parser(sub)
        p.set_defaults(func=module.main)
    _group_commands(parser, sub)
    return parser


def _group_commands(parser: Parser, sub: argparse._SubParsersAction) -> None:
    """List the commands under the titles of ``GROUPS`` (argparse lists them in one block)."""
    listed = {a.dest: a for a in sub._choices_actions}  # one line per command: its name and help
    parser._positionals._group_actions.remove(sub)  # the usage line keeps COMMAND
    for title, names in GROUPS:
        parser.add_argument_group(title)._group_actions.extend(listed[n] for n in names if n in listed)


def _tolerant_output() -> None:
    """Characters the terminal cannot encode (Chinese on a Latin-1 console) are
    replaced, not fatal."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a detached or closed stream: leave it
                pass


def error_line(e: BaseException) -> str:
    """The one line a user sees for an error; the message is never empty."""
    msg = " ".join(str(e).split()) or type(e).__name__
    return f"attnlab: error: {msg}"


# what to do about an error of the file system, by errno
_PATH_ADVICE = {
    errno.ENOSPC: "free space or choose another --out",
    errno.EDQUOT: "free space or choose another --out",
    errno.EFBIG: "free space or choose another --out",
    errno.EACCES: "check its permissions or choose another path",
    errno.EPERM: "check its permissions or choose another path",
    errno.EROFS: "the file system is read-only: choose another path",
    errno.ENAMETOOLONG: "give a shorter path (each name at most 255 bytes, the whole path at most 4096)",
    errno.ENOTDIR: "a file stands where a folder is expected: move it or choose another path",
    errno.ELOOP: "symbolic links point in a loop there: fix the link or choose another path",
    errno.EISDIR: "a folder stands where a file is expected: give a file path",
    errno.ENOENT: "check the path",
    errno.EEXIST: "something is already there: remove it or choose another path",
}


def _short_path(name) -> str:
    text = str(name)
    return text if len(text) <= 120 else f"{text[:60]}…{text[-40:]} ({len(text):,} characters)"


def path_error(e: OSError) -> str | None:
    """The one line for an error of the file system (a path too long, a file where a folder is
    expected, no permission, a loop of links, a full disk ...), or None for another OSError."""
    if e.errno not in _PATH_ADVICE and not e.filename:
        return None
    space = e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    where = f" {_short_path(e.filename)}" if e.filename else ""
    todo = _PATH_ADVICE.get(e.errno, "check the path or choose another")
    why = e.strerror or type(e).__name__
    return f"cannot {'write' if space else 'use'}{where}: {why}; {todo}"


def main(argv: list[str] | None = None) -> int:
    _tolerant_output()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 1
        from ..runtime import keep_freed_memory  # after parsing: --help needs no ctypes nor ldconfig

        keep_freed_memory()
        return int(args.func(args) or 0)
    except AttnlabError as e:
        print(error_line(e), file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # an optional extra that is not installed
        extra = {"fastapi": "web", "uvicorn": "web", "ray": "ray", "starlette": "web"}.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        print(error_line(AttnlabError(f"this command needs {e.name}: pip install 'attnlab[{extra}]'")), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `attnlab ... | head`
        return 0
    except OSError as e:
        line = path_error(e)
        if line is None:
            raise
        print(error_line(AttnlabError(line)), file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        msg = str(e) or "interrupted"
        print(f"attnlab: {msg}", file=sys.stderr)
        return 130
