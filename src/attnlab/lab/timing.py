"""§1.14.2: how expensive O(n²) really is, timed on this machine.

Measured: F.scaled_dot_product_attention with the book's shapes (8 heads, d_head 64,
causal, batch 1, float32) on this CPU, warm-up first, the median of interleaved
rounds, n doubling from 512 to 8192 (a time budget stops before an n that would
pass it). The book's column is its RTX A6000 table (reference_values.json).

Judged: that the time grows faster than n (every doubling of n more than doubles
the time) — a property of the O(n²) work on any machine. The book's "×3–4 per
doubling, not ×4, because FlashAttention does not write the n×n matrix to memory"
is a statement about an A6000 running FlashAttention: a CPU cannot test it (NA);
our ratios are reported beside it. Nothing is trained; ``remeasure=False`` keeps
the committed measurement unless ``--only §1.14.2`` asks for a new one.
"""

from __future__ import annotations

import math
import statistics

from .. import stats as S
from ..book import book_values
from ..verdicts import claim
from . import plot
from .common import rnd
from .labbook import Context, Experiment, Outcome

SECTION = "§1.14.2"
BOOK_KEY = "sdpa_timing_rtx_a6000_1_14_2"
# "超线性": each doubling of n costs more than twice the time (a local exponent above 1)
LINEAR_DOUBLING = 2.0
FULL_N, QUICK_N = (512, 1024, 2048, 4096, 8192), (64, 128, 256)


def time_sdpa(
    n_values, heads: int = 8, d_head: int = 64, repeats: int = 5, warmup: int = 2, budget_s: float = 240.0
) -> dict:
    """§1.14.2's protocol on this CPU: F.scaled_dot_product_attention, causal, warm-up first,
    median of ``repeats``. Stops before an n whose time, predicted by n² from the last one,
    would pass ``budget_s`` (``attnlab bench attention`` compares more methods)."""
    import time

    import torch
    import torch.nn.functional as F

    from ..perf import interleaved

    cpu = torch.device("cpu")
    start, rows, stopped, last = time.perf_counter(), [], None, None
    for i, n in enumerate(n_values):
        if last is not None:
            predicted = last * (n / n_values[i - 1]) ** 2
            if time.perf_counter() - start + predicted > budget_s:
                stopped = f"n={n}: predicted {predicted:.0f} s would pass the {budget_s:g} s budget"
                break
        t = time.perf_counter()
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, heads, n, d_head, generator=g) for _ in range(3))
        with torch.no_grad():
            ts = interleaved(
                {"sdpa": lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True)},
                repeats,
                warmup,
                cpu,
            )["sdpa"]
        rows.append({"n": n, "ms": {"sdpa": statistics.median(ts) * 1e3}, "ms_rounds": [x * 1e3 for x in ts]})
        last = time.perf_counter() - t
    protocol = {
        "heads": heads,
        "d_head": d_head,
        "batch": 1,
        "causal": True,
        "dtype": "float32",
        "warmup": warmup,
        "repeats": repeats,
        "statistic": "median",
        "threads": torch.get_num_threads(),
    }
    return {"rows": rows, "stopped": stopped, "protocol": protocol}


def exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(time) on log(n)."""
    if len(points) < 2:
        return None
    pts = [(math.log(n), math.log(t)) for n, t in points]
    mx, my = statistics.fmean(p[0] for p in pts), statistics.fmean(p[1] for p in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def measure(ctx: Context) -> Outcome:
    if ctx.scale.quick:
        res = time_sdpa(n_values=QUICK_N, repeats=2, warmup=1, budget_s=20)
    else:
        res = time_sdpa(n_values=FULL_N, repeats=5, warmup=2, budget_s=240)
    ours = [(r["n"], r["ms"]["sdpa"]) for r in res["rows"] if "sdpa" in r["ms"]]
    out = tabulate(ours, fit_from=QUICK_N[0] if ctx.scale.quick else 1024)
    out.update(
        protocol=res["protocol"], stopped=res["stopped"], ms_rounds={str(r["n"]): r["ms_rounds"] for r in res["rows"]}
    )
    return Outcome(results=out, figures=[ctx.fig("timing.png")])


def tabulate(ours: list[tuple[int, float]], fit_from: int) -> dict:
    """The table (n, the book's A6000 ms, ours, relative to the smallest n) and the fitted exponents (pure)."""
    book = book_values(BOOK_KEY)
    theirs = exponent([(n, t) for n, t in zip(book["n"], book["ms"]) if n >= 1024])
    return {
        "headers": ["n", "书·A6000 ms", "本机 ms / ours", "相对 n 最小 / rel."],
        "rows": [
            [n, book["ms"][book["n"].index(n)] if n in book["n"] else None, rnd(t, 4), rnd(t / ours[0][1], 3)]
            for n, t in ours
        ],
        "exponent_ours": rnd(exponent([p for p in ours if p[0] >= fit_from]), 3),
        "exponent_book": rnd(theirs, 3),
        "fit_from_n": fit_from,
    }


def doubling(res: dict) -> list[float]:
    """Time ratio of each doubling of n, ours, from the table (also of results written before this module)."""
    pts = [(row[0], row[2]) for row in res.get("rows", []) if row[2] is not None]
    return [rnd(b / a, 3) for (na, a), (nb, b) in zip(pts, pts[1:]) if nb == 2 * na]


def book_doubling() -> list[float]:
    book = book_values(BOOK_KEY)
    return [rnd(b / a, 3) for a, b in zip(book["ms"], book["ms"][1:])]


def judge(res: dict) -> list[dict]:
    ours = doubling(res)
    theirs = book_doubling()
    if ours:
        grow = S.every(ours, math.nextafter(LINEAR_DOUBLING, math.inf), math.inf)  # strictly above 2
    else:
        grow = S.Judgement(S.INCONCLUSIVE, "every", 0, detail="no doubling of n timed")
    return [
        claim(
            "timing_superlinear",
            SECTION,
            "自检：耗时随 n 超线性增长（O(n²) 的计算量）：n 每翻一倍，耗时都超过两倍 / sanity: time grows faster than n: "
            "every doubling of n more than doubles the time",
            grow,
            inputs={"ratio_per_doubling": ours, "exponent_ours": res.get("exponent_ours")},
            book=theirs,
            expected=f"every ratio per doubling > {LINEAR_DOUBLING:g}: a check of the timing itself (n² arithmetic "
            "cannot grow slower than n), not the chapter's 3–4 (timing_book_exponent)",
            kind="sanity",
        ),
        claim(
            "timing_book_exponent",
            SECTION,
            "“n 翻倍，耗时涨约 3–4 倍，不是 4 倍整……差距来自 FlashAttention：它不把 n×n 矩阵写进显存” / "
            "book: ×3–4 per doubling on the A6000, below ×4 because FlashAttention does not write the n×n matrix",
            S.na(
                "本机是 CPU，检验不了 A6000 上 FlashAttention 的说法 / a CPU cannot test a statement about "
                "FlashAttention on an RTX A6000: here SDPA does the full n² work and reads and writes its "
                f"intermediates (our ratios per doubling {', '.join(f'{x:.2f}' for x in ours) or '—'}; the book's "
                f"{', '.join(f'{x:.2f}' for x in theirs)})"
            ),
            inputs={"ratio_per_doubling_ours": ours, "ratio_per_doubling_book": theirs},
            book="3–4",
        ),
    ]


def _why_superlinear(res: dict) -> str:
    ours = doubling(res)
    slow = [f"{x:.2f}" for x in ours if x <= LINEAR_DOUBLING]
    return (
        f"有的翻倍耗时不到两倍（{', '.join(slow)}）：n 小时固定开销占了大头，n² 的计算还没主导 / some doublings cost "
        f"at most twice the time ({', '.join(slow)}): at small n fixed overheads dominate, not the n² work"
    )


# ------------------------------------------------------------------------------------- figure
def draw(r: dict) -> dict:
    plt = plot.plt()
    book = book_values("sdpa_timing_rtx_a6000_1_14_2")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(
        [row[0] for row in r["rows"]],
        [row[2] for row in r["rows"]],
        "o-",
        color="#2463a6",
        label="本机 CPU / this CPU (SDPA)",
    )
    ax.loglog(book["n"], book["ms"], "s--", color="#c0392b", label="书中 RTX A6000 / book")
    from matplotlib.ticker import NullFormatter

    ns = sorted({row[0] for row in r["rows"]} | set(book["n"]))
    ax.set_xticks(ns, [str(n) for n in ns])  # the measured lengths, not 3×10³4×10³ running together
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("序列长度 n / sequence length")
    ax.set_ylabel("单次前向 ms / forward ms")
    ax.set_title("§1.14.2 注意力耗时 / attention time")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return {"timing.png": fig}


EXPERIMENT = Experiment(
    "timing",
    SECTION,
    "注意力耗时 / attention timing",
    "RTX A6000 上 SDPA（8 头、d_head 64、因果）：n=512 0.082 ms … n=8192 8.263 ms；n 翻倍耗时涨约 3–4 倍",
    "attnlab book --only §1.14.2",
    measure=measure,
    judge=judge,
    remeasure=False,
    why={"timing_superlinear": _why_superlinear},
    draw=draw,
)
