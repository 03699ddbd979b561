"""A synthetic class of five for tests and the docs: one student right, one wrong in each way.

Runs are synthetic run folders (config.json, summary.json, metrics.jsonl) whose final validation
losses are set so that the gap lands where each student needs it (at the lab's mean, or far
outside); no model is trained. Code is the package's own solutions, or a wrong or hostile variant.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from .measured import CLASS_D_HEADS, expected_configs, lab_gaps

SOLUTIONS = Path(__file__).with_name("solutions")


def _run(d: Path, cfg, val: float, steps: int | None = None) -> None:
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(cfg.to_dict()), encoding="utf-8")
    (d / "summary.json").write_text(
        json.dumps({"steps": steps or cfg.max_steps, "val_loss_end": val}), encoding="utf-8"
    )
    (d / "metrics.jsonl").write_text("", encoding="utf-8")


def _pairs(where: Path, exercise: str, seed: int, gaps: dict[int, float]) -> None:
    cfgs = expected_configs(exercise, seed)
    for d, gap in gaps.items():
        _run(where / f"d{d}_scaled", cfgs[d], 4.1)
        _run(where / f"d{d}_unscaled", cfgs[d].replace(scaled=False), 4.1 + gap)


def lab_means(exercise: str, d_heads) -> dict[int, float]:
    gaps = lab_gaps("exercise1" if exercise == "ex1" else "exercise2")
    return {d: statistics.fmean(gaps[d]) for d in d_heads}


def make_five(class_dir: Path, outside: Path) -> None:
    """Fill the submissions of a five-student class made by classroom.new (``outside``: a folder
    outside the class that hostile links point into; it must stay unread)."""
    roster = json.loads((class_dir / "class.json").read_text(encoding="utf-8"))["students"]
    sub = {s["id"]: (class_dir / "submissions" / s["id"], s["seed"]) for s in roster}
    ids = sorted(sub)
    centroid = (SOLUTIONS / "centroid.py").read_text(encoding="utf-8")
    debugger = (SOLUTIONS / "debugger.py").read_text(encoding="utf-8")
    ex1_ok, ex2_ok = lab_means("ex1", (32, 64)), lab_means("ex2", CLASS_D_HEADS)

    # 1: right
    d, seed = sub[ids[0]]
    (d / "ex3.py").write_text(centroid, encoding="utf-8")
    (d / "ex4.py").write_text(debugger, encoding="utf-8")
    _pairs(d / "ex1", "ex1", seed, ex1_ok)
    _pairs(d / "ex2", "ex2", seed, ex2_ok)
    # 2: wrong code: the spread with ddof=1; the chapter's ② check taken literally
    d, seed = sub[ids[1]]
    (d / "ex3.py").write_text(centroid.replace("dist.std()", "dist.std(ddof=1)"), encoding="utf-8")
    (d / "ex4.py").write_text(
        debugger.replace(
            "if np.isnan(scores).any() or np.isposinf(scores).any() or (~np.isfinite(scores)).all(-1).any():",
            "if not np.isfinite(scores).all():",
        ),
        encoding="utf-8",
    )
    _pairs(d / "ex1", "ex1", seed, ex1_ok)
    _pairs(d / "ex2", "ex2", seed, ex2_ok)
    # 3: wrong numbers: an ex1 gap far outside the lab's interval, runs with another student's seed, ex2 from another config
    d, seed = sub[ids[2]]
    (d / "ex3.py").write_text(centroid, encoding="utf-8")
    (d / "ex4.py").write_text(debugger, encoding="utf-8")
    _pairs(d / "ex1", "ex1", seed + 1, {32: ex1_ok[32], 64: 1.5})
    cfg = expected_configs("ex2", seed)[128].replace(max_steps=300)
    _run(d / "ex2" / "short_scaled", cfg, 4.6)
    _run(d / "ex2" / "short_unscaled", cfg.replace(scaled=False), 4.7)
    # 4: hostile: links out of the class, a huge file, a FIFO, a name that is not UTF-8
    d, seed = sub[ids[3]]
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.py").write_text("def centroid(p):\n    return 0.0, 0.0\n", encoding="utf-8")
    _pairs(outside / "runs", "ex1", seed, ex1_ok)
    os.symlink(outside / "secret.py", d / "ex3.py")
    (d / "ex4.py").write_bytes(b"#" * (512 * 1024))
    os.symlink(outside / "runs", d / "ex1")
    (d / "ex2").mkdir()
    os.mkfifo(d / "ex2" / "fifo")
    os.symlink(outside / "runs" / "d32_scaled", d / "ex2" / "d32_scaled")
    (d / os.fsdecode(b"notes-\xff\xfe.txt")).write_bytes(b"\xff\xfe")
    # 5: code that hangs and code that does not import; no runs
    d, seed = sub[ids[4]]
    (d / "ex3.py").write_text("def centroid(p):\n    while True:\n        pass\n", encoding="utf-8")
    (d / "ex4.py").write_text("class AttentionDebugger(\n", encoding="utf-8")
