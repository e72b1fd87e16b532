#!/bin/bash
# Prints this machine's Debian apt entries in one-line sources.list format:
#   debian-sources.sh deb       the deb entries (e.g. for mmdebstrap's stdin)
#   debian-sources.sh deb-src   the same entries as deb-src (for apt-get source)
# Read at run time from /etc/apt/sources.list and /etc/apt/sources.list.d/
# (deb822 .sources and one-line .list); an entry counts as Debian's when its
# URI path ends in /debian or /debian-security. No host name is built in.
set -euo pipefail
type=${1:-deb}
[[ $type == deb || $type == deb-src ]] || { echo "usage: $0 deb|deb-src" >&2; exit 64; }
own=/etc/apt/sources.list.d/kiln-deb-src.list
{
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -e $f ]] || continue
    awk -v type="$type" 'BEGIN { RS = ""; FS = "\n" }
      {
        deb = 0; uris = ""; suites = ""; comps = ""; sb = ""; enabled = 1
        for (i = 1; i <= NF; i++) {
          line = $i
          if (line ~ /^#/) continue
          key = line; sub(/:.*/, "", key); val = line; sub(/^[^:]*:[[:space:]]*/, "", val)
          if (key == "Types" && (" " val " ") ~ / deb /) deb = 1
          else if (key == "URIs") uris = val
          else if (key == "Suites") suites = val
          else if (key == "Components") comps = val
          else if (key == "Signed-By") sb = val
          else if (key == "Enabled" && val == "no") enabled = 0
        }
        if (!deb || !enabled) next
        nu = split(uris, u, /[[:space:]]+/); ns = split(suites, s, /[[:space:]]+/)
        opt = (sb ~ /^\//) ? " [signed-by=" sb "]" : ""
        for (a = 1; a <= nu; a++) {
          if (u[a] !~ /\/debian(-security)?\/?$/) continue
          for (b = 1; b <= ns; b++) print type opt " " u[a] " " s[b] " " comps
        }
      }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -e $f && $f != "$own" ]] || continue
    awk -v type="$type" '$1 == "deb" {
        i = 2; opt = ""
        if ($2 ~ /^\[/) { while (i <= NF) { opt = opt " " $i; if ($i ~ /\]$/) { i++; break } i++ } }
        if ($i !~ /\/debian(-security)?\/?$/) next
        line = type opt; for (j = i; j <= NF; j++) line = line " " $j
        print line
      }' "$f"
  done
} | awk '!seen[$0]++'
