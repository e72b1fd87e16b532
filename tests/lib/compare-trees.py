#!/usr/bin/env python3
"""compare-trees.py A B [IGNORE...]: compares two extracted trees entry by
entry: type, mode, owner, group, size, mtime (to the second), content,
symlink targets, device numbers, xattrs and hard-link structure. Paths in
IGNORE (relative) are skipped. Prints the differences; exit 1 if any."""
import os
import stat
import sys

a, b = sys.argv[1], sys.argv[2]
ignore = set(sys.argv[3:])


def walk(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if rel not in ignore:
                out[rel] = p
    return out


def xattrs(p):
    try:
        return {k: os.getxattr(p, k, follow_symlinks=False) for k in os.listxattr(p, follow_symlinks=False)}
    except OSError:
        return {}


def describe(p, inodes):
    st = os.lstat(p)
    d = {
        "mode": oct(st.st_mode),
        "uid": st.st_uid,
        "gid": st.st_gid,
        "mtime": int(st.st_mtime),
        "xattrs": xattrs(p),
    }
    if stat.S_ISREG(st.st_mode):
        with open(p, "rb") as f:
            d["content"] = hash(f.read())
        d["size"] = st.st_size
        d["links"] = tuple(sorted(inodes.get(st.st_ino, [])))
    elif stat.S_ISLNK(st.st_mode):
        d["target"] = os.readlink(p)
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        d["rdev"] = (os.major(st.st_rdev), os.minor(st.st_rdev))
    return d


def index(tree):
    inodes = {}
    for rel, p in tree.items():
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            inodes.setdefault(st.st_ino, []).append(rel)
    return inodes


ta, tb = walk(a), walk(b)
ia, ib = index(ta), index(tb)
diffs = 0
for rel in sorted(set(ta) | set(tb)):
    if rel not in ta or rel not in tb:
        print("only in %s: %s" % (a if rel in ta else b, rel))
        diffs += 1
        continue
    da, db = describe(ta[rel], ia), describe(tb[rel], ib)
    for k in sorted(set(da) | set(db)):
        if da.get(k) != db.get(k):
            print("%s: %s differs: %r vs %r" % (rel, k, da.get(k), db.get(k)))
            diffs += 1
print("%d entries compared, %d differences" % (len(ta), diffs))
sys.exit(1 if diffs else 0)
