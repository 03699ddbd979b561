"""Every JSON kind attnlab reads has one declared shape (attnlab.schemas), checked at the door.

One table per kind: a valid document (the committed file, or the smallest one the kind allows)
and the damage a hostile or careless hand can do to it: a wrong type (a boolean where a number
is expected, a string where a mapping is), an impossible value (a negative count, a p outside
[0, 1], an unknown verdict, rule or claim kind), a missing field. Each must be refused with one
line that names the file, the field and the command that rebuilds it; the committed files must
all pass, unchanged (validation returns the very document it was given).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from attnlab import schemas
from attnlab.errors import AttnlabError
from attnlab.io import read_json

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


def _committed(name: str):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _set(doc, where: str, value):
    """``doc`` with the field at ``where`` (``a.b[0].c``; ``-`` deletes it) set to ``value``."""
    doc = copy.deepcopy(doc)
    parts = [int(p) if p.isdigit() else p for p in where.replace("[", ".").replace("]", "").split(".")]
    x = doc
    for p in parts[:-1]:
        x = x[p]
    if value == "-":
        del x[parts[-1]]
    else:
        x[parts[-1]] = value
    return doc


CASE = _committed("ch1_case.json")
BOOK = _committed("lab_book.json")
ENTRY = _committed("lab_book/markov.json")
TIMED = _committed("lab_book/exercise1.json")
HEADS = _committed("head_portrait.json")
SWEEP = _committed("sweep_critical_dimension.json")
FAILS = _committed("failure_symptoms.json")
RUN_SUMMARY = {"steps": 4, "diverged_at": None, "fingerprint": {"corpus_sha256": "ab"}, "schedule": []}
RUN_SUMMARY["schedule"] = [{"from_step": 0, "max_steps": 4}]
SITE_MARK = {"format": "attnlab-site-v2", "generator": "attnlab site", "attnlab": "0", "runs": []}
SITE_MARK["files"] = {"pages/index": {"bytes": 3, "sha256": "0" * 64}}
ONNX = json.loads((REPO / "src" / "attnlab" / "data" / "case_onnx" / "manifest.json").read_text(encoding="utf-8"))

# (kind, a valid document, [(field, damaged value, phrase in the message)])
TABLE = [
    (
        "case",
        CASE,
        [
            ("pairs.small_scaled.val_loss_end", True, "pairs.small_scaled.val_loss_end is a boolean"),
            ("pairs.small_scaled.val_loss_end", "4.0", "pairs.small_scaled.val_loss_end is str"),
            ("pairs.small_scaled", "abc", "pairs.small_scaled is str"),
            ("pairs.big_scaled.steps", -5, "pairs.big_scaled.steps: -5 should be greater than or equal to 0"),
            ("pairs.small_scaled.trace.loss[3]", False, "pairs.small_scaled.trace.loss[3] is a boolean"),
            ("pairs.small_scaled.trace.step", [0, 1], "step has 2 entries but loss"),
            ("seeds.runs[1].gap", True, "seeds.runs[1].gap is a boolean"),
            ("seeds.runs", {"a": 1}, "seeds.runs is dict"),
            ("qk_scale.big_unscaled.before[0].q_std", -1.0, "q_std: -1.0 should be greater than or equal to 0"),
            ("init_sweep[0].d_head", 0, "init_sweep[0].d_head: 0 should be greater than or equal to 1"),
            ("pairs.small_scaled.config.n_head", 1.5, "config.n_head is float"),
            ("claims[0]", "abc", "claims[0] is str"),
            ("claims[0].verdict", "MAYBE", "claims[0].verdict: 'MAYBE' should be 'PASS'"),
            ("claims[0].rule", "vibes", "claims[0].rule: 'vibes' should be 'effect'"),
            ("claims[0].kind", "rumour", "claims[0].kind: 'rumour'"),
            ("claims[0].n", -1, "claims[0].n: -1 should be greater than or equal to 0"),
            ("claims[0].p", 1.5, "claims[0].p: 1.5 should be less than or equal to 1"),
            ("claims[0].pass", "yes", "claims[0].pass is str"),
            ("claims[0].interval", [2.0, 1.0], "the wrong way round"),
            ("pairs", "-", "pairs is missing"),
        ],
    ),
    (
        "lab_book",
        BOOK,
        [
            ("sections[0]", "abc", "sections[0] is str"),
            ("summary", [1], "summary is list"),
            ("summary.claims", -3, "summary.claims: -3"),
            ("status.markov", "weird", "status.markov: 'weird' should be 'done', 'partial' or 'not_run'"),
            ("sections[0].claims[0].verdict", "MAYBE", "sections[0].claims[0].verdict"),
            ("scale.steps", True, "scale.steps is a boolean"),
            ("timings.experiments.markov.compute_s", -1.0, "timings.experiments.markov.compute_s: -1.0"),
        ],
    ),
    (
        "lab_book_entry",
        ENTRY,
        [
            ("status", "weird", "status: 'weird'"),
            ("results", "abc", "results is str"),
            ("claims", "abc", "claims is str"),
            ("claims[0]", "abc", "claims[0] is str"),
            ("claims[0].n_needed", -5, "claims[0].n_needed: -5"),
            ("claims[0].seeds", ["a"], "claims[0].seeds[0] is str"),
            ("claims[0].reason", {"category": "gossip", "text": "x"}, "claims[0].reason.category: 'gossip'"),
            ("scale", "quick", "scale is str"),
            ("id", 7, "id is int"),
            ("results.per_seed", "-", "results: per_seed is missing (an older shape of results, no longer read)"),
            ("results.per_seed", [1, 2], "results: per_seed is list"),
            ("results.per_seed", {"20261014": [4.1]}, "results: per_seed.20261014 is list"),
            ("results.per_seed.seed1", {}, "results: per_seed.seed1: 'seed1' String should match pattern"),
        ],
    ),
    (
        "lab_book_entry",
        TIMED,  # an entry's timing record: what book --plan and case --plan read
        [
            ("timings", [1, 2], "timings is list"),
            ("timings.compute_s", True, "timings.compute_s is a boolean"),
            ("timings.compute_s", "abc", "timings.compute_s is str"),
            ("timings.compute_s", -100.0, "timings.compute_s: -100.0"),
            ("timings.timed_runs", -3, "timings.timed_runs: -3"),
            ("timings.per_run", {"x": "abc"}, "timings.per_run.x is str"),
            ("timings.per_run_conditions", {"x": {"state": "calm"}}, "timings.per_run_conditions.x.state: 'calm'"),
            ("timings.per_run_conditions", {"x": {"state": "idle", "cpu_s": -1.0}}, "per_run_conditions.x.cpu_s: -1.0"),
            ("timings.per_run_conditions", {"x": {"state": "busy", "cpus": 0}}, "per_run_conditions.x.cpus: 0"),
            ("timings.per_run_conditions", {"x": {"cpu_s": 1.0}}, "per_run_conditions.x.state is missing"),
        ],
    ),
    (
        "heads",
        HEADS,
        [
            ("heads[0].prev", 1.5, "heads[0].prev: 1.5 should be less than or equal to 1"),
            ("heads[0].entropy", True, "heads[0].entropy is a boolean"),
            ("heads", "abc", "heads is str"),
            ("claims[0].verdict", "MAYBE", "claims[0].verdict"),
        ],
    ),
    (
        "sweep",
        SWEEP,
        [
            ("trials[0].val_loss_end", "4.4", "trials[0].val_loss_end is str"),
            ("trials[0].val_loss_end", float("nan"), "but the trial did not diverge"),
            ("trials[0].d_head", -32, "trials[0].d_head: -32"),
            ("trials", {"a": 1}, "trials is dict"),
        ],
    ),
    ("failures", FAILS, [("claims[0].verdict", "MAYBE", "claims[0].verdict"), ("claims", {}, "claims is dict")]),
    (
        "run_summary",
        RUN_SUMMARY,
        [
            ("schedule[0].max_steps", 0, "schedule[0].max_steps: 0"),
            ("schedule[0].from_step", "x", "schedule[0].from_step is str"),
            ("fingerprint", "abc", "fingerprint is str"),
            ("steps", -1, "steps: -1"),
        ],
    ),
    (
        "run_timing",
        {
            "sessions": [
                {"seconds": 12.5, "pid": 3},  # recorded before CPU time and load were: its cores unknown
                {"seconds": 8.0, "cpu_s": 7.9, "load_start": 0.3, "load_end": 1.2, "cpus": 2, "threads": 1},
            ]
        },
        [
            ("sessions[0].seconds", -1.0, "sessions[0].seconds: -1.0"),
            ("sessions[0].seconds", True, "sessions[0].seconds is a boolean"),
            ("sessions", "-", "sessions is missing"),
            ("sessions[1].cpu_s", -2.0, "sessions[1].cpu_s: -2.0"),
            ("sessions[1].load_end", "high", "sessions[1].load_end is str"),
            ("sessions[1].cpus", 0, "sessions[1].cpus: 0"),
            ("sessions[1].threads", 1.5, "sessions[1].threads is float"),
        ],
    ),
    (
        "plan_check",
        {
            "kind": "plan_check",
            "runs": [{"name": "pc_small_300", "config": {"d_model": 128}, "seconds": 30.5, "cpu_s": 29.0, "load": 1.5}],
        },
        [
            ("runs[0].seconds", 0.0, "runs[0].seconds: 0.0 should be greater than 0"),
            ("runs[0].cpu_s", True, "runs[0].cpu_s is a boolean"),
            ("runs[0].config", "abc", "runs[0].config is str"),
            ("runs", "-", "runs is missing"),
            ("kind", "lab_book", "kind: 'lab_book'"),
        ],
    ),
    (
        "bench_case_plan",
        {
            "kind": "bench_case_plan",
            "factors": {
                "reference": {"config": {"d_model": 128}, "cpu_s": 20.5},
                "outside_timed": 0.2,
                "sweeps": 3.1,
                "report": 0.1,
                "concurrency": 1.02,
            },
        },
        [
            ("factors.reference.cpu_s", 0.0, "factors.reference.cpu_s: 0.0 should be greater than 0"),
            ("factors.sweeps", -1.0, "factors.sweeps: -1.0"),
            ("factors.concurrency", True, "factors.concurrency is a boolean"),
            ("factors", "-", "factors is missing"),
        ],
    ),
    (
        "tokenizer",
        {"type": "char", "itos": ["<pad>", "<unk>", "春"]},
        [("itos", "abc", "itos is str"), ("itos[2]", 3, "itos[2] is int"), ("type", "bpe", "type: 'bpe'")],
    ),
    (
        "site_mark",
        SITE_MARK,
        [
            ("files", [1], "files is list"),
            ("files.pages/index.bytes", -1, "files.pages/index.bytes: -1"),
            ("files.pages/index.sha256", "abc", "files.pages/index.sha256: 'abc' String should match pattern"),
            ("files", {"../outside": {"bytes": 1, "sha256": "0" * 64}}, "'../outside' is not a path inside the site"),
            ("files", {"/etc/passwd": {"bytes": 1, "sha256": "0" * 64}}, "is not a path inside the site"),
            ("generator", "someone", "generator: 'someone'"),
            ("format", "attnlab-site-v1", "format: 'attnlab-site-v1'"),
            ("files", "-", "files is missing"),
        ],
    ),
    (
        "onnx_manifest",
        ONNX,
        [
            ("runs", [1], "runs is list"),
            ("runs.case/big_scaled.tensors[0].offset", 10**12, "offset: 1000000000000 should be less than or equal"),
            ("runs.case/big_scaled.tensors[0].offset", 1e12, "tensors[0].offset is float"),
            ("runs.case/big_scaled.tensors[1].offset", 12, "starts at byte 12"),
            ("runs.case/big_scaled.tensors[0].length", 8, "is not 4 bytes x shape"),
            ("runs.case/big_scaled.weights_bytes", 10**6, "not weights_bytes=1000000"),
            ("runs.case/big_scaled.onnx", "../../etc/passwd", "is not a file name in the manifest's folder"),
            ("runs.case/big_scaled.weights_sha256", "abc", "weights_sha256: 'abc'"),
            ("runs.case/big_scaled.outputs", [], "outputs: a list of 0 List should have at least 1 item"),
            ("format", "x", "format: 'x'"),
        ],
    ),
    (
        "slurm_config",
        {"partition": "gpu", "time": "2h", "cpus": 2, "parallelism": 8, "mem_gb": 4.0, "extra": {"account": "lab"}},
        [
            ("mem_gb", float("inf"), "mem_gb: inf should be a finite number"),
            ("mem_gb", -1.0, "mem_gb: -1.0 should be greater than 0"),
            ("parallelism", 10**18, "parallelism: 1000000000000000000 should be less than or equal to 100000"),
            ("cpus", True, "cpus is a boolean"),
            ("extra", "abc", "extra is str"),
            ("colour", "red", "unknown option colour"),
            ("cluster", "cloud", "cluster: 'cloud'"),
        ],
    ),
    (
        "claims_registry",
        {
            "kind": "claims_registry",
            "claims": {
                "c1": {
                    "kind": "book",
                    "spec": {"rule": "value", "params": {"tol": 0.1}, "reads": "x"},
                    "post_hoc": False,
                    "amendments": [{"date": "2026-12-01", "spec": {"rule": "value", "params": {"tol": 0.2}}}],
                }
            },
        },
        [
            ("claims.c1.amendments[0]", 1, "claims.c1.amendments[0] is int (1), not a mapping"),
            ("claims.c1.amendments", 7, "claims.c1.amendments is int"),
            ("claims.c1.spec", "abc", "claims.c1.spec is str"),
            ("claims.c1.spec.rule", "guess", "claims.c1.spec.rule: 'guess'"),
            ("claims.c1.amendments[0].spec", "abc", "amendments[0].spec is str"),
            ("claims.c1.amendments[0].date", 5, "amendments[0].date is int"),
            ("claims.c1", [1], "claims.c1 is list"),
            ("claims", [1], "claims is list"),
        ],
    ),
    (
        "confirmatory_plan",
        {
            "kind": "confirmatory_plan",
            "frozen": "71af59c",
            "seed_start": 20270000,
            "budget_core_s": 21600.0,
            "spent_core_s": 100.0,
            "runs": {"case": ["small_scaled_s20270000"]},
            "claims": {
                "c1": {
                    "experiment": "case",
                    "seeds": 3,
                    "power": 0.9,
                    "core_s": 100.0,
                    "bought": True,
                    "why": "power 90% at 3 seeds",
                    "spec": {"rule": "value", "params": {"book": 4.0, "tol": 0.17}, "reads": "x"},
                    "spec_sha256": "0123456789abcdef",
                }
            },
        },
        [
            ("seed_start", "20270000", "seed_start is str"),
            ("seed_start", -1, "seed_start: -1"),
            ("claims.c1.seeds", 2.5, "claims.c1.seeds"),
            ("claims.c1.bought", "yes", "claims.c1.bought"),
            ("budget_core_s", float("nan"), "budget_core_s"),
            ("runs", ["a"], "runs is list"),
        ],
    ),
    (
        "run_store",
        {
            "kind": "run_store",
            "runs": {"ab12": {"seed": 1, "names": ["case/a"], "val_loss_end": 4.0, "source": "x", "config": {}}},
            "differences": [
                {"key": "ab12", "seed": 1, "name": "case/a", "stored": 4.0, "retrained": 4.1, "delta": 0.1}
            ],
        },
        [
            ("runs", ["ab12"], "runs is list"),
            ("runs.ab12", "abc", "runs.ab12 is str"),
            ("runs.ab12.val_loss_end", -1e308, "runs.ab12.val_loss_end: -1e+308 should be greater than or equal to 0"),
            ("runs.ab12.names", [], "should have at least 1 item"),
            ("differences", {"a": 1}, "differences is dict"),
            ("differences[0]", 1, "differences[0] is int"),
        ],
    ),
    (
        "shipped_manifest",
        {"runs": {"big_scaled": {"files": {"tokenizer": {"bytes": 3, "sha256": "ab" * 32}}}}},
        [
            ("runs", [1], "runs is list"),
            ("runs.big_scaled.files.tokenizer.sha256", "xyz", "should match pattern"),
            ("runs.big_scaled.files.tokenizer.bytes", -1, "bytes: -1 should be greater than or equal to 0"),
        ],
    ),
]

ROWS = [(kind, doc, where, value, phrase) for kind, doc, rows in TABLE for where, value, phrase in rows]


@pytest.mark.parametrize("kind", sorted({k for k, _, _ in TABLE}))
def test_the_valid_document_passes_unchanged(kind):
    for k, doc, _ in TABLE:
        if k == kind:
            before = json.dumps(doc, sort_keys=True)
            assert schemas.check(kind, doc, f"x/{kind}.json") is doc
            assert json.dumps(doc, sort_keys=True) == before  # nothing coerced


def test_every_kind_has_a_table():
    assert {k for k, _, _ in TABLE} == set(schemas.KINDS) - {"run_config"}  # config.json: Config.from_dict


@pytest.mark.parametrize(
    "kind, doc, where, value, phrase", ROWS, ids=[f"{k}: {w}={str(v)[:20]}" for k, _, w, v, _ in ROWS]
)
def test_damage_is_refused_in_one_line_naming_file_field_and_fix(kind, doc, where, value, phrase, tmp_path):
    bad = _set(doc, where, value)
    path = tmp_path / "lab_book" / "markov.json"
    with pytest.raises(AttnlabError) as e:
        schemas.check(kind, bad, path, id="markov")
    msg = str(e.value)
    assert phrase in msg, msg
    assert msg.startswith(f"{path}: ") and "\n" not in msg and not msg.rstrip().endswith(":")
    fix = schemas.KINDS[kind][1].format(id="markov")
    assert fix in msg, msg  # the command (or the advice) that rebuilds it


def test_every_committed_json_has_its_declared_shape():
    """The repository's own files pass (attnlab report reads them all); the wheel's copy too."""
    from attnlab.corpus import REPO_ROOT

    files = {"case": [DATA / "ch1_case.json"], "lab_book": [DATA / "lab_book.json"]}
    files["lab_book_entry"] = sorted((DATA / "lab_book").glob("*.json"))
    files["heads"] = [DATA / "head_portrait.json"]
    files["sweep"] = [DATA / "sweep_critical_dimension.json"]
    files["failures"] = [DATA / "failure_symptoms.json"]
    files["plan_check"] = [DATA / "plan_check.json"]
    files["bench_case_plan"] = [DATA / "bench_case_plan.json"]
    files["claims_registry"] = [DATA / "claims_registry.json"]
    files["run_store"] = [DATA / "run_store.json"]
    files["confirmatory_plan"] = [DATA / "confirmatory_plan.json"]
    files["shipped_manifest"] = [REPO_ROOT / "src" / "attnlab" / "data" / "case_runs" / "manifest.json"]
    published = REPO_ROOT / "src" / "attnlab" / "data" / "published" / "ch1_case.json"
    if published.is_file():
        files["case"].append(published)
    assert len(files["lab_book_entry"]) >= 17
    for kind, paths in files.items():
        for p in paths:
            assert schemas.problem(kind, read_json(p, allow_nan=kind == "sweep")) is None, p


# the older shapes of results the lab-book entries once migrated at every read (one each): migrated
# once in the committed files, they are refused now
OLDER_RESULTS = {
    "ablation": {"seed": 20261014, "by_change": {"baseline": {"val_loss_end": 4.07, "diverged": False}}},
    "deep": {"seeds": [20261014], "val_4_layers": [4.09], "val_2_layers": [4.07], "curves": []},
    "dynamics": {"steps": [0, 100], "seeds": [{"seed": 20261014, "prev": [0.1, 0.4], "diag": [0.2, 0.1]}]},
    "exercise1": {"seeds": [20261014], "gaps": [0.3], "init_logit_std_d64": [0.41]},
    "exercise2": {"seeds": [20261014], "summary": [{"d_head": 32, "gaps": [0.01]}]},
    "kv_cache": {"seeds": [20261014], "val_loss": {"4": [4.0], "2": [4.05], "1": [4.1]}},
    "markov": {"models": [{"model": "case big_unscaled", "val_loss": 5.171}]},
    "positions": {"seeds": [20261014], "summary": {"none": {"val": [4.3]}}},
    "qk_norm": {"seeds": {"small": [20261014]}, "runs": {"small_unscaled": {"val": [4.1]}}},
    "sweep": {"rows": [[32, 4.46, 4.47, 0.01]], "seeds": 1},
    "temperature": {"runs": [{"seed": 20261014, "val_loss": 5.1}]},
}


def test_every_entry_with_tables_has_an_older_shape_here():
    assert set(OLDER_RESULTS) == set(schemas.ENTRY_RESULTS)


@pytest.mark.parametrize("eid", sorted(OLDER_RESULTS))
def test_an_older_shape_of_results_is_refused(eid, tmp_path):
    """The committed entry passes; the same entry with its results in an older shape is refused in one
    line naming the table it lacks and the command that rebuilds it."""
    doc = _committed(f"lab_book/{eid}.json")
    assert schemas.problem("lab_book_entry", doc) is None
    table = "points" if eid == "sweep" else "per_seed"
    path = tmp_path / "lab_book" / f"{eid}.json"
    with pytest.raises(AttnlabError) as e:
        schemas.check("lab_book_entry", {**doc, "results": OLDER_RESULTS[eid]}, path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: results: {table} is missing (an older shape") and "\n" not in msg, msg
    assert f"attnlab book --only {eid}" in msg


def test_the_deep_entry_needs_its_stretched_table_too():
    doc = _committed("lab_book/deep.json")
    short = {k: v for k, v in doc["results"].items() if k != "long_per_seed"}
    assert "long_per_seed is missing" in schemas.problem("lab_book_entry", {**doc, "results": short})


def test_an_entry_not_yet_run_has_no_tables_to_keep():
    doc = _committed("lab_book/kv_cache.json")
    assert schemas.problem("lab_book_entry", {**doc, "status": "not_run", "results": {}}) is None


def test_the_names_a_claim_may_use_are_the_judges_own():
    """schemas keeps copies (attnlab.stats imports scipy): they must equal the originals."""
    from attnlab import stats, verdicts

    assert schemas.VERDICTS == stats.VERDICTS
    assert schemas.CLAIM_KINDS == verdicts.KINDS
    assert set(schemas.REASONS) == set(verdicts.REASON_LABELS)
    used = {c["rule"] for p in [DATA / "ch1_case.json", *(DATA / "lab_book").glob("*.json")] for c in _claims(p)}
    assert used <= set(schemas.RULES)
    assert {"effect", "value", "band", "every", "equivalence", "exact", "reported", "na", "all_of"} <= set(
        schemas.RULES
    )
    for rule in ("effect", "value", "band", "every", "equivalence", "exact", "reported", "na", "all_of"):
        assert callable(getattr(stats, rule)), rule


def _claims(p: Path) -> list[dict]:
    return json.loads(p.read_text(encoding="utf-8")).get("claims", [])


# ---------------------------------------------------------------------------- reading at the door
def test_read_json_refuses_fifos_devices_and_nan_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(AttnlabError, match="is a FIFO, not a regular file"):
        read_json(fifo)  # would block forever in open() or read()
    with pytest.raises(AttnlabError, match="is a device, not a regular file"):
        read_json("/dev/zero")  # would read forever
    with pytest.raises(AttnlabError, match="is a folder"):
        read_json(tmp_path)
    nan = tmp_path / "nan.json"
    nan.write_text('{"a": {"b": [1.0, NaN]}}')
    with pytest.raises(AttnlabError, match=r"nan.json: a\.b\[1\] is NaN or infinite"):
        read_json(nan)
    assert read_json(nan, allow_nan=True)["a"]["b"][0] == 1.0
    (tmp_path / "inf.json").write_text('{"x": -Infinity}')
    with pytest.raises(AttnlabError, match="x is NaN or infinite"):
        read_json(tmp_path / "inf.json")


def test_load_names_the_command_that_rebuilds_the_file(tmp_path):
    p = tmp_path / "data" / "lab_book" / "kv_cache.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(_set(ENTRY, "claims[0].verdict", "MAYBE")))
    with pytest.raises(AttnlabError, match=r"claims\[0\]\.verdict.*rebuild it with `attnlab book --only kv_cache`"):
        schemas.load("lab_book_entry", p)
    p.write_text("[" * 1000 + "]" * 1000)
    with pytest.raises(AttnlabError, match="nested deeper.*attnlab book --only kv_cache"):
        schemas.load("lab_book_entry", p)


def test_write_json_if_changed_leaves_an_unchanged_file_alone(tmp_path):
    from attnlab.io import write_json, write_json_if_changed

    p = tmp_path / "x.json"
    write_json(p, {"a": [1, 2]})
    os.utime(p, (1_000_000, 1_000_000))
    assert write_json_if_changed(p, {"a": [1, 2]}) is False and p.stat().st_mtime == 1_000_000
    assert write_json_if_changed(p, {"a": [1, 3]}) is True and json.loads(p.read_text()) == {"a": [1, 3]}


def test_a_judged_boolean_is_not_a_number():
    """Booleans reach a verdict through no rule: True is not the number 1 (stats._clean)."""
    from attnlab import stats

    with pytest.raises(TypeError, match="bool"):
        stats.effect([0.5, True, 0.4], sesoi=0.1)
    with pytest.raises(TypeError, match="str"):
        stats.value(["4.1", 4.2, 4.0], 4.0, tol=0.5)
    assert stats.effect([0.5, 0.6, 0.4], sesoi=0.1).verdict == stats.PASS


def test_a_garbage_resume_schedule_is_refused():
    from attnlab.checkpoint import schedule_problem

    good = [{"from_step": 0, "max_steps": 100}, {"from_step": 100, "max_steps": 300}]
    assert schedule_problem(good, 150, 300) is None
    for bad, phrase in [
        ([{"from_step": 7, "max_steps": 100}], "starts at step 7"),
        ([{"from_step": 0, "max_steps": 100}, {"from_step": 0, "max_steps": 200}], "out of order"),
        ([{"from_step": 0, "max_steps": 100}, {"from_step": 200, "max_steps": 300}], "after the checkpoint's step"),
        ([{"from_step": 0, "max_steps": 10**9}], "max_steps 1000000000"),
        ([{"from_step": 0, "max_steps": 100}], "the config says 300"),
    ]:
        assert phrase in (schedule_problem(bad, 150, 300) or ""), bad
