"""A quick case run in a fresh clone leaves every committed file as it was (issue 26).

Slow (opt-in, `pytest -m slow`): `git clone` of this checkout, then `attnlab case --quick` from the
clone's root with the default output folder; `git status --porcelain` must stay empty (the quick
root quick/ is git-ignored) and the committed case result must be the clone's own. 271 s of CPU
(the quick case itself); measured 17 min 24 s on a 2-core machine at load 11.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs git and a checkout")
def test_quick_case_in_a_fresh_clone_leaves_git_status_clean(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    committed = (clone / "data" / "ch1_case.json").read_bytes()
    env = {**os.environ, "PYTHONPATH": str(clone / "src")}
    r = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "case", "--quick", "--no-progress"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == "", status.stdout
    assert (clone / "data" / "ch1_case.json").read_bytes() == committed
    quick = clone / "quick" / "case"
    assert (quick / "data" / "ch1_case.json").is_file() and (quick / "reports" / "ch1_case.html").is_file()
    assert not (clone / "runs" / "case").exists()  # a later full case never meets the quick runs
