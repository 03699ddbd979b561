"""reports/lab_book.{md,html} from data/lab_book.json and data/lab_book/*.json alone.

One page in the chapter's order: a summary line, a table of contents with the
PASS/FAIL count of each section, then per section the chapter's statement, the
command that reproduces it, the tables, the figures and the claims (book |
ours | verdict, with its p, its verdict after Holm's correction in its family and its sequential
verdict over its looks) with the reason of every FAIL. The HTML is one self-contained
file (:mod:`attnlab.report.selfcontained`): the figures are embedded as data:
URIs and the fonts as subsets holding exactly the page's characters, so it
opens alone from file:// with no network.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from .. import claims_registry as R
from .. import verdicts as V
from ..io import write_text
from ..stats import METHOD
from .page import md_row
from .selfcontained import MONO_STACK, SANS_STACK, document, image_uri

NOT_RUN = "未运行 / not run yet"

FAMILY_METHOD = (
    "p 值与族 / p-values and families: 每条检验了假设的论断给出 p 值，即其 PASS 所依据的检验的 p："
    "效应是种子配对差对 0 的单侧 t 检验，数值是一次运行落在书中值 ± 容差之内的预测 t 检验（书中值本身在单次运行预测分布下的"
    "双侧 p 决定 FAIL），区间是均值在区间两端之内的两个单侧检验，等价是 TOST，组合论断取各部分中最大的 p（交并检验）。"
    "单条论断各自的水平是单侧 2.5%（等价 5%）；论断越多，靠运气 PASS 的就越多。所以每条论断旁边还有 Holm 判定："
    "在它所属的族里，按 Holm 逐步法把“族中任何一条 PASS 是假的”的机会控制在 2.5%；没有通过的 PASS 记为 "
    "INCONCLUSIVE（更多种子仍可能定下来），FAIL 与 INCONCLUSIVE 不变（Holm 只约束假 PASS：FAIL 是单条论断自己的判定，"
    "其 p 在表中可查）。族有两个：书中论断是一族——它们一起回答“书对不对”，读者按总数来读；我们自己的预测是另一族——"
    "它们是我们的说法，不该与书的说法共用或稀释同一份错误预算。自检不进入任何族：它们检验的是我们的测量本身是否有意义"
    "（起点 loss、掩码、对照），是测量成立的前提而不是发现，若不成立，该修的是测量；书中提出的问题（类型“问题”）只作答、"
    "记为 REPORTED，不检验，也不进入任何族；精确算术与逐种子检查（every）"
    "不是带错误率的检验，没有 p，Holm 列照抄原判定。"
    " / Every claim that tests a hypothesis carries its p, that of the test behind its PASS: for an effect the "
    "one-sided t test of the per-seed paired differences against 0; for a value the one-run predictive t test "
    "that one run lies within the book's value ± its tolerance (the book's value itself under that predictive "
    "distribution, two-sided, decides the FAIL); for a band two one-sided tests against its ends; for an "
    "equivalence the TOST p; for a claim of several parts the largest p of its parts (intersection-union). Alone, "
    "each is held to one-sided 2.5% (equivalence 5%); the more claims, the more PASS by luck. So beside each "
    "verdict stands its Holm verdict: within its family, Holm's step-down procedure holds the chance that any "
    "PASS of the family is false to 2.5%; a PASS that does not survive reads INCONCLUSIVE (more seeds may still "
    "decide it), FAIL and INCONCLUSIVE are kept (Holm guards against false PASSes; a FAIL is the claim's own "
    "verdict, its p shown). Two families: the book's claims, read together as the answer to 'is the book right', "
    "and our own predictions, our statements, which should neither share nor dilute the book's error budget. "
    "Sanity checks are in no family: they test whether our measurement means anything (the starting loss, the "
    "mask, the controls), a precondition rather than a finding, and one that fails calls for fixing the "
    "measurement. Questions the chapter asks (kind question) are answered and REPORTED, not tested, and are in "
    "no family. Exact arithmetic and every-seed checks are not tests with an error rate: no p, and their Holm "
    "column repeats the verdict."
)

SEQUENTIAL_METHOD = (
    "顺序判定 / sequential verdicts: `attnlab book --decide` 会给未定的论断补种子再判，每判一次就是一次查看（look）。"
    "每次都按 2.5% 判，运气越过线的机会就会累加（无效应时约 5–6%）。顺序判定把每条论断的 2.5% 分给它的各次查看："
    "到 n 个种子时最多用掉 α(n/30)，α(t) = 2.5%·ln(1 + (e − 1)t)（Lan–DeMets 的 Pocock 型消耗函数，30 是一条论断"
    "最多补到的种子数），每次查看的名义水平由此算出；一旦某次查看通过即为 PASS，FAIL 沿用原规则（不增加假 PASS）。"
    "第一次查看也算：一条论断若可能被补种子，它在第一次查看时就只能用掉 α(n/30)。表中“顺序”一列是这个判定及各次查看的"
    "种子数；主判定不变。"
    " / `attnlab book --decide` adds seeds to an undecided claim and judges it again: each judgement is a look. "
    "Judged at 2.5% every time, chance crosses the line more often (5-6% under no effect). The sequential verdict "
    "shares each claim's 2.5% among its looks: by n seeds it may have spent at most alpha(n/30), alpha(t) = "
    "2.5% ln(1 + (e - 1)t) (Lan-DeMets, Pocock type; 30 seeds is the most one claim is extended to), which sets "
    "each look's nominal level; a look that crosses is a PASS that stands, FAIL is the fixed rule's (it adds no "
    "false PASS). The first look counts too: a claim that may be extended can spend only alpha(n/30) there. The "
    "sequential column shows that verdict and the seed counts of the looks; the main verdict is unchanged."
)
STATUS = {"done": "完成 / done", "partial": "部分完成 / partial", "not_run": NOT_RUN}


def load_book(root: Path, data: Path | None = None) -> tuple[dict, dict[str, dict]]:
    """data/lab_book.json and the entries it names (under ``data``, default ``root``/data), read
    within bounds and checked against their schemas (attnlab.schemas): a damaged file is a
    :class:`~attnlab.lab.labbook.BookError` naming it, the field and the fix."""
    from ..io import read_json
    from ..lab.labbook import BookError
    from ..schemas import check, load

    root = Path(root)
    index = (Path(data) if data is not None else root / "data") / "lab_book.json"
    again = "; rebuild it with `attnlab book --no-train`"
    book = read_json(index, error=BookError, hint=again)
    sections = book.get("sections") if isinstance(book, dict) else None
    if not (
        isinstance(sections, list)
        and isinstance(book.get("summary"), dict)
        and all(isinstance(s, dict) and isinstance(s.get("experiments"), list) for s in sections)
    ):
        raise BookError(f"{index} is not a lab book (no summary and sections of experiments){again}")
    check("lab_book", book, index, error=BookError)
    docs = {}
    for s in sections:
        for eid in s["experiments"]:
            p = index.parent / "lab_book" / f"{eid}.json"
            if isinstance(eid, str) and (p.exists() or p.is_symlink()):  # a FIFO in its place: refused
                doc = load("lab_book_entry", p, error=BookError, id=eid)
                if not isinstance(doc, dict):
                    raise BookError(f"{p} holds a JSON {type(doc).__name__}, not a lab-book entry; delete it")
                docs[eid] = doc
    return book, docs


def anchor(section: str) -> str:
    return "s" + "".join(c if c.isalnum() else "-" for c in section.lstrip("§")).strip("-")


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and all(x is None or isinstance(x, (int, float, str)) for x in v):
        return ", ".join(_fmt(x) for x in v)  # numbers, not JSON
    if isinstance(v, dict) and all(x is None or isinstance(x, (int, float, str)) for x in v.values()):
        return "; ".join(f"{k}: {_fmt(x)}" for k, x in v.items())
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def _measured_html(v: Any) -> str:
    """A claim's measured text (numbers, never JSON); its quantities joined by "; " stay on one line each
    only where they are short, so a long list of seeds wraps instead of widening the table."""
    parts = _fmt(v).split("; ")
    return "; ".join(f"<span class=q>{html.escape(p)}</span>" for p in parts)


def detail_text(c: dict, sep: str) -> str:
    """What the judge said of the numbers (e.g. "one-run 95% PI 0.94 ± 0.25 over 6 seeds: inside"), after
    ``sep``; "" when it says nothing the measured text does not."""
    d = c.get("detail")
    return f"{sep}{d}" if isinstance(d, str) and d and d != c.get("measured") else ""


def families(book: dict) -> dict[str, dict]:
    """Each claim of the book's index by id: it carries the verdict after Holm's correction (``holm``)."""
    return {c["id"]: c for s in book.get("sections", []) for c in s.get("claims", []) if isinstance(c, dict)}


def p_text(c: dict) -> str:
    p = c.get("p")
    return "—" if not isinstance(p, (int, float)) else ("<0.0001" if p < 1e-4 else f"{p:.2g}")


def holm_text(c: dict, index: dict[str, dict]) -> str:
    return (index.get(c["id"]) or {}).get("holm") or "—"


def seq_text(c: dict) -> str:
    """The sequential verdict and the seed counts of the claim's looks ("—": it tests nothing)."""
    v = c.get("seq")
    if not v:
        return "—"
    need = c.get("seq_n_needed")
    head = f"INCONCLUSIVE（需约 {need} / needs ~{need}）" if v == "INCONCLUSIVE" and need else v
    ns = [str(x.get("n")) for x in c.get("looks") or []]
    return f"{head} · {'→'.join(ns)} 种子 / seeds" if ns else head


def verdict(c: dict) -> str:
    """The verdict as shown: an INCONCLUSIVE names the seeds it needs."""
    v = V.verdict_of(c)
    if v == "INCONCLUSIVE":
        need = c.get("n_needed")
        return (
            f"INCONCLUSIVE（需约 {need} 个种子 / needs ~{need} seeds）"
            if need
            else "INCONCLUSIVE（种子定不下 / seeds cannot settle）"
        )
    return {"REPORTED": "REPORTED（记录 / reported）", "NA": "NA（本机无法检验 / not testable here）"}.get(v, v)


def summary_line(book: dict, registry: dict | None = None, confirm: dict | None = None) -> str:
    """The book's counts (exploratory), the registry's, and where the confirmatory round stands."""
    s = book["summary"]
    counts = s.get("count_line") or f"{s['pass']} PASS，{s['fail']} FAIL"
    line = (
        f"{s['experiments']} 个实验 / experiments：{s['done']} 完成 done，{s['partial']} 部分 partial，"
        f"{s['not_run']} 未运行 not run；论断 / claims {s['claims']}：{counts}"
    )
    line += f"；{registry_line(book, registry)}" if registry is not None else ""
    return line + (f"；{confirm_line(book, confirm)}" if confirm is not None else "")


def confirm_line(book: dict, confirm: dict) -> str:
    """The confirmatory round's headline beside today's (exploratory) verdicts of the book."""
    from ..lab.confirm import headline

    return headline(confirm, {c["id"]: V.verdict_of(c) for c in families(book).values()})


def confirm_text(c: dict, confirm: dict | None) -> str:
    """A claim's confirmatory column: its verdict on fresh seeds, pending, or why it is not in the round."""
    if confirm is None:
        return "—"
    row = confirm["claims"].get(c["id"])
    if row is None:
        return "不在验证性一轮 / not in the confirmatory round" if c.get("kind") == "book" else "—"
    if row["status"] == "judged" and row["verdict"] != V.verdict_of(c):
        return f"{row['text']}；与探索性不同 / differs from the exploratory verdict"
    return row["text"]


def registry_line(book: dict, registry: dict) -> str:
    """How many of the book's claims were fixed before their data, with or after it, and amended."""
    return R.count_text(R.counts(registry, families(book)))


REGISTRY_METHOD = (
    "登记 / registration: 每条论断的规格（规则与参数：容差、SESOI、区间、margin）登记在 data/claims_registry.json，"
    "附登记的提交、首次有数据的提交与每次修订（attnlab claims --check 核对代码与登记）。在数据之前登记的为“事前”；"
    "与数据同一提交或之后登记的为“事后”，旁边给出按登记时的规格（同一规则、登记的参数、今天的数）判定的结果；"
    "修订过的同样给出。日期由 git 历史重建。"
    " / Each claim's specification (rule and parameters: tolerance, SESOI, band, margin) is registered in "
    "data/claims_registry.json with the commit that registered it, the commit of its first data and every "
    "amendment (attnlab claims --check holds the code to it). Registered before its data: 'before'; in the same "
    "commit as its data or after: 'post hoc', shown with the verdict of its registered specification (the same "
    "rule with the registered parameters on today's numbers); amended claims likewise. Dates reconstructed from "
    "git history."
)


def registry_text(c: dict, registry: dict | None) -> str:
    return R.mark((registry or {}).get("claims", {}).get(c["id"]), c) if registry is not None else "—"


def compute_line(t: dict | None) -> str:
    """The training time recorded in the runs' folders, or "" when there is none."""
    if not t or not t.get("timed_runs"):  # runs trained before timing was kept, or none
        return ""
    h = t["compute_s"] / 3600
    txt = f"训练耗时 / training time {h:.2f} h ({t['compute_s'] / 60:.0f} min)"
    if t["timed_runs"] < t["runs"]:
        return txt + f"，{t['timed_runs']}/{t['runs']} 个运行有记录 / runs timed"
    return txt + f"，{t['runs']} 个运行 / runs"


def _placeholder(book: dict, eid: str) -> dict | None:
    """An experiment with no JSON yet: the registry's words and command, no numbers."""
    meta = book.get("entries", {}).get(eid)
    if meta is None:
        return None
    return {
        **meta,
        "id": eid,
        "status": "not_run",
        "results": {},
        "claims": [],
        "figures": [],
        "notes": ["还没有结果 / no result yet"],
    }


# -------------------------------------------------------------------------------- markdown
def render_markdown(
    book: dict,
    docs: dict[str, dict],
    fig_prefix: str = "../",
    registry: dict | None = None,
    confirm: dict | None = None,
) -> str:
    out = [
        "# 实验手册 / The lab book",
        "",
        "第 1 章中每个实验（书中跑过的和书中邀请读者做的），一条命令重跑：`attnlab book`。"
        "*Every experiment the chapter runs or invites, in one command.*",
        "",
        f"**{summary_line(book, registry, confirm)}**",
        "",
        "## 目录 / Contents",
        "",
        "| 节 / section | 标题 / title | 状态 / status | PASS | FAIL | INCONCLUSIVE |",
        "|---|---|---|---|---|---|",
    ]
    for s in book["sections"]:
        st = ", ".join(STATUS[book["status"][e]] for e in s["experiments"])
        out.append(
            f"| [{s['section']}](#{anchor(s['section'])}) | {s['title']} | {st} | {s['pass']} | {s['fail']} "
            f"| {s.get('inconclusive', 0)} |"
        )
    out += ["", "## 判定规则 / How verdicts are reached", "", METHOD, "", FAMILY_METHOD, "", SEQUENTIAL_METHOD, ""]
    out += [REGISTRY_METHOD, ""]
    index = families(book)
    for s in book["sections"]:
        out += [f'<a id="{anchor(s["section"])}"></a>', "", f"## {s['section']} {s['title']}", ""]
        for eid in s["experiments"]:
            out += entry_markdown(eid, docs.get(eid) or _placeholder(book, eid), fig_prefix, index, registry, confirm)
    env = book.get("environment", {})
    out += [
        "## 环境 / Environment",
        "",
        f"- {env.get('platform')}, {env.get('cpu_count')} CPU, torch {env.get('torch')}",
        f"- created {book.get('created')}",
        *([f"- 全书 / the whole book: {line}"] if (line := compute_line(book.get("timings", {}).get("book"))) else []),
        "",
    ]
    return "\n".join(out) + "\n"


def entry_markdown(
    eid: str,
    doc: dict | None,
    fig_prefix: str,
    index: dict[str, dict] | None = None,
    registry: dict | None = None,
    confirm: dict | None = None,
) -> list[str]:
    """One entry of the book: its title, the book's words, its command and status, then its body."""
    if doc is None:
        return [f"### {eid}", "", f"**{NOT_RUN}**", ""]
    out = [
        f"### {doc['title']}",
        "",
        f"> 书中 / the book: {doc['statement']}",
        "",
        f"状态 / status: **{STATUS[doc['status']]}** · 命令 / command: `{doc['command']}`"
        + (f" · {line}" if (line := compute_line(doc.get("timings"))) else ""),
        "",
    ]
    if doc.get("prediction"):
        out += [f"**预测（训练前写下）/ prediction (written before training):** {doc['prediction']}", ""]
    if doc["status"] == "not_run":
        out += [f"**{NOT_RUN}** — 运行上面的命令 / run the command above.", ""]
        out += [f"- {n}" for n in doc.get("notes", [])] + [""]
        return out
    return out + entry_body_markdown(doc, fig_prefix, index, registry, confirm)


def entry_body_markdown(
    doc: dict, fig_prefix: str, index: dict[str, dict] | None = None, registry=None, confirm=None, ids: bool = False
) -> list[str]:
    """An entry's tables, figures, claims and notes: what the case report shows too, there with each
    claim's id (``ids``: the page's other tables name the claims they show by id)."""
    out: list[str] = []
    res = doc["results"]
    if res.get("headers") and res.get("rows"):
        out += [md_row(res["headers"]), "|" + "---|" * len(res["headers"])]
        out += [md_row(_fmt(v) for v in row) for row in res["rows"]] + [""]
    if res.get("table"):
        out += ["| 量 / quantity | 书中 / book | 本次 / ours |", "|---|---|---|"]
        out += [md_row([a, _fmt(b), _fmt(c)]) for a, b, c in res["table"]] + [""]
    for f in doc.get("figures", []):
        out += [f"![{Path(f).name}]({fig_prefix}{f})", ""]
    if doc["claims"]:
        out += [
            "| 论断 / claim | 类型 / kind | 期望 / expected | 本次 / measured | 判定 / verdict | p "
            "| Holm | 顺序 / sequential | 登记 / registered | 验证性 / confirmatory |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in doc["claims"]:
            cid = f" `{c['id']}`" if ids else ""
            out.append(
                md_row(
                    [
                        f"{c['section']} {c['statement']}{cid}",
                        c["kind"],
                        c["expected"],
                        _fmt(c["measured"]) + detail_text(c, " — "),
                        f"**{verdict(c)}**",
                        p_text(c),
                        holm_text(c, index or {}),
                        seq_text(c),
                        registry_text(c, registry),
                        confirm_text(c, confirm),
                    ]
                )
            )
        out.append("")
    out += [f"- {n}" for n in doc.get("notes", [])]
    return out + [""]


# ------------------------------------------------------------------------------------ html
CSS = """
body{font-family:SANS;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.55;color:#222}
h2{border-bottom:2px solid #2463a6;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em;width:100%} td,th{border:1px solid #ccc;padding:.25em .4em;vertical-align:top}
th{background:#eef3f9} .PASS{color:#1b7a2e;font-weight:bold} .FAIL{color:#b02a1a;font-weight:bold}
blockquote{border-left:4px solid #aac;margin:.5em 0;padding:.3em .8em;background:#f6f7fb}
code,pre{background:#f3f3f3;padding:.1em .3em;font-family:MONO} img{max-width:100%}
.badge{display:inline-block;padding:.05em .5em;border-radius:.6em;background:#ddd;font-size:.85em}
.done{background:#cfe9d4} .partial{background:#f6e3b5} .not_run{background:#f3c7c1}
.INCONCLUSIVE{color:#8a6d00;font-weight:bold}
.summary{font-size:1.1em;font-weight:bold;background:#eef3f9;padding:.5em .8em}
""".replace("SANS", SANS_STACK).replace("MONO", MONO_STACK)
# the claims table's own classes (the case report shows the same table)
CLAIMS_CSS = """
td.m{min-width:16em;font-variant-numeric:tabular-nums;font-size:.92em} .NA,.REPORTED{color:#555}
code.id{font-size:.8em;color:#555} tr.id td{border-bottom:none;padding-bottom:0} tr.id+tr td{border-top:none}
"""
CSS += CLAIMS_CSS


def render_html(
    book: dict, docs: dict[str, dict], root: Path, registry: dict | None = None, confirm: dict | None = None
) -> str:
    parts = []
    nav = [
        "<table><tr><th>节 / section</th><th>标题 / title</th><th>状态 / status</th><th>PASS</th><th>FAIL</th>"
        "<th>INCONCLUSIVE</th></tr>"
    ]
    for s in book["sections"]:
        st = " ".join(
            f'<span class="badge {book["status"][e]}">{html.escape(STATUS[book["status"][e]])}</span>'
            for e in s["experiments"]
        )
        nav.append(
            f'<tr><td><a href="#{anchor(s["section"])}">{html.escape(s["section"])}</a></td>'
            f"<td>{html.escape(s['title'])}</td><td>{st}</td><td class=PASS>{s['pass']}</td>"
            f"<td class=FAIL>{s['fail']}</td><td class=INCONCLUSIVE>{s.get('inconclusive', 0)}</td></tr>"
        )
    nav.append("</table>")
    parts.append(f'<nav id="toc"><h2>目录 / Contents</h2>{"".join(nav)}</nav>')
    parts.append(
        f"<h2>判定规则 / How verdicts are reached</h2><p>{html.escape(METHOD)}</p>"
        f"<p id=families>{html.escape(FAMILY_METHOD)}</p><p id=sequential>{html.escape(SEQUENTIAL_METHOD)}</p>"
        f"<p id=registry>{html.escape(REGISTRY_METHOD)}</p>"
    )
    index = families(book)
    for s in book["sections"]:
        body = [f'<section id="{anchor(s["section"])}"><h2>{html.escape(s["section"] + " " + s["title"])}</h2>']
        for eid in s["experiments"]:
            body.append(entry_html(eid, docs.get(eid) or _placeholder(book, eid), root, index, registry, confirm))
        body.append("</section>")
        parts.append("".join(body))
    env = book.get("environment", {})
    parts.append(
        f"<h2>环境 / Environment</h2><p>{html.escape(str(env.get('platform')))}, {env.get('cpu_count')} CPU, "
        f"torch {html.escape(str(env.get('torch')))}; created {html.escape(str(book.get('created')))}"
        + (
            f"<br>全书 / the whole book: {html.escape(line)}"
            if (line := compute_line(book.get("timings", {}).get("book")))
            else ""
        )
        + "</p>"
    )
    body = (
        "<h1>实验手册 / The lab book</h1>"
        "<p>第 1 章中每个实验（书中跑过的和书中邀请读者做的），一条命令重跑：<code>attnlab book</code>。"
        "<i>Every experiment the chapter runs or invites, in one command.</i></p>"
        f"<p class=summary id=summary>{html.escape(summary_line(book, registry, confirm))}</p>" + "".join(parts)
    )
    return document("实验手册 / The lab book", body, CSS)  # the fonts hold exactly what the page shows


def entry_html(
    eid: str,
    doc: dict | None,
    root: Path,
    index: dict[str, dict] | None = None,
    registry: dict | None = None,
    confirm: dict | None = None,
) -> str:
    """:func:`entry_markdown` as HTML."""
    e = html.escape
    if doc is None:
        return f"<h3>{e(eid)}</h3><p><span class='badge not_run'>{NOT_RUN}</span></p>"
    out = [
        f"<h3 id='{e(eid)}'>{e(doc['title'])} <span class='badge {doc['status']}'>{e(STATUS[doc['status']])}</span></h3>",
        f"<blockquote>书中 / the book: {e(doc['statement'])}</blockquote>",
        f"<p>命令 / command: <code>{e(doc['command'])}</code>"
        + (f" · {e(line)}" if (line := compute_line(doc.get("timings"))) else "")
        + "</p>",
    ]
    if doc.get("prediction"):
        out.append(f"<p><b>预测（训练前写下）/ prediction (written before training):</b> {e(doc['prediction'])}</p>")
    if doc["status"] == "not_run":
        out.append(f"<p><b>{NOT_RUN}</b> — 运行上面的命令 / run the command above.</p>")
        out += [f"<p>{e(n)}</p>" for n in doc.get("notes", [])]
        return "".join(out)
    return "".join(out) + entry_body_html(doc, root, index, registry, confirm)


def entry_body_html(
    doc: dict, root: Path, index: dict[str, dict] | None = None, registry=None, confirm=None, ids: bool = False
) -> str:
    """:func:`entry_body_markdown` as HTML."""
    e = html.escape
    out = []
    res = doc["results"]
    if res.get("headers") and res.get("rows"):
        out.append(
            "<table><tr>"
            + "".join(f"<th>{e(h)}</th>" for h in res["headers"])
            + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{e(_fmt(v))}</td>" for v in row) + "</tr>" for row in res["rows"])
            + "</table>"
        )
    if res.get("table"):
        out.append(
            "<table><tr><th>量 / quantity</th><th>书中 / book</th><th>本次 / ours</th></tr>"
            + "".join(
                f"<tr><td>{e(str(a))}</td><td>{e(_fmt(b))}</td><td>{e(_fmt(c))}</td></tr>" for a, b, c in res["table"]
            )
            + "</table>"
        )
    for f in doc.get("figures", []):
        src = _image(root, f)
        out.append(
            f"<figure><img alt='{e(Path(f).name)}' src='{src}'><figcaption>{e(f)}</figcaption></figure>"
            if src
            else f"<p>图缺失 / figure missing: {e(f)}</p>"
        )
    if doc["claims"]:
        out.append(
            "<table><tr><th>论断 / claim</th><th>类型 / kind</th><th>期望 / expected</th>"
            "<th>本次 / measured</th><th>判定（登记）/ verdict (registration)</th><th>p</th><th>Holm</th>"
            "<th>顺序 / sequential</th><th>验证性 / confirmatory</th></tr>"
        )
        for c in doc["claims"]:
            v, h, d = verdict(c), holm_text(c, index or {}), detail_text(c, "")
            if ids:  # a line of its own across the table: an id does not break, so in a cell it would widen it
                out.append(f"<tr class=id><td colspan=9><code class=id>{e(c['id'])}</code></td></tr>")
            out.append(
                f"<tr><td>{e(c['section'])} {e(c['statement'])}</td><td>{e(c['kind'])}</td>"
                f"<td>{e(_fmt(c['expected']))}</td><td class=m>{_measured_html(c['measured'])}"
                f"{f'<br><small>{e(d)}</small>' if d else ''}</td>"
                f"<td class='{V.verdict_of(c)}'>{e(v)}<br><small>{e(registry_text(c, registry))}</small></td>"
                f"<td>{e(p_text(c))}</td>"
                f"<td class='{e(h)}'>{e(h)}</td><td class='{e(c.get('seq') or '')}'>{e(seq_text(c))}</td>"
                f"<td>{e(confirm_text(c, confirm))}</td></tr>"
            )
        out.append("</table>")
    if doc.get("notes"):
        out.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in doc["notes"]) + "</ul>")
    return "".join(out)


def _image(root: Path, rel: str) -> str | None:
    """A figure of the book as a data: URI (PNG or SVG, the shorter), from ``root`` or the repository."""
    from ..corpus import REPO_ROOT

    for base in (Path(root), REPO_ROOT):
        if (base / rel).is_file():
            return image_uri(base / rel)
    return None


def build_book_report(root: Path, data: Path | None = None, experiments=None) -> list[Path]:
    """Write reports/lab_book.md and reports/lab_book.html under ``root`` from the book in ``data``
    (default ``root``/data); returns the paths. ``experiments``: the entries that draw the figures
    (default :data:`attnlab.lab.EXPERIMENTS`); the claims registry is read from ``data``."""
    from ..lab.confirm import standing
    from .lab_book_figures import draw_figures

    root = Path(root)
    book, docs = load_book(root, data)
    where = Path(data) if data is not None else root / "data"
    registry = R.for_reports(where)
    confirm = standing(where)
    markdown = render_markdown(
        book, docs, registry=registry, confirm=confirm
    )  # before anything is written: a damaged entry fails here
    for doc in docs.values():
        draw_figures(doc, root, experiments)
    md = write_text(root / "reports" / "lab_book.md", markdown)
    page = write_text(root / "reports" / "lab_book.html", render_html(book, docs, root, registry, confirm))
    return [md, page]
