#!/bin/bash
# A node never ends unreachable (issue 30), on one set of four disks (spec
# tests/rig/specs/boot-tang.yaml; boots 2- run on qcow2 overlays of the
# shared install "boot-tang", tests/rig/fixture-boot-tang.sh):
#   boot 1  netboot: install (the shared install);
#   boot 2  from the disks, disk 3 plugged in late (QMP device_add, as a
#           slow HBA or a disk spinning up late), 5 s after the initramfs
#           gave up waiting for it and started the arrays degraded (kiln's
#           degraded start, docs/spec.md "Device waits"): the installed
#           system reaches multi-user, never emergency mode, sshd
#           listens, and it sees the late disk (the spec has no network
#           section: no address after the initramfs; that is
#           tests/rig/test-whole-job.sh's).
# Assertions read what the installed system reports (its kiln-report unit),
# its console and QMP's answers; never kiln's log.
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
command -v socat >/dev/null || rig_skip "no socat (bash tests/deps.sh)"
rig_boot_image
T=()    # "what took how long" lines for the summary

# --- boot 1: the shared install ---------------------------------------------------
rig_fixture_boot boot-tang specs/boot-tang.yaml
T+=("boot 1 (netboot, provision; the shared install): $RIG_BOOT_SECONDS s")
rig_expect_exit 0

# Every boot of this test: the installed system came up far enough to be
# reached, from its own report and console.
no_emergency() { ! grep -aqE 'emergency mode|Dependency failed for .*Local File Systems' "$RIG_SERIAL"; }
check_reachable() {  # check_reachable BOOT-NAME
  local b=$1
  rig_expect_section system '^multi-user active' "$b: the installed system reached multi-user"
  rig_check "$b: no emergency mode, no failed local-fs.target (its console)" no_emergency
  rig_expect_section ssh '^listening .*:22$' "$b: sshd listens"
}

# --- boot 2: a disk that comes late -------------------------------------------------
# (a plug at a fixed 100 s came after the report once the initramfs no
# longer lost time on the missing disk: the node was up at 78 s)
LATE_S=${RIG_LATE_SECONDS:-5} degraded_line='kiln: md .* still missing members after 20 s: starting degraded'
RIG_LATE_AFTER=$degraded_line rig_boot_disk --late 3:"$LATE_S" \
  || rig_not_ok "boot 2: the installed system did not report with disk 3 plugged in late"
T+=("boot 2 (disks, SeaBIOS, disk 3 $LATE_S s after the degraded start): $RIG_BOOT_SECONDS s")
matched=$(sed -n 's/^console matched at \([0-9]*\) s$/\1/p' "$RIG_LATE_LOG")
plugged=$(sed -n 's/^plugged at \([0-9]*\) s$/\1/p' "$RIG_LATE_LOG")
rig_check "boot 2: QMP plugged disk 3 $LATE_S s or a little more after the initramfs started the arrays without it (at ${plugged:-never} s, the line at ${matched:-never} s)" \
  eval '[[ -n $plugged && -n $matched ]] && ((plugged >= matched + LATE_S && plugged <= matched + LATE_S + 10))'
check_reachable "boot 2"
rig_log "boot 2: the system reported at uptime $(rig_report_section system | sed -n 's/^uptime //p') s, state '$(rig_report_section system | sed -n 's/^state //p')'"
rig_log "boot 2: arrays: $(rig_report_section mdstat | grep -Eo '\[[0-9]/[0-9]\] \[[U_]+\]' | paste -sd' ')"
rig_expect_section lsblk '^vd[a-d] +disk' "boot 2: the installed system sees the disks"
rig_check "boot 2: kiln's degraded start in the initramfs started the arrays without the late disk (its console)" \
  grep -aqE "$degraded_line" "$RIG_SERIAL"
rig_check "boot 2: the installed system sees all four disks, the late one too" \
  test "$(rig_report_section lsblk | grep -Ec '^vd[a-z] +disk')" = 4

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
