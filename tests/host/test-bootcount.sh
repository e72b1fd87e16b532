#!/bin/bash
# The installed system's boot counter (docs/reinstall.md "A boot that
# failed") and what kiln's read-only look at a finished node makes of it.
#   1. `kiln bootcount` on a plain directory as the installed root (--root:
#      no loop device, no freeze): attempt, good, show, the file's exact
#      text, a corrupt counter (show refuses it with the exact error; attempt
#      takes it as 1 failed boot and counts on), `good --network` without a
#      network (a network namespace with only lo: the exact refusal, the file
#      unchanged) and with one (a dummy interface with an address), usage
#      errors.
#   1b. The freeze: attempt on an ext4 still mounted, a copy of its disk
#      mounted ro,noload (no journal replay) shows the count.
#   2. The look (`kiln boot --no-finish --no-kexec`) over a finished install
#      on a loop disk (ext4 /boot and root, the small image, the webhook on
#      the stand-in controller): the install put the two units and kiln
#      into the target; no counter or 0: boot-installed alone; 1 of
#      failed_boot_limit 2: a boot-failed event, then boot-installed; 2 of 2:
#      boot-failed alone (action stopped), exit 9 with the exact message,
#      nothing would be kexec'd; a corrupt counter: boot-failed with why,
#      booted. The disk's sha256 is the same before and after every look.
# The host kernel has no md/dm: the look over RAID and LUKS, the units in a
# real boot and a broken boot are tests/rig/test-boot-failed.sh's.
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices and network namespaces"
skip_unless_tools losetup mkfs.ext4 findmnt jq zstd python3 sqlite3 unshare sha256sum ip
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
source "$SRC/tests/lib/loop.sh"
loop_init bootcount
source "$SRC/tests/lib/controller.sh"
source "$SRC/tests/lib/spec.sh"

# --- 1. kiln bootcount on a plain directory -----------------------------------
R=$T/root
C=$R/boot/kiln/bootcount
bc() { "$KILN" bootcount "$@" --root "$R" >"$T/bc.out" 2>"$T/bc.err"; }
TIME='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'

bc show; rc=$?
expect_eq "show without a counter: exit 0" 0 "$rc"
expect_file "show without a counter says none" "$T/bc.out" "counter $C
none"
bc attempt && bc attempt; rc=$?
expect_eq "attempt twice: exit 0" 0 "$rc"
expect_in "attempt says the count" "$T/bc.err" "boot counter '$C': 2 boot(s) began since the last good one (the last good one: never)"
[[ $(sed -n 1,3p "$C") == "# written by kiln bootcount: boots begun since the last good one (docs/reinstall.md)
version=1
attempts=2" && $(sed -n 4p "$C") =~ ^last_attempt=$TIME$ && $(wc -l <"$C") == 4 ]] \
  && ok "the counter file after two attempts" || { sed 's/^/#   /' "$C"; not_ok "the counter file after two attempts"; }
bc good; rc=$?
expect_eq "good: exit 0" 0 "$rc"
expect_in "good says what it did" "$T/bc.err" "boot counter '$C': this boot is good (2 boot(s) began since the last good one); the count is 0"
grep -q '^attempts=0$' "$C" && grep -Eq "^last_good=$TIME$" "$C" && ok "good: attempts=0 and last_good recorded" \
  || { sed 's/^/#   /' "$C"; not_ok "good did not reset the counter"; }
bc show
grep -q '^attempts 0$' "$T/bc.out" && grep -Eq "^last_good $TIME$" "$T/bc.out" && ok "show prints the counter" \
  || { cat "$T/bc.out"; not_ok "show"; }

# a corrupt counter: show refuses it; attempt counts it as one failed boot
printf 'version=1\nattempts=many\n' >"$C"
bc show; rc=$?
expect_eq "show of a corrupt counter: exit 1" 1 "$rc"
expect_file "show of a corrupt counter: the exact error" "$T/bc.err" \
  "error: boot counter '$C' is unreadable: line 2: 'attempts' is not a number: 'many'"
bc attempt; rc=$?
expect_eq "attempt over a corrupt counter: exit 0" 0 "$rc"
expect_in "attempt over a corrupt counter: the warning" "$T/bc.err" \
  "warning: boot counter '$C' is unreadable (line 2: 'attempts' is not a number: 'many'): taken as 1 boot that did not end well"
grep -q '^attempts=2$' "$C" && ok "attempt over a corrupt counter: counted on from 1 (attempts=2)" \
  || { sed 's/^/#   /' "$C"; not_ok "attempt over a corrupt counter"; }

# good --network: no network, then one
sum=$(sha256sum <"$C")
unshare --net "$KILN" bootcount good --network --root "$R" >"$T/bc.out" 2>"$T/bc.err"; rc=$?
expect_eq "good --network without a network: exit 1" 1 "$rc"
expect_file "good --network without a network: the exact refusal" "$T/bc.err" \
  "error: not marking this boot good: the network is not up (no interface but lo is up with an address); the count stays 2"
[[ $(sha256sum <"$C") == "$sum" ]] && ok "good --network without a network: the counter unchanged" || not_ok "the refused good wrote the counter"
if unshare --net sh -c 'ip link add kbc0 type dummy && ip addr add 192.0.2.7/24 dev kbc0 && ip link set kbc0 up' 2>/dev/null; then
  unshare --net sh -c 'ip link add kbc0 type dummy && ip addr add 192.0.2.7/24 dev kbc0 && ip link set kbc0 up &&
    exec "$0" bootcount good --network --root "$1"' "$KILN" "$R" >"$T/bc.out" 2>"$T/bc.err"; rc=$?
  expect_eq "good --network with an address on kbc0: exit 0" 0 "$rc"
  expect_in "good --network names the interface" "$T/bc.err" "this boot is good (network up on kbc0) (2 boot(s) began since the last good one)"
  grep -q '^attempts=0$' "$C" && ok "good --network: the count is 0" || not_ok "good --network did not reset the count"
else
  echo "# no dummy interfaces here: good --network with a network is the rig's (tests/rig/test-boot-failed.sh)"
fi

# usage
"$KILN" bootcount >"$T/bc.out" 2>"$T/bc.err"; rc=$?
expect_eq "bootcount without an action: exit 64" 64 "$rc"
expect_in "bootcount without an action: the message" "$T/bc.err" "error: kiln bootcount needs one of attempt, good, failed, show (see 'kiln bootcount --help')"
"$KILN" bootcount attempt --network --root "$R" >"$T/bc.out" 2>"$T/bc.err"; rc=$?
expect_eq "attempt --network: exit 64" 64 "$rc"
expect_in "attempt --network: the message" "$T/bc.err" "error: --network goes with 'good' only"
"$KILN" bootcount reset --root "$R" >"$T/bc.out" 2>"$T/bc.err"; rc=$?
expect_eq "an unknown action: exit 64" 64 "$rc"
expect_in "an unknown action: the message" "$T/bc.err" "error: unknown bootcount action 'reset': expected attempt, good, failed or show"

# --- 1b. the freeze: the running system's own counter (no --root) ---------------
# On an ext4 of its own (a loop device; KILN_T_BOOTCOUNT points the counter
# there): attempt freezes and thaws it, so a copy of the disk taken while it
# is still mounted (as a hard reset leaves it) shows the count to a mount
# that replays no journal (ro,noload: how kiln's look mounts /boot).
# Without the freeze (--root) such a copy showed no counter at all, tried by
# hand: the fsynced file and its rename sit in the journal until ext4
# checkpoints it (not checked here: when that happens is the kernel's).
truncate -s 32M "$T/f.img"
mkfs.ext4 -q -F "$T/f.img" || fail "mkfs.ext4"
attach "$T/f.img"
FLOOP=$ATTACHED
mkdir -p "$T/fboot" "$T/fcopy"
mount "$FLOOP" "$T/fboot" || fail "cannot mount $FLOOP"
cleanup_umount "$T/fboot"
KILN_T_BOOTCOUNT=$T/fboot/kiln/bootcount "$KILN" bootcount attempt >"$T/bc.out" 2>"$T/bc.err"; rc=$?
expect_eq "attempt on a mounted ext4 (frozen, thawed): exit 0" 0 "$rc"
expect_not_in "attempt: no freeze warning" "$T/bc.err" "cannot freeze"
echo thawed >"$T/fboot/probe" && ok "the filesystem is thawed (a write goes through)" || not_ok "the filesystem is still frozen"
rm -f "$T/fboot/probe"
cp --sparse=always "$T/f.img" "$T/fcopy.img"     # while mounted: a reset's view of the disk
mount -o ro,noload "$T/fcopy.img" "$T/fcopy" || fail "cannot mount the copy ro,noload"
cleanup_umount "$T/fcopy"
grep -q '^attempts=1$' "$T/fcopy/kiln/bootcount" 2>/dev/null \
  && ok "a copy taken while mounted, mounted ro,noload (no journal replay), shows attempts=1" \
  || { cat "$T/fcopy/kiln/bootcount" 2>&1 | sed 's/^/#   /'; not_ok "the ro,noload copy does not show the count"; }
umount "$T/fcopy" "$T/fboot"

# --- 2. the look over a finished install --------------------------------------
small_image_served
controller_start "$T/ctl" || exit 1
HMAC_KEY=$(controller_key hmac_key)
truncate -s 256M "$T/a.img"
attach "$T/a.img"
LOOP=$ATTACHED
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"
write_spec() { # LIMIT-LINE
  spec_write "$T/www/spec.yaml" boot-root image register-webhook finish -- \
    HOSTNAME=kiln-bootcount-test DISK="$LOOP" IMAGE_URL="http://127.0.0.1:$HTTP_PORT/small.tar.zst" \
    IMAGE_SHA256="$SMALL_SUM" CTL="$CTL" HMAC_KEY="$HMAC_KEY" FINISH=none
  [[ -n $1 ]] && echo "$1" >>"$T/www/spec.yaml"
}
write_spec "failed_boot_limit: 2"
echo "kiln.spec=http://127.0.0.1:$HTTP_PORT/spec.yaml" >"$T/cmdline"
"$KILN" boot --no-finish --cmdline "$T/cmdline" >"$T/install.log" 2>&1; rc=$?
expect_eq "the install: exit 0" 0 "$rc" || tail -20 "$T/install.log"
U=$T/target/etc/systemd/system
[[ -f $U/kiln-bootcount-attempt.service && $(readlink "$U/sysinit.target.wants/kiln-bootcount-attempt.service") == /etc/systemd/system/kiln-bootcount-attempt.service ]] \
  && ok "the install enabled kiln-bootcount-attempt.service in sysinit.target" || not_ok "no kiln-bootcount-attempt.service in the target"
grep -qx 'DefaultDependencies=no' "$U/kiln-bootcount-attempt.service" && grep -qx 'RequiresMountsFor=/boot/kiln' "$U/kiln-bootcount-attempt.service" \
  && grep -qx 'ExecStart=/usr/local/sbin/kiln bootcount attempt' "$U/kiln-bootcount-attempt.service" \
  && ok "the attempt unit: no default dependencies, needs /boot/kiln, runs kiln bootcount attempt" || { sed 's/^/#   /' "$U/kiln-bootcount-attempt.service"; not_ok "the attempt unit"; }
[[ $(readlink "$U/multi-user.target.wants/kiln-bootcount-good.service") == /etc/systemd/system/kiln-bootcount-good.service ]] \
  && grep -qx 'After=multi-user.target' "$U/kiln-bootcount-good.service" && grep -qx 'ExecStart=/usr/local/sbin/kiln bootcount good' "$U/kiln-bootcount-good.service" \
  && ok "the good unit: after multi-user.target, no --network (the spec has no network)" || { sed 's/^/#   /' "$U/kiln-bootcount-good.service"; not_ok "the good unit"; }
[[ -x $T/target/usr/local/sbin/kiln ]] && ok "kiln is in the target (/usr/local/sbin/kiln)" || not_ok "no kiln in the target"
[[ ! -e $T/target/boot/kiln/bootcount ]] && ok "the install leaves no counter (the first boot makes it)" || not_ok "the install wrote a counter"
# a kernel and initrd for the look to find, as in test-boot-finish.sh
echo k >"$T/target/boot/vmlinuz-t" && echo i >"$T/target/boot/initrd.img-t"
ln -sfn boot/vmlinuz-t "$T/target/vmlinuz"; ln -sfn boot/initrd.img-t "$T/target/initrd.img"
umount -R "$T/target" || fail "cannot unmount the target"

# counter ACTION...: `kiln bootcount ACTION` on the installed system (mounted rw, then unmounted)
counter() {
  mount "${LOOP}p2" "$T/target" && mount "${LOOP}p1" "$T/target/boot" || fail "cannot mount the installed system"
  "$KILN" bootcount "$@" --root "$T/target" >/dev/null 2>&1 || not_ok "kiln bootcount $* on the installed system"
  umount -R "$T/target"
}
# look NAME WANT_RC: kiln boot --no-finish --no-kexec over the finished
# install; the webhook events it sent in EVENTS, its stdout and stderr in
# $T/out, $T/err; checks the exit status and that the disk is unchanged
look() {
  local sum before
  sync; sum=$(sha256sum <"$T/a.img")
  before=$(controller_sql "SELECT coalesce(max(id), 0) FROM events")
  rm -f "$T/run"/*.json "$T/run/finish"
  "$KILN" boot --no-finish --no-kexec --cmdline "$T/cmdline" >"$T/out" 2>"$T/err"; rc=$?
  [[ $rc == "$2" ]] && ok "$1: exit $2" || { tail -5 "$T/err"; not_ok "$1: exit $rc, expected $2"; }
  EVENTS=$(controller_sql "SELECT type FROM events WHERE id > $before ORDER BY id" | tr '\n' ' ')
  LAST_FAILED=$(controller_sql "SELECT body FROM events WHERE id > $before AND type = 'boot-failed' ORDER BY id DESC LIMIT 1")
  sync; [[ $(sha256sum <"$T/a.img") == "$sum" ]] && ok "$1: the disk's sha256 unchanged" || not_ok "$1: the look changed the disk"
  findmnt "$T/target" >/dev/null && not_ok "$1: the look left the target mounted"
}
would='^boot-installed: would kexec /vmlinuz -> boot/vmlinuz-t with /initrd.img -> boot/initrd.img-t'

look "no counter" 0
expect_eq "no counter: boot-installed alone" "boot-installed " "$EVENTS"
grep -q "$would" "$T/out" && ok "no counter: it would kexec" || not_ok "no counter: nothing would be kexec'd"

counter attempt
counter good
look "count 0 (the last boot was good)" 0
expect_eq "count 0: boot-installed alone" "boot-installed " "$EVENTS"

counter attempt
look "1 failed boot, failed_boot_limit 2" 0
expect_eq "1 of 2: boot-failed, then boot-installed" "boot-failed boot-installed " "$EVENTS"
jq -e '.failed_boots == 1 and .failed_boot_limit == 2 and .action == "boot" and .counter == "/boot/kiln/bootcount"
       and (.last_good | test("^[0-9-]+T[0-9:]+Z$")) and (.fingerprint | test("^[0-9a-f]{64}$"))' <<<"$LAST_FAILED" >/dev/null \
  && ok "1 of 2: the boot-failed event carries the count, the limit and the last good boot" || not_ok "1 of 2: boot-failed event: $LAST_FAILED"
expect_in "1 of 2: the warning" "$T/err" "warning: the installed system of 'http://127.0.0.1:$HTTP_PORT/spec.yaml' failed to boot 1 time(s) in a row (failed_boot_limit 2; the last good boot: "
grep -q "$would" "$T/out" && ok "1 of 2: it would kexec" || not_ok "1 of 2: nothing would be kexec'd"
[[ -f $T/run/boot-failed.json ]] && ok "1 of 2: RUN_DIR/boot-failed.json (for /init's report)" || not_ok "1 of 2: no RUN_DIR/boot-failed.json"

counter attempt
look "2 failed boots, failed_boot_limit 2" 9
expect_eq "2 of 2: boot-failed alone" "boot-failed " "$EVENTS"
jq -e '.failed_boots == 2 and .failed_boot_limit == 2 and .action == "stopped"' <<<"$LAST_FAILED" >/dev/null \
  && ok "2 of 2: the boot-failed event says stopped" || not_ok "2 of 2: boot-failed event: $LAST_FAILED"
grep -Eq "(^|\] )error: not booting the installed system of 'http://127.0.0.1:$HTTP_PORT/spec.yaml': 2 boot\(s\) in a row did not get far enough \(failed_boot_limit 2; the last good boot: $TIME\); nothing was written; an operator decides \(docs/reinstall.md \"A boot that failed\"\)$" "$T/err" \
  && ok "2 of 2: the exact message" || { cat "$T/err"; not_ok "2 of 2: the message"; }
[[ ! -s $T/out ]] && ok "2 of 2: nothing would be kexec'd" || { cat "$T/out"; not_ok "2 of 2: stdout"; }
[[ ! -e $T/run/finish ]] && ok "2 of 2: no finish for /init" || not_ok "2 of 2: a finish was written"

# the default limit (3) from a spec without failed_boot_limit: 2 boots it again
write_spec ""
look "2 failed boots, the default failed_boot_limit 3" 0
expect_eq "2 of 3: boot-failed, then boot-installed" "boot-failed boot-installed " "$EVENTS"
jq -e '.failed_boot_limit == 3' <<<"$LAST_FAILED" >/dev/null && ok "2 of 3: the default limit is 3" || not_ok "2 of 3: $LAST_FAILED"

# a corrupt counter: reported, booted
mount "${LOOP}p2" "$T/target" && mount "${LOOP}p1" "$T/target/boot" && printf 'versio\n' >"$T/target/boot/kiln/bootcount"; umount -R "$T/target"
look "a corrupt counter" 0
expect_eq "a corrupt counter: boot-failed, then boot-installed" "boot-failed boot-installed " "$EVENTS"
jq -e '.failed_boots == 1 and .counter_unreadable == "line 1: expected key=value" and .last_good == null' <<<"$LAST_FAILED" >/dev/null \
  && ok "a corrupt counter: taken as 1 failed boot, the event says why" || not_ok "a corrupt counter: $LAST_FAILED"
expect_in "a corrupt counter: the warning" "$T/err" \
  "warning: the installed system's boot counter '/boot/kiln/bootcount' is unreadable (line 1: expected key=value): taken as 1 boot that did not end well"

# a dry run decides the same and sends nothing
counter attempt; counter attempt; counter attempt     # 4: the corrupt counter counts as 1
before=$(controller_sql "SELECT coalesce(max(id), 0) FROM events")
"$KILN" boot --dry-run --cmdline "$T/cmdline" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "dry run at the limit: exit 9" 9 "$rc"
expect_eq "dry run: no event" "" "$(controller_sql "SELECT type FROM events WHERE id > $before")"
checks_done
