#!/bin/bash
# The one test command (README, .ci/run): installs dependencies, builds kiln
# normally, with ASan+UBSan and fully static, and runs every test in all three.
# Rig (QEMU) tests run once, against the static build (what the initramfs ships).
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
# The static kiln (what the initramfs ships): its archives are built once from
# Debian source packages and cached in /var/cache/kiln (initramfs/static/).
STATIC_PREFIX=$(bash "$SRC/initramfs/static/build.sh" 2>"$SRC/out/static-deps.log" | tail -1) \
  || { echo "static deps failed:"; tail -40 "$SRC/out/static-deps.log"; exit 1; }
build "$SRC/out/build-static" -DKILN_STATIC=ON -DKILN_STATIC_PREFIX="$STATIC_PREFIX" || exit 1

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
suite static "$SRC/out/build-static" -j"$JOBS" -LE rig
# the rig boots the static binary, stripped, as the initramfs ships it
KILN_RIG_BINARY=$SRC/out/build-static/kiln.stripped suite rig "$SRC/out/build-static" -L rig

echo "$passed passed, $failed failed, $skipped skipped"
if ((fail)); then echo "run-all: FAILED"; exit 1; fi
