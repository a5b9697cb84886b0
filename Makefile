# The README's two commands: `make demo` and `make test`.
# `make test` runs the whole suite on the release build (build/), then every
# GoogleTest binary of the suite (ASAN_CI_TESTS) under ASan + UBSan + LSan
# (build-asan/, building only what they need; the Python, cluster-engine,
# fault-loop and fuzz-replay scripts are listed as not run there).
# `make test SANITIZE=address` (ASan + UBSan) or `SANITIZE=thread` runs the
# whole suite under a sanitizer in its own build directory (build-asan/,
# build-tsan/; what each leaves out and why is in scripts/test-sanitized.sh).
# Why this shape, on CI's clean clone (no compiler cache, 2 cores, 90 min):
# release build ~12 min + release suite 7-10 min + ASan build of the test
# binaries (420 of the ASan tree's 493 steps at ~6.5 s of CPU each, measured
# cold: ~22 min) + those 49 binaries under ASan (~23 min of test time at -j2
# on a loaded machine, less on an idle one: ~8-12 min) = ~50-56 min, with
# room for a slow machine. The whole suite under ASan would add the Python
# extension, the fuzz replays and the Python tests (python_seeds_test alone
# ~3 min in release), and the Python tests are not clean there yet (see
# scripts/test-sanitized.sh), so they run in release only.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
SANITIZE ?=
ASAN_CI_TESTS ?= .

.PHONY: all deps configure build test test-release demo bench install clean fuzz

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

ifeq ($(SANITIZE),)
test: test-release
	@scripts/test-sanitized.sh address $(JOBS) '$(ASAN_CI_TESTS)'
else
test: deps
	@scripts/test-sanitized.sh $(SANITIZE) $(JOBS)
endif

test-release: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/install-deps.sh --bench
	@scripts/bench.sh $(BUILD)

# The fuzz targets (tests/fuzz) built by clang with libFuzzer, ASan and UBSan
# in their own build directory, each run for FUZZ_SECONDS.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/install-deps.sh --fuzz
	@cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOTILLA_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	@tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The flotilla launcher into PREFIX/bin and the Python package where
# /usr/bin/python3 finds it (PREFIX/lib/python3/dist-packages); DESTDIR stages.
install: build
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-tsan
