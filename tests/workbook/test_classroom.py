"""attnlab class new / grade on a synthetic class of five, hostile submissions included."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from attnlab.workbook import classroom, ex3
from attnlab.workbook.sandbox import Limits
from attnlab.workbook.synthetic import make_five

COST = {
    "ex1_core_h": 0.05,
    "ex2_full_core_h": 0.4,
    "ex2_class_core_h": 0.2,
    "ex2_class_d_heads": [32, 128, 192],
    "ex2_full_d_heads": [32, 64, 96, 128, 192, 256],
    "from": "a test's stub",
}


@pytest.fixture
def few_maps(monkeypatch):
    rng = np.random.default_rng(0)
    maps = []
    for k in range(3):
        p = np.tril(rng.random((6, 6)))
        maps.append((f"map {k}", p / p.sum(1, keepdims=True)))
    monkeypatch.setattr(ex3, "patterns", lambda: tuple(maps))


def test_new_writes_seeds_and_a_sheet_chinese_first(tmp_path):
    d = classroom.new(tmp_path / "c", 40, cost=COST)
    roster = json.loads((d / "class.json").read_text(encoding="utf-8"))["students"]
    assert len({s["seed"] for s in roster}) == 40 and roster[0]["id"] == "s01"
    assert not {s["seed"] for s in roster} & set(classroom.LAB_SEEDS)
    sheet = (d / "assignment.md").read_text(encoding="utf-8")
    assert sheet.startswith("# 第 1 章练习") and "8.0 核时" in sheet  # 40 x 0.2 core-hours for the class-size ex2
    with pytest.raises(classroom.ClassError, match="not an empty folder"):
        classroom.new(d, 3, cost=COST)
    with pytest.raises(classroom.ClassError, match="overlaps the lab"):
        classroom.new(tmp_path / "d", 3, first_seed=20261013, cost=COST)


def test_grade_five(tmp_path, few_maps):
    d = classroom.new(tmp_path / "class", 5, cost=COST)
    outside = tmp_path / "outside"
    make_five(d, outside)
    before = {p: p.stat().st_mtime_ns for p in outside.rglob("*")}
    report = classroom.grade(d, limits=Limits(seconds=2.5, memory_bytes=768 * 2**20))
    grades = {g["student"]["id"]: g for g in json.loads((report / "grades.json").read_text(encoding="utf-8"))}
    status = {sid: {e: g["items"][e]["status"] for e in ("ex1", "ex2", "ex3", "ex4")} for sid, g in grades.items()}
    assert status["s1"] == dict.fromkeys(("ex1", "ex2", "ex3", "ex4"), "right")
    assert status["s2"] == {"ex1": "right", "ex2": "right", "ex3": "wrong", "ex4": "wrong"}
    assert status["s3"]["ex1"] == "wrong" and status["s3"]["ex2"] == "error"
    assert "assigned seed" in "\n".join(grades["s3"]["items"]["ex1"]["lines"])
    assert "max_steps=300" in "\n".join(grades["s3"]["items"]["ex2"]["lines"])
    assert status["s4"] == {"ex1": "refused", "ex2": "missing", "ex3": "refused", "ex4": "error"}
    assert "\\xff" in " ".join(grades["s4"]["extra"])
    assert status["s5"] == {"ex1": "missing", "ex2": "missing", "ex3": "error", "ex4": "error"}
    assert "did not finish" in grades["s5"]["items"]["ex3"]["lines"][0]
    assert {p: p.stat().st_mtime_ns for p in outside.rglob("*")} == before
    page = (report / "class.html").read_text(encoding="utf-8")
    assert page.count("<tr>") == 6 and "s1.html" in page and "<script" not in page
    s1 = (report / "s1.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in s1 and 'src="http' not in s1


def test_grade_refuses_a_folder_that_is_not_a_class(tmp_path):
    with pytest.raises(classroom.ClassError, match="no class.json"):
        classroom.grade(tmp_path)
    (tmp_path / "class.json").write_text('{"students": "all"}')
    with pytest.raises(classroom.ClassError, match="not a list"):
        classroom.grade(tmp_path)


def test_cli_one_line(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "class", "grade", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "class.json" in r.stderr
    os.mkdir(tmp_path / "x")
    (tmp_path / "x" / "f").write_text("")
    r = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "class", "new", "--students", "2", "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "not an empty folder" in r.stderr
