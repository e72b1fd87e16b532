#!/bin/bash
# Resume after a failure, on a real loop disk with a real nginx (no md/dm on
# this kernel, so a plain GPT + ext4 spec): the first `kiln apply` fails at
# the image (404) after the storage is built; the second resumes: partition
# and filesystem UUIDs unchanged, a half-written root emptied, the image
# installed, the report says resumed. A run over a finished install is a
# fresh install (UUIDs change), and so is `--fresh` over an interrupted one
# (and `kiln boot` with kiln.fresh on the kernel command line, dry run).
# A spec without 'wipe: true' resumes an interrupted run and refuses the rest.
# A raw image (image.format raw onto a partition) beside a root filesystem
# resumes too and is written onto its partition.
# Assertions read the disk (blkid), the target tree and the saved report.
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup blkid mkfs.ext4 findmnt jq zstd
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
source "$SRC/tests/lib/loop.sh"
loop_init resume
source "$SRC/tests/lib/spec.sh"

small_image
mkdir -p "$T/www"
http_start "$T/www"
truncate -s 512M "$T/a.img"
attach "$T/a.img"; LOOP=$ATTACHED
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"
spec_write "$T/spec.yaml" boot-root image finish -- HOSTNAME=kiln-resume-test DISK="$LOOP" \
  IMAGE_URL="http://127.0.0.1:$HTTP_PORT/small.tar.zst" IMAGE_SHA256="$SMALL_SUM" FINISH=none
uuids() { for p in 1 2; do blkid -o value -s PARTUUID "${LOOP}p$p"; blkid -o value -s UUID "${LOOP}p$p"; done; }
report() { jq -r "$@" "$T/run/report.json"; }
apply() { # want_rc args...: kiln apply --yes args $T/spec.yaml, output in $T/out
  expect_kiln "$1" "$T/out" apply --yes "${@:2}" "$T/spec.yaml"
}

# 1. the first boot: storage built, the image is not there (404): exit 5
apply 5
grep -q "404" "$T/out" || not_ok "the failure does not name the 404: $(tail -3 "$T/out")"
rec="$T/target/var/lib/kiln/progress.json"
[[ -f $rec ]] || not_ok "no progress record after the storage"
[[ $(jq -c .stages_done "$rec") == '["storage"]' && $(jq .complete "$rec") == false ]] \
  || not_ok "progress record: $(cat "$rec")"
[[ $(report .resumed) == false ]] || not_ok "first run's report says resumed: $(report .resumed)"
[[ $(blkid -p -s PTUUID -o value "$LOOP") != 6b696c6e-f15d-* ]] \
  || not_ok "the interrupted run left the finished-install mark: $(blkid -p -s PTUUID -o value "$LOOP")"
BEFORE=$(uuids)
[[ $(wc -w <<<"$BEFORE") == 4 ]] || not_ok "expected 2 PARTUUIDs and 2 UUIDs, got: $BEFORE"
# a half-written root, as an interrupted image leaves it
mkdir -p "$T/target/usr/half" && echo partial >"$T/target/usr/half/file"
recfp=$(jq -r .fingerprint "$rec")
umount -R "$T/target"   # the node reboots
fp=$("$KILN" plan "$T/spec.yaml" 2>/dev/null | sed -n 's/^fingerprint: //p')
[[ -n $fp && $recfp == "$fp" ]] || not_ok "record fingerprint $recfp is not the plan's '$fp'"

# 2. the plan of the second boot says resume, and a dry run shows what it keeps
out=$("$KILN" plan "$T/spec.yaml" 2>&1) || not_ok "kiln plan failed: $out"
grep -q '^mode: resume' <<<"$out" || not_ok "plan does not say resume: $(head -3 <<<"$out")"
grep -q 'resume-check' <<<"$out" && grep -q 'skip-stage .*keep the filesystem' <<<"$out" \
  || not_ok "plan lacks resume-check / skip-stage: $out"
grep -Eq '^ *[0-9]+  (wipe|partition|mkfs) ' <<<"$out" && not_ok "resume plan wipes, partitions or makes filesystems: $out"
out=$("$KILN" apply --dry-run "$T/spec.yaml" 2>&1) || not_ok "dry run failed: $out"
grep -q '^mode: resume' <<<"$out" || not_ok "dry run does not say resume: $out"
out=$("$KILN" plan --fresh "$T/spec.yaml" 2>&1)
grep -q '^mode: fresh install (asked for' <<<"$out" || not_ok "plan --fresh does not say fresh: $(head -3 <<<"$out")"
# kiln.fresh on the kernel command line (kiln boot --dry-run: fetch, plan, no writes)
cp "$T/spec.yaml" "$T/www/spec.yaml"
boot_mode() { # cmdline words -> kiln boot's mode line, or its error
  echo "kiln.spec=http://127.0.0.1:$HTTP_PORT/spec.yaml $*" >"$T/cmdline"
  "$KILN" boot --cmdline "$T/cmdline" --dry-run >"$T/bout" 2>&1; echo "rc=$?"
  grep -E '^mode: |invalid kernel command line' "$T/bout"
}
out=$(boot_mode quiet)
grep -q '^mode: resume' <<<"$out" || not_ok "kiln boot without kiln.fresh does not resume: $out"
for w in kiln.fresh kiln.fresh=1 kiln.fresh=yes kiln.fresh=on; do
  out=$(boot_mode "$w")
  grep -q '^mode: fresh install (asked for: --fresh or kiln.fresh)' <<<"$out" || not_ok "kiln boot with $w: $out"
done
out=$(boot_mode "kiln.fresh kiln.fresh=no")
grep -q '^mode: resume' <<<"$out" || not_ok "kiln boot with kiln.fresh=no last does not resume: $out"
out=$(boot_mode kiln.fresh=maybe)
[[ $out == "rc=64"*"invalid kernel command line option 'kiln.fresh=maybe' in '$T/cmdline'" ]] \
  || not_ok "kiln boot with kiln.fresh=maybe: $out"
[[ $(uuids) == "$BEFORE" ]] || not_ok "plan or dry run changed the disk"

# 3. the second boot, image served: resumes
cp "$SMALL_DIR/small.tar.zst" "$T/www/"
apply 0
[[ $(uuids) == "$BEFORE" ]] && ok "partition and filesystem UUIDs kept" || not_ok "UUIDs changed: $BEFORE -> $(uuids)"
[[ -e $T/target/usr/half ]] && not_ok "the half-written root was not emptied"
# the image as built, except what configure writes afterwards (etc, the kiln
# record, and usr's mtime: /usr/local/sbin/kiln for the boot counter's units)
sh "$SRC/initramfs/base-image/check-manifest.sh" "$T/target" "$SMALL_DIR/small.manifest" >"$T/man"
grep -Ev '^manifest mismatch: (etc|etc/hostname|etc/fstab|var/lib/kiln): |^manifest mismatch: usr: mtime |^manifest: [0-9]+ mismatch' "$T/man" >"$T/man.rest"
[[ -s $T/man && ! -s $T/man.rest ]] || not_ok "image not installed as built: $(head -5 "$T/man.rest")"
[[ -e $T/target/etc/hostname ]] || not_ok "no /etc/hostname"
[[ $(report .resumed) == true ]] || not_ok "report does not say resumed: $(report .resume)"
[[ $(report -c .resume.stages_skipped) == '["storage"]' ]] || not_ok "report stages_skipped: $(report -c .resume)"
[[ $(report ".resume.kept[\"fs ${LOOP}p2\"]") == $(blkid -o value -s UUID "${LOOP}p2") ]] \
  || not_ok "report does not list the kept root UUID: $(report -c .resume.kept)"
for p in 1 2; do
  [[ $(report ".resume.kept[\"partition ${LOOP}p$p\"]") == $(blkid -o value -s PARTUUID "${LOOP}p$p") ]] \
    || not_ok "report does not list the kept PARTUUID of ${LOOP}p$p: $(report -c .resume.kept)"
done
[[ $(report .result) == success || $(report .result) == SUCCESS ]] || not_ok "report result $(report .result)"
[[ $(jq .complete "$rec") == true && $(jq -c .stages_done "$rec") == '["storage","image","configure"]' ]] \
  || not_ok "progress record after the resumed run: $(cat "$rec")"
grep -q "UUID=$(blkid -o value -s UUID "${LOOP}p2") / ext4" "$T/target/etc/fstab" || not_ok "fstab not written"
[[ $(blkid -p -s PTUUID -o value "$LOOP") =~ ^6b696c6e-f15d-8100- ]] \
  || not_ok "the resumed run that finished left no finished-install mark: $(blkid -p -s PTUUID -o value "$LOOP")"
((FAILS == 0)) && ok "second run resumed (and marked the disk as a finished install)"
umount -R "$T/target"

# 4. kiln boot over a finished install (docs/reinstall.md): looked at
# read-only (the disk's sha256 unchanged), boot-installed (--no-kexec says
# what it would boot), kiln.fresh changes nothing, another plan is refused
# (exit 3), a new reinstall token installs fresh and is recorded, the same
# token again (on the command line or in the spec) boots it
fake_kernel() {  # an installed kernel and initrd, as Debian links them (/vmlinuz -> boot/...)
  mount "${LOOP}p2" "$T/target" && mount "${LOOP}p1" "$T/target/boot" || not_ok "cannot mount the finished install"
  echo kernel >"$T/target/boot/vmlinuz-6.1.0-test" && echo initrd >"$T/target/boot/initrd.img-6.1.0-test"
  ln -sfn boot/vmlinuz-6.1.0-test "$T/target/vmlinuz" && ln -sfn boot/initrd.img-6.1.0-test "$T/target/initrd.img"
  umount -R "$T/target"
}
disk_sum() { sync; sha256sum <"$T/a.img"; }
boot_noexec() {  # want_rc spec-file cmdline-words...: kiln boot --no-kexec, output in $T/bout, $T/berr
  local want=$1 spec=$2; shift 2
  cp "$spec" "$T/www/spec.yaml"
  echo "kiln.spec=http://127.0.0.1:$HTTP_PORT/spec.yaml $*" >"$T/cmdline"
  rm -rf "$T/run"
  "$KILN" boot --cmdline "$T/cmdline" --no-kexec >"$T/bout" 2>"$T/berr"; local rc=$?
  [[ $rc == "$want" ]] || { tail -5 "$T/berr"; not_ok "kiln boot $* exited $rc, expected $want"; }
}
fake_kernel
SUM=$(disk_sum)
root_uuid=$(blkid -o value -s UUID "${LOOP}p2")
want="boot-installed: would kexec /vmlinuz -> boot/vmlinuz-6.1.0-test with /initrd.img -> boot/initrd.img-6.1.0-test, command line 'root=UUID=$root_uuid ro' (--no-kexec)"
boot_noexec 0 "$T/spec.yaml"
[[ $(cat "$T/bout") == "$want" ]] && ok "kiln boot over a finished install: boot-installed" || not_ok "boot-installed: $(cat "$T/bout")"
grep -q "looking read-only: mount ${LOOP}p2" "$T/berr" || not_ok "kiln boot did not look at the root: $(tail -3 "$T/berr")"
[[ $(jq -r .kernel "$T/run/boot-installed.json") == "/vmlinuz -> boot/vmlinuz-6.1.0-test" ]] \
  || not_ok "RUN_DIR/boot-installed.json: $(cat "$T/run/boot-installed.json")"
[[ ! -e $T/run/report.json ]] || not_ok "boot-installed ran a run (report.json written)"
findmnt -rn -o TARGET | grep -q "^$T/target" && not_ok "kiln boot left the finished install mounted"
[[ $(disk_sum) == "$SUM" ]] && ok "boot-installed: the disk's sha256 unchanged" || not_ok "looking at a finished install changed the disk"
boot_noexec 0 "$T/spec.yaml" kiln.fresh
[[ $(cat "$T/bout") == "$want" ]] || not_ok "kiln.fresh over a finished install: $(cat "$T/bout")"
[[ $(disk_sum) == "$SUM" ]] || not_ok "kiln.fresh over a finished install changed the disk"
# another plan (another root label: the same layout to the inventory): refused, nothing written
sed 's/label: root,/label: root2,/' "$T/spec.yaml" >"$T/other.yaml"
otherfp=$("$KILN" plan "$T/other.yaml" 2>/dev/null | sed -n 's/^fingerprint: //p')
boot_noexec 3 "$T/other.yaml"
want3="error: refusing to apply 'http://127.0.0.1:$HTTP_PORT/spec.yaml' on $LOOP: the disks hold a finished install of another plan ($recfp), this spec makes plan $otherfp, and no new reinstall token was given (none); nothing was written; to reinstall on purpose, boot with kiln.reinstall=NEW-TOKEN or give the spec a new 'reinstall:' (docs/reinstall.md)"
grep -qxF "$want3" <(sed 's/^\[ *[0-9.]*\] //' "$T/berr") && ok "another plan over a finished install: refused (exit 3)" \
  || not_ok "another plan: $(tail -2 "$T/berr")"
[[ $(disk_sum) == "$SUM" ]] || not_ok "the refused plan changed the disk"
# a spec that may not wipe, with a new token: refused, nothing written
sed 's/wipe: true/wipe: false/' "$T/spec.yaml" >"$T/nowipe0.yaml"
boot_noexec 3 "$T/nowipe0.yaml" kiln.reinstall=lab-0
grep -q "refusing to reinstall '.*' on $LOOP: .*, but the spec does not allow wiping these disks (wipe: true); nothing was written" "$T/berr" \
  || not_ok "wipe: false with a new token: $(tail -2 "$T/berr")"
[[ $(disk_sum) == "$SUM" ]] || not_ok "wipe: false with a new token changed the disk"
# the operator's act: a new token installs fresh and is recorded
UUIDS=$(uuids)
boot_noexec 0 "$T/spec.yaml" kiln.reinstall=lab-1
[[ $(uuids) != "$UUIDS" ]] && ok "kiln.reinstall=lab-1: fresh install" || not_ok "kiln.reinstall= did not install fresh (UUIDs unchanged)"
grep -q "reinstall: the disks hold a finished install of this plan (${recfp:0:12}), and the reinstall token 'lab-1' is not the one it was installed with (none)" "$T/berr" \
  || not_ok "no reinstall reason: $(grep -i reinstall "$T/berr" | tail -2)"
[[ $(jq -r .reinstall "$rec") == lab-1 && $(jq .complete "$rec") == true ]] || not_ok "the record lacks the token: $(cat "$rec")"
umount -R "$T/target"
# the same token again (the boot server still sends it), or in the spec: boot-installed
fake_kernel
SUM=$(disk_sum)
boot_noexec 0 "$T/spec.yaml" kiln.reinstall=lab-1
grep -q "^boot-installed: would kexec" "$T/bout" || not_ok "the same token again: $(cat "$T/bout") $(tail -2 "$T/berr")"
sed 's/^version: 1$/version: 1\nreinstall: lab-1/' "$T/spec.yaml" >"$T/tok.yaml"
boot_noexec 0 "$T/tok.yaml"
grep -q "^boot-installed: would kexec" "$T/bout" || not_ok "the spec's reinstall: lab-1: $(cat "$T/bout") $(tail -2 "$T/berr")"
[[ $(disk_sum) == "$SUM" ]] && ok "the same token again: boot-installed, the disk unchanged" || not_ok "the same token changed the disk"

# 4b. kiln apply --yes is the operator's own act: over a finished install it installs fresh
apply 0
AFTER=$(uuids)
[[ $AFTER != "$BEFORE" ]] && ok "finished install: fresh install" || not_ok "a finished install was resumed (UUIDs unchanged)"
[[ $(report .resumed) == false ]] || not_ok "report says resumed after a finished install"
grep -q 'finished' <<<"$(report .resume.fresh_because)" || not_ok "report does not say why fresh: $(report -c .resume)"
umount -R "$T/target"

# 5. interrupted again, then --fresh: everything is made again
rm "$T/www/small.tar.zst"
apply 5
umount -R "$T/target"
BEFORE=$(uuids)
cp "$SMALL_DIR/small.tar.zst" "$T/www/"
apply 0 --fresh
AFTER=$(uuids)
for i in 1 2 3 4; do
  [[ $(sed -n ${i}p <<<"$BEFORE") != $(sed -n ${i}p <<<"$AFTER") ]] || not_ok "--fresh kept identifier $i: $(sed -n ${i}p <<<"$AFTER")"
done
[[ $(report .resumed) == false ]] || not_ok "--fresh run's report says resumed"
((FAILS == 0)) && ok "--fresh re-created everything"

umount -R "$T/target"

# 6. a spec without 'wipe: true' (the same plan otherwise) over those disks:
# over the finished install it refuses and changes nothing; over an
# interrupted run it resumes
sed 's/wipe: true/wipe: false/' "$T/spec.yaml" >"$T/nowipe.yaml"
BEFORE=$(uuids)
"$KILN" apply --yes "$T/nowipe.yaml" >"$T/out" 2>&1; rc=$?
[[ $rc == 4 ]] || not_ok "wipe: false over a finished install exited $rc, expected 4: $(tail -3 "$T/out")"
grep -q 'the progress record says that run finished' "$T/out" || not_ok "no reason given: $(tail -3 "$T/out")"
[[ $(uuids) == "$BEFORE" ]] || not_ok "wipe: false over a finished install changed the disk"
umount -R "$T/target" 2>/dev/null
rm "$T/www/small.tar.zst"
apply 5                 # wipe: true, interrupted again
umount -R "$T/target"
BEFORE=$(uuids)
cp "$SMALL_DIR/small.tar.zst" "$T/www/"
# its progress record with data after the JSON document is not resumable:
# wipe: false refuses, names the record, changes nothing; then put it back
mkdir -p "$T/mnt"
mount "${LOOP}p2" "$T/mnt" || not_ok "cannot mount the root to edit the progress record"
recsize=$(stat -c %s "$T/mnt/var/lib/kiln/progress.json")
printf '\n{"kiln_progress": 1}' >>"$T/mnt/var/lib/kiln/progress.json"
umount "$T/mnt"
"$KILN" apply --yes "$T/nowipe.yaml" >"$T/out" 2>&1; rc=$?
[[ $rc == 4 ]] || not_ok "wipe: false over a record with data after it exited $rc, expected 4: $(tail -3 "$T/out")"
grep -q "progress record '[^']*/var/lib/kiln/progress.json' has data after its JSON document" "$T/out" \
  || not_ok "no reason given for the record with data after it: $(tail -3 "$T/out")"
[[ $(uuids) == "$BEFORE" ]] || not_ok "wipe: false over a record with data after it changed the disk"
umount -R "$T/target" 2>/dev/null
mount "${LOOP}p2" "$T/mnt" || not_ok "cannot mount the root to restore the progress record"
truncate -s "$recsize" "$T/mnt/var/lib/kiln/progress.json"
umount "$T/mnt"
out=$("$KILN" plan "$T/nowipe.yaml" 2>&1) || not_ok "plan of the wipe: false spec refused: $out"
grep -q '^mode: resume (.*does not allow wiping' <<<"$out" || not_ok "plan does not say resume: $(head -3 <<<"$out")"
"$KILN" apply --yes "$T/nowipe.yaml" >"$T/out" 2>&1 || not_ok "wipe: false resume failed: $(tail -3 "$T/out")"
[[ $(uuids) == "$BEFORE" && $(report .resumed) == true ]] && ok "wipe: false resumes an interrupted run" \
  || not_ok "wipe: false did not resume (resumed: $(report .resumed))"

umount -R "$T/target"

# 7. a raw image (image.format raw onto a partition) beside an ext4 root: the
# first run fails at the image (404), the second resumes, keeps the GPT and
# the root filesystem, writes the raw image onto its partition
head -c 3M /dev/urandom >"$T/vm.raw"
zstd -q -3 "$T/vm.raw" -o "$T/vm.raw.zst"
spec_write "$T/raw.yaml" root-raw finish -- HOSTNAME=kiln-resume-raw DISK="$LOOP" \
  IMAGE_URL="http://127.0.0.1:$HTTP_PORT/vm.raw.zst" IMAGE_SHA256="$(sha256sum <"$T/vm.raw.zst" | cut -d' ' -f1)" FINISH=none
"$KILN" apply --yes "$T/raw.yaml" >"$T/out" 2>&1; rc=$?
[[ $rc == 5 ]] || not_ok "raw image spec, image missing: exit $rc, expected 5: $(tail -3 "$T/out")"
umount -R "$T/target"
BEFORE=$(for p in 1 2; do blkid -o value -s PARTUUID "${LOOP}p$p"; done; blkid -o value -s UUID "${LOOP}p1")
out=$("$KILN" plan "$T/raw.yaml" 2>&1)
grep -q '^mode: resume' <<<"$out" || not_ok "raw image spec: plan does not say resume: $(head -3 <<<"$out")"
grep -Eq "image .*${LOOP}p2.*unless the progress record says 'image' is done" <<<"$out" && ! grep -q 'root is emptied' <<<"$out" \
  || not_ok "raw image spec: the resume plan's image step: $(grep ' image ' <<<"$out")"
cp "$T/vm.raw.zst" "$T/www/"
"$KILN" apply --yes "$T/raw.yaml" >"$T/out" 2>&1 || not_ok "raw image spec: resumed run failed: $(tail -3 "$T/out")"
AFTER=$(for p in 1 2; do blkid -o value -s PARTUUID "${LOOP}p$p"; done; blkid -o value -s UUID "${LOOP}p1")
[[ $(report .resumed) == true && $AFTER == "$BEFORE" ]] && ok "raw image spec: resumed, GPT and root kept" \
  || not_ok "raw image spec: resumed $(report .resumed), identifiers $BEFORE -> $AFTER"
cmp -n "$(stat -c %s "$T/vm.raw")" "$T/vm.raw" "${LOOP}p2" && ok "raw image spec: the image is on its partition" \
  || not_ok "raw image spec: ${LOOP}p2 does not hold the raw image"

checks_done
