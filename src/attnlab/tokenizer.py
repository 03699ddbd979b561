"""Character tokenizer with a fixed vocabulary of the most frequent characters.

Ids: ``<pad>`` = 0, ``<unk>`` = 1, then the ``vocab_size - 2`` most frequent
characters of the text, most frequent first (ties broken by first appearance).

Newlines: the book counts characters without newlines (§1.18.1). Here the
newline is an ordinary character: it is counted and, being frequent in a
one-line-per-verse corpus, it gets an id, so a line break never becomes
``<unk>`` and decode(encode(text)) restores the line structure.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import AttnlabError
from .io import write_json

PAD, UNK = 0, 1
SPECIALS = ("<pad>", "<unk>")


class CharTokenizer:
    def __init__(self, text: str, vocab_size: int):
        if vocab_size < 3:
            raise ValueError(f"vocab_size must be at least 3, got {vocab_size}")
        counts = Counter(text)
        keep = [c for c, _ in counts.most_common(vocab_size - 2)]
        self._set_itos(list(SPECIALS) + keep)

    def _set_itos(self, itos: list[str]) -> None:
        self.itos = itos
        self.stoi = {c: i for i, c in enumerate(itos)}

    @classmethod
    def from_itos(cls, itos: Sequence[str]) -> CharTokenizer:
        itos = list(itos)
        if itos[:2] != list(SPECIALS):
            raise AttnlabError("tokenizer vocabulary must start with <pad>, <unk>")
        tok = cls.__new__(cls)
        tok._set_itos(itos)
        return tok

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(c, UNK) for c in text]

    def unknown_chars(self, text: str) -> list[str]:
        return sorted({c for c in text if c not in self.stoi})

    def encode_warn(self, text: str) -> list[int]:
        """Encode, warning once about characters that become <unk>."""
        unknown = self.unknown_chars(text)
        if unknown:
            warnings.warn(
                f"{len(unknown)} character(s) not in the vocabulary become <unk>: {''.join(unknown[:20])}", stacklevel=2
            )
        return self.encode(text)

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.itos[i] if i >= 2 else ("" if i == PAD else "<unk>") for i in ids)

    def to_dict(self) -> dict:
        return {"type": "char", "itos": self.itos}

    def save(self, path: str | Path) -> None:
        write_json(path, self.to_dict(), indent=None)

    @classmethod
    def load(cls, path: str | Path) -> CharTokenizer:
        from .schemas import load

        data = load("tokenizer", path, max_bytes=10**8)  # bounded, checked: attnlab.schemas.TokenizerFile
        try:
            return cls.from_itos(data["itos"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise AttnlabError(f"cannot read tokenizer {path}: {e}") from None
