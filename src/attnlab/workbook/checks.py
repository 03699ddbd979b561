"""``attnlab exercise check ID FILE…``: one entry for the four exercises' checks."""

from __future__ import annotations

from dataclasses import dataclass

from . import WorkbookError, item


@dataclass
class Result:
    ok: bool
    lines: list[str]


def check(item_id: str, files: list[str], figure: str | None = None) -> Result:
    it = item(item_id)
    if it["id"] in ("ex3", "ex4"):
        if len(files) != 1:
            raise WorkbookError(f"{it['id']} 检查一个 .py 文件 / checks one .py file, got {len(files)}")
        if it["id"] == "ex3":
            from .ex3 import check as run
        else:
            from .ex4 import check as run
        ok, lines = run(files[0])
        return Result(ok, lines)
    if it["id"] in ("ex1", "ex2"):
        from .measured import check as judge

        ok, lines = judge(it["id"], files, figure=figure)
        return Result(ok, lines)
    raise WorkbookError(
        f"{it['id']} 在浏览器的练习册页面上做 / is done on the workbook page (attnlab serve → /workbook#{it['id']}); "
        f"`attnlab exercise check` checks ex1–ex4"
    )
