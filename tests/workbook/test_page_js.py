"""The workbook page's computations (workbook_core.js) against the Python they mirror, under Node."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from attnlab.attention.masks import sliding_window_mask_np
from attnlab.attention.memory import attention_matrix_bytes

CORE = Path(__file__).resolve().parents[2] / "src/attnlab/web/static/workbook_core.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")


def _node(script: str):
    code = f"const WB = require({json.dumps(str(CORE))});\nconsole.log(JSON.stringify({script}));"
    out = subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


SIZES = [(2048, 16, 24, 2), (4096, 32, 32, 2), (8192, 16, 24, 4), (1, 1, 1, 1), (12345, 7, 3, 2)]
MASKS = [(1, 1), (5, 1), (12, 4), (9, 9), (16, 40)]


def test_matrix_bytes_is_eq_145_as_in_python():
    got = _node("[" + ",".join(f"WB.matrixBytes({n},{h},{layer},{b})" for n, h, layer, b in SIZES) + "]")
    assert got == [attention_matrix_bytes(n, h, layer, b) for n, h, layer, b in SIZES]


def test_sliding_window_mask_is_pythons():
    got = _node("[" + ",".join(f"WB.slidingWindowMask({n},{w})" for n, w in MASKS) + "]")
    assert got == [sliding_window_mask_np(n, w).tolist() for n, w in MASKS]


def test_the_students_condition_and_the_books_code():
    right = _node('WB.maskFrom("j <= i && i - j < w", 12, 4)')
    assert right == sliding_window_mask_np(12, 4).tolist()
    book = _node('WB.maskFrom("j <= i and (i - j) <= w", 12, 4)')  # §1.24's code: w + 1 keys
    assert book == sliding_window_mask_np(12, 5).tolist()


def test_q7_formula_against_the_simulation():
    got = _node(
        "[2, 0.5].map((s) => { const sim = WB.simulateDotVar(s, 64); return "
        '[WB.checkVarFormula("d*s^4", s, 64, sim).ok, WB.checkVarFormula("d*s^2", s, 64, sim).ok, '
        'WB.checkVarFormula("d", s, 64, sim).ok, sim.scaledStd]; })'
    )
    for (right, squared, plain, scaled_std), s in zip(got, [2, 0.5]):
        assert right and not squared and not plain
        assert scaled_std == pytest.approx(s * s, rel=0.05)


def test_expressions_refuse_unknown_names():
    out = subprocess.run(
        [NODE, "-e", f'const WB = require({json.dumps(str(CORE))}); WB.compile("alert(1)", ["d"])'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "unknown name" in out.stderr
