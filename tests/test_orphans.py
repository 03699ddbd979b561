"""Local workers never outlive their parent: kill -9 of a runner whose output is piped leaves no
process behind, and the pipe reaches end-of-file, so `attnlab sweep … | tee log`, a CI step or
``subprocess.run(capture_output=True)`` returns."""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")

MARK = "ATTNLAB_ORPHAN_TEST"


def _marked(mark: str) -> list:
    """Every process whose environment carries this test's mark (the parent's children inherit it)."""
    found = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get(MARK) == mark:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return [p for p in found if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _training(root, n: int) -> bool:
    return all(
        (root / f"r{i}" / "metrics.jsonl").is_file() and (root / f"r{i}" / "metrics.jsonl").stat().st_size > 0
        for i in range(n)
    )


def test_kill_9_of_a_piped_parent_leaves_no_worker_and_closes_the_pipe(tmp_path, tiny_cfg, text):
    """Two local workers train runs far too long to finish; the parent, its stdout and stderr piped,
    is killed with SIGKILL (as the OOM killer does). Within seconds both pipes reach EOF and no
    process started by it (workers, multiprocessing's resource tracker) is left."""
    long = tiny_cfg.replace(max_steps=100_000, eval_every=50, ckpt_every=50)
    script = (
        "import sys\nfrom attnlab.config import Config\nfrom attnlab.runner import Run, execute\n"
        f"cfg = Config.from_dict({long.to_dict()!r})\n"
        "rs = [Run(f'r{i}', cfg.replace(seed=100 + i)) for i in range(3)]\n"
        "if __name__ == '__main__':\n"
        f"    execute(rs, {text!r}, sys.argv[1], executor='local', workers=2, progress=False)\n"
    )
    root = tmp_path / "root"
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    started = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not _training(root, 2) and proc.poll() is None:
            time.sleep(0.2)
        assert _training(root, 2), f"the workers never trained: {proc.poll()=}"
        started = psutil.Process(proc.pid).children(recursive=True)
        assert len(started) >= 3, f"expected 2 workers and the resource tracker, found {started}"
        os.kill(proc.pid, signal.SIGKILL)
        t0 = time.time()
        try:
            proc.communicate(timeout=10)  # reads stdout and stderr to EOF
        except subprocess.TimeoutExpired:
            pytest.fail(
                "the piped output never reached EOF 10 s after kill -9 of the parent: "
                + ", ".join(f"{p.pid} {' '.join(p.cmdline()[-2:])}" for p in _marked(mark))
            )
        eof = time.time() - t0
        _, alive = psutil.wait_procs(started, timeout=5)
        left = _marked(mark)
        assert not alive and not left, f"left behind: {alive or left}"
        assert eof < 10
    finally:
        for p in [*started, *_marked(mark)]:  # never leave a trainer running on a failing test
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        if proc.poll() is None:
            proc.kill()
        for f in (proc.stdout, proc.stderr):
            if f:
                f.close()
        proc.wait(timeout=10)
