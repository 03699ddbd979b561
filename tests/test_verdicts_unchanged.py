"""Moving code never changes a verdict: the committed case and lab book, judged again by today's
code, give every claim the kind, verdict, Holm and sequential verdicts recorded in
tests/data/verdicts_baseline.json (written by ``python scripts/verdict_snapshot.py --write``
before the lab book moved into lab/). A claim re-specified on purpose is an amendment of the
claims registry and changes this baseline in the same commit, with the reason in the message."""

import json
import sys

from attnlab.corpus import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import verdict_snapshot  # noqa: E402


def test_every_committed_verdict_is_judged_again_the_same():
    baseline = json.loads(verdict_snapshot.BASELINE.read_text(encoding="utf-8"))
    now = verdict_snapshot.snapshot(REPO_ROOT)
    assert set(now) == set(baseline), (
        f"claims gone: {sorted(set(baseline) - set(now))}; claims new: {sorted(set(now) - set(baseline))}"
    )
    changed = {cid: (baseline[cid], now[cid]) for cid in baseline if baseline[cid] != now[cid]}
    assert not changed, f"{len(changed)} verdicts changed: {changed}"
    assert len(now) >= 170  # the case's 37 and the book's 141 claims
