#!/usr/bin/env bash
# Writes the handwritten-digits ImageNet-layout set (see make_digits_imagenet.py):
#   scripts/make_digits_imagenet.sh OUT_DIR [--size 32]
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/make_digits_imagenet.py" "$@"
