"""Process-wide settings for running experiments fast on a CPU.

glibc's malloc hands every block of 128 KiB and more straight back to the
kernel when it is freed (and raises that limit only slowly), so each fresh
activation tensor of a training step arrives as new, zero-filled pages: a page
fault every 4 KiB. A (32, 4, 64, 64) attention pattern is 2 MiB, 512 faults,
and a step allocates dozens of such tensors. Keeping freed memory for reuse
makes the element-wise kernels around the matrix multiplies several times
faster on this kind of machine (measured by ``attnlab bench train``).

Opt out with ``ATTNLAB_MALLOC_TUNING=0``. Does nothing off glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest allowed value on 64-bit
TRIM_THRESHOLD = 512 * 1024 * 1024  # keep up to this much freed heap for reuse

_state: dict[str, bool] = {}


def keep_freed_memory() -> bool:
    """Ask glibc to reuse freed blocks below 32 MiB instead of unmapping them.

    Idempotent; returns True when the setting is in effect.
    """
    if "applied" in _state:
        return _state["applied"]
    ok = False
    if os.environ.get("ATTNLAB_MALLOC_TUNING", "1") != "0" and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
        except (OSError, AttributeError):  # musl and others: no mallopt
            mallopt = None
        if mallopt is not None:
            ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _state["applied"] = ok
    return ok


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(signum: int | None = None) -> bool:
    """In a worker process: ask Linux to send ``signum`` (default SIGTERM) when the parent dies,
    so a killed runner or sweep leaves no orphan workers training on. Returns True when set;
    a no-op elsewhere."""
    import signal

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        ok = libc.prctl(_PR_SET_PDEATHSIG, int(signum or signal.SIGTERM), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if ok and os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)
    return ok
