#!/usr/bin/env bash
# Reproduces seed 002's solver experiments (sections 4.2-4.3) with both selection policies:
# ACG on HPCCG 100x100x1, 1000x1000x1, 100x100x10, 1000x1000x10 (tau = 1e-8, absolute,
# matrix-free stencil), and APM on graph Laplacians with n = 1e4 and 1e5 (mean degree 10,
# seed 1, tau = 1e-6, at most 300 iterations); qdot tolerances 1e-16, 1e-15, ..., 1e3.
# Writes one HDF5 file and one text table per run into ${1:-results/solvers}; the tables
# end with the largest tolerance that keeps the iteration count. Needs a built ebla
# (EBLA=path, default build/release/apps/ebla as scripts/main.sh builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/solvers}
ebla=${EBLA:-build/release/apps/ebla}
mkdir -p "$out"
for policy in paper budget; do
  for grid in "100 100 1" "1000 1000 1" "100 100 10" "1000 1000 10"; do
    set -- $grid
    name="cg_${1}x${2}x${3}_${policy}"
    echo "== $name"
    "$ebla" cg --nx "$1" --ny "$2" --nz "$3" --operator stencil --tol 1e-8 --qdot-policy "$policy" \
      --sweep-qdot-tol 1e-16:1e3 --progress 0 -o "$out/$name.h5" > "$out/$name.txt" || true
    tail -n 1 "$out/$name.txt"
  done
  for n in 1e4 1e5; do
    name="power_${n}_${policy}"
    echo "== $name"
    "$ebla" power --n "$n" --degree 10 --seed 1 --tol 1e-6 --max-iter 300 --qdot-policy "$policy" \
      --sweep-qdot-tol 1e-16:1e3 --progress 0 -o "$out/$name.h5" > "$out/$name.txt" || true
    tail -n 2 "$out/$name.txt"
  done
done

# The figures: Fig. 4 (precision per iteration at the largest tolerance that kept CG's
# iterations), Fig. 5 (the maps on the 100 x 100 mesh at tolerance 1, as in the seed),
# Figs. 6-7 (APM), all for the paper policy.
plot="/usr/bin/python3 apps/plot_solvers.py"
if /usr/bin/python3 -c "import h5py, matplotlib" 2>/dev/null; then
  for grid in 100x100x1 1000x1000x1 100x100x10 1000x1000x10; do
    $plot cg "$out/cg_${grid}_paper.h5" --out "$out/fig4_cg_${grid}.png"
  done
  "$ebla" cg --nx 100 --ny 100 --nz 1 --operator stencil --tol 1e-8 --qdot-policy paper --qdot-tol 1 \
    --levels --progress 0 -o "$out/cg_100x100x1_levels.h5" > /dev/null
  $plot levels "$out/cg_100x100x1_levels.h5" --out "$out/fig5_cg_levels.png"
  $plot power "$out/power_1e4_paper.h5" --out "$out/fig6_power_1e4.png"
  $plot power "$out/power_1e5_paper.h5" --out "$out/fig7_power_1e5.png"
fi
