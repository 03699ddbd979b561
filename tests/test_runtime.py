"""attnlab.runtime: the malloc setting is applied once, and can be turned off."""

import os
import platform
import subprocess
import sys

import pytest

CHECK = "from attnlab.runtime import keep_freed_memory as k; print(k(), k())"


def _run(env_value):
    env = {**os.environ}
    env.pop("ATTNLAB_MALLOC_TUNING", None)
    if env_value is not None:
        env["ATTNLAB_MALLOC_TUNING"] = env_value
    return subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, check=True
    ).stdout.split()


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"), reason="mallopt is glibc's"
)
def test_applied_on_glibc_and_idempotent():
    assert _run(None) == ["True", "True"]


def test_opt_out():
    assert _run("0") == ["False", "False"]
