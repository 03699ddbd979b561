"""Head portrait of a trained model (§1.8.5, §1.10.3, §1.12.4): 注意力头画像.

    python notebooks/analyze_heads.py runs/default/ckpt.pt            # table + heads.json
    python notebooks/analyze_heads.py ckpt_1500.pt --maps maps.png    # also heatmaps
    python notebooks/analyze_heads.py --dynamics --steps 100,500,1500 # train once, follow the heads

Same options as ``attnlab heads``. From Python, as in the chapter:

    from analyze_heads import analyze
    stats = analyze("ckpt_1500.pt")      # an attnlab checkpoint or torch.save(model.state_dict())
"""

import sys
from pathlib import Path

try:
    import attnlab  # noqa: F401
except ModuleNotFoundError:  # a bare checkout: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from attnlab.cli import main
from attnlab.lab.heads import analyze, portrait_table  # noqa: F401
from attnlab.lab.portrait import attention_maps  # noqa: F401

if __name__ == "__main__":
    sys.exit(main(["heads", *sys.argv[1:]]))
