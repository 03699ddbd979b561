"""The train page alone, as a static folder: what the browser tests and the bench serve."""

from __future__ import annotations


def write_train_page(out) -> None:
    """The train page alone, as ``attnlab site`` writes it (its scripts, the vendored runtimes and
    train/), into ``out``: what the browser tests and ``scripts/bench_browser_train.py`` serve."""
    import shutil
    from pathlib import Path

    from . import site
    from .trainexport import write_site_files

    out = Path(out)
    (out / "static").mkdir(parents=True, exist_ok=True)
    (out / "train.html").write_text(site.page_html("/train", "train.html"), encoding="utf-8")
    for name in ("common.js", "export.js", "train.js", "train-worker.js", "style.css"):
        text = (site.STATIC / name).read_text(encoding="utf-8")
        if name.endswith(".js"):
            text = site.relative_links(text, name, script=True)
        (out / "static" / name).write_text(text, encoding="utf-8")
    shutil.copyfile(site.SITE_STATIC / "site.js", out / "static" / "site.js")
    shutil.copytree(site.STATIC / "fonts", out / "static" / "fonts", dirs_exist_ok=True)
    for folder in ("tfjs", "fflate", "onnxruntime-web", "js-sha256"):
        (out / "static" / "vendor" / folder).mkdir(parents=True, exist_ok=True)
        for f in site.VENDORED[folder]:
            shutil.copyfile(site.VENDOR / folder / f, out / "static" / "vendor" / folder / f)
    write_site_files(out / "train")
