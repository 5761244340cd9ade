#!/usr/bin/env bash
# Installs what is missing, builds ebla in Release (tuned for this CPU) with its Python module,
# installs the ebla command into the user's bin directory (~/.local/bin) and the module into
# the user's site-packages, runs the
# main job: approximate CG on HPCCG's 100 x 100 x 10 problem across qdot tolerances, then a
# tour of the number formats, rounding, the error constants, qdot, mixed-precision GEMM and a
# distributed ACG under mpirun, and ends with a summary of what each part showed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

build=${EBLA_BUILD_DIR:-build/release}
# The user's base directory of Debian's python3 (~/.local): the command goes to its bin/, the
# Python module (docs/python.md) to its lib/pythonX.Y/site-packages, where `python3 -c
# "import ebla"` finds it without root and without PYTHONPATH. The build's own install
# prefix stays as CMake has it, so `cmake --install "$build" --prefix P` installs under P.
user_base=$(/usr/bin/python3 -m site --user-base)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_BUILD_TESTS=OFF -DEBLA_NATIVE=ON -DEBLA_ENABLE_MPI=ON
cmake --build "$build" -j "$(nproc)" --target ebla_cli
install -D -m 755 "$build/apps/ebla" "$user_base/bin/ebla"
ebla="$user_base/bin/ebla"
python_module="not built here (CMake's configure output says why)"
# (grep reads the whole list: with pipefail, grep -q would stop the pipe early and fail it)
if cmake --build "$build" --target help | grep -w ebla_python > /dev/null; then
  cmake --build "$build" -j "$(nproc)" --target ebla_python
  cmake --install "$build" --component python --prefix "$user_base"
  python_module=$(cd / && /usr/bin/python3 -c 'import ebla; print(ebla.__file__)')
fi
echo "== The Python module: $python_module"
summary=$(mktemp "${TMPDIR:-/tmp}/ebla-main.XXXXXX")
trap 'rm -f "$summary"' EXIT

echo "== ACG on HPCCG 100 x 100 x 10 (tau = 1e-8): the largest qdot tolerance that keeps CG's iterations"
"$ebla" cg --nx 100 --ny 100 --nz 10 --operator stencil --qdot-policy paper --sweep-qdot-tol 1e-16:1e3 --progress 0 |
  tee "$summary.sweep"
echo
echo "== ACG at qdot tolerance 1e2 (the largest that keeps the iterations in seed 002's 3-D runs), one run"
"$ebla" cg --nx 100 --ny 100 --nz 10 --operator stencil --qdot-policy paper --qdot-tol 1e2 --progress 0 |
  tee "$summary.one"
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
"$ebla" gemm --m 2048 --k 2048 --n 2048 --tolerance 1e-2 | tee "$summary.gemm"
echo
echo "== Mixed-precision GEMM: three bfloat16 words through SGEMM, against the exact product"
"$ebla" gemm --m 256 --k 256 --n 256 --input bfloat16 --words 3 --engine sgemm --reference
echo
echo "== Distributed ACG: mpirun -np 2, HPCCG 100 x 100 x 50 per rank stacked in z (100 x 100 x 100), qdot in one MPI_Allreduce"
# Open MPI refuses to start as root without these two
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec -n 2 --oversubscribe \
  "$ebla" cg --nx 100 --ny 100 --nz 50 --operator stencil --qdot-policy paper --qdot-tol 1e2 --progress 0

# What the main job showed, a line per part (the first matching line of each part's output).
first() { grep -m 1 -E "$1" "$2" 2> /dev/null | sed 's/^ *//' || true; }
echo
echo "== Summary"
echo "ebla:                 $ebla ($(command -v ebla > /dev/null && [ "$(command -v ebla)" = "$ebla" ] &&
  echo "on your PATH" || echo "add $user_base/bin to your PATH to run it as ebla"))"
echo "Python module:        $python_module"
echo "ACG sweep, HPCCG:     $(first 'exact CG:' "$summary.sweep"); $(first 'largest tolerance' "$summary.sweep")"
echo "ACG at tolerance 1e2: $(first '^status' "$summary.one")"
echo "GEMM to 1e-2:         $(first '<- chosen' "$summary.gemm")"
rm -f "$summary".*
