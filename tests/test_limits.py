"""One notion of available memory (attnlab.limits.available_bytes): the kernel's MemAvailable within
the process's cgroup limit, read by every memory guard."""

import re
from pathlib import Path

import pytest
import torch

from attnlab import Config, limits
from attnlab.errors import ConfigError

SRC = Path(__file__).resolve().parents[1] / "src" / "attnlab"
GB = 10**9


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


def test_meminfo_available_is_read_in_bytes(tmp_path):
    write(tmp_path / "meminfo", "MemTotal:       24683584 kB\nMemFree: 1 kB\nMemAvailable:   2000 kB\n")
    assert limits.meminfo_available(tmp_path / "meminfo") == 2000 * 1024
    write(tmp_path / "old", "MemTotal: 24683584 kB\n")  # a kernel before 3.14: no such line
    assert limits.meminfo_available(tmp_path / "old") is None
    assert limits.meminfo_available(tmp_path / "absent") is None


def test_cgroup_v2_headroom_is_the_tightest_limit_up_the_tree(tmp_path):
    root = tmp_path / "cg"
    write(root / "cgroup.controllers", "cpu memory\n")
    write(tmp_path / "self", "0::/outer/inner\n")
    write(root / "outer" / "memory.max", f"{4 * GB}\n")
    write(root / "outer" / "memory.current", f"{3 * GB}\n")
    write(root / "outer" / "memory.stat", f"anon 1\ninactive_file {GB // 2}\nactive_file 7\n")
    write(root / "outer" / "inner" / "memory.max", "max\n")  # no limit of its own
    write(root / "outer" / "inner" / "memory.current", f"{2 * GB}\n")
    # outer: 4 GB - (3 GB used - 0.5 GB of inactive file cache the kernel drops first) = 1.5 GB
    assert limits.cgroup_headroom(tmp_path / "self", root) == 4 * GB - (3 * GB - GB // 2)
    write(root / "outer" / "inner" / "memory.max", f"{GB}\n")
    assert limits.cgroup_headroom(tmp_path / "self", root) == 0  # inner: 2 GB used of its 1 GB, nothing left
    write(root / "outer" / "inner" / "memory.max", "max\n")
    write(root / "outer" / "memory.max", "max\n")
    assert limits.cgroup_headroom(tmp_path / "self", root) is None  # no limit anywhere


def test_cgroup_v1_memory_controller_and_a_namespaced_path(tmp_path):
    root = tmp_path / "cg"
    write(tmp_path / "self", "9:name=systemd:/\n4:memory:/job/42\n1:cpu:/\n0::/\n")
    mem = root / "memory"
    write(mem / "memory.limit_in_bytes", "9223372036854771712\n")  # v1's "no limit"
    write(mem / "job" / "42" / "memory.limit_in_bytes", f"{2 * GB}\n")
    write(mem / "job" / "42" / "memory.usage_in_bytes", f"{GB}\n")
    write(mem / "job" / "42" / "memory.stat", f"inactive_file 5\ntotal_inactive_file {GB // 4}\n")
    assert limits.cgroup_headroom(tmp_path / "self", root) == 2 * GB - (GB - GB // 4)
    # inside a cgroup namespace /proc/self/cgroup names a path the mount does not show: the mount's own
    write(tmp_path / "ns", "4:memory:/elsewhere/7\n")
    write(mem / "memory.limit_in_bytes", f"{3 * GB}\n")
    write(mem / "memory.usage_in_bytes", f"{GB}\n")
    assert limits.cgroup_headroom(tmp_path / "ns", root) == 2 * GB
    assert limits.cgroup_headroom(tmp_path / "absent", root) is None


def test_available_is_the_smaller_of_memavailable_and_the_cgroup(monkeypatch):
    monkeypatch.setattr(limits, "meminfo_available", lambda: 100 * GB)
    monkeypatch.setattr(limits, "cgroup_headroom", lambda: 3 * GB)  # a container on a big host
    assert limits.available_bytes("cpu") == 3 * GB
    monkeypatch.setattr(limits, "cgroup_headroom", lambda: None)
    assert limits.available_bytes(torch.device("cpu")) == 100 * GB
    monkeypatch.setattr(limits, "meminfo_available", lambda: None)  # neither: the physical memory
    assert limits.available_bytes("cpu") > 0


def test_this_machine_has_an_answer():
    have = limits.available_bytes("cpu")
    assert have is not None and 0 < have
    if limits.meminfo_available() is not None:
        assert have <= limits.meminfo_available() * 1.5  # the same notion, read moments apart


def test_every_memory_guard_asks_available_bytes(monkeypatch, capsys):
    """Training's step check, the model check, `bench attention`'s inputs and its explicit-matrix
    skip all hold their need against limits.available_bytes, and refuse on what it says."""
    from attnlab.cli import main
    from attnlab.lab import bench
    from attnlab.train import check_fits

    asked = []
    monkeypatch.setattr(limits, "available_bytes", lambda device="cpu": asked.append(str(device)) or 10**6)
    cfg = Config(device="cpu")
    with pytest.raises(ConfigError, match=r"one training step needs .* but cpu has 0\.0 GB available"):
        check_fits(cfg, torch.device("cpu"))
    with pytest.raises(ConfigError, match="has 0.0 GB available"):
        limits.check_model_fits(cfg, "cpu")
    assert bench._free_bytes(torch.device("cpu")) == 10**6
    assert main(["bench", "attention", "--n", "512", "--heads", "8", "--d-head", "64"]) == 2
    assert "half of this machine's 0.0 GB available" in capsys.readouterr().err
    assert asked == ["cpu"] * 4
    monkeypatch.setattr(limits, "available_bytes", lambda device="cpu": None)  # cannot be told: no refusal
    check_fits(cfg, torch.device("cpu"))
    limits.check_model_fits(cfg, "cpu")
    assert bench._free_bytes(torch.device("cpu")) == 8 * 2**30


def test_no_other_notion_of_memory_in_the_source():
    """MemAvailable, the physical page count, psutil's and torch's free memory are read in limits.py only."""
    other = re.compile(r"MemAvailable|SC_PHYS_PAGES|virtual_memory\(|mem_get_info|total_memory")
    found = [
        f"{p.relative_to(SRC)}:{i}"
        for p in SRC.rglob("*.py")
        if p.name != "limits.py" or p.parent != SRC
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if other.search(line)
    ]
    assert not found, f"read memory through attnlab.limits.available_bytes instead: {found}"
