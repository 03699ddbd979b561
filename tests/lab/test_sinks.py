"""Attention sinks over training (attnlab.lab.sinks): every claim can PASS, FAIL and (where its rule
allows) be INCONCLUSIVE on hand-made results; measure at quick scale from a tiny run's snapshots."""

import copy

import pytest

from attnlab.diagnostics import SINK_THRESHOLD, sink_baseline
from attnlab.lab import runs as R
from attnlab.lab import sinks as K
from attnlab.lab.labbook import Context, NotAvailable

B = round(sink_baseline(12), 6)
SEEDS = [str(20261017 + i) for i in range(5)]


def run(final_share=0.17, strongest=0.25, init=None, first=None, stays=None, sink_heads=0.0):
    init = B if init is None else init
    return {
        "T": 12,
        "baseline": B,
        "steps": [0, 10, 1500],
        "share": [init, 0.2, final_share],
        "share_layer": [[init, 0.2, final_share]] * 2,
        "strongest": [init, 0.3, strongest],
        "sink_heads": [0.0, 0.0, sink_heads],
        "init_share": init,
        "final_share": final_share,
        "final_strongest": strongest,
        "final_sink_heads": sink_heads,
        "final_heads": [[final_share] * 4] * 2,
        "peak": max(init, strongest),
        "peak_step": 1500,
        "first_step": first,
        "stays_step": stays,
    }


def results(small=None, big=None):
    """small / big: {tag: [run, ...]} per seed; default a model with no sink, in every seed."""
    default = {"scaled": [run() for _ in SEEDS], "unscaled": [run() for _ in SEEDS]}
    small, big = small or default, big or copy.deepcopy(default)

    def table(d):
        n = len(next(iter(d.values())))
        return {SEEDS[i]: {tag: d[tag][i] for tag in ("scaled", "unscaled") if tag in d} for i in range(n)}

    return {
        "threshold": SINK_THRESHOLD,
        "baseline": B,
        "reference": {
            "T": 12,
            "all_first": 1.0,
            "uniform": B,
            "diagonal": 0.0,
            "baseline": B,
            "sink_heads_of_the_three": 0.3333,
        },
        "per_seed_small": table(small),
        "per_seed_big": table(big),
    }


def verdicts(r):
    return {c["id"]: c["verdict"] for c in K.judge(r)}


def test_every_claim_is_judged_and_none_is_a_book_claim():
    cs = K.judge(results())
    assert {c["id"] for c in cs} == {
        "sink_metric_reference",
        "sink_init_uniform",
        "no_sink_small_scaled",
        "no_sink_small_unscaled",
        "no_sink_big_scaled",
        "no_sink_big_unscaled",
        "no_excess_small_scaled",
        "unscaled_like_scaled_small",
        "unscaled_like_scaled_big",
        "sink_formation_step",
    }
    assert {c["kind"] for c in cs} <= {"sanity", "prediction", "beyond"}
    assert {c["id"] for c in cs if c["kind"] == "sanity"} == {"sink_metric_reference", "sink_init_uniform"}


def test_metric_reference():
    assert verdicts(results())["sink_metric_reference"] == "PASS"
    r = results()
    r["reference"]["diagonal"] = 0.1
    assert verdicts(r)["sink_metric_reference"] == "FAIL"


@pytest.mark.parametrize(
    "inits, expected",
    [
        ([B + 0.001, B - 0.001, B, B + 0.0005, B], "PASS"),
        ([B + 0.2, B + 0.21, B + 0.19, B + 0.2, B + 0.2], "FAIL"),  # not uniform at init
        ([B + 0.03, B - 0.01, B + 0.04, B - 0.02, B + 0.01], "INCONCLUSIVE"),
    ],
)
def test_init_uniform(inits, expected):
    small = {"scaled": [run(init=x) for x in inits], "unscaled": [run() for _ in inits]}
    assert verdicts(results(small=small))["sink_init_uniform"] == expected


@pytest.mark.parametrize(
    "strongest, expected",
    [
        ([0.25, 0.2, 0.22, 0.24, 0.21], "PASS"),  # below 0.3 in every seed: no sink, as predicted
        ([0.6, 0.7, 0.65, 0.62, 0.68], "FAIL"),  # a sink head in every seed: the prediction was wrong
        ([0.1, 0.6, 0.2, 0.5, 0.3], "INCONCLUSIVE"),
    ],
)
@pytest.mark.parametrize("size", ["small", "big"])
@pytest.mark.parametrize("tag", ["scaled", "unscaled"])
def test_no_sink(size, tag, strongest, expected):
    other = "unscaled" if tag == "scaled" else "scaled"
    d = {tag: [run(strongest=x, sink_heads=float(x > 0.3)) for x in strongest], other: [run() for _ in strongest]}
    r = results(**{size: d})
    assert verdicts(r)[f"no_sink_{size}_{tag}"] == expected


@pytest.mark.parametrize(
    "final, expected",
    [
        ([0.15, 0.16, 0.17, 0.15, 0.16], "PASS"),  # below uniform in every seed
        ([0.4, 0.42, 0.38, 0.41, 0.39], "FAIL"),  # above uniform: the prediction was wrong
        ([0.1, 0.4, 0.2, 0.35, 0.15], "INCONCLUSIVE"),
    ],
)
def test_no_excess_small_scaled(final, expected):
    small = {"scaled": [run(final_share=x) for x in final], "unscaled": [run() for _ in final]}
    assert verdicts(results(small=small))["no_excess_small_scaled"] == expected


@pytest.mark.parametrize(
    "unscaled, expected",
    [
        ([0.18, 0.19, 0.18, 0.17, 0.185], "PASS"),  # within the margin of scaled (0.17 in every seed)
        ([0.5, 0.55, 0.52, 0.48, 0.5], "FAIL"),  # far more sink without the scale
        ([0.01, 0.02, 0.015, 0.01, 0.02], "FAIL"),  # far less
        ([0.05, 0.6, 0.1, 0.5, 0.3], "INCONCLUSIVE"),
    ],
)
@pytest.mark.parametrize("size", ["small", "big"])
def test_unscaled_like_scaled(size, unscaled, expected):
    d = {"scaled": [run(final_share=0.17) for _ in unscaled], "unscaled": [run(final_share=x) for x in unscaled]}
    assert verdicts(results(**{size: d}))[f"unscaled_like_scaled_{size}"] == expected


def test_margin_is_half_the_way_from_uniform_to_the_threshold():
    assert K.alike_margin(results()) == pytest.approx((0.3 - B) / 2) == pytest.approx(0.0544, abs=1e-4)


def test_formation_step_is_reported_per_seed():
    small = {
        "scaled": [run(strongest=0.5, first=75, stays=100), run(strongest=0.2, first=None)],
        "unscaled": [run(strongest=0.2, first=3), run()],
    }
    c = next(c for c in K.judge(results(small=small)) if c["id"] == "sink_formation_step")
    assert c["verdict"] == "REPORTED" and c["kind"] == "beyond"
    assert "s20261017: first 75, stays from 100" in c["inputs"]["small_scaled"]
    assert "s20261018: first never" in c["inputs"]["small_scaled"]
    assert "small scaled: of 2 seeds, 1 have a head above 0.3 at some step, 1 end with one" in c["detail"]
    assert "small unscaled: of 2 seeds, 1 have a head above 0.3 at some step, 0 end with one" in c["detail"]


def test_only_what_was_measured_is_judged():
    r = results()
    r["per_seed_big"] = {}
    ids = set(verdicts(r))
    assert not any("big" in i for i in ids) and "unscaled_like_scaled_small" in ids
    r["per_seed_small"][SEEDS[0]]["scaled"] = None  # a run without snapshots is left out
    c = next(c for c in K.judge(r) if c["id"] == "no_sink_small_scaled")
    assert c["n"] == len(SEEDS) - 1
    r["per_seed_small"][SEEDS[1]]["unscaled"]["final_share"] = None  # a diverged run's NaN, stored as None
    c = next(c for c in K.judge(r) if c["id"] == "unscaled_like_scaled_small")
    assert c["n"] == len(SEEDS) - 2


def test_whys_take_their_numbers_from_the_results():
    small = {"scaled": [run(strongest=0.61, final_share=0.45)] * 3, "unscaled": [run(final_share=0.1)] * 3}
    r = results(small=small)
    assert "0.61" in K.WHY["no_sink_small_scaled"](r)
    assert "0.45" in K.WHY["no_excess_small_scaled"](r)
    assert "0.1, 0.1, 0.1" in K.WHY["unscaled_like_scaled_small"](r) and "0.0544" in K.WHY[
        "unscaled_like_scaled_small"
    ](r)


def test_the_figure_draws_from_results_alone(tmp_path):
    from attnlab.report.lab_book_figures import draw_figures

    doc = {"id": "sinks", "status": "done", "results": results(), "figures": ["figures/lab_book/sinks_share.png"]}
    (path,) = draw_figures(doc, tmp_path)
    assert path == tmp_path / "figures" / "lab_book" / "sinks_share.png" and path.stat().st_size > 10_000


def test_nothing_on_disk_is_not_available(tmp_path):
    with pytest.raises(NotAvailable):
        K.measure(Context(R.Scale(), "", tmp_path, {}, K.EXPERIMENT, train=False))


def test_committed_numbers_are_kept_for_seeds_not_on_disk(tmp_path):
    prev = results()
    out = K.measure(Context(R.Scale(), "", tmp_path, {}, K.EXPERIMENT, train=False, previous=copy.deepcopy(prev)))
    assert out.results["per_seed_small"] == prev["per_seed_small"]
    assert out.results["seeds_big"] == [int(s) for s in SEEDS]
    assert verdicts(out.results) == verdicts(prev)


def test_quick_measure_end_to_end(tmp_path, one_thread):
    """The case's four runs at quick scale (20 steps, snapshots at every step): measured from their
    snapshots, step 0 of the scaled runs is uniform, and the table and figure are written."""
    from attnlab.corpus import load_corpus
    from attnlab.runner import execute

    scale = R.Scale.make(True)
    runs = K.runs_of_seed(scale, R.BOOK_SEED)
    assert {r.name for r in runs} >= {"big_scaled", "big_unscaled", f"small_scaled_s{R.BOOK_SEED}"}
    assert all(r.cfg.snapshot_every > 0 for r in runs)
    finished = execute(runs, load_corpus(), tmp_path / "runs", executor="serial", progress=False, log=lambda s: None)
    out = K.measure(Context(scale, load_corpus(), tmp_path, finished, K.EXPERIMENT))
    res = out.results
    assert out.status == "done" and res["seeds_small"] == res["seeds_big"] == [R.BOOK_SEED]
    r = res["per_seed_small"][str(R.BOOK_SEED)]["scaled"]
    assert r["steps"] == list(range(21)) and len(r["share_layer"]) == 2
    assert r["init_share"] == pytest.approx(res["baseline"], abs=0.02)
    assert 0 <= r["final_share"] <= 1 and r["first_step"] in (None, *r["steps"])
    assert len(res["rows"]) == 4
    assert out.figures == ["figures/lab_book/sinks_share.png"]
    v = verdicts(res)
    assert v["sink_metric_reference"] == "PASS" and v["sink_formation_step"] == "REPORTED"
