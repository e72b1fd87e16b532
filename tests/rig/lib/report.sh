# The guest's report and the checks on it (they count failures; rig_done
# decides). Sourced by tests/rig/lib.sh (its header is the index).

# rig_report_section NAME: the lines of one section of the last report
# ("--- NAME" up to the next "---"/"==="). NAME may be a prefix match such as
# "mdadm-detail" (all matching sections are printed).
rig_report_section() {
  awk -v want="$1" '
    /^=== kiln-report end/ { on = 0; next }
    /^--- / { on = (substr($0, 5) == want || index(substr($0, 5), want " ") == 1); next }
    on { print }' "$RIG_REPORT"
}
rig_report_sections() { sed -n 's/^--- //p' "$RIG_REPORT"; }
# rig_last_report: one power-on may write several reports on ttyS1 (the kiln
# initramfs' /init, then, after kiln boots the installed system by kexec,
# the installed system's kiln-report): RIG_REPORT keeps the last one, the
# whole stream stays in RIG_REPORT.all. Sets RIG_REPORTS (how many began).
rig_last_report() {
  RIG_REPORTS=$(grep -c '^=== kiln-report begin' "$RIG_REPORT" || true)
  cp "$RIG_REPORT" "$RIG_REPORT.all"
  if ((RIG_REPORTS > 1)); then
    awk -v n="$RIG_REPORTS" '/^=== kiln-report begin/ { i++ } i == n' "$RIG_REPORT.all" >"$RIG_REPORT"
  fi
}
# rig_section_has NAME REGEX: a line of the section matches (grep -E). The
# section is read whole first: `rig_report_section | grep -q` lets grep quit
# at the first match, awk dies of SIGPIPE, and under pipefail a match reads
# as a miss (this failed test-kvm-full at random).
rig_section_has() { local text; text=$(rig_report_section "$1"); grep -Eq -- "$2" <<<"$text"; }
rig_exit_code() { rig_report_section exit | head -1; }

# --- assertions (they count failures; rig_done decides) ---------------------
rig_ok() { echo "ok - $*"; }
rig_not_ok() { echo "not ok - $*"; RIG_FAILS=$((RIG_FAILS + 1)); }
rig_check() {  # rig_check DESCRIPTION COMMAND...
  local d=$1; shift
  if "$@"; then rig_ok "$d"; else rig_not_ok "$d"; fi
}
# The sections that tell why a failed check's own section reads as it does,
# printed after it: a node without its address shows its links, its bridge's
# and bond's ports and systemd-networkd's story (the CI runs of 2026-12-06:
# cloudbr0 up without an address, a bond without its members; the kept
# report is gone with the rig's temp dir).
rig_section_also() {
  case $1 in
    ip-addr) echo "ip-link bridge-ports network-heal networkd" ;;
  esac
}
# rig_head_tail H T: the first H and the last T lines of stdin (all of it
# when that is no more), with a line saying how many were left out
rig_head_tail() {
  awk -v h="$1" -v t="$2" '{ a[NR] = $0 } END {
    for (i = 1; i <= NR; i++)
      if (NR <= h + t || i <= h || i > NR - t) print a[i]
      else if (i == h + 1) printf "... (%d lines left out)\n", NR - h - t }'
}
# rig_expect_section NAME REGEX [DESCRIPTION]: a line of the section matches (grep -E)
rig_expect_section() {
  local sec=$1 re=$2 d=${3:-"$1 matches /$2/"} also
  if rig_section_has "$sec" "$re"; then rig_ok "$d"
  else
    rig_not_ok "$d"
    for also in "$sec" $(rig_section_also "$sec"); do
      echo "# section '$also' of the report:" ; rig_report_section "$also" | rig_head_tail 20 40 | sed 's/^/#   /'
    done
  fi
}
# rig_expect_no_section NAME REGEX [DESCRIPTION]: no line of the section matches
rig_expect_no_section() {
  local sec=$1 re=$2 d=${3:-"$1 has no /$2/"}
  if [[ -z $(rig_report_sections | grep -F -- "$sec") ]]; then rig_not_ok "$d (no section '$sec' in the report)"
  elif rig_section_has "$sec" "$re"; then
    rig_not_ok "$d"
    echo "# section '$sec' of the report:" ; rig_report_section "$sec" | grep -E -- "$re" | head -10 | sed 's/^/#   /'
  else rig_ok "$d"; fi
}
rig_expect_exit() {
  local want=$1 got; got=$(rig_exit_code)
  if [[ $got == "$want" ]]; then rig_ok "kiln exit code $want"
  else rig_not_ok "kiln exit code is '$got', expected $want"; fi
}
rig_done() {
  [[ -n ${RIG_FIXTURE_DIR:-} ]] && rig_fixture_check_base
  rig_log "whole run: $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $RIG_T0}") s"
  if ((RIG_FAILS)); then rig_log "$RIG_FAILS check(s) failed"; exit 1; fi
  exit 0
}

# --- the layout tests' checks (rig_disks_and_spare's four disks and spare) --
# rig_expect_raid10_f2: the guest's mdstat and mdadm --detail show one md
# raid10, far 2, 256K chunks, with 4 of 4 members active
rig_expect_raid10_f2() {
  rig_expect_section mdstat '^md[0-9]+ : active raid10 ' "md array is raid10"
  rig_expect_section mdstat '\[4/4\] \[UUUU\]' "all four members active"
  rig_expect_section mdadm-detail 'Raid Level : raid10' "mdadm: raid10"
  rig_expect_section mdadm-detail 'Layout : far=2' "mdadm: layout far=2"
  rig_expect_section mdadm-detail 'Chunk Size : 256K' "mdadm: 256K chunk"
  rig_expect_section mdadm-detail 'Active Devices : 4' "mdadm: 4 active devices"
}
# rig_expect_kvm_vg: VG kvm_vg with one PV and the two LVs, root (1 GiB) and
# images, both xfs, mounted at /target and /target/var/lib/libvirt/images
rig_expect_kvm_vg() {
  rig_expect_section vgs '^ *kvm_vg\|1\|2\|' "VG kvm_vg with one PV and two LVs"
  rig_expect_section lvs '^ *kvm_vg\|root\|1073741824B\|active' "LV root, 1 GiB, active"
  rig_expect_section lvs '^ *kvm_vg\|images\|[0-9]+B\|active' "LV images, active"
  rig_expect_section mounts '^/dev/(mapper/kvm_vg-root|kvm_vg/root) /target xfs ' "root LV mounted on /target as xfs"
  rig_expect_section mounts '^/dev/(mapper/kvm_vg-images|kvm_vg/images) /target/var/lib/libvirt/images xfs .*noatime' "images LV mounted as xfs, noatime"
}
# rig_spare_done: the spare (/dev/vde in the guest) is no md member, carries
# no signature and its image is unchanged; then the timings and rig_done
rig_spare_done() {
  rig_expect_no_section mdadm-detail '/dev/vde' "the spare disk is not an md member"
  rig_expect_no_section blkid '^/dev/vde' "the spare disk carries no signature"
  rig_check "the fifth (unselected) disk is unchanged" test "$RIG_SPARE_SUM" = "$(rig_sha256 "$RIG_SPARE")"
  echo "# initramfs ${RIG_INITRD_SIZE:-?} bytes, /init at ${RIG_INIT_SECONDS}s guest uptime, guest run ${RIG_BOOT_SECONDS}s"
  rig_done
}
