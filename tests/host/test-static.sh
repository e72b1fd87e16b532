#!/bin/bash
# The static kiln binary (cmake -DKILN_STATIC=ON): fully static, stripped copy
# for initramfs builders, and it runs on a userland that has none of its
# libraries: an empty root (no libc at all) and a minimal Debian rootfs made
# with mmdebstrap (tests/lib/rootfs.sh, cached in $KILN_CACHE), entered with chroot.
set -euo pipefail
[[ ${KILN_STATIC:-OFF} == ON ]] || { echo "skip: not a static build (KILN_STATIC=${KILN_STATIC:-})"; exit 77; }
((EUID == 0)) || { echo "skip: needs root (chroot)"; exit 77; }
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"

source "$SRC/tests/lib/http.sh"
test_tmpdir static
mounts=()   # those of the current run_in; all of them are unmounted on exit too

# --- 1. the binary is static ---------------------------------------------
desc=$(file -b "$KILN")
echo "# file: $desc"
check "file says statically linked" grep -q 'statically linked' <<<"$desc"
check "file does not say dynamically linked / interpreter" bash -c '! grep -qE "dynamically linked|interpreter" <<<"$1"' _ "$desc"
lddout=$(ldd "$KILN" 2>&1 || true)
echo "# ldd: $lddout"
check "ldd finds no shared library" bash -c '! grep -q "=>" <<<"$1" && grep -q "not a dynamic executable" <<<"$1"' _ "$lddout"
check "no PT_INTERP / DT_NEEDED" bash -c '! readelf -lW "$1" | grep -q INTERP && ! readelf -dW "$1" 2>/dev/null | grep -q NEEDED' _ "$KILN"

stripped=$BUILD/kiln.stripped
check "kiln.stripped exists" test -x "$stripped"
if [[ -x $stripped ]]; then
  check "kiln.stripped is static and has no symbol table" \
    bash -c 'file -b "$1" | grep -q "statically linked" && file -b "$1" | grep -q ", stripped$"' _ "$stripped"
  size=$(stat -c %s "$stripped")
  echo "# size: kiln $(stat -c %s "$KILN") bytes, stripped $size bytes ($((size / 1024)) KiB)"
  # keep it small: Ignition's static binary is about 20 MB; stay well below.
  check "stripped binary under 16 MiB" test "$size" -lt $((16 * 1024 * 1024))
  # the figure the docs give ("N.N MiB stripped") stays true within 0.25 MiB:
  # the README, docs/guide.md and docs/comparison.md's table
  for doc in README.md docs/guide.md docs/comparison.md; do
    readme=$(grep -oE '[0-9]+\.[0-9] MiB stripped' "$SRC/$doc" | head -1 | cut -d' ' -f1)
    check "$doc gives the stripped size ($readme MiB, measured $size bytes)" \
      bash -c '[[ -n $1 ]] && awk -v r="$1" -v s="$2" "BEGIN { d = s / 1048576 - r; exit !(d < 0.25 && d > -0.25) }"' _ "$readme" "$size"
  done
fi

# which subcommands this build has (others land them over time)
has_cmd() { "$KILN" help 2>/dev/null | grep -qE "^  $1 "; }
templates=()
for t in "$SRC"/templates/*.yaml; do [[ -f $t ]] && templates+=("$t"); done

# run_in ROOT: copies kiln (stripped) and a template into ROOT, runs it with chroot
run_in() {
  local root=$1 label=$2 out rc
  mkdir -p "$root/bin" "$root/tmp" "$root/proc" "$root/sys" "$root/dev" "$root/etc"
  install -m755 "$stripped" "$root/kiln-static"
  mount -t proc proc "$root/proc" && mounts+=("$root/proc") && cleanup_umount "$root/proc"
  mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" && mounts+=("$root/sys") && cleanup_umount "$root/sys"
  mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounts+=("$root/dev") && cleanup_umount "$root/dev"

  rc=0; out=$(chroot "$root" /kiln-static version 2>&1) || rc=$?
  check "$label: kiln version runs (rc=$rc: $out)" bash -c '(( $1 == 0 )) && grep -q "^kiln " <<<"$2"' _ "$rc" "$out"

  if has_cmd validate && ((${#templates[@]})); then
    local t
    for t in "${templates[@]}"; do
      cp "$t" "$root/tmp/spec.yaml"
      rc=0; out=$(chroot "$root" /kiln-static validate /tmp/spec.yaml 2>&1) || rc=$?
      check "$label: kiln validate templates/$(basename "$t") exits 0 (rc=$rc: ${out:0:300})" test "$rc" -eq 0
    done
    printf 'version: 1\nhostname: [\n' >"$root/tmp/bad.yaml"
    rc=0; out=$(chroot "$root" /kiln-static validate /tmp/bad.yaml 2>&1) || rc=$?
    check "$label: kiln validate of a broken spec exits 2 with file:line:col (rc=$rc: ${out:0:300})" \
      bash -c '(( $1 == 2 )) && grep -qE "bad\.yaml:[0-9]+:[0-9]+:" <<<"$2"' _ "$rc" "$out"
  else
    echo "# $label: validate not in this build (or no template) yet"
  fi
  if has_cmd inventory; then
    rc=0; out=$(chroot "$root" /kiln-static inventory --json 2>&1) || rc=$?
    check "$label: kiln inventory --json exits 0 and prints JSON (rc=$rc: ${out:0:200})" \
      bash -c '(( $1 == 0 )) && jq -e "type == \"object\"" >/dev/null <<<"$2"' _ "$rc" "$out"
    rc=0; out=$(chroot "$root" /kiln-static inventory 2>&1) || rc=$?
    check "$label: kiln inventory exits 0 (rc=$rc)" test "$rc" -eq 0
  else
    echo "# $label: inventory not in this build yet"
  fi
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}"; done
  mounts=()
}

# --- 2. an empty root: no libc, no NSS modules, no ld.so ------------------
if [[ -x $stripped ]]; then
  E=$T/empty
  mkdir -p "$E/etc" "$E/bin"
  printf '127.0.0.1 localhost\n' >"$E/etc/hosts"
  # A shell, as every initramfs has: Debian's libparted runs
  # `sh -c "dmidecode ..."` through popen() in its GPT constructor and reads
  # the result without checking for NULL, so with no /bin/sh at all any
  # program linking libparted (kiln included) dies before main(). busybox is
  # static, so the root still holds no libc and no shared library.
  cp /bin/busybox "$E/bin/sh"
  check "the empty root has no shared libraries" bash -c '! find "$1" -name "*.so*" | grep -q .' _ "$E"
  run_in "$E" "empty root"
  # and with no shell at all: the static kiln answers libparted's popen()
  # itself (agent/cli/nosh.c) instead of dying before main()
  N=$T/noshell
  mkdir -p "$N/tmp"
  install -m755 "$stripped" "$N/kiln-static"
  cp "$SRC/templates/single-disk.yaml" "$N/tmp/spec.yaml"
  rc=0; out=$(chroot "$N" /kiln-static version 2>&1) || rc=$?
  check "no /bin/sh: kiln version runs (rc=$rc: $out)" bash -c '(( $1 == 0 )) && grep -q "^kiln " <<<"$2"' _ "$rc" "$out"
  rc=0; out=$(chroot "$N" /kiln-static validate /tmp/spec.yaml 2>/dev/null) || rc=$?
  check "no /bin/sh: kiln validate runs (rc=$rc: $out)" test "$rc" -eq 0
fi

# --- 2b. name resolution and TLS from the empty root ------------------------
# No NSS modules, no resolver library, no CA bundle in there: names come from
# /etc/hosts through c-ares, TLS trusts only what --ca gives.
if [[ -x $stripped ]] && has_cmd fetch && command -v nginx >/dev/null && command -v openssl >/dev/null; then
  W=$T/www; mkdir -p "$W"
  head -c 300000 /dev/urandom >"$W/blob"
  want=$(sha256sum <"$W/blob" | cut -d' ' -f1)
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kiln-spec.test" \
    -addext "subjectAltName=DNS:kiln-spec.test" -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
  http_start "$W" "$T/cert.pem" "$T/key.pem"     # tests/lib/http.sh: nginx, HTTP and HTTPS
  hport=$HTTP_PORT sport=$HTTPS_PORT
  E=$T/empty
  printf '127.0.0.1 localhost kiln-spec.test\n' >"$E/etc/hosts"
  cp "$T/cert.pem" "$E/ca.pem"
  fetch_ok() {  # fetch_ok LABEL URL [ARGS...]
    local label=$1 url=$2; shift 2
    rm -f "$E/tmp/out"; rc=0
    out=$(chroot "$E" /kiln-static fetch "$url" -o /tmp/out "$@" 2>&1) || rc=$?
    check "$label (rc=$rc: ${out:0:200})" bash -c '(( $1 == 0 )) && [[ $(sha256sum <"$2" | cut -d" " -f1) == "$3" ]]' _ "$rc" "$E/tmp/out" "$want"
  }
  fetch_ok "empty root: http by dotted IP" "http://127.0.0.1:$hport/blob"
  fetch_ok "empty root: http by name from /etc/hosts (c-ares, no NSS)" "http://kiln-spec.test:$hport/blob"
  fetch_ok "empty root: https by name with --ca, verified" "https://kiln-spec.test:$sport/blob" --ca /ca.pem
  rm -f "$E/tmp/out"; rc=0
  out=$(chroot "$E" /kiln-static fetch "https://kiln-spec.test:$sport/blob" -o /tmp/out 2>&1) || rc=$?
  check "empty root: https without a trusted CA is refused with exit 8, no bytes written (rc=$rc: ${out:0:200})" \
    bash -c '(( $1 == 8 )) && [[ ! -s $2 ]] && grep -qiE "certificate|SSL" <<<"$3"' _ "$rc" "$E/tmp/out" "$out"
  rc=0; out=$(chroot "$E" /kiln-static fetch "http://no-such-host.test:$hport/blob" --retries 0 -o /tmp/out 2>&1) || rc=$?
  check "empty root: an unknown name fails with exit 8 (rc=$rc: ${out:0:200})" test "$rc" -eq 8
  http_stop
fi

# --- 3. a minimal Debian rootfs (mmdebstrap --variant=essential) -----------
tarball=$(bash "$SRC/tests/lib/rootfs.sh" essential) || { tarball=; not_ok "mmdebstrap --variant=essential (tests/lib/rootfs.sh)"; }
if [[ -s $tarball && -x $stripped ]]; then
  D=$T/debian
  mkdir -p "$D"
  tar -C "$D" -xf "$tarball"
  check "the Debian rootfs lacks kiln's libraries (libcurl, libcryptsetup, libparted, libyaml)" \
    bash -c '! find "$1" \( -name "libcurl*" -o -name "libcryptsetup*" -o -name "libparted*" -o -name "libyaml*" \) | grep -q .' _ "$D"
  run_in "$D" "debian essential"
fi

checks_done
