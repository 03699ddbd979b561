"""Bytes the 动手训练 / Train page adds to the static site and to the wheel, by listing files.

    python scripts/train_page_bytes.py --wheel dist/attnlab-*.whl [--site DIR] [--out data/train_page_bytes.json]

Counted as the train page's: its page and scripts (train.html, train.js, train-worker.js), the
vendored libraries only it loads (TensorFlow.js, fflate, js-sha256; onnxruntime-web is shared
with the playground and listed apart, not counted) and, on the site, the exported initial weights
and batches (train/); in the wheel, also the Python modules behind it (trainexport, trainroutes,
trainsite, browserrun). Without --site, ``attnlab site`` builds one into a temporary folder. The
wheel's sizes are the files' own and their compressed sizes inside the wheel.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PAGE = ["train.html", "train.js", "train-worker.js"]
ONLY_TRAIN_VENDOR = ["tfjs", "fflate", "js-sha256"]
SHARED_VENDOR = ["onnxruntime-web"]
MODULES = ["trainexport.py", "trainroutes.py", "trainsite.py", "browserrun.py"]


def site_part(path: str) -> str | None:
    """Which part of the train page a file of the site is, or None."""
    parts = path.split("/")
    if path == "train.html" or (parts[0] == "static" and parts[-1] in PAGE):
        return "page and scripts"
    if parts[:2] == ["static", "vendor"] and parts[2] in ONLY_TRAIN_VENDOR:
        return f"vendor/{parts[2]}"
    if parts[:2] == ["static", "vendor"] and parts[2] in SHARED_VENDOR:
        return f"shared: vendor/{parts[2]}"
    if parts[0] == "train":
        return "exported init and batches (train/)"
    return None


def wheel_part(path: str) -> str | None:
    parts = path.split("/")
    if parts[:2] != ["attnlab", "web"]:
        return None
    if parts[2] == "static" and parts[-1] in PAGE:
        return "page and scripts"
    if parts[2] == "vendor" and len(parts) > 4 and parts[3] in ONLY_TRAIN_VENDOR:
        return f"vendor/{parts[3]}"
    if parts[2] == "vendor" and len(parts) > 4 and parts[3] in SHARED_VENDOR:
        return f"shared: vendor/{parts[3]}"
    if len(parts) == 3 and parts[2] in MODULES:
        return "Python modules"
    return None


def tally(rows) -> dict:
    """{part: {files, bytes[, compressed]}} and the totals, from (path, part, bytes, compressed) rows."""
    out: dict = {}
    for _, part, size, packed in rows:
        if part is None:
            continue
        t = out.setdefault(part, {"files": 0, "bytes": 0, "compressed": 0})
        t["files"] += 1
        t["bytes"] += size
        t["compressed"] += packed or 0
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", required=True)
    ap.add_argument("--site", default=None, help="a site attnlab site wrote (default: build one)")
    ap.add_argument("--out", default=None, help="also write the numbers as JSON here")
    args = ap.parse_args(argv)

    tmp = None
    site = Path(args.site) if args.site else None
    if site is None:
        from attnlab.web.site import build_site

        tmp = tempfile.TemporaryDirectory()
        site = Path(tmp.name) / "site"
        build_site(site)
    site_rows = [
        (p.relative_to(site).as_posix(), site_part(p.relative_to(site).as_posix()), p.stat().st_size, None)
        for p in sorted(site.rglob("*"))
        if p.is_file()
    ]
    with zipfile.ZipFile(args.wheel) as z:
        wheel_rows = [(i.filename, wheel_part(i.filename), i.file_size, i.compress_size) for i in z.infolist()]
    wheel_bytes = Path(args.wheel).stat().st_size
    result = {
        "site": {
            "parts": tally(site_rows),
            "site_bytes": sum(r[2] for r in site_rows),
            "files": [r[:3] for r in site_rows if r[1]],
        },
        "wheel": {
            "file": Path(args.wheel).name,
            "parts": tally(wheel_rows),
            "wheel_bytes": wheel_bytes,
            "unpacked_bytes": sum(r[2] for r in wheel_rows),
            "files": [r[:4] for r in wheel_rows if r[1]],
        },
    }
    for where, rows_key in (("site", "site_bytes"), ("wheel", "wheel_bytes")):
        parts = result[where]["parts"]
        counted = {k: v for k, v in parts.items() if not k.startswith("shared")}
        result[where]["train_page_bytes"] = sum(v["bytes"] for v in counted.values())
        if where == "wheel":
            result[where]["train_page_compressed"] = sum(v["compressed"] for v in counted.values())
        print(f"\n{where} ({result[where][rows_key] / 1e6:.1f} MB in all)")
        print("| part | files | bytes" + (" | in the wheel (compressed)" if where == "wheel" else "") + " |")
        print("|---|---|---" + ("|---" if where == "wheel" else "") + "|")
        for k, v in sorted(parts.items(), key=lambda kv: (kv[0].startswith("shared"), kv[0])):
            extra = f" | {v['compressed']:,}" if where == "wheel" else ""
            print(f"| {k} | {v['files']} | {v['bytes']:,}{extra} |")
        extra = f" | {result[where]['train_page_compressed']:,}" if where == "wheel" else ""
        n = sum(v["files"] for v in counted.values())
        print(f"| **the train page (not shared)** | {n} | **{result[where]['train_page_bytes']:,}**{extra} |")
    if args.out:
        from attnlab.io import write_json

        write_json(args.out, result)
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
