"""attnlab: a small, exact, fast laboratory for studying scaled dot-product attention.

The public names follow the chapter's code (``Config``, ``TinyGPT``,
``CharTokenizer``, ``train``, ``lr_at``, ``get_batch``, ``generate``).
"""

from .checkpoint import load_checkpoint, save_checkpoint
from .config import Config, preset
from .corpus import load_corpus
from .model import TinyGPT, generate
from .tokenizer import CharTokenizer
from .train import get_batch, lr_at, train

__all__ = [
    "Config",
    "preset",
    "TinyGPT",
    "generate",
    "CharTokenizer",
    "train",
    "lr_at",
    "get_batch",
    "load_checkpoint",
    "save_checkpoint",
    "load_corpus",
]
__version__ = "0.1.0"
