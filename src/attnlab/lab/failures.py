"""§1.11.7: the four injected bugs, brought into the lab book from their committed result.

``attnlab failures`` trains the correct model and each bug (same seed, same batches, three
seeds) and writes data/failure_symptoms.json. This entry trains nothing and owns no rule:
``measure`` reads that JSON and puts into the results the symptom table and exactly what
:func:`attnlab.experiments.failures.judge` needs (per-seed numbers, the book's table, d_head,
the steps, bug ③'s overflow control); ``judge`` *is* that function, the one ``attnlab
failures --rejudge`` runs, so the lab book and the failures report can never disagree.

One statement the stand-alone command does not test is this entry's own, with its runs: §1.11.7.1
"唯一的破绽在推理时" for the mask-zero bug. The correct model and the bug trained 300 steps as the
chapter's table (same seed, same batches), every seed of the scale, evaluated token by token through
the KV cache, where the next character does not exist yet, beside the teacher-forced loss
(``results["inference"]``: its per-seed table; :func:`judge_inference`).
"""

from __future__ import annotations

from dataclasses import replace

from .. import stats as S
from ..book import book_values
from ..experiments import failures as F
from ..runner import Run
from ..verdicts import claim
from . import runs as R
from .common import committed, not_trained, paired, pending, rnd, seed_table, untrained
from .labbook import Context, Experiment, Outcome

COMMAND = "attnlab failures"
INFERENCE_COMMAND = "attnlab book --only failures"  # the 300-step pair of §1.11.7.1's inference claims
SHORT_STEPS = 300  # §1.11.7 "各训 300 步"
KV_TOL = 1e-3  # |incremental − teacher-forced| for a correct model: float32 rounding of two orders of summation
INFERENCE_CLAIMS = ("mask_zero_exposed_at_inference", "kv_eval_matches_teacher_forced")
INFERENCE_KEYS = ("mask_tf_correct", "mask_inc_correct", "mask_tf_bug", "mask_inc_bug")

SOURCE = "data/failure_symptoms.json"
HEADERS = [
    "变体 / variant",
    "书·loss终",
    "loss 终 / end",
    "书·熵",
    "熵 / entropy",
    "书·行和",
    "行和 / row sum",
    "未来权重 / future",
]


def table(doc: dict) -> list[list]:
    """The first seed's symptoms beside the book's (the rows the lab-book report shows)."""
    book = doc.get("book") or {}
    rows = []
    for name, v in doc["variants"].items():
        b = book.get(name)
        rows.append(
            [
                name,
                b[1] if b else None,
                rnd(v["loss_end"]),
                b[3] if b else None,
                rnd(v["weight_entropy"], 3),
                b[5] if b else None,
                rnd(v["row_sum_max"], 4),
                rnd(v["future_weight_max"], 3),
            ]
        )
    return rows


def results_of(doc: dict) -> dict:
    """The lab-book results of a failures result: its table, and what the judge reads."""
    if not doc.get("overflow_control"):  # a result written before bug ③'s control: deterministic arithmetic
        doc = {**doc, "overflow_control": F.overflow_control()}
    inputs = F.claim_inputs(doc)  # per_seed, book, d_head, steps, overflow_control
    return {"headers": HEADERS, "rows": table(doc), "source": SOURCE, "seeds": list(inputs["per_seed"]), **inputs}


# ------------------------------------------------------------- §1.11.7.1: the bug at inference
def _short(scale: R.Scale) -> R.Scale:
    """§1.11.7's 300 steps (quick: half the quick steps, so no quick run equals another experiment's)."""
    return replace(scale, steps=scale.steps // 2 if scale.quick else SHORT_STEPS)


def mask_runs(scale: R.Scale, seed: int) -> list[Run]:
    """The correct model and the mask-zero bug, §1.11.7's protocol (300 steps, same seed and batches).
    Their folder is runs/statements/, where they were first trained: the same runs, never trained twice."""
    s = _short(scale)
    return [
        Run(f"stmt_correct{s.steps}_s{seed}", s.cfg(**R.SIZES["small"], seed=seed), group="statements"),
        Run(
            f"stmt_mask_zero{s.steps}_s{seed}",
            s.cfg(**R.SIZES["small"], bug="mask_zero", seed=seed),
            group="statements",
        ),
    ]


def incremental_loss(model, batches) -> dict:
    """Teacher-forced loss (all positions at once) and the loss token by token through the KV cache,
    where the next character does not exist yet (generation's view)."""
    import torch
    import torch.nn.functional as TF

    from ..model import KVCache

    model.eval()
    tf, inc, n = 0.0, 0.0, 0
    with torch.no_grad():
        for x, y in batches:
            B, T = x.shape
            V = model.cfg.vocab_size
            tf += TF.cross_entropy(model(x)[0].float().view(B * T, V), y.reshape(-1), reduction="sum").item()
            caches = [KVCache() for _ in range(model.cfg.n_layer)]
            steps = [model(x[:, t : t + 1], kv_cache=caches)[0] for t in range(T)]  # each (B, 1, V)
            logits = torch.cat(steps, dim=1).float()  # (B, T, V)
            inc += TF.cross_entropy(logits.view(B * T, V), y.reshape(-1), reduction="sum").item()
            n += B * T
    return {"teacher_forced": tf / n, "incremental": inc / n}


def _inference_numbers(ctx: Context, fs) -> dict:
    from ..experiments.common import validation_batches

    out = {}
    for tag, f in zip(("correct", "bug"), fs):
        r = incremental_loss(f.model, validation_batches(ctx.text, f.tok, f.run.cfg, 4))
        out |= {f"mask_tf_{tag}": rnd(r["teacher_forced"]), f"mask_inc_{tag}": rnd(r["incremental"])}
    return out


def inference(ctx: Context) -> dict:
    """§1.11.7.1's per-seed table (committed numbers kept, runs on disk measured) and the runs it waits for."""
    prev = ((ctx.previous or {}).get("inference") or {}).get("per_seed")
    table = seed_table(ctx, lambda s: mask_runs(ctx.scale, s), lambda fs: _inference_numbers(ctx, fs), prev)
    missing = [r for s in ctx.scale.seed_list() if str(s) not in table for r in mask_runs(ctx.scale, s)]
    return {"per_seed": table, "pending": pending(missing), "steps": _short(ctx.scale).steps}


def measure(ctx: Context) -> Outcome:
    res = results_of(committed(ctx, "failure_symptoms.json"))
    res["inference"] = inference(ctx)
    notes = []
    if not res["inference"]["per_seed"]:
        notes.append(f"逐字推理的一对模型还没训练 / the 300-step pair is not trained yet: `{INFERENCE_COMMAND}`")
    return Outcome(results=res, notes=notes)


def judge_inference(res: dict) -> list[dict]:
    """§1.11.7.1: the mask-zero bug and the correct model, token by token (pure)."""
    inf = res.get("inference") or {}
    t = inf.get("per_seed") or {}
    sesoi = F.unchanged_margin(book_values("failure_symptoms_1_11_7"))
    exposed = paired(t, "mask_inc_bug", "mask_inc_correct")
    kv = [abs(a) for a in paired(t, "mask_inc_correct", "mask_tf_correct")]
    return [
        claim(
            "mask_zero_exposed_at_inference",
            "§1.11.7.1 / §1.11.1",
            "“唯一的破绽在推理时：生成第 t 个词时，第 t+1 个词根本还不存在，偷看的能力瞬间消失，模型原形毕露”：逐字推理"
            "（KV 缓存，没有未来的字）时，掩码用 0 训出的模型比正确实现差 / generating token by token, the mask-zero "
            "model is worse than the correct one",
            untrained(S.effect(exposed, direction=+1, sesoi=sesoi), inf.get("pending"), INFERENCE_COMMAND),
            inputs={
                "bug_minus_correct_incremental": exposed,
                "bug_minus_correct_teacher_forced": paired(t, "mask_tf_bug", "mask_tf_correct"),
                "bug_incremental_minus_teacher_forced": paired(t, "mask_inc_bug", "mask_tf_bug"),
                "sesoi": sesoi,
            },
            book="推理时原形毕露",
            expected=f"effect: bug − correct validation loss, both token by token through the KV cache, same seed, > 0 "
            f"(95% CI), smallest effect of interest {sesoi} (the largest loss difference §1.11.7.5 calls 不变); "
            f"{SHORT_STEPS} steps as §1.11.7",
        ),
        claim(
            "kv_eval_matches_teacher_forced",
            "§1.8.7 / §1.11.7.1",
            "逐字推理的评估是对的：正确实现逐字（KV 缓存）与一次整段的 loss 相同 / the token-by-token evaluation is right: "
            "for the correct model it equals the teacher-forced loss",
            S.every(kv, 0.0, KV_TOL) if kv else S.na(not_trained(inf.get("pending"), INFERENCE_COMMAND)),
            inputs={"abs_incremental_minus_teacher_forced": kv},
            kind="sanity",
            expected=f"every seed: |incremental − teacher-forced| < {KV_TOL:g} nats (float32 rounding of the two orders "
            "of summation)",
        ),
    ]


def judge(res: dict) -> list[dict]:
    """The failures module's own judge (its FAILs carry their reasons), then §1.11.7.1's inference claims."""
    return F.judge(res) + judge_inference(res)


def _why_mask(r: dict) -> str:
    t = (r.get("inference") or {}).get("per_seed") or {}
    show = lambda xs: ", ".join(f"{x:.3g}" for x in xs) or "—"  # noqa: E731
    return (
        f"token by token the mask-zero model is not worse than the correct one: bug − correct "
        f"{show(paired(t, 'mask_inc_bug', 'mask_inc_correct'))} (teacher-forced: "
        f"{show(paired(t, 'mask_tf_bug', 'mask_tf_correct'))})"
    )


EXPERIMENT = Experiment(
    "failures",
    "§1.11.7",
    "四个注入的 bug / the four injected bugs",
    "① 掩码用 0 loss 反而更低；② 缩放在 softmax 之后行和 = 0.177；③ 缺数值稳定在这个规模看不出来"
    "（喂标准差 5000 的 logits 才炸）；④ 误用 d_k 注意力退化成均匀（熵 0.9989），loss 不变",
    COMMAND,
    measure=measure,
    judge=judge,
    why={"mask_zero_exposed_at_inference": _why_mask},
    runs=lambda scale: [r for s in scale.seed_list() for r in mask_runs(scale, s)],
    min_runs=lambda scale: [],  # the committed results are judged without any run folder
    # a further seed (attnlab book --decide) for §1.11.7.1's claims: the 300-step pair; the bugs' own
    # claims are the stand-alone command's (attnlab failures), which adds none here
    seed_runs=lambda scale, seed, cid: mask_runs(scale, seed) if cid in INFERENCE_CLAIMS else [],
)
