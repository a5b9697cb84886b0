#!/usr/bin/env bash
# The main job of `make demo`: seed 001's program trained data-parallel on two
# local ranks by `flotilla launch`, then the single-process examples.
set -euo pipefail
build="${1:-build}"
bin="$build/bin"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/flotilla-demo.XXXXXX")"

echo "== train_with_fleet on 2 ranks (seed 001: collective data parallel; logs in $logs)"
"$bin/flotilla" launch --devices 0,1 --log_dir "$logs/collective" "$bin/train_with_fleet" | tail -n 4

echo "== fit_a_line (seed 000: linear regression on UCI housing)"
"$bin/fit_a_line" --epochs 100 | tail -n 2

echo "== mlp (seed 001: 32 -> 1280 -> 1280 -> 2, SGD 0.01, batch 128)"
"$bin/mlp" | tail -n 2

echo "== wide_and_deep on 1 server + 2 workers (seed 004: parameter-server CTR model, GEO)"
"$bin/flotilla" launch --server_num 1 --worker_num 2 --log_dir "$logs/ps" \
  "$bin/wide_and_deep" --mode geo --train_samples 60000 --test_samples 5000 | tail -n 2
