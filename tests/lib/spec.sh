# Host specs for tests from the fixtures in tests/specs/ (sourced, not a
# test; it brings assert.sh):
#   spec_write OUT PART... [-- NAME=VALUE...]
#       OUT (- for stdout) is the parts tests/specs/PART.yaml one after the other (each
#       holds whole top-level sections), with every @NAME@ replaced by its
#       VALUE (taken as it is: a value may hold several lines, or be empty);
#       a @NAME@ left without a value fails the test. The rig's specs use the
#       same @NAME@ form (tests/rig/lib.sh: rig_subst).
# The fixtures hold no comments, so that a diagnostic's line:col is the
# same as in the spec the test wrote before. They are:
#   root-disk   version, @HOSTNAME@, one disk (@DISK@) wiped, one ext4 root
#               partition over all of it, labelled root
#   register    the register section: CloudStack and the webhook, both on
#               the stand-in controller at @CTL@ (tests/lib/controller.sh),
#               @API_KEY@, @SECRET_KEY@, @HOST_USERNAME@, @HMAC_KEY@;
#               @HOST_AUTH@ the lines of host_password, host_authorized_key
#               or host_url (or nothing)
_spec_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../specs" && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/assert.sh"

spec_write() {
  local out=$1 text="" part kv; shift
  while (($#)) && [[ $1 != -- ]]; do
    [[ -f $_spec_dir/$1.yaml ]] || fail "no spec fixture tests/specs/$1.yaml"
    text+=$(<"$_spec_dir/$1.yaml")$'\n'
    shift
  done
  (($#)) && shift
  for kv in "$@"; do
    text=${text//"@${kv%%=*}@"/"${kv#*=}"}
  done
  [[ $text =~ @[A-Z][A-Z0-9_]*@ ]] && fail "spec_write $out: no value for ${BASH_REMATCH[0]}"
  if [[ $out == - ]]; then printf '%s' "$text"; else printf '%s' "$text" >"$out"; fi
}
