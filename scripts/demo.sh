#!/usr/bin/env bash
# `make demo`. Its main job is seed 001's `train_with_fleet.py --model=...
# --data_dir=...` driven from Python: examples/python/train_with_fleet.py
# trains ResNet-18 on the handwritten digits (real JPEGs in the ImageNet
# layout) data-parallel on two local ranks under `flotilla launch`, and the
# validation accuracy rises epoch by epoch. Then seed 001's mlp, and the
# single-process C++ examples.
set -euo pipefail
build="${1:-build}"
bin="$build/bin"
here="$(cd "$(dirname "$0")" && pwd)"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/flotilla-demo.XXXXXX")"

echo "== ResNet-18 on the digits JPEGs, 2 ranks, from Python (seed 001: train_with_fleet.py --model; logs in $logs)"
"$here/make_digits_imagenet.sh" "$logs/digits" --size 32
# The launcher runs a .py under the build's Python with the in-tree package importable.
"$bin/flotilla" launch --nproc_per_node 2 --log_dir "$logs/resnet" "$here/../examples/python/train_with_fleet.py" \
  --model=ResNet18 --data_dir="$logs/digits" --image_size 32 --batch_size 32 --num_epochs 4 \
  --lr 0.02 --lr_strategy cosine_decay --lower_scale 0.6 --random_flip false --print_step 11 \
  --random_seed 1 | tee "$logs/resnet.out" | grep -E "^(train_with_fleet:|epoch )"
top1="$(grep '^{' "$logs/resnet.out" | tail -n 1 | sed -n 's/.*"val_top1":\([0-9.e+-]*\).*/\1/p')"
echo "ResNet-18 reached $(awk -v t="$top1" 'BEGIN { printf "%.1f", 100 * t }')% validation top-1 on 2 ranks"

echo "== train_with_fleet on 2 ranks (seed 001's mlp: collective data parallel)"
"$bin/flotilla" launch --devices 0,1 --log_dir "$logs/collective" "$bin/train_with_fleet" | tail -n 4

echo "== fit_a_line (seed 000: linear regression on UCI housing)"
"$bin/fit_a_line" --epochs 100 | tail -n 2

echo "== mlp (seed 001: 32 -> 1280 -> 1280 -> 2, SGD 0.01, batch 128)"
"$bin/mlp" | tail -n 2

echo "== wide_and_deep on 1 server + 2 workers (seed 004: parameter-server CTR model, GEO)"
"$bin/flotilla" launch --server_num 1 --worker_num 2 --log_dir "$logs/ps" \
  "$bin/wide_and_deep" --mode geo --train_samples 60000 --test_samples 5000 | tail -n 2
