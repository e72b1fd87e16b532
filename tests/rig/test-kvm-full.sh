#!/bin/bash
# The encrypted KVM host end to end, netbooted: storage (raid10 f2 + LUKS2 +
# LVM + xfs), the crypt benchmark gate, the small base image streamed from
# nginx and checked inside the guest against its manifest, and the report to
# the stand-in controller's webhook (events, the final report). CloudStack's
# addHost is left to the installed system's first boot: the run sends no
# CloudStack call and installs kiln, its config and kiln-register.service on
# the target (checked in the guest). Run twice on the same disks: still no
# host, two reports.
# Assertions read what the guest's kernel and the controller report.
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"

# the small image and its manifest
rig_small_image

# the guest-side check: an extra initramfs segment with a report hook
seg=$RIG_TMP/hook-root
mkdir -p "$seg/etc/kiln/report.d"
cp "$SRC/initramfs/base-image/check-manifest.sh" "$seg/etc/kiln/check-manifest.sh"
cp "$RIG_IMAGE_MANIFEST" "$seg/etc/kiln/small.manifest"
# What kiln itself changes after the image is in place is left out: the files
# the configure step writes (hostname, fstab, crypttab, mdadm.conf), and the
# mtimes of their directory, of mount points' parents and of var/lib/kiln
# (where kiln saves the run report, docs/apply.md), and of usr (the
# first-boot registration's kiln goes to usr/local/sbin; everything else it
# installs is under etc and var/lib/kiln, or new).
cat >"$seg/etc/kiln/report.d/50-image-manifest" <<'HOOK'
[ -f /target/etc/kiln-image ] || { echo "no image on /target"; exit 0; }
sh /etc/kiln/check-manifest.sh /target /etc/kiln/small.manifest >/tmp/manifest.out
grep '^manifest mismatch: ' /tmp/manifest.out \
  | grep -vE '^manifest mismatch: (etc/(hostname|fstab|crypttab|mdadm[^:]*): |(etc|usr|var|var/lib|var/lib/kiln): mtime )' >/tmp/manifest.bad
if [ -s /tmp/manifest.bad ]; then cat /tmp/manifest.bad; else echo "manifest: all entries match"; fi
HOOK
# what the first boot will run (docs/register.md "Where addHost belongs"):
# the unit and its link, the config, the static kiln copy, root's password
# as a hash (the field's scheme only)
cat >"$seg/etc/kiln/report.d/60-firstboot" <<'HOOK'
t=/target
cat $t/etc/systemd/system/kiln-register.service
echo "wants: $(readlink $t/etc/systemd/system/multi-user.target.wants/kiln-register.service)"
echo "conf mode: $(stat -c %a $t/etc/kiln/firstboot.conf)"
grep -E '^(spec|report|marker)=' $t/etc/kiln/firstboot.conf
grep -qE '^spec_sha256=[0-9a-f]{64}$' $t/etc/kiln/firstboot.conf && echo "conf: spec_sha256 pinned"
echo "kiln copy: $($t/usr/local/sbin/kiln version 2>&1 | head -1)"
echo "root password field: $(awk -F: '$1 == "root" { print substr($2, 1, 3) }' $t/etc/shadow)"
grep -E '^(AllowUsers|PermitRootLogin|PasswordAuthentication)' $t/etc/ssh/sshd_config.d/kiln.conf
HOOK
rig_add_initrd_segment "$seg"

# the stand-in controller, reached by the guest at 10.0.2.101:80 through a relay
rig_controller
RIG_VAR_PASSPHRASE=$(secret rig-full-)
RIG_VAR_HOST_PASSWORD=$(secret host-pw-)

rig_disks 4 2G
rig_spec specs/kvm-full.yaml
rig_boot --pxe || rig_die "the guest did not finish (see the console above)"

rig_expect_exit 0
rig_expect_section mdadm-detail 'Layout : far=2' "raid10 far 2"
rig_expect_section mdstat '\[4/4\] \[UUUU\]' "all four members active"
rig_expect_section luksdump 'Cipher key:[[:space:]]+512 bits' "LUKS2, 512-bit key"
rig_expect_section lvs '^ *kvm_vg\|root\|' "LV root"
rig_expect_section mounts ' /target xfs ' "root mounted"
rig_expect_section "hook 50-image-manifest" '^manifest: all entries match' "image extracted as in its manifest (checked in the guest)"
rig_expect_no_section "hook 50-image-manifest" 'mismatch' "no manifest mismatch"
rig_expect_section "kiln-file report.json" '"crypt_write_mbps"' "the run report holds the benchmark figures"

rig_controller_dump "$RIG_TMP/dump-1.json" || rig_die "no controller dump"
rig_check "the controller holds no host: addHost is the first boot's" jq -e '.hosts | length == 0' "$RIG_TMP/dump-1.json"
rig_check "the install run made no CloudStack call" \
  jq -e '[.requests[] | select(.command == "addHost" or (.path | startswith("/client/api")))] | length == 0' "$RIG_TMP/dump-1.json"
rig_check "the report says registration is left to the first boot" \
  jq -e '.reports[0].body.registration.cloudstack.result == "FIRSTBOOT"' "$RIG_TMP/dump-1.json"
rig_expect_section "hook 60-firstboot" '^ExecStart=/usr/local/sbin/kiln register --firstboot /etc/kiln/firstboot.conf$' "the first-boot unit runs kiln register --firstboot"
rig_expect_section "hook 60-firstboot" '^After=network-online.target ssh.service libvirtd.service$' "the unit waits for the network, sshd and libvirtd"
rig_expect_section "hook 60-firstboot" '^wants: /etc/systemd/system/kiln-register.service$' "the unit is enabled in multi-user.target.wants"
rig_expect_section "hook 60-firstboot" '^conf mode: 600$' "firstboot.conf is 0600"
rig_expect_section "hook 60-firstboot" '^spec=http://10\.0\.2\.[0-9]+(:[0-9]+)?/' "firstboot.conf names the spec's URL"
rig_expect_section "hook 60-firstboot" '^conf: spec_sha256 pinned$' "firstboot.conf pins the spec's sha256"
rig_expect_section "hook 60-firstboot" '^kiln copy: kiln [0-9]' "the installed kiln copy runs (the static build)"
rig_expect_section "hook 60-firstboot" '^root password field: \$y\$$' "root's password is a yescrypt hash in /etc/shadow"
rig_expect_section "hook 60-firstboot" '^PermitRootLogin yes$' "sshd lets root in (host_username root, with a password)"
rig_check "webhook events arrived" jq -e '[.events[] | select(.type == "stage-end")] | length >= 10' "$RIG_TMP/dump-1.json"
# every stage-begin has exactly one stage-end, the next stage event after it
# (steps run one at a time), and the two register steps are two stages
STAGE_PAIRS='[.events[] | select(.type == "stage-begin" or .type == "stage-end") | {t: .type, s: .body.stage, n: .body.seq}]
  | sort_by(.n) as $e | ($e | length) > 0 and ($e | length) % 2 == 0
  and all(range(0; $e | length; 2); $e[.].t == "stage-begin" and $e[. + 1].t == "stage-end" and $e[.].s == $e[. + 1].s)
  and ([$e[] | select(.t == "stage-begin" and (.s == "register cloudstack" or .s == "register webhook"))] | length) == 2'
rig_check "every stage-begin event has exactly one stage-end ($(jq '[.events[] | select(.type == "stage-begin")] | length' \
  "$RIG_TMP/dump-1.json") begins, $(jq '[.events[] | select(.type == "stage-end")] | length' "$RIG_TMP/dump-1.json") ends)" \
  jq -e "$STAGE_PAIRS" "$RIG_TMP/dump-1.json"
rig_check "the final report arrived with benchmark figures" \
  jq -e '(.reports | length) == 1 and (.reports[0].body.bench.crypt_write_mbps > 0)' "$RIG_TMP/dump-1.json"
for s in "$RIG_VAR_PASSPHRASE" "$RIG_VAR_SECRET_KEY" "$RIG_VAR_HMAC_KEY" "$RIG_VAR_HOST_PASSWORD"; do
  if grep -qF -- "$s" "$RIG_TMP/dump-1.json" "$RIG_REPORT" "$RIG_SERIAL"; then
    rig_not_ok "a secret from the spec appears in the console, the guest report or the controller"
  fi
done
rig_ok "secrets checked against console, guest report and controller"

# again, on the same disks, with the operator's reinstall act (a finished
# node is otherwise booted, never reinstalled: docs/reinstall.md):
# re-provisioned, still one host
rig_boot --direct --append kiln.reinstall=kvm-full-second-run || rig_die "the second run did not finish"
rig_expect_exit 0
rig_controller_dump "$RIG_TMP/dump-2.json" || rig_die "no controller dump"
rig_check "a second run adds no host either" jq -e '(.hosts | length) == 0 and ([.requests[] | select(.command == "addHost")] | length) == 0' "$RIG_TMP/dump-2.json"
rig_check "the second run reported too" jq -e '.reports | length == 2' "$RIG_TMP/dump-2.json"
rig_done
