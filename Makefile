# The README's two commands: `make demo` and `make test`.
# `make test` runs the whole suite on the release build (build/), then the
# unit tests of the layers in ASAN_CI_TESTS under ASan + UBSan (build-asan/,
# building only what they need). `make test SANITIZE=address` (ASan + UBSan)
# or `SANITIZE=thread` runs the whole suite under a sanitizer in its own build
# directory (build-asan/, build-tsan/; what each leaves out and why is in
# scripts/test-sanitized.sh).
# Why only those unit tests in `make test`: a second full build plus the
# multi-process suite under ASan does not fit CI's 90 minutes on 2 cores next
# to the release suite. These layers' unit tests are the ones known clean
# under ASan; widen ASAN_CI_TESTS as more are (the rest are listed as not run).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
SANITIZE ?=
ASAN_CI_TESTS ?= ^(common|core|trace|comm|launch|roles|ps)_

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
