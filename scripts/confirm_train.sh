#!/usr/bin/env bash
# Train the registered confirmatory round in the background, one seed's batch at a time, and commit the
# ledger (data/confirmatory/progress.json) after each batch. Resumable: run it again after an interruption;
# finished runs are reused and a cut run resumes from its checkpoint. Niced, one thread per worker.
#   nohup bash scripts/confirm_train.sh 2 > confirm/train.log 2>&1 &
set -euo pipefail
workers="${1:-2}"
py="${PYTHON:-.venv/bin/python}"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p confirm
while true; do
  before=$(git rev-parse HEAD)
  nice -n 19 "$py" -m attnlab.cli claims --confirm-train --workers "$workers" --batches 1 | tee confirm/last_batch.log
  if ! git diff --quiet -- data/confirmatory/progress.json 2>/dev/null || [ -n "$(git status --porcelain -- data/confirmatory)" ]; then
    git add data/confirmatory/progress.json
    git commit -q -m "confirmatory round: $(tail -n 1 confirm/last_batch.log | sed 's/^.*runs: //')"
  fi
  if grep -q "finished$" confirm/last_batch.log; then
    echo "all planned runs finished"; break
  fi
  [ "$(git rev-parse HEAD)" = "$before" ] && { echo "a batch trained nothing: stopping"; break; }
done
