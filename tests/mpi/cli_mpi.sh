#!/bin/sh
# `mpirun -np P ebla cg|power` against the same commands on one process, rank 0's output
# file, errors on one rank that must end the whole run with exit code 2, and a rank killed
# mid-solve, which must end the run too (not hang).
# Usage: cli_mpi.sh MPIEXEC P EBLA
set -u
mpiexec=$1
np=$2
ebla=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
run() { timeout 120 "$mpiexec" --oversubscribe "$@"; }
fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}
# field NAME FILE: the value of "NAME": in the last JSON line of FILE
field() { tail -n 1 "$2" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

# CG on HPCCG: the global grid 12 x 10 x (6 P), stencil and csr, exact and qdot dots
for op in stencil csr; do
  for dots in "--dot exact" "--dot qdot --qdot-tol 1e-4"; do
    what="cg --operator $op $dots"
    # shellcheck disable=SC2086
    "$ebla" cg --nx 12 --ny 10 --nz $((6 * np)) --operator $op $dots --json > "$dir/serial.json" || fail "$what: serial run"
    # shellcheck disable=SC2086
    run -np "$np" "$ebla" cg --nx 12 --ny 10 --nz 6 --operator $op $dots --json > "$dir/mpi.json" || fail "$what: mpirun"
    [ "$(grep -c . "$dir/mpi.json")" = 1 ] || fail "$what: rank 0 alone prints (got $(grep -c . "$dir/mpi.json") lines)"
    s=$(field iterations "$dir/serial.json")
    m=$(field iterations "$dir/mpi.json")
    [ -n "$s" ] && [ "$s" = "$m" ] || fail "$what: iterations $m under mpirun, $s on one process"
    [ "$(field status "$dir/mpi.json")" = '"converged"' ] || fail "$what: status $(field status "$dir/mpi.json")"
    [ "$(field n "$dir/mpi.json")" = "$(field n "$dir/serial.json")" ] || fail "$what: n differs"
  done
done

# qdot in two collectives: the same run
run -np "$np" "$ebla" cg --nx 12 --ny 10 --nz 6 --dot qdot --qdot-tol 1e-4 --qdot-collectives 2 --json > "$dir/two.json" ||
  fail "cg --qdot-collectives 2: mpirun"
[ "$(field iterations "$dir/two.json")" = "$(field iterations "$dir/mpi.json")" ] ||
  fail "cg --qdot-collectives 2: iterations $(field iterations "$dir/two.json"), one collective: $(field iterations "$dir/mpi.json")"

# a Matrix Market file split by rows: tridiag(-1, 2.5, -1) with n = 1000 and A_11 = 10 (an
# isolated largest eigenvalue, for the power method), lower triangle
awk 'BEGIN { n = 1000; print "%%MatrixMarket matrix coordinate real symmetric"; print n, n, 2 * n - 1;
             for (i = 1; i <= n; i++) { print i, i, (i == 1 ? 10 : 2.5); if (i < n) print i + 1, i, -1 } }' > "$dir/tri.mtx"
for solver in cg power; do
  "$ebla" $solver --matrix "$dir/tri.mtx" --json > "$dir/serial.json" || fail "$solver --matrix: serial run"
  run -np "$np" "$ebla" $solver --matrix "$dir/tri.mtx" --json > "$dir/mpi.json" || fail "$solver --matrix: mpirun"
  s=$(field iterations "$dir/serial.json")
  m=$(field iterations "$dir/mpi.json")
  [ -n "$s" ] && [ "$s" = "$m" ] || fail "$solver --matrix: iterations $m under mpirun, $s on one process"
done

# the power method on a graph Laplacian split by rows
"$ebla" power --problem laplacian --n 1500 --json > "$dir/serial.json" || fail "power: serial run"
run -np "$np" "$ebla" power --problem laplacian --n 1500 --json > "$dir/mpi.json" || fail "power: mpirun"
s=$(field iterations "$dir/serial.json")
m=$(field iterations "$dir/mpi.json")
[ -n "$s" ] && [ "$s" = "$m" ] || fail "power: iterations $m under mpirun, $s on one process"

# the output file: written by rank 0, the level maps of the global vectors
run -np "$np" "$ebla" cg --nx 8 --ny 8 --nz 4 --operator stencil --dot qdot --qdot-tol 1e-2 --levels \
  --output "$dir/run.h5" > "$dir/out.txt" || fail "cg --output: mpirun"
if [ -f "$dir/run.h5" ]; then
  n=$((8 * 8 * 4 * np))
  it=$(h5dump -a /iterations "$dir/run.h5" | sed -n 's/^ *(0): \([0-9]*\).*/\1/p')
  h5dump -H -d /rr_levels "$dir/run.h5" | grep -q "( $it, $n )" ||
    fail "cg --output: /rr_levels is not $it x $n: $(h5dump -H -d /rr_levels "$dir/run.h5" | grep DATASPACE)"
else
  fail "cg --output: no file"
fi
ls "$dir" | grep -q 'run.h5.' && fail "cg --output: a temporary file was left: $(ls "$dir")"

# errors: ranks started with different blocks, a file missing on one rank, a dense operator
expect_error() {  # expect_error WHAT PATTERN COMMAND...
  what=$1
  pattern=$2
  shift 2
  run "$@" > "$dir/out.txt" 2> "$dir/err.txt"
  code=$?
  [ "$code" = 2 ] || fail "$what: exit code $code, not 2 (stderr: $(head -c 400 "$dir/err.txt"))"
  grep -q "$pattern" "$dir/err.txt" || fail "$what: no message matching '$pattern' (stderr: $(head -c 400 "$dir/err.txt"))"
}
expect_error "mismatched ranks" "ranks disagree on the block" \
  -np 1 "$ebla" cg --nx 8 --ny 8 --nz 4 --operator stencil : -np 1 "$ebla" cg --nx 9 --ny 8 --nz 4 --operator stencil
expect_error "a file missing on one rank" "cannot open '$dir/missing.mtx'" \
  -np 1 "$ebla" cg --nx 8 --ny 8 --nz 4 : -np 1 "$ebla" cg --matrix "$dir/missing.mtx"
expect_error "a bad option on one rank" "ebla cg --nx" \
  -np 1 "$ebla" cg --nx 8 : -np 1 "$ebla" cg --nx -8
expect_error "--qdot-collectives 3" "ebla cg --qdot-collectives: 3 is not 1 or 2" -np "$np" "$ebla" cg --qdot-collectives 3
expect_error "dense under mpirun" "dense is not distributed" -np "$np" "$ebla" cg --nx 4 --ny 4 --nz 4 --operator dense
expect_error "--qdot-margin under mpirun" "ebla cg --qdot-margin: applies on one process" \
  -np "$np" "$ebla" cg --nx 4 --ny 4 --nz 4 --qdot-tol 1e-6 --qdot-margin 8

# a rank killed in the middle of a solve (SIGKILL after 3 s of a solve that would take
# minutes): the others must not wait for it in a collective
start=$(date +%s)
long="cg --nx 40 --ny 40 --nz 40 --operator stencil --tol 1e-300 --max-iter 10000000 --progress 0"
# shellcheck disable=SC2086
run -np 1 "$ebla" $long : -np $((np - 1)) timeout -s KILL 3 "$ebla" $long > "$dir/out.txt" 2> "$dir/err.txt"
code=$?
took=$(($(date +%s) - start))
{ [ "$code" != 0 ] && [ "$code" != 124 ] && [ "$took" -lt 60 ]; } ||
  fail "a killed rank: exit code $code after $took s (stderr: $(head -c 400 "$dir/err.txt"))"
grep -q "signal 9" "$dir/err.txt" || fail "a killed rank: mpirun did not report it: $(head -c 400 "$dir/err.txt")"

if [ "$failures" -ne 0 ]; then
  echo "cli_mpi.sh on $np ranks: $failures failure(s)"
  exit 1
fi
echo "cli_mpi.sh on $np ranks: all passed"
