"""What this machine can hold: sizes are checked before anything is allocated.

A model (from ``--set`` or from a checkpoint's config) is counted from its config alone,
by arithmetic, and refused with one line naming the sizes and the limit when its weights
and one forward pass would not fit in the memory this machine has available
(:func:`check_model_fits`). Training has its own, larger estimate
(:func:`attnlab.train.check_fits`), held against the same memory (:func:`available_bytes`: what
the kernel says is available, within the process's cgroup limit); the sane maxima of every field are in
:data:`attnlab.config.LIMITS`.
"""

from __future__ import annotations

import os
from pathlib import Path

from .config import Config
from .errors import ConfigError


def param_count(cfg: Config) -> int:
    """An upper estimate of the parameter count (the real count is
    :func:`attnlab.model.parameter_table`, which builds the model on the meta device)."""
    d, L, V, T, f = cfg.d_model, cfg.n_layer, cfg.vocab_size, cfg.block_size, cfg.d_ff
    embeddings = V * d * (1 if cfg.tie_weights else 2) + T * d
    per_layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d + cfg.n_head
    return embeddings + L * per_layer + 2 * d


def model_bytes(cfg: Config, batch: int = 1) -> int:
    """Bytes of the float32 weights plus one forward pass of ``batch`` full windows (the
    attention matrices of one layer, a few (T, d) tensors per layer, the logits)."""
    d, T, B = cfg.d_model, cfg.block_size, batch
    activations = 4 * B * cfg.n_head * T * T + cfg.n_layer * 8 * B * T * max(d, cfg.d_ff) + B * T * cfg.vocab_size
    return 4 * (param_count(cfg) + activations)


def available_bytes(device="cpu") -> int | None:
    """Memory this process could still get on ``device``: the one notion every memory guard uses
    (:func:`check_model_fits`, :func:`attnlab.train.check_fits`, the bench's size checks).

    cuda: the device's free memory (``torch.cuda.mem_get_info``). CPU: the kernel's MemAvailable (what
    can be allocated without swapping, reclaimable page cache included), lowered to what the
    process's cgroup still allows (:func:`cgroup_headroom`: a container's limit, which MemAvailable
    does not see and the OOM killer enforces); the physical memory where neither can be read (not
    Linux); None when nothing can be told."""
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    if kind == "cuda":
        try:
            import torch

            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:  # no GPU, or a driver that cannot say: the build itself will tell
            return None
    known = [n for n in (meminfo_available(), cgroup_headroom()) if n is not None]
    if known:
        return min(known)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def meminfo_available(path: str | Path = "/proc/meminfo") -> int | None:
    """The kernel's MemAvailable in bytes, or None where there is no such line (not Linux, before 3.14)."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


UNLIMITED = 2**60  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def cgroup_headroom(self_cgroup: str | Path = "/proc/self/cgroup", root: str | Path = "/sys/fs/cgroup") -> int | None:
    """Bytes the memory cgroup of this process (and every cgroup above it) still allows: the
    smallest limit minus that cgroup's usage, the inactive file cache not counted as used (the
    kernel drops it before it kills). cgroup v2 (memory.max, memory.current) or v1's memory
    controller (memory.limit_in_bytes, memory.usage_in_bytes); None without a limit or a cgroup."""
    try:
        lines = Path(self_cgroup).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    root = Path(root)
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "-", "")
        if controllers == "" and (root / "cgroup.controllers").is_file():  # v2, the unified hierarchy
            return _headroom(root, path, "memory.max", "memory.current", "inactive_file")
        if "memory" in controllers.split(","):  # v1, the memory controller's own hierarchy
            return _headroom(
                root / "memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
            )
    return None


def _headroom(mount: Path, path: str, limit_file: str, usage_file: str, inactive_key: str) -> int | None:
    """The smallest (limit - usage + inactive file cache) from the cgroup at ``path`` up to ``mount``.
    A path not under the mount (a cgroup namespace shows ``/``) starts from the mount itself."""
    here = mount / path.strip("/")
    if not here.is_dir():
        here = mount
    best = None
    while True:
        limit = _read_int(here / limit_file)
        if limit is not None and limit < UNLIMITED:
            used = _read_int(here / usage_file) or 0
            inactive = _stat(here / "memory.stat", inactive_key) or 0
            left = max(0, limit - max(0, used - inactive))
            best = left if best is None else min(best, left)
        if here == mount or mount not in here.parents:
            return best
        here = here.parent


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _stat(path: Path, key: str) -> int | None:
    try:
        for line in path.read_text(encoding="ascii").splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except (OSError, UnicodeDecodeError):
        pass
    return None


def gb(n: int) -> str:
    return f"{n / 1e9:,.1f} GB" if n < 1e12 else f"{n / 1e12:,.0f} TB"


def check_model_fits(cfg: Config, device="cpu", what: str = "the model") -> None:
    """Refuse, in one line, a model whose weights and one forward pass would not fit in the
    memory available on ``device``, before any of it is allocated."""
    need, have = model_bytes(cfg), available_bytes(device)
    if have is not None and need > have:
        raise ConfigError(
            f"{what} needs about {gb(need)} (d_model={cfg.d_model}, n_layer={cfg.n_layer}, "
            f"vocab_size={cfg.vocab_size}, block_size={cfg.block_size}) but {getattr(device, 'type', device)} "
            f"has {gb(have)} available; use a smaller model"
        )
