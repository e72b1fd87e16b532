#!/bin/bash
# Builds the static archives that Debian does not ship (or ships with a closure
# too big for an initramfs) from Debian's own source packages, into a prefix
# that kiln's static build (cmake -DKILN_STATIC=ON) links against:
#
#   libdevmapper.a   lvm2 source, libdm only, no udev
#   libcryptsetup.a  cryptsetup source, library only, OpenSSL backend, libargon2,
#                    no udev, no ssh token, no external tokens
#   libcurl.a        curl source, http/https/file only, OpenSSL, c-ares resolver
#                    (no NSS at run time), no nghttp2/ssh/psl/gssapi/ldap/idn
#   libarchive.a     libarchive source, without libxml2 (its static closure drags
#                    in ICU), expat and nettle; zlib/bz2/xz/zstd/lz4 and ACLs kept
#   libjose.a        jose source (meson, static, OpenSSL as everywhere here), with
#                    Debian's libjansson.a beside it: both with jansson's
#                    json_object_get and json_object_iter_next renamed, which
#                    json-c defines too (kiln calls json-c's; tang.c poisons the
#                    names); jose.pc links it whole, for its algorithms register
#                    themselves from constructors that nothing else references
#
# Everything else comes as Debian's own .a (libyaml, libparted, libblkid, libuuid,
# json-c, argon2, OpenSSL, zlib, zstd, xz, bz2, lz4, libacl, c-ares, jansson).
#
# Usage: build.sh [--print-key]
#   Prints the prefix (last line of stdout); logs go to stderr and to
#   PREFIX/../log/. The result is cached in $KILN_CACHE (default /var/cache/kiln)/
#   static-<hash of this script, the source package versions and the versions
#   of the linked -dev packages>; a second run with nothing changed is instant.
#
# Network: apt-get only (install, update after adding the deb-src entry, source).
# The deb-src entry is derived at run time from this machine's apt sources.
set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../cache.sh"
CACHE_ROOT=$KILN_CACHE_DIR
JOBS=${KILN_STATIC_JOBS:-2}
SRC_PKGS=(lvm2 cryptsetup curl libarchive jose)
# Debian packages providing the static archives (and tools) the build needs:
# one list, shared with tests/deps.sh.
mapfile -t BUILD_DEPS < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/packages")

say() { echo "static: $*" >&2; }
die() { say "$*"; exit 1; }
((EUID == 0)) || die "must run as root (apt-get install/source)"

# --- 1. build dependencies (Debian's .a archives) ---------------------------
missing=()
for p in "${BUILD_DEPS[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi

# --- 2. a deb-src entry for every Debian deb entry on this machine ----------
# The mirror is whatever this machine already uses: read at run time from
# /etc/apt/sources.list{,.d/*} by debian-sources.sh; nothing about it is
# written into the repo.
DEBSRC=/etc/apt/sources.list.d/kiln-deb-src.list
want=$(bash "$HERE/debian-sources.sh" deb-src)
[[ -n $want ]] || die "no Debian deb entry in /etc/apt/sources.list* to derive a deb-src entry from"
if [[ ! -e $DEBSRC ]] || [[ $(cat "$DEBSRC") != "$want" ]]; then
  say "adding $DEBSRC and updating the package lists"
  printf '%s\n' "$want" >"$DEBSRC"
  rm -f /etc/apt/sources.list.d/kiln-deb-src.sources   # older form of this entry
  apt-get update -qq >&2
fi
if ! apt-get source --print-uris -qq "${SRC_PKGS[@]}" >/dev/null 2>&1; then
  apt-get update -qq >&2
fi

# --- 3. cache key ----------------------------------------------------------
uris=$(apt-get source --print-uris -qq "${SRC_PKGS[@]}") || die "apt-get source --print-uris failed"
devver=$(dpkg-query -W -f='${Package} ${Version}\n' "${BUILD_DEPS[@]}" | sort)
key=$( { cat "$0" "$HERE/packages"; echo "$uris" | awk '{print $2, $4}'; echo "$devver"; gcc -dumpfullversion; } | sha256sum | cut -c1-16)
[[ ${1:-} == --print-key ]] && { echo "$key"; exit 0; }
TOP=$CACHE_ROOT/static-$key
if [[ -e $TOP/prefix/.complete ]]; then
  say "cached: $TOP/prefix"
  echo "$TOP/prefix"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/static.lock"
flock 9                      # one build at a time on this machine
if [[ -e $TOP/prefix/.complete ]]; then echo "$TOP/prefix"; exit 0; fi
# A build starts from nothing, cold or warm: it happens in a private
# directory (cache_tmp's rule: a .tmp.PID name) that is renamed into place
# only when the prefix is complete. What an interrupted build left (under this
# lock no build is running) is removed, never resumed.
rm -rf "$CACHE_ROOT"/static-*.tmp.* "$TOP"
BTOP=$CACHE_ROOT/static-$key.tmp.$$
trap 'rm -rf "$BTOP"' EXIT
P=$BTOP/prefix
mkdir -p "$BTOP/dl" "$BTOP/src" "$BTOP/log" "$P/lib/pkgconfig" "$P/include"
say "building into $BTOP (logs in $BTOP/log)"
TOP=$BTOP     # the steps below work in the private directory

# --- 4. sources ------------------------------------------------------------
(cd "$TOP/dl" && apt-get source --download-only -qq "${SRC_PKGS[@]}" >"$TOP/log/download.log" 2>&1) \
  || { tail -20 "$TOP/log/download.log" >&2; die "apt-get source failed"; }
for dsc in "$TOP"/dl/*.dsc; do
  name=$(basename "$dsc" .dsc); name=${name%%_*}
  # apt-get source checked every file against the signed Sources index
  dpkg-source --no-check -x "$dsc" "$TOP/src/$name" >>"$TOP/log/extract.log" 2>&1 \
    || { tail -20 "$TOP/log/extract.log" >&2; die "dpkg-source -x $dsc failed"; }
done

export PKG_CONFIG_PATH=$P/lib/pkgconfig
export CFLAGS="-O2 -g0 -ffunction-sections -fdata-sections -fstack-protector-strong -fno-plt"
export CPPFLAGS="-D_FORTIFY_SOURCE=2"
export LDFLAGS=""
MAKE=(nice -n 10 make -j"$JOBS")

step() {  # step NAME FUNCTION: runs it with set -e, output to the log, tail on failure
  local name=$1 rc; shift
  say "  $name"
  set +e
  (set -e; "$@") >>"$TOP/log/$name.log" 2>&1
  rc=$?
  set -e
  ((rc == 0)) || { cp "$TOP/log/$name.log" "$CACHE_ROOT/static-$name.failed.log" 2>/dev/null || true
                   tail -40 "$TOP/log/$name.log" >&2; die "$name failed (log: $CACHE_ROOT/static-$name.failed.log)"; }
}

# --- 5. libdevmapper (lvm2 source, libdm only, no udev) --------------------
build_devmapper() {
  cd "$TOP/src/lvm2"
  nice -n 10 ./configure --prefix="$P" --disable-udev_sync --disable-udev_rules \
    --disable-selinux --disable-readline --disable-blkid_wiping --disable-systemd-journal \
    --disable-app-machineid --disable-notify-dbus --disable-dmeventd --disable-cmdlib \
    --disable-use-lvmlockd --disable-use-lvmpolld --disable-nls --enable-static_link \
    --with-thin=none --with-cache=none --with-vdo=none --with-writecache=none --with-integrity=none
  "${MAKE[@]}" -C libdm
  local a; a=$(find libdm -name libdevmapper.a | head -1)
  [[ -n $a ]] || { echo "no libdevmapper.a built"; return 1; }
  install -m644 "$a" "$P/lib/libdevmapper.a"
  install -m644 libdm/libdevmapper.h "$P/include/libdevmapper.h"
  local ver; ver=$(sed -n 's/^\([0-9.]*\).*/\1/p' VERSION_DM)
  cat >"$P/lib/pkgconfig/devmapper.pc" <<EOF
prefix=$P
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: devmapper
Description: device-mapper library (static, no udev)
Version: $ver
Cflags: -I\${includedir}
Libs: -L\${libdir} -ldevmapper
Libs.private: -lm -lpthread
EOF
}

# --- 6. libcryptsetup -------------------------------------------------------
build_cryptsetup() {
  cd "$TOP/src/cryptsetup"
  [[ -x configure ]] || nice -n 10 autoreconf -fi   # Debian's orig tarball is a git export
  nice -n 10 ./configure --prefix="$P" --disable-shared --enable-static \
    --disable-cryptsetup --disable-veritysetup --disable-integritysetup \
    --disable-ssh-token --disable-external-tokens --disable-asciidoc --disable-nls \
    --disable-udev --disable-selinux --disable-pwquality --disable-passwdqc \
    --disable-fips --with-crypto_backend=openssl --enable-libargon2 --enable-blkid \
    --with-tmpfilesdir="$P/lib/tmpfiles.d"
  "${MAKE[@]}" libcryptsetup.la
  install -m644 .libs/libcryptsetup.a "$P/lib/libcryptsetup.a"
  install -m644 lib/libcryptsetup.h "$P/include/libcryptsetup.h"
  install -m644 lib/libcryptsetup.pc "$P/lib/pkgconfig/libcryptsetup.pc"
}

# --- 7. libcurl: http/https/file, OpenSSL, c-ares ---------------------------
build_curl() {
  cd "$TOP/src/curl"
  nice -n 10 ./configure --prefix="$P" --disable-shared --enable-static \
    --with-openssl --enable-ares --disable-threaded-resolver \
    --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --with-ca-path=/etc/ssl/certs \
    --without-nghttp2 --without-nghttp3 --without-ngtcp2 --without-quiche --without-msh3 \
    --without-libssh2 --without-libssh --without-wolfssh --without-libpsl --without-gssapi \
    --without-libidn2 --without-brotli --without-zstd --without-librtmp --without-hyper \
    --without-gnutls --without-wolfssl --without-mbedtls --without-rustls --without-bearssl \
    --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet \
    --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp \
    --disable-gopher --disable-mqtt --disable-ftp --disable-manual --disable-docs \
    --disable-alt-svc --disable-ntlm-wb --disable-tls-srp --disable-netrc \
    --disable-dependency-tracking
  "${MAKE[@]}" -C lib
  "${MAKE[@]}" -C lib install
  "${MAKE[@]}" -C include install
  install -m644 libcurl.pc "$P/lib/pkgconfig/libcurl.pc"
}

# --- 8. libarchive without libxml2/expat/nettle -----------------------------
build_libarchive() {
  cd "$TOP/src/libarchive"
  nice -n 10 autoreconf -fi   # as Debian's build does: the shipped ltmain.sh is older than the macros
  nice -n 10 ./configure --prefix="$P" --disable-shared --enable-static \
    --disable-bsdtar --disable-bsdcat --disable-bsdcpio --disable-dependency-tracking \
    --without-xml2 --without-expat --without-nettle --without-mbedtls --without-openssl \
    --without-lzo2 --without-libb2 --without-cng \
    --with-zlib --with-bz2lib --with-lzma --with-zstd --with-lz4 --enable-acl --enable-xattr
  "${MAKE[@]}" libarchive.la
  install -m644 .libs/libarchive.a "$P/lib/libarchive.a"
  install -m644 libarchive/archive.h libarchive/archive_entry.h "$P/include/"
  install -m644 build/pkgconfig/libarchive.pc "$P/lib/pkgconfig/libarchive.pc"
}

# --- 9. libjose and libjansson, jansson's two json-c names renamed ----------
JANSSON_RENAME=(--redefine-sym json_object_get=jansson_object_get
                --redefine-sym json_object_iter_next=jansson_object_iter_next)
build_jose() {
  cd "$TOP/src/jose"
  nice -n 10 meson setup build --prefix="$P" --default-library=static --buildtype=plain -Dwerror=false
  nice -n 10 ninja -C build -j"$JOBS" lib/libjose.a
  objcopy "${JANSSON_RENAME[@]}" build/lib/libjose.a "$P/lib/libjose.a"
  objcopy "${JANSSON_RENAME[@]}" "$(pkg-config --variable=libdir jansson)/libjansson.a" "$P/lib/libjansson.a"
  mkdir -p "$P/include/jose"
  install -m644 jose/*.h "$P/include/jose/"
  local jv; jv=$(pkg-config --modversion jansson)
  cat >"$P/lib/pkgconfig/jansson.pc" <<EOF
prefix=$P
Name: Jansson
Description: Debian's libjansson.a, json_object_get and json_object_iter_next renamed (json-c has them)
Version: $jv
Cflags: -I$(pkg-config --variable=includedir jansson)
Libs: -L\${prefix}/lib -ljansson
EOF
  cat >"$P/lib/pkgconfig/jose.pc" <<EOF
prefix=$P
Name: jose
Description: libjose (static, linked whole: its algorithms register from constructors)
Version: $(sed -n "s/^ *version: '\([0-9.]*\)'.*/\1/p" meson.build | head -1)
Requires: jansson
Requires.private: zlib, libcrypto
Cflags: -I\${prefix}/include
Libs: -L\${prefix}/lib -Wl,--whole-archive -ljose -Wl,--no-whole-archive
Libs.private: -pthread
EOF
}

# --- 10. libparted: Debian's .a, with the closure its .pc leaves out ---------
write_parted_pc() {
  local ver; ver=$(pkg-config --modversion libparted)
  cat >"$P/lib/pkgconfig/libparted.pc" <<EOF
Name: libparted
Description: libparted (Debian's static archive) with its static closure
Version: $ver
Requires.private: devmapper uuid blkid
Libs: -lparted
EOF
}

step devmapper build_devmapper
step cryptsetup build_cryptsetup
step curl build_curl
step libarchive build_libarchive
step jose build_jose
step parted-pc write_parted_pc

# Prefer our .a over any .so with the same name: the prefix has no .so, and
# kiln links with -static. Check that each .pc resolves.
for m in devmapper libcryptsetup libcurl libarchive libparted jansson jose; do
  pkg-config --exists --print-errors "$m" >&2 || die "pkg-config $m does not resolve in $P"
done
rm -rf "$TOP/src" "$TOP/dl"        # the prefix and logs are all we keep (a few MB)
# Into place: the .pc files name the final prefix; libtool's .la files (which
# name the build path and are never read here) go; nothing else may still
# name the private directory.
FINAL=$CACHE_ROOT/static-$key
find "$P" -name '*.la' -delete
sed -i "s|$BTOP|$FINAL|g" "$P"/lib/pkgconfig/*.pc
left=$(grep -rlIF "$BTOP" "$P" || true)   # text files: a path that is read at run time
[[ -z $left ]] || die "the prefix still names its build directory in: $left"
touch "$P/.complete"
mv "$BTOP" "$FINAL"
trap - EXIT
say "done: $FINAL/prefix"
echo "$FINAL/prefix"
