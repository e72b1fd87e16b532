# The one rule for kiln's caches (sourced by every script that keeps one):
#
#   KILN_CACHE_DIR   where caches live: $KILN_CACHE, or /var/cache/kiln
#   cache_tmp FINAL SUFFIX
#                    the temporary name FINAL is written under: same
#                    directory, same real suffix (tools such as mmdebstrap pick
#                    their output format from it), unique to this process:
#                    cache_tmp /c/rootfs-x.tar .tar  ->  /c/rootfs-x.tmp.PID.tar
#   cache_commit TMP FINAL
#                    renames TMP into place; only a complete file ever has
#                    its final name, so a cold machine and a warm one make
#                    and read a cache the same way
#
# A cache entry's name carries a hash of its inputs; an entry is only ever
# read under its final name, and a leftover *.tmp.* is never read.
KILN_CACHE_DIR=${KILN_CACHE:-/var/cache/kiln}
cache_tmp() {
  local final=$1 suffix=$2
  [[ $final == *"$suffix" ]] || { echo "cache_tmp: '$final' does not end in '$suffix'" >&2; return 1; }
  echo "${final%"$suffix"}.tmp.$$$suffix"
}
cache_commit() {
  local tmp=$1 final=$2
  [[ -f $tmp && -s $tmp ]] || { echo "cache_commit: '$tmp' is missing or empty" >&2; rm -rf "$tmp"; return 1; }
  mv -f "$tmp" "$final"
}
