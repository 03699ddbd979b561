"""attnlab book --plan / case --plan: the runs to train, those on disk, core-hours from the committed
timing records and the wall time of longest-first packing, for every executor."""

import json
import re
import shutil
from pathlib import Path

import pytest

from attnlab.cli import main
from attnlab.errors import AttnlabError
from attnlab.lab import EXPERIMENTS
from attnlab.lab.decide import DEFAULT_S_PER_COST
from attnlab.lab.plan import book_plan, pack, read_records
from attnlab.lab.runs import Scale
from attnlab.perf import shape_key
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


def idle(seconds: float, share: float = 0.97, load: float = 1.0) -> dict:
    """per_run_conditions of a run timed with ``share`` of its wall time on the CPU at ``load`` on 2 CPUs."""
    state = "idle" if share >= 0.9 and load <= 2.5 else "busy"
    return {"state": state, "cpu_s": round(seconds * share, 3), "load": load, "cpus": 2, "threads": 1}


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
    """The committed plan: what calibrate() makes of the committed records, as `book --plan` prints it."""
    from attnlab.lab.plan import PLAN_CHECK, calibrate, read_check_records, read_run_records

    assert main(["book", "--plan", "--executor", "local", "--workers", "2", "--out", str(tmp_path), "--no-probe"]) == 0
    out = capsys.readouterr().out
    got = plan_numbers(out)
    runs = unique_runs(FULL)
    timed, sums = read_run_records(EXPERIMENTS, COMMITTED, FULL)
    cal = calibrate(timed + read_check_records(COMMITTED.parent / PLAN_CHECK), sums)
    each = [cal.own.get(r.name) or cal.seconds(r.cfg) for r in runs]
    assert got["todo"] == len(runs) and got["done"] == 0  # nothing on disk under tmp_path
    assert got["core_s"] == pytest.approx(sum(each), abs=18)  # printed to 0.01 core-h
    plan = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, options=ExecutorOptions("local", workers=2))
    extra = [e + plan.run_extra_s for e in each]  # each run's process beside its timed loop (Factors)
    assert f"wall ≈ {pack(extra, plan.slots) / 3600:.1f} h" in out
    assert plan.run_extra_s > 0 and "墙钟包含 / the wall holds" in out and "not counted: setup" in out
    assert "校准 / calibrated on" in out and "搁置 / set aside" in out
    # no committed lab-book record says its cores were idle: none of them calibrates
    assert all(r.state != "idle" for r in timed)
    assert not any(r.source != "plan_check" for r in cal.used)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()  # trained and wrote nothing


def test_records_of_unknown_or_busy_cores_do_not_calibrate(tmp_path, capsys):
    """Doubling the seconds of records that do not say their cores were idle changes nothing; the plan
    says it set them aside and fell back to decide's default rate."""
    with_records(tmp_path / "x1")
    with_records(tmp_path / "x2", scale_by=2.0)
    got = []
    for d in ("x1", "x2"):
        assert main(["book", "--plan", "--executor", "serial", "--out", str(tmp_path / d)]) == 0
        out = capsys.readouterr().out
        got.append(plan_numbers(out)["core_s"])
        assert "decide's default rate" in out and re.search(r"set aside: \d+ unknown", out)
    assert got[0] == got[1]
    plan = book_plan(EXPERIMENTS, tmp_path / "x1", FULL, EXPERIMENTS, options=ExecutorOptions("serial"))
    assert plan.calibration.basis == "default" and plan.rate == DEFAULT_S_PER_COST
    n_named = len({r.name for r in read_run_records_all(tmp_path / "x1")})
    assert plan.calibration.aside["unknown"] >= n_named > 0


def read_run_records_all(root):
    from attnlab.lab.plan import read_run_records

    return read_run_records(EXPERIMENTS, root / "data" / "lab_book", FULL)[0]


def mark(d: Path, experiment: str, conditions, keep: set = frozenset()) -> set[str]:
    """Give the runs ``experiment``'s record names (but those in ``keep``) the conditions
    ``conditions(seconds)`` in every record that names them (a run shared by several experiments
    has one folder); their names."""
    names = set(json.loads((d / f"{experiment}.json").read_text(encoding="utf-8"))["timings"]["per_run"]) - keep
    for p in d.glob("*.json"):
        doc = json.loads(p.read_text(encoding="utf-8"))
        t = doc.get("timings") or {}
        mine = {k: conditions(v) for k, v in (t.get("per_run") or {}).items() if k in names}
        if mine:
            t["per_run_conditions"] = {**t.get("per_run_conditions", {}), **mine}
            p.write_text(json.dumps(doc), encoding="utf-8")
    return names


def test_idle_records_calibrate_on_their_wall_time_and_busy_ones_are_set_aside(tmp_path, capsys):
    d = with_records(tmp_path)
    runs = {r.name: r for r in unique_runs(FULL)}
    idle_names = mark(d, "failures", idle) & set(runs)  # idle cores: their wall time calibrates
    busy_names = mark(d, "ablation", lambda s: idle(s, share=0.5), keep=idle_names) & set(runs)  # shared: aside
    plan = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, options=ExecutorOptions("serial"))
    cal = plan.calibration
    named = {r.name: r.seconds for r in cal.used}
    assert cal.basis == "idle" and set(named) == idle_names
    assert cal.aside["busy"] == len(busy_names)
    cost = {c.run.name: c.seconds for c in plan.costs}
    assert all(cost[k] == v for k, v in named.items())  # an idle run costs what it took
    by_shape: dict = {}
    for k in named:
        by_shape.setdefault(shape_key(runs[k].cfg), []).append(k)
    for key, names in by_shape.items():  # each shape's rate: its idle runs' seconds over their cost
        rate = sum(named[k] for k in names) / sum(train_cost(runs[k].cfg) for k in names)
        others = [r for r in runs.values() if r.name not in named and shape_key(r.cfg) == key]
        for other in others:
            assert cost[other.name] == pytest.approx(train_cost(other.cfg) * rate)
    assert busy_names and all(cost[k] == pytest.approx(cal.seconds(runs[k].cfg)) for k in busy_names)
    assert main(["book", "--plan", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"calibrated on: {len(named)} run(s) timed on idle cores" in out
    assert f"{cal.aside['busy']} busy" in out


def test_too_few_idle_records_fall_back_to_cpu_time(tmp_path, capsys):
    d = with_records(tmp_path)
    runs = {r.name: r for r in unique_runs(FULL)}
    busy = mark(d, "ablation", lambda s: idle(s, share=0.4, load=4.0)) & set(runs)
    plan = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, options=ExecutorOptions("serial"))
    cal = plan.calibration
    cpu = {r.name: r.cpu_s for r in cal.used}
    assert cal.basis == "cpu" and set(cpu) == busy
    assert all(r.cpu_s == pytest.approx(r.seconds * 0.4, abs=0.002) for r in cal.used)
    assert cal.rate == pytest.approx(sum(cpu.values()) / sum(train_cost(runs[k].cfg) for k in cpu))
    cost = {c.run.name: c.seconds for c in plan.costs}
    assert all(cost[k] == v for k, v in cpu.items())  # its CPU time, not its wall
    assert main(["book", "--plan", "--out", str(tmp_path)]) == 0
    assert "fewer than 3 runs timed on idle cores, so the CPU time of" in capsys.readouterr().out


def test_the_checks_runs_calibrate_too(tmp_path):
    """data/plan_check.json beside data/lab_book: its idle runs calibrate the full book's plan."""
    with_records(tmp_path)
    small = next(r for r in unique_runs(FULL) if r.name.startswith("small_scaled"))
    rows = [
        {"name": f"pc_{i}", "config": small.cfg.replace(max_steps=100 * (i + 1)).to_dict(), "seconds": 10.0 * (i + 1)}
        | {"cpu_s": 9.8 * (i + 1), "load": 1.5, "cpus": 2, "threads": 1}
        for i in range(3)
    ]
    (tmp_path / "data" / "plan_check.json").write_text(json.dumps({"kind": "plan_check", "runs": rows}), "utf-8")
    plan = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, options=ExecutorOptions("serial"))
    assert plan.calibration.basis == "idle" and {r.source for r in plan.calibration.used} == {"plan_check"}
    cost = {c.run.name: c.seconds for c in plan.costs}
    assert cost[small.name] == pytest.approx(10.0 * 15)  # 0.1 s a step at its shape, 1500 steps
    (tmp_path / "data" / "plan_check.json").write_text(
        json.dumps({"kind": "plan_check", "runs": [{"name": 1}]}), "utf-8"
    )
    with pytest.raises(AttnlabError, match="plan_check.json"):
        book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, options=ExecutorOptions("serial"))


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


# ---------------------------------------------------------------------------- beside the training
def a_plan(secs: dict, **kw):
    """A plan of runs with these timed seconds (nothing on disk)."""
    from attnlab.config import Config
    from attnlab.lab.plan import Plan, RunCost
    from attnlab.runner import Run

    costs = [RunCost(Run(n, Config(seed=i)), s, s, False, False) for i, (n, s) in enumerate(secs.items())]
    return Plan("t", "local", 2, 2, "", costs=costs, **kw)


def test_the_wall_holds_batches_processes_sweeps_and_reports():
    """The model's arithmetic: sweeps before, then each batch packed longest first with each run's
    process beside its timed loop, then the report; a run alone is `concurrency` times faster than
    the records (timed two at once) say."""
    secs = {"a": 300.0, "b": 300.0, "c": 100.0, "d": 100.0, "e": 100.0}
    plain = a_plan(secs)
    assert plain.wall_s == pack(list(secs.values()), 2) == 500  # no factors: the timed training alone
    p = a_plan(
        secs,
        batches=[["a", "c", "d"], ["b", "e"]],
        run_extra_s=5.0,
        before_s=60.0,
        batch_s=4.0,
        concurrency=1.25,
        calibrated_at=2,
    )
    first = pack([305, 105, 105], 2) + 4  # 305 | 105 + 105 = 210: 305, then the report
    second = pack([305, 105], 2) + 4
    assert p.batch_walls() == [first, second] == [309, 309]
    assert p.wall_s == p.wall_at(2) == 60 + 309 + 309
    assert p.train_wall_s() == 300 + 300  # the timed training alone, batch after batch
    # one slot: a run alone is 1.25 x faster than the records timed two at once say
    assert p.wall_at(1) == pytest.approx(60 + (500 / 1.25 + 15 + 4) + (400 / 1.25 + 10 + 4))
    assert p.speed(1) == pytest.approx(0.8) and p.speed(4) == 1.0
    lone = a_plan(secs, concurrency=1.25, calibrated_at=1)  # records timed alone: two at once are slower
    assert lone.wall_at(2) == pytest.approx(500 * 1.25) and lone.wall_at(1) == 900
    done = a_plan({}, before_s=60.0, batch_s=4.0, batches=[["a"]])
    assert done.wall_s == 0  # nothing to train: no sweep, no report counted


def test_case_plan_prices_the_committed_factors_by_its_calibration(tmp_path, capsys):
    """`case --plan`: the factors of data/bench_case_plan.json, each a multiple of its reference run,
    priced by the plan's own calibration; the batches are the case's; and it says what it holds."""
    from attnlab.lab.case.run import CaseSettings, case_stages
    from attnlab.lab.plan import FACTORS, case_plan, read_factors

    f = read_factors(COMMITTED.parent / FACTORS)
    assert f.reference is not None and f.source == "data/bench_case_plan.json"
    settings = CaseSettings(execution=ExecutorOptions("local", workers=2))
    p = case_plan(settings, tmp_path, EXPERIMENTS, records_dir=COMMITTED)
    ref = p.calibration.seconds(f.reference)
    assert p.run_extra_s == pytest.approx(f.outside_timed * ref)
    assert p.before_s == pytest.approx(f.sweeps * ref) and p.batch_s == pytest.approx(f.report * ref)
    assert p.batches == [[r.name for r in b] for _, b in case_stages(settings)]
    left = {c.run.name: c.left_s for c in p.todo}
    k = p.speed(2)
    walls = [pack([left[n] * k + p.run_extra_s for n in b], 2) + p.batch_s for b in p.batches]
    assert p.wall_at(2) == pytest.approx(p.before_s + sum(walls))
    assert p.wall_at(2) > p.train_wall_s(2) >= pack(list(left.values()), 2)  # more than the training alone
    assert main(["case", "--plan", "--out", str(tmp_path), "--workers", "2", "--no-probe"]) == 0
    out = capsys.readouterr().out
    assert "墙钟包含 / the wall holds: timed training" in out and "init sweeps" in out and "report and figures" in out
    assert "not counted: setup (pip install)" in out and "5 batch(es) one after another" in out
    # no factors beside the records: the timed training alone, and the plan says what it leaves out
    shutil.copytree(COMMITTED, tmp_path / "bare" / "data" / "lab_book")
    shutil.copy(COMMITTED.parent / "plan_check.json", tmp_path / "bare" / "data" / "plan_check.json")
    bare = case_plan(settings, tmp_path / "bare", EXPERIMENTS)
    assert bare.run_extra_s == bare.before_s == bare.batch_s == 0 and bare.concurrency == 1.0
    assert bare.wall_at(2) == pytest.approx(bare.train_wall_s(2))
    assert "no factors measured" in render_of(bare)


def render_of(plan) -> str:
    from attnlab.lab.plan import render

    return render(plan)


def test_damaged_factors_are_one_line(tmp_path):
    from attnlab.lab.plan import FACTORS, PlanError, read_factors

    path = tmp_path / FACTORS
    path.write_text(json.dumps({"kind": "bench_case_plan", "factors": {"sweeps": "x"}}), "utf-8")
    with pytest.raises(PlanError, match="bench_case_plan.json") as e:
        read_factors(path)
    assert "\n" not in str(e.value) and "scripts/bench_case_plan.py" in str(e.value)


# ---------------------------------------------------------------------------- this machine's speed
def with_probe(root: Path, probe: dict | None = None) -> Path:
    """The committed records, factors and plan_check runs under ``root``/data, the plan_check with ``probe``."""
    shutil.copytree(COMMITTED, root / "data" / "lab_book")
    shutil.copy(COMMITTED.parent / "bench_case_plan.json", root / "data" / "bench_case_plan.json")
    doc = json.loads((COMMITTED.parent / "plan_check.json").read_text(encoding="utf-8"))
    doc["probe"] = probe if probe is not None else {**doc["probe"], "cpu_s": 2.0}
    (root / "data" / "plan_check.json").write_text(json.dumps(doc), "utf-8")
    return root / "data" / "lab_book"


def fake_probe(cpu_s: float, wall_s: float | None = None, calls: list | None = None):
    from attnlab.lab.plan import ProbeTime

    def run(cfg, steps, repeats):
        if calls is not None:
            calls.append((cfg, steps, repeats))
        return ProbeTime(cpu_s, wall_s or cpu_s, 0.1)

    return run


def test_the_probe_scales_every_price_by_this_machines_speed(tmp_path):
    """A probe 1.3 x slower than the one stored beside the calibration: every run, the sweeps, the
    reports and each run's process cost 1.3 x, so the wall does; the probe ran with the stored
    probe's model, steps and repeats; the printout says the ratio and that it was measured now."""
    from attnlab.lab.case.run import CaseSettings
    from attnlab.lab.plan import case_plan, read_probe, render

    records = with_probe(tmp_path)
    stored = read_probe(records.parent / "plan_check.json")
    settings = CaseSettings(execution=ExecutorOptions("local", workers=2))
    there = case_plan(settings, tmp_path, EXPERIMENTS, records_dir=records)
    calls: list = []
    here = case_plan(settings, tmp_path, EXPERIMENTS, records_dir=records, speed_probe=fake_probe(2.6, calls=calls))
    assert calls == [(stored.config, stored.steps, stored.repeats)]
    assert here.machine.ratio == pytest.approx(1.3)
    assert here.core_s == pytest.approx(1.3 * there.core_s)
    assert here.wall_s == pytest.approx(1.3 * there.wall_s)
    for part in ("run_extra_s", "before_s", "batch_s"):
        assert getattr(here, part) == pytest.approx(1.3 * getattr(there, part)) and getattr(there, part) > 0
    assert here.calibration.rate == there.calibration.rate  # the calibration itself is untouched
    out = render(here)
    assert "x1.30 the calibration machine's, measured just now" in out and "these cores are busy" not in out
    assert "not probed" in render(there)
    book = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, records_dir=records, speed_probe=fake_probe(1.0))
    assert book.machine.ratio == pytest.approx(0.5)
    plain = book_plan(EXPERIMENTS, tmp_path, FULL, EXPERIMENTS, records_dir=records)
    assert book.core_s == pytest.approx(0.5 * plain.core_s)
    # shared cores: the probe had half a core; the plan says what the wall stretches to
    busy = case_plan(settings, tmp_path, EXPERIMENTS, records_dir=records, speed_probe=fake_probe(2.0, 4.0))
    assert busy.machine.ratio == pytest.approx(1.0) and busy.wall_s == pytest.approx(there.wall_s)
    from attnlab.lab.plan import duration

    assert (
        f"the probe had 50% of a core; while that lasts the wall stretches to about {duration(2 * there.wall_s)}"
        in (render(busy))
    )


def test_the_probe_applies_only_beside_its_calibration(tmp_path):
    """No probe stored, or a calibration that is not the stored probe's (a --quick plan, records
    without data/plan_check.json): nothing is probed, prices unchanged, the plan says why."""
    from attnlab.lab.plan import render

    shutil.copytree(COMMITTED, tmp_path / "a" / "data" / "lab_book")
    never = fake_probe(1.0, calls=(calls := []))
    p = book_plan(EXPERIMENTS, tmp_path / "a", FULL, EXPERIMENTS, speed_probe=never)
    assert p.machine.ratio is None and "is not the runs of data/plan_check.json" in render(p)
    q = book_plan(EXPERIMENTS, tmp_path, QUICK, EXPERIMENTS, records_dir=with_probe(tmp_path / "b"), speed_probe=never)
    assert q.machine.ratio is None
    doc = json.loads((COMMITTED.parent / "plan_check.json").read_text(encoding="utf-8"))
    doc.pop("probe", None)
    (tmp_path / "b" / "data" / "plan_check.json").write_text(json.dumps(doc), "utf-8")
    r = book_plan(EXPERIMENTS, tmp_path / "b", FULL, EXPERIMENTS, speed_probe=never)
    assert r.machine.ratio is None and "no probe stored in data/plan_check.json" in render(r)
    assert calls == []


def test_a_damaged_stored_probe_is_one_line_before_anything_runs(tmp_path):
    from attnlab.lab.plan import PlanError

    good = json.loads((COMMITTED.parent / "plan_check.json").read_text(encoding="utf-8"))["probe"]
    never = fake_probe(1.0, calls=(calls := []))
    for i, bad in enumerate(
        [{**good, "cpu_s": 0.0}, {**good, "cpu_s": "fast"}, {**good, "steps": -1}, {**good, "how": "guessed"}]
        + [{**good, "config": {**good["config"], "d_model": 127}}, {k: v for k, v in good.items() if k != "cpu_s"}]
    ):
        records = with_probe(tmp_path / str(i), bad)
        with pytest.raises(PlanError, match="plan_check.json") as e:
            book_plan(EXPERIMENTS, tmp_path / str(i), FULL, EXPERIMENTS, records_dir=records, speed_probe=never)
        assert "\n" not in str(e.value) and "scripts/plan_check.py" in str(e.value), str(e.value)
    assert calls == []


def test_the_probe_is_short_and_leaves_the_process_as_it_was(monkeypatch):
    """The probe trains 2 + steps x repeats steps of the stored model: an eighth of the 300-step
    reference run at most, a few seconds on the calibration's machine (its stored CPU time); it
    leaves torch's threads and random state as they were."""
    import importlib

    import torch

    from attnlab.lab.plan import PLAN_CHECK, PROBE_REPEATS, PROBE_STEPS, probe, read_probe

    training = importlib.import_module("attnlab.train")  # the module (attnlab.train is also its function)

    stored = read_probe(COMMITTED.parent / PLAN_CHECK)
    assert (stored.steps, stored.repeats) == (PROBE_STEPS, PROBE_REPEATS)
    assert 2 + stored.steps * stored.repeats <= 300 / 8
    assert stored.cpu_s * stored.repeats < 5.0  # CPU seconds of the timed repeats on the calibration's machine
    steps = []
    real = training.train_step
    monkeypatch.setattr(training, "train_step", lambda *a, **k: steps.append(k["step"]) or real(*a, **k))
    torch.set_num_threads(2)
    state = torch.get_rng_state()
    got = probe(stored.config, steps=3, repeats=2)
    assert len(steps) == 2 + 3 * 2 and torch.get_num_threads() == 2 and torch.equal(torch.get_rng_state(), state)
    assert 0 < got.cpu_s <= min(got.repeats_cpu_s) + 1e-9 and len(got.repeats_cpu_s) == 2 and got.took_s > 0


def test_plan_cli_probes_unless_told_not_to(tmp_path, capsys, monkeypatch):
    import attnlab.lab.plan

    calls: list = []
    monkeypatch.setattr(attnlab.lab.plan, "probe", fake_probe(3.0, calls=calls))
    stored = attnlab.lab.plan.read_probe(COMMITTED.parent / "plan_check.json")
    assert main(["case", "--plan", "--out", str(tmp_path), "--workers", "2"]) == 0
    assert f"x{3.0 / stored.cpu_s:.2f} the calibration machine's, measured just now" in capsys.readouterr().out
    assert main(["book", "--plan", "--out", str(tmp_path), "--no-probe"]) == 0
    assert "this machine's speed: not probed" in capsys.readouterr().out and len(calls) == 1
