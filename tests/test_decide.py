"""attnlab book --decide: the planner on hand-made per-seed numbers, and --dry-run end to end."""

import json

import pytest

from attnlab import Config
from attnlab import stats as S
from attnlab import verdicts as V
from attnlab.cli import main
from attnlab.lab import decide as D
from attnlab.lab.runs import BOOK_SEED
from attnlab.runner import Run

CFG = Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20, max_steps=10)


def doc_with(claims, seeds=3):
    return {"results": {"per_seed": {str(BOOK_SEED + i): {} for i in range(seeds)}}, "claims": claims}


def inconclusive(cid, diffs, sesoi=0.01):
    return V.claim(cid, "§x", "s", S.effect(diffs, sesoi=sesoi), inputs={"d": diffs})


def runs_of(tag):
    return lambda seed, cid: [
        Run(f"{tag}_a_s{seed}", CFG.replace(seed=seed)),
        Run(f"{tag}_b_s{seed}", CFG.replace(seed=seed)),
    ]


def test_proposes_the_seeds_the_judge_names():
    c = inconclusive("mqa", [0.077, -0.014, 0.088], sesoi=0.01)
    qs = D.questions({"kv": doc_with([c])})
    assert [(q.claim, q.n_now, q.n_needed) for q in qs] == [("mqa", 3, c["n_needed"])]
    p = D.plan(qs, {"kv": runs_of("kv")}, finished=lambda r: False, cost_s=lambda r: 100.0)
    seeds = sorted({r.cfg.seed for r in p.runs})
    assert seeds == [BOOK_SEED + i for i in range(3, c["n_needed"])]  # exactly the missing seeds
    assert len(p.runs) == 2 * (c["n_needed"] - 3) and p.core_s == 100.0 * len(p.runs)


def test_respects_the_budget_cheapest_first():
    cheap = inconclusive("cheap", [0.3, 0.1, 0.35])  # needs few seeds
    dear = inconclusive("dear", [0.077, -0.014, 0.088])  # needs many
    qs = D.questions({"a": doc_with([cheap]), "b": doc_with([dear])})
    need_cheap = cheap["n_needed"] - 3
    budget = 2 * need_cheap * 100.0 / 2 + 1  # wall seconds with 2 workers: the cheap one fits, not both
    p = D.plan(
        qs,
        {"a": runs_of("a"), "b": runs_of("b")},
        finished=lambda r: False,
        cost_s=lambda r: 100.0,
        budget_s=budget,
        workers=2,
    )
    assert [q.claim for q, _ in p.chosen] == ["cheap"]
    assert [q.claim for q, _ in p.skipped] == ["dear"] and "budget" in p.skipped[0][1]
    assert p.wall_s <= budget


def test_never_retrains_a_finished_or_recorded_run():
    c = inconclusive("q", [0.3, 0.1, 0.35])
    done = {f"a_a_s{BOOK_SEED + 3}"}
    qs = D.questions({"a": doc_with([c])})
    p = D.plan(qs, {"a": runs_of("a")}, finished=lambda r: r.name in done, cost_s=lambda r: 1.0)
    names = {r.name for r in p.runs}
    assert not names & done
    assert not any(r.cfg.seed < BOOK_SEED + 3 for r in p.runs)  # seeds the JSON already records
    # a recorded seed further up (an earlier --decide) is not trained again either
    q = D.Question("a", "q", 3, 5, recorded=(BOOK_SEED, BOOK_SEED + 1, BOOK_SEED + 3))
    assert D.new_seeds(q) == [BOOK_SEED + 2, BOOK_SEED + 4]


def test_shared_runs_count_once_and_unsettleable_questions_are_skipped():
    a = inconclusive("a", [0.3, 0.1, 0.35])
    b = inconclusive("b", [0.3, 0.12, 0.33])
    qs = D.questions({"x": doc_with([a, b])})
    p = D.plan(qs, {"x": runs_of("x")}, finished=lambda r: False, cost_s=lambda r: 1.0)
    assert len({r.name for r in p.runs}) == len(p.runs) == 2 * (max(a["n_needed"], b["n_needed"]) - 3)
    never = V.claim("v", "§x", "s", S.value([0.24, 0.05, 0.04], 0.17, tol=0.085))
    assert never["n_needed"] is None and D.questions({"x": doc_with([never])}) == []
    huge = D.Question("x", "h", 3, 500)
    assert D.plan([huge], {"x": runs_of("x")}, finished=lambda r: False, cost_s=lambda r: 1.0).skipped


def test_a_claim_without_runs_per_seed_is_skipped_not_planned():
    """An entry that adds seeds for some of its claims only (its other claims are a stand-alone
    command's): a claim it gives no runs for is skipped with the reason, never chosen as free."""
    a, b = inconclusive("a", [0.3, 0.1, 0.35]), inconclusive("b", [0.3, 0.12, 0.33])
    qs = D.questions({"x": doc_with([a, b])})
    some = lambda seed, cid: runs_of("x")(seed, cid) if cid == "a" else []  # noqa: E731
    p = D.plan(qs, {"x": some}, finished=lambda r: False, cost_s=lambda r: 1.0)
    assert [q.claim for q, _ in p.chosen] == ["a"] and p.runs
    assert [(q.claim, why) for q, why in p.skipped] == [("b", "this claim has no runs per seed to add here")]


@pytest.mark.parametrize("text, secs", [("2h", 7200), ("90m", 5400), ("1h30m", 5400), ("45s", 45), ("3600", 3600)])
def test_parse_duration(text, secs):
    assert D.parse_duration(text) == secs


@pytest.mark.parametrize("text", ["", "two hours", "0", "-1h", "5d"])
def test_bad_budget_is_refused(text):
    with pytest.raises(D.DecideError, match="--budget"):
        D.parse_duration(text)


def test_dry_run_prints_the_plan_and_trains_nothing(tmp_path, capsys):
    """On a copy of the committed lab book: the plan names the kv claims and no run folder appears."""
    from attnlab.corpus import REPO_ROOT

    (tmp_path / "data" / "lab_book").mkdir(parents=True)
    kv = REPO_ROOT / "data" / "lab_book" / "kv_cache.json"
    (tmp_path / "data" / "lab_book" / "kv_cache.json").write_text(kv.read_text(encoding="utf-8"), encoding="utf-8")
    rc = main(["book", "--decide", "--dry-run", "--only", "kv_cache", "--out", str(tmp_path), "--budget", "10h"])
    out = capsys.readouterr().out
    assert rc == 0 and "decide plan" in out and "kv_cache.mqa_costs_some_quality" in out
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("ckpt.pt"))
    assert json.loads((tmp_path / "data" / "lab_book" / "kv_cache.json").read_text(encoding="utf-8"))["claims"]


def test_budget_without_decide_is_refused(capsys):
    assert main(["book", "--budget", "1h", "--no-train"]) == 2
    assert "add --decide" in capsys.readouterr().err


def test_no_progress_reaches_the_runner(tmp_path, monkeypatch):
    """`book --decide --no-progress` trains without a progress bar (one line per run instead)."""
    from attnlab import runner
    from attnlab.corpus import REPO_ROOT

    (tmp_path / "data" / "lab_book").mkdir(parents=True)
    lr = REPO_ROOT / "data" / "lab_book" / "lr_sensitivity.json"
    (tmp_path / "data" / "lab_book" / "lr_sensitivity.json").write_text(
        lr.read_text(encoding="utf-8"), encoding="utf-8"
    )
    seen = []
    monkeypatch.setattr(runner, "execute", lambda runs, *a, **kw: seen.append(kw["options"].progress) or {})
    main(["book", "--decide", "--only", "lr_sensitivity", "--out", str(tmp_path), "--budget", "1h", "--no-progress"])
    assert seen and all(p is False for p in seen)
