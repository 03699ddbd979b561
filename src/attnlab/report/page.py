"""A page of blocks (:class:`Page`: headings, paragraphs, tables, images) rendered twice, as Markdown and as
one self-contained HTML page, so both say the same thing; any report built from a result JSON can use it."""

from __future__ import annotations

import html
import re
from pathlib import Path

from .selfcontained import MONO_STACK, SANS_STACK, document, image_uri


class Page:
    """The blocks of a page, appended in order: heading, paragraph, table, image (under ``fig_rel``),
    and parts already rendered."""

    def __init__(self, fig_rel: str):
        self.blocks: list[tuple] = []
        self.fig_rel = fig_rel

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", level, text))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, head: list, rows: list[list], detail: tuple[int, ...] = ()) -> None:
        self.blocks.append(("table", head, rows, tuple(detail)))

    def img(self, name: str, alt: str) -> None:
        self.blocks.append(("img", f"{self.fig_rel}/{name}", alt))

    def rendered(self, markdown: str, page: str) -> None:
        """A part another renderer wrote twice (the lab book's claims): its Markdown and its HTML."""
        self.blocks.append(("rendered", markdown, page))


def md_row(cells) -> str:
    """A Markdown table row: a | inside a cell (|Δ|, ‖q‖) escaped and line breaks joined, so it stays one cell."""
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def to_markdown(blocks: list[tuple]) -> str:
    out = []
    for b in blocks:
        if b[0] == "h":
            out.append("#" * b[1] + " " + b[2])
        elif b[0] == "p":
            out.append(b[1])
        elif b[0] == "img":
            out.append(f"![{b[2]}]({b[1]})")
        elif b[0] == "rendered":
            out.append(b[1])
        elif b[0] == "table":
            out.append(md_row(b[1]))
            out.append("|" + "---|" * len(b[1]))
            out.extend(md_row(row) for row in b[2])
        out.append("")
    return "\n".join(out)


def _inline(text: str) -> str:
    s = html.escape(text)
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


_VERDICT_SPAN = re.compile(r"(✓ PASS|✗ FAIL|？ INCONCLUSIVE)")


def _cell(text: str) -> str:
    return _VERDICT_SPAN.sub(lambda m: f'<span class="{m.group(1).split()[1]}">{m.group(1)}</span>', _inline(text))


def _html_table(head: list, rows: list[list], detail: tuple[int, ...] = ()) -> str:
    """A table; the ``detail`` columns (long text) go on a second line under each row, one cell
    across the whole table, each labelled with its header: the row stays within the page."""
    main = [i for i in range(len(head)) if i not in detail]
    out = ["<table><thead><tr>" + "".join(f"<th>{_inline(str(head[i]))}</th>" for i in main) + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{_cell(str(row[i]))}</td>" for i in main) + "</tr>")
        if detail:
            parts = "".join(
                f"<div><span class=label>{_inline(str(head[i]))}：</span> {_cell(str(row[i]))}</div>"
                for i in detail
                if str(row[i]).strip()
            )
            out.append(f'<tr class=detail><td colspan="{len(main)}">{parts}</td></tr>')
    return "".join(out) + "</tbody></table>"


CSS = f"""
body {{ font-family: {SANS_STACK}; max-width: 1200px; margin: 2em auto;
       padding: 0 1em; line-height: 1.55; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.86em; max-width: 100%; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; vertical-align: top; }}
th {{ background: #f3f3f3; }}
tr.detail td {{ border-top: none; background: #fafafa; font-size: 0.95em; }}
tr.detail .label {{ color: #555; }}
.PASS {{ color: #1b7a2e; font-weight: bold; }} .FAIL {{ color: #b02a1a; font-weight: bold; }}
.INCONCLUSIVE {{ color: #8a6d00; font-weight: bold; }}
img {{ max-width: 100%; }} figure {{ margin: 1em 0; }} figcaption {{ color: #555; font-size: 0.9em; }}
code {{ font-family: {MONO_STACK}; background: #f5f5f5; padding: 0 0.2em; }}"""


def to_html(blocks: list[tuple], title: str, fig_dir: Path | None = None, css: str = "") -> str:
    """One self-contained page titled ``title``: the figures under ``fig_dir`` embedded as data: URIs,
    the fonts cut to the page's own characters (see :mod:`attnlab.report.selfcontained`)."""
    body = []
    for b in blocks:
        if b[0] == "h":
            body.append(f"<h{b[1]}>{_inline(b[2])}</h{b[1]}>")
        elif b[0] == "p":
            body.append(f"<p>{_inline(b[1])}</p>")
        elif b[0] == "img":
            src = image_uri(Path(fig_dir) / Path(b[1]).name) if fig_dir is not None else None
            body.append(
                f'<figure><img src="{src}" alt="{html.escape(b[2])}">'
                f"<figcaption>{html.escape(b[2])}</figcaption></figure>"
                if src
                else f"<p>图缺失 / figure missing: {html.escape(Path(b[1]).name)}</p>"
            )
        elif b[0] == "table":
            body.append(_html_table(b[1], b[2], b[3] if len(b) > 3 else ()))
        elif b[0] == "rendered":
            body.append(b[2])
    return document(title, "\n".join(body), CSS + css)
