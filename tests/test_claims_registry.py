"""The registry of claims (data/claims_registry.json) and ``attnlab claims --check``.

The check judges every claim again from the committed JSON and compares its specification in code
with the registration plus amendments: on the committed data it passes; a registry with one
parameter changed, or without a claim, fails naming that claim. `make test` runs this file, so CI
refuses a specification changed in code without an amendment.
"""

import copy
import json
from pathlib import Path

import pytest

from attnlab import claims_registry as R
from attnlab import stats as S
from attnlab.cli import build_parser
from attnlab.cli import claims as C
from attnlab.verdicts import claim

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


@pytest.fixture(scope="module")
def registry():
    return json.loads((DATA / "claims_registry.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def claims():
    return C.current_claims(DATA)


def run_check(registry_path: Path, capsys) -> tuple[int, str]:
    args = build_parser().parse_args(["claims", "--check", "--registry", str(registry_path), "--data", str(DATA)])
    rc = C.main(args)
    return rc, capsys.readouterr().out


def test_check_passes_on_the_committed_data(capsys, claims):
    rc, out = run_check(DATA / "claims_registry.json", capsys)
    assert rc == 0, out
    assert f"{len(claims)} 条论断都符合登记" in out


def test_every_claim_is_registered_with_its_history(registry, claims):
    entries = registry["claims"]
    assert {c["id"] for c in claims} <= set(entries)
    now = {c["id"]: c["verdict"] for c in claims}
    for cid, e in entries.items():
        assert e["registered"]["commit"], cid
        # a claim with no first data has never been judged PASS / FAIL / INCONCLUSIVE (reported, NA)
        assert e["first_data"]["commit"] or now[cid] in ("REPORTED", "NA"), cid
        assert e["post_hoc"] in (True, False)
        for a in e["amendments"]:  # one entry per change, each with its why
            # commit: back-filled from history, or (recorded by --amend) the commit that adds the entry: git log finds it
            assert a["commit"] or a["how"].startswith("recorded by `attnlab claims --amend`"), cid
            assert a["date"] and a["what"] and a["why"], cid


def _amended_param(registry: dict, cid: str, key: str = "sesoi") -> dict:
    out = copy.deepcopy(registry)
    spec = R.effective_spec(out["claims"][cid])
    spec["params"][key] = spec["params"][key] * 2 + 0.01
    return out


def test_check_fails_naming_a_claim_whose_parameter_changed(registry, tmp_path, capsys):
    cid = "qk_small_gap_appears"
    p = tmp_path / "claims_registry.json"
    p.write_text(json.dumps(_amended_param(registry, cid)), encoding="utf-8")
    rc, out = run_check(p, capsys)
    assert rc == 1
    named = [line for line in out.splitlines() if line.startswith(f"{cid}:")]
    assert named and "params.sesoi" in named[0], out
    assert sum(line.split(":")[0] in registry["claims"] for line in out.splitlines()) == 1  # only that one


def test_check_names_a_claim_missing_from_the_registry(registry, claims):
    reg = copy.deepcopy(registry)
    del reg["claims"]["kv_formula_MQA"]
    problems = R.check(reg, claims)
    assert len(problems) == 1 and problems[0].startswith("kv_formula_MQA: not in the registry")


def test_an_amendment_is_what_a_claim_is_held_to(registry, claims):
    reg = _amended_param(registry, "qk_small_gap_appears")
    e = reg["claims"]["qk_small_gap_appears"]
    c = next(c for c in claims if c["id"] == "qk_small_gap_appears")
    e["amendments"].append({"date": "today", "commit": "x", "what": "sesoi back", "why": "t", "spec": c["spec"]})
    assert R.check(reg, claims) == []


def test_amend_records_one_entry_per_change_and_the_check_then_passes(registry, claims):
    reg = _amended_param(registry, "qk_small_gap_appears")  # as if the code moved the SESOI
    c = next(c for c in claims if c["id"] == "qk_small_gap_appears")
    n = len(reg["claims"]["qk_small_gap_appears"]["amendments"])
    a = R.amend(reg, c, "the SESOI is half the book's gap", "2026-12-02T00:00:00+00:00")
    assert a["what"].startswith("params.sesoi:") and a["verdict_before"] in ("PASS", "FAIL", "INCONCLUSIVE")
    assert len(reg["claims"]["qk_small_gap_appears"]["amendments"]) == n + 1
    assert R.check(reg, claims) == []
    with pytest.raises(ValueError, match="nothing to amend"):
        R.amend(reg, c, "again", "2026-12-02T00:00:00+00:00")
    del reg["claims"]["kv_formula_MQA"]
    R.register(reg, next(c for c in claims if c["id"] == "kv_formula_MQA"), "2026-12-02T00:00:00+00:00")
    assert R.check(reg, claims) == []


def test_registered_spec_is_judged_on_todays_numbers():
    inputs = {"diff": [0.05, 0.06, 0.07]}
    c = claim("x", "§", "s", S.effect(inputs["diff"], direction=+1, sesoi=0.01), inputs=inputs)
    assert c["spec"] == {"rule": "effect", "params": {"direction": 1, "sesoi": 0.01}, "reads": "diff"}
    assert c["verdict"] == "PASS"
    strict = {"spec": {"rule": "effect", "params": {"direction": 1, "sesoi": 0.5}, "reads": "diff"}}
    assert R.registered_verdict(strict, c) == "FAIL"  # the whole interval is below a SESOI of 0.5
    assert R.registered_verdict({"spec": R.spec_key(c["spec"])}, c) == "PASS"
    words = {"spec": {"rule": None, "criterion": "gap > 0.1"}, "post_hoc": True}
    assert R.registered_verdict(words, c) is None
    assert "事后" in R.mark(words, c)


def test_a_change_of_kind_is_checked_and_amended_like_a_change_of_rule():
    inputs = {"gap": [0.3, 0.31, 0.29]}
    book = claim("q", "§", "s", S.every(inputs["gap"], 0.8, 1.0), inputs=inputs)
    reg = {"claims": {}}
    R.register(reg, book, "2026-12-01T00:00:00+00:00")
    asked = claim("q", "§", "s", S.reported("gap 0.3"), inputs=inputs, kind="question")
    assert R.check(reg, [asked]) == [
        "q: the spec in code differs from the registered one: rule: every → reported; kind: book → question"
    ]
    a = R.amend(reg, asked, "the chapter asks it", "2026-12-02T00:00:00+00:00")
    assert a["kind_from"] == "book" and a["kind"] == "question" and a["what"].endswith("kind: book → question")
    assert a["verdict_before"] == "FAIL"  # the every rule judged again on the input it read
    assert R.check(reg, [asked]) == [] and R.effective_kind(reg["claims"]["q"]) == "question"
    mark = R.mark(reg["claims"]["q"], asked)
    assert "registered spec: FAIL" in mark and "kind was: book" in mark
    # a second amendment: the mark shows the verdict of the spec in force before it too
    relabelled = claim("q", "§", "s", S.every(inputs["gap"], 0.2, 0.4), inputs=inputs, kind="beyond")
    R.amend(reg, relabelled, "ours", "2026-12-02T01:00:00+00:00")
    mark = R.mark(reg["claims"]["q"], relabelled)
    assert "registered spec: FAIL" in mark and "spec before the latest amendment: REPORTED" in mark
    assert "kind was: question" in mark
    with pytest.raises(ValueError, match="nothing to amend"):
        R.amend(reg, relabelled, "again", "2026-12-02T02:00:00+00:00")
    kind_only = claim("q", "§", "s", S.every(inputs["gap"], 0.2, 0.4), inputs=inputs, kind="sanity")
    assert R.check(reg, [kind_only]) == ["q: the spec in code differs from the registered one: kind: beyond → sanity"]
    assert R.amend(reg, kind_only, "a check of ours", "2026-12-02T03:00:00+00:00")["what"] == "kind: beyond → sanity"


def test_spec_of_every_rule_comes_from_code():
    j = S.all_of([S.every([1.0, 2.0], 0.0, float("inf")), S.equivalence([0.01, -0.02, 0.0], 0.1), S.exact(True)])
    spec = j.spec
    assert [p["rule"] for p in spec["parts"]] == ["every", "equivalence", "exact"]
    assert spec["parts"][0]["params"] == {"lo": 0.0, "hi": "inf"}  # JSON has no infinity
    assert S.judge_spec(spec).verdict == j.verdict
    assert S.value([1.0, 1.1, 0.9], 1.0, tol=0.5).spec["params"] == {"book": 1.0, "tol": 0.5}


def test_counts_say_before_after_and_amended(registry, claims):
    c = R.counts(registry, [x["id"] for x in claims])
    assert c["before"] + c["post_hoc"] == len(claims) and c["unregistered"] == 0
    assert c["amended"] == sum(bool(e["amendments"]) for e in registry["claims"].values())
    assert c["post_hoc"] == c["registered_after"] + c["amended_after"]
    assert "事后" in R.count_text(c)


def test_a_claim_amended_after_its_data_is_post_hoc():
    """Registered before its data is not enough: a specification changed once the numbers were seen is
    post hoc, and the mark says which kind; an amendment before the data keeps it fixed beforehand."""
    e = {
        "post_hoc": False,
        "first_data": {"date": "2026-11-20T00:00:00+00:00"},
        "amendments": [{"date": "2026-11-10T00:00:00+00:00", "from": None}],
    }
    assert R.status(e) == "before"
    later = {**e, "amendments": [*e["amendments"], {"date": "2026-11-21T00:00:00+00:00", "from": None}]}
    assert R.status(later) == "post_hoc" and R.amended_after_data(later)
    assert "amended after its data" in R.mark(later, {"id": "x"})
    assert R.status({**e, "post_hoc": True}) == "post_hoc"
    assert "registered with or after its data" in R.mark({**e, "post_hoc": True}, {"id": "x"})
    reg = {"claims": {"a": e, "b": later, "c": {**e, "post_hoc": True}}}
    c = R.counts(reg, ["a", "b", "c", "d"])
    assert (c["before"], c["post_hoc"], c["registered_after"], c["amended_after"]) == (1, 2, 1, 1)
    assert (c["amended"], c["unregistered"]) == (3, 1)


def _backfill():
    import importlib.util

    spec = importlib.util.spec_from_file_location("backfill_registry", ROOT / "scripts" / "backfill_registry.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_backfill_reads_parameters_off_old_records_and_compares_only_what_both_show():
    b = _backfill()
    old = {
        "rule": "effect",
        "detail": "mean +0.01, 95% CI [-0.02, +0.04] over 3 seeds; stated > 0: wholly below the smallest effect "
        "of interest 0.085",
        "inputs": {"gap": [0.0, 0.01, 0.02], "sesoi": 0.085},
    }
    seen = b.observed(old)
    assert seen["params"] == {"direction": 1, "sesoi": 0.085} and seen["shown"] == {"input:sesoi": 0.085}
    later = dict(old, detail="mean +0.05, 95% CI [+0.01, +0.09] over 3 seeds; stated > 0: excludes 0")
    assert b.changes(seen, b.observed(later)) == []  # the SESOI is not printed on a PASS: not a change
    moved = dict(later, inputs={"gap": [0.0], "sesoi": 0.1})
    assert b.changes(seen, b.observed(moved)) == ["input:sesoi: 0.085 → 0.1"]
    words = b.observed({"expected": "0.17 within mean ± 0.146 (max(2 sd, 10%))", "pass": True})
    assert words == {"rule": None, "criterion": "0.17 within mean ± # (max(2 sd, 10%))", "reconstructed": True}
    assert b.changes(words, b.observed({"expected": "0.17 within mean ± 0.234 (max(2 sd, 10%))"})) == []
    assert b.changes(words, seen)[0] == "rule: criterion in words → effect"
    code = {"rule": "every", "params": {"lo": 0.0, "hi": "inf"}, "reads": "x"}
    parsed = b.observed({"rule": "every", "detail": "3 of 3 seeds inside [0, inf]"})
    assert b.changes(parsed, code) == []  # "inf" in JSON is infinity


def test_reports_mark_post_hoc_claims(registry):
    from attnlab.report.lab_book import load_book, render_markdown

    book, docs = load_book(ROOT)
    md = render_markdown(book, docs, registry=registry)
    posthoc = [cid for cid, e in registry["claims"].items() if R.status(e) == "post_hoc"]
    assert posthoc and "事后 / post hoc" in md and "登记 / registered" in md
    c = R.counts(registry, registry["claims"])
    assert f"{c['post_hoc']} 条事后 / post hoc" in md.split("\n## ")[0]  # the headline says it


def test_register_says_registered_only_once_the_registry_is_written(registry, tmp_path, capsys, monkeypatch):
    """A disk that refuses the write: one line saying nothing was registered, never "registered" first."""
    import errno

    import attnlab.io as aio
    from attnlab.cli import main

    cid = "qk_small_gap_appears"
    p = tmp_path / "claims_registry.json"
    without = copy.deepcopy(registry)
    del without["claims"][cid]
    p.write_text(json.dumps(without), encoding="utf-8")
    before = p.read_bytes()

    def full(path, obj, indent=1):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(aio, "write_json", full)
    capsys.readouterr()
    assert main(["claims", "--register", cid, "--registry", str(p), "--data", str(DATA)]) == 2
    out, err = capsys.readouterr()
    assert "registered" not in out and p.read_bytes() == before
    (line,) = err.strip().splitlines()
    assert "cannot write the registry" in line and "No space left" in line and "nothing was registered" in line
    monkeypatch.undo()
    assert main(["claims", "--register", cid, "--registry", str(p), "--data", str(DATA)]) == 0
    assert (
        f"{cid}: registered" in capsys.readouterr().out and cid in json.loads(p.read_text(encoding="utf-8"))["claims"]
    )
