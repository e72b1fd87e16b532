#!/bin/bash
# What `kiln plan --json` shows is what `kiln apply` builds: on two loop
# devices (one with an old GPT of other partitions, one blank), the GPT that
# apply writes is compared, entry by entry, with the plan's partitions
# (device node, number, start, size, type GUID, name), as the kernel and
# sfdisk read them back; the filesystems are on the plan's devices; apply
# ran the plan's steps in the plan's order; the run report is in the run
# directory and in the configured target, the same bytes.
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup sfdisk parted blkid jq mkfs.ext4 mkfs.xfs mkfs.vfat mkswap cmp
help=$("$KILN" help 2>&1)
grep -q '^  apply ' <<<"$help" || { echo "SKIP: kiln has no apply command yet"; exit 77; }

. "$SRC/tests/lib/loop.sh"
loop_init plan-apply
source "$SRC/tests/lib/spec.sh"

truncate -s 300M "$T/a.img"; truncate -s 600M "$T/b.img"
attach "$T/a.img"; A=$ATTACHED; attach "$T/b.img"; B=$ATTACHED
# a carries an old layout that the wipe step must remove: three partitions
# at other places, one with an ext4
parted -s "$A" mklabel gpt mkpart old1 1MiB 50MiB mkpart old2 50MiB 120MiB mkpart old3 120MiB 290MiB
mkfs.ext4 -q -F -L old "${A}p2"
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

spec_write "$T/spec.yaml" two-disks esp-swap-root-data finish -- \
  HOSTNAME=kiln-plan-apply DISK_A="$A" DISK_B="$B" WIPE=true FINISH=none

"$KILN" plan --json "$T/spec.yaml" >"$T/plan.json" 2>"$T/plan.err" || { cat "$T/plan.err"; not_ok "kiln plan failed"; exit 1; }
jq -e '[.steps[] | select(.kind == "wipe")] | length == 1' "$T/plan.json" >/dev/null \
  && ok "the plan wipes the disk with the old GPT (and only that one)" || not_ok "the plan has no single wipe step: $(jq -c '[.steps[].kind]' "$T/plan.json")"

"$KILN" apply --yes "$T/spec.yaml" >"$T/apply.out" 2>"$T/apply.err"; rc=$?
[[ $rc == 0 ]] && ok "kiln apply exit 0" || { cat "$T/apply.err"; not_ok "kiln apply exited $rc"; }
umount -R "$T/target" 2>/dev/null

# 1. every partition step of the plan against the GPT on its disk
declare -A guid=(
  [linux]=0FC63DAF-8483-4772-8E79-3D69D8477DE4 [raid]=A19D880F-05FC-4D3B-A006-743F0F84911E
  [lvm]=E6D6D379-F507-44C2-A23C-238F2A3DF928 [swap]=0657FD6D-A4AB-43C4-84E5-0933C84B4F4F
  [esp]=C12A7328-F81F-11D2-BA4B-00A0C93EC93B [bios_grub]=21686148-6449-6E6F-744E-656564454649)
nparts=0
for disk in $(jq -r '.steps[] | select(.kind == "partition") | .device' "$T/plan.json"); do
  sfdisk --json "$disk" >"$T/gpt.json" 2>"$T/sfdisk.err" || { not_ok "sfdisk cannot read $disk: $(cat "$T/sfdisk.err")"; continue; }
  ss=$(jq -r '.partitiontable.sectorsize // 512' "$T/gpt.json")
  # one line per entry: node number start size TYPE name (bytes)
  jq -r --arg d "$disk" '.steps[] | select(.kind == "partition" and .device == $d) | .partitions[]
      | "\(.device) \(.number) \(.start) \(.size) \(.type) \(.name)"' "$T/plan.json" >"$T/want"
  : >"$T/got"
  while read -r node number start size type name; do
    printf '%s %s %s %s %s %s\n' "$node" "$number" "$start" "$size" "${guid[$type]:-unknown-$type}" "$name" >>"$T/want.guid"
  done <"$T/want"
  jq -r --argjson ss "$ss" --arg d "$disk" '.partitiontable.partitions[]
      | "\(.node) \(.node | ltrimstr($d) | ltrimstr("p")) \(.start * $ss) \(.size * $ss) \(.type) \(.name // "")"' \
      "$T/gpt.json" >"$T/got"
  if diff "$T/want.guid" "$T/got" >"$T/diff"; then
    ok "GPT on $disk is the plan's: $(wc -l <"$T/got") partitions, same nodes, starts, sizes, types, names"
  else
    not_ok "GPT on $disk differs from the plan (< plan, > disk):"; cat "$T/diff" >&2
  fi
  nparts=$((nparts + $(wc -l <"$T/got")))
  rm -f "$T/want.guid"
  # the kernel has the same partitions, at the same places
  while read -r node number start size _; do
    name=${node#/dev/}
    if [[ -b $node && $(( $(cat "/sys/class/block/$name/start") * 512 )) == "$start" && $(( $(cat "/sys/class/block/$name/size") * 512 )) == "$size" ]]; then :
    else not_ok "the kernel's $node is not at $start size $size"; fi
  done <"$T/want"
done
((nparts == 6)) && ok "6 partitions checked" || not_ok "$nparts partitions checked, expected 6"
# the old ext4 is gone (its partition was overwritten by the new layout and wiped)
blkid -L old >/dev/null 2>&1 && not_ok "the old ext4 'old' is still visible" || ok "the old ext4 is gone"

# 2. each mkfs step's device holds that filesystem
while read -r dev type; do
  got=$(blkid -p -o value -s TYPE "$dev" 2>/dev/null)
  [[ $got == "$type" ]] && ok "$dev holds $type as planned" || not_ok "$dev holds '$got', the plan said $type"
done < <(jq -r '.steps[] | select(.kind == "mkfs") | "\(.device) \(.description | capture("(mkfs |mkswap )(?<t>[a-z0-9]+)").t)"' "$T/plan.json" \
         | sed 's/ swap$/ swap/')

# 3. apply ran the plan's steps, in the plan's order (its step lines)
jq -r '.steps[] | "\(.kind) \(.device // "-")"' "$T/plan.json" >"$T/plan.steps"
sed -n 's/^.*step [0-9]*\/[0-9]* \([a-z-]*\) \([^ :]*\): .*/\1 \2/p' "$T/apply.err" >"$T/apply.steps"
if diff "$T/plan.steps" "$T/apply.steps" >"$T/diff"; then ok "apply ran the plan's $(wc -l <"$T/plan.steps") steps in order"
else not_ok "apply's steps differ from the plan's (< plan, > apply):"; cat "$T/diff" >&2; fi

# 4. the run report: one writer, the same bytes in the run dir and the target
mkdir -p "$T/target"
mount "$(jq -r '.steps[] | select(.kind == "mount" and .id == "root") | .device' "$T/plan.json")" "$T/target"
if cmp -s "$T/run/report.json" "$T/target/var/lib/kiln/report.json"; then
  ok "report.json in the run dir and in the target are the same bytes"
else not_ok "report.json differs between $T/run and the target (or is missing)"; fi
[[ $(jq -r .result "$T/run/report.json") == SUCCESS ]] && ok "the report says SUCCESS" || not_ok "report result is $(jq -r .result "$T/run/report.json")"
umount "$T/target"

checks_done
