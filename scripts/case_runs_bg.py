"""Train a disjoint share of the case's runs in one background process.

    nice -n 10 .venv/bin/python scripts/case_runs_bg.py WORKER N_WORKERS [--out .]

Each worker trains every N-th run of each priority tier (case runs, then the big
pair's other seeds, then the weight-decay runs) with exactly the configs that
``attnlab case`` declares (``case.case_runs``), one thread, resuming any run
whose folder holds ckpt.pt; ``attnlab case`` then finds them finished and
reuses them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from attnlab.checkpoint import KeepWeights
from attnlab.corpus import DEFAULT_CORPUS, load_corpus
from attnlab.experiments.case import KEEP_WEIGHTS, CaseSettings, case_runs
from attnlab.runner import finished_history
from attnlab.tokenizer import CharTokenizer
from attnlab.train import train


def tiers(settings: CaseSettings, order: str = "case-first"):
    groups, pairs = case_runs(settings)
    specs = [sp for g in groups for sp in g]
    case = [sp for sp in specs if sp.name.startswith("small_") or sp.name in ("big_unscaled", "big_scaled")]
    big = [sp for sp in specs if sp not in case and "_wd" not in sp.name]
    wd = [sp for sp in specs if "_wd" in sp.name]
    # within a tier: first seed first, so one worker's share stays balanced
    if order == "new-first":
        # on a contended machine: the runs whose results are not yet in data/ch1_case.json first,
        # weight decay 0 (one pair explains the most), the big pair's second and third seed, weight decay 0.01
        seed2 = [sp for sp in big if sp.name.endswith(f"_s{settings.seeds[1]}")]
        seed3 = [sp for sp in big if sp not in seed2]
        wd0 = [sp for sp in wd if "_wd0_" in sp.name]
        wd_rest = [sp for sp in wd if sp not in wd0]
        return [wd0, seed2, seed3, wd_rest, case]
    return [case, big, wd]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("worker", type=int)
    ap.add_argument("n_workers", type=int)
    ap.add_argument("--out", default=".")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--wd-seeds", type=int, default=1)
    ap.add_argument("--order", choices=("case-first", "new-first"), default="case-first")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    settings = CaseSettings(wd_seeds=a.wd_seeds)
    text = load_corpus(DEFAULT_CORPUS, min_chars=65)
    root = Path(a.out) / "runs" / "case"
    for tier in tiers(settings, a.order):
        # unscaled to worker 0, scaled to worker 1 (same cost), interleaved for more workers
        mine = [sp for i, sp in enumerate(tier) if i % a.n_workers == a.worker]
        for sp in mine:
            run_dir = root / sp.name
            if finished_history(run_dir, sp.cfg):
                print(f"[{time.strftime('%H:%M:%S')}] {sp.name}: already finished", flush=True)
                continue
            resume = (run_dir / "ckpt.pt").is_file()
            t0 = time.time()
            print(f"[{time.strftime('%H:%M:%S')}] {sp.name}: {'resume' if resume else 'start'}", flush=True)
            _, _, h = train(
                text,
                sp.cfg,
                out_dir=run_dir,
                resume=resume,
                callbacks=[KeepWeights(run_dir, KEEP_WEIGHTS, CharTokenizer(text, sp.cfg.vocab_size))],
            )
            print(
                f"[{time.strftime('%H:%M:%S')}] {sp.name}: done in {time.time() - t0:.0f} s, "
                f"last loss {h.records[-1]['loss']:.4f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
