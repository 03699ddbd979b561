"""``attnlab class new --students N --out DIR`` and ``attnlab class grade DIR``: the workbook for a class.

Thin entry point over :mod:`attnlab.workbook.classroom` (the module is named ``class`` for the
command; nothing imports it by name).
"""

from __future__ import annotations


def add_parser(subparsers):
    p = subparsers.add_parser(
        "class",
        help="课堂：给每位学生种子与作业单，批改一个文件夹的作业 / a class: seeds and sheets, grading a folder",
        description="课堂：new 写出每位学生的种子和作业单（中文在前），grade 检查一个文件夹里的作业，给每位学生和全班各写一页 HTML。"
        "\nA class: new writes each student's seed and the assignment sheet; grade checks a folder of submissions and "
        "writes one self-contained HTML page per student and one for the class.",
    )
    sub = p.add_subparsers(dest="class_cmd", required=True, parser_class=type(p), help="要做的 / what to do")
    new = sub.add_parser(
        "new",
        help="新建一个班 / a new class folder",
        description="新建一个班的文件夹：种子、作业单、提交目录。\nWrite a new class folder: seeds, the sheet, submission folders.",
    )
    new.add_argument("--students", type=int, required=True, metavar="N", help="学生人数 / number of students")
    new.add_argument("--out", required=True, metavar="DIR", help="新文件夹（须不存在或为空）/ a new or empty folder")
    new.add_argument(
        "--first-seed", type=int, default=20270001, metavar="S", help="第一位学生的种子 / the first student's seed"
    )
    grade = sub.add_parser(
        "grade",
        help="批改作业 / grade the submissions",
        description="批改 DIR/submissions 里的作业，写出 DIR/report/。\nGrade DIR/submissions and write DIR/report/.",
    )
    grade.add_argument("dir", metavar="DIR", help="attnlab class new 建的文件夹 / a folder made by attnlab class new")
    return p


def main(args) -> int:
    from attnlab.workbook import classroom

    if args.class_cmd == "new":
        d = classroom.new(args.out, args.students, args.first_seed)
        print(f"班级文件夹 / class folder: {d}（作业单 / sheet: {d / 'assignment.md'}）")
        return 0
    report = classroom.grade(args.dir)
    print(f"批改完成 / graded: {report / 'class.html'}")
    return 0
