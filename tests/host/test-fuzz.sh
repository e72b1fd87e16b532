#!/bin/bash
# Every libFuzzer target in tests/fuzz/ (fuzz-<name>.c, each calling the real
# module function on hostile input: the spec, the resume progress record, the
# kernel command line, the /proc parsers, a saved run report, CloudStack's
# answers, the inventory JSON, the HTTP Content-Range header, URLs as kiln
# shows them, the tar extraction's symlink guard). Builds them ONCE with
# clang (libFuzzer + ASan + UBSan) in their own build directory, then runs
# each for KILN_FUZZ_SECONDS (default 10), KILN_FUZZ_JOBS (2) at once, from its seeds (tests/fuzz/seeds/<name>/ and
# what the tree already has: templates, bad specs, recorded inventories, this
# host's /proc) with its dictionary (tests/fuzz/<name>.dict or json.dict).
# The small targets get less (cmdline and the tar symlink guard two fifths
# of it, content-range and url three tenths), so the test takes about as
# long as before the last three joined.
# KILN_FUZZ_TARGETS="resume report" runs only those. Any crash, leak,
# sanitizer report or timeout fails the test and prints the input in base64.
# Runs in the normal suite only (the fuzzer build is itself sanitized).
set -uo pipefail
: "${SRC:?}" "${BUILD:?}"
[[ ${KILN_SANITIZE:-OFF} == ON ]] && { echo "fuzzing runs from the normal build's suite"; exit 77; }
command -v clang >/dev/null || { echo "clang missing"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$BUILD/fuzz-probe.c"
clang -fsanitize=fuzzer "$BUILD/fuzz-probe.c" -o "$BUILD/fuzz-probe" 2>/dev/null || { echo "libFuzzer runtime missing"; exit 77; }
rm -f "$BUILD/fuzz-probe" "$BUILD/fuzz-probe.c"

dir=$BUILD/fuzz
seconds=${KILN_FUZZ_SECONDS:-10}
all=()
for f in "$SRC"/tests/fuzz/fuzz-*.c; do n=${f##*/fuzz-}; all+=("${n%.c}"); done
read -r -a targets <<<"${KILN_FUZZ_TARGETS:-${all[*]}}"

start=$SECONDS
CC=clang nice -n 10 cmake -S "$SRC" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON -DKILN_SANITIZE=ON \
  >"$dir.cmake.log" 2>&1 || { tail -20 "$dir.cmake.log"; exit 1; }
nice -n 10 cmake --build "$dir" --target "${targets[@]/#/fuzz-}" -j2 >"$dir.build.log" 2>&1 ||
  { tail -40 "$dir.build.log"; exit 1; }
echo "built ${#targets[@]} fuzz targets in $((SECONDS - start)) s"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# seeds the tree has beside tests/fuzz/seeds/<name>/
extra_seeds() {
  local t=$1 out=$2 n f
  case $t in
    spec) cp "$SRC"/templates/*.yaml "$SRC"/tests/bad-specs/*.yaml "$out/" ;;
    inventory) cp "$SRC"/tests/inventories/*.json "$out/" ;;
    cmdline) [[ -r /proc/cmdline ]] && cp /proc/cmdline "$out/host" ;;
    procfs)
      # the first byte picks the parser (fuzz-procfs.c)
      n=0
      for f in meminfo cpuinfo misc self/mountinfo; do
        { printf "\\x3$n"; cat "/proc/$f" 2>/dev/null; } >"$out/host-${f##*/}"
        [[ -r $SRC/tests/inventories/sysroot-mixed/proc/$f ]] &&
          { printf "\\x3$n"; cat "$SRC/tests/inventories/sysroot-mixed/proc/$f"; } >"$out/recorded-${f##*/}"
        n=$((n + 1))
      done
      printf '4253:7' >"$out/devnum" ;;
  esac
  return 0
}

export ASAN_OPTIONS="suppressions=$SRC/tests/asan.supp:detect_leaks=1"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# fuzz_one TARGET: one target's run; what it found (or "nothing found") in
# $tmp/TARGET/result, "fail" marked by $tmp/TARGET/failed
fuzz_one() {
  local t=$1 work=$tmp/$1 dict max_len secs rc execs f
  mkdir -p "$work/corpus" "$work/seeds"
  [[ -d $SRC/tests/fuzz/seeds/$t ]] && cp "$SRC/tests/fuzz/seeds/$t"/* "$work/seeds/"
  extra_seeds "$t" "$work/seeds"
  dict=$SRC/tests/fuzz/$t.dict
  [[ -f $dict ]] || dict=$SRC/tests/fuzz/json.dict
  max_len=8192
  [[ $t == spec || $t == inventory ]] && max_len=65536
  case $t in
    cmdline | targuard) secs=$(((seconds * 2 + 4) / 5)) ;;
    content-range | url) secs=$(((seconds * 3 + 9) / 10)) ;;
    *) secs=$seconds ;;
  esac
  (cd "$work" && nice -n 19 "$dir/tests/fuzz-$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
     -max_len=$max_len -dict="$dict" -print_final_stats=1 "$work/corpus" "$work/seeds" >"$work/log" 2>&1)
  rc=$?
  execs=$(grep -E '^stat::number_of_executed_units' "$work/log")
  if ((rc != 0)) || compgen -G "$work/crash-*" >/dev/null || compgen -G "$work/leak-*" >/dev/null ||
     compgen -G "$work/timeout-*" >/dev/null || compgen -G "$work/oom-*" >/dev/null ||
     grep -qE 'runtime error:|ERROR: (AddressSanitizer|LeakSanitizer)' "$work/log"; then
    {
      echo "FAIL: fuzz-$t found a problem (exit $rc):"
      grep -v '^#' "$work/log" | tail -60
      for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [[ -f $f ]] && { echo "--- input $f (base64):"; base64 -w0 "$f" | head -c 4000; echo; }
      done
    } >"$work/result"
    touch "$work/failed"
  else
    echo "fuzz-$t: ${secs}s, ${execs#*: } inputs, nothing found" >"$work/result"
  fi
}

# KILN_FUZZ_JOBS targets at once (default 2: each fuzzer is one process on
# one core, at nice 19 so the suite's other tests go first)
jobs_max=${KILN_FUZZ_JOBS:-2}
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n; done
  fuzz_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$tmp/$t/result" 2>/dev/null || echo "FAIL: fuzz-$t left no result"
  [[ -e $tmp/$t/failed || ! -e $tmp/$t/result ]] && failed+=("$t")
done
echo "fuzzing took $((SECONDS - start)) s"
((${#failed[@]} == 0)) || { echo "FAIL: ${failed[*]}"; exit 1; }
