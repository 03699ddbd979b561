"""One run given as plain data (a task), trained where it lands, and the errors of running runs.

``train_one`` is what every executor of :mod:`attnlab.runner` calls for a run, in this process, in
a local worker, on a Ray node or in a SLURM job (:mod:`attnlab.slurm_executor`): it reuses a
finished run, resumes an interrupted one from its checkpoint, sets an unreadable checkpoint aside
and starts that run afresh, and never raises for a run that fails (its status dict says why).

The runner and its SLURM executor both stand on this module, so neither imports the other back
(the runner imports the SLURM executor only when ``--executor slurm`` asks for it).
"""

from __future__ import annotations

import os
import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .checkpoint import CheckpointUnreadable, KeepWeights
from .config import Config
from .errors import AttnlabError, CheckpointError, RunFolderBusy
from .runfolder import load_average
from .tokenizer import CharTokenizer


class RunnerError(AttnlabError):
    pass


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C: every run in flight has checkpointed; run the same command again to resume."""


def finished_history(run_dir: Path, cfg: Config) -> bool:
    """True when ``run_dir`` holds a run that completed with this config (device aside).

    Raises CheckpointError when the checkpoint cannot be read.
    """
    from .checkpoint import config_diff, read_checkpoint

    if not (run_dir / "summary.json").is_file() or not (run_dir / "ckpt.pt").is_file():
        return False
    payload = read_checkpoint(run_dir / "ckpt.pt")
    try:
        saved = Config.from_dict(payload["config"])
        records = payload["history"]["records"]
        diverged = payload["history"].get("diverged_at")
    except (KeyError, TypeError, AttnlabError) as e:
        raise CheckpointError(f"{run_dir / 'ckpt.pt'} is not a complete attnlab checkpoint ({e})") from None
    if config_diff(saved, cfg, ignore=("device",)):
        return False
    return len(records) >= cfg.max_steps or diverged is not None


def set_aside(path: Path) -> Path:
    """Rename ``path`` to ``<name>.corrupt-<time>`` (a counter after the time when that name is
    taken): an earlier file set aside in the same second is never replaced."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(10_000):
        aside = path.with_name(f"{path.name}.corrupt-{stamp}" + (f"-{n}" if n else ""))
        try:
            os.link(path, aside)  # fails if the name is taken: never replaces an earlier one
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links
            if aside.exists():
                continue
            shutil.move(str(path), aside)
            return aside
        path.unlink()
        return aside
    raise RunnerError(f"cannot set {path} aside: 10000 names {path.name}.corrupt-{stamp}-N are taken; clean them up")


# ------------------------------------------------------------------------- one run
def train_one(task: dict, on_step: Callable[[], None] | None = None) -> dict:
    """Train (reuse, resume) one run described by plain data; never raises for a failing run.

    task: name, dir, config (dict), text, threads and keep_weights (optional). Returns name, status
    (reused | trained | resumed | interrupted | failed), seconds, cpu_s (this process's CPU time over
    them), load (the machine's 1-minute load at the end; runfolder.load_state), error, messages.
    """
    import torch

    from .train import TrainingInterrupted, train

    out = Path(task["dir"])
    cfg = Config.from_dict(task["config"])
    result: dict[str, Any] = {"name": task["name"], "status": "failed", "seconds": 0.0, "error": None, "messages": []}
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        try:
            if finished_history(out, cfg):
                return {**result, "status": "reused"}
        except CheckpointUnreadable:
            raise  # intact as far as we know: fail this run, never set it aside
        except CheckpointError:
            aside = set_aside(out / "ckpt.pt")
            out.joinpath("summary.json").unlink(missing_ok=True)
            result["messages"].append(
                f"{out / 'ckpt.pt'} could not be read; kept it as {aside.name} and restarted that run"
            )
        resume = (out / "ckpt.pt").is_file()
        if resume:
            try:
                check_resumable(out, cfg)
            except CheckpointUnreadable:
                raise
            except CheckpointError:
                aside = set_aside(out / "ckpt.pt")
                out.joinpath("summary.json").unlink(missing_ok=True)
                result["messages"].append(
                    f"{out / 'ckpt.pt'} could not be read; kept it as {aside.name} and restarted that run"
                )
                resume = False
        if task.get("threads"):
            torch.set_num_threads(task["threads"])
        callbacks = [_StepCallback(on_step)] if on_step else []
        tok = None  # built here only when kept weights need it; train() then reuses it
        if task.get("keep_weights"):
            tok = CharTokenizer(task["text"], cfg.vocab_size)
            callbacks.append(KeepWeights(out, task["keep_weights"], tok))
        train(
            task["text"],
            cfg,
            out_dir=out,
            resume=resume,
            overwrite=not resume,  # the run folder is ours
            callbacks=callbacks,
            tok=tok,
            tensorboard=bool(task.get("tensorboard")),
        )
        result["status"] = "resumed" if resume else "trained"
    except TrainingInterrupted:
        result["status"] = "interrupted"
    except RunFolderBusy as e:  # another process trains in that folder: not this run's failure
        result["status"] = "busy"
        result["error"] = e.holder
    except Exception as e:  # one run's failure must not stop the others
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()
    result["seconds"] = round(time.perf_counter() - t0, 3)
    result["cpu_s"] = round(time.process_time() - cpu0, 3)
    result["load"] = load_average()
    return result


class ForeignRun(RunnerError):
    pass


def check_resumable(out: Path, cfg: Config) -> None:
    """A folder holding a run of another config is not ours: refuse, touch nothing.

    Raises CheckpointError when the checkpoint cannot be read (the caller sets it aside).
    """
    from .checkpoint import config_diff, read_checkpoint

    payload = read_checkpoint(out / "ckpt.pt")
    try:
        saved = Config.from_dict(payload["config"])
    except (KeyError, TypeError, AttnlabError) as e:
        raise CheckpointError(f"{out / 'ckpt.pt'} holds no valid config ({e})") from None
    diff = config_diff(saved, cfg, ignore=("device",))
    if diff:
        raise ForeignRun(
            f"{out} holds a run with a different config ({diff}); use another output folder or delete that one"
        )


class _StepCallback:
    def __init__(self, fn: Callable[[], None]):
        self.fn = fn

    def on_step_end(self, step, record, model) -> None:
        self.fn()
