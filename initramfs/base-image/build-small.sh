#!/bin/bash
# Builds the SMALL test/demo image: a busybox root with a few files whose
# owners, modes, links, device node, xattr, sparse file and mtimes the tests
# check after installation (on the host and inside the guest).
#
#   initramfs/base-image/build-small.sh OUTDIR
#
# Writes OUTDIR/small.tar.zst, OUTDIR/small.tar.zst.sha256 (sha256sum format)
# and OUTDIR/small.manifest (built from the tarball, see manifest.py).
# Reproducible: fixed mtimes, sorted entries, numeric owners. Needs root
# (chown, mknod), busybox-static, GNU tar, zstd, python3.
set -euo pipefail
out=${1:?usage: build-small.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) == 0 ]] || { echo "build-small.sh: needs root (owners, device nodes)" >&2; exit 77; }
bb=$(command -v busybox || true)
[[ -x /bin/busybox ]] && bb=/bin/busybox
[[ -n $bb ]] || { echo "build-small.sh: busybox not found (apt-get install busybox-static)" >&2; exit 1; }
mkdir -p "$out"
tree=$(mktemp -d /tmp/kiln-small-image.XXXXXX)
trap 'rm -rf "$tree"' EXIT
r=$tree/root
mkdir -p "$r"/{bin,sbin,etc,dev,proc,sys,tmp,root,home/kiln,var/lib/kiln,usr/share/kiln,srv/secret}
cp "$bb" "$r/bin/busybox"
for a in sh ls cat cp mv rm mkdir stat sha256sum mount umount ip ps vi; do ln -s busybox "$r/bin/$a"; done
ln -s ../bin/busybox "$r/sbin/init"
printf 'root:x:0:0:root:/root:/bin/sh\nkiln:x:1000:1000:kiln:/home/kiln:/bin/sh\n' >"$r/etc/passwd"
printf 'root:x:0:\nkiln:x:1000:\nsrv:x:4242:\n' >"$r/etc/group"
echo "kiln-small" >"$r/etc/hostname"
echo "kiln small image $(sha256sum "$r/bin/busybox" | cut -c1-12)" >"$r/etc/kiln-image"
printf 'hello from the kiln small image\n' >"$r/home/kiln/hello.txt"
ln "$r/home/kiln/hello.txt" "$r/usr/share/kiln/hello-hardlink.txt"
ln -s ../../home/kiln/hello.txt "$r/usr/share/kiln/hello-symlink.txt"
ln -s /etc/hostname "$r/usr/share/kiln/absolute-symlink"
head -c 65536 /dev/zero | tr '\0' 'k' >"$r/var/lib/kiln/data.bin"
printf 'top secret\n' >"$r/srv/secret/key"
# a sparse file: 8 MiB with a little data at the end
truncate -s 8M "$r/var/lib/kiln/sparse.img"
printf 'end' | dd of="$r/var/lib/kiln/sparse.img" bs=1 seek=$((8 * 1024 * 1024 - 3)) conv=notrunc status=none
mknod "$r/dev/null" c 1 3
mknod -m 0660 "$r/dev/loop-test" b 7 200
mkfifo "$r/tmp/fifo"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], b"user.kiln", b"xattr-value")' "$r/home/kiln/hello.txt"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], b"user.kiln.dir", b"on-a-directory")' "$r/var/lib/kiln"
chown -R 0:0 "$r"
chown -R 1000:1000 "$r/home/kiln"
chown 4242:4242 "$r/srv/secret" "$r/srv/secret/key"
chown -h 1000:4242 "$r/usr/share/kiln/hello-symlink.txt"
chown 123:456 "$r/var/lib/kiln/data.bin"
chmod 0755 "$r"/{bin,sbin,etc,dev,proc,sys,root,home,usr,usr/share,usr/share/kiln,var,var/lib,srv} "$r/bin/busybox"
chmod 1777 "$r/tmp"
chmod 0700 "$r/root" "$r/srv/secret"
chmod 0750 "$r/home/kiln"
chmod 0640 "$r/home/kiln/hello.txt"
chmod 0400 "$r/srv/secret/key"
chmod 4755 "$r/var/lib/kiln"          # odd on purpose: setuid bit on a directory
chmod 2644 "$r/var/lib/kiln/data.bin"
chmod 0644 "$r/etc"/* "$r/var/lib/kiln/sparse.img"
# fixed, distinct mtimes
t=1700000000
find "$r" -depth -print0 | sort -z | while IFS= read -r -d '' f; do
  t=$((t + 1)); touch -h -d "@$t" "$f"
done
tar -C "$r" --numeric-owner --xattrs --xattrs-include='*' --sparse --sort=name --format=pax \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$tree/small.tar" .
zstd -q -19 -f "$tree/small.tar" -o "$out/small.tar.zst"
(cd "$out" && sha256sum small.tar.zst >small.tar.zst.sha256)
zstd -dc "$out/small.tar.zst" | python3 "$here/manifest.py" >"$out/small.manifest"
echo "small image: $out/small.tar.zst ($(stat -c %s "$out/small.tar.zst") bytes, $(wc -l <"$out/small.manifest") entries)"
