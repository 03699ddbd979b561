"""The case report: the chapter's numbers beside ours, and every claim checked.

Built from the result JSON alone (``attnlab report data/ch1_case.json``), as
Markdown and as a self-contained HTML page. The report is a list of blocks
(heading, paragraph, table, image) rendered twice, so both say the same thing.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .. import claims_registry as R
from .. import stats
from .. import verdicts as V
from ..book import book_values
from ..corpus import REPO_ROOT
from ..io import write_text
from ..lab.case import claims as C
from ..lab.case import loss_id
from ..lab.labbook import fail_notes
from ..tools import fmt
from . import lab_book as LB
from .figures import case_figures
from .page import Page, to_markdown
from .page import to_html as page_html


# ------------------------------------------------------------------------ blocks
def _nearest(trace_steps: list[int], step: int) -> int:
    return min(range(len(trace_steps)), key=lambda i: abs(trace_steps[i] - step))


def pm(xs: list[float], digits: int = 4) -> str:
    """mean ± sd (n) of seed values, or the single value."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    s = C.spread(xs)
    if s["n"] == 1:
        return f"{fmt(s['mean'], digits)} (n=1)"
    return f"{fmt(s['mean'], digits)} ± {fmt(s['sd'], 2)} (n={s['n']})"


def verdict_label(claim: dict | None) -> str:
    """PASS / FAIL / INCONCLUSIVE / REPORTED / NA, as the report shows it."""
    if claim is None:
        return "—"
    v = V.verdict_of(claim)
    return {stats.PASS: "✓ PASS", stats.FAIL: "✗ FAIL", stats.INCONCLUSIVE: "？ INCONCLUSIVE"}.get(v, v)


def claim_verdict(by_id: dict, cid: str, note: str = "") -> str:
    """A claim's verdict where it stands beside numbers: it names the claim it belongs to (and,
    with ``note``, what that claim judges when the row shows something else)."""
    c = by_id.get(cid)
    if c is None:
        return "—"
    return f"{verdict_label(c)}（论断 / claim `{cid}`{'；' + note if note else ''}）"


HEADLINE = (  # the chapter's headline claims, in its order: what the report opens with
    "small_gap_small",
    "small_gap_not_zero",
    "big_gap_large",
    "big_gap_several_times_small",
    "big_unscaled_entropy_collapses",
    "big_unscaled_jacobian_drops",
    "big_unscaled_logits_explode",
    "big_scaled_entropy_band",
    "init_std_slope_sqrt",
)


def _numbers(v) -> list[float] | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return [float(v)]
    if isinstance(v, list) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return [float(x) for x in v]
    return None


def judged_quantities(c: dict) -> list[tuple[str, list[float]]]:
    """The quantities a claim is judged on, with their values: its first input that is a number
    per seed, or for a claim made of parts (all_of) every per-seed input but reported ones."""
    inputs = c.get("inputs") if isinstance(c.get("inputs"), dict) else {}
    found = [(k, xs) for k, v in inputs.items() if (xs := _numbers(v)) is not None]
    if c.get("rule") == "all_of":
        parts = [(k, xs) for k, xs in found if len(xs) > 1 and not k.endswith("_reported")]
        if parts:
            return parts
    return found[:1]


def headline_rows(res: dict, by_id: dict) -> list[list[str]]:
    """One row per headline claim: the book's words and number, ours (the quantity the claim is
    judged on, mean ± sd over seeds), and the verdict with the claim it belongs to."""
    rows = []
    for cid in HEADLINE:
        c = by_id.get(cid)
        if c is None:
            continue
        qs = judged_quantities(c)
        ours = "; ".join(f"{k}: {pm(xs, 4)}" for k, xs in qs) if qs else str(c.get("measured", "—"))
        rows.append([c["statement"], fmt(c.get("book")), ours, claim_verdict(by_id, cid)])
    return rows


def needs_text(claim: dict) -> str:
    """What an INCONCLUSIVE needs: the seeds for a decision, or that more seeds will not settle it."""
    n, need = claim.get("n"), claim.get("n_needed")
    if need:
        return f"未定：需要约 {need} 个种子（现有 {n}）/ undecided: about {need} seeds would decide it (have {n})"
    return (
        f"未定：现有 {n} 个种子，种子间的离散本身超过容差，更多种子也定不下 / undecided at {n} seeds; the seed "
        "spread itself exceeds the tolerance, so more seeds will not settle it"
    )


def reason_text(claim: dict | None) -> str:
    """Why a claim did not pass: a FAIL's reason, an INCONCLUSIVE's seeds, an NA's cause ('' for PASS)."""
    if not claim:
        return ""
    v = V.verdict_of(claim)
    if v == stats.INCONCLUSIVE:
        return f"{needs_text(claim)}（论断 / claim `{claim['id']}`）"
    if v == stats.NA:
        return f"无法检验 / not testable here: {claim.get('detail', '')}（论断 / claim `{claim['id']}`）"
    if v != stats.FAIL:
        return ""
    r = claim.get("reason") or {"category": "unexplained", "text": ""}
    return f"{C.REASON_LABELS.get(r['category'], r['category'])}: {r['text']}（论断 / claim `{claim['id']}`）"


def _mark(claim: dict | None) -> str:
    return {stats.FAIL: "✗", stats.INCONCLUSIVE: "？"}.get(V.verdict_of(claim) if claim else "", "·")


class _Page(Page):
    """The report's page (:class:`attnlab.report.page.Page`) and the lines saying why claims did not pass."""

    def whys(self, by_id: dict, cids: tuple[str, ...]) -> None:
        """One line per claim of ``cids`` that did not pass: its mark, its id and why."""
        for cid in cids:
            if reason_text(by_id.get(cid)):
                self.p(f"{_mark(by_id.get(cid))} {cid}: {reason_text(by_id.get(cid))}")


MEMBERS = (  # pair member, the book's key, label
    ("small_unscaled", "small_d32_unscaled", "d_head=32 不缩放 / unscaled"),
    ("small_scaled", "small_d32_scaled", "d_head=32 缩放 / scaled"),
    ("big_unscaled", "big_d256_unscaled", "d_head=256 不缩放 / unscaled"),
    ("big_scaled", "big_d256_scaled", "d_head=256 缩放 / scaled"),
)


def _lab_claim(cid: str) -> str:
    return f"论断 / claim `{cid}`（实验手册 §1.2，判定见 lab_book / judged in the lab book's case entry）"


# ------------------------------------------------------------------------ sections
def _opening(pg: _Page, res: dict, by_id: dict, beside: dict) -> None:
    S, claims = res["config"]["settings"], res["claims"]
    big_n = len(C.runs(res, "big_scaled"))
    pg.h(1, "第 1 章案例复现报告 / Chapter 1 case study: our run beside the book")
    _smoke(pg, res)
    pg.p(
        f"**{V.count_line(claims)}。** 训练步数 / steps per run: {S['steps']}；小模型种子 / small "
        f"seeds: {len(res['seeds']['runs'])}；大模型种子 / big seeds: {big_n}；设备 / device: "
        f"{res['environment']['device']}；torch {res['environment']['torch']}。"
    )
    prog = res.get("progress") or {}
    if prog and not prog.get("complete", True):
        pending = prog.get("pending", [])
        pg.p(
            f"**部分结果 / partial result**：第 {prog['batch']}/{prog['batches']} 批训练完成，{prog['runs_done']}/"
            f"{prog['runs_planned']} 次训练已在本报告中；其余（{', '.join(pending)}）仍在训练，缺少种子的论断暂为 "
            f"INCONCLUSIVE，每批训练完成后本报告会重写。 / Batch {prog['batch']} of {prog['batches']} done: this "
            f"report holds {prog['runs_done']} of {prog['runs_planned']} runs; the rest ({len(pending)} runs) are "
            "still to train, claims that need their seeds are INCONCLUSIVE until then, and the report is "
            "rewritten after each batch."
        )
    pg.h(2, "结果 / results")
    pg.p(
        "书中的主要论断：书中的话与数字、本次的数字（论断据以判定的那个量，种子均值 ± sd）、判定及其所属论断。"
        " / The chapter's headline claims: the book's words and number, ours (the quantity the claim is judged "
        "on, mean ± sd over seeds), and the verdict with the claim it belongs to."
    )
    pg.table(
        ["书中 / the book says", "书中数字 / book", "本次 / ours", "判定（所属论断）/ verdict (whose)"],
        headline_rows(res, by_id),
    )
    pg.h(3, "全部论断 / every claim")
    pg.p(
        "与实验手册同一张表：每个 FAIL 的原因、每个 INCONCLUSIVE 所需的种子写在表下。判定规则见下文“判定方法”。 / The lab "
        "book's table: why each FAIL fails and the seeds each INCONCLUSIVE needs are listed under it; the rules are "
        "under 'method' below."
    )
    doc = {"results": {}, "claims": res["claims"], "notes": fail_notes(res["claims"])}
    index, registry, confirm = beside.get("index") or {}, R.for_reports(), beside.get("confirm")
    pg.rendered(
        "\n".join(LB.entry_body_markdown(doc, "", index, registry, confirm, ids=True)),
        LB.entry_body_html(doc, REPO_ROOT, index, registry, confirm, ids=True),
    )


def _method(pg: _Page, res: dict) -> None:
    big_n = len(C.runs(res, "big_scaled"))
    pg.h(2, "判定方法 / method")
    pg.p(
        "本报告由 `attnlab report` 从 `data/ch1_case.json` 生成，每个论断都从 JSON 里的数字重新判定（不抄存下的结论）。"
        "书中数字见“书中 / book”一列。书里说过“方向可迁移、数值不可迁移”：表格里的每个判定都是某条论断的判定，"
        "并写明是哪一条；没有论断判定的数字只报告。 / Every number comes from a real run; every claim is re-judged "
        "from the JSON's numbers. Every verdict in a table is a claim's verdict and names the claim; a number no "
        "claim judges is reported only. The claims are judged by the rules below."
    )
    pg.p(stats.METHOD)
    pg.p(
        f"本案例的容差 / this case's tolerances: 书中一次运行给出的数（value）必须落在我们单次运行的 95% 预测区间内，"
        f"且整个区间在书中数 ± 书中数的 {C.TOL_HALF:.0%} 之内才算 PASS（比这更宽的区间分不清书中的数和它的一半或两倍）；"
        f"“明显分离 / 几乎重合”的最小有意义效应取书中自己的 {C.SESOI_APART}（小模型的差距，书称之为“几乎重合”）；"
        f"书说“都 / 每个”时逐个种子检验（every）；§1.3 初始化扫描是确定性的算术（每个 d_head "
        f"{res['init_sweep'][0]['samples']} 次初始化），按 ±{C.REL:.0%}（书写“约”时 ±{C.REL_ABOUT:.0%}）精确检验。 / "
        f"A number from the book's one run (value) must lie inside our one-run 95% prediction interval, and PASS "
        f"needs the whole interval within ± {C.TOL_HALF:.0%} of the book's number (a wider interval cannot tell "
        f"it from half or double); the smallest effect of interest for 'clearly apart' is the book's own "
        f"{C.SESOI_APART} (the small gap it calls 'almost coinciding'); 'every / all' is tested seed by seed; "
        f"the deterministic §1.3 sweep is exact within ±{C.REL:.0%} (±{C.REL_ABOUT:.0%} for 'about')."
    )
    if big_n < 3:
        pg.p(
            f"注意 / note: 大模型只有 {big_n} 个种子，区间更宽，大模型的论断更多是 INCONCLUSIVE。 / Only {big_n} "
            f"seed(s) of the big pair: the big claims' intervals are wide, and more of them are INCONCLUSIVE."
        )
    if res["config"].get("reused_from_json"):
        pg.p(f"来源 / provenance: {res['config']['reused_from_json']}.")


def _smoke(pg: _Page, res: dict) -> None:
    """A shortened run (``--quick`` or ``--steps``) says so first, before any verdict: what it is and
    what its FAILs of scale mean."""
    S, claims = res["config"]["settings"], res["claims"]
    if S["steps"] >= C.BOOK_RUN_STEPS:
        return
    from ..lab.case.run import CaseSettings

    full = CaseSettings()
    scale = sum(1 for c in claims if (c.get("reason") or {}).get("category") == "scale")
    pg.p(
        f"**冒烟测试，不是证据 / a smoke run, not evidence。** 这是缩短的运行（--quick 或 --steps，{S['steps']} 步、"
        f"{len(S['seeds'])} 个种子），书中的数字来自 {C.BOOK_RUN_STEPS} 步：它只说明每一部分都能跑通。下面 {scale} 个 FAIL "
        f"归为{C.REASON_LABELS['scale'].split(' / ')[0]}：这么短的运行检验不了它们（论断表下的原因写明本次与书中的步数），"
        f"不是书错了；完整案例（attnlab case，{full.steps} 步、{len(full.seeds)} 个种子）才检验它们。"
        f" / A shortened run ({S['steps']} steps, {len(S['seeds'])} seed(s)); the book's numbers are from "
        f"{C.BOOK_RUN_STEPS} steps: it shows that every part runs. {scale} FAIL(s) below are put down to the scale: "
        "a run this short cannot test them (the reason under the claims table names this run's steps against the "
        "book's), they say nothing against the book; the full case (attnlab case) tests them."
    )


def _end_losses(res: dict, member: str) -> tuple[list[float], list[float]]:
    """(validation, training) end losses of a pair member over its seeds (the small pair: its seeds rows)."""
    if member.startswith("small"):
        tag = member.split("_")[1]
        rows = res["seeds"]["runs"]
        return [r[f"val_loss_end_{tag}"] for r in rows], [r[f"loss_end_{tag}"] for r in rows]
    rs = C.runs(res, member)
    return [r["val_loss_end"] for r in rs], [r["loss_end"] for r in rs]


def _losses(pg: _Page, res: dict, by_id: dict, B: dict) -> None:
    pg.h(2, "§1.2 / §1.4　loss：起点、终点与差距 / loss start, end and gap")
    bl = B["case_loss_1_2_and_1_4"]
    rows, dval, dtrain = [], [], []
    for key, bkey, label in MEMBERS:
        vals, trains = _end_losses(res, key)
        dval.append(abs(C.spread(vals)["mean"] - bl[bkey]["end"]))
        dtrain.append(abs(C.spread(trains)["mean"] - bl[bkey]["end"]))
        rows.append(
            [
                label,
                fmt(bl[bkey]["start"]),
                pm([r["loss_start"] for r in C.runs(res, key)]),
                fmt(bl[bkey]["end"]),
                pm(vals),
                pm(trains),
                _lab_claim(loss_id(key)),
            ]
        )
    pg.table(
        [
            "run",
            "起点 书中 / start book",
            "起点 本次 / ours",
            "终点 书中 / end book",
            "终点 验证 / ours val",
            "终点 训练（末 50 步均值）/ ours train (last 50)",
            "论断 / claim",
        ],
        rows,
    )
    pg.p(
        f"书没有说终点 loss 是训练 loss 还是验证 loss。我们的验证 loss 与书中四个终点平均相差 {sum(dval) / 4:.3f}，"
        f"训练 loss（末 50 步均值）平均相差 {sum(dtrain) / 4:.3f}，所以本报告把**验证 loss** 作为所有表格与差距的基准，"
        f"训练 loss 并列给出。 / The book does not say which loss its table uses. Our validation losses differ from "
        f"its four end values by {sum(dval) / 4:.3f} on average, our training losses (last 50 steps) by "
        f"{sum(dtrain) / 4:.3f}; so every table and gap here uses the **validation** basis, training alongside."
    )
    gs, gb = C.small_seed_gaps(res), C.big_seed_gaps(res)
    ts, tb = C.small_seed_gaps(res, "train"), C.big_seed_gaps(res, "train")
    ratio_note = "判的是差距之差 big − small，比值只报告 / it judges the difference big − small; the ratio is reported"
    gap_rows = (  # label, book, first seed, over seeds, train basis, verdict
        ("差距 d_head=32 / gap small", bl["gap_small"], gs[0], pm(gs), ts[0], claim_verdict(by_id, "small_gap_small")),
        ("差距 d_head=256 / gap big", bl["gap_big"], gb[0], pm(gb), tb[0], claim_verdict(by_id, "big_gap_large")),
        (
            "放大倍数 / ratio big ÷ small：同一种子 / seed for seed",
            bl["gap_ratio"],
            gb[0] / gs[0],
            pm([b / s for b, s in zip(gb, gs)], 3),
            tb[0] / ts[0],
            claim_verdict(by_id, "big_gap_several_times_small", ratio_note),
        ),
        (
            "放大倍数 / ratio：均值 ÷ 均值 / mean over mean",
            bl["gap_ratio"],
            "—",
            fmt(C.spread(gb)["mean"] / C.spread(gs)["mean"], 3),
            "—",
            "只报告，不判定 / reported, not judged",
        ),
    )
    pg.table(
        [
            "量 / quantity",
            "书中 / book",
            "首个种子 / first seed",
            "均值 ± sd / over seeds",
            "训练基准 / train basis (first seed)",
            "判定（所属论断）/ verdict (whose)",
        ],
        [[label, fmt(b), fmt(first), over, fmt(train), v] for label, b, first, over, train, v in gap_rows],
    )
    pg.whys(by_id, ("small_gap_small", "big_gap_large", "big_gap_several_times_small", "curves_part_near_200"))
    pg.img("fig1_2_loss.png", "图 1.2 loss 曲线 / Fig 1.2 loss curves")
    pg.h(2, "§1.19.2　三个种子上的小模型差距 / the small gap over seeds")
    pg.table(
        ["seed", "不缩放 val / unscaled", "缩放 val / scaled", "差距 / gap (val)", "差距 / gap (train, last 50)"],
        [
            [str(r["seed"])]
            + [fmt(x) for x in (r["val_loss_end_unscaled"], r["val_loss_end_scaled"])]
            + [
                fmt(r["val_loss_end_unscaled"] - r["val_loss_end_scaled"]),
                fmt(r["loss_end_unscaled"] - r["loss_end_scaled"]),
            ]
            for r in res["seeds"]["runs"]
        ],
    )
    lo, hi = bl["small_gap_over_3_seeds_range"]
    pg.p(
        f"书中：三个种子差距都在 {lo}–{hi} 之间。本次：{pm(gs)}，范围 {fmt(min(gs))} – {fmt(max(gs))}"
        f"（{claim_verdict(by_id, 'small_gap_over_seeds')}）。 / Book: every seed's gap in {lo}–{hi}. Ours: {pm(gs)}."
    )
    pg.whys(by_id, ("small_gap_over_seeds",))


def _init_sweep(pg: _Page, res: dict, by_id: dict, B: dict) -> None:
    pg.h(2, "§1.3　初始化扫描：logits 到底有多大 / init sweep")
    bi, sweep = B["init_sweep_1_3"], res["init_sweep"]
    pg.p(
        f"协议 / protocol: n_head=1, n_layer=1, vocab 300, block 32, 固定批次 (8, 32)，每个 d_head "
        f"{sweep[0]['samples']} 次独立初始化（种子 0, 1, …）/ independent inits per d_head; "
        f"缩放与不缩放共享同一初始化 / scaled and unscaled share each init."
    )
    book = {d: i for i, d in enumerate(bi["d_head"])}
    cols = (  # header, value of a row (r, the book's index i)
        ("d_head", lambda r, i: str(r["d_head"])),
        ("实测 std 书中 / book", lambda r, i: fmt(bi["measured_logit_std"][i]) if i is not None else "—"),
        ("本次 / ours", lambda r, i: fmt(r["logit_std_unscaled"])),
        ("理论 √d", lambda r, i: fmt(r["theory_sqrt_d_head"], 3)),
        ("比值 书中", lambda r, i: fmt(bi["ratio"][i]) if i is not None else "—"),
        ("比值 本次", lambda r, i: fmt(r["ratio_unscaled_to_theory"])),
        ("权重熵 书中", lambda r, i: fmt(bi["weight_entropy"][i]) if i is not None else "—"),
        ("权重熵 本次", lambda r, i: fmt(r["entropy_unscaled"])),
        ("缩放后 std / scaled", lambda r, i: fmt(r["logit_std_scaled"])),
        ("式 1.1–1.2 预测 / formula", lambda r, i: fmt(r["formula_logit_std"])),
    )
    pg.table([h for h, _ in cols], [[f(r, book.get(r["d_head"])) for _, f in cols] for r in sweep])
    pg.p(
        f"logits 标准差一列：{claim_verdict(by_id, 'init_std_table')}；权重熵一列："
        f"{claim_verdict(by_id, 'init_entropy_table')}。 / The std column and the entropy column are judged by "
        "these two claims."
    )
    first, last = sweep[0], sweep[-1]
    fb = (by_id.get("formula_misses_at_32") or {}).get("book") or {}
    vb = (by_id.get("variance_formula") or {}).get("book") or {}
    pg.p(
        f"§1.3.1 核对：d=512 时书中预测 {vb.get('formula', '—')}、实测 {vb.get('measured', '—')}；本次式 1.1–1.2 预测 "
        f"{fmt(last['formula_logit_std'])}、实测 {fmt(last['logit_std_unscaled'])}。书中说 d=32 时公式“预测 "
        f"{fb.get('predicted', '—')}、实测 {fmt(fb.get('measured'))}，差了五倍多”；{fb.get('predicted', '—')} 其实是 "
        f"Var(q_i) 本身，按式 1.2 再乘 √32 得 {fmt(first['formula_logit_std'])}，与实测 "
        f"{fmt(first['logit_std_unscaled'])} 相符。 / At d=32 the book compares Var(q_i) ({fb.get('predicted', '—')}) "
        f"with a standard deviation; eq. 1.2 gives v·√d = {fmt(first['formula_logit_std'])}, which agrees with the "
        "measurement."
    )
    fixed = res.get("init_sweep_fixed_d_model")
    if fixed:
        pg.h(3, "d_model 固定为 512 的扫描 / the sweep with d_model held at 512")
        pg.p(
            "书中的扫描让 d_model = d_head（n_head = 1），于是 Var(q_i) = d_model σ² 也随 d 增大，logits 标准差按 "
            "d^1.5 增长——这就是书中表格的斜率；正文说的“斜率与 √d_head 相同（0.5）”要在 d_model 固定时才成立。"
            "下面把 d_model 固定为 512、n_head = 512 / d_head，其余协议不变。 / The book's sweep ties d_model to d_head, "
            "so its table grows like d^1.5; the text's slope 0.5 holds with d_model fixed, measured here."
        )
        keys = ("d_head", "n_head", "logit_std_unscaled", "formula_logit_std", "entropy_unscaled", "logit_std_scaled")
        pg.table(
            ["d_head", "n_head", "实测 std / measured", "式 1.2 v√d_head", "权重熵 / entropy", "缩放后 / scaled"],
            [
                [
                    str(r[k]) if k in ("d_head", "n_head") else fmt(r[k], 3 if k == "entropy_unscaled" else 4)
                    for k in keys
                ]
                for r in fixed
            ],
        )
        m = bi["measured_logit_std"]
        book_slope = math.log(m[-1] / m[0]) / math.log(bi["d_head"][-1] / bi["d_head"][0])
        pg.table(
            ["协议 / protocol", "双对数斜率 / log-log slope", "判定（所属论断）/ verdict (whose)"],
            [
                ["书中表格 / the book's table (d_model = d_head)", f"{book_slope:.2f}", "只报告 / reported"],
                [
                    "本次，书中协议 / ours, book's protocol",
                    f"{C.sweep_slope(sweep):.2f}",
                    claim_verdict(by_id, "init_std_slope_sqrt"),
                ],
                [
                    "本次，d_model 固定 512 / ours, d_model = 512",
                    f"{C.sweep_slope(fixed):.2f}",
                    claim_verdict(by_id, "fixed_d_model_slope_half"),
                ],
                ["理论 √d_head / theory", "0.50", "—"],
            ],
        )
    four = res.get("init_four_heads")
    if four:
        b = (by_id.get("four_heads_std_near_0_2") or {}).get("book", "—")
        pg.p(
            f"§1.8.4：书中说把 §1.4 的单头 d_head=256 模型改成 4 头（d_head=64），初始化 logits 标准差“会降到约 {b}”。"
            f"在那个模型上（d_model 256，4 头）实测 {fmt(four['logit_std_unscaled'], 3)}：{b} 是从 d_model = 64 的扫描读出来的"
            f"（{claim_verdict(by_id, 'four_heads_std_near_0_2')}）。 / §1.8.4 says 4 heads bring the std to about {b}; on "
            f"the §1.4 model with 4 heads (d_model 256) it is {fmt(four['logit_std_unscaled'], 3)}."
        )
    pg.whys(by_id, ("init_std_slope_sqrt", "formula_misses_at_32", "four_heads_std_near_0_2"))
    pg.img("fig1_3_logit_std.png", "图 1.3 logits 标准差 / Fig 1.3 logit std")


# the claim that judges each quantity of the §1.12.1 table, per side (step 0: the claims about the start)
DYNAMICS_CLAIMS = {
    ("unscaled", "weight_entropy"): "big_unscaled_entropy_collapses",
    ("unscaled", "logit_std"): "big_unscaled_logits_explode",
    ("unscaled", "jacobian_fro"): "big_unscaled_jacobian_drops",
    ("scaled", "weight_entropy"): "big_scaled_entropy_band",
    ("scaled", "logit_std"): "big_scaled_logit_std_band",
    ("scaled", "jacobian_fro"): "big_scaled_jacobian_band",
}
DYNAMICS_AT_INIT = {
    ("unscaled", "weight_entropy"): "init_entropy_already_sharper",
    ("scaled", "weight_entropy"): "init_entropy_already_sharper",
    ("unscaled", "logit_std"): "big_init_near_critical",
    ("unscaled", "jacobian_fro"): "big_unscaled_jacobian_drops",
    ("scaled", "jacobian_fro"): "big_scaled_jacobian_rises",
}


def _dynamics(pg: _Page, res: dict, by_id: dict, B: dict) -> None:
    S = res["config"]["settings"]
    big_n = len(C.runs(res, "big_scaled"))
    pg.h(2, "§1.4 / §1.12　训练动态：权重熵、logits 标准差、雅可比范数（第 0 层）/ dynamics, layer 0")
    pg.p(
        f"每步的诊断量是在当步的训练批上量的，噪声很大（例如塌缩之后 ‖J‖ 在 6e-6 到 3e-3 之间跳），所以单步对照很脆弱。"
        f"表中“单步”是首个种子在书中那一步的值，“窗口”是 ±{C.WINDOW} 步的均值，再对 {big_n} 个种子取 均值 ± sd；"
        f"判定是判定该量的论断的判定（用窗口值）。 / Per-step diagnostics are measured on that step's training batch "
        f"and are noisy, so single steps are fragile: 'window' is the mean over ±{C.WINDOW} steps, then mean ± sd over "
        "seeds; the verdict is that of the claim judging the quantity (on the window)."
    )
    bd = B["dynamics_big_1_12"]
    has_val = bool(res.get("book_steps", {}).get("runs"))
    if has_val:
        nb_val = res["book_steps"]["batches"]
        pg.p(
            f"“验证批”一列：每个种子在书中那一步保存的权重，在同样 {nb_val} 个固定验证批上量第 0 层，"
            f"先对批取平均，再对种子取 均值 ± sd；括号里是批与批之间的 sd（同一组权重，只换数据）。它把“数据噪声”和"
            f"“训练轨迹的噪声”分开：批间 sd 小而单步值乱跳，说明单步的噪声主要来自训练本身。 / 'val batches': the weights "
            f"kept at the book's step, measured on the same {nb_val} fixed validation batches (mean over batches, "
            f"then mean ± sd over seeds; in brackets the sd between batches for the same weights)."
        )
    rows = []
    for variant in ("unscaled", "scaled"):
        rs = C.runs(res, f"big_{variant}")
        tr = rs[0]["trace"]
        for j, s in enumerate(bd["steps"]):
            st = round(s * S["steps"] / C.BOOK_RUN_STEPS)
            i = _nearest(tr["step"], st)
            row = [f"{'不缩放' if variant == 'unscaled' else '缩放'} / {variant}", str(s)]
            for key in ("weight_entropy", "logit_std", "jacobian_fro"):
                win = [C.window_mean(r, key, st) if s else C.series(r, key)[0] for r in rs]
                row += [fmt(bd[variant][key][j]), fmt(tr["layers"][0][key][i]), pm(win, 3)]
                if has_val:
                    means, sds = C.val_batch_means(res, f"big_{variant}", key, st)
                    row.append(f"{pm(means, 3)} (批 sd {fmt(max(sds), 2)})" if means else "—")
                cid = (DYNAMICS_AT_INIT if s == 0 else DYNAMICS_CLAIMS).get((variant, key))
                row.append(f"{verdict_label(by_id.get(cid))} `{cid}`" if cid and cid in by_id else "只报告 / reported")
            rows.append(row)
    head = ["d_head=256", "步 / step"]
    for name in ("熵", "logit std", "‖J‖"):
        head += (
            [f"{name} 书中", "单步", "窗口 / window"] + (["验证批 / val batches"] if has_val else []) + ["论断 / claim"]
        )
    size = 5 if has_val else 4  # the columns of each quantity; its batches and its claim go on a second line
    pg.table(head, rows, detail=tuple(2 + g * size + k for g in range(3) for k in range(3, size)))
    pg.p("这张表里各论断的原因 / why, claim by claim:")
    for cid in (
        "big_scaled_entropy_band",
        "big_scaled_jacobian_band",
        "big_scaled_logit_std_band",
        "big_scaled_entropy_keeps_falling",
        "big_unscaled_logits_explode",
        "big_unscaled_entropy_collapses",
        "big_unscaled_jacobian_drops",
    ):
        pg.p(f"- {cid}: " + (reason_text(by_id.get(cid)) or claim_verdict(by_id, cid)))
    pg.p(
        "不缩放一侧塌缩后 logits 标准差在几百到几千之间：书中单步值与本次窗口值的差别属于单步噪声与协议的混合，"
        "没有单独的论断。 / After the collapse the unscaled logit std spans hundreds to thousands; single-step "
        "differences there are not claims."
    )
    pg.img("fig1_4_diagnostics.png", "图 1.4 诊断量 / Fig 1.4 diagnostics")


def _small_model(pg: _Page, res: dict, by_id: dict, B: dict) -> None:
    pg.h(2, "§1.7.6　为什么小模型上没事 / why the small model is fine")
    su, bu = C.runs(res, "small_unscaled"), C.runs(res, "big_unscaled")
    at0 = lambda rs, key: [C.series(r, key)[0] for r in rs]  # noqa: E731
    bi, bd = B["init_sweep_1_3"], B["dynamics_big_1_12"]
    rows = (  # label, the book's number (reference_values), ours, digits, the claims that judge it
        (
            "d_head=32 初始化 logit std（不缩放）",
            f"{fmt(by_id.get('small_init_logit_std_176', {}).get('book'))}（§1.7.6）/ "
            f"{fmt(by_id.get('small_init_logit_std_177', {}).get('book'))}（§1.7.7）",
            at0(su, "logit_std"),
            3,
            ("small_init_logit_std_176", "small_init_logit_std_177"),
        ),
        (
            "d_head=256 初始化 logit std（不缩放）",
            bi["measured_logit_std"][bi["d_head"].index(256)],
            at0(bu, "logit_std"),
            3,
            ("big_init_near_critical",),
        ),
        (
            "d_head=256 训练后 logit std（训练批，末 20 步）",
            bd["unscaled_final_logit_std_train_batches"],
            [C.end_mean(r, "logit_std", 20) for r in bu],
            4,
            ("big_unscaled_logits_explode",),
        ),
        (
            "d_head=32 权重熵（初始化）",
            B["small_model_diagnostics_1_13"]["weight_entropy"],
            at0(su, "weight_entropy"),
            4,
            ("small_init_safe_zone",),
        ),
        (
            "d_head=256 权重熵 训练后（末 50 步）",
            bd["unscaled"]["weight_entropy"][-1],
            [C.end_mean(r, "weight_entropy") for r in bu],
            3,
            ("big_unscaled_entropy_collapses",),
        ),
        (
            "§1.13.1 小模型 ‖J‖（初始化）",
            B["small_model_diagnostics_1_13"]["jacobian_fro"],
            at0(su, "jacobian_fro"),
            3,
            (),
        ),
    )
    pg.table(
        ["量 / quantity", "书中 / book", "本次 / ours", "判定（所属论断）/ verdict (whose)", "✗ 的原因 / why"],
        [
            [
                label,
                book if isinstance(book, str) else fmt(book),
                pm(ours, dg),
                " / ".join(claim_verdict(by_id, cid) for cid in cids) or "只报告 / reported",
                " ".join(reason_text(by_id.get(cid)) for cid in cids).strip(),
            ]
            for label, book, ours, dg, cids in rows
        ],
    )


QK_CLAIMS = {  # the claim judging each column of §1.7.7's table after training, per configuration
    "q_std": "training_amplifies_qk",
    "k_std": "training_amplifies_qk",
    "W_qkv_fro": "w_qkv_grows",
    "logit_std": "scaled_logit_std_after",
}


def _qk(pg: _Page, res: dict, by_id: dict, B: dict) -> None:
    pg.h(2, "§1.7.7　q、k 的实际尺度：训练前 → 训练后（第 0 层）/ q, k scale before → after, layer 0")
    pg.p(f"协议 / protocol: {res['config']['qk_protocol']}.")
    bq = B["qk_scale_layer0_1_7_7"]
    rows = []
    for key, bkey, _ in (MEMBERS[1], MEMBERS[0], MEMBERS[3], MEMBERS[2]):
        qs = C.qk_runs(res, key)
        row = [key]
        for col in ("q_std", "k_std", "logit_std", "W_qkv_fro"):
            bb, ba = bq[bkey][col]
            cid = "unscaled_big_logits_vs_scaled" if (key, col) == ("big_unscaled", "logit_std") else QK_CLAIMS[col]
            if (col, key) == ("logit_std", "small_unscaled"):
                cid = None  # no claim on it after training
            row += [
                f"{fmt(bb)} → {fmt(ba)}",
                f"{fmt(qs[0]['before'][0][col])} → {pm([q['after'][0][col] for q in qs], 3)}",
                f"{verdict_label(by_id.get(cid))} `{cid}`" if cid in by_id else "只报告 / reported",
            ]
        rows.append(row)
    head = ["config"]
    for name in ("q", "k", "logits", "‖W_qkv‖"):
        head += [f"{name} 书中", f"{name} 本次", "论断 / claim"]
    pg.table(head, rows, detail=(3, 6, 9, 12))  # each quantity's claim on a second line
    pg.whys(
        by_id,
        (
            "training_amplifies_qk",
            "w_qkv_grows",
            "scaled_logit_std_after",
            "superlinear_growth",
            "unscaled_big_logits_vs_scaled",
        ),
    )
    entries = [
        [f"`{c['id']}`", name, fmt(e["book"]), fmt([round(x, 3) for x in c["inputs"].get(name, [])]), e["verdict"]]
        for c in res["claims"]
        if c.get("per_entry")
        for name, e in c["per_entry"].items()
    ]
    if entries:
        pg.p(
            "每一项的增长倍数对照书中的倍数（只报告，不计入判定；判定是“都涨了”）/ each entry's growth against the "
            "book's factor (reported, not judged; the verdict is 'all grow'):"
        )
        pg.table(
            [
                "论断 / claim",
                "项 / entry",
                "书中倍数 / book",
                "本次每个种子 / ours per seed",
                "这一项按数值判（只报告，不计入论断）/ this entry by value (reported, not the claim's verdict)",
            ],
            entries,
        )
    mx = res["qk_scale"]["big_unscaled"]["after"][0]["logit_absmax"]
    pg.p(
        f"最大 |logit|（d_head=256 不缩放，训练后）：书中 {bq['big_unscaled_max_abs_logit']}，本次 {fmt(mx)}"
        f"（只报告，没有论断判定它 / reported, no claim judges it）。 / max |logit|, big unscaled after training."
    )
    layers = len(res["qk_scale"]["small_scaled"]["after"])
    if layers > 1:
        cols = ("q_std", "k_std", "logit_std", "logit_absmax", "W_qkv_fro")
        rows = [
            [key, str(L)]
            + [
                f"{fmt(res['qk_scale'][key]['before'][L][c])} → {fmt(res['qk_scale'][key]['after'][L][c])}"
                for c in cols
            ]
            for key in ("small_scaled", "small_unscaled", "big_scaled", "big_unscaled")
            for L in range(1, layers)
        ]
        pg.p("其余层（书中未报告，首个种子）/ other layers (not in the book, first seed):")
        pg.table(["config", "layer", "q std", "k std", "logit std", "max |logit|", "‖W_qkv‖"], rows)


def wd_columns() -> tuple:
    """The weight-decay table's quantities: (key, label, the book's number as shown, its target for
    :func:`wd_summary` or None, digits), every number from reference_values.json."""
    bd, bq = book_values("dynamics_big_1_12"), book_values("qk_scale_layer0_1_7_7")
    band = lambda b: f"{b[0]}–{b[1]}"  # noqa: E731
    mid = lambda b: (b[0] + b[1]) / 2  # noqa: E731
    s_ls = [v for v in bd["scaled"]["logit_std"][-2:] if v is not None]  # the book's last two steps
    jac_u = bd["unscaled"]["jacobian_fro"]
    q_s, q_u, w_s, w_u = (
        bq[k][c]
        for k, c in (
            ("big_d256_scaled", "q_std"),
            ("big_d256_unscaled", "q_std"),
            ("big_d256_scaled", "W_qkv_fro"),
            ("big_d256_unscaled", "W_qkv_fro"),
        )
    )
    explode = bd["unscaled_final_logit_std_train_batches"]
    return (
        (
            "scaled_entropy_end",
            "缩放 熵（末 50 步）/ scaled entropy",
            band(bd["scaled_entropy_band"]),
            mid(bd["scaled_entropy_band"]),
            3,
        ),
        ("scaled_jacobian_end", "缩放 ‖J‖", band(bd["scaled_jacobian_band"]), mid(bd["scaled_jacobian_band"]), 3),
        ("scaled_logit_std_end", "缩放 logit std（训练批）", band(s_ls), mid(s_ls), 3),
        ("q_growth_scaled", "缩放 q 增长（训练批）/ scaled q growth", f"{q_s[1] / q_s[0]:.3g}", q_s[1] / q_s[0], 3),
        ("W_qkv_after_scaled", "缩放 ‖W_qkv‖ 训练后", fmt(w_s[1]), None, 4),
        ("unscaled_jacobian_end", "不缩放 ‖J‖（末 50 步）", f"{jac_u[-1]:.5f}", jac_u[-1], 3),
        ("unscaled_jacobian_drop", "不缩放 ‖J‖ 下降倍数 / drop", f"{jac_u[0] / jac_u[-1]:.0f}（书中表）", None, 3),
        ("unscaled_logit_std_end", "不缩放 logit std（训练批）", fmt(explode), explode, 4),
        ("q_growth_unscaled", "不缩放 q 增长 / unscaled q growth", f"{q_u[1] / q_u[0]:.3g}", q_u[1] / q_u[0], 3),
        ("W_qkv_after_unscaled", "不缩放 ‖W_qkv‖ 训练后", fmt(w_u[1]), None, 4),
        ("val_gap", "差距（验证）/ gap (val)", fmt(book_values("case_loss_1_2_and_1_4")["gap_big"]), None, 3),
    )


def _weight_decay(pg: _Page, res: dict) -> None:
    wd_rows = C.weight_decay_table(res)
    pg.h(2, "权重衰减 / weight decay：书没有写，我们用 0.1 / the book never states it, we use 0.1")
    wds = sorted({r["weight_decay"] for r in wd_rows})
    if len(wds) < 2:
        pg.p(
            "权重衰减的对照运行尚未完成（`attnlab case` 会训练 wd 0 与 0.01 的大模型对照）。 / The weight-decay runs "
            "have not finished yet."
        )
        return
    pg.p(
        "d_head=256 的一对模型在不同权重衰减下（其余完全相同）。判断哪个设置更接近书中数值。 / The big pair at "
        "each weight decay, everything else identical."
    )
    pg.table(
        ["量 / quantity", "书中 / book"] + [f"wd {w:g}" for w in wds],
        [
            [label, book] + [pm([r.get(key) for r in wd_rows if r["weight_decay"] == wd], dg) for wd in wds]
            for key, label, book, _, dg in wd_columns()
        ],
    )
    pg.p(wd_summary(res, wd_rows))


def _samples_and_timings(pg: _Page, res: dict, B: dict) -> None:
    pg.h(2, "§1.4　同一提示词、同一采样种子 / samples")
    bs, sm = B["samples_1_4"], res["samples"]
    pg.table(
        ["model", "书中 / book", "本次 / ours"],
        [
            ["d_head=256 不缩放 / unscaled", bs["unscaled"], sm["big_unscaled"]],
            ["d_head=256 缩放 / scaled", bs["scaled"], sm["big_scaled"]],
            ["d_head=32 不缩放 / unscaled", "—", sm["small_unscaled"]],
            ["d_head=32 缩放 / scaled", "—", sm["small_scaled"]],
        ],
    )
    pg.p(
        "书中也说，小模型的样本差异不足以作为主要证据；硬证据是 loss 差距和雅可比范数。 / As the book says, "
        "samples are not the evidence; the loss gap and the Jacobian norm are."
    )
    pg.h(2, "耗时与算力下限 / timings and the arithmetic floor")
    t, e = res["timings"], res["environment"]
    rows = [["初始化扫描 / init sweep", fmt(t["init_sweep_s"])]]
    if "small_runs_s" in t:
        rows += [
            ["小模型组（对照 + 种子）/ small runs", fmt(t["small_runs_s"])],
            ["大模型组 / big runs", fmt(t["big_runs_s"])],
        ]
    if "executor" in t:
        workers = f"，{t['workers']} 个进程 / {t['workers']} workers" if t.get("workers") else ""
        rows.append(["执行器 / executor", f"{t['executor']}{workers}"])
    rows += [["分析与采样 / analysis", fmt(t["analysis_s"])], ["训练总耗时 / training wall", fmt(t["train_wall_s"])]]
    pg.table(["部分 / part", "秒 / seconds"], rows + floor_rows(t))
    for note in floor_notes(t):
        pg.p(note)
    pg.p(
        f"环境 / environment: Python {e['python']}, torch {e['torch']}, numpy {e['numpy']}, {e['platform']}, "
        f"{e['cpu_count']} CPU, {e['torch_threads']} torch threads, device {e['device']}"
        + (f" ({e['cuda']})" if e.get("cuda") else "")
        + "."
    )


def build_blocks(res: dict, fig_rel: str, beside: dict | None = None) -> list[tuple]:
    """The case report as blocks: results first, the method, then the chapter's sections in order.
    ``beside``, when the report stands beside the lab book that judged the same claims (``attnlab
    report``): {"index": its claims by id (:func:`attnlab.report.lab_book.families`), for their Holm
    verdicts; "confirm": the confirmatory round's standing (:func:`attnlab.lab.confirm.standing`)}.
    Without it (a case of one's own) those columns stay empty: they judge other numbers."""
    B, by_id, pg = book_values(), {c["id"]: c for c in res["claims"]}, _Page(fig_rel)
    _opening(pg, res, by_id, beside or {})
    _method(pg, res)
    _losses(pg, res, by_id, B)
    _init_sweep(pg, res, by_id, B)
    _dynamics(pg, res, by_id, B)
    _small_model(pg, res, by_id, B)
    _qk(pg, res, by_id, B)
    _weight_decay(pg, res)
    _samples_and_timings(pg, res, B)
    return pg.blocks


def _floor_known(t: dict) -> bool:
    """A floor that can be read beside the wall time: over runs trained in that invocation (new
    records), or an old record's that trained everything it timed."""
    if "floor_runs" in t:
        return bool(t["floor_runs"]) and bool(t.get("train_floor_s"))
    return not t.get("reused_runs") and bool(t.get("train_floor_s"))


def _rate_text(t: dict) -> str:
    rate = f"{t['matmul_rate_flops_per_s'] / 1e9:.1f} GFLOP/s"
    if t.get("matmul_rate_per") == "core":
        rate += f" 每核 / per core × {t['matmul_rate_cores']}"
    return rate


def floor_rows(t: dict) -> list[list[str]]:
    """The floor's rows of the timings table: FLOPs, rate, floor and the matmuls alone, over the
    runs trained in the invocation that wrote ``t`` (none when every run was reused)."""
    if not _floor_known(t):
        return [["算力下限 / floor", "— （本次没有训练，全部复用 / no run trained: all reused）"]]
    rows = [
        ["训练浮点运算 / training FLOPs", f"{t['train_flops'] / 1e12:.2f} TFLOP"],
        ["float32 矩阵乘速率 / matmul rate", _rate_text(t)],
        ["算力下限 / floor = FLOPs ÷ rate", fmt(t["train_floor_s"])],
        ["耗时 ÷ 下限 / wall ÷ floor", fmt(t["train_wall_over_floor"], 3)],
    ]
    if "floor_runs" in t:
        rows.insert(0, ["下限所计的训练 / runs the floor counts", f"{t['floor_runs']} ({t['floor_steps']} steps)"])
    if "train_matmuls_only_s" in t:
        rows += [
            ["仅矩阵乘（同形状）/ the same matmuls alone", fmt(t["train_matmuls_only_s"])],
            ["仅矩阵乘 ÷ 下限 / matmuls alone ÷ floor", fmt(t["matmuls_only_over_floor"], 3)],
        ]
    return rows


def floor_notes(t: dict) -> list[str]:
    """How the floor was measured and what it counts, as sentences about the run (never about
    any particular machine of ours)."""
    notes = []
    if _floor_known(t) and "train_matmuls_only_s" in t:
        notes.append(
            "“仅矩阵乘”只做这些训练的矩阵乘法（前向与反向，本模型的矩阵形状），不做别的：用同一个 BLAS 做这些乘法的实现"
            "都不会比它更快。下限用的速率取大方阵与这些形状两者中较高的一个，所以下限永远不高于“仅矩阵乘”。 / “Matmuls "
            "alone” runs only the matrix multiplies of these trainings (forward and backward, at the models' own "
            "shapes) and nothing else: an implementation doing these multiplies with the same BLAS cannot be faster. "
            "The floor's rate is the larger of the square matmuls' and these shapes' own, so the floor never exceeds "
            "the matmuls alone."
        )
    if "matmul_rate_protocol" in t:
        notes.append(f"速率的测法 / how the rate was measured: {t['matmul_rate_protocol']}.")
        if not t.get("matmul_rate_reliable", True):
            notes.append(
                f"⚠ 测速时没有空闲的核（1 分钟平均负载 {t.get('matmul_rate_load', 0):.1f}）：速率偏低、下限偏高，"
                f"只作参考。 / Unreliable: no core was idle while the rate was measured (load "
                f"{t.get('matmul_rate_load', 0):.1f}); the rate is too low and the floor too high."
            )
    if "floor_runs" in t and t.get("reused_runs"):
        notes.append(
            f"复用的 {len(t.get('reused_run_names', []))} 次训练不计入耗时与下限。 / The "
            f"{len(t.get('reused_run_names', []))} reused runs count in neither the wall time nor the floor."
        )
    elif t.get("reused_runs"):
        notes.append(
            "本次复用了之前已完成的训练，耗时不代表训练速度，也不与下限相比。 / Finished runs were reused; the "
            "wall time does not measure training speed and is not compared with a floor."
        )
    return notes


def timing_lines(t: dict) -> list[str]:
    """The timings as ``attnlab case`` prints them: the wall time, then the floor beside it."""
    lines = [f"训练耗时 / training wall {t['train_wall_s']:.0f} s"]
    if not _floor_known(t):
        lines[0] += " (本次没有训练，全部复用 / no run trained in this invocation: no floor)"
        return lines
    lines[0] += (
        f" = {t['train_wall_over_floor']:.2f} x 算力下限 / floor {t['train_floor_s']:.0f} s "
        f"({t['train_flops'] / 1e12:.1f} TFLOP at {_rate_text(t)}"
        + (f"; {t['floor_runs']} runs trained now" if "floor_runs" in t else "")
        + ")"
    )
    if not t.get("matmul_rate_reliable", True):
        lines[0] += f" — 不可靠 / unreliable: no idle core (load {t.get('matmul_rate_load', 0):.1f})"
    if "train_matmuls_only_s" in t:
        lines.append(
            f"仅矩阵乘 / the same matmuls alone {t['train_matmuls_only_s']:.0f} s = "
            f"{t['matmuls_only_over_floor']:.2f} x floor"
        )
    return lines


def wd_summary(res: dict, rows: list[dict]) -> str:
    """Which weight decay brings each quantity closest to the book (computed, not written)."""
    targets = {key: target for key, _, _, target, _ in wd_columns() if target is not None}
    default = res["pairs"]["big_scaled"]["config"]["weight_decay"]
    parts = []
    for key, target in targets.items():
        means = {}
        for r in rows:
            if r.get(key) is not None:
                means.setdefault(r["weight_decay"], []).append(r[key])
        if len(means) < 2:
            continue
        dist = {wd: abs(math.log(sum(v) / len(v) / target)) for wd, v in means.items()}
        best = min(dist, key=dist.get)
        parts.append(
            f"{key}: wd {best:g}"
            + (
                ""
                if best == default
                else f" (default {default:g} is "
                f"{math.exp(dist[default]):.2f}× off, "
                f"wd {best:g} {math.exp(dist[best]):.2f}×)"
            )
        )
    return (
        "最接近书中数值的权重衰减 / weight decay closest to the book, per quantity: "
        + "; ".join(parts)
        + f"。默认值仍为 {default:g}（书未说明；见 README）。 / The default stays {default:g}."
    )


TITLE = "第 1 章案例复现报告 / Chapter 1 case report"


def to_html(blocks: list[tuple], fig_dir: Path | None = None) -> str:
    return page_html(blocks, TITLE, fig_dir, LB.CLAIMS_CSS)


def report_paths(out: Path, name: str = "ch1_case") -> tuple[Path, Path, Path]:
    """(figures folder, markdown, page) of the report ``name`` under ``out``: ch1_case's figures in
    figures/, any other's (ch1_case.partial) in figures/NAME/, so neither overwrites the other's."""
    out = Path(out)
    figs = out / "figures" if name == "ch1_case" else out / "figures" / name
    return figs, out / "reports" / f"{name}.md", out / "reports" / f"{name}.html"


def drop_partial_report(out: Path) -> None:
    """Remove the partial report (ch1_case.partial's page, markdown and figures) under ``out``: the
    complete result that replaced it holds at least as much."""
    import shutil

    fig_dir, md, page = report_paths(out, "ch1_case.partial")
    md.unlink(missing_ok=True)
    page.unlink(missing_ok=True)
    if fig_dir.is_dir() and not fig_dir.is_symlink():
        shutil.rmtree(fig_dir)


def build_report(res: dict, out: Path, name: str = "ch1_case", beside: dict | None = None) -> list[Path]:
    """Write figures/ and reports/ch1_case.{md,html} under ``out`` (another ``name``: see
    :func:`report_paths`; ``beside``: see :func:`build_blocks`); return their paths."""
    fig_dir, md_path, page_path = report_paths(out, name)
    figs = case_figures(res, fig_dir)
    reports = md_path.parent
    reports.mkdir(parents=True, exist_ok=True)
    fig_rel = os.path.relpath(fig_dir, reports)
    blocks = build_blocks(res, fig_rel, beside)
    md = write_text(md_path, to_markdown(blocks))
    page = write_text(page_path, to_html(blocks, fig_dir))
    return [*figs, md, page]
