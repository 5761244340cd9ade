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
# one_process DOTS: the options of the one-process run that match DOTS under mpirun, where
# qdot takes no plan margin (on one process its default is 8 for --qdot-tol X)
one_process() { case "$1" in *qdot*) echo "$1 --qdot-margin 0" ;; *) echo "$1" ;; esac; }

# CG on HPCCG: the global grid 12 x 10 x (6 P), stencil and csr, exact and qdot dots
for op in stencil csr; do
  for dots in "--dot exact" "--dot qdot --qdot-tol 1e-4"; do
    what="cg --operator $op $dots"
    # shellcheck disable=SC2086
    "$ebla" cg --nx 12 --ny 10 --nz $((6 * np)) --operator $op $(one_process "$dots") --json > "$dir/serial.json" ||
      fail "$what: serial run"
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
# every rank must be given rank 0's options (a fingerprint compared before any other
# collective): a different block, a rank at --help, different collectives (which corrupted
# the heap in MPI_Allreduce), operators (which hung), tolerances (MPI_ERR_TRUNCATE)
differ="the ranks were started with different options"
expect_error "mismatched blocks" "$differ" \
  -np 1 "$ebla" cg --nx 8 --ny 8 --nz 4 --operator stencil : -np 1 "$ebla" cg --nx 9 --ny 8 --nz 4 --operator stencil
expect_error "--help on one rank" "rank 1 runs '.* cg --help'" -np 1 "$ebla" cg --nx 4 : -np 1 "$ebla" cg --help
expect_error "--qdot-collectives 1 and 2" "$differ" \
  -np 1 "$ebla" cg --nx 6 --ny 6 --nz 6 --qdot-tol 1e-6 --qdot-collectives 1 : \
  -np $((np - 1)) "$ebla" cg --nx 6 --ny 6 --nz 6 --qdot-tol 1e-6 --qdot-collectives 2
expect_error "stencil and csr" "$differ" \
  -np $((np - 1)) "$ebla" cg --nx 6 --ny 6 --nz 6 --operator stencil : -np 1 "$ebla" cg --nx 6 --ny 6 --nz 6 --operator csr
expect_error "different --tol" "$differ" -np 1 "$ebla" power --tol 1e-6 : -np $((np - 1)) "$ebla" power --tol 1e-7
expect_error "a bad option on one rank" "rank 1 runs '.* cg --nx -8'" \
  -np 1 "$ebla" cg --nx 8 : -np 1 "$ebla" cg --nx -8
grep -q "free()\|MPI_ERR" "$dir/err.txt" && fail "a bad option on one rank: MPI failed: $(head -c 400 "$dir/err.txt")"
# the same options, but the file is missing where rank 1 runs (another working directory)
mkdir -p "$dir/here" "$dir/there"
cp "$dir/tri.mtx" "$dir/here/tri.mtx"
expect_error "a file missing on one rank" "cannot open 'tri.mtx'" \
  -np 1 --wdir "$dir/here" "$ebla" cg --matrix tri.mtx : -np 1 --wdir "$dir/there" "$ebla" cg --matrix tri.mtx
# the same path naming different files where the ranks run (A_11 = 9 there, not 10; a
# start vector that differs in one entry): refused on every rank, naming the option, the
# file and the ranks that differ; the same files everywhere solve as one process does
awk '$1 == 1 && $2 == 1 { $3 = 9 } { print }' "$dir/tri.mtx" > "$dir/there/tri.mtx"
for solver in cg power; do
  expect_error "$solver: different files under one path" \
    "ebla $solver --matrix: 'tri.mtx' is not the same file on every rank: rank(s) 1.* read other bytes than rank 0" \
    -np 1 --wdir "$dir/here" "$ebla" $solver --matrix tri.mtx : -np $((np - 1)) --wdir "$dir/there" "$ebla" $solver --matrix tri.mtx
done
cp "$dir/tri.mtx" "$dir/there/tri.mtx"
for place in here there; do
  awk -v last=$([ $place = here ] && echo 1 || echo 2) 'BEGIN { print "%%MatrixMarket matrix array real general"; print 1000, 1;
                                                             for (i = 1; i < 1000; i++) print 1; print last }' > "$dir/$place/x0.mtx"
done
expect_error "cg: different --x0 files under one path" "ebla cg --x0: 'x0.mtx' is not the same file on every rank" \
  -np $((np - 1)) --wdir "$dir/here" "$ebla" cg --matrix tri.mtx --x0 x0.mtx : -np 1 --wdir "$dir/there" "$ebla" cg --matrix tri.mtx --x0 x0.mtx
"$ebla" cg --matrix "$dir/tri.mtx" --json > "$dir/serial.json" || fail "cg --matrix tri.mtx: serial run"
run -np 1 --wdir "$dir/here" "$ebla" cg --matrix tri.mtx --json : -np $((np - 1)) --wdir "$dir/there" "$ebla" cg --matrix tri.mtx --json \
  > "$dir/mpi.json" 2> "$dir/err.txt" || fail "the same files in two directories: exit code $? (stderr: $(head -c 400 "$dir/err.txt"))"
[ "$(field iterations "$dir/mpi.json")" = "$(field iterations "$dir/serial.json")" ] ||
  fail "the same files in two directories: iterations $(field iterations "$dir/mpi.json"), one process: $(field iterations "$dir/serial.json")"
# the host threads of a rank may differ
run -np 1 "$ebla" cg --nx 6 --ny 6 --nz 6 --kokkos-num-threads 1 : \
  -np $((np - 1)) "$ebla" cg --nx 6 --ny 6 --nz 6 --kokkos-num-threads=2 > "$dir/out.txt" 2> "$dir/err.txt" ||
  fail "--kokkos-num-threads 1 and 2: exit code $? (stderr: $(head -c 400 "$dir/err.txt"))"

# --help, --version and the commands that are not distributed: rank 0 alone prints
run -np "$np" "$ebla" cg --help > "$dir/out.txt" 2> "$dir/err.txt" || fail "cg --help: exit code $?"
[ "$(grep -c '^Usage' "$dir/out.txt")" = 1 ] || fail "cg --help: $(grep -c '^Usage' "$dir/out.txt") usage lines"
run -np "$np" "$ebla" --version > "$dir/out.txt" 2> "$dir/err.txt" || fail "--version: exit code $?"
[ "$(cat "$dir/out.txt")" = "$("$ebla" --version)" ] || fail "--version: $(head -c 200 "$dir/out.txt")"
"$ebla" formats > "$dir/serial.txt"
run -np "$np" "$ebla" formats > "$dir/out.txt" 2> "$dir/err.txt" || fail "formats: exit code $?"
cmp -s "$dir/serial.txt" "$dir/out.txt" || fail "formats under mpirun: not the serial output once"

# ranks that own no rows (n = P - 1: the last rank has none) take part in every collective
awk -v n=$((np - 1)) 'BEGIN { print "%%MatrixMarket matrix coordinate real symmetric"; print n, n, n;
                              for (i = 1; i <= n; i++) print i, i, i + 1 }' > "$dir/small.mtx"
for solver in cg power; do
  for dots in "--dot exact" "--dot qdot --qdot-tol 1e-6"; do
    what="$solver --matrix small.mtx $dots on $np ranks"
    # shellcheck disable=SC2086
    "$ebla" $solver --matrix "$dir/small.mtx" $(one_process "$dots") --json > "$dir/serial.json" || fail "$what: serial run"
    # shellcheck disable=SC2086
    run -np "$np" "$ebla" $solver --matrix "$dir/small.mtx" $dots --json > "$dir/mpi.json" 2> "$dir/err.txt" ||
      fail "$what: exit code $? (stderr: $(head -c 400 "$dir/err.txt"))"
    s=$(field iterations "$dir/serial.json")
    m=$(field iterations "$dir/mpi.json")
    [ -n "$s" ] && [ "$s" = "$m" ] || fail "$what: iterations $m under mpirun, $s on one process"
  done
done
expect_error "--qdot-collectives 3" "ebla cg --qdot-collectives: 3 is not 1 or 2" -np "$np" "$ebla" cg --qdot-collectives 3
expect_error "dense under mpirun" "dense is not distributed" -np "$np" "$ebla" cg --nx 4 --ny 4 --nz 4 --operator dense
expect_error "--qdot-margin under mpirun" "ebla cg --qdot-margin: applies on one process" \
  -np "$np" "$ebla" cg --nx 4 --ny 4 --nz 4 --qdot-tol 1e-6 --qdot-margin 8

# a rank killed in the middle of a solve (SIGKILL after 3 s of a solve that would take
# minutes): the others must not wait for it in a collective, and rank 0, ended by mpirun's
# SIGTERM, removes the temporary file of its --output
start=$(date +%s)
long="cg --nx 40 --ny 40 --nz 40 --operator stencil --tol 1e-300 --max-iter 10000000 --progress 0 -o $dir/killed.h5"
# shellcheck disable=SC2086
run -np 1 "$ebla" $long : -np $((np - 1)) timeout -s KILL 3 "$ebla" $long > "$dir/out.txt" 2> "$dir/err.txt"
code=$?
took=$(($(date +%s) - start))
{ [ "$code" != 0 ] && [ "$code" != 124 ] && [ "$took" -lt 60 ]; } ||
  fail "a killed rank: exit code $code after $took s (stderr: $(head -c 400 "$dir/err.txt"))"
grep -q "signal 9" "$dir/err.txt" || fail "a killed rank: mpirun did not report it: $(head -c 400 "$dir/err.txt")"
ls "$dir" | grep -q '^killed.h5' && fail "a killed rank: rank 0 left $(ls "$dir" | grep '^killed.h5')"

if [ "$failures" -ne 0 ]; then
  echo "cli_mpi.sh on $np ranks: $failures failure(s)"
  exit 1
fi
echo "cli_mpi.sh on $np ranks: all passed"
