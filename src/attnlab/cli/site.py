"""``attnlab site``: the playground as a static site (the model runs in the reader's browser)."""

from __future__ import annotations

import sys

from .common import path_arg


def add_parser(sub):
    p = sub.add_parser(
        "site",
        help="静态网站：不需要 Python 的实验台 / the playground as a static site, no Python behind it",
        description="把实验台写成一个静态网站：软查表、实验 1-1、实验 1-2（四个随包附带的案例模型，在浏览器里用 "
        "onnxruntime-web 运行）、时间线、训练曲线、案例报告和全章实验。任何静态托管都能直接提供这个文件夹"
        "（GitHub Pages、python -m http.server），不连接任何外部网站。\n"
        "Write the playground as a static site: soft lookup, experiment 1-1, experiment 1-2 on the four case "
        "models that ship with attnlab (run in the browser by onnxruntime-web), the timeline, the training "
        "curves, the case report and the lab book. Any static host serves the folder as it is (GitHub Pages, "
        "python -m http.server); the pages contact no other host.",
    )
    p.add_argument(
        "--out",
        required=True,
        type=path_arg,
        help="输出文件夹：新的、空的，或以前生成、之后没有放进别的文件的网站（整个替换）；其他文件夹一律拒绝，不会被覆盖 / "
        "output folder: new, empty, or an earlier site holding nothing else (replaced whole); any other folder "
        "is refused, never overwritten",
    )
    return p


def main(args) -> int:
    from ..web.site import build_site  # fastapi (the web extra) and torch: only now

    result = build_site(args.out)
    mb = result.bytes / 1e6
    print(
        f"网站已写入 / site written: {result.out} ({result.files} 个文件 files, {mb:.1f} MB, "
        f"{len(result.runs)} 个模型 models, {result.seconds:.0f} s)"
    )
    print(
        f"本地预览 / preview: python -m http.server --directory {result.out} 8000  →  http://127.0.0.1:8000/\n"
        "放到网上 / put it online: docs/teaching.md（仓库里 / in the repository）"
    )
    if result.note:  # an earlier site moved aside but not deleted
        print(f"attnlab: note: {result.note}", file=sys.stderr)
    return 0
