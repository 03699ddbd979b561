"""第 1 章案例：一条命令复现 / The chapter's case study in one command.

    python notebooks/run_ch1_case.py --steps 1500

Same as `attnlab case`; writes data/ch1_case.json, figures/ and reports/ of the repo
(wherever it is started from, unless --out says otherwise).
"""

import sys
from pathlib import Path

try:
    import attnlab  # noqa: F401
except ModuleNotFoundError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attnlab.cli import main

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    args = sys.argv[1:]
    if "--out" not in args:  # results land in the repo's data/, figures/, reports/
        args += ["--out", str(ROOT)]
    sys.exit(main(["case", *args]))
