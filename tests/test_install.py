"""Installed, attnlab works anywhere (issue 26): a wheel in a fresh venv, run from a temporary directory.

Slow (opt-in, `pytest -m slow`): builds the wheel, installs it into a new venv and trains, most of
it `attnlab case --quick`: 272 s of CPU; measured 9 min 36 s on a 2-core machine at load 6-11. torch is not downloaded:
the venv sees this interpreter's site-packages through a .pth file (appended after its own, so
the wheel's attnlab is the one imported, never the checkout's).
"""

import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(cmd, cwd, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp), str(REPO)],
        tmp,
    )
    wheel = next(tmp.glob("attnlab-*.whl"))
    base = Path(sys.base_prefix) / "bin" / "python3"
    _run([str(base), "-m", "venv", str(tmp / "venv")], tmp)
    py = tmp / "venv" / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp).strip()
    ours = [p for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    (Path(purelib) / "zz_attnlab_test_deps.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], tmp)
    work = tmp / "elsewhere"
    work.mkdir()
    return wheel, tmp / "venv" / "bin" / "attnlab", py, work


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
