#!/usr/bin/env bash
# The test suite under a sanitizer, in the sanitizer's own build directory:
#   scripts/test-sanitized.sh address [JOBS] [TEST_REGEX]   ASan + UBSan, leaks on (build-asan/)
#   scripts/test-sanitized.sh thread [JOBS] [TEST_REGEX]    TSan (build-tsan/)
# Configures (cmake -DFLOTILLA_SANITIZE=...), builds, runs the flavour's tests
# with ctest, lists every test the flavour leaves out and why, and fails when
# any process — a test or anything it started — left a sanitizer report in
# <build>/sanitizer-reports/ (each report is printed).
#
# TEST_REGEX: only the GoogleTest binaries (flotilla_test, whose target is
# named as its test) whose names match it, building only what they need; the
# tests left out are listed. `make test` runs such a scope under ASan after
# the release suite (see the Makefile for which and why).
#
# Sanitized processes start and run several times slower: ctest timeouts and
# the tests' own waits are scaled by FLOTILLA_TEST_TIME_SCALE
# (cmake/sanitize.cmake).
# Left out under ASan (label `asan_skip`): nothing today. Known not clean
# yet under ASan: the Python tests (label `python`; leak reports from Open
# MPI's mpirun under the preloaded runtime, and from TurboJPEG handles kept in
# thread_local storage, still to be sorted out), which is why `make test`
# runs only the GoogleTest binaries under ASan.
# Left out under TSan: the tests that run /usr/bin/python3 (label `python`,
# the uninstrumented interpreter and numpy under a preloaded TSan runtime) and
# the cluster-engine tests (label `clusters`, Slurm/Kubernetes/MPI daemons),
# and single-threaded tests TSan only slows (label `tsan_skip`, reason at each).
set -uo pipefail
cd "$(dirname "$0")/.."

flavour="${1:-}"
jobs="${2:-$(nproc)}"
test_regex="${3:-}"
case "$flavour" in
  address) build=build-asan; sanitize=address,undefined; exclude=asan_skip ;;
  thread)  build=build-tsan; sanitize=thread; exclude='python|clusters|tsan_skip' ;;
  *) echo "test-sanitized: SANITIZE must be 'address' or 'thread', not '$flavour'" >&2
     exit 2 ;;
esac

names() { sed -n 's/^ *Test *#[0-9]*: //p'; }

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOTILLA_SANITIZE="$sanitize" || exit 1
only=()
if [[ -n "$test_regex" ]]; then
  # A flotilla_test's target is named as its test; other tests (Python,
  # scripts, fuzz replays) have no such target and stay out of the scope.
  mapfile -t targets < <(cd "$build" && ctest -N -R "$test_regex" | names |
    while read -r t; do ninja -t query "$t" >/dev/null 2>&1 && echo "$t"; done)
  [[ ${#targets[@]} -gt 0 ]] || { echo "test-sanitized: no test binary matches '$test_regex'" >&2; exit 2; }
  only=(-R "^($(IFS='|'; echo "${targets[*]}"))\$")
  cmake --build "$build" -j "$jobs" --target "${targets[@]}" || exit 1
else
  cmake --build "$build" -j "$jobs" || exit 1
fi

cd "$build" || exit 1
skipped=$(ctest -N -L "^($exclude)\$" | names)
if [[ -n "$skipped" ]]; then
  echo "== not run under $flavour (see scripts/test-sanitized.sh for why):"
  echo "$skipped" | sed 's/^/   /'
fi
if [[ -n "$test_regex" ]]; then
  echo "== not run under $flavour in this scope (make test SANITIZE=$flavour runs them):"
  comm -23 <(ctest -N | names | sort) <(ctest -N "${only[@]}" | names | sort) |
    tr '\n' ' ' | fold -s -w 76 | sed 's/^/   /'
  echo
fi

rm -rf sanitizer-reports
ctest --output-on-failure -j "$jobs" "${only[@]}" -LE "^($exclude)\$"
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
