"""Exercise 4: a student's AttentionDebugger against scripted runs."""

from pathlib import Path

import pytest

from attnlab.workbook import ex4
from attnlab.workbook.sandbox import SandboxError

SOLUTION = Path(ex4.__file__).with_name("solutions") / "debugger.py"
# the chapter's §1.13.3 snippet taken literally: "② 掩码后有限?" is False for every causal mask
LITERAL = SOLUTION.read_text(encoding="utf-8").replace(
    "if np.isnan(scores).any() or np.isposinf(scores).any() or (~np.isfinite(scores)).all(-1).any():",
    "if not np.isfinite(scores).all():",
)


def _check(tmp_path, body):
    f = tmp_path / "debugger.py"
    f.write_text(body, encoding="utf-8")
    return ex4.check(str(f))


def test_the_reference_passes(tmp_path):
    ok, lines = _check(tmp_path, SOLUTION.read_text(encoding="utf-8"))
    assert ok, lines


def test_the_literal_snippet_names_the_mask_and_is_told_why(tmp_path):
    ok, lines = _check(tmp_path, LITERAL)
    text = "\n".join(lines)
    assert not ok and "nan_scores" in text and "nan_exp" in text
    assert "the −inf after ② is the mask itself" in text


def test_no_log_every_and_a_missing_word(tmp_path):
    body = SOLUTION.read_text(encoding="utf-8").replace("if step % self.log_every:", "if False:")
    ok, lines = _check(tmp_path, body)
    assert not ok and "not a multiple of log_every" in "\n".join(lines)
    body = SOLUTION.read_text(encoding="utf-8").replace(
        'f"step {step} layer {layer}: logit std', 'f"step {step} layer {layer}: scale'
    )
    ok, lines = _check(tmp_path, body)
    assert not ok and "'logit'" in "\n".join(lines)


def test_a_false_alarm_and_a_missed_collapse(tmp_path):
    body = SOLUTION.read_text(encoding="utf-8").replace(
        "LOGIT_STD_MAX = 0.99, 0.01, 10.0", "LOGIT_STD_MAX = 0.99, 0.01, 1.0"
    )
    ok, lines = _check(tmp_path, body)
    assert not ok and "false alarm" in "\n".join(lines)
    body = SOLUTION.read_text(encoding="utf-8").replace("ENTROPY_LOW <= ent <= ENTROPY_HIGH", "ENTROPY_LOW <= ent")
    ok, lines = _check(tmp_path, body)
    assert not ok and "collapse" in "\n".join(lines) and "entropy above 0.99" in "\n".join(lines)


def test_judge_without_processes():
    _, _, expected = ex4.scenarios()
    assert ex4.judge([], expected)  # nothing ran: every scenario is missing
    assert expected["nan_mask"]["nan"] == [0, 2] and expected["nan_exp"]["nan"] == [1, 3]


@pytest.mark.parametrize(
    "body, words",
    [
        ("class AttentionDebugger:\n    def __init__(self, model):\n        pass\n", "log_every"),
        ("class Debugger:\n    pass\n", "no class named AttentionDebugger"),
        (
            "class AttentionDebugger:\n    def __init__(self, model, log_every=50):\n        pass\n"
            "    def check(self):\n        pass\n    def on_nan(self):\n        pass\n",
            "check(step)",
        ),
        (
            "class AttentionDebugger:\n    def __init__(self, model, log_every=50):\n        pass\n"
            "    def check(self, step):\n        pass\n",
            "on_nan",
        ),
    ],
)
def test_the_wrong_interface_is_one_line(tmp_path, body, words):
    with pytest.raises(SandboxError) as e:
        _check(tmp_path, body)
    assert words in str(e.value) and "\n" not in str(e.value)
