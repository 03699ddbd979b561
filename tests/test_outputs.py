"""Where commands write (issue 26): a quick run has a root of its own, and nothing replaces a larger result.

Fast: the guards act before any training, so no test here trains a model.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from attnlab.cli import main
from attnlab.corpus import REPO_ROOT
from attnlab.lab.case import run as case_mod
from attnlab.lab.case.run import CaseSettings, result_scale, settings_scale
from attnlab.outputs import QUICK_ROOT, output_root, smaller_parts

COMMITTED = ("data", "figures", "reports", "runs")


def test_the_output_root_rule():
    for command in ("case", "book"):
        root = output_root(None, True, command)
        assert root == QUICK_ROOT / command
        assert root.parts[0] not in COMMITTED  # never data/, figures/, reports/ or runs/
        assert output_root(None, False, command) == Path(".")
        assert output_root("elsewhere", True, command) == Path("elsewhere")
    # the quick root is git-ignored, so a quick run leaves `git status` clean
    if (REPO_ROOT / ".git").exists():
        probe = (QUICK_ROOT / "case" / "data" / "ch1_case.json").as_posix()
        r = subprocess.run(["git", "check-ignore", "-q", probe], cwd=REPO_ROOT)
        assert r.returncode == 0, f"{probe} is not git-ignored"


def test_case_quick_defaults_to_its_own_root(monkeypatch, tmp_path):
    seen = {}

    def fake_run_case(settings, out, **kw):
        seen["out"], seen["steps"] = Path(out), settings.steps
        raise SystemExit(0)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(case_mod, "run_case", fake_run_case)
    with pytest.raises(SystemExit):
        main(["case", "--quick", "--no-progress"])
    assert seen == {"out": QUICK_ROOT / "case", "steps": CaseSettings.quick().steps}


def test_scale_of_settings_and_of_a_result():
    full, quick = settings_scale(CaseSettings()), settings_scale(CaseSettings.quick())
    assert full == {
        "steps": 1500,
        "small seeds": 3,
        "big seeds": 3,
        "big unscaled seeds": 3,
        "weight-decay pairs": 2,
    }
    assert smaller_parts(full, quick) == list(full)  # quick is smaller in every measure
    assert smaller_parts(quick, full) == []
    committed = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    got = result_scale(committed)
    assert got["steps"] == committed["config"]["settings"]["steps"]
    assert got["small seeds"] == len(committed["seeds"]["runs"]) and got["big seeds"] >= 1


def _larger_case(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    dst = root / "data" / "ch1_case.json"
    shutil.copy(REPO_ROOT / "data" / "ch1_case.json", dst)
    return dst


def test_a_smaller_case_refuses_to_replace_a_larger_one(tmp_path, capsys):
    dst = _larger_case(tmp_path)
    before = dst.read_bytes()
    assert main(["case", "--quick", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "larger result" in err and "--overwrite" in err and "--out" in err
    assert dst.read_bytes() == before
    assert not (tmp_path / "runs").exists()  # refused before any training


def test_a_smaller_book_refuses_to_replace_a_larger_one(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    book = tmp_path / "data" / "lab_book.json"
    book.write_text(json.dumps({"scale": {"quick": False, "steps": 1500, "seeds": 3}}), encoding="utf-8")
    assert main(["book", "--quick", "--out", str(tmp_path), "--no-progress", "--only", "markov"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "larger result" in err and "--overwrite" in err
    assert json.loads(book.read_text(encoding="utf-8"))["scale"]["steps"] == 1500


def test_report_never_puts_a_smaller_case_s_figures_over_a_larger_one(tmp_path, capsys):
    _larger_case(tmp_path / "repo")
    small = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    small["config"]["settings"]["steps"] = 250
    (tmp_path / "quick" / "data").mkdir(parents=True)
    (tmp_path / "quick" / "data" / "ch1_case.json").write_text(json.dumps(small), encoding="utf-8")
    args = ["report", str(tmp_path / "quick" / "data" / "ch1_case.json"), "--out", str(tmp_path / "repo")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "larger result" in err
    assert not (tmp_path / "repo" / "figures").exists() and not (tmp_path / "repo" / "reports").exists()


def _spoil(x):
    """Every validation loss of a case result set to 9.999 (a stand-in for a quick run's numbers)."""
    if isinstance(x, dict):
        return {k: 9.999 if k == "val_loss_end" else _spoil(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_spoil(v) for v in x]
    return x


def test_book_quick_never_reads_a_quick_case(tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)
    quick_case = tmp_path / "quick" / "case" / "data" / "ch1_case.json"
    quick_case.parent.mkdir(parents=True)
    committed = json.loads((REPO_ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    quick_case.write_text(json.dumps(_spoil(committed)), encoding="utf-8")
    assert main(["book", "--quick", "--only", "markov", "--no-progress"]) == 0
    doc = json.loads((tmp_path / "quick" / "book" / "data" / "lab_book" / "markov.json").read_text(encoding="utf-8"))
    per_seed = doc["results"]["per_seed"]
    assert per_seed and 9.999 not in [v for row in per_seed.values() for v in row.values()]
    first = per_seed[str(committed["config"]["settings"]["seeds"][0])]
    assert first["big_unscaled"] == pytest.approx(committed["pairs"]["big_unscaled"]["val_loss_end"], abs=1e-3)
