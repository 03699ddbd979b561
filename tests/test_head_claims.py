"""§1.8.5 / §1.8.6 claims: one satisfying and one violating result per id."""

import copy

import pytest

from attnlab.experiments.heads import head_claims

BOOK = {
    "L0H0": [0.294, 0.769, 0.050, 1.20],
    "L0H1": [0.521, 0.193, 0.450, 2.31],
    "L0H2": [0.804, 0.127, 0.107, 3.92],
    "L0H3": [0.625, 0.090, 0.261, 3.86],
    "L1H0": [0.614, 0.276, 0.182, 3.16],
    "L1H1": [0.687, 0.259, 0.232, 3.07],
    "L1H2": [0.702, 0.147, 0.108, 4.61],
    "L1H3": [0.871, 0.165, 0.134, 4.47],
}


def portrait(jitter: float = 1.0) -> dict:
    heads, abl = [], []
    for key, (ent, diag, prev, dist) in BOOK.items():
        L, H = int(key[1]), int(key[3])
        heads.append(
            {
                "layer": L,
                "head": H,
                "entropy": ent,
                "diag": diag * jitter,
                "prev": prev * jitter,
                "distance": dist,
                "distance_std": 1.0,
            }
        )
        big = (L, H) in ((0, 0), (0, 1))  # "a few heads matter"
        abl.append({"layer": L, "head": H, "delta_loss": 0.3 if big else 0.004, "delta_loss_std": 0.01})
    return {"heads": heads, "ablation": {"batches": 8, "heads": abl}}


def seeds():
    return [portrait(1.0), portrait(1.02), portrait(0.98)]


BREAK = {
    "self_head": lambda rs: [h.update(diag=min(h["diag"], 0.2)) for r in rs for h in r["heads"]],
    "previous_token_head": lambda rs: [h.update(prev=min(h["prev"], 0.1)) for r in rs for h in r["heads"]],
    "layer0_local_layer1_global": lambda rs: [
        h.update(distance=6.0) for r in rs for h in r["heads"] if h["layer"] == 0
    ],
    "most_heads_near_zero": lambda rs: [h.update(delta_loss=0.2) for r in rs for h in r["ablation"]["heads"]],
}


def test_every_head_claim_is_covered():
    assert {c["id"] for c in head_claims(seeds())} == set(BREAK)


@pytest.mark.parametrize("cid", sorted(BREAK))
def test_head_claim_passes_and_fails(cid):
    good = seeds()
    assert {c["id"]: c for c in head_claims(good)}[cid]["pass"]
    bad = copy.deepcopy(good)
    BREAK[cid](bad)
    c = {c["id"]: c for c in head_claims(bad)}[cid]
    assert not c["pass"] and c["reason"]["category"] in ("finding", "unexplained")
