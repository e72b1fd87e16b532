#!/bin/bash
# A node never ends unreachable (issue 30), on one set of four disks (spec
# tests/rig/specs/boot-tang.yaml; boots 2- run on qcow2 overlays of the
# shared install "boot-tang", tests/rig/fixture-boot-tang.sh):
#   boot 1  netboot: install (the shared install);
#   boot 2  from the disks, disk 3 plugged in 100 s after power-on (QMP
#           device_add, as a slow HBA or a disk spinning up late): the
#           installed system reaches multi-user, never emergency mode, sshd
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

# --- boot 2: a disk that comes 100 s late --------------------------------------------
LATE_S=${RIG_LATE_SECONDS:-100}
rig_boot_disk --late 3:"$LATE_S" || rig_not_ok "boot 2: the installed system did not report with disk 3 plugged in late"
T+=("boot 2 (disks, SeaBIOS, disk 3 after $LATE_S s): $RIG_BOOT_SECONDS s")
plugged=$(sed -n 's/^plugged at \([0-9]*\) s$/\1/p' "$RIG_LATE_LOG")
rig_check "boot 2: QMP plugged disk 3 in $LATE_S s or a little more after power-on (at ${plugged:-never} s)" \
  eval '[[ -n $plugged ]] && ((plugged >= LATE_S && plugged <= LATE_S + 10))'
check_reachable "boot 2"
rig_log "boot 2: the system reported at uptime $(rig_report_section system | sed -n 's/^uptime //p') s, state '$(rig_report_section system | sed -n 's/^state //p')'"
rig_log "boot 2: arrays: $(rig_report_section mdstat | grep -Eo '\[[0-9]/[0-9]\] \[[U_]+\]' | paste -sd' ')"
rig_expect_section lsblk '^vd[a-d] +disk' "boot 2: the installed system sees the disks"
rig_check "boot 2: kiln's degraded start in the initramfs started the arrays without the late disk (its console)" \
  grep -aq 'kiln: md .* still missing members after 20 s: starting degraded' "$RIG_SERIAL"
rig_check "boot 2: the installed system sees all four disks, the late one too" \
  test "$(rig_report_section lsblk | grep -Ec '^vd[a-z] +disk')" = 4

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
