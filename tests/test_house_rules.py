"""House rules of CONTRIBUTING.md checked against the code, each with a test that the check can fail:

- no private name (``_x``) of one module is used by another: imported (at the top or lazily, inside a
  function) or reached as an attribute of an imported module;
- one parser of ``KEY=VALUE`` items (attnlab.keyvalue.pairs) for ``--set`` and ``--grid``;
- one formatter of a list of numbers in a sentence (attnlab.lab.common.number_list).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_layers import import_statements, modules

# private names used across modules today, each with the module that will make it public; the check
# ignores exactly these and nothing else (the list only shrinks)
KNOWN_PRIVATE: set[tuple[str, str]] = set()


def _private(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("_") and not (last.startswith("__") and last.endswith("__"))


def private_uses(module: str, path: Path, known_modules: set[str]) -> set[str]:
    """``module.name`` for each private name of another attnlab module that ``module`` imports or
    reads as an attribute (``io._umask`` after ``from .. import io``)."""
    found = set()
    bound: dict[str, str] = {}  # local name -> attnlab module it stands for
    for _, names in import_statements(module, path):
        for full in names:
            owner, _, name = full.rpartition(".")
            if full in known_modules:
                bound[name] = full
            elif _private(name) and owner != module:
                found.add(full)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            if _private(node.attr) and bound[node.value.id] != module:
                found.add(f"{bound[node.value.id]}.{node.attr}")
    return found


def test_no_private_name_is_used_across_modules():
    known = {m for m, _ in modules()}
    wrong = {
        f"{module} uses {name}"
        for module, path in modules()
        for name in private_uses(module, path, known)
        if (module, name) not in KNOWN_PRIVATE
    }
    assert not wrong, f"make these public (no leading _) in the module that defines them: {sorted(wrong)}"


def test_the_private_check_sees_an_import_a_lazy_import_and_an_attribute(tmp_path):
    bad = tmp_path / "site.py"
    bad.write_text(
        "from ..io import _umask, write_json\n"
        "from .. import runner\n"
        "def f():\n"
        "    from ..lab.plan import _core\n"
        "    return runner._check_resumable, runner.__name__, _umask\n",
        encoding="utf-8",
    )
    found = private_uses("web.site", bad, {"io", "runner", "lab.plan", "web.site"})
    assert found == {"io._umask", "lab.plan._core", "runner._check_resumable"}


def test_a_module_may_use_its_own_private_names(tmp_path):
    ok = tmp_path / "plan.py"
    ok.write_text("from .plan import _core\n", encoding="utf-8")
    assert private_uses("lab.plan", ok, {"lab.plan"}) == set()


# ---------------------------------------------------------------------------- one key=value parser
def test_set_and_grid_refuse_a_malformed_item_through_one_parser(monkeypatch):
    import attnlab.keyvalue as KV
    from attnlab.errors import AttnlabError
    from attnlab.lab.sweep import parse_grid

    seen = []
    real = KV.pairs

    def spy(items, option, *a, **k):
        seen.append(option)
        return real(items, option, *a, **k)

    monkeypatch.setattr(KV, "pairs", spy)
    import attnlab.lab.sweep as sweep

    monkeypatch.setattr(sweep, "pairs", spy)
    assert parse_grid(["d_head=32,64"]) == {"d_head": ["32", "64"]}
    assert seen == ["--grid"]
    for bad in ("d_head", "=32"):
        with pytest.raises(AttnlabError, match="--grid expects KEY=V1,V2"):
            parse_grid([bad])
    with pytest.raises(AttnlabError, match="--set expects key=value"):
        real(["d_model"], "--set")
    assert real([" d_model = 64 "], "--set") == [("d_model", "64")]


def kv_splitters(tree: ast.AST) -> list[str]:
    """Functions that split a command-line item at its "=" and refuse one without it (the shape of a
    key=value parser): an ``"=" not in x`` test and an ``x.split("=", 1)`` / ``x.partition("=")``."""
    out = []
    for f in ast.walk(tree):
        if not isinstance(f, ast.FunctionDef):
            continue
        tests = any(
            isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Constant)
            and n.left.value == "="
            and any(isinstance(o, ast.NotIn) for o in n.ops)
            for n in ast.walk(f)
        )
        splits = any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("split", "partition")
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value == "="
            for n in ast.walk(f)
        )
        if tests and splits:
            out.append(f.name)
    return out


def test_no_second_key_value_parser():
    # --set (config.Config.from_overrides) and --grid both split their items with keyvalue.pairs
    wrong = []
    for module, path in modules():
        if module != "keyvalue":
            wrong += [f"{module}.{name}" for name in kv_splitters(ast.parse(path.read_text(encoding="utf-8")))]
    assert wrong == [], f"parse KEY=VALUE items with attnlab.keyvalue.pairs: {wrong}"


def test_the_key_value_check_sees_a_second_parser():
    src = 'def parse(items):\n    for i in items:\n        if "=" not in i:\n            raise E\n        k, v = i.split("=", 1)\n'
    assert kv_splitters(ast.parse(src)) == ["parse"]


# ---------------------------------------------------------------------- one number-list formatter
def number_list_formatters(tree: ast.AST) -> list[str]:
    """Functions whose whole body returns ``SEP.join(<each number formatted> for x in xs)`` (perhaps
    ``or`` / ``if`` a default): a formatter of a list of numbers."""
    out = []
    for f in ast.walk(tree):
        if not isinstance(f, ast.FunctionDef):
            continue
        body = [s for s in f.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            continue
        for n in ast.walk(body[0]):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "join"
                and isinstance(n.func.value, ast.Constant)
                and n.args
                and isinstance(n.args[0], ast.GeneratorExp)
                and any(isinstance(e, ast.FormattedValue) and e.format_spec for e in ast.walk(n.args[0].elt))
                or (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "join"
                    and n.args
                    and isinstance(n.args[0], ast.GeneratorExp)
                    and any(getattr(getattr(e, "func", None), "id", None) == "format" for e in ast.walk(n.args[0].elt))
                )
            ):
                out.append(f.name)
                break
    return out


# formatters of entries being folded elsewhere, each with where it goes
KNOWN_FORMATTERS: set[tuple[str, str]] = set()


def test_one_number_list_formatter():
    found = [
        (module, name)
        for module, path in modules()
        for name in number_list_formatters(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert ("lab.common", "number_list") in found  # the check sees the one there is
    wrong = [f"{m}.{n}" for m, n in found if (m, n) != ("lab.common", "number_list") and (m, n) not in KNOWN_FORMATTERS]
    assert wrong == [], f"list numbers with attnlab.lab.common.number_list: {wrong}"


def test_the_formatter_check_sees_a_second_one():
    src = 'def _fmt(xs):\n    return ", ".join(f"{x:+.3f}" for x in xs) or "-"\n'
    assert number_list_formatters(ast.parse(src)) == ["_fmt"]
    assert number_list_formatters(ast.parse('def g(xs):\n    return ", ".join(str(x) for x in xs)\n')) == []
