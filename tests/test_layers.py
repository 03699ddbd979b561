"""The layers of CONTRIBUTING.md and the README's layout, checked against the real imports.

A module may import its own layer and the layers below it, never one above:
a lower layer that imports an upper one is the first step to the copies and
cycles issue #13 removed. A new module must be given a layer here.
"""

import ast
from pathlib import Path

import pytest

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
            "outputs",
            "schemas",
        ),
    ),
    (1, ("model",)),
    (2, ("checkpoint", "train", "perf", "runner", "runstore", "slurm_executor", "snapshots", "tensorboard_log")),
    (3, ("experiments",)),
    (4, ("lab",)),
    (5, ("report", "web")),
    (6, ("cli",)),
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


def imported(module: str, path: Path) -> set[str]:
    """attnlab modules imported by ``module`` (absolute or relative, at any depth in the file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
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
            for name in [target, *names]:
                if name:
                    found.add(name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("attnlab."):
                    found.add(a.name[len("attnlab.") :])
    return found


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


def test_experiments_do_not_import_the_bench():
    for module, path in modules():
        if module.startswith("experiments.") and module != "experiments.bench":
            assert not any(n.startswith("experiments.bench") for n in imported(module, path)), module


def test_the_checker_sees_an_upward_import(tmp_path):
    """The check can fail: a model module importing the CLI is caught."""
    bad = tmp_path / "model.py"
    bad.write_text("from .cli import main\nfrom .experiments import case\n")
    names = imported("model", bad)
    assert {"cli", "experiments"} <= {n.split(".")[0] for n in names}
    assert any(layer_of(n) > layer_of("model") for n in names if n.split(".")[0] in ("cli", "experiments"))
