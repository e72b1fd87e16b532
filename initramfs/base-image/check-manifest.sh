#!/bin/sh
# Compares an installed tree against a manifest from manifest.py:
#   check-manifest.sh ROOT MANIFEST
# Checks type, owner, group, mode (with special bits), size, mtime, content
# sha256, symlink targets, hard links (same inode) and device numbers.
# xattrs are not checked here (busybox has no getfattr); the host test does.
# POSIX sh + busybox applets (stat, sha256sum, readlink): runs in the guest.
# Prints one line per mismatch; exit 0 when everything matches.
root=${1:?usage: check-manifest.sh ROOT MANIFEST}
manifest=${2:?usage: check-manifest.sh ROOT MANIFEST}
tab=$(printf '\t')
bad=0
n=0
err() { echo "manifest mismatch: $*"; bad=$((bad + 1)); }
while IFS="$tab" read -r path type uid gid mode size mtime sha link xattrs; do
  n=$((n + 1))
  p="$root/$path"
  if [ ! -e "$p" ] && [ ! -L "$p" ]; then err "$path: missing"; continue; fi
  set -- $(stat -c '%f %u %g %s %Y %t %T %i' "$p")
  raw=$((0x$1)); fmt=$((raw & 0170000)); perm=$((raw & 07777))
  case $type in
    f|h) want=$((0100000)) ;; d) want=$((0040000)) ;; l) want=$((0120000)) ;;
    c) want=$((0020000)) ;; b) want=$((0060000)) ;; p) want=$((0010000)) ;; *) want=-1 ;;
  esac
  [ "$fmt" -eq "$want" ] || { err "$path: type $(printf '%o' $fmt), expected $type"; continue; }
  [ "$2" = "$uid" ] || err "$path: uid $2, expected $uid"
  [ "$3" = "$gid" ] || err "$path: gid $3, expected $gid"
  if [ "$type" != l ] && [ "$perm" -ne $((0$mode)) ]; then err "$path: mode $(printf '%04o' $perm), expected $mode"; fi
  [ "$5" = "$mtime" ] || err "$path: mtime $5, expected $mtime"
  case $type in
    f)
      [ "$4" = "$size" ] || err "$path: size $4, expected $size"
      got=$(sha256sum <"$p" | cut -d' ' -f1)
      [ "$got" = "$sha" ] || err "$path: sha256 $got, expected $sha" ;;
    h)
      [ "$(stat -c %i "$root/$link")" = "$8" ] || err "$path: not a hard link to $link" ;;
    l)
      [ "$(readlink "$p")" = "$link" ] || err "$path: points to '$(readlink "$p")', expected '$link'" ;;
    c|b)
      [ "$((0x$6)),$((0x$7))" = "$size" ] || err "$path: device $((0x$6)),$((0x$7)), expected $size" ;;
  esac
done <"$manifest"
if [ "$bad" -gt 0 ]; then echo "manifest: $bad mismatch(es) in $n entries"; exit 1; fi
echo "manifest: $n entries match"
