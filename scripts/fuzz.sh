#!/usr/bin/env bash
# Builds ebla's libFuzzer targets (tests/fuzz, docs/fuzzing.md) with clang and runs each for a
# bounded time on a copy of its seed corpus and regression inputs.
#
#   bash scripts/fuzz.sh [BUILD_DIR] [SECONDS]      (defaults: build/fuzz, 60)
#
# Needs clang, libFuzzer's runtime and llvm-symbolizer (scripts/setup.sh installs them); installs
# nothing itself. Prints one line per target, "fuzz TARGET: N runs, clean" or what it found, and
# last "fuzz: N passed, M failed". Exit status 1 if a target found anything, 2 if it could not
# build or run them.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build/fuzz}"
seconds="${2:-60}"
targets=(fuzz_matrix_market fuzz_hdf5 fuzz_format_name fuzz_cli)

if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: SECONDS must be a positive integer, not '$seconds'" >&2
  exit 2
fi
for tool in clang clang++ cmake; do
  if ! command -v "$tool" > /dev/null; then
    echo "fuzz: $tool not found (run 'bash scripts/setup.sh' first)" >&2
    exit 2
  fi
done
if [ ! -e "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] &&
   [ ! -e "$(clang++ -print-runtime-dir 2> /dev/null)/libclang_rt.fuzzer-x86_64.a" ]; then
  echo "fuzz: clang's libFuzzer runtime is missing (Debian: libclang-rt-14-dev; run 'bash scripts/setup.sh')" >&2
  exit 2
fi
mkdir -p "$build"
build="$(cd "$build" && pwd)"

# ---- build ---------------------------------------------------------------------------------
start=$SECONDS
if ! cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
       -DEBLA_FUZZ=ON -DEBLA_BUILD_TESTS=OFF -DEBLA_BUILD_APPS=OFF -DEBLA_ENABLE_MPI=OFF > "$build/fuzz-configure.log" 2>&1; then
  tail -n 30 "$build/fuzz-configure.log" >&2
  echo "fuzz: configuring failed (log: $build/fuzz-configure.log)" >&2
  exit 2
fi
if ! cmake --build "$build" --target fuzz -j "$(nproc)" > "$build/fuzz-build.log" 2>&1; then
  grep -E "error|Error" "$build/fuzz-build.log" | head -n 30 >&2
  echo "fuzz: building failed (log: $build/fuzz-build.log)" >&2
  exit 2
fi
echo "fuzz: built in $((SECONDS - start)) s ($build)"

# ---- run -----------------------------------------------------------------------------------
# Every sanitizer report is fatal and carries a stack; an allocation above 2 GiB is reported
# where it is asked for (before the memory is touched); leaks made inside libhdf5 are HDF5's
# (tests/fuzz/lsan.supp).
export ASAN_OPTIONS="max_allocation_size_mb=2048:detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:${LSAN_OPTIONS:-}"

# The option parser's dictionary: the command's option and subcommand names, from its sources.
mkdir -p "$build/fuzz-dict"
grep -hoE '(add_option|add_flag)\("[^"]*"|add\("[a-z]+"' "$root"/apps/ebla/*.cpp |
  sed -E 's/^[a-z_]+\("//; s/"$//' | tr ',' '\n' | grep -E '^-' | sort -u | sed 's/.*/"&"/' \
  > "$build/fuzz-dict/fuzz_cli.dict"
grep -hoE 'add\("[a-z]+"' "$root"/apps/ebla/*.cpp | sed -E 's/^add\(//' | sort -u \
  >> "$build/fuzz-dict/fuzz_cli.dict"

# the targets' scratch files, in memory where possible; removed at the end, also those of a
# target that crashed
scratch="$(mktemp -d /dev/shm/ebla-fuzz.XXXXXX 2> /dev/null || mktemp -d "$build/fuzz-scratch.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
export EBLA_FUZZ_TMPDIR="$scratch"

passed=0
failed=0
run_start=$SECONDS
for t in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t"
  log="$build/fuzz-logs/$t.log"
  rm -rf "$corpus" "$artifacts"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  cp "$root/tests/fuzz/corpus/$t"/* "$corpus"/
  if [ -d "$root/tests/fuzz/regressions/$t" ]; then
    cp "$root/tests/fuzz/regressions/$t"/* "$corpus"/ 2> /dev/null || true
  fi
  dict=()
  for d in "$root/tests/fuzz/dict/$t.dict" "$build/fuzz-dict/$t.dict"; do
    if [ -f "$d" ]; then dict=("-dict=$d"); fi
  done
  # the readers' scratch files go to /dev/shm or TMPDIR; run in the artifact directory so that
  # anything else a target writes stays in the build directory
  (cd "$artifacts" && "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     "${dict[@]}" -artifact_prefix="$artifacts/" "$corpus") > "$log" 2>&1
  rc=$?
  runs="$(sed -nE 's/^Done ([0-9]+) runs.*/\1/p' "$log" | tail -n 1)"
  if [ -z "$runs" ]; then runs="$(sed -nE 's/^#([0-9]+).*/\1/p' "$log" | tail -n 1)"; fi
  runs="${runs:-0}"
  found="$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
             -o -name 'timeout-*' \) | head -n 1)"
  if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
    note="$(sed -nE 's/^fuzz_hdf5: ([0-9]+) of [0-9]+ inputs crash or hang HDF5.*/\1/p' "$log" | tail -n 1)"
    if [ -n "$note" ]; then
      echo "fuzz $t: $runs runs, clean ($note inputs that crash or hang HDF5 by itself skipped)"
    else
      echo "fuzz $t: $runs runs, clean"
    fi
    passed=$((passed + 1))
  else
    what="$(grep -m1 -E '^ebla fuzz: property violated|^terminate called' "$log" ||
            grep -m1 -E '^SUMMARY: ' "$log" ||
            grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)' "$log" ||
            echo "exit status $rc")"
    what="$(sed -E 's/ \(BuildId: [0-9a-f]+\)//; s| \(/[^ )]*\+0x[0-9a-f]+\)||' <<< "$what")"
    # the innermost frame in ebla's own sources (not the target's)
    where="$(sed -nE '/ERROR: |^ebla fuzz: property violated|^terminate called/,$p' "$log" |
             grep -m1 -oE "$root/(core|kernels|solvers|mpi|apps)/[^ :]+:[0-9]+" | sed "s|^$root/||")"
    if [ -n "$where" ]; then what="$what at $where"; fi
    if [ -n "$found" ]; then
      # the input once more, with full stacks through the libraries built without frame pointers
      { echo; echo "==== $found again, fast_unwind_on_malloc=0"; } >> "$log"
      (cd "$artifacts" && ASAN_OPTIONS="fast_unwind_on_malloc=0:$ASAN_OPTIONS" "$build/tests/fuzz/$t" "$found") \
        >> "$log" 2>&1
    fi
    echo "fuzz $t: FAILED after $runs runs: ${what}; input ${found:-none saved}; log $log"
    failed=$((failed + 1))
  fi
done

echo "fuzz: ran ${#targets[@]} targets for $seconds s each in $((SECONDS - run_start)) s"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
