"""Exercise 3: a student's centroid(p) against attnlab's own, on the shipped models."""

from pathlib import Path

import numpy as np
import pytest

from attnlab.workbook import ex3
from attnlab.workbook.solutions.centroid import centroid

SOLUTION = Path(ex3.__file__).with_name("solutions") / "centroid.py"
RIGHT_LOOP = """
import numpy as np
def centroid(p):
    T = len(p)
    dist = [sum((i - j) * p[i][j] for j in range(i + 1)) for i in range(1, T)]
    return np.mean(dist), np.std(dist)
"""
WRONG = {
    "ddof": ("np.std(dist, ddof=1)", "ddof=1"),
    "variance": ("np.var(dist)", "variance"),
}


def test_reference_by_hand():
    """Three positions: row 1 puts 0.5 one step left, row 2 all of it two steps left."""
    p = np.array([[1, 0, 0], [0.5, 0.5, 0], [1.0, 0, 0]])
    mean, std = centroid(p)
    assert mean == pytest.approx((0.5 + 2) / 2) and std == pytest.approx(0.75)


def test_probe_texts_are_the_portraits_evaluation_set():
    from attnlab.checkpoint import load_checkpoint
    from attnlab.corpus import load_corpus
    from attnlab.lab.portrait import poem_windows
    from attnlab.tools import validation_text

    _, _, cfg = load_checkpoint(ex3.SHIPPED / "case" / "small_scaled_s20261014" / "ckpt.pt")
    assert tuple(poem_windows(validation_text(load_corpus(), cfg))) == ex3.PROBE_TEXTS[:3]
    assert ex3.PROBE_TEXTS[3] == cfg.probe


def test_right_and_wrong_on_the_shipped_models(tmp_path):
    right = tmp_path / "right.py"
    right.write_text(RIGHT_LOOP, encoding="utf-8")
    ok, lines = ex3.check(str(right))
    assert ok, lines
    assert "80" in lines[0]  # 4 models x (8 or 2 heads) x 4 texts
    wrong = tmp_path / "wrong.py"
    wrong.write_text(RIGHT_LOOP.replace("np.std(dist)", WRONG["ddof"][0]), encoding="utf-8")
    ok, lines = ex3.check(str(wrong))
    text = "\n".join(lines)
    assert not ok and "model" in text and "layer" in text and "head" in text and "ddof=1" in text
    assert SOLUTION.read_text(encoding="utf-8").strip().splitlines()[-1].strip() not in text


@pytest.mark.parametrize(
    "got, words",
    [
        (lambda d: (d[1:].mean(), d[1:].var()), "variance"),
        (lambda d: (d.mean(), d.std()), "row 0"),
        (lambda d: (d[1:].std(), d[1:].mean()), "swapped"),
        (lambda d: (-d[1:].mean(), d[1:].std()), "sign"),
        (lambda d: (d[1:].mean() + 1, d[1:].std()), "mean is off"),
    ],
)
def test_a_wrong_answer_is_told_what_to_change(got, words):
    rng = np.random.default_rng(0)
    p = np.tril(rng.random((7, 7)))
    p /= p.sum(1, keepdims=True)
    i = np.arange(7)
    d = (p * np.clip(i[:, None] - i[None, :], 0, None)).sum(1)
    assert words in ex3.diagnose(p, tuple(float(x) for x in got(d)))


def test_a_damaged_shipped_model_is_named(tmp_path, monkeypatch):
    import shutil

    shipped = tmp_path / "case_runs"
    shutil.copytree(ex3.SHIPPED, shipped)
    ckpt = shipped / "case" / "big_scaled" / "ckpt.pt"
    data = bytearray(ckpt.read_bytes())
    data[-100] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    monkeypatch.setattr(ex3, "SHIPPED", shipped)
    ex3.patterns.cache_clear()
    try:
        with pytest.raises(ex3.WorkbookError, match="big_scaled"):
            ex3.patterns()
    finally:
        ex3.patterns.cache_clear()
