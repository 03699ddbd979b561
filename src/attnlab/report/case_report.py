"""The case report: the chapter's numbers beside ours, and every claim checked.

Built from the result JSON alone (``attnlab report data/ch1_case.json``), as
Markdown and as a self-contained HTML page. The report is a list of blocks
(heading, paragraph, table, image) rendered twice, so both say the same thing.
"""
from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from ..book import book_values
from ..io import write_text
from .figures import case_figures
from .fonts import FONT_FILE


def verdict(book: float | None, ours: float | None) -> str:
    """Within 10 % → matches; within ×3 → same order; else differs."""
    if book is None or ours is None:
        return "—"
    if book == 0:
        return "✓ 一致 / matches" if abs(ours) < 1e-9 else "✗ 不同 / differs"
    r = ours / book
    if 0.9 <= r <= 1.1:
        return "✓ 一致 / matches"
    if 1 / 3 <= r <= 3:
        return "≈ 同量级 / same order"
    return "✗ 不同 / differs"


def fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "PASS" if x else "FAIL"
    if isinstance(x, float):
        if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
            return f"{x:.3g}"
        return f"{x:.{digits}g}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt(v, 3) for v in x) + "]"
    if isinstance(x, dict):
        return "; ".join(f"{k} {fmt(v, 3)}" for k, v in x.items())
    return str(x)


# ------------------------------------------------------------------------ blocks
def _nearest(trace_steps: list[int], step: int) -> int:
    return min(range(len(trace_steps)), key=lambda i: abs(trace_steps[i] - step))


def build_blocks(res: dict, fig_rel: str) -> list[tuple]:
    B = book_values()
    P = res["pairs"]
    t = res["timings"]
    S = res["config"]["settings"]
    blocks: list[tuple] = []
    h = lambda level, text: blocks.append(("h", level, text))
    p = lambda text: blocks.append(("p", text))
    table = lambda head, rows: blocks.append(("table", head, rows))
    img = lambda name, alt: blocks.append(("img", f"{fig_rel}/{name}", alt))

    claims = res["claims"]
    n_fail = sum(not c["pass"] for c in claims)
    h(1, "第 1 章案例复现报告 / Chapter 1 case study: our run beside the book")
    p("本报告由 `attnlab report` 从 `data/ch1_case.json` 生成：每个数字都来自这次真实运行，书中数字见 "
      "“书中 / book”一列。书里说过“方向可迁移、数值不可迁移”，所以判定分三档：±10% 以内为一致，"
      "3 倍以内为同量级，其余为不同。 / Every number below comes from this run; the book's column "
      "comes from the chapter. Verdicts: within 10 % = matches, within ×3 = same order, else differs.")
    p(f"训练步数 / steps per run: **{S['steps']}**；种子 / seeds: {', '.join(map(str, S['seeds']))}；"
      f"设备 / device: {res['environment']['device']}；torch {res['environment']['torch']}。"
      f" 论断 / claims: **{len(claims) - n_fail} PASS, {n_fail} FAIL**。")
    if S["steps"] < 1500:
        p("注意：这是缩短的运行（--quick 或 --steps），书中的数字来自 1500 步。 / "
          "Note: a shortened run; the book's numbers are from 1500 steps.")

    # §1.2 / §1.4 losses
    h(2, "§1.2 / §1.4　loss：起点、终点与差距 / loss start, end and gap")
    bl = B["case_loss_1_2_and_1_4"]
    rows = []
    for key, bkey, label in (("small_unscaled", "small_d32_unscaled", "d_head=32 不缩放 / unscaled"),
                             ("small_scaled", "small_d32_scaled", "d_head=32 缩放 / scaled"),
                             ("big_unscaled", "big_d256_unscaled", "d_head=256 不缩放 / unscaled"),
                             ("big_scaled", "big_d256_scaled", "d_head=256 缩放 / scaled")):
        r = P[key]
        rows.append([label, fmt(bl[bkey]["start"]), fmt(r["loss_start"]), verdict(bl[bkey]["start"], r["loss_start"]),
                     fmt(bl[bkey]["end"]), fmt(r["loss_end"]), fmt(r["val_loss_end"]),
                     verdict(bl[bkey]["end"], r["loss_end"])])
    table(["run", "起点 书中 / start book", "起点 本次 / ours", "判定", "终点 书中 / end book",
           "终点 本次（末 50 步训练均值）/ ours (train, last 50)", "验证 / val", "判定"], rows)
    gs = P["small_unscaled"]["val_loss_end"] - P["small_scaled"]["val_loss_end"]
    gb = P["big_unscaled"]["val_loss_end"] - P["big_scaled"]["val_loss_end"]
    mean_small = res["seeds"]["mean_gap"]
    table(["量 / quantity", "书中 / book", "本次 / ours", "判定 / verdict"], [
        ["差距 d_head=32（验证 loss）/ gap small (val)", fmt(bl["gap_small"]), fmt(gs), verdict(bl["gap_small"], gs)],
        ["差距 d_head=256（验证 loss）/ gap big (val)", fmt(bl["gap_big"]), fmt(gb), verdict(bl["gap_big"], gb)],
        ["放大倍数 / ratio big ÷ small（小模型取 3 个种子均值 / small = mean over seeds）",
         fmt(bl["gap_ratio"]), fmt(gb / mean_small if mean_small else None),
         verdict(bl["gap_ratio"], gb / mean_small if mean_small else None)],
    ])
    img("fig1_2_loss.png", "图 1.2 loss 曲线 / Fig 1.2 loss curves")

    # §1.19.2 seeds
    h(2, "§1.19.2　三个种子上的小模型差距 / the small gap over seeds")
    rows = [[str(r["seed"]), fmt(r["val_loss_end_unscaled"]), fmt(r["val_loss_end_scaled"]), fmt(r["gap"]),
             fmt(r["gap_train"])] for r in res["seeds"]["runs"]]
    table(["seed", "不缩放 val / unscaled", "缩放 val / scaled", "差距 / gap (val)", "差距 / gap (train, last 50)"], rows)
    rng = bl["small_gap_over_3_seeds_range"]
    p(f"书中：三个种子差距都在 {rng[0]}–{rng[1]} 之间。本次：均值 {fmt(res['seeds']['mean_gap'])}，"
      f"范围 {fmt(res['seeds']['min_gap'])} – {fmt(res['seeds']['max_gap'])}。 / Book: every seed's gap "
      f"in {rng[0]}–{rng[1]}. Ours: mean {fmt(res['seeds']['mean_gap'])}, range "
      f"{fmt(res['seeds']['min_gap'])} to {fmt(res['seeds']['max_gap'])}.")

    # §1.3 init sweep
    h(2, "§1.3　初始化扫描：logits 到底有多大 / init sweep")
    bi = B["init_sweep_1_3"]
    p(f"协议 / protocol: n_head=1, n_layer=1, vocab 300, block 32, 固定批次 (8, 32)，每个 d_head "
      f"{res['init_sweep'][0]['samples']} 次独立初始化（种子 0, 1, …）/ independent inits per d_head; "
      f"缩放与不缩放共享同一初始化 / scaled and unscaled share each init.")
    rows = []
    for i, r in enumerate(res["init_sweep"]):
        rows.append([str(r["d_head"]), fmt(bi["measured_logit_std"][i]), fmt(r["logit_std_unscaled"]),
                     verdict(bi["measured_logit_std"][i], r["logit_std_unscaled"]),
                     fmt(r["theory_sqrt_d_head"], 3), fmt(bi["ratio"][i]), fmt(r["ratio_unscaled_to_theory"]),
                     fmt(bi["weight_entropy"][i]), fmt(r["entropy_unscaled"]),
                     verdict(bi["weight_entropy"][i], r["entropy_unscaled"]),
                     fmt(r["logit_std_scaled"]), fmt(r["formula_logit_std"])])
    table(["d_head", "实测 std 书中 / book", "本次 / ours", "判定", "理论 √d", "比值 书中", "比值 本次",
           "权重熵 书中", "权重熵 本次", "判定", "缩放后 std / scaled", "式 1.1–1.2 预测 / formula"], rows)
    last = res["init_sweep"][-1]
    p(f"§1.3.1 核对：d=512 时书中预测 4.64、实测 4.666；本次式 1.1–1.2 预测 {fmt(last['formula_logit_std'])}、"
      f"实测 {fmt(last['logit_std_unscaled'])}；Var(q_i) 公式 {fmt(last['var_q_formula'])} vs 实测 "
      f"{fmt(last['var_q_measured'])}。书中说 d=32 时公式“预测 0.0128、实测 0.070，差了五倍多”；"
      f"0.0128 其实是 Var(q_i) 本身，按式 1.2 再乘 √32 得 {fmt(res['init_sweep'][0]['formula_logit_std'])}，"
      f"与实测 {fmt(res['init_sweep'][0]['logit_std_unscaled'])} 相符。 / At d=32 the book compares Var(q_i) "
      f"(0.0128) with a standard deviation; eq. 1.2 gives v·√d = "
      f"{fmt(res['init_sweep'][0]['formula_logit_std'])}, which agrees with the measurement.")
    p("另外，这个扫描里 d_model = d_head，所以 Var(q_i) = d_model σ² 本身也随 d 增大，logits 标准差按 "
      "d^1.5 增长（不是 √d），实测/理论的比值也就不是常数（书中表格本身从 0.012 增到 0.206）。"
      "见论断 init_std_grows_like_sqrt。 / In this sweep d_model = d_head, so the logit std grows like "
      "d^1.5, not √d; the book's own ratio column (0.012 → 0.206) is not constant either.")
    img("fig1_3_logit_std.png", "图 1.3 logits 标准差 / Fig 1.3 logit std")

    # §1.4 / §1.12 dynamics
    h(2, "§1.4 / §1.12　训练动态：权重熵、logits 标准差、雅可比范数（第 0 层）/ dynamics, layer 0")
    bd = B["dynamics_big_1_12"]
    steps = bd["steps"]
    rows = []
    for variant in ("unscaled", "scaled"):
        run = P[f"big_{variant}"]
        tr = run["trace"]
        for j, s in enumerate(steps):
            i = _nearest(tr["step"], round(s * S["steps"] / 1500))
            L = tr["layers"][0]
            row = [f"{'不缩放' if variant == 'unscaled' else '缩放'} / {variant}", f"{s} → {tr['step'][i]}"]
            for key in ("weight_entropy", "logit_std", "jacobian_fro"):
                b = bd[variant][key][j]
                row += [fmt(b), fmt(L[key][i]), verdict(b, L[key][i])]
            rows.append(row)
    table(["d_head=256", "步 书中 → 本次 / step book → ours", "熵 书中", "熵 本次", "判定",
           "logit std 书中", "本次", "判定", "‖J‖ 书中", "本次", "判定"], rows)
    ent_u = P["big_unscaled"]["trace"]["layers"][0]["weight_entropy"]
    p(f"书中：不缩放最终熵 {bd['unscaled_final_entropy']}，训练批上 logits 标准差 "
      f"{bd['unscaled_final_logit_std_train_batches']}；缩放后熵在 {bd['scaled_entropy_band']}，‖J‖ 在 "
      f"{bd['scaled_jacobian_band']}。本次：不缩放最终熵 {fmt(ent_u[-1])}，末 20 步训练批 logits 标准差 "
      f"{fmt(sum(P['big_unscaled']['trace']['layers'][0]['logit_std'][-20:]) / 20)}。")
    img("fig1_4_diagnostics.png", "图 1.4 诊断量 / Fig 1.4 diagnostics")

    # §1.7.6
    h(2, "§1.7.6　为什么小模型上没事 / why the small model is fine")
    su0 = P["small_unscaled"]["trace"]["layers"][0]
    bu0 = P["big_unscaled"]["trace"]["layers"][0]
    table(["量 / quantity", "书中 / book", "本次 / ours", "判定"], [
        ["d_head=32 初始化 logit std（不缩放）", "0.070", fmt(su0["logit_std"][0]), verdict(0.070, su0["logit_std"][0])],
        ["d_head=256 初始化 logit std（不缩放）", "1.615", fmt(bu0["logit_std"][0]), verdict(1.615, bu0["logit_std"][0])],
        ["d_head=256 训练后 logit std（训练批）", "5477", fmt(bu0["logit_std"][-1]), verdict(5477, bu0["logit_std"][-1])],
        ["d_head=32 权重熵（初始化）", "0.999", fmt(su0["weight_entropy"][0]), verdict(0.999, su0["weight_entropy"][0])],
        ["d_head=256 权重熵 初始化 → 训练后", "0.696 → 0.0001",
         f"{fmt(bu0['weight_entropy'][0])} → {fmt(bu0['weight_entropy'][-1])}",
         verdict(0.0001, bu0["weight_entropy"][-1])],
        ["§1.13.1 小模型 ‖J‖（初始化）", "0.26", fmt(su0["jacobian_fro"][0]), verdict(0.26, su0["jacobian_fro"][0])],
    ])

    # §1.7.7
    h(2, "§1.7.7　q、k 的实际尺度：训练前 → 训练后（第 0 层）/ q, k scale before → after, layer 0")
    p(f"协议 / protocol: {res['config']['qk_protocol']}.")
    bq = B["qk_scale_layer0_1_7_7"]
    rows = []
    for key, bkey in (("small_scaled", "small_d32_scaled"), ("small_unscaled", "small_d32_unscaled"),
                      ("big_scaled", "big_d256_scaled"), ("big_unscaled", "big_d256_unscaled")):
        b0, a0 = res["qk_scale"][key]["before"][0], res["qk_scale"][key]["after"][0]
        row = [key]
        for col in ("q_std", "k_std", "logit_std", "W_qkv_fro"):
            bb, ba = bq[bkey][col]
            row += [f"{fmt(bb)} → {fmt(ba)}", f"{fmt(b0[col])} → {fmt(a0[col])}", verdict(ba, a0[col])]
        rows.append(row)
    table(["config", "q 书中", "q 本次", "判定", "k 书中", "k 本次", "判定", "logits 书中", "logits 本次", "判定",
           "‖W_qkv‖ 书中", "‖W_qkv‖ 本次", "判定"], rows)
    mx = res["qk_scale"]["big_unscaled"]["after"][0]["logit_absmax"]
    p(f"最大 |logit|（d_head=256 不缩放，训练后）：书中 {bq['big_unscaled_max_abs_logit']}，本次 {fmt(mx)}"
      f"（{verdict(bq['big_unscaled_max_abs_logit'], mx)}）。 / max |logit|, big unscaled after training.")
    layers = len(res["qk_scale"]["small_scaled"]["after"])
    if layers > 1:
        rows = []
        for key in ("small_scaled", "small_unscaled", "big_scaled", "big_unscaled"):
            for L in range(1, layers):
                b0, a0 = res["qk_scale"][key]["before"][L], res["qk_scale"][key]["after"][L]
                rows.append([key, str(L)] + [f"{fmt(b0[c])} → {fmt(a0[c])}"
                                             for c in ("q_std", "k_std", "logit_std", "logit_absmax", "W_qkv_fro")])
        p("其余层（书中未报告）/ other layers (not in the book):")
        table(["config", "layer", "q std", "k std", "logit std", "max |logit|", "‖W_qkv‖"], rows)

    # samples
    h(2, "§1.4　同一提示词、同一采样种子 / samples")
    bs = B["samples_1_4"]
    sm = res["samples"]
    table(["model", "书中 / book", "本次 / ours"], [
        ["d_head=256 不缩放 / unscaled", bs["unscaled"], sm["big_unscaled"]],
        ["d_head=256 缩放 / scaled", bs["scaled"], sm["big_scaled"]],
        ["d_head=32 不缩放 / unscaled", "—", sm["small_unscaled"]],
        ["d_head=32 缩放 / scaled", "—", sm["small_scaled"]],
    ])
    p("书中也说，小模型的样本差异不足以作为主要证据；硬证据是 loss 差距和雅可比范数。 / As the book says, "
      "samples are not the evidence; the loss gap and the Jacobian norm are.")

    # claims
    h(2, "论断检查 / claims")
    table(["id", "节 / section", "论断 / statement", "实测 / measured", "期望 / expected", "结果"],
          [[c["id"], c["section"], c["statement"], fmt(c["measured"]), c["expected"],
            "✅ PASS" if c["pass"] else "❌ FAIL"] for c in claims])

    # timings
    h(2, "耗时与算力下限 / timings and the arithmetic floor")
    e = res["environment"]
    table(["部分 / part", "秒 / seconds"], [
        ["初始化扫描 / init sweep", fmt(t["init_sweep_s"])],
    ] + ([["小模型组（对照 + 种子）/ small runs", fmt(t["small_runs_s"])],
          ["大模型组 / big runs", fmt(t["big_runs_s"])]] if "small_runs_s" in t else []) + (
        [["执行器 / executor", f"{t['executor']}"
          + (f"，{t['workers']} 个进程 / {t['workers']} workers" if t.get("workers") else "")]]
        if "executor" in t else []) + [
        ["分析与采样 / analysis", fmt(t["analysis_s"])],
        ["训练总耗时 / training wall", fmt(t["train_wall_s"])],
        ["训练浮点运算 / training FLOPs", f"{t['train_flops'] / 1e12:.2f} TFLOP"],
        ["本机 float32 矩阵乘速率 / matmul rate", f"{t['matmul_rate_flops_per_s'] / 1e9:.1f} GFLOP/s"],
        ["算力下限 / floor = FLOPs ÷ rate", fmt(t["train_floor_s"])],
        ["耗时 ÷ 下限 / wall ÷ floor", fmt(t["train_wall_over_floor"], 3)],
    ] + ([["仅矩阵乘（同形状）/ the same matmuls alone", fmt(t["train_matmuls_only_s"])],
          ["仅矩阵乘 ÷ 下限 / matmuls alone ÷ floor", fmt(t["matmuls_only_over_floor"], 3)]]
         if "train_matmuls_only_s" in t else []))
    if "train_matmuls_only_s" in t:
        p("“仅矩阵乘”只做这些训练的矩阵乘法（前向与反向，本模型的矩阵形状），不做别的：在本机、用同一个 BLAS 做这些乘法的实现都不会比它更快。"
          "小矩阵达不到大方阵的速率，所以它本身就高于算力下限。 / “Matmuls alone” runs only the matrix "
          "multiplies of these trainings (forward and backward, at the models' own shapes) and nothing else: "
          "an implementation doing these multiplies with this machine's BLAS cannot be faster. Small matrices do not reach the rate of large "
          "square ones, so it already sits above the floor.")
    if t.get("reused_runs"):
        p("本次复用了之前已完成的训练，耗时不代表训练速度。 / Finished runs were reused; the wall time "
          "does not measure training speed.")
    p(f"环境 / environment: Python {e['python']}, torch {e['torch']}, numpy {e['numpy']}, {e['platform']}, "
      f"{e['cpu_count']} CPU, {e['torch_threads']} torch threads, device {e['device']}"
      + (f" ({e['cuda']})" if e.get("cuda") else "") + ".")
    return blocks


# --------------------------------------------------------------------- renderers
def to_markdown(blocks: list[tuple]) -> str:
    out = []
    for b in blocks:
        if b[0] == "h":
            out.append("#" * b[1] + " " + b[2])
        elif b[0] == "p":
            out.append(b[1])
        elif b[0] == "img":
            out.append(f"![{b[2]}]({b[1]})")
        elif b[0] == "table":
            cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
            out.append("| " + " | ".join(cell(c) for c in b[1]) + " |")
            out.append("|" + "---|" * len(b[1]))
            out.extend("| " + " | ".join(cell(c) for c in row) + " |" for row in b[2])
        out.append("")
    return "\n".join(out)


def _inline(text: str) -> str:
    import re

    s = html.escape(text)
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


def to_html(blocks: list[tuple], font_url: str) -> str:
    body = []
    for b in blocks:
        if b[0] == "h":
            body.append(f"<h{b[1]}>{_inline(b[2])}</h{b[1]}>")
        elif b[0] == "p":
            body.append(f"<p>{_inline(b[1])}</p>")
        elif b[0] == "img":
            body.append(f'<figure><img src="{html.escape(b[1])}" alt="{html.escape(b[2])}">'
                        f"<figcaption>{html.escape(b[2])}</figcaption></figure>")
        elif b[0] == "table":
            head = "".join(f"<th>{_inline(str(c))}</th>" for c in b[1])
            rows = "".join("<tr>" + "".join(f"<td>{_inline(str(c))}</td>" for c in row) + "</tr>" for row in b[2])
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    style = f"""
@font-face {{ font-family: "AttnlabCJK"; src: url("{font_url}") format("opentype"); }}
body {{ font-family: "AttnlabCJK", "Noto Sans CJK SC", sans-serif; max-width: 1200px; margin: 2em auto;
       padding: 0 1em; line-height: 1.55; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.86em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; vertical-align: top; }}
th {{ background: #f3f3f3; }}
img {{ max-width: 100%; }} figure {{ margin: 1em 0; }} figcaption {{ color: #555; font-size: 0.9em; }}
code {{ background: #f5f5f5; padding: 0 0.2em; }}"""
    return ("<!doctype html>\n<html lang=\"zh\"><head><meta charset=\"utf-8\">"
            "<title>第 1 章案例复现报告 / Chapter 1 case report</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def build_report(res: dict, out: Path) -> list[Path]:
    """Write figures/ and reports/ch1_case.{md,html} under ``out``; return their paths."""
    out = Path(out)
    figs = case_figures(res, out / "figures")
    reports = out / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    fig_rel = os.path.relpath(out / "figures", reports)
    blocks = build_blocks(res, fig_rel)
    md = write_text(reports / "ch1_case.md", to_markdown(blocks))
    font_url = os.path.relpath(FONT_FILE, reports)
    page = write_text(reports / "ch1_case.html", to_html(blocks, font_url))
    return [*figs, md, page]
