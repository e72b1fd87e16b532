#!/bin/bash
# kiln's own later openings of per-disk LUKS under the RAID (issue 28 item
# 1, "Per-disk LUKS under RAID"; docs/recovery.md "kiln's own openings"):
# specs/resume-perdisk.yaml, LUKS2 on each of four disks' data partition
# (crypt-0..crypt-3) with `key: {generate: true, escrow: CERT}` bound to the
# rig's Tang, md raid10 f2 over the four mappings, LVM, XFS. The md
# superblocks are inside the closed LUKS volumes, where no inventory looks:
# the resume and the look open every header through its Tang pin first,
# then read the md's UUID from the opened mappings and assemble it, then
# the VG. Three direct boots on one set of four disks:
#   boot 1  install, the guest killed once the boot-loader step starts (a
#           power cut after the four luks-bind steps: the record lists
#           storage, image, configure and unlock; each header holds its
#           clevis token);
#   boot 2  Tang up: kiln boot's read-only look and then the resume get the
#           four keys through the pins, assemble md0 over the mappings with
#           the UUID read from them (boot 1's array: no wipe, no luksFormat,
#           no md-create), resume (boot-loader, finish), exit 0; the report
#           keeps boot 1's LUKS UUIDs and md0's UUID;
#   boot 3  the finished node, Tang up: looked at read-only (the four LUKS,
#           then md0, then the VG), boot-installed, stopped before the kexec;
#           every disk unwritten.
# Tang stopped (exit 4, nothing written) is the same code path as LUKS on md
# (tests/rig/test-resume-tang.sh boots 2 and 5) and is checked for per-disk
# LUKS on the host (tests/host/test-resume-perdisk.sh): not booted again here.
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
rig_spec specs/resume-perdisk.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"
T=()
# (not "d": rig_check DESCRIPTION declares a local d, which the checks below
# would see in its place)
letter=(a b c d)
recovered() {  # recovered N: the console says each of the four headers gave its key back through its pin, N times each
  local k
  for k in 0 1 2 3; do
    [ "$(grep -ac "luks 'crypt' on /dev/vd${letter[$k]}4: its generated key recovered through its Tang pin (keyslot" "$RIG_SERIAL")" -ge "$1" ] || return 1
  done
}
first_line() { grep -anE -m1 "$1" "$RIG_SERIAL" | cut -d: -f1; }
opened_before_md() {  # the first four recoveries (the look's) come before the first assemble of md0
  local m l k
  m=$(first_line "assembled md array 'md0' ") || return 1
  [ -n "$m" ] || return 1
  for k in 0 1 2 3; do
    l=$(first_line "luks 'crypt' on /dev/vd${letter[$k]}4: its generated key recovered through its Tang pin")
    [ -n "$l" ] && [ "$l" -lt "$m" ] || return 1
  done
}

# --- boot 1: install, killed after the four luks-bind steps -------------------------
rig_boot --until 'step [0-9]+/[0-9]+ boot-loader' || rig_die "boot 1: the install never got to the boot-loader step"
T+=("boot 1 (install up to the boot-loader, killed): $RIG_BOOT_SECONDS s")
declare -A luks1
for k in 0 1 2 3; do
  dev=/dev/vd${letter[$k]}4
  rig_check "boot 1: $dev was bound and proven" \
    grep -aq "luks 'crypt' on $dev: bound to 1 tang server(s) in keyslot" "$RIG_SERIAL"
  luks1[$dev]=$(sed -n "s|.*luks 'crypt' on $dev: key escrowed to the certificate .*UUID \([0-9a-f-]*\)).*|\1|p" "$RIG_SERIAL" |
    tr -d '\r' | head -1)
  rig_check "boot 1: $dev's key escrowed, its LUKS UUID from the console (${luks1[$dev]})" [ -n "${luks1[$dev]}" ]
done

# --- boot 2: Tang up: the look, then the resume, through the four pins ------------
rec0=$(rig_tang_requests)
rig_boot || rig_die "boot 2: the guest did not finish"
T+=("boot 2 (Tang up, look + resume): $RIG_BOOT_SECONDS s")
rig_expect_exit 0
rig_check "boot 2: each of the four headers gave its key back through its pin, in the look and in the resume" recovered 2
rig_check "boot 2: Tang answered 8 recoveries (4 for the look, 4 for the resume: $rec0 -> $(rig_tang_requests))" \
  [ "$(rig_tang_requests)" -ge $((rec0 + 8)) ]
rig_check "boot 2: the four LUKS were opened before md0 was assembled" opened_before_md
rig_check "boot 2: md0's UUID read from its opened members" \
  grep -aEq "assembled md array 'md0' \(UUID [0-9a-f:-]+, read from its members once opened\)" "$RIG_SERIAL"
rig_check "boot 2: looked at read-only first (the LUKS, then md0)" \
  grep -aq "looking read-only: assemble /dev/md/md0" "$RIG_SERIAL"
rig_expect_section "kiln-file report.json" '"resumed": ?true' "boot 2: the run report says resumed"
rig_check "boot 2: no fresh install (no wipe, luksFormat or md-create)" \
  eval '! grep -aEq "step [0-9]+/[0-9]+ (wipe|luks-format|md-create)" "$RIG_SERIAL"'
rig_check "boot 2: the unlock stage skipped (four bindings of boot 1 kept)" \
  grep -aEq "step [0-9]+/[0-9]+ luks-bind .*: skipped, the interrupted run did it" "$RIG_SERIAL"
rig_check "boot 2: the boot-loader step ran" grep -aEq "step [0-9]+/[0-9]+ boot-loader .* done in" "$RIG_SERIAL"
kept=$(rig_report_section "kiln-file report.json" | jq -cs '.[0].resume.kept // {}')
for k in 0 1 2 3; do
  dev=/dev/vd${letter[$k]}4
  got=$(jq -r --arg k "luks $dev" '.[$k] // "missing"' <<<"$kept")
  rig_check "boot 2: the run report keeps $dev's LUKS UUID of boot 1 ($got)" [ "$got" = "${luks1[$dev]}" ]
done
md_kept=$(jq -r '.["md md0"] // "missing"' <<<"$kept")
md_seen=$(rig_report_section blkid | grep -aE '^/dev/(mapper/crypt-[0-3]|dm-[0-9]+): .*TYPE="linux_raid_member"' |
  sed -n 's/.* UUID="\([^"]*\)".*/\1/p' | sort -u)
rig_check "boot 2: the report's md0 UUID ($md_kept) is the one blkid sees on the four mappings ($md_seen)" \
  [ "$md_kept" = "$md_seen" ]
rig_expect_section mdadm-detail "active sync +/dev/(mapper/crypt-0|dm-[0-9]+)" "boot 2: md0 runs on the mappings"

# --- boot 3: the finished node, Tang up: looked at through the pins, boot-installed ---
rig_disk_layer
rec0=$(rig_tang_requests)
rig_boot --until 'done: booting the installed system \(kexec\)' || rig_not_ok "boot 3: /init never got to the kexec"
T+=("boot 3 (finished node, Tang up, look): $RIG_BOOT_SECONDS s")
rig_check "boot 3: the look got the four keys through the pins" recovered 1
rig_check "boot 3: Tang answered the look's 4 recoveries ($rec0 -> $(rig_tang_requests))" \
  [ "$(rig_tang_requests)" -ge $((rec0 + 4)) ]
rig_check "boot 3: the four LUKS were opened (read-only) before md0 was assembled" opened_before_md
rig_check "boot 3: md0 assembled read-only, its UUID read from the opened mappings" \
  grep -aEq "assembled md array 'md0' \(UUID [0-9a-f:-]+, read from its members once opened\)" "$RIG_SERIAL"
rig_check "boot 3: kiln boots the installed system (not the marks' refusal)" grep -aq "boot-installed: " "$RIG_SERIAL"
rig_check "boot 3: no refusal" eval '! grep -aq "error: refusing to apply" "$RIG_SERIAL"'
rig_check "boot 3: every member disk unwritten" rig_disks_unwritten

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
