"""Installed, attnlab works anywhere (issue 26): a wheel in a fresh venv, run from a temporary directory.

Slow (opt-in, `pytest -m slow`): builds the wheel, installs it into a new venv and trains, most of
it `attnlab case --quick`: 272 s of CPU; measured 9 min 36 s on a 2-core machine at load 6-11. torch is not downloaded:
the venv sees this interpreter's site-packages through a .pth file (appended after its own, so
the wheel's attnlab is the one imported, never the checkout's).
"""

import zipfile
from pathlib import Path

import pytest

from wheel_install import install_wheel
from wheel_install import run as _run

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    wheel, py, work = install_wheel(tmp_path_factory.mktemp("install"))
    return wheel, py.parent / "attnlab", py, work


@pytest.mark.slow
def test_the_wheel_ships_the_corpus_and_its_license(installed):
    wheel, _, py, work = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"attnlab/data/corpus.txt", "attnlab/data/LICENSE.chinese-poetry"} <= names
    where = _run([str(py), "-c", "import attnlab; print(attnlab.__file__)"], work)
    assert str(REPO) not in where and "venv" in where  # the wheel's attnlab, not the checkout's


@pytest.mark.slow
def test_installed_train_and_quick_case_run_from_any_directory(installed):
    _, attnlab, _, work = installed
    out = _run([str(attnlab), "train", "--set", "max_steps=5", "--no-progress"], work)
    assert "corpus not found" not in out
    assert (work / "runs" / "default" / "ckpt.pt").is_file()
    _run([str(attnlab), "case", "--quick", "--no-progress"], work, timeout=1500)
    root = work / "quick" / "case"
    for f in ("data/ch1_case.json", "reports/ch1_case.md", "reports/ch1_case.html", "figures/fig1_2_loss.png"):
        assert (root / f).is_file(), f
    assert "make " not in (root / "reports" / "ch1_case.md").read_text(encoding="utf-8")
