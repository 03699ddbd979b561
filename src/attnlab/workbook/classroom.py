"""A class: ``attnlab class new`` hands each student a seed and an assignment sheet; ``attnlab class
grade DIR`` checks a folder of submissions and writes one self-contained HTML page per student and one
for the class.

Layout of a class folder (``new`` writes the first three; students' work goes in the fourth)::

    class.json          the students, their seeds, exercise 2's class size and its cost
    assignment.md       the assignment sheet (Chinese first)
    submissions/<id>/   what student <id> hands in: ex3.py, ex4.py, ex1/<run folders>, ex2/<run folders>
    report/             written by ``grade``: <id>.html and class.html

Grading never follows a link and never reads outside the class folder: every path is checked with
``lstat`` before it is opened (a link, a device or a FIFO is reported, not read), names that are not
UTF-8 are shown escaped, a file over the size limits is refused by the checks. Code runs in the
sandbox (:mod:`.sandbox`). Seeds: ``first + k`` for student k, away from the lab book's own seeds
(20261014–20261023) so each student's seed is one the lab has not measured.
"""

from __future__ import annotations

import base64
import html
import os
import stat
import tempfile
from pathlib import Path

from ..errors import AttnlabError
from ..io import read_json, write_json, write_text
from . import WorkbookError

FIRST_SEED = 20270001
MAX_STUDENTS = 500
LAB_SEEDS = range(20261014, 20261024)


class ClassError(WorkbookError):
    """A class folder that cannot be created or graded."""


# --------------------------------------------------------------------------------- new
def class_cost(seed: int = FIRST_SEED) -> dict:
    """Core-hours of one student's exercise 1 and 2 runs, from the lab's plan (attnlab.lab.plan)."""
    from ..lab import EXPERIMENTS
    from ..lab.plan import default_records_dir, make_plan
    from ..lab.runs import Scale
    from ..runner import Run
    from .measured import CLASS_D_HEADS, EX2_D_HEADS, expected_configs

    def hours(exercise: str, d_heads) -> float:
        cfgs = expected_configs(exercise, seed)
        runs = [
            Run(f"{exercise}_d{d}_{s}", cfgs[d].replace(scaled=s), group="class")
            for d in d_heads
            for s in (True, False)
        ]
        with tempfile.TemporaryDirectory() as root:
            plan = make_plan(
                "class",
                runs,
                Path(root),
                registry=EXPERIMENTS,
                records_dir=default_records_dir(Path(root)),
                scale=Scale(),
            )
        return plan.core_s / 3600

    full = tuple(d for d in EX2_D_HEADS if d != 112)  # the exercise's own six
    return {
        "ex1_core_h": round(hours("ex1", (32, 64)), 3),
        "ex2_full_core_h": round(hours("ex2", full), 3),
        "ex2_class_core_h": round(hours("ex2", CLASS_D_HEADS), 3),
        "ex2_class_d_heads": list(CLASS_D_HEADS),
        "ex2_full_d_heads": list(full),
        "from": "attnlab.lab.plan (calibrated on the committed timing records)",
    }


def sheet(students: list[dict], cost: dict) -> str:
    n = len(students)
    rows = "\n".join(f"| {s['id']} | {s['seed']} |" for s in students)
    per = cost["ex1_core_h"] + cost["ex2_class_core_h"]
    return f"""# 第 1 章练习 / Chapter 1 exercises

每位同学用自己的种子做练习 1 和 2，练习 3 和 4 交代码。把作业放进 `submissions/<你的编号>/`：
`ex3.py`（定义 `centroid(p)`）、`ex4.py`（定义 `AttentionDebugger`）、`ex1/` 与 `ex2/`（你的运行文件夹，每个里面有
`config.json`、`summary.json`、`metrics.jsonl`）。每一题的要求见 `attnlab exercise show ex1` … `ex4`，自己先检查：
`attnlab exercise check ex3 ex3.py`。

*Each student does exercises 1 and 2 with their own seed and hands in code for 3 and 4, in `submissions/<your id>/`:
`ex3.py`, `ex4.py`, `ex1/` and `ex2/` (run folders). `attnlab exercise show ID` says what each asks; check yourself with
`attnlab exercise check`.*

| 编号 / id | 种子 / seed |
|---|---|
{rows}

## 练习 1 / exercise 1

    attnlab train --set seed=你的种子 --set scaled=false --out ex1/small_unscaled
    attnlab train --set seed=你的种子 --out ex1/small_scaled
    attnlab train --set n_head=2 --set seed=你的种子 --set scaled=false --out ex1/nh2_unscaled
    attnlab train --set n_head=2 --set seed=你的种子 --out ex1/nh2_scaled

## 练习 2（课堂版）/ exercise 2, class size

只跑 d_head {", ".join(map(str, cost["ex2_class_d_heads"]))}（n_head 1、d_model = d_head、1500 步），缩放与不缩放各一次，
共 {2 * len(cost["ex2_class_d_heads"])} 次训练；实验室的数在这三个维度上从约 0 升到约 0.8，上升看得见。
*Only d_head {", ".join(map(str, cost["ex2_class_d_heads"]))} at the lab's 1500 steps (its intervals apply); the rise still shows.*

    attnlab train --set n_head=1 --set d_model=D --set seed=你的种子 [--set scaled=false] --out ex2/dD_scaled

## 算力 / cost (attnlab.lab.plan)

| | 每人 / per student | 全班 {n} 人 / class of {n} |
|---|---|---|
| 练习 1 / ex1 (4 runs) | {cost["ex1_core_h"]:.2f} 核时 | {n * cost["ex1_core_h"]:.1f} 核时 |
| 练习 2 完整 / ex2 full (12 runs) | {cost["ex2_full_core_h"]:.2f} 核时 | {n * cost["ex2_full_core_h"]:.1f} 核时 |
| 练习 2 课堂版 / ex2 class size | {cost["ex2_class_core_h"]:.2f} 核时 | {n * cost["ex2_class_core_h"]:.1f} 核时 |
| 课堂版合计 / class total | {per:.2f} 核时 | {n * per:.1f} 核时 |

（核时 = core-hours，{cost["from"]}）
"""


def new(out: str | Path, students: int, first_seed: int = FIRST_SEED, cost: dict | None = None) -> Path:
    """Write a class folder; refuse one that exists and is not empty (nothing is overwritten)."""
    if not 1 <= students <= MAX_STUDENTS:
        raise ClassError(f"--students 要在 1–{MAX_STUDENTS} 之间 / must be 1–{MAX_STUDENTS}, got {students}")
    seeds = range(first_seed, first_seed + students)
    if any(s in LAB_SEEDS for s in seeds):
        raise ClassError(
            f"种子 {first_seed}… 与实验室自己的种子重叠 / overlaps the lab's own seeds {LAB_SEEDS.start}–{LAB_SEEDS.stop - 1}"
        )
    d = Path(out)
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise ClassError(f"{d} 已存在且不是空文件夹 / exists and is not an empty folder; choose a new --out")
    roster = [{"id": f"s{k + 1:0{len(str(students))}d}", "seed": s} for k, s in enumerate(seeds)]
    cost = cost if cost is not None else class_cost(first_seed)
    (d / "submissions").mkdir(parents=True, exist_ok=True)
    for s in roster:
        (d / "submissions" / s["id"]).mkdir()
    write_json(d / "class.json", {"kind": "attnlab_class", "students": roster, "cost": cost})
    write_text(d / "assignment.md", sheet(roster, cost))
    return d


# ------------------------------------------------------------------------------- grade
def shown(name: str | bytes) -> str:
    """A file name as text, whatever its bytes (a non-UTF-8 name is escaped)."""
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return (
        name.encode("utf-8", "backslashreplace").decode("utf-8")
        if any(0xDC80 <= ord(c) <= 0xDCFF for c in name)
        else name
    )


def _safe_name(name: str) -> str:
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _kind(path: Path) -> str | None:
    """'file', 'dir', or None with the path not followed (a link, a FIFO, a device, missing)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return "special"


def _inside(path: Path, root: Path) -> bool:
    try:
        return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)
    except (OSError, ValueError):
        return False


def _grade_code(exercise: str, path: Path, root: Path, limits=None) -> dict:
    kind = _kind(path)
    if kind is None:
        return {"status": "missing", "lines": [f"没有交 / not handed in: {path.name}"]}
    if kind != "file" or not _inside(path, root):
        return {
            "status": "refused",
            "lines": [
                f"{path.name} 是{'链接' if kind == 'link' else '特殊文件'}，没有读 / is a "
                f"{kind}, not read; hand in a plain file"
            ],
        }
    from .ex3 import check as ex3
    from .ex4 import check as ex4

    try:
        run = ex3 if exercise == "ex3" else ex4
        ok, lines = run(str(path), watch=(root,)) if limits is None else run(str(path), limits=limits, watch=(root,))
    except AttnlabError as e:
        return {"status": "error", "lines": [str(e)]}
    return {"status": "right" if ok else "wrong", "lines": lines}


def _grade_runs(exercise: str, folder: Path, root: Path, seed: int) -> dict:
    kind = _kind(folder)
    if kind is None:
        return {"status": "missing", "lines": [f"没有交 / not handed in: {folder.name}/"]}
    if kind != "dir" or not _inside(folder, root):
        return {"status": "refused", "lines": [f"{folder.name} 是{kind}，没有读 / is a {kind}, not read"]}
    runs, notes = [], []
    for entry in sorted(os.listdir(folder)):
        p = folder / entry
        if _kind(p) != "dir":
            notes.append(f"{_safe_name(entry)}：不是运行文件夹，跳过 / not a run folder ({_kind(p)}), skipped")
            continue
        bad = [f for f in ("config.json", "summary.json") if _kind(p / f) != "file"]
        if bad:
            notes.append(f"{_safe_name(entry)}：{bad[0]} 缺失或是链接 / missing or a link, skipped")
            continue
        runs.append(str(p))
    if not runs:
        return {"status": "missing", "lines": notes + ["没有可以检查的运行 / no run folder to check"]}
    from .measured import check

    figure = None
    if exercise == "ex2":
        fd, figure = tempfile.mkstemp(suffix=".png")
        os.close(fd)
    try:
        ok, lines = check(exercise, runs, figure=figure)
    except AttnlabError as e:
        if figure:
            os.unlink(figure)
        return {"status": "error", "lines": notes + [str(e)]}
    seeds = {read_json(Path(r) / "config.json").get("seed") for r in runs}
    if seeds != {seed}:
        ok = False
        lines.append(f"种子不是分给你的 {seed} / the runs' seeds {sorted(seeds)} are not your assigned seed {seed}")
    lines = [line for line in lines if not line.startswith("图 / figure:")]  # embedded below, not a path
    out = {"status": "right" if ok else "wrong", "lines": notes + lines}
    if figure:
        if os.path.getsize(figure):
            out["figure"] = base64.b64encode(Path(figure).read_bytes()).decode()
        os.unlink(figure)
    return out


def grade(folder: str | Path, limits=None) -> Path:
    """Grade every student of a class folder; returns the report folder. ``limits``: the sandbox's
    (default: each check's own)."""
    root = Path(folder)
    roster_path = root / "class.json"
    if _kind(roster_path) != "file":
        raise ClassError(f"{root} 不是 attnlab class new 建的文件夹 / is not a class folder (no class.json)")
    roster = read_json(roster_path, error=ClassError)
    students = roster.get("students") if isinstance(roster, dict) else None
    if not isinstance(students, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and isinstance(s.get("seed"), int) for s in students
    ):
        raise ClassError(f"{roster_path}: students 不是 [{{id, seed}}] / is not a list of {{id, seed}}")
    subs = root / "submissions"
    results = []
    for s in students:
        d = subs / s["id"]
        if "/" in s["id"] or s["id"] in ("", ".", "..") or _kind(d) != "dir" or not _inside(d, root):
            results.append({"student": s, "items": {}, "problem": "没有提交文件夹 / no submission folder"})
            continue
        items = {
            "ex1": _grade_runs("ex1", d / "ex1", root, s["seed"]),
            "ex2": _grade_runs("ex2", d / "ex2", root, s["seed"]),
            "ex3": _grade_code("ex3", d / "ex3.py", root, limits),
            "ex4": _grade_code("ex4", d / "ex4.py", root, limits),
        }
        extra = sorted(_safe_name(n) for n in os.listdir(d) if n not in ("ex1", "ex2", "ex3.py", "ex4.py"))
        results.append({"student": s, "items": items, "extra": extra})
    report = root / "report"
    if _kind(report) not in (None, "dir"):
        raise ClassError(f"{report} 是{_kind(report)}，不写 / is a {_kind(report)}; remove it")
    report.mkdir(exist_ok=True)
    for r in results:
        write_text(report / f"{r['student']['id']}.html", student_html(r))
    write_text(report / "class.html", class_html(results))
    write_json(
        report / "grades.json",
        [
            {**r, "items": {k: {kk: vv for kk, vv in v.items() if kk != "figure"} for k, v in r["items"].items()}}
            for r in results
        ],
    )
    return report


# -------------------------------------------------------------------------------- HTML
CSS = """body{font-family:"Noto Sans CJK SC","Noto Sans CJK TC","PingFang SC","Microsoft YaHei",sans-serif;max-width:60em;
margin:2em auto;padding:0 1em;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;
vertical-align:top}.right{background:#e6f4ea}.wrong{background:#fdecea}.error,.refused{background:#fff4e5}
.missing{background:#f1f1f1}pre{white-space:pre-wrap;margin:0;font-size:13px}img{max-width:100%}"""
STATUS = {
    "right": "对 / right",
    "wrong": "还不对 / not yet",
    "error": "无法检查 / could not check",
    "refused": "拒绝读取 / refused",
    "missing": "未交 / missing",
}


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def student_html(r: dict) -> str:
    s = r["student"]
    parts = [f"<h1>{html.escape(s['id'])} · 种子 seed {s['seed']}</h1>"]
    if r.get("problem"):
        parts.append(f"<p>{html.escape(r['problem'])}</p>")
    for ex in ("ex1", "ex2", "ex3", "ex4"):
        it = r["items"].get(ex)
        if it is None:
            continue
        parts.append(
            f'<h2>{ex}</h2><table><tr><td class="{it["status"]}">{STATUS[it["status"]]}</td><td><pre>'
            + html.escape("\n".join(it["lines"]))
            + "</pre></td></tr></table>"
        )
        if it.get("figure"):
            parts.append(f'<p><img alt="ex2" src="data:image/png;base64,{it["figure"]}"></p>')
    if r.get("extra"):
        parts.append("<p>其他文件（未检查）/ other files (not checked): " + html.escape(", ".join(r["extra"])) + "</p>")
    return _page(f"{s['id']} — attnlab", "\n".join(parts))


def class_html(results: list[dict]) -> str:
    head = (
        "<tr><th>学生 / student</th><th>种子 / seed</th>"
        + "".join(f"<th>{e}</th>" for e in ("ex1", "ex2", "ex3", "ex4"))
        + "</tr>"
    )
    rows = []
    for r in results:
        s = r["student"]
        cells = "".join(
            f'<td class="{r["items"][e]["status"]}">{STATUS[r["items"][e]["status"]]}</td>'
            if e in r["items"]
            else "<td>—</td>"
            for e in ("ex1", "ex2", "ex3", "ex4")
        )
        rows.append(
            f'<tr><td><a href="{html.escape(s["id"])}.html">{html.escape(s["id"])}</a></td><td>{s["seed"]}</td>{cells}</tr>'
        )
    counts = {
        e: sum(1 for r in results if r["items"].get(e, {}).get("status") == "right")
        for e in ("ex1", "ex2", "ex3", "ex4")
    }
    summary = "；".join(f"{e} {counts[e]}/{len(results)} 对" for e in counts)
    body = (
        f"<h1>全班 / the class（{len(results)} 人）</h1><p>{summary}</p><table>{head}{''.join(rows)}</table>"
        f"<p>每一项怎么检查见 docs/workbook.md / how each item is checked: docs/workbook.md</p>"
    )
    return _page("class — attnlab", body)
