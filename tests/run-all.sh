#!/bin/bash
# The one test command (README, .ci/run): installs dependencies, builds kiln
# normally, with ASan+UBSan and fully static; runs the unit tests in all
# three, the host tests once (in the ASan+UBSan build, but for the few that
# belong to the normal build: label own-build), the static checks in the
# static build, and the rig (QEMU) tests once, against the static build
# (what the initramfs ships), but for the few labelled rig-long
# (tests/CMakeLists.txt says which and why).
# The counts come from ctest's own JUnit reports (out/junit-*.xml), read by
# tests/lib/junit-count.py; the closing line is "N passed, N failed, N skipped".
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
T0=$SECONDS
bash tests/deps.sh || { echo "deps: install failed"; exit 1; }

JOBS=$(nproc)
fail=0
show_log() {  # show_log FILE: the end of a log, under its name
  echo "--- last 40 lines of $1"
  tail -n 40 -- "$1"
}
build() {  # build DIR CMAKE_ARGS...
  local dir=$1; shift
  if ! cmake -S "$SRC" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.cmake.log" 2>&1; then
    echo "build $dir failed at cmake:"; show_log "$dir.cmake.log"; return 1
  fi
  if ! cmake --build "$dir" -j"$JOBS" >"$dir.build.log" 2>&1; then
    echo "build $dir failed:"; show_log "$dir.build.log"; return 1
  fi
}

mkdir -p "$SRC/out"
rm -f "$SRC"/out/junit-*.xml
build "$SRC/out/build" || exit 1
build "$SRC/out/build-asan" -DKILN_SANITIZE=ON || exit 1
# The static kiln (what the initramfs ships): its archives are built once from
# Debian source packages and cached in $KILN_CACHE (initramfs/static/).
t=$SECONDS
STATIC_PREFIX=$(bash "$SRC/initramfs/static/build.sh" 2>"$SRC/out/static-deps.log" | tail -n 1) \
  || { echo "static deps failed:"; show_log "$SRC/out/static-deps.log"; exit 1; }
echo "static prefix: $STATIC_PREFIX ($((SECONDS - t)) s)"
build "$SRC/out/build-static" -DKILN_STATIC=ON -DKILN_STATIC_PREFIX="$STATIC_PREFIX" || exit 1
echo "builds done in $((SECONDS - T0)) s"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:suppressions=$SRC/tests/asan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

suite() {  # suite NAME BUILD_DIR CTEST_ARGS...: its output here and in out/NAME.log; 1 when it failed
  local name=$1 dir=$2 t=$SECONDS rc=0; shift 2
  echo "=== $name"
  (cd "$dir" && ctest --output-on-failure --output-junit "$SRC/out/junit-$name.xml" "$@") 2>&1 | tee "$SRC/out/$name.log"
  ((PIPESTATUS[0] == 0)) || rc=1
  [[ -s $SRC/out/junit-$name.xml ]] || { echo "=== $name: ctest wrote no report"; rc=1; }
  echo "=== $name: $((SECONDS - t)) s"
  return "$rc"
}
# Twice as many unit and host tests at once as cores: they wait on servers,
# timeouts and sleeps (44 % of a 2-core machine busy at -j2; the static suite
# took 133 s at -j2, 79 s at -j4 and 78 s at -j8, measured 2026-12-02)
TEST_JOBS=$((JOBS * 2))
# The host tests run once, against the ASan+UBSan build: the same code as the
# normal build's, with its memory and undefined-behaviour checks on (running
# them in both builds took 162 s of a 44-minute run on 2026-12-07). The normal
# build runs the unit tests and the host tests that belong to it alone (label
# own-build: the fuzzer, the boot server's scripts; tests/CMakeLists.txt).
#
# A brand-new Debian root builds kiln, and caches are made cold (label fresh;
# they carry the rig label too, so that a quick `ctest -LE rig` skips them).
# That suite runs beside the next three, its output shown when it ends: they
# wait on servers and timeouts, it builds and unpacks (one after the other
# 339 s, 72 % of the machine busy; side by side 246 s, 81 %; all four at
# once 255 s: measured 2026-12-07).
suite fresh "$SRC/out/build" -j"$JOBS" -L fresh >"$SRC/out/fresh.out" 2>&1 &
fresh_pid=$!
suite unit "$SRC/out/build" -j"$TEST_JOBS" -L 'unit|own-build' -LE rig || fail=1
suite asan "$SRC/out/build-asan" -j"$TEST_JOBS" -LE rig || fail=1
# the static binary's own checks and the unit tests: the rig boots this
# binary in every rig test, so its host tests again would add minutes
# (218 s on 2026-12-03) and little else
suite static "$SRC/out/build-static" -j"$TEST_JOBS" -LE rig -R '^(unit/|host/test-(static|cli)$)' || fail=1
wait "$fresh_pid" || fail=1
cat "$SRC/out/fresh.out"

# the rig boots the static binary, stripped, as the initramfs ships it, with
# as many tests at once as there are cores (tests/CMakeLists.txt: why)
# (label rig-long, tests/CMakeLists.txt: not here)
KILN_RIG_BINARY=$SRC/out/build-static/kiln.stripped suite rig "$SRC/out/build-static" -j"${RIG_JOBS:-$JOBS}" -L rig -LE rig-long || fail=1

reports=("$SRC"/out/junit-*.xml)
if [[ -e ${reports[0]} ]] && counts=$(python3 "$SRC/tests/lib/junit-count.py" "${reports[@]}"); then
  read -r passed failed skipped <<<"$(head -n 1 <<<"$counts")"
  tail -n +2 <<<"$counts"
else
  echo "run-all: the ctest reports could not be read"; passed=0 failed=1 skipped=0; fail=1
fi
((failed == 0)) || fail=1
echo "run-all: $((SECONDS - T0)) s in all"
echo "$passed passed, $failed failed, $skipped skipped"
if ((fail)); then echo "run-all: FAILED"; exit 1; fi
