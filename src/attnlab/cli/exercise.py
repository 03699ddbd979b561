"""``attnlab exercise list|show ID|check ID FILE…``: the chapter's workbook.

Thin entry point over :mod:`attnlab.workbook`. ``check`` exits 0 when the attempt is right, 1 when
it ran and is not right yet (the lines say what to change), 2 on bad input (a file that does not
import, hangs, has the wrong signature, a run folder from another config …).
"""

from __future__ import annotations

import sys


def add_parser(subparsers):
    p = subparsers.add_parser(
        "exercise",
        help="练习册：练习、自测与检查点 / the workbook: exercises, self-test, checkpoints",
        description="第 1 章的练习（ex1–ex4）、自测（q1–q10）与“停下来想一想”（cp1–cp18）：列出、显示、检查你的代码或运行。"
        "\nThe chapter's exercises, self-test questions and checkpoints: list them, show one, check your code or runs.",
    )
    sub = p.add_subparsers(dest="exercise_cmd", required=True, parser_class=type(p), help="要做的 / what to do")
    sub.add_parser(
        "list",
        help="按章节顺序列出 / list in chapter order",
        description="按章节顺序列出全部 32 项。\nEvery item, in chapter order.",
    )
    show = sub.add_parser(
        "show",
        help="一项的原话、做法与检查 / one item: words, what to do, how checked",
        description="一项：书中原话、要做什么、在哪里、怎么检查。\nOne item: the chapter's words, what to do, where, how it is checked.",
    )
    show.add_argument("id", help="一项的 id / the item id: ex1–ex4, q1–q10, cp1–cp18")
    check = sub.add_parser(
        "check",
        help="检查你的代码（ex3、ex4）或运行文件夹（ex1、ex2）/ check your code (ex3, ex4) or run folders (ex1, ex2)",
        description="检查练习：ex3 FILE（定义 centroid）、ex4 FILE（定义 AttentionDebugger）、ex1 RUN_DIR…、ex2 RUN_DIR…。"
        "退出码：0 对，1 还不对，2 输入有问题。"
        "\nCheck your code for exercises 3 and 4, your run folders for exercises 1 and 2; "
        "exit 0 right, 1 not yet, 2 bad input.",
    )
    check.add_argument("id", help="要检查的练习 / the exercise: ex1, ex2, ex3 or ex4")
    check.add_argument("files", nargs="+", metavar="FILE", help="你的文件或运行文件夹 / your file or run folders")
    check.add_argument("--figure", metavar="PNG", help="ex2：把你的临界曲线画到这里 / ex2: draw your curve here")
    return p


def main(args) -> int:
    from attnlab import workbook as wb

    if args.exercise_cmd == "list":
        for it in wb.items():
            print(f"{it['id']:<5} {wb.label(it):<12} {it['section']:<10} [{it['check']['kind']}] {wb.title(it)}")
        return 0
    it = wb.item(args.id)
    if args.exercise_cmd == "show":
        print(f"{it['id']}: {wb.label(it)}（{it['section']}）")
        print()
        print("\n".join("  " + line for line in it["quote"].split("\n")))
        print()
        print(f"要做什么 / what to do: {it['do']}")
        for w in it["where"]:
            print(f"在哪里 / where: {w}")
        print(f"怎么检查 / how checked: {it['check']['how']}")
        for link in it["check"].get("links", []):
            print(f"见 / see: {link['text']} ({link['href']})")
        for note in it.get("notes", []):
            print(f"书中的疏漏 / the chapter slipped: {note}")
        return 0
    from attnlab.workbook.checks import check

    result = check(args.id, args.files, figure=args.figure)
    for line in result.lines:
        print(line)
    sys.stdout.flush()
    return 0 if result.ok else 1
