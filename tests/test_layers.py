"""The layers of CONTRIBUTING.md and the README's layout, checked against the real imports.

A module may import its own layer and the layers below it, never one above:
a lower layer that imports an upper one is the first step to the copies and
cycles issue #13 removed. A new module must be given a layer here. Within a
layer, no two modules import each other, directly or round a longer circle
(lazy imports inside functions count too).
"""

import ast
import graphlib
from pathlib import Path

import pytest

import book_checks

SRC = Path(__file__).resolve().parents[1] / "src" / "attnlab"

# (layer, module-name prefixes), lowest first
LAYERS = [
    (
        0,
        (
            "errors",
            "config",
            "io",
            "limits",
            "runfolder",
            "runtime",
            "book",
            "attention",
            "tokenizer",
            "corpus",
            "diagnostics",
            "fonts",
            "chinese",
            "stats",
            "sequential",
            "verdicts",
            "claims_registry",
            "outputs",
            "schemas",
            "keyvalue",
        ),
    ),
    (1, ("model",)),
    (
        2,
        (
            "checkpoint",
            "train",
            "perf",
            "run_task",
            "runner",
            "runstore",
            "session",
            "slurm_executor",
            "snapshots",
            "tensorboard_log",
            "tools",
        ),
    ),
    (3, ("lab",)),
    (4, ("report", "web", "workbook")),
    (5, ("cli",)),
]


def layer_of(module: str) -> int:
    head = module.split(".")[0]
    for layer, prefixes in LAYERS:
        if head in prefixes:
            return layer
    raise KeyError(module)


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and parts != ["__main__"]:
            out.append((".".join(parts), path))
    return out


def import_statements(module: str, path: Path) -> list[tuple[str, list[str]]]:
    """Each attnlab import of ``module`` (absolute or relative, at any depth in the file) as
    (the module it names, [that module + "." + each imported name])."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                target = ".".join([*base, node.module] if node.module else base)
                names = [f"{target}.{a.name}" if target else a.name for a in node.names]
            elif node.module and node.module.startswith("attnlab"):
                target = node.module[len("attnlab.") :] if node.module != "attnlab" else ""
                names = [f"{target}.{a.name}" if target else a.name for a in node.names]
            else:
                continue
            found.append((target, names))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("attnlab."):
                    found.append((a.name[len("attnlab.") :], []))
    return found


def imported(module: str, path: Path) -> set[str]:
    """attnlab modules imported by ``module`` (absolute or relative, at any depth in the file)."""
    return {name for target, names in import_statements(module, path) for name in [target, *names] if name}


def import_graph(files: list[tuple[str, Path]]) -> dict[str, set[str]]:
    """module -> the modules of ``files`` it imports. ``from .pkg import sub`` is an arrow to ``sub``
    alone when ``sub`` is a module (not to ``pkg``'s __init__, which importing ``sub`` only needs
    started); ``from .mod import name`` an arrow to ``mod``."""
    known = {m for m, _ in files}

    def owner(name: str) -> str:  # runner.Run -> runner
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, path in files:
        arrows = set()
        for target, names in import_statements(module, path):
            subs = [n for n in names if n in known]
            arrows |= set(subs)
            if len(subs) < len(names) or not names:
                arrows.add(owner(target))
        graph[module] = {m for m in arrows if m and m != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its modules, the first again at the end), or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


def test_every_module_has_a_layer():
    missing = []
    for module, _ in modules():
        try:
            layer_of(module)
        except KeyError:
            missing.append(module)
    assert not missing, f"give these modules a layer in tests/test_layers.py and CONTRIBUTING.md: {missing}"


@pytest.mark.parametrize("module, path", modules(), ids=[m for m, _ in modules()])
def test_no_module_imports_a_layer_above_its_own(module, path):
    mine = layer_of(module)
    upward = []
    for name in imported(module, path):
        try:
            theirs = layer_of(name)
        except KeyError:
            continue  # a name inside a module, e.g. attnlab.Config
        if theirs > mine:
            upward.append(name)
    assert not upward, f"{module} (layer {mine}) imports upward: {sorted(upward)}"


def test_no_experiment_imports_the_bench():
    for module, path in modules():
        if module.startswith("lab.") and module != "lab.bench":
            assert not any(n.startswith("lab.bench") for n in imported(module, path)), module


def test_the_checker_sees_an_upward_import(tmp_path):
    """The check can fail: a model module importing the CLI is caught."""
    bad = tmp_path / "model.py"
    bad.write_text("from .cli import main\nfrom .lab import case\n")
    names = imported("model", bad)
    assert {"cli", "lab"} <= {n.split(".")[0] for n in names}
    assert any(layer_of(n) > layer_of("model") for n in names if n.split(".")[0] in ("cli", "lab"))


# Arrows of a circle known and not yet mended, each with why; the check ignores them and nothing else.
KNOWN_CIRCLE_ARROWS: set[tuple[str, str]] = set()


def test_the_import_graph_has_no_cycle():
    """No circle of imports in src/attnlab, module by module (lazy imports count): the runner and
    its SLURM executor both stand on attnlab.run_task instead of importing each other."""
    graph = import_graph(modules())
    assert sum(map(len, graph.values())) > 100  # the extraction sees the real imports
    assert "run_task" in graph["slurm_executor"] and "runner" not in graph["slurm_executor"]
    for a, b in KNOWN_CIRCLE_ARROWS:
        graph[a].discard(b)
    cycle = find_cycle(graph)
    assert cycle is None, f"a circle of imports: {' -> '.join(cycle)}"


def test_the_cycle_check_sees_a_circle(tmp_path):
    """The check can fail: two modules importing each other (one lazily, inside a function) are a circle,
    and a module importing a sibling through its package is no circle with that package."""
    (tmp_path / "pkg").mkdir()
    files = {
        "runner": "def f():\n    from .slurm_executor import run_slurm\n",
        "slurm_executor": "from .runner import RunnerError, train_one\n",
        "pkg": "from .a import X\n",
        "pkg.a": "from . import b\nX = 1\n",
        "pkg.b": "",
    }
    paths = []
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ("/__init__.py" if name == "pkg" else ".py"))
        path.write_text(text, encoding="utf-8")
        paths.append((name, path))
    graph = import_graph(paths)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg"] == {"pkg.a"}
    assert sorted(find_cycle(graph)[:-1]) == ["runner", "slurm_executor"]
    del graph["runner"]
    assert find_cycle(graph) is None


# an entry that imports another (none: entries share through lab/runs.py and lab/common.py)
NOT_YET: set[tuple[str, str]] = set()
# an entry is a module of lab/ or a package there (the case: lab/case/, every module of it the entry's)
ENTRIES = sorted(
    p.stem
    for p in (SRC / "lab").iterdir()
    if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.stem not in book_checks.ENGINE
)


def entry_files(eid: str) -> list[tuple[str, Path]]:
    """(module name, path) of every module of entry ``eid``."""
    package = SRC / "lab" / eid
    if not package.is_dir():
        return [(f"lab.{eid}", SRC / "lab" / f"{eid}.py")]
    return [(f"lab.{eid}" + ("" if p.stem == "__init__" else f".{p.stem}"), p) for p in sorted(package.glob("*.py"))]


@pytest.mark.parametrize("eid", ENTRIES)
def test_lab_entries_import_only_the_engine_and_lower_layers(eid):
    """Entries share through lab/runs.py and lab/common.py, never by importing each other (a package
    entry's modules import each other freely)."""
    others = [e for e in ENTRIES if e != eid]
    wrong = [w for module, path in entry_files(eid) for w in book_checks.import_problems(module, path, others)]
    assert [w for w in wrong if (eid, w.removeprefix("imports the entry lab.")) not in NOT_YET] == []


def test_the_case_package_is_checked_as_an_entry():
    """The case is a package: each of its modules is checked, and importing it from another entry is caught."""
    assert "case" in ENTRIES and len(entry_files("case")) >= 3
    # run.py imports lab.case.claims: from any module not of the case, that is importing the entry
    wrong = book_checks.import_problems("lab.case.run", SRC / "lab" / "case" / "run.py", ENTRIES)
    assert "imports the entry lab.case" in wrong
