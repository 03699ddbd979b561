"""The registry of claims cannot be rewritten: seven ways to tamper with a registration, each caught.

``attnlab claims --check`` compares the claims judged now with the registry (specification, kind,
section, statement, the chapter's words; claims missing on either side), and the registry with its own
committed history (append-only from the version that carries ``sealed``). The table below is the one
the closing note of this change reports: every tamper is refused, and the honest path — a new
amendment — is accepted.
"""

import copy
import json
import subprocess
from pathlib import Path

import pytest

from attnlab import claims_registry as R
from attnlab import stats as S
from attnlab.verdicts import claim

ROOT = Path(__file__).resolve().parents[1]
DATE = "2026-12-04T00:00:00+00:00"


def judged(statement="gap is large", sesoi=0.1, book="0.95"):
    inputs = {"gap": [0.9, 1.0, 0.95]}
    return claim(
        "big_gap", "§1.2", statement, S.effect(inputs["gap"], direction=+1, sesoi=sesoi), inputs=inputs, book=book
    )


def other():
    inputs = {"x": [1.0, 1.0, 1.0]}
    return claim("other", "§1.3", "x is one", S.every(inputs["x"], 0.5, 1.5), inputs=inputs)


@pytest.fixture
def registry():
    reg = {"kind": R.KIND, "sealed": {"date": DATE}, "claims": {}}
    R.register(reg, judged(), DATE)
    R.register(reg, other(), DATE)
    return reg


def test_the_honest_registry_passes(registry):
    assert R.check(registry, [judged(), other()]) == []


@pytest.mark.parametrize(
    "tamper, expect",
    [
        ("a parameter changed in code", "params.sesoi: 0.1 → 0.05"),
        ("a registry entry deleted", "not in the registry"),
        ("an id judged but never registered", "not in the registry"),
        ("the statement rewritten in the registry", "statement: gap is small → gap is large"),
        ("the chapter's value rewritten in the registry", "book: 0.17 → 0.95"),
        ("the statement changed in code", "statement: gap is large → gap is enormous"),
        ("a registered claim vanished from the code", "other: registered, but no entry judges it now"),
    ],
)
def test_each_tamper_against_the_code_is_caught(registry, tamper, expect):
    claims = [judged(), other()]
    reg = copy.deepcopy(registry)
    if tamper == "a parameter changed in code":
        claims[0] = judged(sesoi=0.05)
    elif tamper == "a registry entry deleted":
        del reg["claims"]["big_gap"]
    elif tamper == "an id judged but never registered":
        new = claim("new_id", "§", "s", S.exact(True))
        claims.append(new)
        expect = "new_id: not in the registry"
    elif tamper == "the statement rewritten in the registry":
        reg["claims"]["big_gap"]["statement"] = "gap is small"
    elif tamper == "the chapter's value rewritten in the registry":
        reg["claims"]["big_gap"]["book"] = "0.17"
    elif tamper == "the statement changed in code":
        claims[0] = judged(statement="gap is enormous")
    elif tamper == "a registered claim vanished from the code":
        claims = claims[:1]
    problems = R.check(reg, claims)
    assert any(expect in p for p in problems), problems


def test_an_amendment_is_the_honest_way_and_a_withdrawal_keeps_the_history(registry):
    reg = copy.deepcopy(registry)
    reworded = judged(statement="gap is enormous")
    a = R.amend(reg, reworded, "reworded after reading §1.2 again", DATE)
    assert a["words"] == {"statement": "gap is enormous"} and a["words_from"] == {"statement": "gap is large"}
    assert a["spec"] == R.spec_key(judged()["spec"])  # the specification is unchanged by a rewording
    assert R.check(reg, [reworded, other()]) == []
    R.withdraw(reg, "other", "the experiment was removed", DATE)
    assert R.check(reg, [reworded]) == [] and "other" in reg["claims"]
    with pytest.raises(ValueError, match="withdrawn already"):
        R.withdraw(reg, "other", "again", DATE)


# ---- the registry's own history ----------------------------------------------------------------


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def commit(root: Path, reg: dict, message: str) -> None:
    path = root / "data" / "claims_registry.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(reg, ensure_ascii=False, indent=1), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path, registry):
    git(tmp_path, "init", "-q")
    commit(tmp_path, registry, "register")
    return tmp_path


def history(root: Path) -> list[str]:
    return R.history_problems(root / "data" / "claims_registry.json")[0]


@pytest.mark.parametrize(
    "tamper, expect",
    [
        ("registered spec edited with the code (no amendment)", "its registered spec was edited"),
        ("registered statement edited", "its registered statement was edited"),
        ("an amendment removed", "amendment 1 of 1 was edited, reordered or removed"),
        ("an amendment's reason edited", "amendment 1 of 1 was edited, reordered or removed"),
        ("a registration removed", "big_gap: its registration was removed"),
        ("first data moved later", "its first data moved later"),
        ("the seal removed", "sealed:"),
    ],
)
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "on disk"])
def test_a_rewrite_of_the_committed_registry_is_refused(repo, registry, tamper, expect, committed):
    reg = copy.deepcopy(registry)
    R.amend(reg, judged(sesoi=0.2), "a stricter SESOI from §1.2's words", DATE)
    reg["claims"]["big_gap"]["first_data"]["date"] = DATE
    commit(repo, reg, "amend")
    assert history(repo) == []
    bad = copy.deepcopy(reg)
    e = bad["claims"]["big_gap"]
    if tamper.startswith("registered spec"):
        e["spec"] = R.spec_key(judged(sesoi=0.2)["spec"])
        e["amendments"] = []
    elif tamper == "registered statement edited":
        e["statement"] = "gap is huge"
    elif tamper == "an amendment removed":
        e["amendments"] = []
    elif tamper == "an amendment's reason edited":
        e["amendments"][0]["why"] = "another reason"
    elif tamper == "a registration removed":
        del bad["claims"]["big_gap"]
    elif tamper == "first data moved later":
        e["first_data"]["date"] = "2027-01-01T00:00:00+00:00"
    elif tamper == "the seal removed":
        del bad["sealed"]
    if committed:
        commit(repo, bad, "tamper")
    else:
        (repo / "data" / "claims_registry.json").write_text(json.dumps(bad), encoding="utf-8")
    problems = history(repo)
    assert any(expect in p for p in problems), problems


def test_appending_is_accepted(repo, registry):
    reg = copy.deepcopy(registry)
    R.amend(reg, judged(sesoi=0.2), "stricter", DATE)
    commit(repo, reg, "amend")
    R.register(reg, claim("late", "§", "s", S.exact(True)), DATE)
    reg["claims"]["big_gap"]["post_hoc"] = True  # may become post hoc, never stop being one
    commit(repo, reg, "register another")
    assert history(repo) == []


def test_without_git_history_the_check_says_so(tmp_path, registry):
    path = tmp_path / "claims_registry.json"
    path.write_text(json.dumps(registry), encoding="utf-8")
    problems, note = R.history_problems(path)
    assert problems == [] and "history not checked" in note


def test_the_committed_registry_is_sealed_and_its_history_clean():
    path = ROOT / "data" / "claims_registry.json"
    if not (ROOT / ".git").exists():
        pytest.skip("no git history in this copy (a wheel or an export)")
    assert json.loads(path.read_text(encoding="utf-8"))["sealed"]
    problems, note = R.history_problems(path)
    assert problems == [], problems
    assert "since it was sealed" in note
