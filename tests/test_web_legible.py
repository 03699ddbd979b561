"""Legible in class, without a browser: the lab book's tables show numbers, not JSON; the
timeline's run list carries each run's shape, so the default twin can match it."""

from __future__ import annotations

import json
import re

from attnlab.report.lab_book import entry_html
from attnlab.web.timeline import list_runs


def claim(measured, expected="a band") -> dict:
    return {
        "id": "x",
        "kind": "book",
        "section": "§1.4",
        "statement": "s",
        "verdict": "PASS",
        "pass": True,
        "expected": expected,
        "measured": measured,
    }


def doc(claims, rows=None) -> dict:
    return {
        "title": "t",
        "status": "done",
        "statement": "s",
        "command": "attnlab book",
        "results": {"headers": ["a", "b"], "rows": rows or []},
        "claims": claims,
        "figures": [],
    }


def test_book_tables_show_numbers_not_json(tmp_path):
    page = entry_html(
        "x",
        doc([claim("val_gap: 0.244, 0.0482 (mean 0.146 ± 0.14); unigram_entropy: 5.514")], rows=[["r", [2.1, 2.2]]]),
        tmp_path,
    )
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page)
    assert "2.1, 2.2" in cells and not any(c.lstrip().startswith(("[", "{")) for c in cells)
    assert "val_gap: 0.244, 0.0482 (mean 0.146 ± 0.14)" in page and "unigram_entropy: 5.514" in page
    page = entry_html("x", doc([claim({"slope": 0.5006, "d32": 1.144}, expected=[0.45, 0.55])]), tmp_path)
    assert "slope: 0.5006" in page and "0.45, 0.55" in page and '{"slope"' not in page


def test_the_run_list_carries_each_run_s_shape(tmp_path):
    for name, n_layer in (("a_unscaled", 1), ("a_scaled", 2)):
        d = tmp_path / name
        d.mkdir()
        (d / "metrics.jsonl").write_text('{"step": 0, "loss": 7.0}\n', encoding="utf-8")
        cfg = {"n_layer": n_layer, "n_head": 2, "d_model": 16, "block_size": 16, "max_steps": 3}
        (d / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    shapes = {r["name"]: r["shape"] for r in list_runs(tmp_path)}
    assert shapes == {"a_unscaled": [1, 2, 16, 16], "a_scaled": [2, 2, 16, 16]}


def test_one_notation_for_the_jacobian_norm_and_the_scale():
    """The pages write ‖J‖_F and √d_k one way: with HTML subscripts in a page's text, with an underscore
    in a chart's title or a script's string (drawn on a canvas, where there is no <sub>); never a bare
    ‖J‖ or √d."""
    from attnlab.web.site import STATIC

    bad = []
    for path in sorted(STATIC.glob("*.html")):
        text = path.read_text(encoding="utf-8")
        bad += [
            f"{path.name}: {m.group(0)!r}"
            for m in re.finditer(r"‖J‖(?!<sub>F</sub>).{0,6}|√d(?!<sub>k</sub>).{0,6}", text)
        ]
    for path in sorted(STATIC.glob("*.js")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("//"):
                continue
            bad += [f"{path.name}: {m.group(0)!r}" for m in re.finditer(r"‖J‖(?!_F).{0,6}|√d(?!_k).{0,6}", line)]
    assert not bad, bad
