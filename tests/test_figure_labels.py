"""The committed figures say what they show: Chinese first with English beside, the model and step
of every attention map, the web playground's colours, every seed where the data hold several, a
readable axis and a legend off the data; and every character they draw is in the shipped font."""

import json
import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from attnlab.fonts import missing_glyphs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")


def _doc(eid: str) -> dict:
    return json.loads((ROOT / "data" / "lab_book" / f"{eid}.json").read_text(encoding="utf-8"))


def _texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    return [t for t in out if t.strip()]


def _drawable(fig):
    text = "".join(_texts(fig))
    assert missing_glyphs(text) == set(), "a label the shipped font cannot draw (an empty box)"


def _bilingual(label: str) -> bool:
    """Chinese first, English beside: a CJK character before the first Latin word."""
    first_cjk, first_latin = CJK.search(label), re.search(r"[A-Za-z]{3,}", label)
    return bool(first_cjk and first_latin and first_cjk.start() < first_latin.start())


def test_markov_floor_labels_models_in_chinese_first():
    from attnlab.lab.markov import draw, markov_label

    assert markov_label("case small_scaled seed 20261014").startswith("案例 / case · 小模型")
    assert "不缩放 / unscaled" in markov_label("sweep d_head=128 unscaled")
    assert markov_label("qk_norm small #0") == "qk_norm small #0"  # another form is kept as it is
    fig = draw(_doc("markov")["results"])["floor.png"]
    try:
        ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert ticks and all(_bilingual(t) for t in ticks), [t for t in ticks if not _bilingual(t)]
        _drawable(fig)
    finally:
        plt.close(fig)


def test_sinks_share_legend_is_chinese_first():
    from attnlab.lab.sinks import draw

    fig = draw(_doc("sinks")["results"])["share.png"]
    try:
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert "缩放 / scaled" in legend and "不缩放 / unscaled" in legend
        assert all(_bilingual(t) or t.startswith("阈值") for t in legend), legend
        _drawable(fig)
    finally:
        plt.close(fig)


def test_dynamics_has_a_readable_step_axis_and_its_legend_off_the_data():
    from attnlab.lab.dynamics import draw

    r = _doc("dynamics")["results"]
    fig = draw(r)["prev.png"]
    try:
        ax = fig.axes[0]
        fig.canvas.draw()
        shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert shown == [str(s) for s in r["steps"]]  # every kept step named, not one 10² tick
        legend = ax.get_legend()
        renderer = fig.canvas.get_renderer()
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1  # beside the axes
        labels = [t.get_text() for t in legend.get_texts()]
        assert len(labels) <= 8 < 2 * len(r["seeds"])  # not one entry per seed and kind
        assert all(_bilingual(t) for t in labels), labels
        _drawable(fig)
    finally:
        plt.close(fig)


def test_attention_maps_use_the_web_colours():
    from attnlab.lab.plot import WEB_HEAT, WEB_MASKED, WEB_UNKNOWN, web_cmap

    js = (ROOT / "src" / "attnlab" / "web" / "static" / "common.js").read_text(encoding="utf-8")
    rgb = [int(x) for x in re.findall(r"255 - t \* \(255 - (\d+)\)", js)]
    assert len(rgb) == 3, "web heat() changed shape: update WEB_HEAT in lab/plot.py"
    assert WEB_HEAT == ("#ffffff", "#{:02x}{:02x}{:02x}".format(*rgb))
    maps_js = (ROOT / "src" / "attnlab" / "web" / "static" / "maps.js").read_text(encoding="utf-8")
    assert WEB_MASKED in maps_js and WEB_UNKNOWN in maps_js
    cmap = web_cmap()
    assert to_hex(cmap(0.0)) == WEB_HEAT[0] and to_hex(cmap(1.0)) == WEB_HEAT[1]


@pytest.mark.parametrize(
    "model, words",
    [
        (
            {"run": "small_scaled_s7", "step": 1500, "d_model": 128, "n_head": 4, "scaled": True, "seed": 7},
            ["small_scaled_s7", "d_head 32", "缩放 / scaled", "第 1500 步 / step 1500"],
        ),
        (None, ["模型与步数未记录 / model and step not recorded"]),
    ],
)
def test_attention_maps_title_names_model_and_step(tmp_path, model, words):
    import numpy as np

    from attnlab.lab.plot import plot_attention_maps

    p = np.tril(np.ones((5, 5)))
    p = (p / p.sum(1, keepdims=True)).tolist()
    maps = {
        "layers": [[p, p]],
        "chars": list("秦川雄帝宅"),
        "text": "秦川雄帝宅",
        **({"model": model} if model else {}),
    }
    plot_attention_maps(maps, tmp_path / "maps.png")
    svg = (tmp_path / "maps.svg").read_text(encoding="utf-8")
    for w in words:
        assert w in svg, w


def test_committed_figures_carry_their_labels():
    maps = json.loads((ROOT / "figures" / "attention_maps.json").read_text(encoding="utf-8"))
    svg = (ROOT / "figures" / "attention_maps.svg").read_text(encoding="utf-8")
    m = maps["model"]
    assert m["run"] in svg and f"第 {m['step']} 步" in svg and f"d_head {m['d_model'] // m['n_head']}" in svg
    sweep = (ROOT / "figures" / "sweep_critical_dimension.svg").read_text(encoding="utf-8")
    assert "练习二" in sweep and "每个种子 / each seed" in sweep and "95%" in sweep


def test_the_sweep_figure_shows_every_seed_of_exercise_2(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("redraw_figures", ROOT / "scripts" / "redraw_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = _doc("exercise2")
    ref = mod.exercise2_reference(doc)
    assert {d: len(v) for d, v in ref["gaps"].items()} == {
        x["d_head"]: len(x["seeds"]) for x in doc["results"]["summary"]
    }
    assert missing_glyphs(ref["label"] + ref["note"]) == set()
    from attnlab.lab.plot import plot_sweep_gap, sweep_seed_gaps

    sweep = json.loads((ROOT / "data" / "sweep_critical_dimension.json").read_text(encoding="utf-8"))
    gaps = sweep_seed_gaps(sweep)
    assert all(len(v) == sweep["seeds"] for v in gaps.values())  # the committed sweep: one seed
    assert gaps[256][0] == pytest.approx(next(p["gap"] for p in sweep["gap"] if p["d_head"] == 256))
    out = plot_sweep_gap(sweep, tmp_path / "s.png", reference=ref)
    assert out.stat().st_size > 10_000


def test_maps_model_refuses_a_portrait_of_other_text():
    import importlib.util

    spec = importlib.util.spec_from_file_location("redraw_figures", ROOT / "scripts" / "redraw_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    portrait = json.loads((ROOT / "data" / "head_portrait.json").read_text(encoding="utf-8"))
    maps = {"text": portrait["eval"]["texts"][0]}
    m = mod.maps_model(maps, portrait)
    assert m["step"] == portrait["source"]["step"] and m["seed"] == portrait["config"]["seed"]
    with pytest.raises(SystemExit, match="not from the same"):
        mod.maps_model({"text": "別的詩"}, portrait)
