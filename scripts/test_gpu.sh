#!/usr/bin/env bash
# Runs ebla on a GPU: where nvidia-smi finds one, builds ebla for CUDA (scripts/check_cuda.sh,
# for the architecture EBLA_CUDA_ARCH, default AMPERE80; give the GPU's own, e.g. HOPPER90),
# runs the whole test suite on it, then bench_qdot (qdot against KokkosBlas::dot on the same
# device Views) and bench_cg's solves (ACG against exact CG, both on the device), and writes
# their medians and ratios as the tables of docs/benchmarks.md to EBLA_GPU_REPORT (default
# build/cuda/gpu-benchmarks.md). Without a GPU it says so and exits 0 having done nothing.
#   bash scripts/test_gpu.sh [ARCHIVE_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "test_gpu: no GPU found by nvidia-smi: nothing to run (scripts/check_cuda.sh compiles for CUDA without one)"
  exit 0
fi
gpu=$(nvidia-smi -L | head -n 1)
echo "test_gpu: $gpu"
build=${EBLA_CUDA_BUILD_DIR:-build/cuda}
report=${EBLA_GPU_REPORT:-$build/gpu-benchmarks.md}
EBLA_CUDA_BUILD_DIR="$build" bash scripts/check_cuda.sh "$@"

# The suite: one test program at a time (they share the GPU).
(cd "$build" && ctest --output-on-failure -j 1)

# The benchmarks, with their repetitions' medians in JSON.
out=$(mktemp -d "${TMPDIR:-/tmp}/ebla-gpu.XXXXXX")
trap 'rm -rf "$out"' EXIT
"$build/apps/bench_qdot" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/qdot.json" --benchmark_out_format=json
"$build/apps/bench_cg" --benchmark_filter='^(cg_|acg_)' --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/cg.json" --benchmark_out_format=json
python3 scripts/gpu_tables.py "$gpu" "$out/qdot.json" "$out/cg.json" > "$report.tmp"
mv "$report.tmp" "$report"
echo "test_gpu: tables in $report"
