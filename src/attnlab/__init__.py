"""attnlab: a small, exact, fast laboratory for studying scaled dot-product attention.

The public names follow the chapter's code (``Config``, ``TinyGPT``,
``CharTokenizer``, ``train``, ``lr_at``, ``get_batch``, ``generate``).

They are imported on first use, not with the package: ``import attnlab`` (and
so ``attnlab --help``) does not load PyTorch. ``from attnlab import TinyGPT``
works as before.
"""

from __future__ import annotations

import importlib
import sys
import types

# public name -> the submodule that defines it
_PUBLIC = {
    "Config": "config",
    "preset": "config",
    "TinyGPT": "model",
    "generate": "model",
    "CharTokenizer": "tokenizer",
    "train": "train",
    "lr_at": "train",
    "get_batch": "train",
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "load_corpus": "corpus",
}

__all__ = list(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value  # the next access is a plain attribute
        return value
    try:  # `import attnlab; attnlab.stats` as when every submodule came with the package
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


class _Package(types.ModuleType):
    """``attnlab.train`` is the function ``train``, also once the submodule ``attnlab.train``
    is imported (the import system then binds the package's attribute to the submodule;
    the setter keeps the function, as the eager ``from .train import train`` did)."""

    @property
    def train(self):
        from .train import train

        return train

    @train.setter
    def train(self, value) -> None:
        pass


sys.modules[__name__].__class__ = _Package
