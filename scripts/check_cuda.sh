#!/usr/bin/env bash
# Compiles all of ebla, tests included, for Kokkos' CUDA backend, on a machine with or without
# a GPU (nothing is run on a device here; scripts/test_gpu.sh runs the suite where there is one):
#  1. installs Debian's CUDA 11.8 toolkit (nvidia-cuda-toolkit, in bookworm's non-free) and its
#     host compiler g++-11 if nvcc or g++-11 is missing; the non-free component is named in an
#     apt configuration of its own under the cache directory, used for that install only (the
#     system's apt sources are left as they are). CUDA 13 cannot build Kokkos 4.6.01 (its
#     cudaGraphAddDependencies and cudaMemLocation changed), so a toolkit of 12 or newer found
#     first on PATH is not used;
#  2. builds Kokkos 4.6.01 (CUDA + Serial, architecture EBLA_CUDA_ARCH, default AMPERE80) and
#     Kokkos Kernels 4.6.02 (BLAS, sparse, graph; double; CUDA execution space) from source
#     archives into a prefix outside the clone, reused when it holds a finished install of
#     the same archives and architecture;
#  3. configures ebla against it with Kokkos' nvcc_wrapper and builds every target, the tests
#     included (their discovery deferred to test time, since a test program aborts on a
#     machine without a GPU).
#   bash scripts/check_cuda.sh [ARCHIVE_DIR]
# ARCHIVE_DIR: as in scripts/kokkos4.sh (default EBLA_KOKKOS4_ARCHIVES, else ../shared/vendor,
# or the source trees of a user's own Kokkos named by EBLA_KOKKOS_SRC and EBLA_KOKKOS_KERNELS_SRC).
# Prefix: EBLA_CUDA_PREFIX, default /var/cache/ebla/kokkos-4.6.01-cuda. Build directory:
# EBLA_CUDA_BUILD_DIR, default build/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
archives=${1:-${EBLA_KOKKOS4_ARCHIVES:-../shared/vendor}}
prefix=${EBLA_CUDA_PREFIX:-/var/cache/ebla/kokkos-4.6.01-cuda}
build=${EBLA_CUDA_BUILD_DIR:-build/cuda}
arch=${EBLA_CUDA_ARCH:-AMPERE80}
jobs=$(nproc)
say() { echo "check_cuda: $*" >&2; }

# 1. The toolkit and its host compiler.
nvcc=/usr/bin/nvcc  # Debian's; /usr/local/cuda may hold another version
if [ ! -x "$nvcc" ] || ! command -v g++-11 > /dev/null; then
  apt_dir=${EBLA_APT_NONFREE:-/var/cache/ebla/apt-nonfree}
  say "installing nvidia-cuda-toolkit and g++-11 (Debian bookworm, contrib non-free; apt state in $apt_dir)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo mkdir -p "$apt_dir/lists/partial" "$apt_dir/sources"
  # the system's own sources, with contrib and non-free added to their components
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed -E 's/^Components:.*/Components: main contrib non-free/' "$f" \
      | $sudo tee "$apt_dir/sources/$(basename "$f")" > /dev/null
  done
  if [ -f /etc/apt/sources.list ]; then
    sed -E '/^deb /s/ main( |$)/ main contrib non-free\1/' /etc/apt/sources.list \
      | $sudo tee "$apt_dir/sources/system.list" > /dev/null
  fi
  apt_opts=(-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$apt_dir/sources"
            -o Dir::State::Lists="$apt_dir/lists")
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get "${apt_opts[@]}" update -q
  $sudo apt-get "${apt_opts[@]}" install -y -q --no-install-recommends nvidia-cuda-toolkit g++-11
fi
# nvcc_wrapper runs $CUDA_ROOT/bin/nvcc, and Kokkos' CMake looks for the toolkit on PATH first
export CUDA_ROOT=/usr PATH="/usr/bin:$PATH"
say "$("$nvcc" --version | tail -n 2 | head -n 1), host compiler $(g++-11 -dumpfullversion)"

# 2. Kokkos and Kokkos Kernels with CUDA.
if [ -n "${EBLA_KOKKOS_SRC:-}" ]; then
  sources=("$EBLA_KOKKOS_SRC" "$EBLA_KOKKOS_KERNELS_SRC")
  sums=$(printf '%s\n' "${sources[@]}" "$arch")
else
  kokkos=kokkos-4.6.01 kernels=kokkos-kernels-4.6.02
  for a in "$kokkos.tar.gz" "$kernels.tar.gz"; do
    [ -f "$archives/$a" ] || { say "error: $archives/$a not found (give ARCHIVE_DIR)"; exit 2; }
  done
  sums=$(cd "$archives" && sha256sum "$kokkos.tar.gz" "$kernels.tar.gz"; echo "$arch")
fi
# Each stamp names the sources (the archives' checksums) and the architecture: an install of
# other sources is rebuilt. Kokkos has a stamp of its own, so that Kokkos Kernels can be built
# again on an install of Kokkos that finished.
stamp="$prefix/.ebla-stamp"
kokkos_stamp="$prefix/.ebla-stamp-kokkos"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sums" ]; then
  say "reusing $prefix"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/ebla-cuda.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  trap 'tail -n 40 "$work"/*.log >&2' ERR
  if [ -z "${EBLA_KOKKOS_SRC:-}" ]; then
    tar -xzf "$archives/$kokkos.tar.gz" -C "$work"
    tar -xzf "$archives/$kernels.tar.gz" -C "$work"
    sources=("$work/$kokkos" "$work/$kernels")
  fi
  if [ -f "$kokkos_stamp" ] && [ "$(cat "$kokkos_stamp")" = "$sums" ]; then
    say "reusing Kokkos in $prefix"
  else
    rm -rf "$prefix"
    mkdir -p "$prefix"
    say "building Kokkos (CUDA $arch, Serial) into $prefix"
    cmake -S "${sources[0]}" -B "$work/build-kokkos" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 \
      -DCMAKE_CXX_COMPILER="${sources[0]}/bin/nvcc_wrapper" \
      -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ARCH_"$arch"=ON \
      -DKokkos_ENABLE_CUDA_LAMBDA=ON > "$work/kokkos.log"
    NVCC_WRAPPER_DEFAULT_COMPILER=g++-11 cmake --build "$work/build-kokkos" -j "$jobs" >> "$work/kokkos.log"
    cmake --install "$work/build-kokkos" >> "$work/kokkos.log"
    echo "$sums" > "$kokkos_stamp"
  fi
  # CUDA execution space only; no vendor libraries (cuBLAS, cuSPARSE, cuSOLVER): the kernels
  # are Kokkos Kernels' own, as on the host
  say "building Kokkos Kernels into $prefix"
  cmake -S "${sources[1]}" -B "$work/build-kk" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" \
    -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" \
    -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF \
    -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON -DKokkosKernels_ENABLE_COMPONENT_SPARSE=ON \
    -DKokkosKernels_ENABLE_COMPONENT_GRAPH=ON -DKokkosKernels_ENABLE_COMPONENT_BATCHED=OFF \
    -DKokkosKernels_ENABLE_COMPONENT_LAPACK=OFF -DKokkosKernels_ENABLE_COMPONENT_ODE=OFF \
    -DKokkosKernels_INST_DOUBLE=ON -DKokkosKernels_INST_FLOAT=OFF \
    -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=ON \
    -DKokkosKernels_INST_ORDINAL_INT=ON -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF \
    -DKokkosKernels_ENABLE_TPL_CUBLAS=OFF -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF \
    -DKokkosKernels_ENABLE_TPL_CUSOLVER=OFF > "$work/kk.log"
  NVCC_WRAPPER_DEFAULT_COMPILER=g++-11 cmake --build "$work/build-kk" -j "$jobs" >> "$work/kk.log"
  cmake --install "$work/build-kk" >> "$work/kk.log"
  echo "$sums" > "$stamp"
fi

# 3. ebla, every target.
export NVCC_WRAPPER_DEFAULT_COMPILER=g++-11
say "building ebla with nvcc_wrapper in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_NATIVE=OFF -DEBLA_FORTRAN=OFF \
  -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DCMAKE_C_COMPILER=gcc-11 \
  -DKokkos_ROOT="$prefix" -DKokkosKernels_ROOT="$prefix" -DEBLA_TEST_DISCOVERY=PRE_TEST -DEBLA_ENABLE_MPI=OFF
cmake --build "$build" -j "$jobs"
say "all of ebla compiled for CUDA ($arch) in $build"
