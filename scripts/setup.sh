#!/usr/bin/env bash
# Installs the Debian packages ebla builds with, if any is missing. Sourced or run.
set -euo pipefail

EBLA_PACKAGES=(
  cmake g++ make gfortran pkgconf                        # gfortran: the Fortran module (fortran/);
                                                         # pkgconf: the test of ebla.pc
  ccache                                                 # scripts/test.sh: compiled objects kept
                                                         # between runs, outside the clone
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev  # Kokkos 3.4 (Serial) and Kokkos Kernels
  libcli11-dev libspdlog-dev nlohmann-json3-dev          # the ebla command (JSON output: nlohmann)
  libfmt-dev                                             # the ebla command's text (fmt::format;
                                                         # spdlog depends on it too)
  libgtest-dev libbenchmark-dev                          # tests and benchmarks
  libhdf5-dev libopenblas-dev                            # I/O and the BLAS
  libdnnl-dev ocl-icd-opencl-dev                         # oneDNN matmul (bfloat16 GEMM); its CMake
                                                         # config needs OpenCL's headers and library
  hdf5-tools                                             # h5dump, for the CLI tests of result files
  libopenmpi-dev openmpi-bin                             # the MPI build (EBLA_ENABLE_MPI) and mpirun
  python3-matplotlib python3-h5py                        # apps/plot_qdot.py (figures from ebla qdot)
  doxygen python3-yaml                                   # the API reference (target doc, test
                                                         # docs.doxygen); docs.citation_cff reads YAML
  clang libclang-rt-14-dev llvm                          # scripts/fuzz.sh: clang, libFuzzer's runtime,
                                                         # llvm-symbolizer (file:line in reports)
  python3-dev pybind11-dev                               # the Python module ebla (python/): headers
  python3-numpy python3-scipy python3-pytest             # its arrays, sparse matrices and tests
)

missing=()
for p in "${EBLA_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "ebla setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
