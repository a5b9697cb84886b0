#!/usr/bin/env bash
# The main job of `make demo`: trains the examples and prints their results.
set -euo pipefail
build="${1:-build}"
bin="$build/bin"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

echo "== fit_a_line (seed 000: linear regression on UCI housing)"
"$bin/fit_a_line" --epochs 100 | tail -n 3

echo "== mlp (seed 001: 32 -> 1280 -> 1280 -> 2, SGD 0.01, batch 128)"
"$bin/mlp" | tail -n 3
