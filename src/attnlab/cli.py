"""Command line: thin wrappers that parse arguments and call library functions.

Every subcommand lives in a module with ``add_parser(subparsers)`` and
``run(args) -> int``; this file only collects them. Errors meant for the user
(:class:`~attnlab.errors.AttnlabError`) become one line on stderr and exit 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# subcommand modules, in the order `attnlab --help` lists them
COMMAND_MODULES = [
    "attnlab.commands",              # train, generate, info, corpus-stats, build-corpus
    "attnlab.experiments.case",      # case, report
    "attnlab.experiments.heads",     # heads
    "attnlab.experiments.failures",  # failures
    "attnlab.experiments.ablate",    # ablate
    "attnlab.experiments.sweep",     # sweep
    "attnlab.cli_book",              # book
    "attnlab.experiments.bench",     # bench
    "attnlab.cli_precision",         # precision
    "attnlab.cli_memory",            # memory
    "attnlab.web.server",            # serve
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnlab",
        description="注意力实验室 / attnlab: the chapter's experiments on scaled dot-product attention")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (e.name == name or name.startswith(e.name + ".")):
                continue          # that part of attnlab is not built yet
            raise
        if hasattr(module, "add_parser"):
            module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .errors import AttnlabError
    from .runtime import keep_freed_memory

    keep_freed_memory()

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except AttnlabError as e:
        print(f"attnlab: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        msg = str(e) or "interrupted"
        print(f"attnlab: {msg}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
