#!/usr/bin/env bash
# Installs Flotilla's build and test dependencies from Debian packages.
# Idempotent: installs only what is missing. Uses sudo when not root.
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --bench  also the peers the benchmarks compare against
#   scripts/install-deps.sh --container  also podman (tests/clusters/container_test.py)
#   scripts/install-deps.sh --test-browser  also headless Chromium for the dashboard test
#   scripts/install-deps.sh --fuzz   also clang and libFuzzer (make fuzz)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libopenblas-dev libgloo-dev libturbojpeg0-dev
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-dev pybind11-dev python3-numpy python3-pytest
  openmpi-bin libopenmpi-dev
  etcd-server iproute2 procps python3 python3-sklearn
  # A Slurm cluster made by tests/clusters/slurm_test.py (about 12 MB).
  slurm-wlm munge util-linux
  # The Kubernetes manifests' schema check and pod simulation read YAML.
  python3-yaml
  # ssd sparse tables of the parameter servers (rows beyond a memory budget).
  librocksdb-dev
  # The dashboard and metrics endpoint; their tests' Prometheus parser.
  libcpp-httplib-dev libjs-chart.js python3-prometheus-client python3-pytest
)
for arg in "$@"; do
  case "$arg" in
    # The math backends bench/bench_blas.cc measures OpenBLAS against.
    --bench) packages+=(python3-torch libblis4-pthread libdnnl2) ;;
    --container) packages+=(podman) ;;
    --test-browser) packages+=(chromium chromium-driver python3-selenium) ;;
    --fuzz) packages+=(clang-14 libfuzzer-14-dev) ;;
    *) echo "install-deps: unknown option '$arg' (expected --bench, --container, --test-browser or --fuzz)" >&2
       exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
