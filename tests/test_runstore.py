"""One run per (config, seed): a run's identity is its config and seed (never its name), the first
measured numbers of a (config, seed) are the ones every entry reads, and a retraining that gives
other numbers is kept beside them as a reproducibility difference, never read in their place."""

import json
import shutil

import pytest

from attnlab.config import Config, preset
from attnlab.corpus import REPO_ROOT
from attnlab.lab import case as case_entry
from attnlab.lab import lr_sensitivity as LR
from attnlab.lab import runs as R
from attnlab.lab.common import rnd, seed_table
from attnlab.lab.labbook import Context, Experiment, Outcome, _run_one
from attnlab.runner import Run, execute
from attnlab.runstore import RunStore, final_val_of

TEXT = "秦川雄帝宅，函谷壯皇居。綺殿千尋起，離宮百雉餘。" * 40


# ------------------------------------------------------------------------------ identity
def test_two_names_for_one_config_are_one_run():
    cfg = R.Scale().cfg(**R.SIZES["small"], scaled=False, seed=R.BOOK_SEED)
    case = R.case_run(R.Scale(), "small", False, R.BOOK_SEED)
    lr = LR.lr_run(R.Scale(), "small", "none", LR.BOOK_LR, R.BOOK_SEED)
    renamed = Run("another_name", cfg, group="elsewhere")
    assert case.key == lr.key == renamed.key == cfg.run_key()
    # one model, two spellings (Config canonicalises attn_scale): one key
    assert Config(scaled=False).run_key() == Config(attn_scale="none").run_key()
    assert Config(d_model=64).run_key() == Config(d_model=64, d_ff=128).run_key()
    # where and how often a run is looked at is not its identity
    for change in ({"device": "cpu"}, {"eval_every": 7}, {"ckpt_every": 3}, {"snapshot_every": 0}):
        assert cfg.replace(**change).run_key() == cfg.run_key(), change


@pytest.mark.parametrize(
    "change", [{"seed": R.BOOK_SEED + 1}, {"lr": 1e-2}, {"scaled": True}, {"record_every": 0}, {"eval_batches": 4}]
)
def test_what_changes_training_or_its_measurement_changes_the_key(change):
    cfg = R.Scale().cfg(**R.SIZES["small"], scaled=False, seed=R.BOOK_SEED)
    assert cfg.replace(**change).run_key() != cfg.run_key()


# --------------------------------------------------------------------------------- store
def test_first_measurement_is_stored_and_a_disagreeing_one_kept_beside_it():
    cfg = preset("tiny")
    s = RunStore()
    assert s.measured(cfg, "a", 4.2898, "first") is None
    assert s.measured(cfg, "b", 4.2898, "same run, another name") is None
    d = s.measured(cfg, "c", 4.2685, "retrained")
    assert d["stored"] == 4.2898 and d["retrained"] == 4.2685 and d["delta"] == pytest.approx(-0.0213)
    assert s.first(cfg)["val_loss_end"] == 4.2898 and s.first(cfg)["names"] == ["a", "b", "c"]
    assert len(s.differences) == 1


def test_committed_store_holds_the_case_first_and_the_learning_rate_maps_retraining_beside_it():
    store = RunStore.load(REPO_ROOT)
    case = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    run = R.case_run(R.Scale(), "small", False, R.BOOK_SEED)
    assert store.first(run.cfg)["val_loss_end"] == case["pairs"]["small_unscaled"]["val_loss_end"]
    lr = json.loads((REPO_ROOT / "data" / "lab_book" / "lr_sensitivity.json").read_text(encoding="utf-8"))
    (shown,) = [d for d in lr["reproducibility"] if d["key"] == run.key]
    assert round(shown["retrained"], 4) == 4.2685  # the map's own retraining, kept beside the stored run
    diffs = [d for d in store.differences if d["key"] == run.key]
    assert shown in diffs
    assert all(d["stored"] == case["pairs"]["small_unscaled"]["val_loss_end"] for d in diffs)


def test_the_learning_rate_map_reads_every_case_run_as_the_case_measured_it():
    """The map's points at the book's lr are case runs: each holds the case's number, never a retraining."""
    case = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    lr = json.loads((REPO_ROOT / "data" / "lab_book" / "lr_sensitivity.json").read_text(encoding="utf-8"))
    n = 0
    for m in case_entry.MEMBERS:
        size, tag = m.split("_")
        cell = f"{size}|{'1/sqrt(d)' if tag == 'scaled' else 'none'}|0.003"
        for r in [case["pairs"][m], *case.get("seed_runs", {}).get(m, [])]:
            row = lr["results"]["per_seed"].get(str(r["config"]["seed"]), {})
            if cell in row:
                assert row[cell]["val"] == r["val_loss_end"], (cell, r["config"]["seed"])
                n += 1
    assert n >= 20


def test_the_case_entry_reads_every_case_run_as_the_case_measured_it():
    """The audit's substitution: the case's statements in other sections (once lab/statements.py) held the
    learning-rate map's retraining of the case's first small unscaled run (4.269) where the case measured
    4.2898. Every case member, every seed, now equals the case's own number; the retraining is listed in
    the run store as a reproducibility difference, never read in its place."""
    case = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    doc = json.loads((REPO_ROOT / "data" / "lab_book" / "case.json").read_text(encoding="utf-8"))
    t = doc["results"]["per_seed"]
    n = 0
    for m in case_entry.MEMBERS:
        for r in [case["pairs"][m], *case.get("seed_runs", {}).get(m, [])]:
            seed = str(r["config"]["seed"])
            assert t[seed][f"val_{m}"] == rnd(r["val_loss_end"]), (m, seed)
            n += 1
    assert n >= 4
    store = json.loads((REPO_ROOT / "data" / "run_store.json").read_text(encoding="utf-8"))
    shown = {round(d["retrained"], 3) for d in store["differences"] if d["name"] == "case/small_unscaled_s20261014"}
    assert 4.269 in shown


# --------------------------------------------------------------- the substitution is impossible
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny run really trained, under runs/g/first; the same folder copied under a second name."""
    root = tmp_path_factory.mktemp("store")
    cfg = preset("tiny", max_steps=3, warmup=1, eval_every=3, snapshot_every=0, ckpt_every=0, device="cpu")
    run = Run("first", cfg, group="g")
    f = execute([run], TEXT, root / "runs", progress=False, log=lambda m: None)["first"]
    shutil.copytree(run.dir(root / "runs"), root / "runs" / "g" / "second")
    return root, run, final_val_of(f)


def _entry(seeds):
    """A minimal entry that reads its runs as every entry does (seed_table over Context.find): the
    committed number of a seed when the disk run is refused, else the disk run's."""

    def measure(ctx):
        table = seed_table(ctx, seeds, lambda fs: {"val": final_val_of(fs[0])}, None)
        return Outcome(results={"per_seed": table})

    return Experiment(
        id="probe", section="§0", title="t", statement="s", command="c", measure=measure, judge=lambda r: []
    )


def test_a_retraining_that_disagrees_is_never_read_and_is_shown(trained):
    root, run, val = trained
    store = RunStore()
    stored = val + 0.03  # the first measurement of this (config, seed), made elsewhere
    store.measured(run.cfg, "g/first", stored, "data/ch1_case.json")
    other_name = Run("second", run.cfg, group="g")  # the same config and seed under another name
    e = _entry(lambda s: [other_name] if s == R.BOOK_SEED else [])
    ctx = Context(R.Scale.make(True), TEXT, root, {}, e, train=False, store=store)
    assert ctx.find(run) is None and ctx.find(other_name) is None
    doc = _run_one(e, ctx, ctx.scale, ctx.finished, False, lambda m: None)
    assert doc["results"]["per_seed"] == {}  # the retraining's number is not read
    assert store.first(run.cfg)["val_loss_end"] == stored  # the stored one stays
    (d,) = doc["reproducibility"]
    assert (d["stored"], d["retrained"]) == (stored, val) and d["delta"] == pytest.approx(-0.03)
    assert doc["notes"][0].startswith("复现差异 / reproducibility difference")


def test_the_stored_run_itself_is_read(trained):
    root, run, val = trained
    store = RunStore()
    store.measured(run.cfg, "g/first", val, "first measured here")
    e = _entry(lambda s: [run] if s == R.BOOK_SEED else [])
    ctx = Context(R.Scale.make(True), TEXT, root, {}, e, train=False, store=store)
    doc = _run_one(e, ctx, ctx.scale, ctx.finished, False, lambda m: None)
    assert doc["results"]["per_seed"] == {str(R.BOOK_SEED): {"val": val}}
    assert "reproducibility" not in doc and not store.differences


def test_a_run_first_measured_by_an_entry_is_stored(trained):
    root, run, val = trained
    store = RunStore()
    ctx = Context(R.Scale.make(True), TEXT, root, {}, _entry(lambda s: []), train=False, store=store)
    assert ctx.find(run) is not None
    assert store.first(run.cfg)["val_loss_end"] == val and store.changed


def test_a_learning_rate_point_holding_a_retraining_is_read_from_the_case_instead(tmp_path):
    """What ``attnlab book`` does with a map measured before the store (the committed map until
    2026-12-02): the point that holds a retraining of a case run gets the case's own numbers, the
    retraining goes to the entry's differences; a point that is the stored run, or not a case run, stays."""
    case = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    ctx = Context(R.Scale(), "", tmp_path, {}, LR.EXPERIMENT, train=False, store=RunStore.load(REPO_ROOT))
    seed = str(R.BOOK_SEED)
    name = LR.key("small", "none", LR.BOOK_LR)
    stored = LR.trace_numbers(case["pairs"]["small_unscaled"])
    retrained = {**stored, "val": 4.268537938594818, "max_logit": 246.8}
    out = LR.stored_cells(ctx, "small", "none", LR.BOOK_LR, {seed: {name: retrained}})
    assert out[seed][name] == stored and stored["val"] == case["pairs"]["small_unscaled"]["val_loss_end"]
    assert stored["max_logit"] is not None and stored["collapse_step"] is None  # the first seed keeps its logits
    assert [d["retrained"] for d in ctx.differences] == [4.268537938594818]
    assert LR.stored_cells(ctx, "small", "none", LR.BOOK_LR, {seed: {name: stored}}) == {seed: {name: stored}}
    other = {seed: {LR.key("small", "none", 1e-2): retrained}}
    assert LR.stored_cells(ctx, "small", "none", 1e-2, other) == other
    assert len(ctx.differences) == 1


def test_each_lab_folder_has_its_own_store(tmp_path):
    """A book in a folder of one's own (``attnlab book --out mine``) reads the runs trained there: the
    checkout's committed numbers never refuse them. The folder's own case is its first measurement."""
    run = R.case_run(R.Scale(), "small", False, R.BOOK_SEED)
    assert RunStore.load(REPO_ROOT).first(run.cfg) is not None
    assert RunStore.load(tmp_path).runs == {}
    case = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    case["pairs"]["small_unscaled"]["val_loss_end"] = 4.25  # this folder's own training of the run
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ch1_case.json").write_text(json.dumps(case), encoding="utf-8")
    mine = RunStore.load(tmp_path)
    assert mine.first(run.cfg)["val_loss_end"] == 4.25 and mine.differences == []


def test_a_case_trained_again_in_its_own_folder_never_replaces_the_judged_numbers(tmp_path):
    """`attnlab case` where the folder's case was measured before: a result with the same numbers is
    written as usual; one whose runs gave other numbers (another machine, other threads) goes beside it,
    ch1_case.retrained.json, and its differences into the folder's run store."""
    from attnlab.lab.case.run import write_result

    committed = (REPO_ROOT / "data" / "ch1_case.json").read_bytes()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ch1_case.json").write_bytes(committed)
    same = json.loads(committed)
    assert write_result(tmp_path, same, log=lambda m: None) == tmp_path / "data" / "ch1_case.json"
    assert not (tmp_path / "data" / "run_store.json").exists()

    (tmp_path / "data" / "ch1_case.json").write_bytes(committed)
    again = json.loads(committed)
    again["seed_runs"]["small_unscaled"][0]["val_loss_end"] = 4.25
    said = []
    p = write_result(tmp_path, again, log=said.append)
    assert p == tmp_path / "data" / "ch1_case.retrained.json"
    assert (tmp_path / "data" / "ch1_case.json").read_bytes() == committed  # the judged numbers stay
    store = json.loads((tmp_path / "data" / "run_store.json").read_text(encoding="utf-8"))
    (d,) = store["differences"]
    assert d["retrained"] == 4.25 and d["name"].startswith("case/small_unscaled_s20261015")
    assert d["stored"] == json.loads(committed)["seed_runs"]["small_unscaled"][0]["val_loss_end"]
    assert "--out mine" in said[0]


def test_a_book_judged_again_without_its_runs_loses_nothing(tmp_path):
    """`attnlab book --no-train` on a fresh clone (no runs/): an entry whose numbers are all stored keeps
    its JSON byte for byte: when, where and how long it was measured, and its runs' record, included."""
    from attnlab.corpus import load_corpus
    from attnlab.lab import BY_ID, EXPERIMENTS
    from attnlab.lab.labbook import run_book

    shutil.copytree(REPO_ROOT / "data", tmp_path / "data")
    ids = ["ablation", "lr_sensitivity"]
    before = {i: (tmp_path / "data" / "lab_book" / f"{i}.json").read_bytes() for i in ids}
    run_book(
        [BY_ID[i] for i in ids], load_corpus(), tmp_path, scale=R.Scale(), train=False,
        registry=EXPERIMENTS, log=lambda m: None,
    )  # fmt: skip
    for i in ids:
        assert (tmp_path / "data" / "lab_book" / f"{i}.json").read_bytes() == before[i], i


def test_a_damaged_summary_falls_back_on_the_checkpoint_history(tmp_path):
    """summary.json nested 100,000 deep (RecursionError in a bare json.loads) or a FIFO: the run's own
    history is read instead, without a traceback and without blocking."""
    import os
    import types

    from attnlab.runner import Finished
    from attnlab.runstore import final_val_of

    history = types.SimpleNamespace(val=[(10, 4.5), (20, 4.25)])
    for name, make in (("deep", lambda p: p.write_text("[" * 100_000 + "]" * 100_000)), ("fifo", os.mkfifo)):
        d = tmp_path / name
        d.mkdir()
        make(d / "summary.json")
        f = Finished(R.case_run(R.Scale(), "small", False, R.BOOK_SEED), d, "reused", _loaded=(None, None, history))
        assert final_val_of(f) == 4.25
