"""Figures are written as PNG and SVG; the SVG draws its Chinese as outlines (no font needed)."""

import xml.etree.ElementTree as ET

import numpy as np

from attnlab.lab.plot import plot_attention_maps

SVG = "{http://www.w3.org/2000/svg}"


def test_attention_maps_figure_writes_png_and_outlined_svg(tmp_path):
    chars = list("秦川雄帝宅")
    p = np.tril(np.ones((5, 5)))
    p = (p / p.sum(1, keepdims=True)).tolist()
    path = plot_attention_maps({"layers": [[p, p]], "chars": chars, "text": "秦川雄帝宅"}, tmp_path / "maps.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg_text = (tmp_path / "maps.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg_text)
    assert root.tag == f"{SVG}svg"
    assert not [t for t in root.iter(f"{SVG}text")]  # no text that needs a font ...
    glyphs = [g for g in root.iter(f"{SVG}path") if "-Regular-" in (g.get("id") or "")]
    assert len(glyphs) >= len(set("秦川雄帝宅层头"))  # ... but one outline per glyph
    assert "秦川雄帝宅" in svg_text  # named in matplotlib's comments
