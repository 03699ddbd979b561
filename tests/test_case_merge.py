"""``attnlab case --reuse-json`` merges (issue 22): more seeds without retraining what only the JSON remembers.

A tiny case (tiny shapes in place of the small and big presets, 20 steps, weights kept at step 10
standing in for §1.12.1's steps) on two seeds is the "committed" result; the run folders of its
second seed are then removed (as on a machine without the old runs) and the runs of two more seeds
are trained. The merge must keep every stored entry bit for bit, measure only the new runs and add
them; the big unscaled member on more seeds than the scaled one must stay paired seed by seed.
"""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import attnlab.lab.case.run as case
from attnlab.cli import main
from attnlab.lab.case import claims as C
from attnlab.lab.case.run import BOOK_SEED, CaseError, CaseSettings, order_seed_runs, run_case, stored_runs
from attnlab.runner import ExecutorOptions, Finished, Run, execute
from conftest import SAMPLE_TEXT

SEEDS = tuple(BOOK_SEED + i for i in range(4))
TINY = {"n_layer": 2, "block_size": 16, "vocab_size": 60, "batch_size": 4, "warmup": 3, "eval_batches": 2}
OLD = CaseSettings(
    steps=20,
    seeds=SEEDS[:2],
    big_seeds=2,
    wd_values=(0.0,),
    wd_seeds=1,
    init_d_heads=(32, 64),
    init_samples=2,
    init_samples_fixed=2,
    execution=ExecutorOptions("serial"),
    device="cpu",
)
# what the merge asks for (the CLI options below build the same runs)
NEW = replace(OLD, seeds=SEEDS, big_unscaled_seeds=3, wd_seeds=2)
MERGE_ARGS = ["--seeds", "4", "--big-seeds", "2", "--big-unscaled-seeds", "3", "--wd-seeds", "2"]
DATA = ("init_sweep", "init_sweep_fixed_d_model", "init_four_heads", "pairs", "qk_scale", "samples", "environment")


def _quiet(_msg):
    pass


@pytest.fixture(scope="module")
def merged(tmp_path_factory, one_thread):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(case, "SMALL", {**TINY, "d_model": 16, "n_head": 2})
        mp.setattr(case, "BIG", {**TINY, "d_model": 32, "n_head": 1})
        mp.setattr(case, "BOOK_STEPS", (10,))
        mp.setattr(case, "case_run", lambda name, cfg, keep_weights=(10,): Run(name, cfg, "case", keep_weights))
        mp.setattr("attnlab.perf.matmul_rate", lambda device=None: 1e10)
        mp.setattr("attnlab.perf.matmul_only_step_s", lambda cfg, device=None: 1e-4)
        root = tmp_path_factory.mktemp("merge")
        corpus = root / "corpus.txt"
        corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
        old_out, new_out = root / "old", root / "new"
        run_case(OLD, old_out, corpus=corpus, progress=False, log=_quiet)
        old_json = (old_out / "data" / "ch1_case.json").read_text(encoding="utf-8")
        old = json.loads(old_json)
        runs_dir = old_out / "runs"
        gone = [r for g in case.case_runs(OLD)[0] for r in g if r.cfg.seed == SEEDS[1]]
        for r in gone:  # the second seed lives in the JSON alone now
            shutil.rmtree(r.dir(runs_dir))
        extra = [r for g in case.case_runs(NEW)[0] for r in g if r.name not in stored_runs(old)]
        execute(extra, SAMPLE_TEXT, runs_dir, executor="serial", progress=False, log=_quiet)
        (new_out / "data").mkdir(parents=True)
        (new_out / "data" / "ch1_case.json").write_text(old_json, encoding="utf-8")
        (new_out / "runs").symlink_to(runs_dir)
        measured = []
        real = case.compact_summary
        mp.setattr(case, "compact_summary", lambda h, w, **kw: measured.append(1) or real(h, w, **kw))
        common = ["--steps", "20", "--corpus", str(corpus), "--device", "cpu", "--executor", "serial"]
        assert main(["case", "--reuse-json", *MERGE_ARGS, *common, "--out", str(new_out), "--no-progress"]) == 0
        new = json.loads((new_out / "data" / "ch1_case.json").read_text(encoding="utf-8"))
        yield {
            "old": old,
            "new": new,
            "extra": extra,
            "gone": gone,
            "measured": len(measured),
            "runs": runs_dir,
            "corpus": corpus,
            "root": root,
            "mp": mp,
        }


def _seeds(entries):
    return [e["config"]["seed"] for e in entries]


def test_merge_keeps_every_stored_entry_bit_for_bit(merged):
    old, new = merged["old"], merged["new"]
    for key in DATA:
        assert new[key] == old[key], key
    assert new["seeds"]["runs"][: len(old["seeds"]["runs"])] == old["seeds"]["runs"]
    for key, entries in old["seed_runs"].items():
        assert new["seed_runs"][key][: len(entries)] == entries, key
    assert all(p in new["weight_decay"]["pairs"] for p in old["weight_decay"]["pairs"])
    assert all(new["book_steps"]["runs"][n] == d for n, d in old["book_steps"]["runs"].items())
    assert all(new["timings"][k] == v for k, v in old["timings"].items())
    # the removed second seed is still there, from the JSON alone
    assert {r.name for r in merged["gone"]} <= stored_runs(new)


def test_merge_adds_the_new_seeds_and_measures_only_them(merged):
    new, extra = merged["new"], merged["extra"]
    assert [r["seed"] for r in new["seeds"]["runs"]] == list(SEEDS)
    gaps = [r["gap"] for r in new["seeds"]["runs"]]
    assert new["seeds"]["mean_gap"] == pytest.approx(sum(gaps) / 4) and new["seeds"]["max_gap"] == max(gaps)
    assert _seeds(new["seed_runs"]["small_unscaled"]) == _seeds(new["seed_runs"]["small_scaled"]) == list(SEEDS[1:])
    assert _seeds(new["seed_runs"]["big_unscaled"]) == [SEEDS[1], SEEDS[2]]
    assert _seeds(new["seed_runs"]["big_scaled"]) == [SEEDS[1]]
    assert [(p["weight_decay"], p["seed"]) for p in new["weight_decay"]["pairs"]] == [(0.0, SEEDS[0]), (0.0, SEEDS[1])]
    assert {"big_unscaled_s" + str(SEEDS[2]), "big_unscaled_wd0_s" + str(SEEDS[1])} <= set(new["book_steps"]["runs"])
    # each new run measured once, nothing stored measured again; the config names what was added
    assert merged["measured"] == len(extra) == 7
    assert new["config"]["added"] == sorted(r.name for r in extra)
    assert new["config"]["settings"]["seeds"] == list(SEEDS) and new["config"]["settings"]["big_unscaled_seeds"] == 3
    # unequal members: the claims pair the big members seed by seed (zip of claims.runs)
    u, s = C.runs(new, "big_unscaled"), C.runs(new, "big_scaled")
    assert len(u) == 3 and len(s) == 2
    assert [a["config"]["seed"] for a in u[:2]] == [b["config"]["seed"] for b in s]
    assert len(C.big_seed_gaps(new)) == 2 and len(C.small_seed_gaps(new)) == 4


def test_new_entries_are_what_the_full_case_stores(merged):
    """A new seed's entry is compact_summary of its history plus its q/k scale; its seeds row the
    difference of the two members' stored end losses."""
    new = merged["new"]
    seed = SEEDS[2]
    run = next(r for r in merged["extra"] if r.name == f"small_unscaled_s{seed}")
    history = Finished(run, run.dir(merged["runs"]), "reused").history
    entry = next(e for e in new["seed_runs"]["small_unscaled"] if e["run"] == run.name)
    want = json.loads(json.dumps(case.compact_summary(history, OLD.loss_window)))
    assert {k: v for k, v in entry.items() if k not in ("run", "config", "qk")} == want
    assert set(entry["qk"]) == {"before", "after"}
    scaled = next(e for e in new["seed_runs"]["small_scaled"] if e["config"]["seed"] == seed)
    row = next(r for r in new["seeds"]["runs"] if r["seed"] == seed)
    assert row["gap"] == entry["val_loss_end"] - scaled["val_loss_end"]


def test_missing_run_folders_change_nothing(merged, tmp_path):
    """The old settings again, the second seed's folders absent: every section stays as stored."""
    old = merged["old"]
    (tmp_path / "runs").symlink_to(merged["runs"])
    again = run_case(
        OLD, tmp_path, corpus=merged["corpus"], progress=False, log=_quiet, base=json.loads(json.dumps(old))
    )
    again = json.loads(json.dumps(again))
    for key in (*DATA, "seeds", "seed_runs", "weight_decay", "book_steps"):
        assert again[key] == old[key], key
    assert again["config"]["added"] == []
    assert [(c["id"], c["pass"]) for c in again["claims"]] == [(c["id"], c["pass"]) for c in old["claims"]]


def test_a_base_measured_otherwise_is_refused(merged, tmp_path):
    old = merged["old"]
    for settings, words in (
        (replace(NEW, steps=30), "without --reuse-json"),
        (replace(NEW, seeds=(1, 2)), "first seed"),
        (replace(NEW, loss_window=10), "loss_window"),
    ):
        with pytest.raises(CaseError, match=words):
            run_case(settings, tmp_path, corpus=merged["corpus"], progress=False, log=_quiet, base=old)
    other = tmp_path / "other.txt"
    other.write_text(SAMPLE_TEXT * 2, encoding="utf-8")
    with pytest.raises(CaseError, match="same --corpus"):
        run_case(NEW, tmp_path, corpus=other, progress=False, log=_quiet, base=old)


def test_order_seed_runs_pairs_the_seeds_both_members_have_first():
    e = lambda seed: {"run": f"r{seed}", "config": {"seed": seed}}
    got = order_seed_runs({"big_unscaled": [e(3), e(1), e(2), e(4)], "big_scaled": [e(3), e(1)]}, [0, 1, 2, 3, 4])
    assert _seeds(got["big_unscaled"]) == [1, 3, 2, 4] and _seeds(got["big_scaled"]) == [1, 3]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--seeds", "0"], "a number of seeds between 1 and 64"),
        (["--seeds", "65"], "a number of seeds between 1 and 64"),
        (["--seeds", "two"], "expected a whole number"),
        (["--big-seeds", "-1"], "a number of seeds between 1 and 64"),
        (["--big-seeds", "4"], "--big-seeds 4 exceeds --seeds 3"),
        (["--seeds", "5", "--big-unscaled-seeds", "6"], "--big-unscaled-seeds 6 exceeds --seeds 5"),
        (["--seeds", "2", "--wd-seeds", "3"], "--wd-seeds 3 exceeds --seeds 2"),
        (["--big-seeds", "3", "--big-unscaled-seeds", "2"], "below --big-seeds 3"),
        (["--quick", "--seeds", "2", "--wd-seeds", "1"], "--quick trains no weight-decay pairs"),
    ],
)
def test_bad_seed_options_give_one_line(args, words, capsys, tmp_path):
    assert main(["case", *args, "--out", str(tmp_path), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.splitlines()) == 1, err
    assert not (Path(tmp_path) / "runs").exists()  # refused before anything trained
