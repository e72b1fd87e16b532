#!/bin/bash
# Builds tests/fuzz/fuzz-spec.c with clang (libFuzzer + ASan + UBSan) in its
# own build directory and runs it for KILN_FUZZ_SECONDS (default 60) from a
# seed corpus of templates/ and tests/bad-specs/. Any crash, leak, sanitizer
# report or timeout fails the test. Runs in the normal suite only (the fuzzer
# build is itself sanitized).
set -uo pipefail
: "${SRC:?}" "${BUILD:?}"
[[ ${KILN_SANITIZE:-OFF} == ON ]] && { echo "fuzzing runs from the normal build's suite"; exit 77; }
command -v clang >/dev/null || { echo "clang missing"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$BUILD/fuzz-probe.c"
clang -fsanitize=fuzzer "$BUILD/fuzz-probe.c" -o "$BUILD/fuzz-probe" 2>/dev/null || { echo "libFuzzer runtime missing"; exit 77; }
rm -f "$BUILD/fuzz-probe" "$BUILD/fuzz-probe.c"

dir=$BUILD/fuzz
seconds=${KILN_FUZZ_SECONDS:-60}
CC=clang nice -n 10 cmake -S "$SRC" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON -DKILN_SANITIZE=ON \
  >"$dir.cmake.log" 2>&1 || { tail -20 "$dir.cmake.log"; exit 1; }
nice -n 10 cmake --build "$dir" --target fuzz-spec -j2 >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/corpus" "$tmp/seeds"
cp "$SRC"/templates/*.yaml "$SRC"/tests/bad-specs/*.yaml "$tmp/seeds/"
export ASAN_OPTIONS="suppressions=$SRC/tests/asan.supp:detect_leaks=1"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$tmp" || exit 1
nice -n 10 "$dir/tests/fuzz-spec" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -dict="$SRC/tests/fuzz/spec.dict" -print_final_stats=1 "$tmp/corpus" "$tmp/seeds" >"$tmp/log" 2>&1
rc=$?
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)' "$tmp/log"
if ((rc != 0)) || compgen -G "$tmp/crash-*" >/dev/null || compgen -G "$tmp/leak-*" >/dev/null ||
   compgen -G "$tmp/timeout-*" >/dev/null; then
  echo "FAIL: fuzz-spec found a problem (exit $rc):"
  grep -v '^#' "$tmp/log" | tail -60
  for f in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-*; do
    [[ -f $f ]] && { echo "--- input $f (base64):"; base64 -w0 "$f" | head -c 4000; echo; }
  done
  exit 1
fi
echo "fuzz-spec: ${seconds}s, nothing found"
