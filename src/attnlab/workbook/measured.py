"""Exercises 1 and 2 (§1.20.1, §1.20.2): a student's run folders judged against the lab's seeds.

A run folder (``attnlab train --out DIR``, or a run trained in the browser and downloaded) holds
``config.json`` and ``summary.json``; its config must be one the exercise asks for, whatever the seed
(the fields that make a run what it is, ``Config.identity()``, seed and ``scaled`` aside); anything
else is refused in one line naming the fields that differ. Pairs (scaled and unscaled of one config
and one seed) give the gap the lab book measures: final validation loss unscaled − scaled.

The lab's distribution is its per-seed gaps of the same config (``data/lab_book/exercise1.json``,
``exercise2.json``). Interval: the 95% t prediction interval for one new seed,
mean ± t(0.975, n−1) · s · √(1 + 1/n) over the lab's n seeds (it holds a new seed's gap with 95%
probability if the gaps are roughly normal; with n = 3 it is wide, and says so). A gap inside is
"consistent"; outside, the distance to the nearer end is stated.

Exercise 2's class size: d_head 32, 128 and 192 only (n_head 1, d_model = d_head), at the lab's
1500 steps so its intervals apply; the rise (≈0 at 32, ≈0.4 at 128, ≈0.8 at 192 in the lab) still
shows. Its cost is the plan's (attnlab.lab.plan), printed by ``attnlab class new``.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from ..config import Config
from ..errors import AttnlabError
from ..io import read_json
from . import WorkbookError

LAB = Path(__file__).resolve().parents[3] / "data" / "lab_book"  # in a checkout; the wheel ships LAB_GAPS
LAB_GAPS = Path(__file__).with_name("lab_gaps.json")
EX1_D_HEADS = {32: (128, 4), 64: (128, 2)}  # d_head -> (d_model, n_head): the case's small model, exercise 1's
EX2_D_HEADS = (32, 64, 96, 112, 128, 192, 256)
CLASS_D_HEADS = (32, 128, 192)
SESOI = 0.17  # §1.2's "几乎没差别（差 0.17）": exercise 2's "明显变差" starts above it (as lab.exercise2)


class RunError(WorkbookError):
    """A run folder that cannot be judged."""


def derive_lab_gaps(lab_dir: Path = LAB) -> dict:
    """{"exercise1"|"exercise2": {d_head: [per-seed gaps]}} from the committed lab book JSON; shipped
    as ``lab_gaps.json`` (scripts/docs_workbook.py writes it, a test checks it is up to date)."""
    out: dict = {}
    for exercise, grid in (("exercise1", EX1_D_HEADS), ("exercise2", EX2_D_HEADS)):
        path = lab_dir / f"{exercise}.json"
        per_seed = read_json(path)["results"]["per_seed"]
        out[exercise] = {}
        for d in grid:
            key = f"d{d}_gap" if exercise == "exercise1" else f"gap_d{d}"
            vals = {
                s: v[key]
                for s, v in sorted(per_seed.items())
                if isinstance(v, dict) and isinstance(v.get(key), (int, float))
            }
            if len(vals) >= 2:
                out[exercise][str(d)] = vals
    return {"what": "the lab book's per-seed gaps (unscaled − scaled final validation loss), from data/lab_book", **out}


def lab_gaps(exercise: str) -> dict[int, list[float]]:
    """d_head -> the lab's per-seed gaps (shipped with the package)."""
    try:
        data = read_json(LAB_GAPS)[exercise]
        return {int(d): [float(x) for x in v.values()] for d, v in data.items()}
    except (AttnlabError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise WorkbookError(f"实验室的数据读不了 / cannot read the lab's numbers in {LAB_GAPS}: {e}") from None


def prediction_interval(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the t prediction interval for one new draw."""
    from scipy import stats

    n = len(xs)
    m, s = statistics.fmean(xs), statistics.stdev(xs)
    half = stats.t.ppf((1 + level) / 2, n - 1) * s * math.sqrt(1 + 1 / n)
    return m, m - half, m + half


def expected_configs(exercise: str, seed: int) -> dict[int, Config]:
    """d_head -> the config the exercise asks for (scaled; the unscaled one differs only there)."""
    from ..lab.runs import Scale  # one import: the lab's full-size configs

    scale = Scale()
    if exercise == "ex1":
        return {d: scale.cfg(d_model=dm, n_head=nh, scaled=True, seed=seed) for d, (dm, nh) in EX1_D_HEADS.items()}
    return {d: scale.cfg(d_model=d, n_head=1, scaled=True, seed=seed) for d in EX2_D_HEADS}


def read_run(folder: str | Path) -> tuple[Config, float]:
    d = Path(folder)
    if not d.is_dir():
        raise RunError(f"{folder} 不是运行文件夹 / is not a run folder (config.json and summary.json inside)")
    try:
        cfg = Config.from_dict(read_json(d / "config.json", error=RunError))
        summary = read_json(d / "summary.json", error=RunError, allow_nan=True)
    except RunError:
        raise
    except (AttnlabError, TypeError, ValueError) as e:
        raise RunError(f"{d / 'config.json'}: 不是 attnlab 的配置 / not an attnlab config: {e}") from None
    val = summary.get("val_loss_end") if isinstance(summary, dict) else None
    if not isinstance(val, (int, float)) or not math.isfinite(val):
        raise RunError(
            f"{d / 'summary.json'} 没有有限的 val_loss_end / has no finite val_loss_end; the run did not finish "
            f"(or diverged): train it to the end"
        )
    if summary.get("steps") != cfg.max_steps:
        raise RunError(
            f"{d} 只训练了 {summary.get('steps')} 步 / trained {summary.get('steps')} of {cfg.max_steps} steps"
        )
    return cfg, float(val)


def classify(exercise: str, folder: str, cfg: Config) -> int:
    """The run's d_head, or a RunError naming what differs from the exercise's configs."""
    want = expected_configs(exercise, cfg.seed)
    mine = {k: v for k, v in cfg.identity().items() if k != "scaled"}
    best, best_diff = None, None
    for d, c in want.items():
        theirs = {k: v for k, v in c.identity().items() if k != "scaled"}
        diff = sorted(k for k in mine if mine[k] != theirs.get(k))
        if not diff:
            return d
        if best_diff is None or len(diff) < len(best_diff):
            best, best_diff = c, diff
    shown = ", ".join(f"{k}={getattr(cfg, k)!r} (要 / wants {getattr(best, k)!r})" for k in best_diff[:4])
    raise RunError(
        f"{folder} 不是练习{'一' if exercise == 'ex1' else '二'}的配置 / is not a config of {exercise}: {shown}; "
        f"train it with `attnlab exercise show {exercise}`'s settings"
    )


def check(exercise: str, folders: list[str], figure: str | None = None) -> tuple[bool, list[str]]:
    runs: dict[tuple[int, int], dict[bool, float]] = {}
    for f in folders:
        cfg, val = read_run(f)
        d = classify(exercise, f, cfg)
        pair = runs.setdefault((d, cfg.seed), {})
        if cfg.scaled in pair:
            raise RunError(
                f"{f}: 同一个 d_head {d}、种子 {cfg.seed} 交了两次 / the same run twice (d_head {d}, seed {cfg.seed})"
            )
        pair[cfg.scaled] = val
    lab = lab_gaps("exercise1" if exercise == "ex1" else "exercise2")
    lines, ok, points = [], True, {}
    for (d, seed), pair in sorted(runs.items()):
        if len(pair) < 2:
            missing = "缩放 / scaled" if True not in pair else "不缩放 / unscaled"
            lines.append(f"d_head {d} 种子 seed {seed}: 缺 {missing} 那一版，差算不出来 / its pair is missing")
            ok = False
            continue
        gap = pair[False] - pair[True]
        points[d] = gap
        if d not in lab:
            lines.append(
                f"d_head {d} 种子 seed {seed}: 差 gap {gap:+.3f}（实验室没有这个 d_head 的种子 / no lab seeds here）"
            )
            continue
        m, lo, hi = prediction_interval(lab[d])
        where = (
            "一致 / consistent"
            if lo <= gap <= hi
            else f"在区间之外 / outside by {gap - hi:+.3f}"
            if gap > hi
            else f"在区间之外 / outside by {gap - lo:+.3f}"
        )
        ok = ok and lo <= gap <= hi
        lines.append(
            f"d_head {d} 种子 seed {seed}: 差 gap {gap:+.3f}；实验室 {len(lab[d])} 个种子 / lab's {len(lab[d])} seeds: "
            f"均值 mean {m:+.3f}，95% 预测区间 / prediction interval [{lo:+.3f}, {hi:+.3f}] → {where}"
        )
    if exercise == "ex2" and points:
        crit = next((d for d in sorted(points) if points[d] > SESOI), None)
        lines.append(
            f"你的临界 d_head / your critical d_head: {crit if crit else '未出现（没有差超过 0.17）/ none above 0.17'}"
            f"（第一个差超过 §1.2 的“几乎没差别” 0.17 的维度 / the first d_head whose gap passes 0.17）"
        )
        if figure:
            draw(points, lab, figure)
            lines.append(f"图 / figure: {figure}")
    head = "练习一 / exercise 1" if exercise == "ex1" else "练习二 / exercise 2"
    verdict = "与实验室一致 / consistent with the lab" if ok else "有的数不在实验室的区间里 / some numbers outside"
    return ok, [f"{head}: {verdict}"] + lines


def draw(points: dict[int, float], lab: dict[int, list[float]], path: str) -> None:
    """The student's gaps beside the lab's mean and 95% prediction interval, by d_head."""
    from ..io import write_figure
    from ..lab.plot import plt as setup

    plt = setup()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ds = sorted(lab)
    band = [prediction_interval(lab[d]) for d in ds]
    ax.fill_between(
        ds,
        [b[1] for b in band],
        [b[2] for b in band],
        color="#9ecae1",
        alpha=0.5,
        label="实验室 95% 预测区间 / lab's 95% prediction interval",
    )
    ax.plot(ds, [b[0] for b in band], "o-", color="#3182bd", label="实验室均值 / lab's mean")
    mine = sorted(points)
    ax.plot(mine, [points[d] for d in mine], "s--", color="#e6550d", label="你的 / yours")
    ax.axhline(SESOI, color="#888", lw=0.8, ls=":")
    ax.text(ds[0], SESOI, " 0.17（§1.2 几乎没差别）", va="bottom", fontsize=8, color="#555")
    ax.set_xlabel("d_head")
    ax.set_ylabel("验证 loss 差（不缩放 − 缩放）/ gap")
    ax.set_title("练习二：临界维度 / exercise 2: the critical d_head")
    ax.legend(fontsize=8)
    write_figure(path, fig, svg=False)
    plt.close(fig)
