#!/usr/bin/env bash
# GPU check: everything that needs an NVIDIA GPU, in one run of under 5 minutes (H200).
#
#   1. the test suite with ATTNLAB_TEST_DEVICE=cuda (tests that honour it run
#      their comparisons on the GPU; CUDA-only tests run instead of skipping)
#   2. attnlab case --quick on cuda
#   3. attnlab bench train (small and big: recording, not recording, reference, matmuls alone)
#   4. attnlab bench attention (n = 512 .. 8192)
#   5. a short summary table
#
# Usage: scripts/gpu_check.sh [OUTDIR]     (default: $OUT if set, else gpu_check_out)
# Environment: PYTHON (default .venv/bin/python, else python3); STAGE_TIMEOUT_S
# caps each stage (default 90 s for tests, 80 s for the case, 50 s per bench:
# 270 s in all). GPU_CHECK_DEVICE=cpu runs the same stages on the CPU, to test
# this script on a machine without a GPU (the stages then time out).
set -u
cd "$(dirname "$0")/.."
OUTDIR="${1:-${OUT:-gpu_check_out}}"
mkdir -p "$OUTDIR"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
DEVICE="${GPU_CHECK_DEVICE:-cuda}"
if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_check: torch.cuda.is_available() is False with $PY; nothing to check" >&2
  exit 2
fi
"$PY" -c "import attnlab" 2>/dev/null || export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import torch; print('gpu_check: torch', torch.__version__,
  torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"

declare -A STATUS SECONDS_USED
stage() {   # stage NAME TIMEOUT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "=== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" > >(tee "$OUTDIR/$name.log") 2>&1
  local rc=$?
  SECONDS_USED[$name]=$((SECONDS - t0))
  case $rc in
    0) STATUS[$name]=ok ;;
    124|137) STATUS[$name]="TIMEOUT" ;;
    *) STATUS[$name]="FAIL (rc $rc)" ;;
  esac
}

ATTNLAB="$PY -m attnlab.cli"
export ATTNLAB_TEST_DEVICE=$DEVICE
stage tests "${STAGE_TIMEOUT_S:-90}" "$PY" -m pytest -q -p no:cacheprovider -x \
  tests/test_runner.py tests/test_bench.py tests/test_train.py tests/test_model.py \
  tests/test_diagnostics.py tests/test_attention_reference.py tests/test_attention_online.py
stage case "${STAGE_TIMEOUT_S:-80}" $ATTNLAB case --quick --device "$DEVICE" --no-progress --out "$OUTDIR/case"
stage bench_train "${STAGE_TIMEOUT_S:-50}" $ATTNLAB bench train --device "$DEVICE" --repeats 7 --warmup 5 \
  --json "$OUTDIR/bench_train.json"
stage bench_attention "${STAGE_TIMEOUT_S:-50}" $ATTNLAB bench attention --device "$DEVICE" --repeats 30 \
  --warmup 5 --budget 35 --json "$OUTDIR/bench_attention.json" --figure "$OUTDIR/bench_attention.png"

echo
echo "=== summary"
for s in tests case bench_train bench_attention; do
  printf '  %-16s %-14s %4ss\n' "$s" "${STATUS[$s]}" "${SECONDS_USED[$s]}"
done
"$PY" - "$OUTDIR" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
t = out / "bench_train.json"
if t.is_file():
    r = json.loads(t.read_text())
    print(f"\n  bench train ({r['machine'].get('cuda') or r['machine']['device']}, "
          f"matmul roof {r['matmul_rate_flops'] / 1e12:.1f} TFLOP/s)")
    print(f"  {'config':<6} {'variant':<32}{'ms/run':>8}{'x ref':>7}{'tokens/s':>11}")
    for name, c in r["configs"].items():
        for row in c["rows"]:
            ratio = f"{row['vs_reference']:.2f}" if row["vs_reference"] else "-"
            print(f"  {name:<6} {row['variant']:<32}{row['ms_per_run_step']:>8.2f}{ratio:>7}"
                  f"{row['tokens_per_s']:>11,.0f}")
a = out / "bench_attention.json"
if a.is_file():
    r = json.loads(a.read_text())
    book = dict(zip(r["book"]["n"], r["book"]["ms"]))
    print(f"\n  bench attention (ms, median)   {'n':>6}{'sdpa':>9}{'explicit':>10}{'blocked':>9}{'A6000':>8}")
    for row in r["rows"]:
        ms = row["ms"]
        cell = lambda k: f"{ms[k]:.3f}" if k in ms else "-"
        print(f"  {'':<30}{row['n']:>6}{cell('sdpa'):>9}{cell('explicit'):>10}{cell('blocked'):>9}"
              f"{book.get(row['n'], float('nan')):>8.3f}")
EOF
for s in tests case bench_train bench_attention; do
  [ "${STATUS[$s]}" = ok ] || exit 1
done
