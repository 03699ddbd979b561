"""Every claim id of the committed data has, somewhere under tests/, a test asserting each verdict
its rule can give: PASS and FAIL always, INCONCLUSIVE where the rule can be undecided (effect, value,
band, equivalence, or an all_of with such a part), REPORTED / NA for the rules that give only those.

The ids come from the committed JSON (data/ch1_case.json, data/lab_book/*.json,
data/failure_symptoms.json, data/head_portrait.json) and the verdicts a rule can give from the
specification stored with each claim, so a claim re-specified in code (and re-judged into the JSON)
is held to its new rule. The check reads the tests' source: an id must appear literally (an id built
with an f-string is invisible to it, and to a reader searching for the id), in the same test
function as the verdict it expects. A test function covers (id, verdict) when both appear as string
constants in it, its decorators (``pytest.mark.parametrize`` cases) or a module-level table its cases
come from (``BREAK = {id: mutation}`` with ``@pytest.mark.parametrize("cid", sorted(BREAK))``). A
verdict written as a dict value (``{id: "PASS"}``) or in a tuple with ids (``(id, "FAIL")``) belongs to
those ids only; a table named only in the test's body lends it just such pairs; a verdict in a weak
comparison (``in``, ``not in``, ``!=``) covers nothing. What this cannot see
is whether the test feeds the real judge: that is each entry's test file's job (tests/lab/)."""

import ast
import json
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = [
    ROOT / "data" / "ch1_case.json",
    ROOT / "data" / "failure_symptoms.json",
    ROOT / "data" / "head_portrait.json",
    *sorted((ROOT / "data" / "lab_book").glob("*.json")),
]
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "REPORTED", "NA")
UNDECIDABLE = ("effect", "value", "band", "equivalence")  # rules with an INCONCLUSIVE between PASS and FAIL
DECISIVE = ("every", "exact")  # rules that only PASS or FAIL


def allowed(spec: dict) -> set[str]:
    """The verdicts a claim's rule (its stored specification, or just its rule's name) can give."""
    rule = spec.get("rule")
    if rule in UNDECIDABLE:
        return {"PASS", "FAIL", "INCONCLUSIVE"}
    if rule in DECISIVE:
        return {"PASS", "FAIL"}
    if rule == "reported":
        return {"REPORTED"}
    if rule == "na":
        return {"NA"}
    if rule == "all_of":
        parts = spec.get("parts")
        if not parts:  # an old record without its parts: assume the strictest
            return {"PASS", "FAIL", "INCONCLUSIVE"}
        return {"PASS", "FAIL"} | ({"INCONCLUSIVE"} & set().union(*(allowed(p) for p in parts)))
    raise ValueError(f"a claim with the unknown rule {rule!r}: teach tests/test_claim_ids_tested.py its verdicts")


def _claims(obj):
    if isinstance(obj, dict):
        if {"id", "verdict", "rule"} <= set(obj):
            yield obj
        for v in obj.values():
            yield from _claims(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _claims(v)


@cache
def committed() -> dict[str, set[str]]:
    """Each claim id of the committed data -> the verdicts its rule can give: the union over the
    stored specifications of the files that carry it (data/failure_symptoms.json and
    data/head_portrait.json store none: their ids are read from the lab book's records, or, for an
    id only they carry, from the rule's name)."""
    specs: dict[str, list[dict]] = {}
    bare: dict[str, list[dict]] = {}
    for path in DATA:
        for c in _claims(json.loads(path.read_text(encoding="utf-8"))):
            (specs if c.get("spec") else bare).setdefault(c["id"], []).append(c.get("spec") or {"rule": c["rule"]})
    return {cid: set().union(*map(allowed, specs.get(cid) or bare[cid])) for cid in specs.keys() | bare.keys()}


def _string(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def asserted_pairs(source: str, ids: set[str]) -> set[tuple[str, str]]:
    """The (claim id, verdict) pairs the test functions of one test module assert (see the module
    docstring for what counts)."""
    tree = ast.parse(source)
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    tables: dict[str, ast.AST] = {}  # module-level name -> its value
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    tables[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            tables[stmt.target.id] = stmt.value

    def weak(node) -> bool:
        while node in parent:
            node = parent[node]
            if isinstance(node, ast.Compare) and any(isinstance(o, ast.In | ast.NotIn | ast.NotEq) for o in node.ops):
                return True
        return False

    def owners(node) -> set[str]:
        """The ids a verdict constant belongs to: its dict key, or the ids in its tuple or list."""
        up = parent.get(node)
        if isinstance(up, ast.Dict) and node in up.values:
            key = _string(up.keys[up.values.index(node)])
            return {key} if key in ids else set()
        if isinstance(up, ast.Tuple | ast.List):
            return {s for s in map(_string, up.elts) if s in ids}
        return set()

    def reached(nodes) -> set[ast.AST]:
        """The module-level tables these nodes name, and those they name."""
        out: set[ast.AST] = set()
        todo = list(nodes)
        while todo:
            for node in ast.walk(todo.pop()):
                if isinstance(node, ast.Name) and node.id in tables and tables[node.id] not in out:
                    out.add(tables[node.id])
                    todo.append(tables[node.id])
        return out

    pairs: set[tuple[str, str]] = set()

    def scan(nodes) -> tuple[set[str], set[str]]:
        """The ids and the unowned verdicts in these nodes; the owned verdicts go straight to pairs."""
        seen, free = set(), set()
        for node in (n for top in nodes for n in ast.walk(top)):
            s = _string(node)
            if s in ids:
                seen.add(s)
            elif s in VERDICTS and not weak(node):
                bound = owners(node)
                pairs.update((i, s) for i in bound)
                if not bound:
                    free.add(s)
        return seen, free

    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith("test")):
            continue
        cases = [*fn.decorator_list, *reached(fn.decorator_list)]  # its parametrize cases and their tables
        for table in reached(fn.body) - set(cases):  # a table named in the body: only its written-out pairs
            scan([table])
        case_ids, case_free = scan(cases)
        statements = [scan([stmt]) for stmt in fn.body]
        all_ids = case_ids.union(*(i for i, _ in statements))
        all_free = case_free.union(*(v for _, v in statements))
        if len(all_ids) == 1:  # a test of one claim: every verdict it asserts is that claim's
            pairs |= {(i, v) for i in all_ids for v in all_free}
            continue
        # a test of several: an id and a verdict of the same statement, or either from the cases
        pairs |= {(i, v) for ids_, free in statements for i in ids_ for v in free}
        pairs |= {(i, v) for i in case_ids for v in all_free} | {(i, v) for i in all_ids for v in case_free}
    return pairs


@cache
def covered() -> dict[str, set[str]]:
    ids = set(committed())
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for cid, verdict in asserted_pairs(path.read_text(encoding="utf-8"), ids):
            out.setdefault(cid, set()).add(verdict)
    return out


def test_every_committed_file_has_claims():
    for path in DATA:
        assert any(True for _ in _claims(json.loads(path.read_text(encoding="utf-8")))), f"{path.name}: no claims"
    assert len(committed()) > 100


@pytest.mark.parametrize("cid", sorted(committed()))
def test_claim_id_has_a_test_for_each_verdict_its_rule_allows(cid):
    missing = committed()[cid] - covered().get(cid, set())
    assert not missing, (
        f"{cid}: no test under tests/ asserts {sorted(missing)}; give its judge hand-made results that must "
        f"give them, with the id written out (tests/lab/test_<entry>.py)"
    )


# ---------------------------------------------------------------------------------- the check's own tests
IDS = {"a_claim", "b_claim"}


def test_the_check_pairs_an_id_with_the_verdicts_of_its_own_test():
    src = """
import pytest
@pytest.mark.parametrize("xs, expected", [([1.0], "PASS"), ([2.0], "FAIL")])
def test_a(xs, expected):
    assert judge(xs)["a_claim"] == expected
def test_b():
    assert judge([3.0])["b_claim"] == "INCONCLUSIVE"
def helper():
    return {"b_claim": "PASS"}
"""
    assert asserted_pairs(src, IDS) == {("a_claim", "PASS"), ("a_claim", "FAIL"), ("b_claim", "INCONCLUSIVE")}


def test_the_check_binds_table_verdicts_to_their_ids_and_ignores_weak_ones():
    src = """
import pytest
BREAK = {"a_claim": lambda r: r, "b_claim": lambda r: r}
EXPECTED = {"a_claim": "PASS", "b_claim": "INCONCLUSIVE"}
CASES = [("a_claim", [1.0], "FAIL")]
@pytest.mark.parametrize("cid", sorted(BREAK))
def test_breaks(cid):
    assert judge(cid)[cid] == "FAIL"
def test_expected():
    assert judge() == EXPECTED
@pytest.mark.parametrize("cid, xs, expected", CASES)
def test_cases(cid, xs, expected):
    assert judge(xs)[cid] == expected
def test_weak():
    assert judge()["b_claim"] in ("PASS", "NA") and judge()["a_claim"] != "REPORTED"
NOTES = {("entry", "b_claim"): (3,)}
def test_a_table_of_the_body_lends_only_its_written_pairs():
    assert all(judge()[cid] == "REPORTED" for _, cid in NOTES)
"""
    assert asserted_pairs(src, IDS) == {
        ("a_claim", "FAIL"),
        ("b_claim", "FAIL"),
        ("a_claim", "PASS"),
        ("b_claim", "INCONCLUSIVE"),
    }


def test_the_check_does_not_see_an_id_built_with_an_f_string():
    src = """
def test_sizes():
    for d in (32, 256):
        assert judge()[f"lowers_d{d}"] == "PASS"
"""
    assert asserted_pairs(src, {"lowers_d32", "lowers_d256"}) == set()


@pytest.mark.parametrize(
    "spec, verdicts",
    [
        ({"rule": "effect"}, {"PASS", "FAIL", "INCONCLUSIVE"}),
        ({"rule": "exact", "ok": True}, {"PASS", "FAIL"}),
        ({"rule": "every"}, {"PASS", "FAIL"}),
        ({"rule": "reported"}, {"REPORTED"}),
        ({"rule": "na"}, {"NA"}),
        ({"rule": "all_of", "parts": [{"rule": "exact"}, {"rule": "every"}]}, {"PASS", "FAIL"}),
        ({"rule": "all_of", "parts": [{"rule": "exact"}, {"rule": "band"}]}, {"PASS", "FAIL", "INCONCLUSIVE"}),
    ],
)
def test_the_verdicts_a_rule_can_give(spec, verdicts):
    assert allowed(spec) == verdicts


def test_an_unknown_rule_is_named():
    with pytest.raises(ValueError, match="'vibes'"):
        allowed({"rule": "vibes"})
