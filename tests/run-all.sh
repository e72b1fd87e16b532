#!/bin/bash
# The one test command (README, .ci/run): installs dependencies, builds kiln
# normally and with ASan+UBSan, and runs every test in both builds.
# Rig (QEMU) tests run once, against the normal build.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
bash tests/deps.sh || { echo "deps: install failed"; exit 1; }

JOBS=$(nproc)
fail=0
build() {  # build DIR CMAKE_ARGS...
  local dir=$1; shift
  cmake -S "$SRC" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.cmake.log" 2>&1 \
    && cmake --build "$dir" -j"$JOBS" >"$dir.build.log" 2>&1 \
    || { echo "build $dir failed:"; tail -40 "$dir.cmake.log" "$dir.build.log"; return 1; }
}

mkdir -p "$SRC/out"
build "$SRC/out/build" || exit 1
build "$SRC/out/build-asan" -DKILN_SANITIZE=ON || exit 1

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:suppressions=$SRC/tests/asan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

passed=0 failed=0 skipped=0
suite() {  # suite NAME BUILD_DIR CTEST_ARGS...
  local name=$1 dir=$2; shift 2
  echo "=== $name"
  (cd "$dir" && ctest --output-on-failure "$@") 2>&1 | tee "$SRC/out/$name.log"
  local rc=${PIPESTATUS[0]}
  # ctest: "95% tests passed, 1 tests failed out of 20"
  local line total nfail nskip
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$SRC/out/$name.log" | tail -1)
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line"); nfail=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
  nskip=$(grep -c 'Not Run\|\*\*\*Skipped' "$SRC/out/$name.log" || true)
  if [[ -n $line ]]; then
    passed=$((passed + total - nfail - nskip)); failed=$((failed + nfail)); skipped=$((skipped + nskip))
  fi
  ((rc == 0)) || fail=1
}
suite unit+host "$SRC/out/build" -j"$JOBS" -LE rig
suite asan "$SRC/out/build-asan" -j"$JOBS" -LE rig
suite rig "$SRC/out/build" -L rig

echo "$passed passed, $failed failed, $skipped skipped"
if ((fail)); then echo "run-all: FAILED"; exit 1; fi
