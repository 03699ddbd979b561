import os

import pytest
import torch

from attnlab import Config

torch.set_num_threads(min(2, os.cpu_count() or 1))

SAMPLE_TEXT = (
    "床前明月光，疑是地上霜。\n舉頭望明月，低頭思故鄉。\n白日依山盡，黃河入海流。\n欲窮千里目，更上一層樓。\n"
) * 20

# the tiny 2-layer model several test modules train (each may replace a field or two)
TINY_MODEL = Config(
    n_layer=2,
    n_head=2,
    d_model=32,
    block_size=16,
    vocab_size=60,
    batch_size=4,
    max_steps=20,
    warmup=3,
    eval_batches=2,
    device="cpu",
)

# the tiny model the CLI tests train: ``--set`` arguments from one place
TINY_CLI = {"n_layer": 1, "n_head": 2, "d_model": 16, "block_size": 16, "vocab_size": 40, "batch_size": 4}


def set_args(**overrides) -> list[str]:
    """``--set key=value`` for every field of TINY_CLI (on the CPU), updated with ``overrides``."""
    fields = {**TINY_CLI, **overrides, "device": overrides.get("device", "cpu")}
    return [a for k, v in fields.items() for a in ("--set", f"{k}={v}")]


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models run ~10x faster on one thread than on two when the CPU is shared.
    Modules of tiny-model experiments use it with ``pytest.mark.usefixtures``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def text() -> str:
    return SAMPLE_TEXT


@pytest.fixture
def tiny_cfg() -> Config:
    """Small enough to train in a second on CPU, big enough to have 2 layers and heads."""
    return TINY_MODEL.replace(vocab_size=40, max_steps=12, eval_every=5, ckpt_every=4)


def pytest_terminal_summary(terminalreporter):
    """One line when the browser tests were skipped, so a local `make test` does not pass silently short."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "test_web_browser" in r.nodeid]
    if skipped:
        terminalreporter.write_line(
            f"attnlab: {len(skipped)} browser tests skipped (no Chromium); bash scripts/ci_system_deps.sh installs it"
        )
