"""Memory arithmetic for attention: the KV cache (eq. 1.20) and the n x n matrix (eq. 1.45).

Units. The chapter's megabytes and gigabytes are decimal (SI): 1 MB = 10^6 bytes,
1 GB = 10^9 bytes. That is the only reading under which its numbers agree:
2 621 440 bytes/token is "2.6 MB" (it is 2.5 MiB), 4096 tokens is "10.7 GB"
(exactly 10 GiB), and 4096^2 x 32 x 32 x 2 bytes is "34 GB" (exactly 32 GiB).
Functions here return bytes; :func:`mb` / :func:`gb` convert the book's way and
:func:`mib` / :func:`gib` the binary way, and the CLI prints both.
"""

from __future__ import annotations

__all__ = [
    "kv_cache_bytes",
    "attention_matrix_bytes",
    "mb",
    "gb",
    "mib",
    "gib",
    "LLAMA2_70B",
    "book_examples",
]

# Llama-2 70B as the chapter uses it in §1.8.7: 80 layers, 64 query heads of size 128.
LLAMA2_70B = {"n_layer": 80, "n_head": 64, "d_head": 128}


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")
    return int(value)


def kv_cache_bytes(n_layer: int, n_kv_head: int, d_head: int, seq_len: int, bytes_per: int = 2, batch: int = 1) -> int:
    """Bytes held by the KV cache: 2 (K and V) x layers x KV heads x head size x tokens x bytes.

    ``n_kv_head`` is the number of *key/value* heads, not query heads: n_head for
    standard multi-head attention, the number of groups g for GQA (g = 8 for
    Llama-2 70B), and 1 for MQA.
    """
    n_layer = _positive_int("n_layer", n_layer)
    n_kv_head = _positive_int("n_kv_head", n_kv_head)
    d_head = _positive_int("d_head", d_head)
    seq_len = _positive_int("seq_len", seq_len)
    bytes_per = _positive_int("bytes_per", bytes_per)
    batch = _positive_int("batch", batch)
    return 2 * n_layer * n_kv_head * d_head * seq_len * bytes_per * batch


def attention_matrix_bytes(n: int, n_head: int, n_layer: int, bytes_per: int = 2) -> int:
    """Bytes of the n x n score matrices if every head of every layer keeps one (eq. 1.45)."""
    n = _positive_int("n", n)
    n_head = _positive_int("n_head", n_head)
    n_layer = _positive_int("n_layer", n_layer)
    bytes_per = _positive_int("bytes_per", bytes_per)
    return n * n * n_head * n_layer * bytes_per


def mb(nbytes: int) -> float:
    """Decimal megabytes (10^6 bytes), the book's unit."""
    return nbytes / 1e6


def gb(nbytes: int) -> float:
    """Decimal gigabytes (10^9 bytes), the book's unit."""
    return nbytes / 1e9


def mib(nbytes: int) -> float:
    """Binary mebibytes (2^20 bytes)."""
    return nbytes / 2**20


def gib(nbytes: int) -> float:
    """Binary gibibytes (2^30 bytes)."""
    return nbytes / 2**30


def book_examples() -> list[dict]:
    """Every memory figure the chapter prints, recomputed: label, bytes, value in the book's unit.

    ``book`` is the number as printed; ``unit`` is "MB" or "GB" (decimal).
    """
    L = LLAMA2_70B
    per_tok = lambda kv: kv_cache_bytes(L["n_layer"], kv, L["d_head"], 1)  # noqa: E731
    rows = [
        (
            "每 token 的 KV 缓存，Llama-2 70B 标准多头 / KV cache per token, Llama-2 70B MHA",
            per_tok(64),
            "MB",
            2.6,
            "§1.8.7 eq. 1.21",
        ),
        (
            "4096 token 的 KV 缓存，标准多头 / KV cache at 4096 tokens, MHA",
            kv_cache_bytes(80, 64, 128, 4096),
            "GB",
            10.7,
            "§1.8.7",
        ),
        ("每 token 的 KV 缓存，GQA g=8 / KV cache per token, GQA g=8", per_tok(8), "MB", 0.33, "§1.8.8"),
        ("每 token 的 KV 缓存，MQA / KV cache per token, MQA", per_tok(1), "MB", 0.04, "§1.8.8"),
        (
            "4096 token 的 KV 缓存，GQA g=8 / KV cache at 4096 tokens, GQA g=8",
            kv_cache_bytes(80, 8, 128, 4096),
            "GB",
            1.3,
            "§1.15.4",
        ),
        ("单头单层 n=8192 / one n x n matrix, n=8192", attention_matrix_bytes(8192, 1, 1), "MB", 134, "§1.11.5"),
        ("n=8192，32 头 × 32 层 / 32 heads x 32 layers", attention_matrix_bytes(8192, 32, 32), "GB", 137, "§1.11.5"),
        (
            "n=4096，32 头 × 32 层 / 32 heads x 32 layers",
            attention_matrix_bytes(4096, 32, 32),
            "GB",
            34,
            "§1.13.5 eq. 1.45",
        ),
        (
            "n=2048，16 头 × 24 层 / 16 heads x 24 layers",
            attention_matrix_bytes(2048, 16, 24),
            "GB",
            3.22,
            "self-test 9, eq. 1.57",
        ),
    ]
    out = []
    for label, nbytes, unit, book, where in rows:
        value = mb(nbytes) if unit == "MB" else gb(nbytes)
        out.append({"label": label, "bytes": nbytes, "unit": unit, "value": value, "book": book, "where": where})
    return out
