"""The README is a front door and the docs stay true: every relative link resolves, the
README stays small, the book-style code snippet in docs/commands.md runs as printed, the commands
the docs give train what they say, and every number about results, times and costs sits in a block
that scripts/docs_lab_book.py generates from the committed JSON and the plan."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    missing = [target for target in LINK.findall(text) if "://" not in target and not (page.parent / target).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 10_000
    for command in ("make case", "make test"):
        assert command in text
    for page in ("docs/case.md", "docs/lab-book.md", "docs/playground.md", "docs/commands.md"):
        assert f"({page})" in text


def test_commands_snippet_runs():
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/commands.md lost its code snippet"
    scope: dict = {}
    exec(compile(blocks[0], "docs/commands.md", "exec"), scope)  # noqa: S102 - our own docs
    cfg = scope["cfg"]  # the book's collapsing model: d_head 256, unscaled
    assert (cfg.d_model // cfg.n_head, cfg.scaled) == (256, False)
    diag = scope["model"].blocks[0].attn.last_diag
    assert set(diag) >= {"weight_entropy", "jacobian_fro", "logit_std"}
    assert 0.0 < diag["weight_entropy"] <= 1.0


def test_lab_book_page_matches_the_committed_book():
    """docs/lab-book.md's counts and compute table are generated from data/lab_book.json."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_lab_book.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_lab_book", ROOT / "scripts" / "docs_lab_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_collapsing_model_command_trains_d_head_256():
    """The README's "书中塌缩的那个模型" is the case's big preset, unscaled (d_head 256), not d_head 128."""
    from attnlab.config import PRESETS, Config

    line = next(l for l in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if "书中塌缩的那个模型" in l)
    cfg = Config.from_overrides(re.findall(r"--set (\S+)", line))
    big = Config().replace(**PRESETS["big"])
    assert (cfg.d_model, cfg.n_head, cfg.scaled) == (big.d_model, big.n_head, False)
    assert cfg.d_model // cfg.n_head == 256
    commands = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    example = re.search(r"例如书中塌缩的那个大模型[^`]*`([^`]+)`", commands).group(1)
    cfg = Config.from_overrides(re.findall(r"--set (\S+)", example))
    assert (cfg.d_model // cfg.n_head, cfg.scaled) == (256, False)


def test_readme_says_how_to_get_the_command():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for needle in (
        "source .venv/bin/activate",
        ".venv/bin/attnlab",
        "python3 -m venv .venv",
        "pip install -e '.[web]'",
    ):
        assert needle in text, needle
    assert "pip install ." in text  # the package from anywhere


def test_generated_blocks_follow_the_data():
    """A block is a function of the data: change a number in the JSON and the page goes stale."""
    import copy
    import json

    gen = _generator()
    case = json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    block = gen.case_readme_block(case)
    steps = next(c for c in case["claims"] if c["id"] == "big_unscaled_entropy_collapses")["inputs"]
    lo, hi = min(steps["first_step_below_0.01"]), max(steps["first_step_below_0.01"])
    assert f"第 {lo}–{hi} 步" in block  # every seed's first step below 0.01, not a typed range
    moved = copy.deepcopy(case)
    c = next(c for c in moved["claims"] if c["id"] == "big_unscaled_entropy_collapses")
    c["inputs"]["first_step_below_0.01"] = [x + 1 for x in c["inputs"]["first_step_below_0.01"]]
    assert gen.case_readme_block(moved) != block
    page = (ROOT / "README.md").read_text(encoding="utf-8")
    assert block in page
    with pytest.raises(SystemExit, match="markers"):
        gen.render_page("no markers here", Path("README.md"), [("case-readme", lambda: block)])


def test_numbers_the_docs_once_had_wrong_are_gone():
    """Drifts found by reading the docs against the data: none of them may come back as prose."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    for stale in ("113–142", "0.00098", "140 条论断", "12.3 |", "≈ 6.1 h", "约 34 分钟"):
        assert stale not in text, stale


def test_readme_plan_times_are_the_plans():
    """The README's case times are `attnlab case --plan`'s, on two workers, from the committed records
    and factors (its sweeps, each run's process and the reports included)."""
    from attnlab.lab.plan import pack

    gen = _generator()
    case, _, _, first = gen._plans()
    secs = [c.seconds for c in case.costs]
    assert case.wall_at(2) > pack(secs, 2)  # more than the runs' timed training
    page = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"完整案例 {len(secs)} 个运行、{sum(secs) / 3600:.2f} 核时，约 {gen._minutes(case.wall_at(2))}" in page
    assert f"第一份报告（{len(first)} 个运行）约 {gen._minutes(case.before_s + case.batch_walls(2)[0])}" in page


# files the pages name, as a reader would look for them: lab entries, scripts, committed data
NAMED_FILE = re.compile(
    r"(?<![\w/.])((?:lab|experiments)/[a-z_0-9]+\.py|scripts/[a-z_0-9]+\.(?:py|sh)|data/[a-z_0-9]+\.json)"
)


def test_the_files_the_docs_name_exist():
    """A page that names lab/<x>.py, scripts/<x>.py or data/<x>.json names a file the repository has:
    a module moved or a script deleted leaves no page pointing at it."""
    missing = []
    for page in [*PAGES, ROOT / "CONTRIBUTING.md"]:
        for name in NAMED_FILE.findall(page.read_text(encoding="utf-8")):
            where = ROOT / name if name.startswith(("scripts/", "data/")) else ROOT / "src" / "attnlab" / name
            if not where.exists():
                missing.append(f"{page.name}: {name}")
    assert not missing, missing
    assert NAMED_FILE.findall("见 `lab/statements.py` 与 scripts/gone.py") == ["lab/statements.py", "scripts/gone.py"]


def test_the_layout_names_every_module_and_commands_every_command():
    """docs/layout.md names every module of src/attnlab (top level) and every package; docs/commands.md
    names every command of `attnlab --help`."""
    from attnlab.cli import COMMANDS

    layout = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "attnlab"
    names = [p.name for p in src.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    names += [p.name + "/" for p in src.iterdir() if (p / "__init__.py").exists()]
    assert not [n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}", layout)]
    commands = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert not [c for c in COMMANDS if f"attnlab {c}" not in commands]


# ------------------------------------------------------------------ seed counts and verdicts come from the data
def test_the_head_portraits_findings_follow_its_claims():
    """docs/case.md's findings about the book in the head portrait are its FAIL claims of category
    "finding", generated: a verdict that changes in data/head_portrait.json changes the page."""
    import copy
    import json

    gen = _generator()
    portrait = json.loads((ROOT / "data" / "head_portrait.json").read_text(encoding="utf-8"))
    block = gen.head_findings_block(portrait)
    assert block in (ROOT / "docs" / "case.md").read_text(encoding="utf-8")
    found = [
        c for c in portrait["claims"] if c["verdict"] == "FAIL" and (c.get("reason") or {}).get("category") == "finding"
    ]
    assert f"还有 {len(found)} 条书的问题" in block and all(f"`{c['id']}`" in block for c in found)
    passed = copy.deepcopy(portrait)
    for c in passed["claims"]:
        c.update(verdict="PASS", reason=None)
    assert "没有别的书的问题" in gen.head_findings_block(passed)


def test_seed_counts_left_in_prose_are_the_commands_defaults():
    """The data's seed and run counts sit in generated blocks; the few counts left in prose are the
    commands' defaults, checked here against the code."""
    import json

    from attnlab.cli import build_parser
    from attnlab.lab.case.run import CaseSettings

    settings = CaseSettings()
    commands = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert f"默认 {build_parser().parse_args(['failures']).seeds} 个种子" in commands
    outputs = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    assert (
        f"比默认的 {len(settings.seeds)} 个种子多得多" in outputs
        and f"than the default {len(settings.seeds)} " in outputs
    )
    case = json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    assert len(case["seeds"]["runs"]) > len(settings.seeds)  # "many more seeds than the default"
    assert f"默认 {settings.wd_seeds} 个种子，`--wd-seeds N` 更多" in (ROOT / "docs" / "case.md").read_text(
        encoding="utf-8"
    )
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    for typed in ("三个种子定不下", "训练 8 个不同形状的运行", "还有一条书的问题", "trains 8 runs"):
        assert typed not in text, typed
