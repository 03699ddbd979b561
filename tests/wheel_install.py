"""The wheel built from this checkout and installed into a new venv, for tests that use attnlab as a
reader who installed it would (tests/test_install.py, tests/test_shipped_models.py).

torch is not downloaded: the venv sees this interpreter's site-packages through a .pth file appended
after its own, so the wheel's attnlab is the one imported, never the checkout's.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(cmd, cwd, timeout=900) -> str:
    """stdout + stderr of ``cmd`` run without this checkout on the path; asserts it succeeded."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
    return r.stdout + r.stderr


def install_wheel(tmp: Path) -> tuple[Path, Path, Path]:
    """(the wheel, the venv's python, an empty folder to run in) under ``tmp``."""
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp)]
    run([*pip_wheel, str(REPO)], tmp)
    wheel = next(tmp.glob("attnlab-*.whl"))
    run([str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "venv", str(tmp / "venv")], tmp)
    py = tmp / "venv" / "bin" / "python"
    purelib = run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp).strip()
    ours = [p for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    (Path(purelib) / "zz_attnlab_test_deps.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], tmp)
    work = tmp / "elsewhere"
    work.mkdir()
    return wheel, py, work
