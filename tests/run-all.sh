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

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

(cd "$SRC/out/build" && ctest --output-on-failure -j"$JOBS" -LE rig) || fail=1
(cd "$SRC/out/build-asan" && ctest --output-on-failure -j"$JOBS" -LE rig) || fail=1
(cd "$SRC/out/build" && ctest --output-on-failure -L rig) || fail=1

if ((fail)); then echo "run-all: FAILED"; exit 1; fi
echo "run-all: all test suites passed"
