"""The case's runs keep their names and configs: what ``attnlab case`` trains at full size
(``case_runs`` of the default settings, in the batches of ``case_stages``) and what the case's lab-book
entry declares (``runs``) and adds per seed and claim (``seed_runs``: ``attnlab book --decide`` and the
confirmatory round train these), compared with tests/data/case_runs_baseline.json. A run renamed or
re-configured would be trained again under another name, or its stored numbers read for another model.
Rewrite the baseline (``python tests/test_case_runs_unchanged.py --write``) only when a run is
meant to change, and say why in the commit."""

import json
import sys
from pathlib import Path

BASELINE = Path(__file__).parent / "data" / "case_runs_baseline.json"


def _run(r, configs: dict) -> str:
    """One run as "group/name keep=… key": its config once in ``configs``, by its run key."""
    configs[r.cfg.run_key()] = r.cfg.to_dict()
    return f"{r.group}/{r.name} keep={','.join(map(str, r.keep_weights or ()))} {r.cfg.run_key()}"


def listing() -> dict:
    from attnlab.lab import EXPERIMENTS
    from attnlab.lab.case.run import CaseSettings, case_runs, case_stages
    from attnlab.lab.confirm import CONFIRM_SEED
    from attnlab.lab.runs import BOOK_SEED, Scale

    entry = next(e for e in EXPERIMENTS if e.id == "case")
    data = json.loads((Path(__file__).parents[1] / "data" / "lab_book" / "case.json").read_text(encoding="utf-8"))
    claim_ids = [c["id"] for c in data["claims"]]
    scale = Scale.make(False)
    groups, pairs = case_runs(CaseSettings())
    seeds = [BOOK_SEED + i for i in range(5)] + [CONFIRM_SEED + i for i in range(3)]
    configs: dict = {}
    seed_runs: dict = {}  # seed -> the runs one more seed adds -> the claims it adds them for
    for seed in seeds:
        by_runs: dict = {}
        for cid in claim_ids:
            runs = tuple(_run(r, configs) for r in entry.seed_runs(scale, seed, cid))
            by_runs.setdefault(runs, []).append(cid)
        seed_runs[str(seed)] = [{"runs": list(runs), "claims": sorted(ids)} for runs, ids in sorted(by_runs.items())]
    return {
        "case_runs": [[_run(r, configs) for r in g] for g in groups],
        "pairs": pairs,
        "stages": [[r.name for r in batch] for _, batch in case_stages(CaseSettings())],
        "entry_runs": [_run(r, configs) for r in entry.runs(scale)],
        "entry_seed_runs": seed_runs,
        "configs": dict(sorted(configs.items())),
    }


def test_the_case_runs_keep_their_names_and_configs():
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(listing()))
    for part in baseline:
        assert now[part] == baseline[part], f"the case's {part} changed (see this test's docstring)"
    assert set(now) == set(baseline)
    assert any(g["runs"] for groups in now["entry_seed_runs"].values() for g in groups)  # claims add runs per seed


if __name__ == "__main__" and "--write" in sys.argv:
    BASELINE.write_text(json.dumps(listing(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
