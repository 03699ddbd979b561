"""Exercise 3 (§1.20.3): check a student's ``centroid(p)`` on the shipped models' attention.

Inputs: the attention of every layer and head of the four case models that ship with attnlab
(``attnlab/data/case_runs/case``, each file checked against its manifest's sha256) on the chapter's
probe texts: the head portrait's three 24-character windows of the validation split (§1.8.5, "3 首诗
× 24 个位置") and the book's prompt line of §1.6 (the runs' probe). The student's function runs in its
own process (:mod:`.sandbox`) and sees only the (T, T) matrices; attnlab's own answer
(:mod:`.solutions.centroid`) stays here.

Tolerance: |student − reference| ≤ 1e-6 + 1e-6·|reference| on both numbers. A float64 computation in
any order of summation agrees to about 1e-12; the tolerance is there for that, not for float32 (which
is off by about 1e-6 at distances near 20: the message then names the map that is off).
"""

from __future__ import annotations

import hashlib
import io
import json
from functools import cache
from pathlib import Path

import numpy as np

from ..corpus import PACKAGE_DATA
from . import WorkbookError
from .sandbox import Limits, SandboxError, read_source, run
from .solutions.centroid import centroid as reference

SHIPPED = PACKAGE_DATA / "case_runs"
ATOL = RTOL = 1e-6
# the head portrait's evaluation set (three 24-character windows of the validation split, as
# `attnlab heads` cuts them; tests/workbook/test_ex3.py checks they still are) and the runs' probe
PROBE_TEXTS = (
    "清輝飛鵲鑑，新影學蛾眉。\n皎潔臨疎牖，玲瓏鑒薄帷",
    "冬盡今宵促，年開明日長。\n冰銷出鏡水，梅散入風香",
    "尊開疎竹葉，管應落梅花。\n興闌相顧起，流水送香車",
    "秦川雄帝宅，函谷壯皇居。",
)
LIMITS = Limits(seconds=30.0)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@cache
def patterns() -> tuple[tuple[str, np.ndarray], ...]:
    """(label, (T, T) float64 attention) for every shipped model, layer, head and probe text."""
    import torch

    from ..checkpoint import load_checkpoint

    manifest = json.loads((SHIPPED / "manifest.json").read_text(encoding="utf-8"))["runs"]
    out = []
    for name in sorted(manifest):
        ckpt = SHIPPED / "case" / name / "ckpt.pt"
        want = manifest[name]["files"]["ckpt.pt"]["sha256"]
        if not ckpt.is_file() or _sha256(ckpt) != want:
            raise WorkbookError(
                f"随包模型 {ckpt} 缺失或已损坏 / the shipped model {ckpt} is missing or damaged (sha256 differs "
                f"from its manifest); reinstall attnlab or `git checkout src/attnlab/data/case_runs`"
            )
        model, tok, _ = load_checkpoint(ckpt)
        for t, text in enumerate(PROBE_TEXTS):
            idx = torch.tensor([tok.encode(text)], dtype=torch.long)
            with torch.no_grad():
                maps = model.attention_patterns(idx)  # per layer (1, nh, T, T)
            for layer, p in enumerate(maps):
                for head in range(p.shape[1]):
                    label = f"模型 model {name}, 层 layer {layer}, 头 head {head}, 文本 text {t + 1}（{text[:6]}…）"
                    out.append((label, p[0, head].double().numpy()))
    return tuple(out)


def close(got: float, want: float) -> bool:
    return abs(got - want) <= ATOL + RTOL * abs(want)


def diagnose(p: np.ndarray, got: tuple[float, float]) -> str:
    """What a wrong (mean, spread) most likely did, in words a student can act on."""
    i = np.arange(p.shape[0])
    dist = (p * np.clip(i[:, None] - i[None, :], 0, None)).sum(1)
    tries = [
        (
            dist[1:].mean(),
            dist[1:].std(ddof=1),
            "标准差用了 ddof=1（除以 n−1）；练习册要的是总体标准差 np.std（ddof=0）"
            " / you divided by n−1; the workbook asks the population std (ddof=0)",
        ),
        (
            dist[1:].mean(),
            dist[1:].var(),
            "返回的是方差；练习册要的是标准差 / you returned the variance, the workbook asks the standard deviation",
        ),
        (
            dist.mean(),
            dist.std(),
            "把第 0 行（距离恒为 0）也算进去了；只统计 i = 1 … T−1 / you included row 0; use i = 1 … T−1",
        ),
        (
            dist.mean(),
            dist.std(ddof=1),
            "把第 0 行算进去了，标准差还用了 ddof=1 / you included row 0 and divided by n−1",
        ),
        (
            -dist[1:].mean(),
            dist[1:].std(),
            "符号反了：距离是 i − j（向左为正）/ the sign is flipped: the distance is i − j",
        ),
    ]
    for m, s, why in tries:
        if close(got[0], float(m)) and close(got[1], float(s)):
            return why
    if close(got[1], reference(p)[0]) and close(got[0], reference(p)[1]):
        return "均值与标准差的顺序反了：返回 (均值, 标准差) / mean and spread swapped: return (mean, std)"
    if close(got[0], float(dist[1:].mean())):
        return "均值对了，离散程度不对：对 i = 1 … T−1 的 dist 取 np.std / the mean is right, the spread is not"
    return (
        "均值不对：dist_i = Σ_j (i − j)·p[i][j]，j 从 0 到 i / the mean is off: dist_i = Σ_j (i − j)·p[i][j], j = 0 … i"
    )


def check(path: str, limits: Limits = LIMITS, watch: tuple[Path, ...] = ()) -> tuple[bool, list[str]]:
    source = read_source(path)
    pats = patterns()
    buf = io.BytesIO()
    np.savez(buf, **{f"m{k}": p for k, (_, p) in enumerate(pats)})
    keys = [f"m{k}" for k in range(len(pats))]
    outcome = run(
        "ex3",
        source,
        {"patterns.npz": buf.getvalue(), "keys.json": json.dumps(keys).encode()},
        limits,
        watch=(Path(path).resolve().parent, *watch),
        what=f"{path}",
    )
    r = outcome.result
    where = dict(zip(keys, (label for label, _ in pats)))
    if r["status"] == "import":
        raise SandboxError(f"{path} 导入时出错 / failed to import: {r.get('detail')}")
    if r["status"] in ("missing", "signature"):
        raise SandboxError(f"{path}: 需要 def centroid(p) / needs def centroid(p): {r.get('detail')}")
    if r["status"] == "raises":
        raise SandboxError(f"{path}: centroid 在 {where.get(r.get('where'), '?')} 上出错 / raised: {r.get('detail')}")
    if r["status"] == "returns":
        raise SandboxError(
            f"{path}: centroid 要返回两个有限的数 (均值, 标准差) / must return two finite numbers (mean, std); "
            f"{r.get('detail')} on {where.get(r.get('where'), '?')}"
        )
    values = r.get("values")
    if r["status"] != "ok" or not isinstance(values, list) or len(values) != len(pats):
        raise SandboxError(f"{path}: 检查没有得到全部结果 / the check did not get every result; do not write files")
    wrong = []
    for (label, p), got in zip(pats, values):
        want = reference(p)
        if not (close(got[0], want[0]) and close(got[1], want[1])):
            wrong.append((label, p, got))
    if not wrong:
        return True, [
            f"练习三 / exercise 3: 对 / right — {len(pats)} 个头×文本全部在容差 {ATOL:g} + {RTOL:g}·|参考| 之内 "
            f"/ all {len(pats)} head×text maps within tolerance ({outcome.seconds:.1f} s)"
        ]
    label, p, got = wrong[0]
    return False, [
        f"练习三 / exercise 3: 还不对 / not yet — {len(wrong)} / {len(pats)} 个头×文本不在容差之内 / maps off",
        f"第一个 / first: {label}: 你的 / yours (均值 mean {got[0]:.6g}, 标准差 std {got[1]:.6g})",
        f"可能的原因 / likely: {diagnose(p, got)}",
    ]
