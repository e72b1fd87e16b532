# Sourced by build.sh and build-boot.sh: the apt sources this host uses, for
# mmdebstrap (every enabled /etc/apt/sources.list{,.d/*.list,.d/*.sources};
# no mirror is named in this repository). KILN_BASE_SOURCES="FILE..." overrides.
# Sets the array `sources`, or fails.
if [[ -n ${KILN_BASE_SOURCES:-} ]]; then
  read -r -a sources <<<"$KILN_BASE_SOURCES"
else
  sources=()
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    if [[ -f $f ]] && grep -qE '^[[:space:]]*(deb[[:space:]]|Types:.*\bdeb\b)' "$f"; then sources+=("$f"); fi
  done
fi
((${#sources[@]})) || { echo "$(basename "$0"): no apt sources on this host (set KILN_BASE_SOURCES)" >&2; exit 1; }
