"""Exercise 4 (§1.20.4): check a student's ``AttentionDebugger`` against scripted runs.

The student's class runs in its own process (:mod:`.sandbox`) inside a scripted training loop
(``child.py``'s ``ScriptedModel``): at every step the loop fills ``model.blocks[l].attn.last_diag``
with that step's three numbers and calls ``check(step)``; at a NaN it calls ``on_nan()``. The
situations, and what each demands (fixed from the chapter's words, §1.20.4 and §1.13.1's table):

- ``healthy``: entropy 0.45–0.85, logit std 0.8–3, ‖J‖ 0.05–0.3 for 300 steps: no warning at all;
- ``saturate``: layer 1's entropy falls to 0.0001 and its logit std grows to 4348 (the chapter's
  d_head 256 numbers) by step 200: a warning that names the entropy (熵/entropy) and one that names
  the logits (logit), each at a step ≥ where it crossed;
- ``collapse``: layer 0's entropy rises to 0.999 and its logit std falls to 0.05 (over-scaling):
  a warning naming the entropy, none naming the logits;
- ``nan_scores``, ``nan_mask``, ``nan_exp``: a NaN loss at step 137, 88, 251; the failing batch
  breaks at ① in layer 1 (a q that is already inf), at ② in layer 0 (a query row with every key
  masked, the padding trap) and at ③ in layer 1 (a finite score of 784 whose exp overflows float32 and float64):
  ``on_nan()`` must return that (layer, stage).

Warnings count only at steps that are multiples of ``log_every`` (50). A warning is a string
returned by ``check`` or passed to ``warnings.warn``. The expected answers never reach the student's
process.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from .sandbox import Limits, SandboxError, read_source, run

LOG_EVERY = 50
STEPS = 301
N_LAYER = 2
T, HS = 8, 16
LIMITS = Limits(seconds=30.0)
LOGIT_STD_RANGE = (5.0, 100.0)  # a logit-std threshold anywhere here passes (healthy runs stay under 3)
NAN = {"nan_scores": (137, 1, 1), "nan_mask": (88, 0, 2), "nan_exp": (251, 1, 3)}  # step, layer, stage
STAGES = {1: "① scores", 2: "② 掩码后 / after mask", 3: "③ exp", 4: "④ 归一化 / normalize"}


def _ramp(a: float, b: float, n: int, start: int, end: int) -> np.ndarray:
    """a until ``start``, geometric to b at ``end``, b after."""
    s = np.clip((np.arange(n) - start) / (end - start), 0, 1)
    return np.exp(np.log(a) + s * (np.log(b) - np.log(a)))


def scenarios(seed: int = 0) -> tuple[dict, dict, dict]:
    """(spec for the child, arrays for the child, expected answers kept here)."""
    rng = np.random.default_rng(seed)

    def healthy(n: int) -> np.ndarray:  # (n, layers, 3): entropy, logit std, ‖J‖
        d = np.empty((n, N_LAYER, 3))
        d[..., 0] = rng.uniform(0.45, 0.85, (n, N_LAYER))
        d[..., 1] = rng.uniform(0.8, 3.0, (n, N_LAYER))
        d[..., 2] = rng.uniform(0.05, 0.3, (n, N_LAYER))
        return d

    spec, arrays, expected = {"log_every": LOG_EVERY, "n_layer": N_LAYER, "scenarios": []}, {}, {}
    sat = healthy(STEPS)
    sat[:, 1, 0] = _ramp(0.7, 1e-4, STEPS, 40, 200)
    sat[:, 1, 1] = _ramp(1.6, 4348.0, STEPS, 40, 200)
    sat[:, 1, 2] = _ramp(0.25, 8e-5, STEPS, 40, 200)
    col = healthy(STEPS)
    col[:, 0, 0] = 1 - _ramp(0.3, 1e-3, STEPS, 40, 150)
    col[:, 0, 1] = _ramp(1.5, 0.05, STEPS, 40, 150)
    runs = {"healthy": healthy(STEPS), "saturate": sat, "collapse": col}
    for name, (step, _, _) in NAN.items():
        runs[name] = healthy(step + 1)
    # (first step a warning may come, first step by which one must have come): the entropy's
    # thresholds are the chapter's; the logit std's is the student's own, anything from 5 to 100
    first = lambda cond: int(np.argmax(cond))  # noqa: E731
    expected["healthy"] = {"entropy": False, "logit": False}
    expected["saturate"] = {
        "entropy": (first(sat[:, 1, 0] < 0.01),) * 2,
        "logit": (first(sat[:, 1, 1] > LOGIT_STD_RANGE[0]), first(sat[:, 1, 1] > LOGIT_STD_RANGE[1])),
    }
    expected["collapse"] = {"entropy": (first(col[:, 0, 0] > 0.99),) * 2, "logit": False}
    for name, d in runs.items():
        sc = {"name": name, "diags": np.round(d, 8).tolist()}
        if name in NAN:
            step, bad_layer, stage = NAN[name]
            sc["nan_step"] = step
            expected[name] = {"nan": [bad_layer, stage], "step": step}
            for layer in range(N_LAYER):
                q = rng.normal(0, 1, (2, T, HS)).astype(np.float32)
                k = rng.normal(0, 1, (2, T, HS)).astype(np.float32)
                v = rng.normal(0, 1, (2, T, HS)).astype(np.float32)
                mask = np.tril(np.ones((T, T), dtype=bool))[None].repeat(2, 0)
                if layer == bad_layer and stage == 1:
                    q[1, 3, 0] = np.inf  # q blew up: one query's scores are not finite in any dtype
                if layer == bad_layer and stage == 2:
                    mask[0, 5] = False  # a padded query: every key masked
                if layer == bad_layer and stage == 3:
                    # q·k / √16 = 16 · 14² / 4 = 784: finite, but exp overflows in float32 (> 88.7) and float64 (> 709.8)
                    q[0, 6] = k[0, 2] = np.float32(14.0)
                for tag, a in (("q", q), ("k", k), ("v", v), ("m", mask)):
                    arrays[f"{name}_{tag}{layer}"] = a
        spec["scenarios"].append(sc)
    return spec, arrays, expected


def _mentions(text: str, what: str) -> bool:
    t = text.lower()
    return ("熵" in text or "entropy" in t) if what == "entropy" else "logit" in t


def judge(got: list[dict], expected: dict) -> list[str]:
    """Problems, one line each, in words a student can act on; [] when right."""
    problems = []
    by = {g.get("name"): g for g in got if isinstance(g, dict)}
    for name, want in expected.items():
        g = by.get(name)
        if g is None:
            problems.append(f"情景 {name} 没有跑完 / scenario {name} did not finish")
            continue
        warns = [(int(s), str(t)) for s, t in g.get("warnings", [])]
        off = [s for s, _ in warns if s % LOG_EVERY]
        if off:
            problems.append(
                f"{name}: 在第 {off[0]} 步报警，但 log_every=50：只在 step % log_every == 0 时检查 / warned at step "
                f"{off[0]}, not a multiple of log_every"
            )
        if name in NAN:
            nan = g.get("nan")
            layer, stage = want["nan"]
            if nan != [layer, stage]:
                said = f"层 layer {nan[0]}、{STAGES.get(nan[1], nan[1])}" if isinstance(nan, list) else f"{nan}"
                problems.append(
                    f"{name}: 第 {want['step']} 步 loss 变成 nan，on_nan() 说的是 / said {said}，"
                    f"但第一个出问题的位置不是这里 / that is not the first broken stage; "
                    + _nan_hint(stage)
                    + (
                        "；② 之后的 −∞ 是掩码本身，不算出问题 / the −inf after ② is the mask itself, not a fault"
                        if isinstance(nan, list) and nan[1] == 2
                        else ""
                    )
                )
            continue
        for what in ("entropy", "logit"):
            hits = [s for s, t in warns if _mentions(t, what)]
            word = "熵 / entropy" if what == "entropy" else "logit 标准差 / logit std"
            if want[what] is False and hits:
                problems.append(
                    f"{name}: 在第 {hits[0]} 步报了{word}，可这一段的{word}都正常 / false alarm: {word} was normal "
                    f"({'熵 0.45–0.85、logit std 0.8–3' if name == 'healthy' else 'logit std 在下降 / falling'})"
                )
            elif want[what] is not False:
                may, must = want[what]
                late = [s for s in hits if s >= must]
                early = [s for s in hits if s < may]
                if early:
                    problems.append(
                        f"{name}: 第 {early[0]} 步就报了{word}，那时它还正常 / warned about {word} at step {early[0]}, "
                        f"before it left the normal range (step {may})"
                    )
                if not late:
                    problems.append(
                        f"{name}: {word}越过阈值之后（第 {must} 步起）没有报警 / no warning about {word} after "
                        f"it crossed at step {must}"
                        + ("；熵 > 0.99 也要报 / entropy above 0.99 must warn too" if name == "collapse" else "")
                        + ("；warning 里要写“logit”/ the text must say 'logit'" if what == "logit" else "")
                    )
    return problems


def _nan_hint(stage: int) -> str:
    return {
        1: "先看 ① scores = Q @ Kᵀ 本身是否有限 / check ① scores = Q @ Kᵀ first",
        2: "② 掩码之后 −∞ 是正常的；一行里全是 −∞（没有一个有限值）才算出问题 / after ② −inf is expected; a row "
        "with no finite entry is the problem",
        3: "③ exp 之前的 scores 有限，exp 之后出现 inf：逐层检查 exp(scores) / finite scores whose exp is inf",
        4: "④ 归一化 / normalize",
    }[stage]


def check(path: str, limits: Limits = LIMITS, watch: tuple[Path, ...] = ()) -> tuple[bool, list[str]]:
    source = read_source(path)
    spec, arrays, expected = scenarios()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    outcome = run(
        "ex4",
        source,
        {"scenarios.json": json.dumps(spec).encode(), "arrays.npz": buf.getvalue()},
        limits,
        watch=(Path(path).resolve().parent, *watch),
        what=f"{path}",
    )
    r = outcome.result
    if r["status"] == "import":
        raise SandboxError(f"{path} 导入时出错 / failed to import: {r.get('detail')}")
    if r["status"] in ("missing", "signature"):
        raise SandboxError(
            f"{path}: 需要 class AttentionDebugger，AttentionDebugger(model, log_every=50)、check(step)、on_nan() "
            f"/ needs the chapter's interface: {r.get('detail')}"
        )
    if r["status"] == "raises":
        raise SandboxError(
            f"{path}: 在情景 {r.get('where')} 里出错 / raised in scenario {r.get('where')}: {r.get('detail')}"
        )
    if r["status"] != "ok" or not isinstance(r.get("scenarios"), list):
        raise SandboxError(f"{path}: 检查没有得到全部结果 / the check did not get every result; do not write files")
    problems = judge(r["scenarios"], expected)
    if not problems:
        return True, [
            f"练习四 / exercise 4: 对 / right — {len(expected)} 个情景：健康不报警，饱和与塌缩报对了，三次 nan 都找到了"
            f"第一个出问题的位置 / all {len(expected)} scripted runs right ({outcome.seconds:.1f} s)"
        ]
    return False, [f"练习四 / exercise 4: 还不对 / not yet — {len(problems)} 处 / problem(s):"] + [
        f"  {p}" for p in problems
    ]
