#!/usr/bin/env python3
"""gen-bench-image.py OUT.tar: writes the benchmark's root-like tree as an
uncompressed tar on the fly (nothing is created on disk): about 1 GiB in
~40 000 small files, ~300 medium files and two large ones, half of the
bytes compressible text and half random, with directories, symlinks, hard
links, assorted owners and modes. Seeded, fixed mtimes: the same bytes on
every run (the script's version is part of the cache key)."""
import io
import random
import sys
import tarfile

VERSION = 1
rng = random.Random(20261130)
words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(2000)]
text = bytearray()
while len(text) < (4 << 20):
    line = b" ".join(rng.choice(words) for _ in range(rng.randint(4, 14)))
    text += line + b"\n"
text = bytes(text)
MTIME = 1700000000


def content(size):
    if rng.random() < 0.5:
        return rng.randbytes(size)
    out = bytearray()
    while len(out) < size:
        off = rng.randrange(0, len(text) - 65536)
        out += text[off:off + min(65536, size - len(out))]
    return bytes(out)


def entry(name, kind=tarfile.REGTYPE, size=0, mode=0o644, uid=0, gid=0, link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.size, ti.mode, ti.uid, ti.gid, ti.mtime, ti.linkname = kind, size, mode, uid, gid, MTIME, link
    return ti


with open(sys.argv[1], "wb") as f, tarfile.open(fileobj=f, mode="w", format=tarfile.GNU_FORMAT) as tf:
    dirs = []
    for top in range(20):
        for sub in range(20):
            d = "usr/lib/pkg%02d/mod%02d" % (top, sub)
            dirs.append(d)
    made = set()
    for d in dirs:
        parts = d.split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p not in made:
                made.add(p)
                tf.addfile(entry(p, tarfile.DIRTYPE, mode=0o755))
    files = []
    for i in range(40000):
        d = dirs[i % len(dirs)]
        name = "%s/f%05d.dat" % (d, i)
        size = rng.randint(512, 16384)
        uid = rng.choice([0, 0, 0, 1000, 33, 65534])
        tf.addfile(entry(name, size=size, mode=rng.choice([0o644, 0o640, 0o755, 0o600]), uid=uid, gid=uid),
                   io.BytesIO(content(size)))
        files.append(name)
    tf.addfile(entry("var", tarfile.DIRTYPE, mode=0o755))
    tf.addfile(entry("var/lib", tarfile.DIRTYPE, mode=0o755))
    for i in range(300):
        size = rng.randint(512 << 10, 3 << 20)
        name = "var/lib/m%03d.bin" % i
        tf.addfile(entry(name, size=size), io.BytesIO(content(size)))
    for i in range(2):
        size = 100 << 20
        tf.addfile(entry("var/lib/large%d.img" % i, size=size), io.BytesIO(content(size)))
    tf.addfile(entry("links", tarfile.DIRTYPE, mode=0o755))
    for i in range(1000):
        tf.addfile(entry("links/s%04d" % i, tarfile.SYMTYPE, mode=0o777, link="../" + rng.choice(files)))
    for i in range(200):
        tf.addfile(entry("links/h%04d" % i, tarfile.LNKTYPE, link=files[i * 7]))
