"""The four injected bugs of §1.11.7, trained side by side: 注入 bug 的症状表.

    python notebooks/debug_failures.py                    # 300 steps, data/failure_symptoms.json
    python notebooks/debug_failures.py --steps 100 --out runs/failures.json

Same options as ``attnlab failures``. From Python:

    from debug_failures import run, symptoms_table
    print(symptoms_table(run(text, Config(), steps=300)))
"""

import sys
from pathlib import Path

try:
    import attnlab  # noqa: F401
except ModuleNotFoundError:  # a bare checkout: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attnlab.cli import main
from attnlab.lab.failures import run, symptoms_table  # noqa: F401

if __name__ == "__main__":
    sys.exit(main(["failures", *sys.argv[1:]]))
