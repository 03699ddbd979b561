"""Command line: ``attnlab COMMAND ...``, one module per command in this package.

The logic lives in libraries that can be tested and imported in a notebook;
each command module only declares its arguments (``add_parser(sub)``) and
calls those libraries (``main(args) -> int``). Shared options are defined once
in :mod:`attnlab.cli.common`. Every error meant for the user is an
:class:`~attnlab.errors.AttnlabError` and becomes one line on stderr,
``attnlab: error: ...``, with exit status 2; nothing else prints errors.

To add a command: one module here with ``add_parser`` and ``main``, one entry
in ``COMMANDS``.
"""

from __future__ import annotations

import errno
import sys

from ..errors import AttnlabError
from . import (
    ablate,
    bench,
    book,
    build_corpus,
    case,
    corpus_stats,
    failures,
    generate,
    heads,
    info,
    memory,
    precision,
    report,
    serve,
    sweep,
    train,
)
from .common import Parser

# in the order `attnlab --help` lists them
COMMANDS = [
    train,
    generate,
    info,
    corpus_stats,
    build_corpus,
    case,
    report,
    book,
    heads,
    failures,
    ablate,
    sweep,
    bench,
    precision,
    memory,
    serve,
]


def build_parser() -> Parser:
    parser = Parser(
        prog="attnlab", description="注意力实验室 / attnlab: the chapter's experiments on scaled dot-product attention"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMANDS:
        p = module.add_parser(sub)
        p.set_defaults(func=module.main)
    return parser


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


def main(argv: list[str] | None = None) -> int:
    from ..runtime import keep_freed_memory

    _tolerant_output()
    keep_freed_memory()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 1
        return int(args.func(args) or 0)
    except AttnlabError as e:
        print(error_line(e), file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # an optional extra that is not installed
        extra = {"fastapi": "web", "uvicorn": "web", "ray": "ray", "starlette": "web", "pydantic": "web"}.get(
            (e.name or "").split(".")[0]
        )
        if extra is None:
            raise
        print(error_line(AttnlabError(f"this command needs {e.name}: pip install 'attnlab[{extra}]'")), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `attnlab ... | head`
        return 0
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        where = f" {e.filename}" if e.filename else ""
        space = e.errno in (errno.ENOSPC, errno.EDQUOT)
        todo = "free space or choose another --out" if space else "check its permissions or choose another path"
        print(
            error_line(AttnlabError(f"cannot {'write' if space else 'use'}{where}: {e.strerror}; {todo}")),
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt as e:
        msg = str(e) or "interrupted"
        print(f"attnlab: {msg}", file=sys.stderr)
        return 130
