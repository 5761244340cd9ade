#!/usr/bin/env bash
# Installs what is missing, builds ebla in Release (tuned for this CPU) with its Python module
# (installed into the user's site-packages), and runs the
# main job: approximate CG on HPCCG's 100 x 100 x 10 problem across qdot tolerances, then a
# tour of the number formats, rounding, the error constants, qdot, mixed-precision GEMM and a
# distributed ACG under mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

build=${EBLA_BUILD_DIR:-build/release}
# The Python module (docs/python.md) goes to the user's site-packages of Debian's python3,
# where `python3 -c "import ebla"` finds it without root and without PYTHONPATH.
user_site=$(/usr/bin/python3 -m site --user-site)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_BUILD_TESTS=OFF -DEBLA_NATIVE=ON -DEBLA_ENABLE_MPI=ON \
  -DEBLA_PYTHON_INSTALL_DIR="$user_site"
cmake --build "$build" -j "$(nproc)" --target ebla_cli
ebla="$build/apps/ebla"
if cmake --build "$build" --target help | grep -qw ebla_python; then
  cmake --build "$build" -j "$(nproc)" --target ebla_python
  cmake --install "$build" --component python
  echo "== The Python module: $(cd / && /usr/bin/python3 -c 'import ebla; print(ebla.__file__)')"
else
  echo "== The Python module is not built here (CMake's configure output says why)"
fi

echo "== ACG on HPCCG 100 x 100 x 10 (tau = 1e-8): the largest qdot tolerance that keeps CG's iterations"
"$ebla" cg --nx 100 --ny 100 --nz 10 --operator stencil --qdot-policy paper --sweep-qdot-tol 1e-16:1e3 --progress 0
echo
echo "== ACG at qdot tolerance 1e2 (the largest that keeps the iterations in seed 002's 3-D runs), one run"
"$ebla" cg --nx 100 --ny 100 --nz 10 --operator stencil --qdot-policy paper --qdot-tol 1e2 --progress 0
echo

echo "== The formats of seed 001, Table 2.1"
"$ebla" formats
echo
echo "== pi and 1/3 in each format, round to nearest even"
for f in binary32 tf32 bfloat16 binary16 fp8_e4m3 fp8_e5m2 fp6_e2m3 fp6_e3m2 fp4_e2m1; do
  "$ebla" round --format "$f" 3.141592653589793 0.3333333333333333 | tail -n +1
done
echo
echo "== Overflow, underflow and the rounding modes in binary16"
for m in nearest_even toward_zero upward downward; do
  "$ebla" round --format binary16 --mode "$m" 65519 65520 -1e5 1e-8 0x1.8p-25
done
echo
echo "== Error constants for n roundings in bfloat16 (failure probability 1e-6)"
"$ebla" bounds --format bfloat16 --n 10 100 1000 10000 100000 1000000
echo
echo "== qdot on 1e6 components of seed 002's distribution B (t = 9), tolerance 1e-8"
"$ebla" qdot --dist B --t 9 --n 1e6 --tol 1e-8
echo
echo "== The budget and paper selection policies at the same tolerances (B, t = 9, n = 1e5)"
"$ebla" qdot --experiment compare-policies --t 9
echo
echo "== Mixed-precision GEMM, 2048 x 2048 x 2048: the cheapest certified way to ||C - AB|| <= 1e-2 ||A|| ||B||"
"$ebla" gemm --m 2048 --k 2048 --n 2048 --tolerance 1e-2
echo
echo "== Mixed-precision GEMM: three bfloat16 words through SGEMM, against the exact product"
"$ebla" gemm --m 256 --k 256 --n 256 --input bfloat16 --words 3 --engine sgemm --reference
echo
echo "== Distributed ACG: mpirun -np 2, HPCCG 100 x 100 x 50 per rank stacked in z (100 x 100 x 100), qdot in one MPI_Allreduce"
# Open MPI refuses to start as root without these two
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec -n 2 --oversubscribe \
  "$ebla" cg --nx 100 --ny 100 --nz 50 --operator stencil --qdot-policy paper --qdot-tol 1e2 --progress 0
