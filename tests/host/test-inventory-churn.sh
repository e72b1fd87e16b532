#!/bin/bash
# Devices that change while kiln reads them: partitions dropped and re-added
# (as when another program repartitions a disk or re-reads its table), a disk that becomes empty and comes back.
# The inventory never fails on them: a disk that is gone or empty is left
# out, one whose partitions changed under the probe is listed as unreadable
# (so `kiln plan` refuses to select it, and plans around it), and a steady
# disk is always listed as it is. Only this test's own loop devices churn.
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup sfdisk partx jq
. "$SRC/tests/lib/loop.sh"
loop_init churn
source "$SRC/tests/lib/spec.sh"
CHURN_PIDS=()

truncate -s 64M "$T/steady.img" "$T/parts.img" "$T/empty.img"
attach "$T/steady.img"; STEADY=$ATTACHED
attach "$T/parts.img"; PARTS=$ATTACHED
attach "$T/empty.img"; EMPTY=$ATTACHED
# eight partitions, so that a probe is often inside the table when it is re-read
printf 'label: gpt\n%s' "$(for i in 1 2 3 4 5 6 7 8; do echo 'size=4MiB, type=linux'; done)" | sfdisk -q "$PARTS" \
  || { not_ok "sfdisk on $PARTS"; checks_done; }
partx -a "$PARTS" 2>/dev/null  # (this kernel may not read GPT itself: partx adds the partitions)
[[ -e ${PARTS}p8 ]] || { not_ok "no ${PARTS}p8 after sfdisk"; checks_done; }

# the churn: drop and re-add PARTS' partitions; EMPTY's backing file empty, then back
churn_parts() { while :; do partx -d "$PARTS" 2>/dev/null; partx -a "$PARTS" 2>/dev/null; done; }
churn_parts &
CHURN_PIDS+=($!); cleanup_pid $!
( while :; do truncate -s 0 "$T/empty.img"; losetup -c "$EMPTY"; truncate -s 64M "$T/empty.img"; losetup -c "$EMPTY"; done ) &
CHURN_PIDS+=($!); cleanup_pid $!

# An ASan build's probe is several times slower, under the same churn: fewer
# runs there (the same checks), the full count in the normal build.
if [[ ${KILN_SANITIZE:-OFF} == ON ]]; then RUNS=${KILN_CHURN_RUNS:-20} PLANS=5; else RUNS=${KILN_CHURN_RUNS:-80} PLANS=10; fi
fails=0 partial=0 unreadable=0 parts_seen=0 empty_seen=0 empty_gone=0 steady_bad=0
for ((i = 0; i < RUNS; i++)); do
  if ! "$KILN" inventory --json >"$T/inv.json" 2>"$T/err"; then
    ((fails++ == 0)) && cp "$T/err" "$T/first-err"
    continue
  fi
  s=$(jq -r --arg s "$STEADY" --arg p "$PARTS" --arg e "$EMPTY" '
        [([.disks[] | select(.path == $s) | "\(.size) \(.unreadable) \(.partitions | length)"] | .[0] // "missing"),
         ([.disks[] | select(.path == $p) | "\(.unreadable) \(.partitions | length)"] | .[0] // "missing"),
         ([.disks[] | select(.path == $e) | "\(.size)"] | .[0] // "missing")] | join(",")' "$T/inv.json")
  IFS=, read -r st pa em <<<"$s"
  [[ $st == "67108864 false 0" ]] || { ((steady_bad++ == 0)) && echo "steady disk listed as: $st"; }
  case $pa in
    "false 8") parts_seen=$((parts_seen + 1)) ;;
    "true "*) unreadable=$((unreadable + 1)) ;;
    "false "[0-7]) partial=$((partial + 1)) ;;   # one state of the table, caught between two changes
    *) not_ok "$PARTS listed as '$pa'" ;;
  esac
  case $em in
    67108864) empty_seen=$((empty_seen + 1)) ;;
    missing) empty_gone=$((empty_gone + 1)) ;;
    *) not_ok "$EMPTY listed with size $em (neither 64 MiB nor left out)" ;;
  esac
done
stop_pid "${CHURN_PIDS[@]}"; CHURN_PIDS=()
echo "$RUNS runs: $fails failed; $PARTS whole $parts_seen, unreadable $unreadable, between changes $partial; $EMPTY listed $empty_seen, left out $empty_gone"
((fails == 0)) && ok "the inventory never failed while devices changed" \
  || not_ok "the inventory failed $fails of $RUNS times, first: $(cat "$T/first-err")"
((steady_bad == 0)) && ok "the steady disk was always listed as it is" || not_ok "the steady disk was misread $steady_bad times"

# kiln plan: a spec that selects the steady disk plans while the others churn;
# one that selects a disk whose partitions changed under the probe is refused
spec_write "$T/spec.yaml" root-disk -- HOSTNAME=churn DISK="$STEADY"
churn_parts &
CHURN_PIDS+=($!); cleanup_pid $!
bad=0
for ((i = 0; i < PLANS; i++)); do
  "$KILN" plan "$T/spec.yaml" >/dev/null 2>"$T/err" && continue
  ((bad++ == 0)) && cp "$T/err" "$T/first-err"
done
((bad == 0)) && ok "a spec on the steady disk plans while another disk churns" \
  || not_ok "kiln plan failed $bad of $PLANS times while another disk churned: $(cat "$T/first-err")"
# the churning disk selected: refused as unreadable (exit 3), or planned when
# the probe caught it steady; never a failed inventory
spec_write "$T/parts.yaml" root-disk -- HOSTNAME=churn DISK="$PARTS"
refused=0 other=0
# (at least PLANS runs, up to 10 until one is refused: on a busy machine as
# few as 3 in 10 catch the disk mid-change)
for ((i = 0; i < 10 && (i < PLANS || refused == 0); i++)); do
  "$KILN" plan "$T/parts.yaml" >/dev/null 2>"$T/err"; rc=$?
  if [[ $rc == 3 ]] && grep -qF "disk rule 'a' selects $PARTS, which could not be read" "$T/err"; then
    refused=$((refused + 1))
  elif [[ $rc != 0 ]]; then
    ((other++ == 0)) && cp "$T/err" "$T/first-err"
  fi
done
((other == 0 && refused > 0)) && ok "a spec on the churning disk is refused as unreadable ($refused of $i runs)" \
  || not_ok "kiln plan on the churning disk: $refused refusals as unreadable, $other other failures: $(cat "$T/first-err" 2>/dev/null)"
stop_pid "${CHURN_PIDS[@]}"; CHURN_PIDS=()
checks_done
