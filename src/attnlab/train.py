"""Training: the chapter's loop, with attention diagnostics at every recorded step.

``train(text, cfg)`` is the whole story: tokenizer, split, model, AdamW with weight decay on
matrices only (:func:`make_optimizer`), warmup + cosine schedule (:func:`lr_at`), random windows
(:func:`get_batch`), one step (:func:`train_step`: forward, backward, gradient clipping, update),
validation (:func:`evaluate`) and the loop (:func:`_loop`). What a run folder needs besides —
resume from a checkpoint, the files written as the run goes, Ctrl-C, timing — is
:mod:`attnlab.session`'s. A run resumed from a checkpoint finishes bit for bit equal to one never
interrupted: the batch generator's state, the optimizer and the history travel in the
checkpoint, and the validation batches are fixed by the seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .config import Config
from .errors import CorpusError
from .model import TinyGPT
from .runfolder import RunFolder
from .runtime import keep_freed_memory
from .session import (  # noqa: F401  (History ... parse_metrics: re-exported, where they were)
    METRICS_FILE,
    Callback,
    History,
    Session,
    StopRequest,
    TrainingInterrupted,
    check_fits,
    check_request,
    check_restartable,
    fingerprint,
    fire,
    parse_metrics,
    resolve_device,
    step_bytes,
)
from .tokenizer import CharTokenizer


# ------------------------------------------------------------------- schedule, batches
def lr_at(step: int, cfg: Config) -> float:
    """Linear warmup to cfg.lr over cfg.warmup steps, then cosine down to 10% of lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    span = max(1, cfg.max_steps - cfg.warmup)
    progress = min(1.0, (step - cfg.warmup) / span)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def get_batch(data: Tensor, block_size: int, batch_size: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random windows of ``data`` (1-D LongTensor); ``gen`` fixes every batch."""
    if len(data) < block_size + 1:
        raise CorpusError(f"data has {len(data)} tokens, fewer than block_size + 1 = {block_size + 1}")
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=gen)
    x = torch.stack([data[i : i + block_size] for i in ix.tolist()])  # (B, T)
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix.tolist()])
    return x, y


def split_data(ids: Tensor, cfg: Config) -> tuple[Tensor, Tensor]:
    """Contiguous split: the last ``val_fraction`` of the text is validation.

    A corpus too short for two windows validates on its last window (which the
    training split also contains); the record says so (``val_overlaps_train``).
    """
    need = cfg.block_size + 1
    if len(ids) < need:
        raise CorpusError(
            f"corpus has {len(ids)} characters, fewer than block_size + 1 = {need}; "
            f"use a longer text or --set block_size=N with a smaller N"
        )
    n_val = max(int(len(ids) * cfg.val_fraction), need)
    if len(ids) - n_val < need:
        return ids, ids[-need:]
    return ids[:-n_val], ids[-n_val:]


def make_optimizer(model: TinyGPT, cfg: Config) -> torch.optim.AdamW:
    """AdamW (0.9, 0.95); weight decay on matrices (dim >= 2) only, not on norms and biases."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))


def train_step(
    model: TinyGPT,
    opt,
    *,
    data: Tensor,
    gen: torch.Generator,
    cfg: Config,
    step: int,
    device: torch.device,
    autocast=None,
) -> dict:
    """One optimizer update on a fresh batch; its record (step, loss, lr, grad_norm, and the
    per-layer diagnostics when this step is recorded). ``_batch`` rides along for the caller."""
    lr = lr_at(step, cfg)
    for g in opt.param_groups:
        g["lr"] = lr
    x, y = get_batch(data, cfg.block_size, cfg.batch_size, gen)
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    record_now = cfg.record_every > 0 and step % cfg.record_every == 0
    model.train()
    with autocast or nullcontext():
        _, loss = model(x, y, record=record_now)
    record = {"step": step, "loss": loss.item(), "lr": lr, "grad_norm": float("nan"), "_batch": (x, y)}
    if math.isfinite(record["loss"]):
        opt.zero_grad(set_to_none=True)
        loss.backward()
        max_norm = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        record["grad_norm"] = grad_norm.item()
    # else: no update, so the weights stay those that produced the non-finite loss;
    # on_nonfinite callbacks re-run the batch on them and the checkpoint is not NaN.
    if record_now:
        record["layers"] = model.diagnostics()
    return record


@torch.no_grad()
def evaluate(model: TinyGPT, batches: list[tuple[Tensor, Tensor]], device, autocast=None) -> float:
    was = model.training
    model.eval()
    total = 0.0
    with autocast or nullcontext():
        for x, y in batches:
            total += model(x.to(device), y.to(device))[1].item()
    model.train(was)
    return total / len(batches)


# --------------------------------------------------------------------------- training
def train(
    text: str,
    cfg: Config | None = None,
    *,
    out_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    extend: bool = False,
    progress: bool = False,
    callbacks: Iterable[Any] = (),
    tok: CharTokenizer | None = None,
    stop_after: int | None = None,
    tensorboard: bool = False,
) -> tuple[TinyGPT, CharTokenizer, History]:
    """Train the tiny GPT on ``text``; returns (model, tokenizer, history).

    out_dir: the run folder, where metrics.jsonl, ckpt.pt, config.json,
    tokenizer.json and summary.json go (nothing is written when None). The
    folder is locked for this process while training (see
    :mod:`attnlab.runfolder`), and nothing but the lock is written into it until
    the first step has succeeded.

    resume: continue the run in out_dir from its ckpt.pt. The corpus and the
    tokenizer must be those the checkpoint was trained on (it carries their
    fingerprints) and the config the same except ``device`` (and ``max_steps``
    with ``extend``).
    extend: with resume, a different ``max_steps`` (at least the steps already
    run) extends the run: the learning-rate schedule from the checkpoint's step
    on is the new one, and the change is recorded as ``schedule`` in the
    checkpoint and summary.json. Without it a changed max_steps is refused, so
    a resumed run stays bit-for-bit the run never interrupted.
    overwrite: replace the run already in out_dir (its files go once the first
    step of the new run has succeeded). Without resume or overwrite, an out_dir
    that holds a run is refused with :class:`RunFolderError`.
    stop_after: stop (with a checkpoint) after this many steps, as Ctrl-C would —
    used by tests of resume.
    With out_dir, attention snapshots of cfg.probe go to out_dir/snapshots.npz
    (attnlab.snapshots; snapshot_every=0 turns them off) and tensorboard=True adds
    TensorBoard event files (attnlab.tensorboard_log).
    """
    cfg = cfg or Config()
    check_request(cfg, out_dir, resume=resume, overwrite=overwrite)
    device = resolve_device(cfg.device)
    check_fits(cfg, device)
    keep_freed_memory()  # see attnlab.runtime: fewer page faults per step
    loop = dict(device=device, progress=progress, callbacks=list(callbacks), tok=tok, stop_after=stop_after)
    if out_dir is None:
        session = Session(None, cfg, text, resume=False, overwrite=False, extend=False)
        return _loop(text, cfg, session=session, tensorboard=tensorboard, **loop)
    with RunFolder(out_dir):
        if resume and not (Path(out_dir) / "ckpt.pt").is_file():
            # killed before its first checkpoint: nothing to continue from but step 0, and from the
            # same seed the steps come out the same, so --resume starts it again (if it is this run)
            check_restartable(Path(out_dir), cfg, text, extend)
            resume, overwrite = False, True
        session = Session(Path(out_dir), cfg, text, resume=resume, overwrite=overwrite, extend=extend)
        return _loop(text, cfg, session=session, tensorboard=tensorboard, **loop)


def _loop(
    text: str,
    cfg: Config,
    *,
    session: Session,
    device: torch.device,
    progress: bool,
    callbacks: list,
    tok: CharTokenizer | None,
    stop_after: int | None,
    tensorboard: bool,
) -> tuple[TinyGPT, CharTokenizer, History]:
    """The loop the chapter teaches; ``session`` keeps the run folder's books."""
    tok = session.begin(tok)  # refusals, the checkpoint to resume from, the tokenizer
    train_ids, val_ids = split_data(torch.tensor(tok.encode(text), dtype=torch.long), cfg)
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg).to(device)
    opt = make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    val_gen = torch.Generator().manual_seed(cfg.seed + 1)
    val_batches = [get_batch(val_ids, cfg.block_size, cfg.batch_size, val_gen) for _ in range(cfg.eval_batches)]
    history, start = session.restore(model, opt, gen)
    callbacks += session.observers(tensorboard=tensorboard)
    if session.payload is not None:  # metrics.jsonl mirrors the checkpoint's history from the start
        session.start_files(history, start)
    save = lambda step: session.checkpoint(step, model=model, opt=opt, gen=gen, history=history)  # noqa: E731
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.dtype == "bf16" else nullcontext()
    bar, stopper, step, completed = _progress(start, cfg.max_steps, progress), StopRequest(), start, False
    session.start_clock()
    fire(callbacks, "on_train_begin", start, model)
    try:
        with stopper.installed():
            # a diverged run is finished: resuming it trains nothing (its last record is the divergence)
            for step in range(start, cfg.max_steps if history.diverged_at is None else start):
                if stopper.requested or (stop_after is not None and step >= start + stop_after):
                    raise TrainingInterrupted(step, save(step))
                record = train_step(
                    model, opt, data=train_ids, gen=gen, cfg=cfg, step=step, device=device, autocast=autocast
                )
                x, y = record.pop("_batch")
                if not math.isfinite(record["loss"]):
                    history.diverged_at = step
                    fire(callbacks, "on_nonfinite", step, (x, y), model)
                    history.records.append(record)  # the diverged step is recorded like any other:
                    session.record(record, history, start)  # in metrics.jsonl, the summary and the checkpoint
                    break
                last = step == cfg.max_steps - 1
                if (cfg.eval_every and (step + 1) % cfg.eval_every == 0) or last:
                    record["val_loss"] = evaluate(model, val_batches, device, autocast)
                history.records.append(record)
                session.record(record, history, start)
                fire(callbacks, "on_step_end", step, record, model)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{record['loss']:.3f}", refresh=False)
                if cfg.ckpt_every and (step + 1) % cfg.ckpt_every == 0 and not last:
                    save(step + 1)
        save(len(history.records) if history.diverged_at is None else history.diverged_at)
        completed = True
    finally:
        fire(callbacks, "on_train_end", step)
        if bar is not None:
            bar.close()
        session.close(start=start, history=history, device=device, completed=completed)
    session.summarize(history, model)
    model.eval()
    return model, tok, history


def _progress(start: int, total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, leave=False)
