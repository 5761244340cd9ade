#!/usr/bin/env bash
# Installs what is missing, builds ebla (Release, portable flags, with MPI) and runs every test,
# the distributed ones under mpirun, twice, then the fuzz targets:
#  1. against Debian's Kokkos 3.4 (Serial backend), in EBLA_TEST_BUILD_DIR (default build/test);
#  2. against Kokkos 4.6 with OpenMP, built by scripts/kokkos4.sh from source archives into a
#     cached prefix outside the clone (reused once built), in <that directory>-kokkos4, every
#     test on OMP_NUM_THREADS=2 host threads. The archives are EBLA_KOKKOS4_ARCHIVES, default
#     ../shared/vendor beside the clone; without them this part is skipped, with a message;
#  3. against Debian's Kokkos again, everything built with AddressSanitizer (with LeakSanitizer)
#     and UndefinedBehaviorSanitizer (EBLA_SANITIZE), every report fatal, in <build>-sanitize;
#  4. the libFuzzer targets, built with clang and run for a bounded time (scripts/fuzz.sh).
# Every compiler call goes through ccache when it is installed, with its cache outside the clone
# (EBLA_CCACHE_DIR, default /var/cache/ebla/ccache; paths taken relative to the clone, so another
# clone of the same sources hits the same entries); EBLA_CCACHE=0 turns it off.
# Each part ends with CTest's output; the script ends with both summary lines (a failed run's
# last) and exits non-zero if a build or any test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

jobs=$(nproc)

# The four build trees take about 6.5 GB together; on a fuller disk a link fails late ("No space
# left on device"), so say so before the first build.
free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ -n "$free_kb" ] && [ "$free_kb" -lt $((8 * 1024 * 1024)) ]; then
  echo "test.sh: warning: $((free_kb / 1024)) MB free on the file system of $PWD; the builds need about 6.5 GB" >&2
fi
build=${EBLA_TEST_BUILD_DIR:-build/test}
build4="$build-kokkos4"
archives=${EBLA_KOKKOS4_ARCHIVES:-../shared/vendor}
kokkos4_archives=(kokkos-4.6.01.tar.gz kokkos-kernels-4.6.02.tar.gz)
kokkos4=yes
for a in "${kokkos4_archives[@]}"; do
  [ -f "$archives/$a" ] || kokkos4=no
done
if [ "$kokkos4" = no ]; then
  echo "test.sh: skipping the build and tests against Kokkos 4.6 (OpenMP): $archives does not hold" \
       "${kokkos4_archives[*]} (set EBLA_KOKKOS4_ARCHIVES to a directory that does)"
fi

# ccache through CMake's CMAKE_<LANG>_COMPILER_LAUNCHER variables, which the four builds, the
# fuzz build and the tests' own CMake projects (consumer.find_package) all read.
if [ "${EBLA_CCACHE:-1}" != 0 ] && command -v ccache > /dev/null &&
   mkdir -p "${EBLA_CCACHE_DIR:-/var/cache/ebla/ccache}" 2> /dev/null &&
   [ -w "${EBLA_CCACHE_DIR:-/var/cache/ebla/ccache}" ]; then
  export CCACHE_DIR=${EBLA_CCACHE_DIR:-/var/cache/ebla/ccache}
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  ccache --zero-stats > /dev/null
  echo "test.sh: compiling through ccache, cache in $CCACHE_DIR"
else
  echo "test.sh: compiling without ccache"
fi

log=$(mktemp "${TMPDIR:-/tmp}/ebla-test.XXXXXX")
trap 'rm -f "$log"' EXIT
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
failed=0
passed_runs=() failed_runs=()  # "label|summary line"

# run_suite LABEL DIR [VAR=VALUE...]: ctest in DIR with the environment given, its output shown;
# records the summary line and whether it failed.
run_suite() {
  local label=$1 dir=$2 start=$SECONDS rc=0
  shift 2
  (cd "$dir" && env "$@" ctest --output-on-failure -j "$jobs") 2>&1 | tee "$log" || rc=$?
  local summary
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  [ -n "$summary" ] || summary="no CTest summary (ctest exited with $rc)"
  label="$label, ctest $(minutes $((SECONDS - start)))"
  if [ "$rc" -ne 0 ]; then
    failed=1
    failed_runs+=("$label|$summary")
  else
    passed_runs+=("$label|$summary")
  fi
}

# 1. Debian's Kokkos 3.4, Serial.
start=$SECONDS
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEBLA_NATIVE=OFF -DEBLA_ENABLE_MPI=ON
cmake --build "$build" -j "$jobs"
deb_build=$(minutes $((SECONDS - start)))
run_suite "Debian's Kokkos (Serial), build $deb_build" "$build"

# 2. Kokkos 4.6, OpenMP (and Serial), two host threads per test.
if [ "$kokkos4" = yes ]; then
  start=$SECONDS
  prefix=$(bash scripts/kokkos4.sh "$archives" | tail -n 1)
  kokkos_build=$(minutes $((SECONDS - start)))
  start=$SECONDS
  cmake -S . -B "$build4" -DCMAKE_BUILD_TYPE=Release -DEBLA_NATIVE=OFF -DEBLA_ENABLE_MPI=ON \
    -DKokkos_ROOT="$prefix" -DKokkosKernels_ROOT="$prefix"
  cmake --build "$build4" -j "$jobs"
  build4_time=$(minutes $((SECONDS - start)))
  # OMP_PROC_BIND=false: the tests share the cores (ctest -j, mpirun), so no thread is pinned;
  # set, it also keeps Kokkos from warning on every start that it is not set.
  # OMP_WAIT_POLICY=passive: with ctest -j two test programs of two threads each share two
  # cores; idle OpenMP threads that spin between parallel regions take the cores from the
  # other program's working threads.
  run_suite "Kokkos 4.6 (OpenMP, 2 threads), Kokkos $kokkos_build, build $build4_time" "$build4" \
    OMP_NUM_THREADS=2 OMP_PROC_BIND=false OMP_WAIT_POLICY=passive
fi

# 3. The whole suite under the sanitizers: ASan, LeakSanitizer and UBSan in the library, the
# apps and the tests (EBLA_SANITIZE: -O1, every report fatal, so a test that meets one fails).
# Leaks that Open MPI makes on its own in MPI_Init are suppressed (tests/sanitize/lsan.supp,
# third-party libraries only); UBSan prints the stack of what it reports.
start=$SECONDS
cmake -S . -B "$build-sanitize" -DCMAKE_BUILD_TYPE=Release -DEBLA_NATIVE=OFF -DEBLA_ENABLE_MPI=ON -DEBLA_SANITIZE=ON
cmake --build "$build-sanitize" -j "$jobs"
run_suite "Debian's Kokkos with ASan and UBSan, build $(minutes $((SECONDS - start)))" "$build-sanitize" \
  LSAN_OPTIONS="suppressions=$PWD/tests/sanitize/lsan.supp" UBSAN_OPTIONS=print_stacktrace=1

# 4. The libFuzzer targets (tests/fuzz, docs/fuzzing.md): scripts/fuzz.sh builds them with clang
# (ASan and UBSan, every report fatal) in <build>-fuzz and runs each for EBLA_FUZZ_SECONDS
# (default 60) on a copy of its seeds and regression inputs; a finding fails this part.
start=$SECONDS
rc=0
bash scripts/fuzz.sh "$build-fuzz" "${EBLA_FUZZ_SECONDS:-60}" 2>&1 | tee "$log" || rc=$?
summary=$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)
[ -n "$summary" ] || summary="no fuzz summary (scripts/fuzz.sh exited with $rc)"
if [ "$rc" -ne 0 ]; then
  failed=1
  failed_runs+=("Fuzzing, $(minutes $((SECONDS - start)))|$summary")
else
  passed_runs+=("Fuzzing, $(minutes $((SECONDS - start)))|$summary")
fi

echo
echo "test.sh: summaries"
if [ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  echo "ccache: $(ccache --print-stats 2> /dev/null |
    awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
                 $1 == "cache_miss" { m += $2 } END { printf "%d hits, %d misses", h, m }')"
fi
for s in "${passed_runs[@]+"${passed_runs[@]}"}" "${failed_runs[@]+"${failed_runs[@]}"}"; do
  echo "${s%%|*}:"
  echo "${s#*|}"
done
exit "$failed"
