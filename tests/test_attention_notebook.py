"""Execute notebooks/attention_from_scratch.ipynb; every cell asserts its comparison with PyTorch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "attention_from_scratch.ipynb"
KERNEL = "attnlab-test-python"


@pytest.fixture
def current_interpreter_kernel(tmp_path, monkeypatch):
    """A kernelspec that runs ipykernel in *this* interpreter (the venv), whatever else is installed."""
    spec_dir = tmp_path / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "attnlab test kernel",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    return KERNEL


def test_notebook_runs_clean(current_interpreter_kernel, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=current_interpreter_kernel,
        timeout=60,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "max |mine - SDPA|" in text and "max |blocked - SDPA|" in text
