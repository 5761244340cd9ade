#!/usr/bin/env bash
# Builds the benchmarks in the tuned Release build of scripts/main.sh and runs one:
#   bash scripts/bench.sh bench_gemm [Google Benchmark options]
#   bash scripts/bench.sh bench_mpi [options]   # under mpiexec on 1, then 2 ranks
#                                               # (EBLA_MPI_RANKS="1 2 4" to choose)
# OpenBLAS's and oneDNN's idle threads spin for a while after each call; told to sleep at
# once, they leave both cores to whichever library runs next.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bench=${1:?usage: scripts/bench.sh bench_round|bench_qdot|bench_cg|bench_gemm|bench_mpi [options]}
shift
build=${EBLA_BUILD_DIR:-build/release}
# the configuration of scripts/main.sh (with MPI), so that the two share one build
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_BUILD_TESTS=OFF -DEBLA_NATIVE=ON -DEBLA_ENABLE_MPI=ON > /dev/null
cmake --build "$build" -j "$(nproc)" --target "$bench"
export OPENBLAS_THREAD_TIMEOUT=4 OMP_WAIT_POLICY=passive
if [ "$bench" = bench_mpi ]; then
  # Open MPI refuses to start as root without these two
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for np in ${EBLA_MPI_RANKS:-1 2}; do
    echo "== $bench on $np rank(s)"
    mpiexec -n "$np" --oversubscribe --bind-to core "$build/apps/$bench" "$@"
  done
elif [ "$bench" = bench_gemm ]; then
  # ebla's passes, OpenBLAS and oneDNN on 1, then 2 threads (EBLA_GEMM_THREADS="1 2" to choose)
  for threads in ${EBLA_GEMM_THREADS:-1 2}; do
    echo "== $bench on $threads thread(s)"
    OMP_NUM_THREADS=$threads "$build/apps/$bench" "$@"
  done
else
  "$build/apps/$bench" "$@"
fi
