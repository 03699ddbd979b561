"""The lab book: experiments as data, resumable runs, the JSON schema, the report, bad input.

Everything here runs the book at ``--quick`` scale (widths / 8, 20 steps) on a
part of the chapter; the numbers mean nothing, the plumbing is what is tested.
"""

from __future__ import annotations

import json
import math

import pytest

import book_checks
from attnlab.cli import main
from attnlab.corpus import REPO_ROOT
from attnlab.lab import EXPERIMENTS
from attnlab.lab import deep as D
from attnlab.lab import exercise2 as X
from attnlab.lab import runs as R
from attnlab.lab.labbook import BookError, section_key, select
from attnlab.lab.markov import markov_floor
from attnlab.verdicts import KINDS

pytestmark = pytest.mark.usefixtures("one_thread")


def book(tmp_path, *args):
    return main(["book", "--quick", "--no-progress", "--out", str(tmp_path), *args])


def test_registry_is_data():
    ids = [e.id for e in EXPERIMENTS]
    assert len(ids) == len(set(ids))
    runs = {}
    scale = R.Scale.make(False)
    for e in EXPERIMENTS:
        for r in e.runs(scale):
            assert runs.setdefault(r.name, r) == r, f"{r.name} declared twice with different configs"
    # the book shares the case's runs: same name, group and config as attnlab.lab.case.run
    from attnlab.lab.case.run import CaseSettings, case_runs

    groups, _ = case_runs(CaseSettings())
    case = {sp.name: sp.cfg for g in groups for sp in g}
    shared = [r for r in runs.values() if r.group == "case"]
    assert shared and all(case[r.name] == r.cfg for r in shared)
    assert sorted(EXPERIMENTS, key=lambda e: e.key()) == sorted(EXPERIMENTS, key=lambda e: e.key())
    assert section_key("§1.7.8") < section_key("§1.8.5") < section_key("§1.20.1")


@pytest.mark.parametrize("quick", [False, True])
def test_no_run_is_trained_twice_under_two_names(quick):
    """Two experiments needing the same model share one run (e.g. exercise 2's d_head 256 is the
    case's big pair), so nothing is retrained under another name."""
    scale = R.Scale.make(quick)
    assert book_checks.runs_named_twice(EXPERIMENTS, scale) == []
    assert X.exercise2_run(scale, 256, False, R.BOOK_SEED, True) == R.case_run(scale, "big", False, R.BOOK_SEED)


def test_deep_control_stretches_the_whole_schedule():
    """§1.18.5 ③'s control differs from the 1500-step runs only in its schedule (and n_layer)."""
    scale = R.Scale.make(False)
    short, long = D.deep_run(scale, R.BOOK_SEED).cfg, D.deep_long_run(scale, 4, R.BOOK_SEED).cfg
    assert (long.max_steps, long.eval_every) == (2 * short.max_steps, 2 * short.eval_every)
    assert long.replace(max_steps=short.max_steps, eval_every=short.eval_every, ckpt_every=short.ckpt_every) == short
    assert D.deep_long_run(scale, 2, R.BOOK_SEED).cfg == long.replace(n_layer=2)


@pytest.mark.parametrize("e", EXPERIMENTS, ids=[e.id for e in EXPERIMENTS])
def test_every_why_names_a_claim_its_judge_makes(e):
    """A why under a stale claim id is never shown (the book then says "not explained yet"). Judged from
    code: the entry's judge on its test's EXAMPLES (else its committed results), so a new entry is
    checked before any JSON of it is committed."""
    examples = book_checks.examples_of(e)
    assert examples or not e.why, f"give tests/lab/test_{e.id}.py EXAMPLES: results its judge reads"
    assert not book_checks.stale_whys(e, examples), e.id


def test_every_committed_fail_says_why():
    from attnlab.verdicts import verdict_of

    for e in EXPERIMENTS:
        p = REPO_ROOT / "data" / "lab_book" / f"{e.id}.json"
        doc = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {"claims": []}
        for c in doc["claims"]:
            if verdict_of(c) == "FAIL":
                assert any(n.startswith(f"FAIL {c['id']}: ") and "not explained yet" not in n for n in doc["notes"]), c[
                    "id"
                ]


def test_select_by_section_and_id():
    assert [e.id for e in select(EXPERIMENTS, ["§1.9"])] == ["positions"]
    assert {e.id for e in select(EXPERIMENTS, ["1.20"])} == {"exercise1", "sweep", "exercise2"}
    assert [e.id for e in select(EXPERIMENTS, ["markov"])] == ["markov"]
    with pytest.raises(BookError, match="unknown --only §9.9"):
        select(EXPERIMENTS, ["§9.9"])


def test_markov_floor_uses_the_trainers_split(text):
    from attnlab import Config

    cfg = Config(vocab_size=40, block_size=16)
    f = markov_floor(text, cfg)
    assert f["bigram"] < f["unigram"] < math.log(40)
    assert f["val_tokens"] + f["train_tokens"] == len(text)
    assert f["val_tokens"] == max(int(len(text) * cfg.val_fraction), cfg.block_size + 1)


def test_a_stored_entry_of_an_older_shape_is_refused_not_dropped(tmp_path):
    """Measuring an entry again keeps the committed numbers of seeds whose runs are gone; results of an
    older shape (lists in seed order) are not read: refused in one line, before anything is measured."""
    from attnlab.lab import kv_cache as K
    from attnlab.lab.labbook import DATA_DIR, Context, analyze

    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "kv_cache.json").read_text(encoding="utf-8"))
    doc["results"] = {"seeds": [20261014], "val_loss": {"4": [4.0], "2": [4.05], "1": [4.1]}}
    (tmp_path / DATA_DIR).mkdir(parents=True)
    (tmp_path / DATA_DIR / "kv_cache.json").write_text(json.dumps(doc), encoding="utf-8")
    ctx = Context(R.Scale.make(False), "", tmp_path, {}, K.EXPERIMENT, train=False)
    with pytest.raises(BookError, match=r"per_seed is missing .*delete it and rerun `attnlab book --only kv_cache`"):
        analyze(K.EXPERIMENT, ctx)


def test_bad_only_is_one_line(tmp_path, capsys):
    assert book(tmp_path, "--only", "§9.9") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown --only §9.9" in err[0]
    assert not (tmp_path / "data").exists()


def test_unreachable_ray_is_one_line(tmp_path, capsys):
    code = book(tmp_path, "--only", "§1.18.5", "--executor", "ray", "--ray-address", "127.0.0.1:9")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "ray" in err[0].lower(), err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("ckpt.pt"))


def test_book_end_to_end_and_resume(tmp_path, monkeypatch):
    """Part of the book; one run interrupted first; the rerun trains nothing."""
    import importlib

    from attnlab.train import TrainingInterrupted, train

    train_mod = importlib.import_module("attnlab.train")  # the module, not the function

    scale = R.Scale.make(True)
    from attnlab.corpus import load_corpus

    text = load_corpus()
    deep = D.deep_run(scale, R.BOOK_SEED)
    with pytest.raises(TrainingInterrupted):
        train(text, deep.cfg, out_dir=deep.dir(tmp_path / "runs"), stop_after=7)
    assert book(tmp_path, "--only", "§1.18.5", "markov", "§1.8.7") == 0

    idx = json.loads((tmp_path / "data" / "lab_book.json").read_text(encoding="utf-8"))
    assert [s["section"] for s in idx["sections"]] == sorted((s["section"] for s in idx["sections"]), key=section_key)
    assert {e for s in idx["sections"] for e in s["experiments"]} == {e.id for e in EXPERIMENTS}
    for s in idx["sections"]:
        for c in s["claims"]:
            assert set(c) >= {"id", "section", "statement", "measured", "expected", "pass", "kind"}
            assert c["kind"] in KINDS
    assert idx["status"]["deep"] == "done" and idx["status"]["markov"] == "done"
    assert idx["status"]["qk_norm"] == "not_run"
    doc = json.loads((tmp_path / "data" / "lab_book" / "deep.json").read_text(encoding="utf-8"))
    assert {"kind", "provenance", "environment", "results", "claims"} <= set(doc)
    assert {r["name"]: r["status"] for r in doc["runs"]}[deep.name] == "resumed"
    assert {"deep_better", "deep_better_long"} <= {c["id"] for c in doc["claims"]}
    kv = json.loads((tmp_path / "data" / "lab_book" / "kv_cache.json").read_text(encoding="utf-8"))
    assert next(c for c in kv["claims"] if c["id"] == "kv_formula_matches_model")["pass"] is True

    md = (tmp_path / "reports" / "lab_book.md").read_text(encoding="utf-8")
    page = (tmp_path / "reports" / "lab_book.html").read_text(encoding="utf-8")
    assert "未运行 / not run yet" in md and "attnlab book --only §1.7.8" in md
    assert page.count("data:image/png;base64,") >= 1 and "@font-face" in page and "http" not in page.split("<body>")[1]

    calls = []
    monkeypatch.setattr(train_mod, "train", lambda *a, **k: calls.append(a) or pytest.fail("retrained"))
    assert book(tmp_path, "--only", "§1.18.5") == 0
    assert calls == []
    doc = json.loads((tmp_path / "data" / "lab_book" / "deep.json").read_text(encoding="utf-8"))
    assert {r["status"] for r in doc["runs"]} == {"reused"}
    # the report rebuilds from JSON alone
    (tmp_path / "reports" / "lab_book.html").unlink()
    assert main(["book", "--render", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "reports" / "lab_book.html").is_file()


def test_exercise2_records_what_the_exercise_asks(tmp_path):
    """§1.20.2: both variants' gaps, the loss curves and the final entropy of every run; d_head 256 is
    the case's big pair (trained once, in runs/case)."""
    assert book(tmp_path, "--only", "exercise2") == 0
    doc = json.loads((tmp_path / "data" / "lab_book" / "exercise2.json").read_text(encoding="utf-8"))
    res = doc["results"]
    assert [x["d_head"] for x in res["summary"]] == list(X.EX2_D_HEADS)
    assert [x["d_head"] for x in res["fixed_summary"]] == [32, 64, 128, 256]
    assert "collapse_d_head" in res and res["critical_d_head"] in (None, *X.EX2_D_HEADS)
    assert len(res["rows"]) == len(X.EX2_D_HEADS) + 4
    scale = R.Scale.make(True)
    for fixed, pts in ((False, res["summary"]), (True, res["fixed_summary"])):
        for x in pts:
            run = {sc: X.exercise2_run(scale, x["d_head"], sc, R.BOOK_SEED, fixed) for sc in (False, True)}
            val = {
                sc: json.loads((r.dir(tmp_path / "runs") / "summary.json").read_text())["val_loss_end"]
                for sc, r in run.items()
            }
            assert x["gaps"] == [pytest.approx(val[False] - val[True], rel=1e-3, abs=1e-6)]
            assert 0 < x["entropy_end_unscaled"] <= 1 and 0 < x["entropy_end_scaled"] <= 1
            assert x["val_curve"]["scaled"][-1][1] == pytest.approx(val[True], rel=1e-3)
            assert len(x["val_curve"]["unscaled"]) == len(x["val_curve"]["scaled"]) > 1
    assert not list((tmp_path / "runs" / "exercise2").glob("*d256*"))
    assert (tmp_path / "runs" / "case" / "big_scaled").is_dir()
    assert {c["id"] for c in doc["claims"]} >= {"ex2_critical_exists", "ex2_direction_fixed_d_model"}
    # the training time of every run it used, the shared case runs included, read from the run folders
    t = doc["timings"]
    from attnlab.lab import exercise2

    used = {r.name for r in exercise2.EXPERIMENT.runs(scale)}  # every run once, shared ones too
    assert t["runs"] == t["timed_runs"] == len(used) and set(t["per_run"]) == used and t["compute_s"] > 0
    assert t["compute_s"] >= t["train_s"] * 0.5
    for f in doc["figures"]:
        assert (tmp_path / f).stat().st_size > 10_000


def test_dynamics_reads_the_weights_the_baseline_kept(tmp_path):
    """§1.12.4 trains nothing of its own: the case's small scaled run keeps its weights at the
    dynamics' steps, and the analysis portraits them."""
    assert book(tmp_path, "--only", "§1.12.4") == 0
    base = R.baseline(R.Scale.make(True), R.BOOK_SEED)
    assert sorted(p.name for p in (base.dir(tmp_path / "runs") / "weights").iterdir()) == ["step10.pt", "step5.pt"]
    assert not (tmp_path / "runs" / "dynamics").exists()
    doc = json.loads((tmp_path / "data" / "lab_book" / "dynamics.json").read_text(encoding="utf-8"))
    assert doc["status"] == "done" and doc["results"]["steps"] == [5, 10, 20]
    assert len(doc["results"]["seeds"][0]["prev"]) == 3


# analyzed at quick scale by the tests above and below (and the browser test)
ANALYZED_ELSEWHERE = {"deep", "markov", "kv_cache", "exercise2", "dynamics"}


def test_every_other_experiment_analyzes_at_quick_scale(tmp_path):
    """Every experiment's analysis runs in some test: a fault that only the full book would meet
    (exercise 1 once compared a float with the case's list of gaps) fails here instead."""
    rest = [e.id for e in EXPERIMENTS if e.id not in ANALYZED_ELSEWHERE]
    assert book(tmp_path, "--only", *rest) == 0
    idx = json.loads((tmp_path / "data" / "lab_book.json").read_text(encoding="utf-8"))
    assert {e: idx["status"][e] for e in rest} == dict.fromkeys(rest, "done")
    for e in rest:
        doc = json.loads((tmp_path / "data" / "lab_book" / f"{e}.json").read_text(encoding="utf-8"))
        assert doc["claims"] and all(c["pass"] in (True, False, None) for c in doc["claims"]), e


def test_no_train_marks_missing_runs_not_run(tmp_path):
    assert book(tmp_path, "--only", "§1.9", "--no-train") == 0
    doc = json.loads((tmp_path / "data" / "lab_book" / "positions.json").read_text(encoding="utf-8"))
    assert doc["status"] == "not_run" and doc["results"] == {} and doc["claims"] == []
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow  # starting a local Ray takes a minute or two on a shared 2-core machine
def test_quick_through_local_ray(tmp_path):
    """The book runs unchanged on Ray: --quick through a local Ray instance."""
    pytest.importorskip("ray")
    assert book(tmp_path, "--only", "§1.18.5", "--executor", "ray") == 0
    idx = json.loads((tmp_path / "data" / "lab_book.json").read_text(encoding="utf-8"))
    assert idx["status"]["deep"] == "done"


def test_book_route_and_links(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from attnlab.web.server import PAGES, create_app

    client = TestClient(base_url="http://127.0.0.1", app=create_app(book_html=str(tmp_path / "missing.html")))
    r = client.get("/book")
    assert r.status_code == 404 and "attnlab book" in r.text  # a page, not raw JSON
    for route in PAGES:
        assert 'href="/book"' in client.get(route).text, route
    missing = TestClient(base_url="http://127.0.0.1", app=create_app(book_html=str(tmp_path / "none.html")))
    r = missing.get("/book")  # followed from the nav: a page saying what to run, never raw JSON
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html") and "attnlab book" in r.text
    (tmp_path / "b.html").write_text("<!DOCTYPE html><p>书</p>", encoding="utf-8")
    r = TestClient(base_url="http://127.0.0.1", app=create_app(book_html=str(tmp_path / "b.html"))).get("/book")
    assert r.status_code == 200 and "书" in r.text
    assert "default-src 'none'" in r.headers["content-security-policy"]


def test_learnable_temperature_starts_at_one_and_learns(tiny_cfg):
    """Exercise ⑬'s model: at init it computes exactly the unscaled model; the temperature gets a gradient."""
    import torch

    from attnlab import TinyGPT

    cfg = tiny_cfg.replace(scaled=False)
    torch.manual_seed(0)
    plain = TinyGPT(cfg)
    torch.manual_seed(0)
    temp = TinyGPT(cfg.replace(learn_temp=True))
    x = torch.randint(0, cfg.vocab_size, (2, cfg.block_size))
    assert torch.equal(plain(x)[0], temp(x)[0])
    temp(x, x)[1].backward()
    g = temp.blocks[0].attn.log_inv_temp.grad
    assert g is not None and g.abs().sum() > 0


def test_attnlab_report_rebuilds_the_book(tmp_path):
    """`attnlab report` rebuilds reports/lab_book.* from data/ alone (the repo's committed JSON)."""
    import shutil

    from attnlab.corpus import REPO_ROOT

    shutil.copytree(REPO_ROOT / "data", tmp_path / "data")
    assert (tmp_path / "data" / "lab_book.json").is_file()
    assert main(["report", str(tmp_path / "data" / "ch1_case.json"), "--out", str(tmp_path)]) == 0
    page = (tmp_path / "reports" / "lab_book.html").read_text(encoding="utf-8")
    book = json.loads((tmp_path / "data" / "lab_book.json").read_text(encoding="utf-8"))
    from attnlab.report.lab_book import anchor

    for s in book["sections"]:
        assert f'<section id="{anchor(s["section"])}">' in page and f'href="#{anchor(s["section"])}"' in page


@pytest.mark.parametrize("scaled", [False, True])
def test_qk_norm_logit_bound_holds_and_can_fail(tiny_cfg, scaled):
    """The bound the QK-norm section checks: with the gains and biases trained far from 1 and 0
    every logit stays inside it; the same check against a bound from halved gains fails."""
    import torch

    from attnlab import TinyGPT
    from attnlab.lab.qk_norm import qk_logit_bound

    torch.manual_seed(0)
    m = TinyGPT(tiny_cfg.replace(qk_norm=True, scaled=scaled))
    attn = m.blocks[0].attn
    with torch.no_grad():
        for norm in (attn.q_norm, attn.k_norm):
            norm.weight.copy_(3 * torch.randn_like(norm.weight))
            norm.bias.copy_(torch.randn_like(norm.bias))
        m.blocks[0].attn.qkv.weight.mul_(50)  # q and k point in few directions: logits near the bound
        m(torch.randint(0, 40, (8, 16)), record=True)
        absmax, bound = attn.last_diag["logit_absmax"], qk_logit_bound(m)
        assert 0 < absmax <= bound
        for norm in (attn.q_norm, attn.k_norm):
            norm.weight.mul_(0.5)
            norm.bias.mul_(0.5)
        assert absmax > qk_logit_bound(m)
