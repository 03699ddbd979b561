"""A run smaller than the full case: its FAILs that come from the scale are 规模 / scale, with the
numbers that say why, and never at full size; the summary `attnlab case` ends with; the init sweep's
shortened forward pass.

The runs here are the committed case (data/ch1_case.json, 1500 steps) cut to its first N steps, as a
run of N steps stores them (the first seed only): nothing is trained.
"""

import copy
import json
import re
from pathlib import Path

import pytest
import torch

from attnlab.config import Config
from attnlab.lab.case import claims as C
from attnlab.lab.case.run import CaseSettings, observe_first_attention, summary_lines
from attnlab.model import TinyGPT
from attnlab.verdicts import REASON_LABELS

ROOT = Path(__file__).resolve().parents[1]
QUICK = CaseSettings.quick()


@pytest.fixture(scope="module")
def committed():
    return json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))


def shortened(res: dict, n: int) -> dict:
    """``res`` as a case of ``n`` steps on its first seed would store it: traces cut to steps < n."""
    r = copy.deepcopy(res)
    r["seed_runs"] = {}
    r["seeds"]["runs"] = r["seeds"]["runs"][:1]
    r["weight_decay"] = {"values": [], "pairs": []}
    r["config"]["settings"].update(steps=n, seeds=r["config"]["settings"]["seeds"][:1], wd_values=[])
    for run in r["pairs"].values():
        tr = run["trace"]
        keep = sum(1 for s in tr["step"] if s < n)
        for key in ("step", "loss", "grad_norm"):
            tr[key] = tr[key][:keep]
        for layer in tr["layers"]:
            for key in layer:
                layer[key] = layer[key][:keep]
        evals = sum(1 for s in tr["val_step"] if s < n)
        tr["val_step"], tr["val_loss"] = tr["val_step"][:evals], tr["val_loss"][:evals]
        run["steps"] = n
        run["config"]["max_steps"] = n
    kept = {}  # the first seed's big pair at the book's steps the run reaches
    for name in ("big_unscaled", "big_scaled"):
        d = r["book_steps"]["runs"][name]
        idx = [i for i, s in enumerate(d["steps"]) if s < n]
        kept[name] = {
            k: [v[i] for i in idx] if k == "steps" else {m: [v[m][i] for i in idx] for m in ("mean", "sd")}
            for k, v in d.items()
        }
    r["book_steps"]["runs"] = kept
    r["claims"] = C.check_claims(r)
    return r


def by_id(res: dict) -> dict:
    return {c["id"]: c for c in C.check_claims(res)}


def first_below(run: dict, level: float = 0.01) -> int:
    ent = run["trace"]["layers"][0]["weight_entropy"]
    return next(run["trace"]["step"][i] for i, e in enumerate(ent) if e < level)


def test_a_short_run_s_collapse_fail_is_scale_and_names_its_steps(committed):
    n = QUICK.steps
    res = shortened(committed, n)
    c = by_id(res)["big_unscaled_entropy_collapses"]
    assert c["verdict"] == "FAIL"  # the rule maps the book's step 222 to step 33 of 225
    assert c["reason"]["category"] == "scale", c["reason"]
    text = c["reason"]["text"]
    lim = round(222 * n / 1500)
    first = first_below(res["pairs"]["big_unscaled"])
    assert first <= 222  # the collapse came within the book's own 222 steps ...
    for number in (n, 1500, lim, first):  # ... and the reason says so, in the run's own numbers
        assert re.search(rf"\b{number}\b", text), (number, text)
    assert "warmup" in text and "规模" in REASON_LABELS["scale"] and "scale" in REASON_LABELS["scale"]


def test_the_full_case_trains_the_book_s_run_and_scale_reason_names_its_sizes(committed):
    """The full case's settings (lab.case.settings, below both case and claims) train the book's
    1500 steps, and the sizes scale_reason names for the full case are those settings'."""
    full = CaseSettings()
    assert full.steps == C.BOOK_RUN_STEPS
    why = C.scale_reason("big_unscaled_entropy_collapses", shortened(committed, 225))
    assert why is not None and f"{full.steps} steps, {len(full.seeds)} seeds" in why


def test_the_same_claim_at_full_size_is_never_scale(committed):
    """At the book's 1500 steps the scale explains nothing: the committed FAILs keep their reasons, and
    the collapse claim broken at full size is unexplained, not scale."""
    v = by_id(copy.deepcopy(committed))
    assert all(c["reason"]["category"] != "scale" for c in v.values() if "reason" in c)
    assert all(C.scale_reason(cid, committed) is None for cid in v)
    broken = copy.deepcopy(committed)
    ent = broken["pairs"]["big_unscaled"]["trace"]["layers"][0]["weight_entropy"]
    broken["pairs"]["big_unscaled"]["trace"]["layers"][0]["weight_entropy"] = [ent[0]] + [0.9] * (len(ent) - 1)
    c = by_id(broken)["big_unscaled_entropy_collapses"]
    assert c["verdict"] == "FAIL" and c["reason"]["category"] == "unexplained", c["reason"]


def test_a_short_run_that_did_not_collapse_in_the_book_s_222_steps_is_not_scale(committed):
    res = shortened(committed, 300)
    layer = res["pairs"]["big_unscaled"]["trace"]["layers"][0]
    layer["weight_entropy"] = [layer["weight_entropy"][0]] + [0.9] * (len(layer["weight_entropy"]) - 1)
    c = by_id(res)["big_unscaled_entropy_collapses"]
    assert c["verdict"] == "FAIL" and c["reason"]["category"] == "unexplained", c["reason"]


def test_few_inits_make_an_init_sweep_fail_scale_and_the_full_sweep_does_not(committed):
    broken = copy.deepcopy(committed)
    broken["init_sweep"][2]["logit_std_unscaled"] *= 3
    c = by_id(broken)["init_std_table"]
    assert c["verdict"] == "FAIL" and c["reason"]["category"] == "unexplained"  # 400 inits: not the scale
    few = copy.deepcopy(broken)
    for row in few["init_sweep"]:
        row["samples"] = QUICK.init_samples
    c = by_id(few)["init_std_table"]
    assert c["verdict"] == "FAIL" and c["reason"]["category"] == "scale"
    assert f"{QUICK.init_samples} initialisations" in c["reason"]["text"] and "400" in c["reason"]["text"]


def test_no_fail_of_a_quick_sized_run_is_left_unexplained(committed):
    res = shortened(committed, QUICK.steps)
    fails = [c for c in res["claims"] if c["kind"] == "book" and c["verdict"] == "FAIL"]
    assert fails and all(c["reason"]["category"] in ("finding", "protocol", "scale") for c in fails), [
        (c["id"], c["reason"]["category"]) for c in fails
    ]
    assert sum(c["reason"]["category"] == "scale" for c in fails) >= 1


PLAN = {"runs": 16, "wall": "55 min", "core": "1.82 core-h"}
PHASES = {"total_s": 118.0, "sweeps_s": 9.0, "train_s": 92.0, "analysis_s": 6.0, "report_s": 7.0}


def _chinese_first(line: str) -> bool:
    """A CJK character before the first ' / ' (the English half) of the line."""
    head = line.split(" / ")[0]
    return bool(re.search(r"[\u4e00-\u9fff]", head))


def test_the_quick_summary_is_short_chinese_first_and_says_what_the_full_case_adds(committed):
    res = shortened(committed, QUICK.steps)
    lines = summary_lines(res, PHASES, quick=True, full_plan=PLAN)
    text = "\n".join(lines)
    assert 6 <= len(lines) <= 12, text
    assert all(_chinese_first(line) for line in lines), text
    assert lines[0].startswith("快速试跑 / quick run") and "1 min 58 s" in lines[0]
    assert "训练 / training 1 min 32 s" in lines[0] and "报告 / report 7 s" in lines[0]
    assert "冒烟测试" in text and "smoke run, not evidence" in text and "1 seed(s), 225 steps" in text
    make = next(line for line in lines if "the full case（attnlab case）" in line)
    assert "make " not in text  # an installed wheel has no Makefile
    full = CaseSettings()
    assert f"{len(full.seeds)} 个种子" in make and f"{full.steps} 步" in make and "权重衰减 / weight decay" in make
    assert "16 次训练" in make and "55 min" in make and "case --plan" in make
    why = next(line for line in lines if line.lstrip().startswith("FAIL"))
    assert REASON_LABELS["scale"] in why and REASON_LABELS["finding"] in why
    # the headline: the unscaled big model's entropy at step 222 beside the book's 0.0022
    head = next(line for line in lines if "核心结论 / headline" in line)
    assert "0.0022" in head and f"step {first_below(res['pairs']['big_unscaled'])}" in head


def test_a_full_case_summary_names_no_quick_verdicts(committed):
    lines = summary_lines(copy.deepcopy(committed), PHASES, quick=False)
    text = "\n".join(lines)
    assert "full case" not in text and "冒烟" not in text and REASON_LABELS["scale"] not in text
    assert lines[0].startswith("本章案例 / the case")


@pytest.mark.parametrize("d_model,n_head,n_layer", [(64, 1, 1), (64, 4, 2), (512, 16, 1)])
def test_the_init_sweep_s_shortened_forward_sees_what_the_full_one_sees(d_model, n_head, n_layer):
    taps = ("tap_scores", "tap_pattern", "tap_q", "tap_k")
    cfg = Config(d_model=d_model, n_head=n_head, n_layer=n_layer, vocab_size=300, block_size=32, device="cpu")
    x = torch.randint(2, 300, (8, 32), generator=torch.Generator().manual_seed(0))
    for scaled in (False, True):
        torch.manual_seed(3)
        model = TinyGPT(cfg.replace(scaled=scaled)).eval()
        with torch.no_grad(), model.capture(*taps) as full:
            model(x)
        short = observe_first_attention(model, x, taps)
        for tap in taps:
            key = f"blocks.0.attn.{tap}"
            assert len(short[key]) == 1 and torch.equal(short[key][0], full[key][0]), key
        assert not any(m._forward_hooks for m in model.modules())  # every hook removed


def test_a_shortened_report_says_it_is_a_smoke_run_before_any_verdict(committed):
    """The quick run's report opens, under its title and before the first verdict, with what it is and
    what its FAILs of scale mean; the full case's report says nothing of the kind."""
    from attnlab.report.case_report import build_blocks, to_markdown
    from attnlab.verdicts import count_line

    res = shortened(committed, QUICK.steps)
    md = to_markdown(build_blocks(res, "figures"))
    smoke = md.index("冒烟测试，不是证据 / a smoke run, not evidence")
    first_verdict = min(
        md.find(v) for v in (count_line(res["claims"]), "✓ PASS", "✗ FAIL", "？ INCONCLUSIVE") if v in md
    )
    assert smoke < first_verdict, md[:2000]
    scale = sum(1 for c in res["claims"] if (c.get("reason") or {}).get("category") == "scale")
    assert scale and f"{scale} 个 FAIL" in md[:first_verdict] and "attnlab case" in md[:first_verdict]
    assert "make " not in md  # an installed wheel has no Makefile (tests/test_install.py)
    assert "冒烟" not in to_markdown(build_blocks(copy.deepcopy(committed), "figures"))
