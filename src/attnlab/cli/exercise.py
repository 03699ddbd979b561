"""``attnlab exercise list|show ID``: the chapter's workbook.

Thin entry point over :mod:`attnlab.workbook`."""

from __future__ import annotations


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
    raise AssertionError(args.exercise_cmd)
