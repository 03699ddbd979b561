"""The head portrait as an instrument: what each head of a model attends to (§1.8.5, exercise 3),
head ablation (§1.8.6), attention maps (实验 1-2) and the portrait across training (§1.12.4).

The entries that measure heads read models through it: ``heads`` (whose claims and command it
serves), ``dynamics``, ``deep`` and ``positions``; it judges nothing.

Evaluation set of the portrait ("3 poems × 24 positions", as in the book):
a "poem" is 24 consecutive characters of the validation split that start at
the beginning of a line. In the shipped corpus one line is one couplet of a
poem (two verses and their punctuation), so 24 characters of five-character
verse are a couplet, the line break and most of the next couplet: about one
quatrain. Three such windows are taken at the start, the middle and the end of
the validation split. With a block_size under 24 the windows are block_size
long. Any other UTF-8 corpus is cut the same way; a corpus without line breaks
uses evenly spaced windows.

Head ablation zeroes head h's slice of the output projection (columns
h*hs:(h+1)*hs of ``blocks[l].attn.proj.weight``), which removes exactly that
head's contribution, and measures the change of the loss on fixed batches of
the validation split; the slice is restored even when the forward fails.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import Tensor

from ..config import Config
from ..diagnostics import head_metrics, uniform_reference
from ..model import SequenceTooLongError, TinyGPT
from ..tokenizer import CharTokenizer
from ..tools import (
    ExperimentError,
    book_values,
    is_book_model,
    load_model,
    model_at_step,
    provenance,
    validation_batches,
    validation_text,
)

POEMS = 3
POSITIONS = 24
METRICS = ("entropy", "diag", "prev", "distance", "distance_std")


# -------------------------------------------------------------------- evaluation set
def poem_windows(val_text: str, n: int = POEMS, length: int = POSITIONS) -> list[str]:
    """``n`` windows of ``length`` characters starting at line starts, spread over ``val_text``."""
    if len(val_text) < length:
        raise ExperimentError(
            f"validation text has {len(val_text)} characters, fewer than the "
            f"{length} of one evaluation window; use a longer corpus"
        )
    last = len(val_text) - length
    starts = [i + 1 for i, c in enumerate(val_text) if c == "\n" and i + 1 <= last]
    if len(starts) < n:  # no line structure: evenly spaced windows
        starts = [round(k * last / max(n - 1, 1)) for k in range(n)]
    chosen = [starts[round(k * (len(starts) - 1) / max(n - 1, 1))] for k in range(n)]
    return [val_text[s : s + length] for s in chosen]


def check_text(text: str, cfg: Config) -> None:
    if len(text) > cfg.block_size:
        raise SequenceTooLongError(
            f"text has {len(text)} characters but the model's block_size is {cfg.block_size}; "
            f"文本长度 {len(text)} 超过 block_size {cfg.block_size}，请截短"
        )
    if len(text) < 2:
        raise ExperimentError(f"text {text!r} is too short: a head portrait needs at least 2 characters")


# -------------------------------------------------------------------------- portrait
@torch.no_grad()
def portrait(model: TinyGPT, tok: CharTokenizer, texts: Sequence[str]) -> list[dict]:
    """Per layer and head: the five metrics averaged over all rows i >= 1 of all texts.

    Texts of different lengths are measured one by one and pooled, weighting
    each text by its number of rows; ``distance_std`` is the pooled standard
    deviation of the centroid distance over every position of every text.
    """
    device = next(model.parameters()).device
    per_text = []  # [(rows, [layer -> {metric: (nh,)}])]
    for t in texts:
        check_text(t, model.cfg)
        idx = torch.tensor([tok.encode(t)], dtype=torch.long, device=device)
        patterns = model.attention_patterns(idx)  # list of (1, nh, T, T)
        per_text.append((len(t) - 1, [head_metrics(p.float()) for p in patterns]))
    rows_total = sum(n for n, _ in per_text)
    out = []
    for layer in range(model.cfg.n_layer):
        pooled = {
            k: sum(n * m[layer][k] for n, m in per_text) / rows_total for k in ("entropy", "diag", "prev", "distance")
        }
        # pooled variance: within-text spread plus the spread of the text means
        ss = sum(
            (n - 1) * torch.nan_to_num(m[layer]["distance_std"]) ** 2
            + n * (m[layer]["distance"] - pooled["distance"]) ** 2
            for n, m in per_text
        )
        pooled["distance_std"] = (ss / max(rows_total - 1, 1)).sqrt()
        for h in range(model.cfg.n_head):
            out.append({"layer": layer, "head": h, **{k: float(pooled[k][h]) for k in METRICS}})
    return out


# -------------------------------------------------------------------------- ablation
@contextmanager
def head_removed(model: TinyGPT, layer: int, head: int) -> Iterator[None]:
    """Zero head ``head`` of layer ``layer`` in the output projection; always restored."""
    hs = model.cfg.d_head
    W = model.blocks[layer].attn.proj.weight  # (C, nh*hs): input columns per head
    cols = slice(head * hs, (head + 1) * hs)
    saved = W.data[:, cols].clone()
    try:
        W.data[:, cols] = 0
        yield
    finally:
        W.data[:, cols] = saved


@torch.no_grad()
def ablate_heads(model: TinyGPT, batches: Sequence[tuple[Tensor, Tensor]]) -> dict:
    """Δ loss of removing each head, per batch; mean and spread over the batches."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    batches = [(x.to(device), y.to(device)) for x, y in batches]
    try:
        base = torch.tensor([model(x, y)[1].item() for x, y in batches])
        heads = []
        for layer in range(model.cfg.n_layer):
            for head in range(model.cfg.n_head):
                with head_removed(model, layer, head):
                    lost = torch.tensor([model(x, y)[1].item() for x, y in batches])
                d = lost - base
                heads.append(
                    {
                        "layer": layer,
                        "head": head,
                        "delta_loss": float(d.mean()),
                        "delta_loss_std": float(d.std()) if len(d) > 1 else 0.0,
                        "delta_loss_min": float(d.min()),
                        "delta_loss_max": float(d.max()),
                    }
                )
    finally:
        model.train(was)
    return {
        "base_loss": float(base.mean()),
        "base_loss_std": float(base.std()) if len(base) > 1 else 0.0,
        "batches": len(batches),
        "batch_size": int(batches[0][0].shape[0]) if batches else 0,
        "heads": heads,
    }


@torch.no_grad()
def book_snippet_ablation(model: TinyGPT, seed: int = 0, width: int = 64, length: int = 32) -> dict:
    """What §1.8.6's printed snippet computes, kept as printed: it zeroes columns
    ``head*64:(head+1)*64`` of the output projection whatever the head size, and scores
    random ids against themselves, ``model(x, x)`` (not next-token targets). Each row says
    which columns and which real heads that zeroes."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(2, model.cfg.vocab_size, (1, min(length, model.cfg.block_size)), generator=gen).to(device)
    hs = model.cfg.d_head
    try:
        base = model(x, x)[1].item()
        rows = []
        for layer, blk in enumerate(model.blocks):
            W = blk.attn.proj.weight
            C = W.shape[1]
            for head in range(model.cfg.n_head):
                lo, hi = min(head * width, C), min((head + 1) * width, C)
                saved = W.data[:, lo:hi].clone()
                W.data[:, lo:hi] = 0
                try:
                    ablated = model(x, x)[1].item()
                finally:
                    W.data[:, lo:hi] = saved
                real = [h for h in range(model.cfg.n_head) if h * hs < hi and (h + 1) * hs > lo]
                rows.append(
                    {
                        "layer": layer,
                        "head": head,
                        "columns": [lo, hi],
                        "real_heads_zeroed": real,
                        "delta_loss": ablated - base,
                    }
                )
    finally:
        model.train(was)
    return {
        "protocol": f"as printed in §1.8.6: slices of {width} columns, model(x, x) on {x.shape[1]} random "
        f"ids (seed {seed}); the model's heads are {hs} wide",
        "base_loss": base,
        "heads": rows,
    }


# ---------------------------------------------------------------------- the analysis
def analyze_model(
    model: TinyGPT,
    tok: CharTokenizer,
    corpus_text: str | None,
    *,
    text: str | Sequence[str] | None = None,
    poems: int = POEMS,
    positions: int = POSITIONS,
    ablate: bool = True,
    ablate_batches: int = 8,
) -> dict:
    """Portrait (and ablation) of an in-memory model. ``corpus_text`` gives the
    validation split; it may be None only when ``text`` is given and ablate is False."""
    cfg = model.cfg
    t0 = time.perf_counter()
    if text is not None:
        texts = [text] if isinstance(text, str) else list(text)
        protocol = f"{len(texts)} given text(s) / 给定文本"
    else:
        if corpus_text is None:
            raise ExperimentError("a corpus is needed to pick the evaluation windows")
        length = min(positions, cfg.block_size)
        texts = poem_windows(validation_text(corpus_text, cfg), poems, length)
        protocol = (
            f"{poems} poems × {length} positions from the validation split, each starting at a "
            f"line start / 验证集中 {poems} 段、每段 {length} 个位置（从行首开始）"
        )
    for t in texts:
        check_text(t, cfg)
    unknown = sorted({c for t in texts for c in tok.unknown_chars(t)})
    result = {
        "kind": "head_portrait",
        "config": cfg.to_dict(),
        "eval": {"protocol": protocol, "texts": texts, "unknown_chars": "".join(unknown)},
        "heads": portrait(model, tok, texts),
        "uniform_reference": uniform_reference(max(len(t) for t in texts)),
    }
    if ablate:
        if corpus_text is None:
            raise ExperimentError("head ablation needs a corpus (its validation split)")
        result["ablation"] = ablate_heads(model, validation_batches(corpus_text, tok, cfg, ablate_batches))
        result["book_snippet"] = book_snippet_ablation(model)
    result["book"] = book_values("head_portrait_1_8_5") if is_book_model(cfg) else None
    result["seconds"] = round(time.perf_counter() - t0, 3)
    result.update(provenance())
    return result


def analyze(
    path: str | Path,
    text: str | Sequence[str] | None = None,
    *,
    corpus: str | Path | None = None,
    cfg: Config | None = None,
    poems: int = POEMS,
    positions: int = POSITIONS,
    ablate: bool = True,
    ablate_batches: int = 8,
    device: str = "cpu",
) -> dict:
    """Head portrait of a checkpoint: an attnlab checkpoint or a bare state_dict.

    ``stats = analyze("ckpt_1500.pt")`` as in §1.12.4. ``cfg`` describes a bare
    state_dict (default ``Config()``); ``corpus`` (default: the packaged attnlab/data/corpus.txt)
    gives the validation split and, for a bare state_dict, the vocabulary.
    """
    from ..corpus import load_corpus

    model, tok, mcfg, info = load_model(path, cfg=cfg, corpus=corpus, device=device)
    need_corpus = text is None or ablate
    corpus_text = load_corpus(corpus, min_chars=mcfg.block_size + 1) if need_corpus else None
    result = analyze_model(
        model,
        tok,
        corpus_text,
        text=text,
        poems=poems,
        positions=positions,
        ablate=ablate,
        ablate_batches=ablate_batches,
    )
    result["source"] = info
    result["corpus"] = str(corpus) if corpus else "attnlab/data/corpus.txt"
    notes = [info["note"]] if "note" in info else []
    n_chars = sum(len(t) for t in result["eval"]["texts"])
    n_unk = sum(1 for t in result["eval"]["texts"] for c in t if c not in tok.stoi)
    if n_unk > 0.3 * n_chars:  # ~10% <unk> is normal for the shipped corpus
        notes.append(
            f"{n_unk} of {n_chars} evaluation characters are not in the checkpoint's "
            f"vocabulary: was it trained on another corpus? pass --corpus / "
            f"评估文本中有 {n_unk} 个字不在词表里，是否用了另一份语料训练？"
        )
    result["notes"] = notes
    return result


# ---------------------------------------------------------------------- attention maps
@torch.no_grad()
def attention_maps(model: TinyGPT, tok: CharTokenizer, text: str, source: dict | None = None) -> dict:
    """Attention weights of every layer and head for ``text``, as nested lists (JSON-able), with the
    model they are of (its shape, scaling and seed; from ``source``, load_model's info, the run's
    checkpoint and step) so a figure of them can say which model and step it shows."""
    check_text(text, model.cfg)
    cfg = model.cfg
    about = {
        "d_model": cfg.d_model,
        "n_head": cfg.n_head,
        "n_layer": cfg.n_layer,
        "scaled": cfg.scaled,
        "seed": cfg.seed,
    }
    if source and source.get("checkpoint"):
        ckpt = Path(source["checkpoint"])
        about["run"] = (ckpt.parent if ckpt.name == "ckpt.pt" else ckpt).name
        about["checkpoint"] = str(source["checkpoint"])
    if source and source.get("step") is not None:
        about["step"] = int(source["step"])
    device = next(model.parameters()).device
    idx = torch.tensor([tok.encode(text)], dtype=torch.long, device=device)
    patterns = model.attention_patterns(idx)
    return {
        "kind": "attention_maps",
        "text": text,
        "chars": list(text),
        "unknown_chars": "".join(tok.unknown_chars(text)),
        "model": about,
        "layers": [
            [[[round(float(v), 6) for v in row] for row in p[0, h]] for h in range(p.shape[1])] for p in patterns
        ],
        **provenance(),
    }


# --------------------------------------------------------------------------- dynamics
def dynamics(
    corpus_text: str,
    cfg: Config,
    steps: Sequence[int],
    run_root: str | Path,
    *,
    name: str = "dynamics",
    corpus: str | None = None,
    ablate: bool = False,
    progress: bool = False,
) -> dict:
    """Train once for max(steps) steps (attnlab.runner: resumed or reused like any run) keeping
    the weights at each of ``steps``, then portrait each of them (:func:`dynamics_of_run`).

    One run with kept weights, not one run per length as in the book's sketch:
    the book's loop restarts the cosine schedule for each length, so its
    100-step model is not the first 100 steps of its 1500-step model. Step 0
    (the initial weights) may be asked for.
    """
    from ..runner import Run, execute

    steps = sorted(set(int(s) for s in steps))
    if not steps or steps[0] < 0 or steps[-1] < 1:
        raise ExperimentError(f"--steps must be non-negative step counts with at least one > 0, got {steps}")
    run = Run(name, cfg.replace(max_steps=steps[-1]), keep_weights=tuple(s for s in steps if 0 < s < steps[-1]))
    t0 = time.perf_counter()
    finished = execute([run], corpus_text, run_root, executor="serial", progress=progress, desc="dynamics")[name]
    result = dynamics_of_run(finished.run_dir, corpus_text, steps, ablate=ablate)
    return {**result, "corpus": corpus or "attnlab/data/corpus.txt", "seconds": round(time.perf_counter() - t0, 3)}


def dynamics_of_run(run_dir: str | Path, corpus_text: str, steps: Sequence[int], *, ablate: bool = False) -> dict:
    """Portraits of one finished run at ``steps``: step 0 is its initial model (rebuilt from its
    seed), the last step its trained model (ckpt.pt), the others the weights it kept
    (checkpoint.KeepWeights). A step whose weights were not kept raises ExperimentError naming it."""
    from ..checkpoint import from_payload, read_checkpoint, weights_path
    from ..train import History

    run_dir = Path(run_dir)
    steps = sorted(set(int(s) for s in steps))
    payload = read_checkpoint(run_dir / "ckpt.pt")
    model, tok, cfg = from_payload(payload, run_dir / "ckpt.pt")
    model.eval()
    history = History.from_dict(payload["history"])
    done = len(history.records)
    snapshots = []
    for s in steps:
        if s > done:  # diverged before reaching it
            continue
        if s == done and s:
            m, where = model, str(run_dir / "ckpt.pt")
        elif (m := model_at_step(cfg, s, run_dir)) is not None:
            where = "initial weights (seed)" if s == 0 else str(weights_path(run_dir, s))
        else:
            raise ExperimentError(
                f"{weights_path(run_dir, s)} is missing: the run in {run_dir} did not keep the weights of step {s} "
                f"(it was trained without them); delete {run_dir} and run again to retrain it"
            )
        m = m.eval()
        r = analyze_model(m, tok, corpus_text, ablate=ablate)
        snapshots.append(
            {"step": s, "checkpoint": where, "heads": r["heads"], **({"ablation": r["ablation"]} if ablate else {})}
        )
    length = min(POSITIONS, cfg.block_size)
    eval_set = {
        "protocol": f"{POEMS} poems × {length} positions from the validation split",
        "texts": poem_windows(validation_text(corpus_text, cfg), POEMS, length),
    }
    loss_at = {r["step"] + 1: r["loss"] for r in history.records}
    return {
        "kind": "head_dynamics",
        "config": cfg.to_dict(),
        "run": str(run_dir),
        "steps": steps,
        "train_loss_at": {str(s): loss_at.get(s) for s in steps},
        "diverged_at": history.diverged_at,
        "eval": eval_set,
        "snapshots": snapshots,
        **provenance(),
    }
