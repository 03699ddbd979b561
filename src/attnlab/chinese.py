"""Text typed by a reader, made ready for the tokenizer: simplified -> traditional, unknowns named.

The corpus (唐诗) is in traditional characters, so a reader typing simplified Chinese
(举头望明月) would get ``<unk>`` for every character whose traditional form differs.
``prepare`` converts with OpenCC's ``s2t`` (phrase-aware: 头发 -> 頭髮) before tokenizing,
but keeps every character the vocabulary already has: s2t would also rewrite characters
the traditional corpus itself uses (里, 峰, 云, 后: 1,597 of its 256,616 characters), and a
known character is never made worse. What is still outside the vocabulary is counted and
named in one line (:func:`unknown_line`), for the pages and the CLI alike.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import AttnlabError

CONVERTED_NOTE = "已转换为繁体 / converted to traditional"


class TextError(AttnlabError, ValueError):
    """Text that cannot be UTF-8: bytes of another encoding, passed on by the shell."""


def check_text(text: str, what: str = "the text") -> str:
    """``text`` unchanged when it is valid Unicode; a :class:`TextError` naming the first bad
    position otherwise (bytes that are not UTF-8 reach Python as lone surrogates, which OpenCC,
    the tokenizer and every JSON writer refuse)."""
    bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise TextError(
            f"{what} holds bytes that are not UTF-8 (at character {bad + 1}: the terminal or the shell passed "
            f"another encoding); type it as UTF-8 / 文本含有非 UTF-8 字节，请以 UTF-8 输入"
        )
    return text


@lru_cache(maxsize=1)
def _s2t():
    import opencc  # a dependency (pyproject); imported on first use

    return opencc.OpenCC("s2t")


def s2t(text: str) -> str:
    """OpenCC's simplified -> traditional conversion of ``text`` (valid Unicode: :func:`check_text`)."""
    return _s2t().convert(check_text(text))


@dataclass(frozen=True)
class Prepared:
    """``text`` as typed, ``converted`` as tokenized, what changed and what stays unknown."""

    text: str
    converted: str
    changes: list[tuple[str, str]] = field(default_factory=list)  # (typed, used), distinct, in order
    unknown: list[str] = field(default_factory=list)  # distinct characters outside the vocabulary, in order
    n_unknown: int = 0  # positions that become <unk>

    @property
    def was_converted(self) -> bool:
        return bool(self.changes)


def to_traditional(text: str, known: Container[str] | None = None) -> str:
    """``text`` converted simplified -> traditional, keeping each character in ``known``.

    s2t maps character for character here; where a phrase changes the length
    the conversion falls back to one character at a time, so positions line up.
    """
    whole = s2t(text)
    if len(whole) != len(text):
        whole = "".join(c2 if len(c2 := s2t(c)) == 1 else c for c in text)
    if known is None:
        return whole
    return "".join(a if a in known or a.isspace() else b for a, b in zip(text, whole))


def prepare(text: str, known: Container[str]) -> Prepared:
    """Convert ``text`` for a vocabulary ``known`` (a tokenizer's ``stoi``) and name what stays unknown."""
    converted = to_traditional(text, known)
    changes = list(dict.fromkeys((a, b) for a, b in zip(text, converted) if a != b))
    unknown_pos = [c for c in converted if c not in known]
    return Prepared(text, converted, changes, list(dict.fromkeys(unknown_pos)), len(unknown_pos))


def converted_line(p: Prepared) -> str:
    """One line: what was converted (empty when nothing was)."""
    if not p.was_converted:
        return ""
    pairs = " ".join(f"{a}→{b}" for a, b in p.changes[:12]) + (" …" if len(p.changes) > 12 else "")
    return f"{CONVERTED_NOTE}: {pairs}"


def unknown_line(p: Prepared) -> str:
    """One line naming the characters that become <unk> (empty when none do)."""
    if not p.n_unknown:
        return ""
    shown = "".join("⏎" if c == "\n" else c for c in p.unknown[:20]) + ("…" if len(p.unknown) > 20 else "")
    return (
        f"{p.n_unknown} 个字不在字表里，记为 <unk>：{shown} / "
        f"{p.n_unknown} character(s) not in the vocabulary become <unk>: {shown}"
    )
