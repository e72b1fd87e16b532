#!/bin/bash
# The boot-loader step's executor (agent/apply/bootloader.c) on this host, in
# a fake target root whose update-initramfs, debconf-set-selections,
# grub-install, grub-bios-setup and update-grub are recording stubs (static
# busybox sh): the chroot has /dev, /proc, /sys and /run bound while they run
# and none of them afterwards; for an image without the generic-initramfs
# marker the helpers run in order with the plan's argv (grub-install i386-pc
# on the first boot disk, grub-bios-setup on the others, or a copy of the
# first disk's boot code on disk images whose BIOS boot partitions lie alike;
# x86_64-efi once, at
# the removable path, --no-nvram, at once with i386-pc after grub-editenv
# made grubenv, or one after the other where /boot/grub/locale exists;
# update-initramfs first, update-grub last);
# debconf gets grub-pc/install_devices on stdin; the GRUB drop-in carries the
# kernel command line. A failing grub-install or grub-bios-setup stops the
# step with its stderr line, runs nothing after it, and leaves no bind
# behind; a broken marker is refused before any helper runs; a missing
# helper is named. (The marked path, kiln's own grub.cfg: unit/test-boot for
# its text, the rig for the boots.)
set -u
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
((EUID == 0)) || { echo "needs root"; exit 77; }
PROBE=$BUILD/tests/unlock-probe
[[ -x $PROBE ]] || { echo "no $PROBE"; exit 77; }
BB=$(command -v busybox) && file -L "$BB" | grep -q 'statically linked' || { echo "no static busybox"; exit 77; }

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir bootloader
root=$T/root
for m in run sys proc dev; do cleanup_umount "$root/$m"; done   # should a bind be left

make_root() {
        rm -rf "$root"
        mkdir -p "$root"/{bin,usr/sbin,usr/bin,usr/lib/grub/i386-pc,etc/default,boot/efi,var/tmp}
        cp "$BB" "$root/bin/busybox"
        for a in sh cat; do ln -s busybox "$root/bin/$a"; done
        for h in usr/sbin/update-initramfs usr/sbin/grub-install usr/lib/grub/i386-pc/grub-bios-setup usr/sbin/update-grub usr/bin/debconf-set-selections usr/bin/grub-editenv; do
                cat >"$root/$h" <<'STUB'
#!/bin/sh
seen=""
[ -e /proc/self/mounts ] && seen="$seen proc"
[ -c /dev/null ] && seen="$seen dev"
[ -d /sys/class ] && seen="$seen sys"
[ -d /run/kiln-probe-run ] && seen="$seen run"
echo "$0 $* |$seen" >>/calls.log
case "$0" in */debconf-set-selections) cat >>/debconf.log ;; esac
if [ -e "/fail-$(basename "$0")" ]; then echo "$(basename "$0"): error: disk not found." >&2; exit 1; fi
case "$0$*" in */grub-install*x86_64-efi*) [ -e /fail-efi ] && { echo "grub-install: error: no EFI directory." >&2; exit 1; } ;; esac
case "$0" in */grub-install) echo "begin $*" >>/order.log; sleep 1; echo "end $*" >>/order.log ;; esac
exit 0
STUB
                chmod +x "$root/$h"
        done
}
binds_left() { grep -c " $root/" /proc/self/mounts; }
mkdir -p /run/kiln-probe-run    # proves /run is the host's
cleanup_do rmdir /run/kiln-probe-run
# a shared mount under /run with a mount under it, as iproute2 makes
# /run/netns and a namespace in it: the chroot's recursive bind of /run must
# not take the inner mount away from the host when it is undone (a host test's
# namespaces went away under it while another test ran this step)
shared=/run/kiln-probe-shared-$$
mkdir -p "$shared" && mount -t tmpfs kiln-probe "$shared" && mount --make-shared "$shared" &&
        mkdir -p "$shared/ns" && mount -t tmpfs kiln-probe-ns "$shared/ns" || not_ok "cannot make the shared probe mount"
cleanup_umount "$shared"       # -R: the inner one too
cleanup_path "$shared"
inv=$SRC/tests/inventories/qemu-4disk.json

# BIOS on four disks (templates/raid1-boot-raid10.yaml: Tang pin, so ip=::::::dhcp)
make_root
KILN_TARGET=$root "$PROBE" boot "$SRC/templates/raid1-boot-raid10.yaml" "$inv" >"$T/out" 2>&1 || not_ok "bios: $(cat "$T/out")"
cat >"$T/want" <<'W'
/usr/sbin/update-initramfs -u -k all | proc dev sys run
/usr/bin/debconf-set-selections  | proc dev sys run
/usr/sbin/grub-install --target=i386-pc /dev/vda | proc dev sys run
/usr/lib/grub/i386-pc/grub-bios-setup --directory=/boot/grub/i386-pc /dev/vdb | proc dev sys run
/usr/lib/grub/i386-pc/grub-bios-setup --directory=/boot/grub/i386-pc /dev/vdc | proc dev sys run
/usr/lib/grub/i386-pc/grub-bios-setup --directory=/boot/grub/i386-pc /dev/vdd | proc dev sys run
/usr/sbin/update-grub  | proc dev sys run
W
diff -u "$T/want" "$root/calls.log" >"$T/diff" && ok "bios: the helpers ran in order in the chroot with /dev /proc /sys /run" \
        || { not_ok "bios: calls differ:"; cat "$T/diff"; }
printf '%s\n' "grub-pc grub-pc/install_devices multiselect /dev/vda, /dev/vdb, /dev/vdc, /dev/vdd" \
        "grub-pc grub-pc/install_devices_empty boolean false" | cmp -s - "$root/debconf.log" \
        && ok "bios: debconf install_devices lists every boot disk" || not_ok "debconf: $(cat "$root/debconf.log")"
grep -qx 'GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200n8 ip=::::::dhcp"' "$root/etc/default/grub.d/kiln.cfg" &&
        grep -qx 'GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"' "$root/etc/default/grub.d/kiln.cfg" \
        && ok "bios: GRUB_CMDLINE_LINUX with ip=::::::dhcp for Tang, serial terminal" || not_ok "kiln.cfg: $(cat "$root/etc/default/grub.d/kiln.cfg")"
(( $(binds_left) == 0 )) && ok "bios: no bind left under the target" || not_ok "bios: binds left: $(grep " $root/" /proc/self/mounts)"
mountpoint -q "$shared/ns" && ok "bios: a shared mount's inner mount under /run is still the host's after the chroot" \
        || not_ok "bios: the chroot's unbind took $shared/ns away from the host"

# BIOS on four disk images with real GPTs: a disk whose BIOS boot partition
# lies where the first disk's does gets the first disk's boot code copied
# (MBR bytes 0-439 and the partition's bytes, its own disk signature and
# table kept); the one whose partition lies elsewhere gets grub-bios-setup
# and is not written. (The stub grub-install writes nothing, so disk 0
# holds a pattern as if it had.)
command -v parted >/dev/null || { echo "no parted"; exit 77; }
make_root
for i in 0 1 2 3; do
        truncate -s 8M "$T/d$i"
        at=1; ((i == 2)) && at=2
        parted -s "$T/d$i" mklabel gpt mkpart bios ${at}MiB $((at + 1))MiB set 1 bios_grub on mkpart rest 4MiB 7MiB
done
head -c 440 /dev/urandom | dd of="$T/d0" conv=notrunc status=none
head -c 1M /dev/urandom | dd of="$T/d0" bs=1M seek=1 conv=notrunc status=none
for i in 1 2 3; do cp "$T/d$i" "$T/d$i.before"; done
jq --arg t "$T" '.disks |= [to_entries[] | .value.path = "\($t)/d\(.key)" | .value]' "$inv" >"$T/inv-files.json"
KILN_TARGET=$root "$PROBE" boot "$SRC/templates/raid1-boot-raid10.yaml" "$T/inv-files.json" >"$T/out" 2>&1 || not_ok "copy: $(cat "$T/out")"
grep -oE '^[^ ]*(grub-install|grub-bios-setup) [^|]*' "$root/calls.log" >"$T/g"
printf '%s\n' "/usr/sbin/grub-install --target=i386-pc $T/d0 " \
        "/usr/lib/grub/i386-pc/grub-bios-setup --directory=/boot/grub/i386-pc $T/d2 " | cmp -s - "$T/g" \
        && ok "copy: grub-install on the first disk, grub-bios-setup only on the disk whose BIOS boot partition lies elsewhere" \
        || { not_ok "copy: grub calls:"; cat "$T/g"; }
spliced() {  # spliced N: disk N as the copy should leave it
        { head -c 440 "$T/d0"; tail -c +441 "$T/d$1.before" | head -c $((1048576 - 440)); \
          tail -c +1048577 "$T/d0" | head -c 1048576; tail -c +2097153 "$T/d$1.before"; }
}
for i in 1 3; do
        spliced $i | cmp -s - "$T/d$i" && ok "copy: disk $i holds the first disk's boot code and core image, its own GPT intact" \
                || not_ok "copy: disk $i is not the first disk's boot code on its own GPT"
done
cmp -s "$T/d2.before" "$T/d2" && ok "copy: the disk with its BIOS boot partition elsewhere was not written" \
        || not_ok "copy: disk 2 was written"
grep -q "$T/d1: GRUB's boot code copied from $T/d0 (the same BIOS boot partition)" "$T/out" &&
        grep -q "$T/d2: grub-bios-setup, not a copy: its BIOS boot partition is not where $T/d0 has it" "$T/out" \
        && ok "copy: the log says which disk got a copy and why the other did not" || not_ok "copy log: $(cat "$T/out")"

# both firmwares on one disk (templates/single-disk.yaml)
make_root
KILN_TARGET=$root "$PROBE" boot "$SRC/templates/single-disk.yaml" "$inv" >"$T/out" 2>&1 || not_ok "both: $(cat "$T/out")"
grep -o '^/usr/sbin/grub-install [^|]*' "$root/calls.log" | sort >"$T/g"
printf '%s\n' "/usr/sbin/grub-install --target=i386-pc /dev/vda " \
        "/usr/sbin/grub-install --target=x86_64-efi --efi-directory=/boot/efi --removable --no-nvram " | cmp -s - "$T/g" \
        && ok "both: i386-pc and x86_64-efi at the removable path, no NVRAM entry" || { not_ok "both: grub-install calls:"; cat "$T/g"; }
# at once (each stub takes 1 s): both began before either ended, after
# grub-editenv made grubenv (which a grub-install would make by a rename)
sed 's/ .*//' "$root/order.log" | tr '\n' ' ' | grep -qx 'begin begin end end ' \
        && ok "both: the two grub-installs ran at once" || { not_ok "both: not at once:"; cat "$root/order.log"; }
[[ $(grep -n -m1 -E 'grub-editenv|grub-install' "$root/calls.log") == 3:/usr/bin/grub-editenv\ /boot/grub/grubenv\ create\ \|* ]] \
        && [[ -d $root/boot/grub ]] && ok "both: grub-editenv created /boot/grub/grubenv before either grub-install" \
        || { not_ok "both: calls:"; cat "$root/calls.log"; }

! grep -q grub-bios-setup "$root/calls.log" && ok "both: one boot disk, no grub-bios-setup" || not_ok "both: $(cat "$root/calls.log")"
grep -q 'grub2/force_efi_extra_removable boolean true' "$root/debconf.log" && grep -q 'grub2/update_nvram boolean false' "$root/debconf.log" \
        && ok "both: debconf keeps the removable path and NVRAM untouched on upgrades" || not_ok "debconf: $(cat "$root/debconf.log")"
grep -qx 'GRUB_CMDLINE_LINUX=""' "$root/etc/default/grub.d/kiln.cfg" && ok "both: no cmdline, no Tang: empty GRUB_CMDLINE_LINUX" \
        || not_ok "kiln.cfg: $(cat "$root/etc/default/grub.d/kiln.cfg")"

# both firmwares where /boot/grub/locale exists (a step run again): one after the other
make_root
mkdir -p "$root/boot/grub/locale"
KILN_TARGET=$root "$PROBE" boot "$SRC/templates/single-disk.yaml" "$inv" >"$T/out" 2>&1 || not_ok "both, again: $(cat "$T/out")"
sed 's/ --.*//' "$root/order.log" | tr '\n' ' ' | grep -qx 'begin end begin end ' && ! grep -q grub-editenv "$root/calls.log" \
        && grep -q '/boot/grub/locale exists: the two grub-installs run one after the other' "$T/out" \
        && ok "both, /boot/grub/locale there: one grub-install after the other, and the log says why" \
        || { not_ok "both, again:"; cat "$root/order.log" "$T/out"; }

# both firmwares, the x86_64-efi one fails (in its thread): the step fails with its line, named
make_root
touch "$root/fail-efi"
rc=0; KILN_TARGET=$root "$PROBE" boot "$SRC/templates/single-disk.yaml" "$inv" >"$T/out" 2>&1 || rc=$?
((rc == 1)) && grep -q 'grub-install x86_64-efi: grub-install: error: no EFI directory.' "$T/out" && ! grep -q update-grub "$root/calls.log" \
        && (( $(binds_left) == 0 )) && ok "failing x86_64-efi: '$(tail -1 "$T/out")', nothing after it, no bind left" \
        || not_ok "failing x86_64-efi: rc=$rc $(cat "$T/out")"

# grub-install fails on the first disk: the step stops there with its reason
make_root
touch "$root/fail-grub-install"
rc=0; KILN_TARGET=$root "$PROBE" boot "$SRC/templates/raid1-boot-raid10.yaml" "$inv" >"$T/out" 2>&1 || rc=$?
if ((rc == 1)) && grep -q 'grub-install: error: disk not found' "$T/out" && ! grep -q update-grub "$root/calls.log" &&
   (( $(grep -c grub-install "$root/calls.log") == 1 )) && (( $(binds_left) == 0 )); then
        ok "failing grub-install: stopped with '$(tail -1 "$T/out")', nothing after it, no bind left"
else not_ok "failing grub-install: rc=$rc $(cat "$T/out"); $(cat "$root/calls.log")"; fi

# grub-bios-setup fails on the second disk: the step stops there
make_root
touch "$root/fail-grub-bios-setup"
rc=0; KILN_TARGET=$root "$PROBE" boot "$SRC/templates/raid1-boot-raid10.yaml" "$inv" >"$T/out" 2>&1 || rc=$?
if ((rc == 1)) && grep -q 'grub-bios-setup: grub-bios-setup: error: disk not found' "$T/out" && ! grep -q update-grub "$root/calls.log" &&
   (( $(grep -c grub-bios-setup "$root/calls.log") == 1 )) && (( $(binds_left) == 0 )); then
        ok "failing grub-bios-setup: stopped with '$(tail -1 "$T/out")', nothing after it, no bind left"
else not_ok "failing grub-bios-setup: rc=$rc $(cat "$T/out"); $(cat "$root/calls.log")"; fi

# a marker that is not the image's: refused before any helper runs
make_root
mkdir -p "$root/usr/lib/kiln"
echo "6.1.0-57-amd64 many" >"$root/usr/lib/kiln/generic-initramfs"
rc=0; KILN_TARGET=$root "$PROBE" boot "$SRC/templates/raid1-boot-raid10.yaml" "$inv" >"$T/out" 2>&1 || rc=$?
((rc == 1)) && grep -q "/usr/lib/kiln/generic-initramfs line 1: not 'KERNEL-VERSION SIZE'" "$T/out" && [[ ! -e $root/calls.log ]] \
        && (( $(binds_left) == 0 )) && ok "a bad marker: '$(tail -1 "$T/out")', no helper ran" \
        || not_ok "bad marker: rc=$rc $(cat "$T/out"); $(cat "$root/calls.log" 2>/dev/null)"

# a target without update-grub: named
make_root
rm "$root/usr/sbin/update-grub"
rc=0; KILN_TARGET=$root "$PROBE" boot "$SRC/templates/raid1-boot-raid10.yaml" "$inv" >"$T/out" 2>&1 || rc=$?
((rc == 1)) && grep -q "cannot execute '/usr/sbin/update-grub' in $root" "$T/out" && (( $(binds_left) == 0 )) \
        && ok "missing update-grub named: $(tail -1 "$T/out")" || not_ok "missing helper: rc=$rc $(cat "$T/out")"
checks_done
