#!/usr/bin/env bash
# Installs what is missing, builds ebla (Release, portable flags, with MPI) and runs every test,
# the distributed ones under mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

build=${EBLA_TEST_BUILD_DIR:-build/test}
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_NATIVE=OFF -DEBLA_ENABLE_MPI=ON
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs"
