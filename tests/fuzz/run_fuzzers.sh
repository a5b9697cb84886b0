#!/usr/bin/env bash
# Runs every fuzz target of a FLOTILLA_FUZZ build (make fuzz), one after the
# other at nice 10, each for SECONDS:
#   tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]
# Each starts from its committed corpus and crash inputs (tests/fuzz/corpus,
# tests/fuzz/crashes) and adds what it finds to BUILD_DIR/fuzz-corpus/TARGET,
# leaving the source tree alone; a crash input is written to
# BUILD_DIR/fuzz-artifacts/TARGET/. Logs: BUILD_DIR/fuzz-logs/TARGET.log.
# The files the targets write go under a scratch root of this run's own
# (FLOTILLA_FUZZ_SCRATCH, on /dev/shm when it exists), emptied after each
# target and removed when the script exits, crashed or interrupted.
# Exits 1 when any target found a crash, naming them.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
build=$1
seconds=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
# Refused peers and bad requests are logged as warnings: millions of them.
export FLOTILLA_LOG_LEVEL=${FLOTILLA_LOG_LEVEL:-error}

shm=/dev/shm
[[ -d $shm && -w $shm ]] || shm=${TMPDIR:-/tmp}
scratch=$(mktemp -d "$shm/flotilla_fuzz_run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export FLOTILLA_FUZZ_SCRATCH=$scratch

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for bin in "$build"/fuzz/fuzz_*; do
    targets+=("$(basename "$bin" | sed 's/^fuzz_//')")
  done
fi

failed=()
for t in "${targets[@]}"; do
  bin=$build/fuzz/fuzz_$t
  if [[ ! -x $bin ]]; then
    echo "run_fuzzers: no fuzz target '$t' in $build/fuzz (expected $bin)" >&2
    exit 2
  fi
  corpus=$build/fuzz-corpus/$t
  artifacts=$build/fuzz-artifacts/$t
  log=$build/fuzz-logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  seeds=("$src/corpus/$t")
  [[ -d $src/crashes/$t ]] && seeds+=("$src/crashes/$t")
  echo "fuzz $t: ${seconds}s (log $log)"
  if nice -n 10 "$bin" -max_total_time="$seconds" -timeout=30 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb))' "$log" | sed "s/^/  $t: /"
  else
    echo "  $t: FOUND A CRASH — see $log and $artifacts" >&2
    tail -n 30 "$log" >&2
    failed+=("$t")
  fi
  find "$scratch" -mindepth 1 -delete
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run_fuzzers: crashes in ${failed[*]}" >&2
  exit 1
fi
