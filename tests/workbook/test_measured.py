"""Exercises 1 and 2: run folders judged against the lab's per-seed gaps."""

import json
import statistics
import subprocess
import sys

import pytest
from scipy import stats

from attnlab.workbook import measured
from attnlab.workbook.measured import RunError


def _run(root, name, cfg, val, steps=None):
    d = root / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg.to_dict()))
    (d / "summary.json").write_text(json.dumps({"steps": steps or cfg.max_steps, "val_loss_end": val}))
    (d / "metrics.jsonl").write_text("")
    return str(d)


def _pair(root, exercise, d_head, seed, gap, base=4.1):
    cfg = measured.expected_configs(exercise, seed)[d_head]
    return [
        _run(root, f"d{d_head}_scaled_s{seed}", cfg, base),
        _run(root, f"d{d_head}_unscaled_s{seed}", cfg.replace(scaled=False), base + gap),
    ]


def test_the_shipped_gaps_are_the_lab_books():
    assert json.loads(measured.LAB_GAPS.read_text(encoding="utf-8")) == json.loads(
        json.dumps(measured.derive_lab_gaps())
    ), "lab_gaps.json is stale: run python scripts/docs_workbook.py"


def test_prediction_interval_by_hand():
    xs = [0.1, 0.3, 0.2]
    m, lo, hi = measured.prediction_interval(xs)
    half = stats.t.ppf(0.975, 2) * statistics.stdev(xs) * (1 + 1 / 3) ** 0.5
    assert m == pytest.approx(0.2) and hi - m == pytest.approx(half) and m - lo == pytest.approx(half)


def test_ex1_consistent_and_outside(tmp_path):
    lab = measured.lab_gaps("exercise1")[64]
    m, lo, hi = measured.prediction_interval(lab)
    ok, lines = measured.check("ex1", _pair(tmp_path, "ex1", 64, 7, m))
    assert ok and "consistent" in lines[1]
    far = tmp_path / "far"
    far.mkdir()
    ok, lines = measured.check("ex1", _pair(far, "ex1", 64, 7, hi + 0.5))
    assert not ok and "outside by +0.500" in lines[1]


def test_another_config_is_refused_in_one_line(tmp_path):
    cfg = measured.expected_configs("ex1", 7)[64].replace(max_steps=300)
    d = _run(tmp_path, "short", cfg, 4.0)
    with pytest.raises(RunError, match="max_steps=300") as e:
        measured.check("ex1", [d])
    assert "\n" not in str(e.value)


def test_unfinished_and_missing_pair(tmp_path):
    cfg = measured.expected_configs("ex1", 7)[64]
    with pytest.raises(RunError, match="trained 10 of 1500"):
        measured.check("ex1", [_run(tmp_path, "a", cfg, 4.0, steps=10)])
    ok, lines = measured.check("ex1", [_run(tmp_path, "b", cfg, 4.0)])
    assert not ok and "pair is missing" in lines[1]
    with pytest.raises(RunError, match="is not a run folder"):
        measured.check("ex1", [str(tmp_path / "nowhere")])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    with pytest.raises(RunError, match="not valid JSON"):
        measured.check("ex1", [str(bad)])


def test_ex2_class_size_shows_the_rise_and_draws(tmp_path):
    lab = measured.lab_gaps("exercise2")
    folders = []
    for d in measured.CLASS_D_HEADS:
        folders += _pair(tmp_path, "ex2", d, 11, statistics.fmean(lab[d]))
    fig = tmp_path / "curve.png"
    ok, lines = measured.check("ex2", folders, figure=str(fig))
    assert ok, lines
    assert "your critical d_head: 128" in "\n".join(lines)
    assert fig.stat().st_size > 10_000


def test_cli_exit_codes(tmp_path):
    def cli(*a):
        return subprocess.run(
            [sys.executable, "-m", "attnlab.cli", "exercise", "check", *a], capture_output=True, text=True, timeout=120
        )

    cfg = measured.expected_configs("ex1", 7)[64].replace(n_head=8)
    r = cli("ex1", _run(tmp_path, "other", cfg, 4.0))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "n_head=8" in r.stderr
    r = cli("q3", "x.py")
    assert r.returncode == 2 and "/workbook#q3" in r.stderr


def test_the_sheets_train_commands_give_the_exercises_configs():
    """`attnlab train --set ...` as the workbook and the assignment sheet write it is accepted."""
    from attnlab.config import Config

    for overrides, exercise, d_head in (
        (["n_head=2", "seed=5", "scaled=false"], "ex1", 64),
        (["seed=5"], "ex1", 32),
        (["n_head=1", "d_model=192", "seed=5"], "ex2", 192),
    ):
        assert measured.classify(exercise, "run", Config.from_overrides(overrides)) == d_head
