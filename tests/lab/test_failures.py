"""§1.11.7 (attnlab.lab.failures): every claim can PASS, FAIL and (where its rule allows) be
INCONCLUSIVE; the committed JSON judges as reported; the lab book judges with the failures
module's own judge, and adds §1.11.7.1's claims at inference (the mask-zero bug through the KV
cache), with the measurement they rest on."""

import copy
import json

import pytest

from attnlab.cli import main
from attnlab.corpus import REPO_ROOT
from attnlab.lab import failures as F
from attnlab.lab import failures as L
from attnlab.lab import runs as R
from attnlab.lab.labbook import Context

DOC = json.loads((REPO_ROOT / "data" / "failure_symptoms.json").read_text(encoding="utf-8"))
COMMITTED = L.results_of(DOC)

# the verdicts reported for the committed 3-seed result (issue 21)
REPORTED = {
    "bug1_loss_lower": "PASS",
    "bug1_leaks": "PASS",
    "bug1_entropy_higher": "PASS",
    "bug1_renorm_entropy_higher": "FAIL",
    "bug2_row_sum": "PASS",
    "bug2_loss_slightly_lower": "FAIL",
    "bug3_invisible": "PASS",
    "bug3_overflow_control": "PASS",
    "bug3_overflow_14_of_32": "PASS",
    "bug4_entropy_uniform": "FAIL",
    "bug4_loss_unchanged": "PASS",
    "bug4_loss_a_bit_lower": "FAIL",
}
KINDS = {
    "bug1_leaks": "sanity",
    "bug2_row_sum": "sanity",
    "bug3_invisible": "sanity",
    "bug3_overflow_control": "sanity",
    "bug1_renorm_entropy_higher": "prediction",
}


def with_cols(**cols) -> dict:
    """The committed results with the per-seed column(s) replaced (one value per seed)."""
    r = copy.deepcopy(COMMITTED)
    n = max(len(v) for v in cols.values())
    r["per_seed"] = {str(20261014 + i): dict(next(iter(COMMITTED["per_seed"].values()))) for i in range(n)}
    for key, values in cols.items():
        for row, v in zip(r["per_seed"].values(), values):
            row[key] = v
    return r


def verdicts(r) -> dict:
    """The bugs' own claims (the stand-alone command's) as the lab book judges them."""
    return {c["id"]: c["verdict"] for c in L.EXPERIMENT.judge(r) if c["id"] not in L.INFERENCE_CLAIMS}


def test_the_lab_book_judges_with_the_failures_module_own_judge():
    own = F.judge_symptoms(COMMITTED)
    assert L.EXPERIMENT.judge(COMMITTED)[: len(own)] == own
    assert F.rejudge(copy.deepcopy(DOC))["claims"] == own


def test_committed_results_judge_as_reported():
    claims = F.judge_symptoms(COMMITTED)
    assert {c["id"]: c["verdict"] for c in claims} == REPORTED
    assert {c["id"]: c["kind"] for c in claims if c["kind"] != "book"} == KINDS
    for c in claims:
        assert c["rule"] and c["inputs"] and (c["verdict"] != "FAIL" or c["reason"]["text"])
    byid = {c["id"]: c for c in claims}
    # the book's column for ①: the trainer's entropy of the un-renormalised rows, 1.27-1.31 vs 0.90-0.91
    assert min(byid["bug1_entropy_higher"]["inputs"]["entropy_mask_zero"]) > 1.27
    assert max(byid["bug1_entropy_higher"]["inputs"]["entropy_correct"]) < 0.92
    assert byid["bug4_loss_unchanged"]["inputs"]["margin"] == pytest.approx(0.102)
    assert byid["bug4_loss_unchanged"]["interval"] == pytest.approx([0.0185, 0.0813], abs=1e-4)


@pytest.mark.parametrize(
    "cid, key, values, expected",
    [
        ("bug1_loss_lower", "loss_tail_mask_zero", [-0.20, -0.18, -0.21], "PASS"),
        ("bug1_loss_lower", "loss_tail_mask_zero", [0.10, 0.12, 0.11], "FAIL"),  # the wrong side
        ("bug1_loss_lower", "loss_tail_mask_zero", [-0.010, -0.012, -0.011], "FAIL"),  # below half the book's
        ("bug1_loss_lower", "loss_tail_mask_zero", [-0.2, 0.1, -0.3], "INCONCLUSIVE"),
        ("bug1_entropy_higher", "entropy_mask_zero", [1.27, 1.31, 1.28], "PASS"),
        ("bug1_entropy_higher", "entropy_mask_zero", [0.80, 0.81, 0.79], "FAIL"),
        ("bug1_entropy_higher", "entropy_mask_zero", [1.2, 0.7, 1.1], "INCONCLUSIVE"),
        ("bug1_renorm_entropy_higher", "entropy_renorm_mask_zero", [1.0, 0.99, 0.995], "PASS"),
        ("bug1_renorm_entropy_higher", "entropy_renorm_mask_zero", [0.85, 0.89, 0.86], "FAIL"),
        ("bug1_renorm_entropy_higher", "entropy_renorm_mask_zero", [1.1, 0.7, 1.05], "INCONCLUSIVE"),
        ("bug2_loss_slightly_lower", "loss_tail_scale_after_softmax", [-0.14, -0.15, -0.13], "PASS"),
        ("bug2_loss_slightly_lower", "loss_tail_scale_after_softmax", [0.002, -0.021, 0.005], "FAIL"),
        ("bug2_loss_slightly_lower", "loss_tail_scale_after_softmax", [-0.3, 0.1, -0.2], "INCONCLUSIVE"),
        ("bug4_loss_unchanged", "loss_tail_divide_by_d_k", [0.01, -0.02, 0.0], "PASS"),
        ("bug4_loss_unchanged", "loss_tail_divide_by_d_k", [0.30, 0.31, 0.29], "FAIL"),
        ("bug4_loss_unchanged", "loss_tail_divide_by_d_k", [0.05, 0.15, -0.05], "INCONCLUSIVE"),
        ("bug4_loss_a_bit_lower", "loss_tail_divide_by_d_k", [-0.10, -0.11, -0.09], "PASS"),
        ("bug4_loss_a_bit_lower", "loss_tail_divide_by_d_k", [0.03, 0.05, 0.07], "FAIL"),
        ("bug4_loss_a_bit_lower", "loss_tail_divide_by_d_k", [-0.2, 0.1, -0.15], "INCONCLUSIVE"),
        # rules without INCONCLUSIVE (every seed, or exact)
        ("bug1_leaks", "future_max_mask_zero", [1.0, 0.6, 1.0], "PASS"),
        ("bug1_leaks", "future_max_mask_zero", [1.0, 0.0, 1.0], "FAIL"),
        ("bug1_leaks", "future_max_correct", [0.0, 0.02, 0.0], "FAIL"),
        ("bug2_row_sum", "row_sum_max_scale_after_softmax", [0.1768, 0.1768, 0.1767], "PASS"),
        ("bug2_row_sum", "row_sum_max_scale_after_softmax", [0.1768, 1.0, 0.1768], "FAIL"),
        ("bug3_invisible", "loss_maxdiff_no_max_subtraction", [6e-5, 2e-5, 7e-5], "PASS"),
        ("bug3_invisible", "loss_maxdiff_no_max_subtraction", [6e-5, 0.05, 7e-5], "FAIL"),
        ("bug4_entropy_uniform", "entropy_divide_by_d_k", [0.9989, 0.995, 0.997], "PASS"),
        ("bug4_entropy_uniform", "entropy_divide_by_d_k", [0.9989, 0.95, 0.997], "FAIL"),
    ],
)
def test_each_claim_can_pass_fail_and_be_inconclusive(cid, key, values, expected):
    assert verdicts(with_cols(**{key: values}))[cid] == expected


def test_one_seed_is_inconclusive_never_pass():
    r = with_cols(loss_tail_mask_zero=[-0.2])
    assert verdicts(r)["bug1_loss_lower"] == "INCONCLUSIVE"
    assert verdicts(r)["bug4_loss_unchanged"] == "INCONCLUSIVE"


def control(**row_5000) -> dict:
    r = copy.deepcopy(COMMITTED)
    for row in r["overflow_control"]["rows"]:
        if row["std"] == r["overflow_control"]["control_std"]:
            row.update(row_5000)
    return r


def test_overflow_control_passes_and_fails():
    assert verdicts(COMMITTED)["bug3_overflow_control"] == "PASS"
    assert verdicts(control(bug_nonfinite=0))["bug3_overflow_control"] == "FAIL"  # the bug would not show
    assert verdicts(control(correct_nonfinite=3))["bug3_overflow_control"] == "FAIL"  # the fix would not hold
    quiet = copy.deepcopy(COMMITTED)
    quiet["overflow_control"]["rows"][0].update(bug_nonfinite=2, bug_minus_correct_max=None)
    assert verdicts(quiet)["bug3_overflow_control"] == "FAIL"  # std 1.6 must not overflow
    book = copy.deepcopy(COMMITTED)
    book["overflow_control"]["rows"][-1]["exp_inf"] = 13
    assert verdicts(book)["bug3_overflow_14_of_32"] == "FAIL"


def test_overflow_control_is_the_chapter_check():
    """Deterministic: the chapter's check() (default_rng(0), float32) gives its 14 of 32 at std 5477,
    none at 1.6; the model's softmax without the max subtraction returns nan at std 5000."""
    c = F.overflow_control()
    rows = {r["std"]: r for r in c["rows"]}
    assert rows[5477.0]["exp_inf"] == 14 and rows[1.6]["exp_inf"] == 0
    assert rows[5000.0]["bug_nonfinite"] > 0 and rows[5000.0]["correct_nonfinite"] == 0
    assert rows[1.6]["bug_minus_correct_max"] < 1e-6
    assert c == F.overflow_control() == COMMITTED["overflow_control"]


def test_a_result_without_the_control_leaves_those_claims_out():
    r = copy.deepcopy(COMMITTED)
    r["overflow_control"] = None
    assert set(verdicts(r)) == set(REPORTED) - {"bug3_overflow_control", "bug3_overflow_14_of_32"}


def test_measure_reads_the_committed_json(tmp_path):
    ctx = Context(R.Scale.make(True), "", tmp_path, {}, L.EXPERIMENT)
    out = L.measure(ctx)
    inference = out.results.pop("inference")
    assert out.results == COMMITTED and out.results["rows"][0][0] == "correct"
    # nothing on disk: §1.11.7.1's pair is named, not measured
    assert inference["per_seed"] == {} and len(inference["pending"]["runs"]) == 2 and out.notes
    assert {"headers", "rows", "steps", "source"} <= set(out.results)  # what the report shows


def test_rejudge_cli_writes_the_verdicts_back(tmp_path, capsys):
    old = copy.deepcopy(DOC)
    old.pop("overflow_control", None)
    for c in old["claims"]:
        c.pop("verdict", None)
    out, report = tmp_path / "f.json", tmp_path / "f.md"
    out.write_text(json.dumps(old), encoding="utf-8")
    assert main(["failures", "--rejudge", "--out", str(out), "--report", str(report)]) == 0
    new = json.loads(out.read_text(encoding="utf-8"))
    assert {c["id"]: c["verdict"] for c in new["claims"]} == REPORTED
    assert new["overflow_control"] == COMMITTED["overflow_control"]
    text = report.read_text(encoding="utf-8")
    assert "书中论断 / book claims: 4 PASS, 3 FAIL, 0 INCONCLUSIVE" in text and "5000" in text
    assert "INCONCLUSIVE" in capsys.readouterr().out


def test_committed_files_are_regenerated():
    """data/failure_symptoms.json and reports/failure_symptoms.md carry today's verdicts."""
    assert {c["id"]: c["verdict"] for c in DOC["claims"]} == REPORTED
    md = (REPO_ROOT / "reports" / "failure_symptoms.md").read_text(encoding="utf-8")
    assert md == F.failures_markdown(DOC)


# ------------------------------------------------- §1.11.7.1: the bug at inference (from lab/statements)
SEEDS = [str(R.BOOK_SEED + i) for i in range(3)]


def inference(**columns) -> dict:
    """The committed results with a hand-made §1.11.7.1 table: each column a list of per-seed numbers."""
    table = {}
    for key, vals in columns.items():
        for s, v in zip(SEEDS, vals):
            table.setdefault(s, {})[key] = v
    return {**COMMITTED, "inference": {"per_seed": table, "pending": {}}}


def verdict(res, cid):
    return next(c for c in L.EXPERIMENT.judge(res) if c["id"] == cid)["verdict"]


@pytest.mark.parametrize(
    "bug, expected",
    [([5.9, 6.1, 6.0], "PASS"), ([4.7, 4.72, 4.69], "FAIL"), ([4.9, 5.0, 4.75], "INCONCLUSIVE")],
)
def test_mask_zero_at_inference(bug, expected):
    r = inference(mask_inc_bug=bug, mask_inc_correct=[4.81, 4.82, 4.8])
    assert verdict(r, "mask_zero_exposed_at_inference") == expected


def test_mask_zero_not_trained_names_its_runs():
    r = inference()
    r["inference"]["pending"] = {"runs": ["statements/stmt_mask_zero300_s1"], "minutes_one_core": 1.0}
    c = next(c for c in L.EXPERIMENT.judge(r) if c["id"] == "mask_zero_exposed_at_inference")
    assert c["verdict"] == "INCONCLUSIVE" and c["n_needed"] == 3 and "stmt_mask_zero300_s1" in c["detail"]
    assert "`attnlab book --only failures`" in c["detail"]
    kv = next(c for c in L.EXPERIMENT.judge(r) if c["id"] == "kv_eval_matches_teacher_forced")
    assert kv["verdict"] == "NA" and "stmt_mask_zero300_s1" in kv["detail"]


@pytest.mark.parametrize(
    "d, expected",
    [([0.0, 1e-5, 0.0], "PASS"), ([0.0, 0.01, 0.0], "FAIL"), ([0.0, 1e-5], "INCONCLUSIVE"), (None, "NA")],
)
def test_kv_evaluation(d, expected):
    """Every seed's KV-cache evaluation equals teacher forcing; two seeds are too few to say so."""
    r = inference() if d is None else inference(mask_inc_correct=[4.8 + x for x in d], mask_tf_correct=[4.8] * len(d))
    assert verdict(r, "kv_eval_matches_teacher_forced") == expected


def test_committed_inference_judges_as_reported():
    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "failures.json").read_text(encoding="utf-8"))
    v = {c["id"]: c for c in L.EXPERIMENT.judge(doc["results"])}
    assert v["mask_zero_exposed_at_inference"]["verdict"] == "PASS"  # worse token by token on every seed
    assert v["mask_zero_exposed_at_inference"]["n"] == 3
    assert v["kv_eval_matches_teacher_forced"]["verdict"] == "PASS"
    assert "token by token" in L.EXPERIMENT.why["mask_zero_exposed_at_inference"](doc["results"])
    # measured again from the committed JSON alone (no run folder): the same numbers
    ctx = Context(R.Scale.make(False), "", REPO_ROOT, {}, L.EXPERIMENT, train=False, previous=doc["results"])
    assert L.measure(ctx).results["inference"]["per_seed"] == doc["results"]["inference"]["per_seed"]


def test_the_300_step_pair_is_the_chapters_protocol():
    full = {r.name: r for r in L.EXPERIMENT.runs(R.Scale())}
    bug = full[f"stmt_mask_zero300_s{R.BOOK_SEED}"]
    assert bug.cfg.max_steps == 300 and bug.cfg.bug == "mask_zero"
    assert full[f"stmt_correct300_s{R.BOOK_SEED}"].cfg == bug.cfg.replace(bug=None)
    assert len(full) == 2 * R.Scale().seeds
    assert L.EXPERIMENT.seed_runs(R.Scale(), R.BOOK_SEED + 5, "mask_zero_exposed_at_inference") == L.mask_runs(
        R.Scale(), R.BOOK_SEED + 5
    )
    assert L.EXPERIMENT.seed_runs(R.Scale(), R.BOOK_SEED + 5, "bug1_loss_lower") == []


def test_kv_cache_evaluation_equals_teacher_forcing_only_without_the_leak(one_thread):
    import torch

    from attnlab.lab.positions import init_model

    cfg = R.Scale.make(True).cfg(**R.SIZES["small"], vocab_size=40, seed=1).replace(device="cpu")
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, cfg.vocab_size, (2, cfg.batch_size, cfg.block_size + 1), generator=g)
    batches = [(b[:, :-1], b[:, 1:]) for b in x]
    ok = L.incremental_loss(init_model(cfg, 1), batches)
    assert ok["incremental"] == pytest.approx(ok["teacher_forced"], abs=1e-4)
    with torch.no_grad():
        bug = init_model(cfg.replace(bug="mask_zero"), 1)
        for p in bug.parameters():
            p.mul_(20)
    leak = L.incremental_loss(bug, batches)
    assert abs(leak["incremental"] - leak["teacher_forced"]) > 1e-3


def test_quick_inference_end_to_end(tmp_path, text, one_thread):
    from attnlab.lab.labbook import run_book

    run_book([L.EXPERIMENT], text, tmp_path, scale=R.Scale.make(True), log=lambda s: None)
    doc = json.loads((tmp_path / "data" / "lab_book" / "failures.json").read_text(encoding="utf-8"))
    assert doc["status"] == "done" and all(r["done"] for r in doc["runs"])
    row = doc["results"]["inference"]["per_seed"][str(R.BOOK_SEED)]
    assert set(row) == set(L.INFERENCE_KEYS)
    assert {c["id"] for c in doc["claims"]} >= set(L.INFERENCE_CLAIMS)
    assert L.judge(doc["results"]) == [
        {k: v for k, v in c.items() if k not in ("looks", "seq", "seq_n_needed")} for c in doc["claims"]
    ]
