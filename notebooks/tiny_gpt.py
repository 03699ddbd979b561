"""The chapter's `from tiny_gpt import ...` works from notebooks/: this re-exports attnlab.

cd notebooks && python -c "from tiny_gpt import Config, TinyGPT, train"
"""

import sys
from pathlib import Path

try:
    import attnlab  # noqa: F401  (installed by `make setup`)
except ModuleNotFoundError:  # running from a bare checkout: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attnlab import *  # noqa: F401,F403
from attnlab import __all__  # noqa: F401
from attnlab.corpus import load_corpus  # noqa: F401
from attnlab.model import KVCache, generate  # noqa: F401
