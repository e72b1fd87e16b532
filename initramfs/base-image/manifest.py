#!/usr/bin/env python3
"""Reads an uncompressed tar on stdin, prints its manifest: one line per entry,
tab-separated, sorted by path:

    PATH  TYPE  UID  GID  MODE  SIZE  MTIME  SHA256  LINK  XATTRS

PATH is relative without "./"; TYPE is f (file), d, l (symlink), h (hard
link to LINK), c, b (device: SIZE is "MAJOR,MINOR"), p (fifo); MODE is
octal with the special bits; SHA256 is of the content for files, "-"
otherwise; XATTRS is "name=value,..." or "-". check-manifest.sh compares
an installed tree against it (busybox sh is enough, so it runs in the guest).
"""
import hashlib
import sys
import tarfile

rows = []
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tf:
    for m in tf:
        path = m.name[2:] if m.name.startswith("./") else m.name
        path = path.rstrip("/")
        if path in ("", "."):
            continue
        sha, size, link = "-", str(m.size), "-"
        if m.isreg():
            t = "f"
            sha = hashlib.sha256(tf.extractfile(m).read()).hexdigest()
        elif m.isdir():
            t, size = "d", "-"
        elif m.issym():
            t, link, size = "l", m.linkname, "-"
        elif m.islnk():
            t, size = "h", "-"
            link = m.linkname[2:] if m.linkname.startswith("./") else m.linkname
        elif m.ischr():
            t, size = "c", "%d,%d" % (m.devmajor, m.devminor)
        elif m.isblk():
            t, size = "b", "%d,%d" % (m.devmajor, m.devminor)
        elif m.isfifo():
            t, size = "p", "-"
        else:
            t = "?"
        xattrs = sorted((k[len("SCHILY.xattr."):], v) for k, v in m.pax_headers.items() if k.startswith("SCHILY.xattr."))
        xa = ",".join("%s=%s" % kv for kv in xattrs) or "-"
        rows.append((path, t, m.uid, m.gid, "%04o" % m.mode, size, int(m.mtime), sha, link, xa))
for r in sorted(rows):
    print("\t".join(str(x) for x in r))
