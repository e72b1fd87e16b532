#!/bin/bash
# kiln's own later openings of a volume whose key is in no spec (issue 28
# item 1; docs/recovery.md "kiln's own openings"): specs/resume-tang.yaml,
# LUKS2 on raid10 with `key: {generate: true, escrow: CERT}` bound to the
# rig's Tang, on one set of four disks, direct boots:
#   boot 1  install, the guest killed once the boot-loader step starts (a
#           power cut after luks-bind: the record lists storage, image,
#           configure and unlock, the header holds the clevis token);
#   boot 2  Tang stopped: kiln's read-only look at the disks cannot get the
#           key: exit 4, the console names the device and the Tang URL,
#           nothing assembled, opened or mounted, every disk unwritten;
#   boot 3  Tang up again (same keys, same guest URL): the look and the
#           resume get the key through the pin, the run resumes (boot-loader,
#           finish), exit 0, the LUKS UUID of boot 1 kept;
#   boot 4  the finished node, Tang up: looked at read-only, boot-installed,
#           stopped before the kexec; every disk unwritten;
#   boot 5  the finished node, Tang stopped: exit 4, every disk unwritten.
# "Unwritten": a fresh empty qcow2 layer over every disk before the boot,
# and no byte in it after (rig_disks_unwritten).
set -uo pipefail
RIG_TIMEOUT=${RIG_TIMEOUT:-1500}
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
command -v openssl >/dev/null || rig_skip "no openssl"
rig_boot_image
rig_tang_start
openssl req -x509 -newkey rsa:3072 -nodes -keyout "$RIG_TMP/op.key" -out "$RIG_TMP/op.crt" -days 30 \
  -subj /CN=kiln-rig-operator 2>/dev/null || rig_die "openssl req"
RIG_VAR_ESCROW_CERT=$(awk '{printf "%s\\n", $0}' "$RIG_TMP/op.crt")     # a YAML double-quoted string
rig_disks 4 2G
rig_spec specs/resume-tang.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"
T=()
nothing_up() {  # /init's report: no array, no dm mapping, nothing mounted under /target
  ! rig_section_has mdstat '^md' && ! rig_report_section mounts | grep -q ' /target' &&
  ! rig_section_has dmsetup-table 'crypt|linear'
}
look_failed() {  # the console's line of a look that Tang did not answer
  grep -aEq "error: cannot look at the disks of '.*': luks-open /dev/mapper/crypt0: luks 'crypt0' has a generated key, which only its Tang pin gives back, and that failed: tang decrypt of the token of keyslot [0-9]+ of /dev/md/md0: Tang '$RIG_VAR_TANG_URL' did not answer the key recovery: .*; nothing was written" "$RIG_SERIAL"
}

# --- boot 1: install, killed after luks-bind ------------------------------------
rig_boot --until 'step [0-9]+/[0-9]+ boot-loader' || rig_die "boot 1: the install never got to the boot-loader step"
T+=("boot 1 (install up to the boot-loader, killed): $RIG_BOOT_SECONDS s")
rig_check "boot 1: the console says the volume was bound and proven" \
  grep -aq "luks 'crypt0' on /dev/md/md0: bound to 1 tang server(s) in keyslot" "$RIG_SERIAL"
rig_check "boot 1: the key was escrowed" grep -aq "luks 'crypt0' on /dev/md/md0: key escrowed to the certificate" "$RIG_SERIAL"
luks1=$(sed -n "s/.*key escrowed to the certificate .*UUID \([0-9a-f-]*\)).*/\1/p" "$RIG_SERIAL" | tr -d '\r' | head -1)
rig_check "boot 1: the LUKS UUID from the console ($luks1)" [ -n "$luks1" ]

# --- boot 2: Tang stopped: the look stops, nothing written -----------------------
rig_tang_stop
rig_disk_layer
rig_boot || rig_not_ok "boot 2: no report"
T+=("boot 2 (Tang stopped, look): $RIG_BOOT_SECONDS s")
rig_expect_exit 4
rig_check "boot 2: the console names the device, the Tang URL and the reason" look_failed
rig_check "boot 2: no fresh install (no wipe, no luksFormat)" eval '! grep -aEq "step [0-9]+/[0-9]+ (wipe|luks-format)" "$RIG_SERIAL"'
rig_check "boot 2: nothing assembled, opened or mounted" nothing_up
rig_check "boot 2: every member disk unwritten" rig_disks_unwritten

# --- boot 3: Tang up: resumed through the pin -----------------------------------
rig_tang_start
rec0=$(rig_tang_requests)
rig_boot || rig_die "boot 3: the guest did not finish"
T+=("boot 3 (Tang up, resume): $RIG_BOOT_SECONDS s")
rig_expect_exit 0
rig_check "boot 3: the key came back through the pin" \
  grep -aq "luks 'crypt0' on /dev/md/md0: its generated key recovered through its Tang pin (keyslot" "$RIG_SERIAL"
rig_check "boot 3: Tang answered the look's and the resume's recovery ($rec0 -> $(rig_tang_requests))" \
  [ "$(rig_tang_requests)" -ge $((rec0 + 2)) ]
rig_expect_section "kiln-file report.json" '"resumed": ?true' "boot 3: the run report says resumed"
rig_check "boot 3: no fresh install (no wipe, no luksFormat)" eval '! grep -aEq "step [0-9]+/[0-9]+ (wipe|luks-format)" "$RIG_SERIAL"'
rig_check "boot 3: the image, configure and unlock stages skipped" \
  grep -aEq "step [0-9]+/[0-9]+ luks-bind .*: skipped, the interrupted run did it" "$RIG_SERIAL"
kept=$(rig_report_section "kiln-file report.json" | jq -rs '.[0].resume.kept["luks /dev/md/md0"] // "missing"')
rig_check "boot 3: the run report keeps the LUKS UUID of boot 1 ($kept)" [ "$kept" = "$luks1" ]

# --- boot 4: the finished node, Tang up: boot-installed, nothing written ----------
rig_disk_layer
rig_boot --until 'done: booting the installed system \(kexec\)' || rig_not_ok "boot 4: /init never got to the kexec"
T+=("boot 4 (finished node, Tang up, look): $RIG_BOOT_SECONDS s")
rig_check "boot 4: kiln looked through the pin and boots the installed system" \
  grep -aq "boot-installed: " "$RIG_SERIAL"
rig_check "boot 4: every member disk unwritten" rig_disks_unwritten

# --- boot 5: the finished node, Tang stopped: stops, nothing written ---------------
rig_tang_stop
rig_disk_layer
rig_boot || rig_not_ok "boot 5: no report"
T+=("boot 5 (finished node, Tang stopped): $RIG_BOOT_SECONDS s")
rig_expect_exit 4
rig_check "boot 5: the console names the device, the Tang URL and the reason" look_failed
rig_check "boot 5: nothing assembled, opened or mounted" nothing_up
rig_check "boot 5: every member disk unwritten" rig_disks_unwritten

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
