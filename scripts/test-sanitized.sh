#!/usr/bin/env bash
# The test suite under a sanitizer, in the sanitizer's own build directory:
#   scripts/test-sanitized.sh address [JOBS]   ASan + UBSan, leaks on (build-asan/)
#   scripts/test-sanitized.sh thread [JOBS]    TSan (build-tsan/)
# Configures (cmake -DFLOTILLA_SANITIZE=...), builds, runs the flavour's tests
# with ctest, lists every test the flavour leaves out and why, and fails when
# any process — a test or anything it started — left a sanitizer report in
# <build>/sanitizer-reports/ (each report is printed).
#
# Left out under ASan (label `asan_skip`): nothing today.
# Left out under TSan: the tests that run /usr/bin/python3 (label `python`,
# the uninstrumented interpreter and numpy under a preloaded TSan runtime) and
# the cluster-engine tests (label `clusters`, Slurm/Kubernetes/MPI daemons).
set -uo pipefail
cd "$(dirname "$0")/.."

flavour="${1:-}"
jobs="${2:-$(nproc)}"
case "$flavour" in
  address) build=build-asan; sanitize=address,undefined; exclude=asan_skip ;;
  thread)  build=build-tsan; sanitize=thread; exclude='python|clusters|tsan_skip' ;;
  *) echo "test-sanitized: SANITIZE must be 'address' or 'thread', not '$flavour'" >&2
     exit 2 ;;
esac

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOTILLA_SANITIZE="$sanitize" || exit 1
cmake --build "$build" -j "$jobs" || exit 1

cd "$build" || exit 1
skipped=$(ctest -N -L "^($exclude)\$" | sed -n 's/^ *Test *#[0-9]*: //p')
if [[ -n "$skipped" ]]; then
  echo "== not run under $flavour (see scripts/test-sanitized.sh for why):"
  echo "$skipped" | sed 's/^/   /'
fi

rm -rf sanitizer-reports
ctest --output-on-failure -j "$jobs" -LE "^($exclude)\$"
status=$?

reports=(sanitizer-reports/*)
if [[ -e "${reports[0]}" ]]; then
  for r in "${reports[@]}"; do
    echo "== sanitizer report $build/$r"
    cat "$r"
  done
  echo "test-sanitized: ${#reports[@]} sanitizer report(s) under $build/sanitizer-reports" >&2
  status=1
fi
exit "$status"
