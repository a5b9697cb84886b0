#!/usr/bin/env bash
# Runs every benchmark program under build/bin/bench_*; each prints JSON lines.
set -uo pipefail
build="${1:-build}"
for b in "$build"/bin/bench_*; do
  [[ -x "$b" ]] || continue
  echo "## $(basename "$b")" >&2
  "$b" || echo "{\"bench\":\"$(basename "$b")\",\"error\":\"exit $?\"}"
done
