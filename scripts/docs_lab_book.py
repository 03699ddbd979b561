"""Rewrite every number the docs state about results, times and costs from the committed JSON and the plan.

Each page has blocks between markers (``<!-- NAME:start -->`` … ``<!-- NAME:end -->``) that this
script writes; everything else is prose, and prose carries no result numbers. The blocks come from
data/lab_book.json and data/lab_book/*.json (the book's counts, compute and decided questions),
data/ch1_case.json (the case's results, its FAIL reasons, the weight-decay runs),
data/failure_symptoms.json and data/head_portrait.json, data/bench_executors.json, and the plan of
``attnlab case --plan`` / ``attnlab book --plan`` (attnlab.lab.plan, costed from the committed
timing records with nothing on disk). tests/test_docs.py checks that the committed pages equal what
this script would write, so they cannot drift from the data.

    python scripts/docs_lab_book.py            # rewrite the pages
    python scripts/docs_lab_book.py --check    # exit 1 when a page is stale

When: after any change to the committed JSON, the plan or the timing records (a new lab-book entry, a
full-size run, ``attnlab report``); tests/test_docs.py runs ``--check``.
"""

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnlab import verdicts as V  # noqa: E402
from attnlab.lab.case import claims as C  # noqa: E402

START, END = "<!-- lab-book-summary:start -->", "<!-- lab-book-summary:end -->"
DOCS = ROOT / "docs"
PAGE = DOCS / "lab-book.md"
README = ROOT / "README.md"
DECIDE_START, DECIDE_END = "<!-- decide-table:start -->", "<!-- decide-table:end -->"
# issue 22's questions, each answered by one claim (experiment id, claim id)
DECIDE_ROWS = [
    ("d_head 32：去掉缩放有没有代价 / does removing the scale cost anything (gap > 0)", "case", "small_gap_not_zero"),
    ("MQA 损失一点质量 / MQA costs some quality (§1.8.8)", "kv_cache", "mqa_costs_some_quality"),
    (
        "练习一：d_head 64 的差距大于 32 的 / exercise 1: the gap at 64 above the gap at 32",
        "exercise1",
        "ex1_gap_above_d32",
    ),
    ("缩放大模型的熵一直在降 / the big scaled entropy keeps falling", "case", "big_scaled_entropy_keeps_falling"),
    ("四层模型的层间分工 / four layers divide the labour", "deep", "layer_division_of_labour"),
    ("四层、3000 步的层间分工 / the same, 3000 steps", "deep", "layer_division_of_labour_long"),
    ("不缩放大模型的 logits 标准差到 5477 / unscaled big logits reach 5477", "case", "big_unscaled_logits_explode"),
    ("QK-norm 让小模型的差距出现 / QK-norm widens the small gap", "qk_norm", "qk_small_gap_appears"),
    ("10000 步后差距仍在 0.8–1.0 / the gap after 10000 steps", "case", "gap_after_10000_steps"),
]
README_START, README_END = "<!-- lab-book-readme:start -->", "<!-- lab-book-readme:end -->"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def legacy_records(book: dict) -> dict[str, dict]:
    """Experiments whose timing record predates per-run timing: they hold only a sum."""
    per_exp = book.get("timings", {}).get("experiments", {})
    return {k: t for k, t in per_exp.items() if "per_run" not in t and t.get("compute_s")}


def confirmatory_lines(book: dict) -> list[str]:
    """The confirmatory round's registration, from data/confirmatory_plan.json, and where it stands
    (attnlab.lab.confirm.headline); nothing when no round is registered."""
    from attnlab.lab.confirm import standing

    stand = standing(ROOT / "data")
    if stand is None:
        return []
    plan = json.loads((ROOT / "data" / "confirmatory_plan.json").read_text(encoding="utf-8"))
    bought = [c for c in plan["claims"].values() if c["bought"] and c["seeds"]]
    return [
        f"验证性一轮 / the confirmatory round：书中论断的规格冻结于 {plan['frozen'][:7]}，在任何新运行之前登记了计划"
        f"（data/confirmatory_plan.json）：{len(bought)} 条论断、新种子从 {plan['seed_start']} 起、预算 "
        f"{plan['budget_core_s'] / 3600:g} 核时（用 {plan['spent_core_s'] / 3600:.2f}）。进度与判定："
        "`attnlab claims --confirm-status`；做法见 [confirmatory.md](confirmatory.md)。 *Specifications frozen, the plan "
        f"registered before any new run: {len(bought)} claims on fresh seeds within "
        f"{plan['budget_core_s'] / 3600:g} core-hours.*",
        "",
        f"**{confirm_headline(book, stand)}**",
        "",
    ]


def confirm_headline(book: dict, stand: dict, short: bool = False) -> str:
    """The round's headline: its confirmatory verdicts beside the book's exploratory ones."""
    from attnlab.lab.confirm import headline

    seen = {c["id"]: V.verdict_of(c) for sec in book["sections"] for c in sec.get("claims", [])}
    return headline(stand, seen, short=short)


def registration(book: dict) -> str:
    """How many of the book's claims were fixed before their data, with or after it, and amended
    (data/claims_registry.json)."""
    from attnlab import claims_registry as R

    registry = R.load(ROOT / "data" / "claims_registry.json")
    ids = [c["id"] for sec in book["sections"] for c in sec.get("claims", [])]
    return R.count_text(R.counts(registry, ids))


def summary_block(book: dict) -> str:
    s = book["summary"]
    timings = book.get("timings", {})
    per_exp = timings.get("experiments", {})
    total = timings.get("book", {})
    lines = [
        START,
        f"提交的这一版 / the committed book（2 核 CPU）：{s['experiments']} 个实验；{s['claims']} 条论断：",
        f"**{s['count_line']}**。每条 FAIL 写明原因，每条 INCONCLUSIVE 写明还需要多少个种子（或“再多种子也定不下来”）。",
        "",
        f"{registration(book)}（data/claims_registry.json，`attnlab claims --check`；事后登记或修订过的论断，报告中并列"
        "给出按登记规格的判定 / post hoc and amended claims show the verdict of their registered specification beside).",
        "",
        *confirmatory_lines(book),
        "训练时间来自每个运行目录自己的计时记录（单线程核时；和案例共用的运行在每个用到它的实验里都算，合计里只算一次；"
        "“有计时”少于运行数的，是计时功能出现之前训练的运行）。"
        "*Training time from each run's own timing record (one-thread core-hours; a run shared with the case counts in "
        "every experiment that uses it and once in the total; runs trained before timing existed are not timed).*",
        "",
        "| 节 / section | 实验 / experiment | PASS | FAIL | INCONCLUSIVE | REPORTED / NA | 运行 / runs（有计时 / timed） | 核时 / core-h |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sec in book["sections"]:
        c = [V.verdict_of(x) for x in sec["claims"]]
        other = len(c) - c.count("PASS") - c.count("FAIL") - c.count("INCONCLUSIVE")
        ts = [per_exp.get(i, {}) for i in sec["experiments"]]
        n_runs, n_timed = sum(t.get("runs", 0) for t in ts), sum(t.get("timed_runs", 0) for t in ts)
        secs = sum(t.get("compute_s", 0) for t in ts)
        runs = f"{n_runs} ({n_timed})" if n_runs else ""
        hours = _hours(secs) if secs else ""
        lines.append(
            f"| {sec['section']} | {sec['title']} | {c.count('PASS')} | {c.count('FAIL')} | "
            f"{c.count('INCONCLUSIVE')} | {other or ''} | {runs} | {hours} |"
        )
    if total:
        lines += [
            "",
            f"整本书 / the whole book：{total.get('runs', 0)} 个运行，其中 {total.get('timed_runs', 0)} 个有逐个运行的计时，"
            f"共 {_hours(total.get('compute_s', 0))} 核时 / {total.get('runs', 0)} runs, {total.get('timed_runs', 0)} "
            f"timed one by one, {_hours(total.get('compute_s', 0))} core-hours.",
        ]
        # experiments whose record predates per-run timing hold only a sum: said apart, never added in
        legacy = legacy_records(book)
        if legacy:
            secs, n = sum(t["compute_s"] for t in legacy.values()), sum(t.get("timed_runs", 0) for t in legacy.values())
            lines.append(
                f"另有 {', '.join(sorted(legacy))} 的记录早于逐个运行的计时，只存了总数（{n} 个有计时的运行，{_hours(secs)} 核时，"
                f"可能与上面的运行重叠；不计入合计；这些实验再测量一次就换成逐个运行的记录）/ the records of "
                f"{', '.join(sorted(legacy))} predate per-run timing and hold only sums ({n} timed runs, {_hours(secs)} "
                f"core-hours, possibly overlapping the runs above; not added to the total; measuring them again turns "
                f"them into per-run records)."
            )
    lines.append(END)
    return "\n".join(lines)


def readme_block(book: dict) -> str:
    """The README's paragraphs: the case's verdicts (data/ch1_case.json); the book's claims decided
    (PASS or FAIL), the rest, and the book's compute (the older sum-only records are said in docs/lab-book.md)."""
    s, total = book["summary"], book.get("timings", {}).get("book", {})
    v = {
        k: sum(c.get(k, 0) for c in s["verdicts"].values()) for k in ("PASS", "FAIL", "INCONCLUSIVE", "REPORTED", "NA")
    }
    decided = v["PASS"] + v["FAIL"]
    claims = [c for sec in book["sections"] for c in sec.get("claims", [])]  # as the book files them, holm and all
    n = V.pass_counts([c for c in claims if c.get("kind") == "book"])
    cost = (
        f"训练共 {_hours(total['compute_s'])} 单线程核时（{total.get('runs', 0)} 个运行中逐个计时的 "
        f"{total.get('timed_runs', 0)} 个）/ training took {_hours(total['compute_s'])} one-thread core-hours "
        f"({total.get('timed_runs', 0)} of its {total.get('runs', 0)} runs timed one by one)"
        if total.get("compute_s")
        else "训练时间没有记录 / no training time recorded"
    )
    case = json.loads((ROOT / "data" / "ch1_case.json").read_text(encoding="utf-8"))
    return "\n".join(
        [
            README_START,
            f"案例的论断 / the case's claims：{V.count_line(case['claims'])}。每个 FAIL 都写了原因"
            "（书的问题附证据、协议差异附实验，或“未解释”）。详见 [docs/case.md](docs/case.md)。",
            "",
            f"实验手册 / the lab book：{s['experiments']} 个实验、{s['claims']} 条论断，**已判定 {decided} 条**"
            f"（{v['PASS']} PASS、{v['FAIL']} FAIL；书中 {n['passed']} 条 PASS：检验过的 {n['tested']} 条经 Holm 后 "
            f"{n['holm']} 条成立，{n['untested']} 条无检验（算术、逐种子）；同一组数只算一次为 {n['distinct']} 个发现），"
            f"{v['INCONCLUSIVE']} 条 INCONCLUSIVE（各自写明还要什么），"
            f"{v['REPORTED'] + v['NA']} 条只报告或无法在此检验；{cost}。每个实验的明细见 [docs/lab-book.md](docs/lab-book.md)。"
            f" *{s['claims']} claims, {decided} decided ({v['PASS']} PASS, {v['FAIL']} FAIL; of the book's "
            f"{n['passed']} PASS, {n['holm']} of {n['tested']} tested survive Holm, {n['untested']} untested, "
            f"{n['distinct']} distinct findings), {v['INCONCLUSIVE']} "
            f"INCONCLUSIVE, {v['REPORTED'] + v['NA']} reported or not testable here.*",
            "",
            *readme_confirm(book),
            README_END,
        ]
    )


def readme_confirm(book: dict) -> list[str]:
    """The README's line on the confirmatory round (registration counts: docs/lab-book.md)."""
    from attnlab.lab.confirm import standing

    stand = standing(ROOT / "data")
    if stand is None:
        return [f"{registration(book)}。"]
    return [f"{confirm_headline(book, stand, short=True)}（`attnlab claims --confirm-status`）。"]


def _replace(page: str, start: str, end: str, block: str, where: Path) -> str:
    if start not in page or end not in page:
        raise SystemExit(f"{where} lost its markers {start} … {end}; put them back around the summary")
    a, z = page.index(start), page.index(end) + len(end)
    return page[:a] + block + page[z:]


def decide_block() -> str:
    """Issue 22's questions: each one's verdict now, the seeds it stands on, and what it would take."""
    lines = [
        DECIDE_START,
        "| 问题 / question | 论断 / claim | 判定 / verdict | 种子 / seeds | 还要什么 / what it would take |",
        "|---|---|---|---|---|",
    ]
    for question, eid, cid in DECIDE_ROWS:
        doc = json.loads((ROOT / "data" / "lab_book" / f"{eid}.json").read_text(encoding="utf-8"))
        c = next(x for x in doc["claims"] if x["id"] == cid)
        v = V.verdict_of(c)
        need = c.get("n_needed")
        if v != "INCONCLUSIVE":
            take = "—"
        elif need:
            take = f"约 {need} 个种子 / about {need} seeds"
        else:
            take = "再多种子也定不下 / more seeds will not settle it"
        if v == "FAIL" and (c.get("reason") or {}).get("text"):
            take = f"原因 / why ({c['reason'].get('category', '')}): " + c["reason"]["text"].replace("|", "/")
        if v == "REPORTED" and c.get("detail"):  # a question answered: its answer
            take = c["detail"].replace("|", "/")
        lines.append(f"| {question} | `{eid}.{cid}` | **{v}** | {c.get('n') or 0} | {take} |")
    lines.append(DECIDE_END)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- numbers
def sig(x: float, n: int = 2) -> str:
    """``x`` to ``n`` significant digits, without exponent notation; a minus sign as −."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    places = max(0, n - 1 - math.floor(math.log10(abs(x))))
    return f"{round(x, places):.{places}f}".replace("-", "−")


def pm(xs: list[float]) -> str:
    """mean ± sd over seeds: the sd to two significant digits, the mean to the same place."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return sig(m, 3)
    sd = statistics.stdev(xs)
    if sd == 0:
        return f"{sig(m, 3)} ± 0"
    places = 1 - math.floor(math.log10(sd))
    if places <= 0:
        return f"{round(m, places):.0f} ± {round(sd, places):.0f}".replace("-", "−")
    return f"{m:.{places}f} ± {sd:.{places}f}".replace("-", "−")


def num(x) -> str:
    """A number as the book prints it: no exponent notation (8e-05 is 0.00008)."""
    if isinstance(x, str):
        return x
    if float(x).is_integer():
        return f"{int(x)}"
    return f"{x:.10f}".rstrip("0").rstrip(".")


def seeds_list(xs: list[float], places: int = 2) -> str:
    return ", ".join(f"{x:.{places}f}".replace("-", "−") for x in xs)


def span(xs: list[float]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:g}–{hi:g}" if lo != hi else f"{lo:g}"


def _json(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def _claims(doc: dict) -> dict[str, dict]:
    return {c["id"]: c for c in doc.get("claims", [])}


CATEGORY = {
    "finding": "书的问题 / the book's own numbers",
    "protocol": "协议差异 / protocol",
    "unexplained": "未解释 / unexplained",
    "scale": "规模 / scale",
}


# ---------------------------------------------------------------------------- the case
def case_results_rows(case: dict) -> list[tuple[str, str, str]]:
    """(quantity, ours, the book's) for the case's headline numbers, each from the claim that judges it."""
    c = _claims(case)
    small = c["small_gap_not_zero"]["inputs"]["val_gap"]
    big = c["big_gap_large"]["inputs"]["val_gap"]
    below = c["big_unscaled_entropy_collapses"]["inputs"]["first_step_below_0.01"]
    jac = c["big_unscaled_jacobian_drops"]["inputs"]
    jac_start = [d * e for d, e in zip(jac["drop"], jac["end"])]  # drop = step-0 ‖J‖ / last-50-step mean
    jb = c["big_unscaled_jacobian_drops"]["book"]
    return [
        (
            "d_head 32 验证 loss 差距（不缩放 − 缩放）/ small gap",
            f"{pm(small)}（{len(small)} 个种子 / seeds）",
            f"{c['small_gap_small']['book']:g}",
        ),
        ("d_head 256 差距 / big gap", f"{pm(big)}（{len(big)} 个种子 / seeds）", f"{c['big_gap_large']['book']:g}"),
        (
            "不缩放大模型：权重熵跌破 0.01 / entropy below 0.01",
            f"第 {span(below)} 步 / steps（{len(below)} 个种子 / seeds）",
            f"约 {c['big_unscaled_entropy_collapses']['book']['step']} 步",
        ),
        (
            "不缩放大模型：雅可比范数 / Jacobian norm",
            f"{sig(statistics.fmean(jac_start))} → {pm(jac['end'])}（末 50 步 / last 50 steps）",
            f"{num(jb['start'])} → {num(jb['end'])}",
        ),
    ]


def case_readme_block(case: dict) -> str:
    rows = case_results_rows(case)
    return "\n".join(
        ["| | 本次 / ours（均值 ± 种子间 sd）| 书中 / book |", "|---|---|---|"]
        + [f"| {q} | {ours} | {book} |" for q, ours, book in rows]
    )


def case_runs_block(case: dict) -> str:
    """How many runs the committed case holds, and the command that trains them."""
    st = case["config"]["settings"]
    n, big, unscaled = len(st["seeds"]), st["big_seeds"], st.get("big_unscaled_seeds") or st["big_seeds"]
    wd, wd_seeds = st.get("wd_values") or [], st.get("wd_seeds") or 1
    runs = 2 * n + big + unscaled + 2 * len(wd) * wd_seeds
    wds = " 与 ".join(f"{w:g}" for w in wd)
    return (
        f"仓库里提交的 `data/ch1_case.json`、图与报告来自完整的 {st['steps']} 步运行：{runs} 个运行（小模型一对 × {n} 个种子、"
        f"大模型一对 × {big} 个种子、不缩放大模型共 {unscaled} 个种子、大模型一对在权重衰减 {wds} 下各 {wd_seeds} 个种子；"
        f"`attnlab case --seeds {n} --big-seeds {big} --big-unscaled-seeds {unscaled} --wd-seeds {wd_seeds}`）。"
        f" *The committed results come from full {st['steps']}-step runs: {runs} runs ({n} small pairs, {big} big pairs, "
        f"the unscaled big member on {unscaled} seeds, the big pair at weight decay {' and '.join(f'{w:g}' for w in wd)} "
        f"on {wd_seeds} seeds each).*"
    )


def case_table_block(case: dict) -> str:
    c = _claims(case)
    small = c["small_gap_not_zero"]["inputs"]["val_gap"]
    big = c["big_gap_large"]["inputs"]["val_gap"]
    rows = case_results_rows(case)
    every = "–".join(num(x) for x in c["small_gap_over_seeds"]["book"])
    rows[0] = (rows[0][0], f"{rows[0][1]}：{seeds_list(small)}", f"{rows[0][2]}（每个种子 / every seed {every}）")
    cost = c["small_gap_not_zero"]
    lo, hi = cost["interval"]
    rows.insert(
        1,
        (
            "d_head 32 去掉缩放的代价（同种子配对）/ the cost of removing the scale at d_head 32, paired",
            f"{sig(statistics.fmean(small), 2)}，95% 区间 / CI [{sig(lo, 2)}, {sig(hi, 2)}]：**{V.verdict_of(cost)}**",
            f"{c['small_gap_small']['book']:g}",
        ),
    )
    rows[2] = (rows[2][0], f"{rows[2][1]}：{seeds_list(big)}", rows[2][2])
    jac = c["big_unscaled_jacobian_drops"]["inputs"]
    rows[4] = (rows[4][0], f"{rows[4][1]}，降 {pm(jac['drop'])} 倍 / a {pm(jac['drop'])}× drop", rows[4][2])
    logits = c["big_unscaled_logits_explode"]["inputs"]["logit_std_last_20_steps"]
    by_wd = C.by_weight_decay(case, "unscaled_logit_std_end")
    default = case["pairs"]["big_scaled"]["config"]["weight_decay"]
    others = "；".join(
        f"权重衰减 {w:g} 下 {pm(v)}，{len(v)} 个种子 / at weight decay {w:g}"
        for w, v in sorted(by_wd.items())
        if w != default
    )
    rows.append(
        (
            "不缩放大模型：训练后 logits 标准差（训练批，末 20 步）/ logit std after",
            f"{pm(logits)}（{len(logits)} 个种子 / seeds）" + (f"（{others}）" if others else ""),
            f"{c['big_unscaled_logits_explode']['book']:g}",
        )
    )
    init = c["init_std_table"]
    ks = list(init["inputs"])
    rows.append(
        (
            f"初始化 logits 标准差 d_head {ks[0][1:]} … {ks[-1][1:]} / init logit std",
            f"{sig(init['inputs'][ks[0]])} … {sig(init['inputs'][ks[-1]], 3)}",
            f"{num(init['book'][0])} … {num(init['book'][-1])}",
        )
    )
    rows.append(
        (
            "初始化 logits 标准差，d_model 固定 512 / init std with d_model fixed at 512",
            f"斜率 / slope {c['fixed_d_model_slope_half']['inputs']['slope']:.2f}",
            "正文 / text: 0.5",
        )
    )
    rows.append(("论断 / claims", V.count_line(case["claims"]), "—"))
    return "\n".join(
        ["| | 本次 / ours（均值 ± 种子间 sd）| 书中 / book |", "|---|---|---|"]
        + [f"| {q} | {ours} | {book} |" for q, ours, book in rows]
    )


def fails_block(claims: list[dict]) -> str:
    """Every FAIL, its category and its reason, as the claim records them."""
    lines = ["| 节 / section | 论断 / claim | 原因 / why |", "|---|---|---|"]
    for c in claims:
        if V.verdict_of(c) != "FAIL":
            continue
        r = c.get("reason") or {}
        cat = CATEGORY.get(r.get("category", ""), r.get("category", "") or "—")
        text = (r.get("text") or "（未写原因 / no reason recorded）").replace("|", "/").replace("\n", " ")
        lines.append(f"| {c['section']} | `{c['id']}`：{c['statement'].replace('|', '/')} | **{cat}**：{text} |")
    return "\n".join(lines)


def head_findings_block(portrait: dict) -> str:
    """The head portrait's FAILs that are findings about the book, as its claims record them."""
    found = [
        c
        for c in portrait["claims"]
        if V.verdict_of(c) == "FAIL" and (c.get("reason") or {}).get("category") == "finding"
    ]
    where = "头部画像（`data/head_portrait.json`，`attnlab heads`）"
    if not found:
        return f"{where}里没有别的书的问题。 *No further finding about the book in the head portrait.*"
    return (
        f"{where}里还有 {len(found)} 条书的问题 / {len(found)} more finding(s) about the book in the head portrait:\n\n"
        + fails_block(found)
    )


# (outcome key, label, the book's number, significant digits)
WD_ROWS = (
    ("unscaled_logit_std_end", "不缩放：训练后 logits 标准差（训练批）/ unscaled logit std", "5477"),
    ("q_growth_unscaled", "不缩放：q 增长倍数 / unscaled q growth", "17.3"),
    ("W_qkv_after_unscaled", "不缩放：训练后 ‖W_qkv‖ / unscaled ‖W_qkv‖", "29.23"),
    ("unscaled_jacobian_end", "不缩放：塌缩后 ‖J‖（末 50 步）/ collapsed ‖J‖", "0.00008"),
    ("scaled_entropy_end", "缩放：权重熵（末 50 步）/ scaled entropy", "0.57–0.68"),
)


def wd_block(case: dict) -> str:
    default = case["pairs"]["big_scaled"]["config"]["weight_decay"]
    per = {key: C.by_weight_decay(case, key) for key, _, _ in WD_ROWS}
    wds = sorted({w for v in per.values() for w in v})
    head = [f"wd {w:g}" + ("（默认 / default）" if w == default else "") for w in wds]
    lines = ["| 量 / quantity | 书中 / book | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(wds)]
    for key, label, book in WD_ROWS:
        cells = [f"{pm(per[key][w])}（n={len(per[key][w])}）" if per[key].get(w) else "—" for w in wds]
        lines.append(f"| {label} | {book} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the plan
def _plans():
    """The case's and the book's plans with nothing on disk, costed from the committed records."""
    import tempfile

    from attnlab.lab import EXPERIMENTS
    from attnlab.lab.case.run import CaseSettings, case_stages
    from attnlab.lab.plan import book_plan, case_plan
    from attnlab.lab.runs import Scale
    from attnlab.runner import ExecutorOptions

    records = ROOT / "data" / "lab_book"
    with tempfile.TemporaryDirectory() as tmp:
        settings = CaseSettings(steps=1500, execution=ExecutorOptions("serial"))
        case = case_plan(settings, Path(tmp), EXPERIMENTS, records_dir=records)
        book = book_plan(EXPERIMENTS, Path(tmp), Scale.make(False), EXPERIMENTS, records_dir=records)
        quick = book_plan(EXPERIMENTS, Path(tmp), Scale.make(True), EXPERIMENTS, records_dir=records)
    first = {r.name for r in case_stages(settings)[0][1]}
    return case, book, quick, first


def _minutes(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"


def case_plan_block(plans) -> str:
    case, _, _, first = plans
    secs = {c.run.name: c.seconds for c in case.costs}
    t_first = case.before_s + case.batch_walls(2)[0]  # the sweeps, the first batch and its report
    t_all = case.wall_at(2)
    core = sum(secs.values()) / 3600
    return (
        f"时间 / time：`attnlab case --plan --workers 2` 按仓库提交的计时记录估计（两个单线程 worker，含扫描与报告，不含安装）："
        f"第一份报告（{len(first)} 个运行）约 {_minutes(t_first)}，完整案例 {len(secs)} 个运行、{core:.2f} 核时，约 "
        f"{_minutes(t_all)}。 *The plan (two one-thread workers, sweeps and reports in, setup not): the first report "
        f"after about {_minutes(t_first)}, the whole case ({len(secs)} runs, {core:.2f} core-hours) after about "
        f"{_minutes(t_all)}.*"
    )


# fresh clones' `make case` on idle 2-core machines, as docs/case.md's table states them: (date, whole, training) s
CASE_MEASURED = (("2026-12-04", 40 * 60 + 29, 38 * 60 + 48),)


def case_time_block(plans) -> str:
    """What `case --plan --workers 2` says now, part by part, beside the measured fresh clones."""
    from attnlab.lab.plan import duration

    case = plans[0]
    train, wall = case.train_wall_s(2), case.wall_at(2)
    n, batches = len(case.todo), sum(1 for w in case.batch_walls(2) if w)
    parts = (
        f"计时训练 / timed training {duration(train)} + 每个运行计时之外的进程 / each run's process beside its timed "
        f"loop {case.run_extra_s:.0f} s × {n} + 初始化扫描 / init sweeps {duration(case.before_s)} + 每批之后的报告 / "
        f"the report after each batch {case.batch_s:.0f} s × {batches}"
    )
    lines = [
        f"计划 / the plan (`attnlab case --plan --workers 2`): {duration(wall)} = {parts}（分批打包 / packed "
        f"batch by batch；不含安装和批间的测量 / setup and the measurement between batches not counted）。"
    ]
    for date, whole, training in CASE_MEASURED:
        lines.append(
            f"{date}：实测 / measured {whole / wall:.2f} × 计划 / the plan (训练 / training {training / train:.2f} × "
            f"计时训练 / the timed training)。"
        )
    return "\n".join(lines)


# (where, how many runs at once)
BOOK_PLAN_ROWS = (
    ("2 核笔记本 / 2-core laptop (`local`, 2 workers)", 2),
    ("8 核笔记本 / 8-core laptop (`local`, 8 workers)", 8),
    ("Ray 集群 32 CPU 或 SLURM 数组并行 32 / a Ray cluster of 32 CPUs, or SLURM array parallelism 32", 32),
    ("SLURM 数组并行 64 / SLURM, array parallelism 64", 64),
)


def book_plan_block(plans) -> str:
    _, book, quick, _ = plans
    secs = [c.seconds for c in book.costs]
    core = sum(secs) / 3600
    lines = [
        f"全书 / the full book：{len(secs)} 个运行 / runs（`--quick`：{len(quick.costs)} 个极小的运行 / tiny runs）。",
        "",
        "| 在哪里 / where | 同时运行 / at once | 核时 / core-h | 墙钟 / wall |",
        "|---|---|---|---|",
    ]
    for where, slots in BOOK_PLAN_ROWS:
        lines.append(f"| {where} | {slots} | {core:.2f} | ≈ {_minutes(book.wall_at(slots))} |")
    lines += [
        "",
        f"再多的 CPU 也快不过最长的一个运行（约 {_minutes(max(secs))}，单线程）。*No number of CPUs beats the longest "
        f"single run (about {_minutes(max(secs))} on one thread).*",
        "",
        calibration_sentence(book.calibration),
    ]
    return "\n".join(lines)


def calibration_sentence(cal) -> str:
    """What the plan calibrated on, in the docs' words (attnlab.lab.plan.calibrate): Chinese, then English."""
    from attnlab.lab.plan import MIN_RECORDS
    from attnlab.runfolder import BUSY, UNKNOWN

    busy_aside, unknown = cal.aside.get(BUSY, 0), cal.aside.get(UNKNOWN, 0)
    check = sum(r.source == "plan_check" for r in cal.used)
    book = len(cal.used) - check
    busy = sum(r.state == BUSY for r in cal.used)
    zh_src = f"{book} 个手册的运行、{check} 个 `scripts/plan_check.py` 的运行"
    en_src = f"{book} of the book's runs, {check} of `scripts/plan_check.py`'s"
    zh_aside = f"搁置 {unknown} 个负载未知的记录（记录 CPU 时间与负载之前计时的）和 {busy_aside} 个共享核上的记录。"
    en_aside = (
        f"Set aside: {unknown} records of unknown load (timed before CPU time and load were recorded) and "
        f"{busy_aside} taken on shared cores."
    )
    if cal.basis == "idle":
        zh = f"只用空闲核上计时的运行的墙钟时间（{len(cal.used)} 个：{zh_src}）。"
        en = f"Calibrated on the wall time of runs timed on idle cores only ({len(cal.used)}: {en_src})."
    elif cal.basis == "cpu":
        zh = (
            f"空闲核上计时的运行不足 {MIN_RECORDS} 个，所以用 {len(cal.used)} 个运行的 CPU 时间（{zh_src}；其中 {busy} 个"
            f"在共享的核上，它们的墙钟时间不用）：一个运行独占一个核时要的时间，核被共享时墙钟更长。"
        )
        en = (
            f"Fewer than {MIN_RECORDS} runs were timed on idle cores, so the plan calibrates on the CPU time of "
            f"{len(cal.used)} runs ({en_src}; {busy} of them on shared cores, whose wall time is not used): what a "
            f"run takes on a core of its own; shared cores take longer."
        )
    else:
        zh = "没有足够的空闲核记录或 CPU 时间记录，用 `decide.py` 的默认速率。"
        en = "Too few records of idle cores or of CPU time: decide.py's default rate."
    return f"校准 / calibration：{zh}{zh_aside} *{en} {en_aside}*"


def plan_check_block() -> str:
    """data/plan_check.json (scripts/plan_check.py): the plan's estimate of each run beside what it took."""
    doc = _json("data/plan_check.json")
    tol = doc["tolerance"]
    lines = [
        "| 运行 / run | d_model / n_head / 层 layers | 步数 / steps | 计划 / plan (s) | 实测 / measured (s) | "
        "实测 ÷ 计划 / ratio | CPU 时间 / CPU (s) | CPU ÷ 计划 | 负载 / load | 核 / cores |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = doc["runs"]
    for r in rows:
        c = r["config"]
        cpu = r.get("cpu_s")
        cores = {"idle": "空闲 / idle", "busy": "共享 / shared"}.get(r["state"], "未知 / unknown")
        est = r["estimate_s"]
        cpu_cells = ("—", "—") if cpu is None else (f"{cpu:.0f}", f"{cpu / est:.2f}")
        load = "—" if r.get("load") is None else f"{r['load']:.1f}"
        lines.append(
            f"| `{r['name']}` | {c['d_model']} / {c['n_head']} / {c['n_layer']} | {c['max_steps']} | "
            f"{est:.0f} | {r['seconds']:.0f} | {r['seconds'] / est:.2f} | {cpu_cells[0]} | {cpu_cells[1]} | "
            f"{load} | {cores} |"
        )
    wall = [r["seconds"] / r["estimate_s"] for r in rows]
    cpu = [r["cpu_s"] / r["estimate_s"] for r in rows if r.get("cpu_s") is not None]
    within = all(abs(x - 1) <= tol for x in wall)
    cpu_within = len(cpu) == len(rows) and all(abs(x - 1) <= tol for x in cpu)
    loads = [r["load"] for r in rows if r.get("load") is not None]
    busy = sum(r["state"] != "idle" for r in rows)
    yes = lambda b: "是 / yes" if b else "否 / no"  # noqa: E731
    load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "—"
    cpus = doc["machine"].get("cpus")
    if busy:
        zh_honest = (
            f"这次测量时核是共享的：{busy} 个运行的核不空闲（1 分钟平均负载 {load}，{cpus} 个 CPU），"
            f"墙钟时间里有等核的时间，不能用来检验一个空闲核上的计划；在空闲的核上再运行一次这条命令才算数。"
        )
        en_honest = (
            f"The cores were shared while this was measured ({busy} of {len(rows)} runs on busy cores, 1-minute load "
            f"{load} on {cpus} CPUs): the wall times include waiting for a core and do not test a plan for idle "
            f"cores; run the command again on quiet cores for that."
        )
    else:
        zh_honest = f"所有运行都在空闲的核上（1 分钟平均负载 {load}，{cpus} 个 CPU）。"
        en_honest = f"Every run on idle cores (1-minute load {load} on {cpus} CPUs)."
    worst = max(wall, key=lambda x: abs(x - 1))
    lines += [
        "",
        f"{doc['measured_at'][:10]}，{doc['workers']} 个单线程 worker，共 {doc['wall_s'] / 60:.0f} min。"
        f"每个估计都在实测墙钟的 ±{tol:.0%} 之内：**{yes(within)}**（最偏的比值 {worst:.2f}）；"
        f"在 CPU 时间的 ±{tol:.0%} 之内：**{yes(cpu_within)}**。{zh_honest}"
        f" *{doc['measured_at'][:10]}, {doc['workers']} one-thread workers, {doc['wall_s'] / 60:.0f} min in all. "
        f"Every estimate within ±{tol:.0%} of the measured wall time: {'yes' if within else 'no'} (worst ratio "
        f"{worst:.2f}); of the CPU time: {'yes' if cpu_within else 'no'}. {en_honest}*",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- other results
def bench_executors_block() -> str:
    b = _json("data/bench_executors.json")
    same = "逐位相同 / bit-identical" if b["identical"] else "不逐位相同 / not bit-identical"
    return (
        f"`attnlab bench executors` 在同一次运行里计时两者（`data/bench_executors.json`：{len(b['runs'])} 个运行 × "
        f"{b['steps']} 步，{b['machine']['cpu_count']} 核；local 用时是 serial 的 {b['local_over_serial']:.3f} 倍，结果{same}）。"
        f" *`attnlab bench executors`: {len(b['runs'])} runs × {b['steps']} steps, local took "
        f"{b['local_over_serial']:.3f}× serial's time.*"
    )


def other_results_block() -> str:
    fs, hp = _json("data/failure_symptoms.json"), _json("data/head_portrait.json")
    ent = _claims(fs)["bug4_entropy_uniform"]["inputs"]
    n_seeds = 1 + len(hp.get("other_seeds", []))
    return (
        f"`data/failure_symptoms.json`（§1.11.7 的症状表，`attnlab failures`；与书中表格并列、每条论断的判定见 "
        f"`reports/failure_symptoms.md`：{V.count_line(fs['claims'])}；例如 ④ 的熵是 {pm(ent['entropy_divide_by_d_k'])}，"
        f"调试器“> {ent['alarm']:g}”的警报不会响）、`data/head_portrait.json` 与 `figures/attention_maps.png`（案例中 d_head 32 "
        f"缩放模型的头部画像，`attnlab heads`；§1.8.5/§1.8.6 的论断按 {n_seeds} 个种子判定：{V.count_line(hp['claims'])}）。"
    )


def corpus_block() -> str:
    """The shipped corpus's counts (what `attnlab corpus-stats` prints) beside the book's."""
    from attnlab.corpus import DEFAULT_CORPUS, corpus_stats, load_corpus, poem_count

    st = corpus_stats(load_corpus(None), top=(1198,))
    return "\n".join(
        [
            "| | 书中 / book | 本仓库 / this repo |",
            "|---|---|---|",
            f"| 诗 / poems | 4003 | {poem_count(DEFAULT_CORPUS):,} |",
            f"| 字符 / characters | 约 25.5 万 / ~255k | {st['chars']:,}（含换行 / incl. newlines） |",
            f"| 不同字符 / distinct | 4,977 | {st['distinct']:,}（不含换行 / excl. newline） |",
            f"| 前 1198 字覆盖率 / coverage of top 1198 | 87.6% | {st['coverage'][1198]:.1%} |",
        ]
    )


def long_run_block() -> str:
    """§1.22.2's 10000-step pair in words that follow its numbers: "memorised" only when the scaled
    model's validation loss is a nat above its training loss (the rule lab/case/__init__.py words it by)."""
    st = _json("data/lab_book/case.json")
    c = _claims(st)["gap_after_10000_steps"]
    r = next(v for v in st["results"]["per_seed"].values() if "long_gap" in v)
    book = "–".join(f"{x:.1f}" for x in c["book"])
    ts, vs, tu, vu = r["long_train_scaled"], r["long_val_scaled"], r["long_train_unscaled"], r["long_val_unscaled"]
    memorised = vs - ts > 1.0
    scaled = (
        f"缩放的大模型把训练集背了下来（训练 loss {ts:.2f}，验证 loss {vs:.2f}）"
        if memorised
        else f"缩放的大模型训练 loss {ts:.2f}、验证 loss {vs:.2f}"
    )
    gap_word = "反过来" if r["long_gap"] < 0 else ""
    return (
        f"§1.22.2“继续训 {r['long_steps']} 步，差距稳定在 {book}、不会消失”（一个种子，按一次运行说）：{V.verdict_of(c)}。"
        f"{scaled}，注意力死掉的那个 {tu:.2f} / {vu:.2f}：验证集上的差距{gap_word} {sig(r['long_gap'], 3)}，"
        f"训练集上的差距 {sig(tu - ts, 3)}。"
        f" *After {r['long_steps']} steps (one seed): train / validation loss {ts:.2f} / {vs:.2f} scaled"
        f"{' (memorised)' if memorised else ''}, {tu:.2f} / {vu:.2f} unscaled; the validation gap "
        f"{sig(r['long_gap'], 3)}, the training gap {sig(tu - ts, 3)}.*"
    )


def timeline_block() -> str:
    """docs/playground.md's numbers under the timeline screenshots, read from the shipped big pair's
    snapshots (what the screenshots show): layer 0 on the probe at steps 0, 75 and 200."""
    from attnlab.snapshots import read_snapshots
    from attnlab.web.sources import SHIPPED_RUNS

    def at(tag: str) -> dict[str, list[float]]:
        snap = read_snapshots(SHIPPED_RUNS / "case" / f"big_{tag}" / "snapshots.npz")
        names, steps = snap.meta["metrics"], list(snap.steps)
        rows = [snap.metrics[steps.index(k), 0, 0] for k in (0, 75, 200)]
        return {m: [float(r[names.index(m)]) for r in rows] for m in ("entropy", "jacobian_fro", "logit_std")}

    u, s = at("unscaled"), at("scaled")

    def arrow(xs, f) -> str:
        return " → ".join(f(x) for x in xs)

    ent = lambda xs: arrow(xs, lambda x: f"{x:.3f}" if x == 0 or x >= 0.001 else f"{x:.0e}")  # noqa: E731
    jac = lambda xs: arrow(xs, lambda x: f"{x:.2g}")  # noqa: E731
    std = lambda xs: arrow(xs, lambda x: f"{x:.3g}")  # noqa: E731
    return (
        f"探针上第 0 层（随包附带的一对，`shipped:case/big_*`）：不缩放的权重熵 {ent(u['entropy'])}（雅可比范数 "
        f"{jac(u['jacobian_fro'])}，logits 标准差 {std(u['logit_std'])}）；缩放 {ent(s['entropy'])}（雅可比范数 "
        f"{jac(s['jacobian_fro'])}）。\n*Layer 0 on the probe (the shipped pair): unscaled weight entropy "
        f"{ent(u['entropy'])} (Jacobian norm {jac(u['jacobian_fro'])}, logit std {std(u['logit_std'])}); scaled "
        f"{ent(s['entropy'])} (Jacobian norm {jac(s['jacobian_fro'])}).*"
    )


REPRO_LABELS = {
    "same": "同样设置再训一次 / the same settings again",
    "threads2": "2 个线程（参照 1 个）/ 2 threads (reference: 1)",
    "avx2": "AVX2 内核（ATEN_CPU_CAPABILITY、MKL_CBWR）/ AVX2 kernels",
    "batches": "批次顺序错开一步 / batch stream shifted by one draw",
    "torch": "PyTorch {torch}（参照 {ref}）/ PyTorch {torch} (reference: {ref})",
}


def _e(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


R_SEED = 20261014  # scripts/repro_check.py trains the book's first seed


def repro_block() -> str:
    """scripts/repro_check.py's measurement (data/repro_check.json) and the case's first seed trained
    again elsewhere (data/run_store.json's differences)."""
    rep, store = _json("data/repro_check.json"), _json("data/run_store.json")
    models = list(rep["models"])
    steps = [s for s, _ in next(iter(rep["models"].values()))["variants"]["same"]["abs_delta_val"]]
    head = "| 变化 / change | " + " | ".join(
        f"{m}：各验证点 \\|Δ val loss\\| / at steps {', '.join(str(s + 1) for s in steps)}" for m in models
    )
    lines = [head + " | 权重逐位相同 / weights identical |", "|---|" + "---|" * (len(models) + 1)]
    first = rep["models"][models[0]]
    for name, label in REPRO_LABELS.items():
        if name not in first["variants"]:
            continue
        label = label.format(torch=first["variants"][name].get("torch"), ref=first.get("reference_torch"))
        cells = [", ".join(_e(d) for _, d in rep["models"][m]["variants"][name]["abs_delta_val"]) for m in models]
        same = "/".join(
            "是 yes" if rep["models"][m]["variants"][name]["weights_identical"] else "否 no" for m in models
        )
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {same} |")
    lines += [
        "",
        f"（{rep['steps']} 步，小模型 d_head 32，种子 {R_SEED}，本机 {rep['models'][models[0]]['reference_capability']}；"
        f"{rep['steps']} steps, the small model, seed {R_SEED}）",
        "",
        "| 运行 / run | 已存 / stored | 重训 / retrained | Δ | 重训出自 / retrained in |",
        "|---|---|---|---|---|",
    ]
    for d in store["differences"]:
        where = d["retrained_source"].split(" (")[0]
        lines.append(f"| {d['name']} | {d['stored']:.5f} | {d['retrained']:.5f} | {d['delta']:+.5f} | {where} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- pages
def _block(name: str, body: str) -> str:
    return f"<!-- {name}:start -->\n{body}\n<!-- {name}:end -->"


def pages() -> dict[Path, list[tuple[str, Callable[[], str]]]]:
    """Every generated block: page -> [(marker name, what goes between the markers)]."""
    book = _json("data/lab_book.json")
    case = _json("data/ch1_case.json")
    plans: list = []

    def plan():
        if not plans:
            plans.append(_plans())
        return plans[0]

    def strip(block: str) -> str:  # the lab-book functions write their own markers
        return "\n".join(block.splitlines()[1:-1])

    return {
        README: [
            ("case-readme", lambda: case_readme_block(case)),
            ("case-plan-readme", lambda: case_plan_block(plan())),
            ("lab-book-readme", lambda: strip(readme_block(book))),
        ],
        PAGE: [
            ("lab-book-summary", lambda: strip(summary_block(book))),
            ("decide-table", lambda: strip(decide_block())),
            ("long-run", long_run_block),
        ],
        DOCS / "case.md": [
            ("case-runs", lambda: case_runs_block(case)),
            ("case-table", lambda: case_table_block(case)),
            ("case-fails", lambda: fails_block(case["claims"])),
            ("case-head-findings", lambda: head_findings_block(_json("data/head_portrait.json"))),
            ("case-wd", lambda: wd_block(case)),
            ("case-repro", repro_block),
            ("case-plan-time", lambda: case_time_block(plan())),
        ],
        DOCS / "scale-out.md": [("book-plan", lambda: book_plan_block(plan())), ("plan-check", plan_check_block)],
        DOCS / "speed.md": [("bench-executors", bench_executors_block)],
        DOCS / "commands.md": [("corpus-stats", corpus_block)],
        DOCS / "layout.md": [("other-results", other_results_block)],
        DOCS / "playground.md": [("timeline-numbers", timeline_block)],
    }


def render_page(page: str, where: Path, blocks: list[tuple[str, Callable[[], str]]]) -> str:
    for name, fn in blocks:
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        page = _replace(page, start, end, _block(name, fn()), where)
    return page


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a page is stale")
    args = ap.parse_args(argv)
    stale = []
    for path, blocks in pages().items():
        page = path.read_text(encoding="utf-8")
        new = render_page(page, path.relative_to(ROOT), blocks)
        if new != page:
            stale.append(path)
            if not args.check:
                tmp = path.with_suffix(path.suffix + ".tmp")
                tmp.write_text(new, encoding="utf-8")
                tmp.replace(path)
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run `python scripts/docs_lab_book.py`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
