#!/usr/bin/env bash
# Builds the benchmarks in the tuned Release build of scripts/main.sh and runs one:
#   bash scripts/bench.sh bench_gemm [Google Benchmark options]
# OpenBLAS's and oneDNN's idle threads spin for a while after each call; told to sleep at
# once, they leave both cores to whichever library runs next.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bench=${1:?usage: scripts/bench.sh bench_round|bench_qdot|bench_cg|bench_gemm [options]}
shift
build=${EBLA_BUILD_DIR:-build/release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_BUILD_TESTS=OFF -DEBLA_NATIVE=ON > /dev/null
cmake --build "$build" -j "$(nproc)" --target "$bench"
OPENBLAS_THREAD_TIMEOUT=4 OMP_WAIT_POLICY=passive "$build/apps/$bench" "$@"
