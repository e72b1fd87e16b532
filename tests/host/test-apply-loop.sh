#!/bin/bash
# kiln apply on real loop devices: refusal without --yes, dry run, refusal
# of a disk with old signatures and no wipe, then a real run that wipes old
# filesystems and a GPT, partitions, makes filesystems and mounts them under
# a temporary target; a re-run over kiln's own earlier layout; a wipe-only
# run that leaves nothing blkid can see. An unselected disk never changes.
# Assertions read the disks (parted, blkid, findmnt), not kiln's log.
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup parted blkid mkfs.xfs mkfs.ext4 findmnt sha256sum jq
grep -q '^  apply ' <<<"$("$KILN" help 2>&1)" || { echo "SKIP: kiln has no apply command yet"; exit 77; }

. "$SRC/tests/lib/loop.sh"
loop_init apply
source "$SRC/tests/lib/spec.sh"
hashes() { sha256sum "$T"/a.img "$T"/b.img "$T"/c.img; }

truncate -s 512M "$T/a.img"; truncate -s 400M "$T/b.img"; truncate -s 64M "$T/c.img"
attach "$T/a.img"; A=$ATTACHED; attach "$T/b.img"; B=$ATTACHED; attach "$T/c.img"; C=$ATTACHED
# old contents: an xfs on a, a GPT with an ext4 partition on b, an ext4 on the unselected c
mkfs.xfs -q -f "$A"
parted -s "$B" mklabel gpt mkpart old 1MiB 100MiB && mkfs.ext4 -q -F "${B}p1"
mkfs.ext4 -q -F -L keepme "$C"
OLD_A_UUID=$(blkid -o value -s UUID "$A")
C_HASH=$(sha256sum <"$T/c.img")
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"   # the run report goes there

# kiln sees this test's loop devices and no others (a test in another
# checkout may be wiping its own at the same time): one attached outside
# KILN_INVENTORY_INCLUDE_LOOP is not listed
truncate -s 16M "$T/other.img"
OTHER=$(losetup -f --show "$T/other.img") || exit 1; cleanup_loop "$OTHER"
seen=$("$KILN" inventory --json | jq -r '[.disks[].path | select(startswith("/dev/loop"))] | sort | join(" ")')
want=$(printf '%s\n' "$A" "$B" "$C" | LC_ALL=C sort | paste -sd' ')
[[ $seen == "$want" ]] && ok "kiln sees only this test's loop devices" \
  || not_ok "kiln sees the loop devices '$seen', expected '$want' (not $OTHER)"

vals=(HOSTNAME=kiln-apply-test DISK_A="$A" DISK_B="$B" FINISH=none)
spec_write "$T/spec.yaml" two-disks boot-swap-root-data finish -- "${vals[@]}" WIPE=true
spec_write "$T/nowipe.yaml" two-disks boot-swap-root-data finish -- "${vals[@]}" WIPE=false
# a device_timeout of its own (the device waits checked below), after hostname:
sed -i '/^hostname: /a device_timeout: 2min' "$T/spec.yaml" "$T/nowipe.yaml"

# 1. without --yes: refused, exit 3, nothing written
before=$(hashes)
out=$("$KILN" apply "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 3 ]] || not_ok "apply without --yes exited $rc, expected 3: $out"
grep -q -- "without --yes" <<<"$out" || not_ok "refusal does not mention --yes: $out"
grep -q "destroy" <<<"$out" || not_ok "refusal does not list what would be destroyed: $out"
[[ $(hashes) == "$before" ]] && ok "refusal without --yes wrote nothing" || not_ok "refusal without --yes changed a disk"

# 2. dry run: prints the plan, exit 0, nothing written
out=$("$KILN" apply --dry-run "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] || not_ok "dry run exited $rc: $out"
grep -q "partition" <<<"$out" && grep -q "mkfs" <<<"$out" && grep -q "wipe" <<<"$out" || not_ok "dry run does not show the steps: $out"
[[ $(hashes) == "$before" ]] && ok "dry run wrote nothing" || not_ok "dry run changed a disk"

# 3. old signatures and no wipe: refused by the plan before any write
out=$("$KILN" apply --yes "$T/nowipe.yaml" 2>&1); rc=$?
[[ $rc == 3 ]] || not_ok "apply over old signatures without wipe exited $rc, expected 3: $out"
grep -q "$A" <<<"$out" || not_ok "refusal does not name $A: $out"
[[ $(hashes) == "$before" ]] && ok "refusal of old signatures wrote nothing" || not_ok "refusal without wipe changed a disk"

# 4. the real run, with no udevadm on PATH as in the initramfs: libparted's
# "udevadm settle" must not show ("sh: udevadm: not found"), kiln waits itself
out=$(PATH=/nonexistent "$KILN" apply --yes "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] || not_ok "apply exited $rc: $out"
grep -q "udevadm" <<<"$out" && not_ok "libparted's udevadm call shows: $out"
grep -Eq "step [0-9]+/[0-9]+ mkfs .* done in [0-9.]+s" <<<"$out" || not_ok "steps are not logged with their duration: $out"
pa=$(parted -m -s "$A" unit MiB print)
grep -q ":gpt:" <<<"$pa" || not_ok "no GPT on $A: $pa"
grep -q '^1:1.00MiB:65.0MiB:64.0MiB:ext4:kiln-boot:;' <<<"$pa" || not_ok "partition 1 on $A wrong: $pa"
grep -q '^2:65.0MiB:97.0MiB:32.0MiB:linux-swap(v1):swap:swap;' <<<"$pa" || not_ok "partition 2 on $A wrong: $pa"
grep -q '^3:97.0MiB:.*:xfs:root:;' <<<"$pa" || not_ok "partition 3 on $A wrong: $pa"
pb=$(parted -m -s "$B" unit MiB print)
grep -q '^1:1.00MiB:.*:xfs:data:;' <<<"$pb" || not_ok "partition on $B wrong: $pb"
grep -q '^2:' <<<"$pb" && not_ok "old partition layout left on $B: $pb"
# every partition is 1 MiB aligned (start and size)
for l in "$A" "$B"; do
  parted -m -s "$l" unit s print | awk -F: '/^[0-9]+:/ { s=$2+0; z=$4+0; if (s % 2048 || z % 2048) { print "unaligned: " $0; bad=1 } } END { exit bad }' \
    || not_ok "unaligned partitions on $l"
done
[[ $(blkid -o value -s TYPE "${A}p1") == ext4 && $(blkid -o value -s LABEL "${A}p1") == boot ]] || not_ok "no ext4 'boot' on ${A}p1"
[[ $(blkid -o value -s TYPE "${A}p2") == swap ]] || not_ok "no swap on ${A}p2"
[[ $(blkid -o value -s TYPE "${A}p3") == xfs ]] || not_ok "no xfs on ${A}p3"
[[ $(blkid -o value -s UUID "${A}p3") != "$OLD_A_UUID" ]] || not_ok "old xfs still on $A"
[[ $(blkid -o value -s LABEL "${B}p1") == data ]] || not_ok "no xfs 'data' on ${B}p1"
blkid -p "$A" | grep -q 'TYPE="xfs"' && not_ok "old whole-disk xfs still visible on $A"
[[ $(findmnt -n -o SOURCE "$T/target") == "${A}p3" ]] || not_ok "root not mounted on $T/target"
[[ $(findmnt -n -o SOURCE "$T/target/boot") == "${A}p1" ]] || not_ok "/boot not mounted"
[[ $(findmnt -n -o SOURCE "$T/target/srv/data") == "${B}p1" ]] || not_ok "/srv/data not mounted"
findmnt -n -o OPTIONS "$T/target" | grep -q noatime || not_ok "root is not mounted noatime"
# device waits (docs/spec.md "Device waits"): device_timeout 2min on every
# line; / and /boot required, /srv/data and the swap nofail
grep -q "^UUID=$(blkid -o value -s UUID "${A}p3") / xfs noatime,x-systemd.device-timeout=120s 0 0$" "$T/target/etc/fstab" || not_ok "fstab lacks root: $(cat "$T/target/etc/fstab")"
grep -q "^UUID=$(blkid -o value -s UUID "${A}p1") /boot ext4 defaults,x-systemd.device-timeout=120s 0 2$" "$T/target/etc/fstab" || not_ok "fstab lacks a required /boot: $(cat "$T/target/etc/fstab")"
grep -q "^UUID=$(blkid -o value -s UUID "${B}p1") /srv/data xfs defaults,nofail,x-systemd.device-timeout=120s 0 0$" "$T/target/etc/fstab" || not_ok "fstab lacks a nofail /srv/data: $(cat "$T/target/etc/fstab")"
grep -q "^UUID=$(blkid -o value -s UUID "${A}p2") none swap sw,nofail,x-systemd.device-timeout=120s 0 0$" "$T/target/etc/fstab" || not_ok "fstab lacks swap"
# what Debian 12's systemd makes of it: its own fstab generator, when this machine has one
gen=/lib/systemd/system-generators/systemd-fstab-generator
if [[ -x $gen ]]; then
  mkdir -p "$T/gen/n" "$T/gen/e" "$T/gen/l"
  SYSTEMD_FSTAB="$T/target/etc/fstab" SYSTEMD_PROC_CMDLINE= "$gen" "$T/gen/n" "$T/gen/e" "$T/gen/l" 2>/dev/null
  [[ -L $T/gen/n/local-fs.target.requires/boot.mount ]] && ok "systemd: local-fs.target requires /boot" \
    || not_ok "systemd: /boot is not required: $(ls -R "$T/gen/n")"
  [[ -L $T/gen/n/local-fs.target.wants/srv-data.mount && ! -e $T/gen/n/local-fs.target.requires/srv-data.mount ]] \
    && ok "systemd: local-fs.target only wants /srv/data (nofail)" || not_ok "systemd: /srv/data: $(ls -R "$T/gen/n")"
  drop="$T/gen/n/dev-disk-by\x2duuid-$(blkid -o value -s UUID "${B}p1" | sed 's/-/\\x2d/g').device.d/50-device-timeout.conf"
  grep -qx 'JobRunningTimeoutSec=120s' "$drop" 2>/dev/null && ok "systemd: waits 120 s for /srv/data's device" \
    || not_ok "systemd: no device timeout for /srv/data: $(ls -R "$T/gen/n")"
fi
[[ $(cat "$T/target/etc/hostname") == kiln-apply-test ]] || not_ok "hostname not written"
[[ $(sha256sum <"$T/c.img") == "$C_HASH" ]] && ok "unselected disk unchanged" || not_ok "unselected disk $C changed"
((FAILS == 0)) && ok "provisioned two loop disks"

# 5. again over kiln's own earlier layout (unmounted first)
umount -R "$T/target"
old_root=$(blkid -o value -s UUID "${A}p3")
out=$("$KILN" apply --yes "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] || not_ok "re-apply exited $rc: $out"
[[ -n $(blkid -o value -s UUID "${A}p3") && $(blkid -o value -s UUID "${A}p3") != "$old_root" ]] || not_ok "re-apply did not make a new root filesystem"
umount -R "$T/target"

# 6. wipe only: nothing left that blkid can see, no GPT at either end
# A partition held open while kiln wipes (as udev's probe holds one for a
# moment): BLKRRPART answers EBUSY until it is closed; kiln tries again.
# The holder has the partition open before kiln starts, and lets go 1 s
# after kiln says it wipes $A (kiln tries for 2 s), however slow the machine.
spec_write "$T/wipe.yaml" two-disks finish -- "${vals[@]}" WIPE=true
: >"$T/wipe.out"
mkfifo "$T/held"
( exec 3<"${A}p1"; echo >"$T/held"
  for ((i = 0; i < 600; i++)); do grep -qF "wipe $A:" "$T/wipe.out" && break; sleep 0.05; done
  sleep 1 ) & holder=$!
read -r <"$T/held"
"$KILN" apply --yes "$T/wipe.yaml" >"$T/wipe.out" 2>&1; rc=$?
out=$(<"$T/wipe.out")
wait "$holder"
[[ $rc == 0 ]] || not_ok "wipe-only apply exited $rc: $out"
grep -q "^.*$A: the kernel dropped the old partitions after [0-9]* tries (one was open)" <<<"$out" \
  && ok "wipe: BLKRRPART tried again while a partition was open" \
  || not_ok "wipe: no retry of BLKRRPART while ${A}p1 was open: $out"
for l in "$A" "$B"; do
  [[ -z $(blkid -p "$l" 2>/dev/null) ]] || not_ok "signatures left on $l: $(blkid -p "$l")"
  ls "$l"p* >/dev/null 2>&1 && not_ok "partition nodes left on $l"
done
tail -c $((33 * 512)) "$T/a.img" >"$T/a.tail"   # a file, not a pipe: grep -q would SIGPIPE tail under pipefail
grep -aq "EFI PART" "$T/a.tail" && not_ok "backup GPT header left at the end of $A"
[[ $(sha256sum <"$T/c.img") == "$C_HASH" ]] || not_ok "unselected disk $C changed"
((FAILS == 0)) && ok "wipe left nothing behind"

# 7. a spec with layouts: the first (a disk that is not there) does not fit, the
# second does; the run report names the layout installed
cat >"$T/layouts.yaml" <<EOF
version: 1
hostname: kiln-apply-test
layouts:
  - name: three-disks
    disks:
      - {id: a, match: {path: $A}, wipe: true}
      - {id: z, match: {path: /dev/kiln-no-such-disk}, wipe: true}
  - name: two-loops
    disks:
      - {id: a, match: {path: $A}, wipe: true}
      - {id: b, match: {path: $B}, wipe: true}
finish: none
EOF
rm -f "$T/run/report.json"
out=$("$KILN" apply --yes "$T/layouts.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] || not_ok "layouts apply exited $rc: $out"
got=$(jq -r '.node.layout' "$T/run/report.json" 2>/dev/null)
[[ $got == two-loops ]] && ok "the run report names the layout installed" || not_ok "report's layout is '$got', expected two-loops"
[[ $(sha256sum <"$T/c.img") == "$C_HASH" ]] || not_ok "unselected disk $C changed (layouts)"

checks_done
