"""Chinese in figures renders from the shipped font alone, on any machine."""

import ast
from pathlib import Path

from matplotlib import font_manager

from attnlab.fonts import EXTB_FILE, FONT_FILE, gb2312_level1, missing_glyphs, use_cjk_font

SRC = Path(__file__).resolve().parents[1] / "src" / "attnlab"
# the modules that draw matplotlib figures (failures writes a Markdown table, no figure)
FIGURE_MODULES = [
    "report/figures.py",
    "lab/plot.py",
    "lab/sweep.py",
    "lab/heads.py",
    "lab/portrait.py",
    # every lab-book entry that draws its own figures (Experiment.draw)
    *sorted(str(p.relative_to(SRC)) for p in (SRC / "lab").glob("*.py") if "def draw(" in p.read_text("utf-8")),
]


def _strings(path: Path) -> str:
    """Every string literal of a module but its docstrings (the text a figure may show)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr)
    }
    return "".join(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    )


def test_every_label_character_is_in_the_shipped_font():
    text = "".join(_strings(SRC / m) for m in FIGURE_MODULES)
    wanted = "".join(c for c in text if ord(c) > 127 and c.isprintable())
    assert missing_glyphs(wanted) == set()


def test_the_corpus_is_covered():
    corpus = (SRC / "data" / "corpus.txt").read_text(encoding="utf-8")
    assert missing_glyphs(corpus) == set()  # every character, the 14 Extension B ones by the supplement
    # Noto Sans CJK itself lacks those 14 (rare, never in the vocabulary): the supplement draws them
    lacking = missing_glyphs(corpus, (FONT_FILE,))
    assert len(lacking) == 14 and all(ord(c) > 0xFFFF for c in lacking)
    assert missing_glyphs(gb2312_level1()) == set()


def test_figure_text_with_extension_b_characters_draws_every_glyph(tmp_path):
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpus = (SRC / "data" / "corpus.txt").read_text(encoding="utf-8")
    use_cjk_font()
    text = "".join(sorted(missing_glyphs(corpus, (FONT_FILE,)))) + "舉頭望明月"
    fig, ax = plt.subplots()
    ax.set_title(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        fig.savefig(tmp_path / "t.png")
    plt.close(fig)


def test_matplotlib_uses_the_shipped_file_not_a_system_font():
    name = use_cjk_font()
    assert name == "Attnlab CJK TC"  # its own family name: no system font can stand in
    found = font_manager.findfont(font_manager.FontProperties(family=name), fallback_to_default=False)
    assert Path(found).resolve() == FONT_FILE.resolve()
    assert (FONT_FILE.parent / "OFL.txt").is_file()
    assert EXTB_FILE.name in (FONT_FILE.parent / "OFL.txt").read_text(encoding="utf-8")


def test_simplified_text_typed_by_readers_renders():
    assert missing_glyphs("床前明月光，疑是地上霜。举头望明月，低头思故乡。权重熵 雅可比范数") == set()
