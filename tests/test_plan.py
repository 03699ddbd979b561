"""attnlab book --plan / case --plan: the runs to train, those on disk, core-hours from the committed
timing records and the wall time of longest-first packing, for every executor."""

import json
import re
import shutil
from pathlib import Path

import pytest

from attnlab.cli import main
from attnlab.lab import EXPERIMENTS
from attnlab.lab.decide import DEFAULT_S_PER_COST
from attnlab.lab.plan import book_plan, pack, read_records
from attnlab.lab.runs import Scale
from attnlab.runner import ExecutorOptions, execute, train_cost

pytestmark = pytest.mark.usefixtures("one_thread")

COMMITTED = Path(__file__).resolve().parents[1] / "data" / "lab_book"
FULL = Scale.make(False)
QUICK = Scale.make(True)


def unique_runs(scale):
    runs = {}
    for e in EXPERIMENTS:
        for r in e.runs(scale):
            runs.setdefault(r.name, r)
    return list(runs.values())


def committed_records() -> tuple[float, dict[str, float]]:
    """The rate the plan must use and the runs recorded one by one, worked out here from the JSON: a record
    with ``per_run`` counts its named runs of the experiment at their own seconds and exact cost; an older
    record its seconds over its timed runs counted at the mean train_cost of its runs."""
    secs = cost = 0.0
    named: dict[str, float] = {}
    for e in EXPERIMENTS:
        p = COMMITTED / f"{e.id}.json"
        if not p.is_file():  # an entry not run yet: no record, its runs at the rate
            continue
        t = json.loads(p.read_text(encoding="utf-8")).get("timings", {})
        runs = e.runs(FULL)
        by_name = {r.name: r for r in runs}
        mine = {k: float(v) for k, v in (t.get("per_run") or {}).items() if k in by_name and float(v) > 0}
        if mine:
            secs += sum(mine.values())
            cost += sum(train_cost(by_name[k].cfg) for k in mine)
            named.update(mine)
        elif t.get("timed_runs") and t.get("compute_s") and runs:
            secs += t["compute_s"]
            cost += t["timed_runs"] * sum(train_cost(r.cfg) for r in runs) / len(runs)
    return secs / cost, named


def committed_rate() -> float:
    return committed_records()[0]


def plan_numbers(out: str) -> dict:
    m = re.search(r"to train: (\d+) run\(s\).*finished on disk: (\d+) run\(s\)", out)
    core = re.search(r"estimate: ([\d.]+) core-(h|s)", out)
    slots = re.search(r"executor \w+: (\d+) run\(s\) at once, (\d+) CPU", out)
    return {
        "todo": int(m.group(1)),
        "done": int(m.group(2)),
        "core_s": float(core.group(1)) * (3600 if core.group(2) == "h" else 1),
        "slots": int(slots.group(1)),
        "cpus": int(slots.group(2)),
    }


def with_records(root: Path, scale_by: float = 1.0) -> Path:
    d = root / "data" / "lab_book"
    d.mkdir(parents=True)
    for p in COMMITTED.glob("*.json"):
        doc = json.loads(p.read_text(encoding="utf-8"))
        if scale_by != 1.0 and doc.get("timings", {}).get("compute_s"):
            doc["timings"]["compute_s"] *= scale_by
            if "per_run" in doc["timings"]:
                doc["timings"]["per_run"] = {k: v * scale_by for k, v in doc["timings"]["per_run"].items()}
        (d / p.name).write_text(json.dumps(doc), encoding="utf-8")
    return d


def test_pack_is_longest_first_onto_the_slot_that_frees_first():
    assert pack([2, 3, 2, 3, 2], 2) == 7  # 3|3, 2->5|2->5, 2->7: the runner's order, not the optimum 6
    assert pack([5, 1, 1, 1], 2) == 5
    assert pack([1, 1, 1, 1], 8) == 1
    assert pack([], 3) == 0
    assert pack([4, 4], 1) == 8


def test_full_book_plan_comes_from_the_committed_records(tmp_path, capsys):
    assert main(["book", "--plan", "--executor", "local", "--workers", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    got = plan_numbers(out)
    runs = unique_runs(FULL)
    rate, named = committed_records()
    assert rate != pytest.approx(DEFAULT_S_PER_COST, rel=0.05)  # the records, not the fallback
    each = [named.get(r.name, train_cost(r.cfg) * rate) for r in runs]
    core = sum(each)
    assert got["todo"] == len(runs) and got["done"] == 0  # nothing on disk under tmp_path
    assert got["core_s"] == pytest.approx(core, abs=18)  # printed to 0.01 core-h
    wall = pack(each, 2)
    assert f"wall ≈ {wall / 3600:.1f} h" in out
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()  # trained and wrote nothing
    # the same records doubled: every cost doubles (the numbers come from the records)
    with_records(tmp_path / "x2", scale_by=2.0)
    capsys.readouterr()
    assert main(["book", "--plan", "--executor", "local", "--workers", "2", "--out", str(tmp_path / "x2")]) == 0
    assert plan_numbers(capsys.readouterr().out)["core_s"] == pytest.approx(2 * core, abs=36)


def test_records_are_read_per_experiment():
    recs = {r.experiment: r for r in read_records(EXPERIMENTS, COMMITTED)}
    ex2 = json.loads((COMMITTED / "exercise2.json").read_text(encoding="utf-8"))["timings"]
    assert recs["exercise2"].compute_s == ex2["compute_s"] and recs["exercise2"].timed_runs == ex2["timed_runs"]
    assert "case" not in recs and "heads" not in recs  # no timed runs of their own: no record


def test_a_run_on_disk_counts_as_finished_and_a_checkpoint_as_its_steps_left(tmp_path, text):
    from attnlab.train import train

    with_records(tmp_path)
    runs = sorted(unique_runs(QUICK), key=lambda r: train_cost(r.cfg))
    before = book_plan(EXPERIMENTS, tmp_path, QUICK, EXPERIMENTS, options=ExecutorOptions("serial"))
    cost = {c.run.name: c.seconds for c in before.costs}
    done, half = runs[0], runs[1]
    execute([done], text, tmp_path / "runs", progress=False)
    with pytest.raises(KeyboardInterrupt):
        train(text, half.cfg, out_dir=half.dir(tmp_path / "runs"), stop_after=half.cfg.max_steps // 2)
    after = book_plan(EXPERIMENTS, tmp_path, QUICK, EXPERIMENTS, options=ExecutorOptions("serial"))
    assert [c.run.name for c in after.finished] == [done.name]
    assert len(after.todo) == len(before.todo) - 1
    left = half.cfg.max_steps - half.cfg.max_steps // 2
    assert after.core_s == pytest.approx(
        before.core_s - cost[done.name] - cost[half.name] * (1 - left / half.cfg.max_steps)
    )
    assert [c.run.name for c in after.todo if c.resumes] == [half.name]


def test_slurm_and_ray_plans_count_the_cluster_cpus(tmp_path, capsys, monkeypatch):
    shutil.copytree(COMMITTED, tmp_path / "data" / "lab_book")
    args = ["book", "--plan", "--out", str(tmp_path), "--executor", "slurm"]
    assert main([*args, "--slurm-cpus", "2", "--slurm-parallelism", "8"]) == 0
    got = plan_numbers(capsys.readouterr().out)
    assert (got["slots"], got["cpus"]) == (8, 16)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    import os

    assert main(["book", "--plan", "--out", str(tmp_path), "--executor", "ray"]) == 0
    got = plan_numbers(capsys.readouterr().out)
    assert got["cpus"] == (os.cpu_count() or 1)  # a local Ray gets this machine's CPUs


def test_case_plan_and_its_bad_input(tmp_path, capsys):
    shutil.copytree(COMMITTED, tmp_path / "data" / "lab_book")
    assert main(["case", "--plan", "--out", str(tmp_path), "--seeds", "4", "--big-seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert plan_numbers(out)["todo"] == 4 * 2 + 2 * 2 + 4  # small pair x4, big pair x2, the weight-decay pairs
    assert "big_scaled" in out and not (tmp_path / "runs").exists()
    assert main(["case", "--plan", "--executor", "slurm", "--slurm-time", "soon", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--slurm-time" in err


def test_a_record_that_names_its_runs_costs_them_exactly(tmp_path):
    """timings.per_run (run name -> seconds): those runs cost what they took, and the rate is theirs."""
    d = with_records(tmp_path)
    for p in d.glob("*.json"):  # only ablation names its runs here (another record may name a shared run)
        other = json.loads(p.read_text(encoding="utf-8"))
        if other.get("timings", {}).pop("per_run", None) is not None:
            p.write_text(json.dumps(other), encoding="utf-8")
    doc = json.loads((d / "ablation.json").read_text(encoding="utf-8"))
    runs = EXPERIMENTS[[e.id for e in EXPERIMENTS].index("ablation")].runs(FULL)
    named = {r.name: 100.0 + i for i, r in enumerate(runs[:3])}
    doc["timings"]["per_run"] = named
    (d / "ablation.json").write_text(json.dumps(doc), encoding="utf-8")
    rec = {r.experiment: r for r in read_records(EXPERIMENTS, d)}["ablation"]
    assert rec.timed_runs == 3 and rec.compute_s == sum(named.values())
    assert rec.rate == pytest.approx(sum(named.values()) / sum(train_cost(r.cfg) for r in runs[:3]))
    plan = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, options=ExecutorOptions("serial"))
    cost = {c.run.name: c.seconds for c in plan.costs}
    assert all(cost[k] == v for k, v in named.items())
    assert cost[runs[3].name] == pytest.approx(train_cost(runs[3].cfg) * plan.rate)
