#!/usr/bin/env bash
# A run interrupted while it writes -o FILE (SIGINT, SIGTERM, SIGHUP and the other signals
# whose default ends a process) removes its temporary file, leaves no FILE, and dies of the
# signal (exit status 128 + the signal's number).
# Usage: signals.sh EBLA
set -u
ebla=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}
set -m  # job control: the background run gets SIGINT's default action, not "ignored"
for sig in INT TERM HUP QUIT USR1 USR2 ALRM XFSZ XCPU PIPE VTALRM PROF; do
  "$ebla" cg --nx 30 --ny 30 --nz 30 --tol 1e-300 --max-iter 100000000 --progress 0 -o "$dir/out.h5" \
    > "$dir/stdout" 2> "$dir/stderr" &
  pid=$!
  for _ in $(seq 300); do  # until the temporary file exists (30 s at most)
    ls "$dir" | grep -q '^out.h5.tmp-' && break
    sleep 0.1
  done
  ls "$dir" | grep -q '^out.h5.tmp-' || fail "SIG$sig: no temporary file appeared"
  kill -s "$sig" "$pid"
  wait "$pid"
  code=$?
  expected=$((128 + $(kill -l "$sig")))
  [ "$code" = "$expected" ] || fail "SIG$sig: exit status $code, not $expected ($(head -c 300 "$dir/stderr"))"
  left=$(ls "$dir" | grep -v '^std' || true)
  [ -z "$left" ] || fail "SIG$sig: left $left"
done
if [ "$failures" -ne 0 ]; then
  echo "signals.sh: $failures failure(s)"
  exit 1
fi
echo "signals.sh: SIGINT, SIGTERM, SIGHUP and the other terminating signals left no file"
