#!/bin/bash
# A fresh Debian 12 machine builds kiln and passes its unit tests with nothing
# but what tests/deps.sh installs. The machine: a brand-new minimal root
# (mmdebstrap --variant=minbase from this machine's apt sources, cached as a
# tarball by tests/lib/rootfs.sh), entered with chroot. Inside it, as a user
# would: bash tests/deps.sh, the normal build, ctest -L unit.
#
# What this machine has installed by hand, or left in /var/cache/kiln, cannot
# hide a missing install step here: the root starts with no -dev package,
# no compiler and no cache. Only downloaded .debs are kept between runs
# ($KILN_CACHE/fresh-apt-archives, bound to the root's apt archive: apt
# checks each one against the signed index, so a kept .deb installs exactly
# what a download would).
#
# Knobs: KILN_FRESH_KEEP=1 keeps the root (printed); KILN_FRESH_DEPS=FILE runs
# FILE instead of tests/deps.sh inside the root (to see the test fail with a
# package left out).
set -euo pipefail
((EUID == 0)) || { echo "skip: needs root (chroot, mount)"; exit 77; }
: "${SRC:?}"
source "$SRC/initramfs/cache.sh"

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"

t0=$SECONDS
tarball=$(bash "$SRC/tests/lib/rootfs.sh" minbase) || { echo "not ok - make the minbase root (tests/lib/rootfs.sh)"; exit 1; }
echo "# root: $tarball ($((SECONDS - t0)) s)"

R=$(mktemp -d /var/tmp/kiln-fresh.XXXXXX)
# removed on exit unless kept, never through a mount that is still there
# (the apt archive is a bind): tests/lib/cleanup.sh
if [[ ${KILN_FRESH_KEEP:-0} == 1 ]]; then cleanup_do echo "# kept $R"; else cleanup_path "$R"; fi
tar -C "$R" -xf "$tarball"

# what a new machine cannot have: no compiler, no -dev package, no kiln cache
for p in gcc cmake libyaml-dev libarchive-dev; do
  if chroot "$R" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    not_ok "the new root already has $p"
  fi
done
[[ ! -e $R/var/cache/kiln ]] || not_ok "the new root already has /var/cache/kiln"

# the source as CI's clean clone has it (tracked and new files, no build trees)
mkdir -p "$R/src"
git -C "$SRC" ls-files -z --cached --others --exclude-standard \
  | (cd "$SRC" && xargs -0 -r stat --printf='%n\0' 2>/dev/null) \
  | tar -C "$SRC" --null -T - -cf - | tar -C "$R/src" -xf -
if [[ -n ${KILN_FRESH_DEPS:-} ]]; then cp "$KILN_FRESH_DEPS" "$R/src/tests/deps.sh"; fi

# the machine's network and apt settings (its sources are already in the
# root: mmdebstrap wrote them); services installed in the root never start
cp -L /etc/resolv.conf "$R/etc/resolv.conf"
for f in /etc/apt/apt.conf.d/*; do
  [[ -f $f ]] && grep -q '^[[:space:]]*Acquire::' "$f" && cp "$f" "$R/etc/apt/apt.conf.d/"
done
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"; chmod 755 "$R/usr/sbin/policy-rc.d"
archives=$KILN_CACHE_DIR/fresh-apt-archives
mkdir -p "$archives/partial" "$R/var/cache/apt/archives"
rm -f "$R/etc/apt/apt.conf.d/docker-clean"   # keep the .debs for the next run
mount --bind "$archives" "$R/var/cache/apt/archives" && cleanup_umount "$R/var/cache/apt/archives"
mount -t proc proc "$R/proc" && cleanup_umount "$R/proc"
mount -t sysfs sys "$R/sys" && cleanup_umount "$R/sys"
mount --bind /dev "$R/dev" && cleanup_umount "$R/dev"
mount -t devpts -o newinstance devpts "$R/dev/pts" 2>/dev/null && cleanup_umount "$R/dev/pts" || true

in_root() {  # in_root LABEL COMMAND: runs COMMAND in the root as a new login would
  local label=$1 cmd=$2 t=$SECONDS rc=0
  chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /src && $cmd" >"$R/$label.log" 2>&1 || rc=$?
  echo "# $label: $((SECONDS - t)) s, exit $rc"
  if ((rc != 0)); then
    echo "# last lines of $label:"; tail -n 30 "$R/$label.log" | sed 's/^/#   /'
    not_ok "$label"; return 1
  fi
  ok "$label"
}
# one fresh root at a time uses the kept .debs (apt locks the directory)
exec 8>"$archives.lock"
flock 8
in_root deps "bash tests/deps.sh" &&
in_root build "cmake -S . -B out/build -DCMAKE_BUILD_TYPE=RelWithDebInfo && nice cmake --build out/build -j$(nproc)" &&
in_root unit "cd out/build && ctest -L unit --output-on-failure --output-junit /src/out/junit-unit.xml" || true

if [[ -s $R/src/out/junit-unit.xml ]]; then
  read -r p f s < <(python3 "$SRC/tests/lib/junit-count.py" "$R/src/out/junit-unit.xml" | head -n 1)
  echo "# unit tests in the new root: $p passed, $f failed, $s skipped"
  ((p > 0 && f == 0)) || not_ok "unit tests in the new root ($p passed, $f failed)"
  # the binary that the root built is the one a user gets: it runs there
  out=$(chroot "$R" /bin/bash -c '/src/out/build/kiln validate /src/templates/*.yaml' 2>&1) && ok "kiln validate templates/*.yaml in the new root" \
    || { echo "$out" | sed 's/^/#   /'; not_ok "kiln validate templates/*.yaml in the new root"; }
fi
echo "# fresh machine: $((SECONDS - t0)) s in all"
checks_done
