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
#   register-webhook  the register section with only the webhook at @CTL@,
#               @HMAC_KEY@ (flow style)
#   image       the image section: @IMAGE_URL@, @IMAGE_SHA256@
#   finish      finish: @FINISH@
#   boot-root   as root-disk, with a 64M ext4 /boot (labelled boot) before
#               the root
#   root-data   as root-disk, the root 40M, then an ext4 data partition over
#               the rest, labelled data, mounted on /data
#   root-raw    as root-disk, the root 128M, then a 16M partition vm, and the
#               image section: the raw image @IMAGE_URL@ (@IMAGE_SHA256@) onto vm
#   whole-disk  version, @HOSTNAME@, one disk (@DISK@) wiped, an ext4 root
#               on the whole disk, no partitions
#   random-swap version, @HOSTNAME@, one disk (@DISK@, by path:) wiped, a 32M
#               swap encrypted with a random key, an xfs root over the rest
#   bridges     the network section: cloudbr0 over the NIC with MAC @MAC@
#               by DHCP, cloudbr1 over the boot NIC's VLAN 200, static
#   two-disks   version, @HOSTNAME@, disks a (@DISK_A@) and b (@DISK_B@),
#               both with wipe: @WIPE@; alone, a wipe-only spec
#   boot-swap-root-data   after two-disks: on a, /boot (ext4, GPT name
#               kiln-boot) 64M, swap 32M, / (xfs, noatime); on b, /srv/data (xfs)
#   esp-swap-root-data    after two-disks: on a, bios_grub 1M, an ESP (vfat)
#               33M, swap 10%, / (ext4); on b, a spare 37%, /srv/data (xfs)
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
