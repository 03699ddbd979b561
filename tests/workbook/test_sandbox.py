"""A student's file runs in its own process with limits; every bad file is one line (SandboxError)."""

import os
from pathlib import Path

import numpy as np
import pytest

from attnlab.workbook import ex3, sandbox
from attnlab.workbook.sandbox import Limits, SandboxError

SMALL = Limits(seconds=4.0, memory_bytes=768 * 1024 * 1024, output_bytes=64 * 1024)
SOLUTION = Path(ex3.__file__).with_name("solutions") / "centroid.py"


def _causal(T, seed):
    rng = np.random.default_rng(seed)
    p = np.tril(rng.random((T, T)))
    return p / p.sum(1, keepdims=True)


@pytest.fixture
def few_maps(monkeypatch):
    """Three small maps instead of the shipped models (fast; the real ones are in test_ex3)."""
    maps = tuple((f"map {k}", _causal(6 + k, k)) for k in range(3))
    monkeypatch.setattr(ex3, "patterns", lambda: maps)
    return maps


def _file(tmp_path, body, name="answer.py"):
    d = tmp_path / "student"
    d.mkdir(exist_ok=True)
    f = d / name
    f.write_text(body, encoding="utf-8")
    return f


HOSTILE = {
    "syntax": ("def centroid(p)\n    return 0, 0\n", "failed to import"),
    "import": ("import no_such_module_xyz\n", "No module named"),
    "missing": ("def centriod(p):\n    return 0, 0\n", "needs def centroid(p)"),
    "signature": ("def centroid(p, q):\n    return 0, 0\n", "needs def centroid(p)"),
    "raises": ("def centroid(p):\n    return 1 / 0\n", "ZeroDivisionError"),
    "returns": ("def centroid(p):\n    return 'mean'\n", "two finite numbers"),
    "nan": ("def centroid(p):\n    return float('nan'), 0.0\n", "two finite numbers"),
    "hangs": ("def centroid(p):\n    while True:\n        pass\n", "did not finish"),
    "sleeps": ("import time\ntime.sleep(60)\n", "did not finish"),
    "memory": ("def centroid(p):\n    x = bytearray(3 * 1024 ** 3)\n    return 0.0, 0.0\n", "memory"),
    "prints": ("def centroid(p):\n    while True:\n        print('x' * 10000)\n", "printed or wrote more than"),
    "os_exit": ("import os\nos._exit(3)\n", "ended the check's process"),
    "sys_exit": ("import sys\nsys.exit(0)\n", "failed to import"),
    "kills": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "signal 9"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_file_is_one_line(tmp_path, few_maps, case):
    body, words = HOSTILE[case]
    with pytest.raises(SandboxError) as e:
        ex3.check(str(_file(tmp_path, body)), limits=SMALL)
    msg = str(e.value)
    assert words in msg and "\n" not in msg, msg
    assert "Traceback" not in msg


def test_a_write_elsewhere_is_seen(tmp_path, few_maps):
    outside = tmp_path / "student" / "planted.txt"
    body = f"def centroid(p):\n    open({str(outside)!r}, 'w').write('x')\n    return 0.0, 0.0\n"
    with pytest.raises(SandboxError, match="wrote outside its own folder"):
        ex3.check(str(_file(tmp_path, body)), limits=SMALL)
    assert outside.exists()  # seen, never deleted: it is not attnlab's


def test_the_student_runs_in_its_own_folder_and_home(tmp_path, few_maps):
    """cwd and HOME are the temporary folder; the student's folder gets nothing."""
    body = (
        "import os, pathlib\n"
        "assert os.getcwd() == os.environ['HOME'], (os.getcwd(), os.environ['HOME'])\n"
        "assert pathlib.Path('student.py').exists()\n"
        "pathlib.Path('scratch.txt').write_text('mine')\n" + SOLUTION.read_text(encoding="utf-8")
    )
    f = _file(tmp_path, body)
    ok, lines = ex3.check(str(f), limits=SMALL)
    assert ok, lines
    assert sorted(os.listdir(f.parent)) == ["answer.py"]


def test_a_huge_or_binary_file_is_refused_before_running(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (sandbox.MAX_SOURCE_BYTES + 1))
    with pytest.raises(SandboxError, match="over the"):
        sandbox.read_source(big)
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"\xff\xfe\x00def")
    with pytest.raises(SandboxError, match="UTF-8"):
        sandbox.read_source(binary)
    with pytest.raises(SandboxError, match="not a regular file"):
        sandbox.read_source(tmp_path)
    with pytest.raises(SandboxError, match="cannot read"):
        sandbox.read_source(tmp_path / "missing.py")


def test_nothing_is_left_behind(tmp_path, few_maps, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    ex3.check(str(_file(tmp_path, SOLUTION.read_text(encoding="utf-8"))), limits=SMALL)
    with pytest.raises(SandboxError):
        ex3.check(str(_file(tmp_path, HOSTILE["hangs"][0], "h.py")), limits=SMALL)
    assert os.listdir(tmp_path / "t") == []
