#!/usr/bin/env bash
# Builds and installs Kokkos 4.6.01 and Kokkos Kernels 4.6.02 (OpenMP + Serial) from source
# archives into a prefix outside the clone, and prints that prefix on its last line. A prefix
# that already holds a finished install of the same archives is reused as it is.
#   bash scripts/kokkos4.sh [ARCHIVE_DIR]
# ARCHIVE_DIR holds kokkos-4.6.01.tar.gz and kokkos-kernels-4.6.02.tar.gz (default: the
# EBLA_KOKKOS4_ARCHIVES variable, else ../shared/vendor beside the clone). The prefix is
# EBLA_KOKKOS4_PREFIX, default /var/cache/ebla/kokkos-4.6.01-omp.
# ebla itself does not need this: point CMake at any Kokkos with -DKokkos_ROOT.
set -euo pipefail
cd "$(dirname "$0")/.."
archives=${1:-${EBLA_KOKKOS4_ARCHIVES:-../shared/vendor}}
prefix=${EBLA_KOKKOS4_PREFIX:-/var/cache/ebla/kokkos-4.6.01-omp}
kokkos=kokkos-4.6.01
kernels=kokkos-kernels-4.6.02

# The stamp names the archives' checksums: a finished install of other sources is rebuilt.
sums=$(cd "$archives" && sha256sum "$kokkos.tar.gz" "$kernels.tar.gz")
stamp="$prefix/.ebla-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sums" ]; then
  echo "kokkos4: reusing $prefix" >&2
  echo "$prefix"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ebla-kokkos4.XXXXXX")
trap 'rm -rf "$work"' EXIT
# a failed step shows the end of its log before the directory goes
trap 'tail -n 40 "$work"/*.log >&2' ERR
rm -rf "$prefix"
mkdir -p "$prefix"
tar -xzf "$archives/$kokkos.tar.gz" -C "$work"
tar -xzf "$archives/$kernels.tar.gz" -C "$work"
jobs=$(nproc)

echo "kokkos4: building $kokkos (OpenMP, Serial) into $prefix" >&2
cmake -S "$work/$kokkos" -B "$work/build-kokkos" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 \
  -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON > "$work/kokkos.log"
cmake --build "$work/build-kokkos" -j "$jobs" >> "$work/kokkos.log"
cmake --install "$work/build-kokkos" >> "$work/kokkos.log"

echo "kokkos4: building $kernels into $prefix" >&2
cmake -S "$work/$kernels" -B "$work/build-kk" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" \
  -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF \
  -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON -DKokkosKernels_ENABLE_COMPONENT_SPARSE=ON \
  -DKokkosKernels_ENABLE_COMPONENT_GRAPH=ON -DKokkosKernels_ENABLE_COMPONENT_BATCHED=OFF \
  -DKokkosKernels_ENABLE_COMPONENT_LAPACK=OFF -DKokkosKernels_ENABLE_COMPONENT_ODE=OFF \
  -DKokkosKernels_INST_DOUBLE=ON -DKokkosKernels_INST_FLOAT=OFF \
  -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=ON \
  -DKokkosKernels_INST_ORDINAL_INT=ON > "$work/kk.log"
cmake --build "$work/build-kk" -j "$jobs" >> "$work/kk.log"
cmake --install "$work/build-kk" >> "$work/kk.log"

echo "$sums" > "$stamp"
echo "$prefix"
