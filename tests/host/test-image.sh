#!/bin/bash
# kiln image (tar) against a real nginx on 127.0.0.1: a good install compared
# with GNU tar's extraction of the same tarball and with the manifest; wrong
# sha256; a connection cut half way (resume); a server ignoring Range
# (restart); 404; 503; truncated and corrupt archives; path traversal
# (.., absolute, through a symlink, hard link) with nothing written outside;
# size limit; compression detected from data; file:// and ftp:// URLs.
set -euo pipefail
[[ -n ${TRACE:-} ]] && set -x
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (owners, device nodes)"; exit 77; }
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
test_tmpdir image
fresh() { rm -rf "$T/target"; mkdir "$T/target"; }
marker_present() { [[ -f $T/target/.kiln-incomplete ]] || fail "target not marked incomplete"; }
marker_absent() { [[ ! -e $T/target/.kiln-incomplete ]] || fail "marker left after a good install"; }
# only the marker: nothing was extracted
only_marker() { [[ $(ls -A "$T/target") == .kiln-incomplete ]] || { ls -la "$T/target"; fail "target not empty"; }; }
NOSUM=$(printf '0%.0s' {1..64})

small_image_served
U=http://127.0.0.1:$HTTP_PORT
mkdir "$T/gnu"
zstd -dc "$SMALL_DIR/small.tar.zst" | tar -C "$T/gnu" --numeric-owner --xattrs --xattrs-include='*' -xpf -
same_as_gnu() { python3 "$SRC/tests/lib/compare-trees.py" "$T/gnu" "$T/target" >"$T/cmp" || { cat "$T/cmp"; fail "tree differs from GNU tar's"; }; }
manifest_ok() { sh "$SRC/initramfs/base-image/check-manifest.sh" "$T/target" "$SMALL_DIR/small.manifest" >"$T/man" || { cat "$T/man"; fail "manifest"; }; }

echo "# good install"
fresh
run_kiln 0 image "$U/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target"
expect_err "sha256 $SMALL_SUM verified"
marker_absent; same_as_gnu; manifest_ok
python3 - "$T/target" <<'PY' || fail "xattrs or sparse file"
import os, sys
r = sys.argv[1]
assert os.getxattr(r + "/home/kiln/hello.txt", "user.kiln") == b"xattr-value"
assert os.getxattr(r + "/var/lib/kiln", "user.kiln.dir") == b"on-a-directory"
st = os.stat(r + "/var/lib/kiln/sparse.img")
assert st.st_size == 8 << 20 and st.st_blocks * 512 < 1 << 20, "sparse file was filled"
PY

echo "# a UTF-8 name in a pax header: written byte for byte; libarchive's one warning is named"
# kiln runs in the C locale (the initramfs has no other), so libarchive
# cannot convert the name to it, warns, and writes the bytes as they are:
# the real base image's two warnings (docs/guide.md "Base images")
fresh
python3 - "$T/utf8.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    i = tarfile.TarInfo("etc/ssl/NetLock_F\u0151tan\u00fas\u00edtv\u00e1ny.pem")
    i.size = 5
    t.addfile(i, io.BytesIO(b"cert\n"))
PY
zstd -q "$T/utf8.tar" -o "$T/utf8.tar.zst"
run_kiln 0 image "file://$T/utf8.tar.zst" --sha256 "$(sha256sum <"$T/utf8.tar.zst" | cut -d' ' -f1)" --target "$T/target"
[[ $(cat "$T/target/etc/ssl/NetLock_F$(printf '\305\221')tan$(printf '\303\272')s$(printf '\303\255')tv$(printf '\303\241')ny.pem") == cert ]] \
  || { ls -R "$T/target"; fail "the UTF-8 name was not written byte for byte"; }
expect_err "1 warning(s)"
expect_err "1 libarchive warning(s), the first: 'etc/ssl/NetLock_F"
expect_err ".pem': Pathname can't be converted from UTF-8 to current locale."
marker_absent

echo "# wrong sha256: exit 5, marker left"
fresh
run_kiln 5 image "$U/small.tar.zst" --sha256 "$NOSUM" --target "$T/target"
expect_err "failed verification: sha256 mismatch: expected $NOSUM, got $SMALL_SUM; '$T/target' is left marked incomplete"
marker_present

echo "# connection cut half way: resumes with Range, verifies"
fresh
proxy_start cut:400000
run_kiln 0 image "http://127.0.0.1:$PROXY_PORT/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target"
[[ $(requests) == 2 ]] || fail "expected 2 requests, saw $(requests)"
grep -q "range=bytes=[1-9][0-9]*-" <(sed -n 2p "$PROXY_LOG") || { cat "$PROXY_LOG"; fail "no Range on the retry"; }
expect_err "2 request(s), 0 restart(s)"
marker_absent; same_as_gnu
proxy_stop

echo "# server ignoring Range: restarts cleanly"
fresh
proxy_start cut:400000 norange
run_kiln 0 image "http://127.0.0.1:$PROXY_PORT/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target"
expect_err "2 request(s), 1 restart(s)"
marker_absent; same_as_gnu
proxy_stop

echo "# 503 then 200: retried"
fresh
proxy_start status:503:1
run_kiln 0 image "http://127.0.0.1:$PROXY_PORT/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target"
[[ $(requests) == 2 ]] || fail "503 not retried once"
marker_absent; manifest_ok
proxy_stop

echo "# 404: final, no retries"
fresh
proxy_start
run_kiln 5 image "http://127.0.0.1:$PROXY_PORT/missing.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target"
expect_err "'http://127.0.0.1:$PROXY_PORT/missing.tar.zst' onto '$T/target': download failed: HTTP 404"
# the marker says why, not only what
[[ $(cat "$T/target/.kiln-incomplete") == "http://127.0.0.1:$PROXY_PORT/missing.tar.zst"$'\n'"failed: download failed: HTTP 404"* ]] \
  || fail "the incomplete marker does not say why: $(cat "$T/target/.kiln-incomplete")"
[[ $(requests) == 1 ]] || fail "404 retried: $(requests) requests"
marker_present; only_marker
proxy_stop

echo "# size limit"
fresh
run_kiln 5 image "$U/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target" --max 100K
expect_err "larger than the limit of 102400 bytes"
marker_present; only_marker

echo "# truncated archive (its own sha256 is right)"
head -c 500000 "$SMALL_DIR/small.tar.zst" >"$T/www/truncated.bin"
fresh
run_kiln 5 image "$U/truncated.bin" --sha256 "$(sha256sum <"$T/www/truncated.bin" | cut -d' ' -f1)" --target "$T/target"
expect_err "corrupt or truncated archive"
marker_present

echo "# not an archive"
head -c 100000 /dev/urandom >"$T/www/garbage.bin"
fresh
run_kiln 5 image "$U/garbage.bin" --sha256 "$(sha256sum <"$T/www/garbage.bin" | cut -d' ' -f1)" --target "$T/target"
expect_err "cannot read the archive: Unrecognized archive format"
marker_present; only_marker

echo "# not an archive, and the sha256 is another file's: the wrong URL, said first"
GARBAGE_SUM=$(sha256sum <"$T/www/garbage.bin" | cut -d' ' -f1)
fresh
run_kiln 5 image "$U/garbage.bin" --sha256 "$SMALL_SUM" --target "$T/target"
expect_err "failed verification: sha256 mismatch: expected $SMALL_SUM, got $GARBAGE_SUM, and the download is no image (cannot read the archive: Unrecognized archive format): the URL probably names another file"
marker_present; only_marker

echo "# compression detected from the data, not the name"
zstd -dc "$SMALL_DIR/small.tar.zst" >"$T/small.tar"
xz -T1 -1 -c "$T/small.tar" >"$T/www/xz.bin"
gzip -1 -c "$T/small.tar" >"$T/www/gz.bin"
cp "$T/small.tar" "$T/www/plain.bin"
for f in xz gz plain; do
  fresh
  run_kiln 0 image "$U/$f.bin" --sha256 "$(sha256sum <"$T/www/$f.bin" | cut -d' ' -f1)" --target "$T/target" --no-sync
  marker_absent; same_as_gnu
done

echo "# path traversal: refused, nothing written outside the target"
mkdir -p "$T/outside"
echo original >"$T/outside/victim"
python3 - "$T/www" "$T/outside" <<'PY'
import io, sys, tarfile
www, outside = sys.argv[1], sys.argv[2]
def add_file(tf, name, data=b"pwned\n"):
    ti = tarfile.TarInfo(name); ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
def make(name, build):
    with tarfile.open("%s/%s.tar" % (www, name), "w", format=tarfile.PAX_FORMAT) as tf:
        add_file(tf, "ok-before")
        build(tf)
        add_file(tf, "ok-after")
make("dotdot", lambda tf: add_file(tf, "a/../../outside/victim"))
make("absolute", lambda tf: add_file(tf, outside + "/victim"))
def symlink(tf):
    ti = tarfile.TarInfo("evil"); ti.type = tarfile.SYMTYPE; ti.linkname = outside; tf.addfile(ti)
    add_file(tf, "evil/victim")
make("symlink", symlink)
def symlink_dots(tf):   # the same path spelled differently
    ti = tarfile.TarInfo("./d/evil"); ti.type = tarfile.SYMTYPE; ti.linkname = outside; tf.addfile(ti)
    add_file(tf, "d//./evil/victim")
make("symlink-dots", symlink_dots)
def symlink_hardlink(tf):   # a hard link whose target is below an archive symlink
    ti = tarfile.TarInfo("evil"); ti.type = tarfile.SYMTYPE; ti.linkname = outside; tf.addfile(ti)
    ti = tarfile.TarInfo("hl3"); ti.type = tarfile.LNKTYPE; ti.linkname = "evil/victim"; tf.addfile(ti)
make("symlink-hardlink", symlink_hardlink)
def symlink_linked(tf):   # a hard link to an archive symlink is a symlink too
    ti = tarfile.TarInfo("evil"); ti.type = tarfile.SYMTYPE; ti.linkname = outside; tf.addfile(ti)
    ti = tarfile.TarInfo("alias"); ti.type = tarfile.LNKTYPE; ti.linkname = "evil"; tf.addfile(ti)
    add_file(tf, "alias/victim")
make("symlink-linked", symlink_linked)
make("presymlink", lambda tf: add_file(tf, "pre/victim"))   # the target holds the symlink 'pre'
def symlink_then_dir(tf):   # a directory entry replaces the symlink, never chmods through it
    ti = tarfile.TarInfo("evil"); ti.type = tarfile.SYMTYPE; ti.linkname = outside; tf.addfile(ti)
    ti = tarfile.TarInfo("evil"); ti.type = tarfile.DIRTYPE; ti.mode = 0o700; ti.mtime = 12345; tf.addfile(ti)
    add_file(tf, "evil/inside")
make("symlink-then-dir", symlink_then_dir)
def hardlink(tf):
    ti = tarfile.TarInfo("hl"); ti.type = tarfile.LNKTYPE; ti.linkname = outside + "/victim"; tf.addfile(ti)
make("hardlink", hardlink)
def hardlink_dotdot(tf):
    ti = tarfile.TarInfo("hl2"); ti.type = tarfile.LNKTYPE; ti.linkname = "../outside/victim"; tf.addfile(ti)
make("hardlink-dotdot", hardlink_dotdot)
PY
outside_mode=$(stat -c %a "$T/outside")
before=$(cd "$T/outside" && find . -printf '%p %s %T@ %m\n' | sort; sha256sum victim)
for t in dotdot absolute symlink symlink-dots symlink-hardlink symlink-linked presymlink hardlink hardlink-dotdot; do
  fresh
  [[ $t != presymlink ]] || ln -s "$T/outside" "$T/target/pre"
  run_kiln 5 image "$U/$t.tar" --sha256 "$(sha256sum <"$T/www/$t.tar" | cut -d' ' -f1)" --target "$T/target"
  if [[ $t == hardlink ]]; then      # the hard link's target is named, not just the entry
    expect_err "refused hard link 'hl' to '$T/outside/victim': Path is absolute"
  elif [[ $t == hardlink-dotdot ]]; then
    expect_err "refused hard link 'hl2' to '../outside/victim'"
  else
    expect_err "refused entry"
  fi
  [[ $t != presymlink ]] || expect_err "refused entry 'pre/victim': Cannot extract through symlink"   # libarchive's own check
  marker_present
  [[ ! -e $T/target/ok-after ]] || fail "$t: extraction went on after a refused entry"
  after=$(cd "$T/outside" && find . -printf '%p %s %T@ %m\n' | sort; sha256sum victim)
  [[ $before == "$after" ]] || fail "$t: something was written outside the target"
  [[ ! -e $T/victim && ! -e $T/outside/evil ]] || fail "$t: file escaped"
done
fresh
run_kiln 5 image "$U/symlink-dots.tar" --sha256 "$(sha256sum <"$T/www/symlink-dots.tar" | cut -d' ' -f1)" --target "$T/target"
expect_err "refused entry 'd//./evil/victim': it would be written through the symlink 'd/evil'"
fresh
run_kiln 5 image "$U/symlink-hardlink.tar" --sha256 "$(sha256sum <"$T/www/symlink-hardlink.tar" | cut -d' ' -f1)" --target "$T/target"
expect_err "refused entry 'hl3': its hard link target 'evil/victim' is below the symlink 'evil'"
echo "# a directory entry replacing an archive symlink: nothing changes outside"
fresh
run_kiln 0 image "$U/symlink-then-dir.tar" --sha256 "$(sha256sum <"$T/www/symlink-then-dir.tar" | cut -d' ' -f1)" --target "$T/target"
[[ -d $T/target/evil && ! -L $T/target/evil && -f $T/target/evil/inside ]] || fail "symlink-then-dir: 'evil' is not a directory"
[[ $(stat -c %a "$T/target/evil") == 700 ]] || fail "symlink-then-dir: mode not applied"
after=$(cd "$T/outside" && find . -printf '%p %s %T@ %m\n' | sort; sha256sum victim)
[[ $before == "$after" && $(stat -c %a "$T/outside") == "$outside_mode" ]] || fail "symlink-then-dir: something changed outside the target"

echo "# file:// URL, and schemes that are refused"
fresh
run_kiln 0 image "file://$SMALL_DIR/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target" --no-sync
marker_absent; manifest_ok
fresh
run_kiln 5 image "ftp://127.0.0.1:$HTTP_PORT/small.tar.zst" --sha256 "$SMALL_SUM" --target "$T/target"
expect_err "unsupported URL scheme (only http, https and file): 'ftp://127.0.0.1:$HTTP_PORT/small.tar.zst'"
[[ -z $(ls -A "$T/target") ]] || fail "ftp: target touched"

echo "# usage"
run_kiln 64 image "$U/small.tar.zst" --target "$T/target"
run_kiln 64 image "$U/small.tar.zst" --sha256 abc --target "$T/target"
echo ok
