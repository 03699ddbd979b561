"""Arithmetic and time: FLOPs of the tiny GPT, this machine's matmul rate, interleaved timing.

Shared by ``attnlab bench`` and the case's timing table (the case reports its
training time against the arithmetic floor FLOPs / matmul rate, and against
the same matmuls alone at the model's own shapes). Protocol of every timing:
warm-up calls excluded, then rounds in which each variant runs once in turn
(A, B, C, A, B, C, ...), so slow drifts of a shared machine hit all alike; on
CUDA each timing is bracketed by ``torch.cuda.synchronize``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from .config import Config


# =========================================================================== FLOPs
def forward_flops(cfg: Config, batch_size: int | None = None) -> float:
    """Matmul FLOPs of one forward pass over a (batch_size, block_size) batch.

    Counts 2 * m * n * k for every matmul: q/k/v, attention scores and the
    weighted sum (the full T x T square, as the explicit path computes it;
    a causal kernel may skip the upper half), output projection, the two MLP
    layers and the tied head. Norms, softmax, GELU and the loss are left out:
    they are O(T C) per token, under 2% here.
    """
    B = batch_size or cfg.batch_size
    T, C, V = cfg.block_size, cfg.d_model, cfg.vocab_size
    N = B * T
    kv = cfg.kv_heads * cfg.d_head
    per_layer = (
        2 * N * C * (C + 2 * kv)  # qkv
        + 2 * 2 * B * cfg.n_head * T * T * cfg.d_head  # q k^T and p v
        + 2 * N * C * C  # proj
        + 2 * 2 * N * C * cfg.d_ff
    )  # MLP up and down
    return float(cfg.n_layer * per_layer + 2 * N * C * V)


def train_flops(cfg: Config, steps: int = 1) -> float:
    """FLOPs of ``steps`` training steps: forward matmuls x 3 (backward costs twice the forward)."""
    return 3.0 * forward_flops(cfg) * steps


# ========================================================================= timing
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_once(n: int, device: torch.device) -> Callable[[], float]:
    """A function timing one n x n float32 matmul, returning FLOP/s."""
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device)
    b = torch.randn(n, n, generator=g).to(device)

    def run() -> float:
        sync(device)
        t = time.perf_counter()
        torch.mm(a, b)
        sync(device)
        return 2.0 * n**3 / (time.perf_counter() - t)

    return run


def matmul_rate(
    seconds: float = 2.0, sizes: tuple[int, ...] = (1024, 2048), device: str | torch.device = "cpu"
) -> float:
    """Float32 matmul rate of this machine (FLOP/s): median over repeats, best size.

    Large square matmuls are the best case for a BLAS, so the rate is the
    roof that training steps are compared against. Two warm-up calls per size.
    """
    device = torch.device(device) if not isinstance(device, torch.device) else device
    fns = {n: matmul_once(n, device) for n in sizes}
    for fn in fns.values():
        fn(), fn()
    rates: dict[int, list[float]] = {n: [] for n in sizes}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or min(len(r) for r in rates.values()) < 3:
        for n, fn in fns.items():
            rates[n].append(fn())
    return max(statistics.median(r) for r in rates.values())


def interleaved(
    fns: dict[str, Callable[[], Any]],
    repeats: int,
    warmup: int,
    device: torch.device,
    inner: int = 1,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each function: warm-up, then rounds A, B, C, A, B, C...

    cpu: when given, filled with this process's CPU seconds per call (user + system) in the same
    rounds: on a shared machine they count what the call did, not how long it waited for a core."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            sync(device)
            t, c = time.perf_counter(), time.process_time()
            for _ in range(inner):
                fn()
            sync(device)
            times[k].append((time.perf_counter() - t) / inner)
            if cpu is not None:
                cpu.setdefault(k, []).append((time.process_time() - c) / inner)
    return times


def matmul_stepper(cfg: Config, R: int = 1, device: str | torch.device = "cpu") -> Callable[[], None]:
    """Only the matrix multiplies of one training step (of R stacked runs), nothing else.

    Every matmul the forward and backward passes do, at the model's own shapes
    (per linear layer: y = x Wᵀ, dx = dy W, dW = dyᵀ x; per attention: q kᵀ and
    p v forward, four products backward) on fixed random operands. Its FLOPs are
    exactly ``train_flops(cfg) * R``, so its rate is the ceiling this model's
    shapes allow on this machine: small matrices run a BLAS well below the
    rate of large square ones.
    """
    dev = torch.device(device)
    B, T, C, V = cfg.batch_size, cfg.block_size, cfg.d_model, cfg.vocab_size
    M, nh, hs = B * T, cfg.n_head, cfg.d_head
    g = torch.Generator().manual_seed(0)
    rnd = lambda *shape: torch.randn(*shape, generator=g).to(dev)
    linears = [(C, C + 2 * cfg.kv_heads * hs), (C, C), (C, cfg.d_ff), (cfg.d_ff, C)] * cfg.n_layer
    linears.append((C, V))  # the tied head
    ops: list[Callable[[], Any]] = []
    for fan_in, fan_out in linears:
        x, w, dy = rnd(R, M, fan_in), rnd(R, fan_out, fan_in), rnd(R, M, fan_out)
        ops += [
            lambda x=x, w=w: torch.bmm(x, w.transpose(1, 2)),  # y = x Wᵀ
            lambda dy=dy, w=w: torch.bmm(dy, w),  # dx = dy W
            lambda dy=dy, x=x: torch.bmm(dy.transpose(1, 2), x),
        ]  # dW = dyᵀ x
    for _ in range(cfg.n_layer):
        q, k, p = rnd(R * B * nh, T, hs), rnd(R * B * nh, T, hs), rnd(R * B * nh, T, T)
        ops += [
            lambda q=q, k=k: torch.bmm(q, k.transpose(1, 2)),  # scores; dP = dO Vᵀ
            lambda q=q, k=k: torch.bmm(q, k.transpose(1, 2)),
            lambda p=p, k=k: torch.bmm(p, k),  # p v; dV, dQ, dK
            lambda p=p, k=k: torch.bmm(p.transpose(1, 2), k),
            lambda p=p, k=k: torch.bmm(p, k),
            lambda p=p, q=q: torch.bmm(p.transpose(1, 2), q),
        ]

    def step() -> None:
        for op in ops:
            op()

    return step


def matmul_only_step_s(cfg: Config, repeats: int = 5, device: str | torch.device = "cpu") -> float:
    """Median seconds of :func:`matmul_stepper` for one run of ``cfg`` (after one warm-up)."""
    dev = torch.device(device)
    times = interleaved({"matmuls": matmul_stepper(cfg, 1, dev)}, repeats, warmup=1, device=dev)
    return statistics.median(times["matmuls"])


# ====================================================================== the floor
def shape_key(cfg: Config) -> tuple:
    """The matrix shapes of one training step of ``cfg`` (what :func:`matmul_stepper` depends on)."""
    return (
        cfg.d_model,
        cfg.n_head,
        cfg.kv_heads,
        cfg.n_layer,
        cfg.d_ff,
        cfg.batch_size,
        cfg.block_size,
        cfg.vocab_size,
    )


def load_average() -> float | None:
    """The 1-minute load average, or None where the platform has none."""
    import os

    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


def measure_rates(cfgs: list[Config], device: str | torch.device = "cpu") -> dict:
    """What the arithmetic floor of a set of trainings is computed from, measured before they start.

    On CPU everything runs on one thread (one core): the square-matmul rate of :func:`matmul_rate`
    and the seconds of :func:`matmul_stepper` at each model's own shapes. The rate is the larger of
    the square rate and every shape's own matmul rate, so the floor (FLOPs / rate) can never exceed
    the same matmuls alone, by construction. ``reliable`` is False when the load average showed no
    idle core while measuring (the rate is then too low and the floor too high).
    """
    import os

    dev = torch.device(device) if not isinstance(device, torch.device) else device
    load = load_average()
    threads = torch.get_num_threads()
    if dev.type == "cpu":
        torch.set_num_threads(1)
    try:
        square = matmul_rate(device=dev)
        step_s: dict[tuple, float] = {}
        for cfg in cfgs:
            if shape_key(cfg) not in step_s:
                step_s[shape_key(cfg)] = matmul_only_step_s(cfg, device=dev)
    finally:
        torch.set_num_threads(threads)
    after = load_average()
    cores = os.cpu_count() or 1
    busiest = max(x for x in (load, after, 0.0) if x is not None)
    reliable = dev.type == "cuda" or (load is not None and busiest <= cores - 1)
    shape_rates = [train_flops(c) / step_s[shape_key(c)] for c in cfgs]
    rate = max([square, *shape_rates])
    how = (
        f"one thread on one core before training: float32 square matmuls (n = 1024, 2048; median of "
        f"2 s, best size) and the training's own matmul shapes, the larger rate; 1-minute "
        f"load average {busiest:.2f} on {cores} cores"
        if dev.type == "cpu"
        else f"on {dev}: float32 square matmuls and the training's own matmul shapes, the larger rate"
    )
    return {
        "rate": rate,
        "square_rate": square,
        "step_s": step_s,
        "load": busiest,
        "cores": cores,
        "reliable": reliable,
        "protocol": how,
    }


def floor_of(trained: list[tuple[Config, int]], rates: dict, parallel: int) -> dict:
    """The floor and the matmuls-alone time of ``trained`` (config, steps trained), spread over
    ``parallel`` cores (the executor's workers x threads; 1 on a GPU). floor <= matmuls alone."""
    parallel = max(1, parallel)
    flops = sum(train_flops(cfg, steps) for cfg, steps in trained)
    alone = sum(rates["step_s"][shape_key(cfg)] * steps for cfg, steps in trained) / parallel
    floor = flops / (rates["rate"] * parallel)
    return {"flops": flops, "floor_s": floor, "matmuls_only_s": alone}
