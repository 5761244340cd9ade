#!/usr/bin/env bash
# Builds the benchmarks (Release, -march=native for the benchmark programs, with MPI) and runs
# one on 1, then 2 host threads:
#   bash scripts/bench.sh bench_qdot|bench_qdot_stored|bench_cg|bench_power|bench_round|bench_gemm|bench_mma [Google Benchmark options]
#   bash scripts/bench.sh bench_mpi [options]   # under mpiexec on 1, then 2 ranks, one thread each
# EBLA_BENCH_THREADS="1 2 4" chooses the thread counts, EBLA_MPI_RANKS="1 2 4" the ranks.
# Threads need a threaded Kokkos: the build uses Kokkos_ROOT (and KokkosKernels_ROOT) when set,
# else Kokkos 4.6 with OpenMP from scripts/kokkos4.sh when its source archives are at hand
# (../shared/vendor or EBLA_KOKKOS4_ARCHIVES), else Debian's Kokkos, whose Serial backend runs
# one thread whatever is asked.
# OpenBLAS's and oneDNN's idle threads spin for a while after each call; told to sleep at
# once, they leave the cores to whichever library runs next.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bench=${1:?usage: scripts/bench.sh bench_round|bench_qdot|bench_qdot_stored|bench_cg|bench_power|bench_gemm|bench_mma|bench_mpi [options]}
shift

kokkos=()
archives=${EBLA_KOKKOS4_ARCHIVES:-../shared/vendor}
if [ -n "${Kokkos_ROOT:-}" ]; then
  kokkos=(-DKokkos_ROOT="$Kokkos_ROOT" -DKokkosKernels_ROOT="${KokkosKernels_ROOT:-$Kokkos_ROOT}")
  build=${EBLA_BUILD_DIR:-build/release-kokkos}
elif [ -f "$archives/kokkos-4.6.01.tar.gz" ] && [ -f "$archives/kokkos-kernels-4.6.02.tar.gz" ]; then
  prefix=$(bash scripts/kokkos4.sh "$archives" | tail -n 1)
  kokkos=(-DKokkos_ROOT="$prefix" -DKokkosKernels_ROOT="$prefix")
  build=${EBLA_BUILD_DIR:-build/release-kokkos4}
else
  echo "bench.sh: Debian's Kokkos (Serial): every run takes one thread" >&2
  build=${EBLA_BUILD_DIR:-build/release}  # the build of scripts/main.sh
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_BUILD_TESTS=OFF -DEBLA_NATIVE=ON -DEBLA_ENABLE_MPI=ON \
  "${kokkos[@]+"${kokkos[@]}"}" > /dev/null
cmake --build "$build" -j "$(nproc)" --target "$bench"
export OPENBLAS_THREAD_TIMEOUT=4 OMP_WAIT_POLICY=passive OMP_PROC_BIND=false
if [ "$bench" = bench_mpi ]; then
  # Open MPI refuses to start as root without these two
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for np in ${EBLA_MPI_RANKS:-1 2}; do
    echo "== $bench on $np rank(s)"
    OMP_NUM_THREADS=1 mpiexec -n "$np" --oversubscribe --bind-to core "$build/apps/$bench" "$@"
  done
else
  # every library on the same count: Kokkos' host space, OpenBLAS and oneDNN follow OpenMP's
  for threads in ${EBLA_BENCH_THREADS:-1 2}; do
    echo "== $bench on $threads thread(s)"
    OMP_NUM_THREADS=$threads "$build/apps/$bench" "$@"
  done
fi
