"""``python -m attnlab …`` is the ``attnlab`` command (as ``python -m attnlab.cli …`` is)."""

import sys

from .cli import main

sys.exit(main())
