"""The command line's help: Chinese first with English alongside, every option explained with its
default, instant (no torch, numpy or matplotlib behind ``--help``), and a mistyped command or
option answered with the nearest correct one."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.cli import COMMANDS, GROUPS, build_parser, main
from attnlab.cli.common import _JOIN, _width, has_default, show_default, wrap

CJK = re.compile(r"[\u4e00-\u9fff]")
ENGLISH = re.compile(r"[A-Za-z]{2,}(?:[ ,;:'()-]+[A-Za-z]{2,}){2,}")  # three English words in a row
HEAVY = ("torch", "numpy", "matplotlib", "scipy", "fastapi", "uvicorn", "pandas")
CLI_DIR = Path(__file__).resolve().parents[1] / "src" / "attnlab" / "cli"


def _parsers(parser=None, path=()):
    """(command path, parser) for the top level and every command and subcommand."""
    parser = parser or build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PARSERS = list(_parsers())
IDS = [" ".join(path) or "attnlab" for path, _ in PARSERS]


def _commands(parser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _rendered(parser, action) -> str:
    """The help lines of one action as ``--help`` prints them, spaces normalised."""
    formatter = parser._get_formatter()
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def test_every_command_module_is_listed():
    modules = {p.stem.replace("_", "-") for p in CLI_DIR.glob("*.py") if "def add_parser" in p.read_text("utf-8")}
    assert modules == set(COMMANDS), "a command module that `attnlab --help` does not list, or the reverse"
    assert len(COMMANDS) == len(set(COMMANDS))
    assert {path[0] for path, _ in PARSERS if len(path) == 1} == set(COMMANDS)


@pytest.mark.parametrize("path, parser", PARSERS, ids=IDS)
def test_help_is_chinese_first_and_bilingual(path, parser):
    text = parser.format_help()
    usage, _, rest = text.partition("\n\n")
    assert usage.startswith("用法 / usage: attnlab")
    first = next(line for line in rest.splitlines() if line.strip())
    assert CJK.search(first), f"the first line after the usage is not Chinese: {first!r}"
    description = rest.split("\n\n")[0]
    assert ENGLISH.search(description), f"no English in the description: {description!r}"


@pytest.mark.parametrize("path, parser", PARSERS, ids=IDS)
def test_every_option_has_bilingual_help_with_its_default(path, parser):
    for action in parser._actions:
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help is not argparse.SUPPRESS, (path, name)
        assert CJK.search(action.help) and re.search(r"[A-Za-z]{3,}", action.help), (name, action.help)
        if has_default(action):
            shown = _rendered(parser, action)
            assert f"default: {show_default(action.default)}" in shown, (name, shown)
        for choice in getattr(action, "_choices_actions", ()):  # a command's line in its parent's help
            assert CJK.search(choice.help) and ENGLISH.search(choice.help), (choice.dest, choice.help)


def test_defaults_are_shown_as_typed():
    parser = build_parser()
    shown = {
        "serve": "default: 8000",
        "generate": "秦川雄帝宅)",  # a value is never broken across lines
        "corpus-stats": "default: 1198",  # a list of one, not [1198]
        "failures": "default: 300",
    }
    for command, text in shown.items():
        assert text in " ".join(_commands(parser).choices[command].format_help().split())
    attention = _commands(_commands(parser).choices["bench"]).choices["attention"].format_help()
    assert "default: 512 1024 2048 4096 8192" in " ".join(attention.split())
    assert "default: 60)" in " ".join(attention.split())  # the float 60.0 as a reader types it
    assert "default: False" not in parser.format_help()  # a flag's default is not noise


def test_top_level_help_groups_every_command():
    text = build_parser().format_help()
    for title, names in GROUPS:
        assert f"\n{title}:\n" in text
        block = text.split(f"\n{title}:\n")[1].split("\n\n")[0]
        assert [line.split()[0] for line in block.splitlines() if not line.startswith(" " * 4)] == list(names)
    assert "位置参数" not in text  # the commands are listed once, under their groups


def test_lines_fit_the_terminal(monkeypatch):
    """Help lines (after the usage) fit COLUMNS, a Chinese character counted as two columns."""
    monkeypatch.setenv("COLUMNS", "80")
    for path, parser in PARSERS:
        body = parser.format_help().partition("\n\n")[2]
        for line in body.splitlines():
            assert _width(line) <= 78 or len(line.split()) == 1, (path, line)
            assert _JOIN not in line


def test_wrap_breaks_between_chinese_characters_not_inside_brackets():
    lines = wrap("采样种子（默认：全部词表）/ sampling seed", 10)
    assert all(_width(line) <= 10 for line in lines), lines
    assert "".join(lines).replace(" ", "") == "采样种子（默认：全部词表）/samplingseed"
    assert not any(line.startswith(("）", "，", "：")) or line.endswith("（") for line in lines), lines
    assert wrap("第一行\nsecond line", 80) == ["第一行", "second line"]


def test_help_imports_nothing_heavy():
    """`attnlab --help` and every command's --help, in a fresh interpreter: no torch, numpy,
    matplotlib, scipy or fastapi in sys.modules (each would cost seconds before the help shows)."""
    paths = [list(path) for path, _ in PARSERS]
    code = (
        "import json, sys\n"
        "from attnlab.cli import main\n"
        f"heavy = {HEAVY!r}\n"
        "seen = {}\n"
        "for path in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        main([*path, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    seen[' '.join(path)] = [m for m in heavy if m in sys.modules]\n"
        "sys.stdout.flush()\n"
        "sys.__stderr__.write(json.dumps(seen))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(paths)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stderr)
    assert len(seen) == len(paths)
    assert {k: v for k, v in seen.items() if v} == {}, "--help imported heavy modules"
    assert "用法 / usage: attnlab" in r.stdout


def test_importing_attnlab_loads_no_torch_and_keeps_the_public_names():
    code = (
        "import sys, attnlab\n"
        "assert 'torch' not in sys.modules, 'import attnlab loaded torch'\n"
        "import attnlab.train\n"
        "from attnlab import Config, TinyGPT, train\n"
        "assert callable(train) and train is attnlab.train and train.__module__ == 'attnlab.train'\n"
        "assert sorted(attnlab.__all__) == sorted(n for n in attnlab.__all__ if hasattr(attnlab, n))\n"
        "print(attnlab.stats.__name__)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "attnlab.stats", r.stderr


def test_help_defaults_are_their_sources():
    """The lists --help shows are read from their one home (no copy to keep equal), except the executors'
    (cli.common.EXECUTORS beside runner.EXECUTORS) and the failure variants' default."""
    from attnlab import runner
    from attnlab.cli import common
    from attnlab.lab import failures as F

    assert common.EXECUTORS == runner.EXECUTORS
    variants = build_parser().parse_args(["failures"]).variants
    assert variants == ",".join(F.VARIANTS)


def _error(argv, capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_mistyped_command_gets_the_nearest(capsys):
    assert _error(["trian"], capsys) == (
        "attnlab: error: 没有命令 'trian' / unknown command 'trian' (invalid choice); "
        "你是不是想要 / did you mean: train?"
    )
    assert _error(["bench", "atention"], capsys).endswith("did you mean: attention?")
    far = _error(["xyzzy"], capsys)
    assert "unknown command 'xyzzy'" in far and "did you mean" not in far and "attnlab --help" in far


def test_a_mistyped_option_or_choice_gets_the_nearest(capsys):
    err = _error(["case", "--seds", "3"], capsys)
    assert "unrecognized arguments: --seds 3" in err and "did you mean: --seeds?" in err
    assert "attnlab case --help" in err
    err = _error(["memory", "kv-cache", "--seq-lne", "8"], capsys)
    assert "did you mean: --seq-len?" in err and "attnlab memory kv-cache --help" in err
    err = _error(["case", "--executor", "locl"], capsys)
    assert "invalid choice: 'locl'" in err and "did you mean: local?" in err
    assert "did you mean" not in _error(["train", "--zzzzzz"], capsys)


@pytest.mark.parametrize("module", ["attnlab", "attnlab.cli"])
def test_python_dash_m_runs_the_command(module):
    r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "attnlab" in r.stdout and "COMMAND" in r.stdout, r.stderr
