"""The case in batches (issue 26): the book's protocol first and a report after it, then the rest;
an honest floor over the runs trained now.

A tiny case (tiny shapes in place of the small and big presets, 20 steps) on two seeds with one
weight decay: three batches. Fast (about a minute on a busy 2-core machine).
"""

import json
from dataclasses import replace

import pytest

import attnlab.lab.case.run as case
from attnlab.config import Config
from attnlab.lab.case import claims as C
from attnlab.lab.case.run import BOOK_SEED, CaseSettings, case_runs, case_stages, run_case
from attnlab.perf import floor_of, measure_rates
from attnlab.runner import ExecutorOptions, Run, RunFoldersRefused, execute
from conftest import SAMPLE_TEXT

TINY = {"n_layer": 2, "block_size": 16, "vocab_size": 60, "batch_size": 4, "warmup": 3, "eval_batches": 2}
SETTINGS = CaseSettings(
    steps=20,
    seeds=(BOOK_SEED, BOOK_SEED + 1),
    big_seeds=2,
    wd_values=(0.0,),
    wd_seeds=1,
    init_d_heads=(32, 64),
    init_samples=2,
    init_samples_fixed=2,
    execution=ExecutorOptions("serial"),
    device="cpu",
)


@pytest.fixture()
def tiny(monkeypatch, tmp_path, one_thread):
    monkeypatch.setattr(case, "SMALL", {**TINY, "d_model": 16, "n_head": 2})
    monkeypatch.setattr(case, "BIG", {**TINY, "d_model": 32, "n_head": 1})
    monkeypatch.setattr(case, "BOOK_STEPS", (10,))
    monkeypatch.setattr(case, "case_run", lambda name, cfg, keep_weights=(10,): Run(name, cfg, "case", keep_weights))
    monkeypatch.setattr("attnlab.perf.matmul_rate", lambda device=None: 1e10)
    monkeypatch.setattr("attnlab.perf.matmul_only_step_s", lambda cfg, device=None: 1e-4)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
    return tmp_path, corpus


def test_the_book_s_protocol_trains_first_and_every_run_once():
    s = replace(SETTINGS, seeds=tuple(BOOK_SEED + i for i in range(5)), big_seeds=3, wd_values=(0.0, 0.01))
    stages = case_stages(s)
    names = [r.name for _, batch in stages for r in batch]
    every = [r.name for g in case_runs(s)[0] for r in g]
    assert sorted(names) == sorted(every) and len(names) == len(set(names))
    first = {r.name for r in stages[0][1]}
    small3 = {f"small_{t}_s{BOOK_SEED + i}" for i in range(3) for t in ("unscaled", "scaled")}
    assert first == small3 | {"big_unscaled", "big_scaled"}  # §1.19.2's three seeds and both pairs' first
    assert all("_wd" in r.name for _, batch in stages[-2:] for r in batch)  # weight decay last
    assert len(case_stages(CaseSettings.quick())) == 1  # --quick: one batch


def test_a_report_after_each_batch_true_to_what_finished(tiny):
    out, corpus = tiny
    seen, lines = [], []

    def on_stage(res, info):
        on_disk = json.loads((out / "data" / "ch1_case.json").read_text(encoding="utf-8"))
        assert on_disk["progress"] == res["progress"]  # written before the report is asked for
        seen.append((json.loads(json.dumps(res)), info))

    final = run_case(SETTINGS, out, corpus=corpus, progress=False, log=lines.append, on_stage=on_stage)
    assert [i["batch"] for _, i in seen] == [1, 2, 3] and seen[-1][1]["next"] is None
    first, _ = seen[0]
    assert first["progress"]["complete"] is False and first["progress"]["runs_done"] == 6
    assert set(first["progress"]["pending"]) == {
        f"big_unscaled_s{BOOK_SEED + 1}",
        f"big_scaled_s{BOOK_SEED + 1}",
        f"big_unscaled_wd0_s{BOOK_SEED}",
        f"big_scaled_wd0_s{BOOK_SEED}",
    }
    assert len(C.runs(first, "big_scaled")) == 1 and first["weight_decay"]["pairs"] == []
    assert len(C.runs(final, "big_scaled")) == 2 and len(final["weight_decay"]["pairs"]) == 1
    assert final["progress"]["complete"] is True and final["progress"]["runs_done"] == 10
    # every batch's verdicts are what the judges say of the numbers it holds (nothing carried over)
    for res, _ in seen:
        assert [c["verdict"] for c in C.check_claims(res)] == [c["verdict"] for c in res["claims"]]
    # what the first batch already measured is kept as it was by the later ones
    assert final["pairs"] == first["pairs"] and final["seeds"] == first["seeds"]
    # --no-progress: one line per finished run, and a line per batch
    for name in [r.name for g in case_runs(SETTINGS)[0] for r in g]:
        assert sum(m.startswith(f"  {name}: ") and "done" in m for m in lines) == 1, name
    assert sum("batch" in m for m in lines) >= 3


def test_the_floor_counts_only_runs_trained_now(tiny):
    out, corpus = tiny
    res = run_case(SETTINGS, out, corpus=corpus, progress=False, log=lambda m: None)
    t = res["timings"]
    assert t["floor_runs"] == 10 and t["floor_steps"] == 10 * 20 and not t["reused_runs"]
    assert 0 < t["train_floor_s"] <= t["train_matmuls_only_s"]
    again = run_case(SETTINGS, out, corpus=corpus, progress=False, log=lambda m: None)["timings"]
    assert again["floor_runs"] == 0 and again["train_floor_s"] == 0 and again["train_wall_over_floor"] is None
    assert again["reused_runs"] and len(again["reused_run_names"]) == 10


def test_a_foreign_run_folder_stops_the_case_before_any_training(tiny):
    out, corpus = tiny
    runs = [r for g in case_runs(SETTINGS)[0] for r in g]
    last = runs[-1]  # a weight-decay run: trained in the last batch
    other = Run(last.name, last.cfg.replace(max_steps=30), "case")
    execute([other], SAMPLE_TEXT, out / "runs", executor="serial", progress=False, log=lambda m: None)
    (out / "runs" / "case" / last.name / "summary.json").unlink()  # interrupted: a checkpoint to resume
    with pytest.raises(RunFoldersRefused, match=last.name):
        run_case(SETTINGS, out, corpus=corpus, progress=False, log=lambda m: None)
    assert sorted(p.name for p in (out / "runs" / "case").iterdir()) == [last.name]  # nothing else trained


def test_the_floor_never_exceeds_the_matmuls_alone(monkeypatch):
    cfg = Config(d_model=32, n_head=2, n_layer=1, block_size=16, batch_size=4, vocab_size=60)
    rates = measure_rates([cfg])
    for parallel in (1, 2):
        f = floor_of([(cfg, 100)], rates, parallel)
        assert 0 < f["floor_s"] <= f["matmuls_only_s"]
    assert "one thread" in rates["protocol"] and isinstance(rates["reliable"], bool)
    # a square-matmul rate measured far too low (a busy core): the floor still stays below
    monkeypatch.setattr("attnlab.perf.matmul_rate", lambda device=None: 1.0)
    slow = measure_rates([cfg])
    f = floor_of([(cfg, 100)], slow, 2)
    assert f["floor_s"] <= f["matmuls_only_s"] * (1 + 1e-12)
