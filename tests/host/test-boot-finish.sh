#!/bin/bash
# `kiln boot` does the spec's finish itself (without --no-finish) only after
# every stage has ended: each stage-begin the webhook gets has exactly one
# stage-end, the finish stage's too, and the saved report has every stage
# ended, before the reboot. The reboot is real: kiln runs as PID 1 of its own
# PID namespace, where reboot(2) ends that namespace (the caller sees the
# init die of SIGHUP for a reboot, SIGINT for a power-off) and nothing else.
# With --no-finish the finish goes to RUN_DIR/finish and kiln exits 0, with
# the same events. On a real loop disk, the spec and image served by nginx,
# the events taken by the stand-in controller.
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup mkfs.ext4 findmnt jq zstd python3 sqlite3 unshare blkid sfdisk sha256sum lsblk
# Never run kiln's reboot outside a PID namespace of its own.
[[ $(unshare --pid --fork sh -c 'echo $$' 2>/dev/null) == 1 ]] || { echo "SKIP: cannot make a PID namespace"; exit 77; }
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
source "$SRC/tests/lib/loop.sh"
loop_init boot-finish
source "$SRC/tests/lib/controller.sh"
source "$SRC/tests/lib/spec.sh"

small_image_served
controller_start "$T/ctl" || exit 1
HMAC_KEY=$(controller_key hmac_key)
truncate -s 256M "$T/a.img"
attach "$T/a.img"
LOOP=$ATTACHED
truncate -s 64M "$T/b.img"     # blank, in the inventory; only step 5 puts a spec on it
attach "$T/b.img"
LOOPB=$ATTACHED
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

# what every spec of this test has besides its layout: the small image,
# the webhook on the stand-in controller
TAIL=(IMAGE_URL="http://127.0.0.1:$HTTP_PORT/small.tar.zst" IMAGE_SHA256="$SMALL_SUM" CTL="$CTL" HMAC_KEY="$HMAC_KEY")
finish_spec() { # FINISH
  spec_write "$T/www/spec.yaml" root-disk image register-webhook finish -- \
    HOSTNAME=kiln-finish-test DISK="$LOOP" "${TAIL[@]}" FINISH="$1"
}
# each run over the same disk is a reinstall: a new token every time
# (a finished node is otherwise booted, docs/reinstall.md; step 4)
N=0
new_token() { N=$((N + 1)); echo "kiln.spec=http://127.0.0.1:$HTTP_PORT/spec.yaml kiln.reinstall=finish-test-$N" >"$T/cmdline"; }

# stage events of the last run, one "TYPE STAGE" line each, in order
run_events() {
  local run
  run=$(controller_sql "SELECT run_id FROM events ORDER BY id DESC LIMIT 1")
  controller_sql "SELECT type || ' ' || json_extract(body, '\$.stage') FROM events WHERE run_id = '$run' AND type LIKE 'stage-%' ORDER BY id" >"$T/events"
}
check_events() { # WHAT
  run_events
  local begins ends
  begins=$(sed -n 's/^stage-begin //p' "$T/events" | sort)
  ends=$(sed -n 's/^stage-end //p' "$T/events" | sort)
  [[ -n $begins ]] || { not_ok "$1: the webhook got no stage events"; return; }
  [[ $begins == "$ends" ]] && ok "$1: every stage-begin has one stage-end ($(wc -l <<<"$begins") stages)" \
    || not_ok "$1: stage-begin and stage-end differ: $(diff <(echo "$begins") <(echo "$ends") | grep '^[<>]' | tr '\n' ' ')"
  [[ $(tail -1 "$T/events") == "stage-end finish" ]] || not_ok "$1: the last stage event is not the finish's end: $(tail -2 "$T/events" | tr '\n' ' ')"
  jq -e '[.stages[] | select(.finished == null)] | length == 0' "$T/run/report.json" >/dev/null \
    || not_ok "$1: the saved report has open stages: $(jq -c '[.stages[] | select(.finished == null) | .name]' "$T/run/report.json")"
  jq -e '[.stages[] | select(.name == "finish" and .result == "SUCCESS")] | length == 1' "$T/run/report.json" >/dev/null \
    || not_ok "$1: the saved report has no successful finish stage: $(jq -c '[.stages[] | .name + " " + (.result // "-")]' "$T/run/report.json")"
}

# kiln boot as PID 1 of a new PID namespace; want: its exit status as the
# shell sees it (128 + the signal the namespace's init died of)
boot_in_pidns() { # FINISH WANT_RC
  finish_spec "$1"
  new_token
  umount -R "$T/target" 2>/dev/null
  unshare --pid --fork sh -c '[ "$$" = 1 ] || exit 99; exec "$0" boot --cmdline "$1"' "$KILN" "$T/cmdline" >"$T/out" 2>&1
  local rc=$?
  [[ $rc == "$2" ]] && ok "kiln boot did the $1 (exit status $rc)" \
    || { cat "$T/out"; not_ok "kiln boot with finish: $1 exited $rc, expected $2"; }
  check_events "finish: $1"
  findmnt "$T/target" >/dev/null && not_ok "finish: $1: the target is still mounted"
}

# 1. without --no-finish: kiln reboots (SIGHUP) or powers off (SIGINT) once every stage has ended
boot_in_pidns reboot 129
boot_in_pidns poweroff 130

# 3. --no-finish (what /init runs): the finish is written down, kiln exits 0
finish_spec reboot
new_token
umount -R "$T/target" 2>/dev/null
"$KILN" boot --no-finish --cmdline "$T/cmdline" >"$T/out" 2>&1
rc=$?
[[ $rc == 0 ]] || { cat "$T/out"; not_ok "kiln boot --no-finish exited $rc"; }
[[ $(cat "$T/run/finish" 2>/dev/null) == reboot ]] || not_ok "RUN_DIR/finish: '$(cat "$T/run/finish" 2>/dev/null)', expected reboot"
check_events "--no-finish"
# the finished-install mark (docs/reinstall.md): the disk's GPT disk GUID,
# with the identity of the run's token (sha256, first 4 bytes), set while
# the root was still mounted; the GPT is still sound, both headers
mark_of() { # TOKEN -> the prefix a mark of a run with that token has
  local id
  id=$(printf %s "$1" | sha256sum | cut -c1-8)
  echo "6b696c6e-f15d-8101-[89ab][0-9a-f]${id:0:2}-${id:2:6}[0-9a-f]{6}"
}
ptuuid() { blkid -p -s PTUUID -o value "$1"; }
[[ $(ptuuid "$LOOP") =~ ^$(mark_of finish-test-$N)$ ]] && ok "the finished disk carries the mark of its token: $(ptuuid "$LOOP")" \
  || not_ok "PTUUID of $LOOP after the run: '$(ptuuid "$LOOP")', expected a mark of finish-test-$N"
grep -q "marked $LOOP as a finished kiln install: GPT disk GUID $(ptuuid "$LOOP") (installed with the reinstall token #" "$T/out" \
  || not_ok "kiln did not log the mark: $(grep -i mark "$T/out")"
sfdisk --verify "$LOOP" >"$T/verify" 2>&1 && grep -q "No errors detected" "$T/verify" \
  && ok "sfdisk --verify: the GPT with the mark has no errors" || { cat "$T/verify"; not_ok "sfdisk --verify after the mark"; }

# 4. the same token again over the finished install: boot-installed, exactly
# one webhook event ("boot-installed", no stage event, no report), nothing
# written to the disk; --no-kexec says what it would boot
umount -R "$T/target" 2>/dev/null
mount "${LOOP}p1" "$T/target" || not_ok "cannot mount the root"
mkdir -p "$T/target/boot" && echo k >"$T/target/boot/vmlinuz-t" && echo i >"$T/target/boot/initrd.img-t"
ln -sfn boot/vmlinuz-t "$T/target/vmlinuz"; ln -sfn boot/initrd.img-t "$T/target/initrd.img"
umount "$T/target"
sync; SUM=$(sha256sum <"$T/a.img")
before=$(controller_sql "SELECT coalesce(max(id), 0) FROM events")
rm -f "$T/run/finish" "$T/run/report.json"
"$KILN" boot --no-finish --no-kexec --cmdline "$T/cmdline" >"$T/out" 2>"$T/err"; rc=$?
[[ $rc == 0 ]] && grep -q "^boot-installed: would kexec /vmlinuz -> boot/vmlinuz-t with /initrd.img -> boot/initrd.img-t, command line 'root=UUID=[-0-9a-f]* ro' (--no-kexec)$" "$T/out" \
  && ok "finished install: boot-installed (--no-kexec)" || { cat "$T/out" "$T/err"; not_ok "boot over a finished install: rc=$rc"; }
new=$(controller_sql "SELECT type FROM events WHERE id > $before ORDER BY id" | tr '\n' ' ')
[[ $new == "boot-installed " ]] && ok "exactly one webhook event: boot-installed" || not_ok "webhook events of the boot: '$new'"
[[ $(controller_sql "SELECT json_extract(body, '\$.fingerprint') FROM events ORDER BY id DESC LIMIT 1") =~ ^[0-9a-f]{64}$ ]] \
  || not_ok "the boot-installed event names no fingerprint: $(controller_sql "SELECT body FROM events ORDER BY id DESC LIMIT 1")"
[[ ! -e $T/run/report.json && ! -e $T/run/finish ]] || not_ok "boot-installed wrote a run report or a finish"
sync; [[ $(sha256sum <"$T/a.img") == "$SUM" ]] && ok "boot-installed: the disk's sha256 unchanged" || not_ok "boot-installed changed the disk"
findmnt "$T/target" >/dev/null && not_ok "boot-installed left the target mounted"

# 5. the mark recognises the finished install whatever layout the new spec
# makes (docs/reinstall.md): another layout on the same disk, or only the
# blank disk beside it, with wipe: true and no new token: refused (exit 3),
# nothing written (both images hash the same), no event, no report
TOK=finish-test-$N      # the token of the last install (step 3)
write_layout() { # NAME DISK: spec NAME.yaml, two partitions on DISK
  spec_write "$T/www/$1.yaml" root-data image register-webhook finish -- \
    HOSTNAME=kiln-finish-test DISK="$2" "${TAIL[@]}" FINISH=reboot
}
sums() { sync; sha256sum "$T/a.img" "$T/b.img" | cut -c1-64 | tr '\n' ' '; }
boot_spec() { # NAME [CMDLINE...]: kiln boot --no-finish of spec NAME, stdout/stderr in $T/out $T/err, rc in RC
  local name=$1; shift
  echo "kiln.spec=http://127.0.0.1:$HTTP_PORT/$name.yaml $*" >"$T/cmdline"
  umount -R "$T/target" 2>/dev/null
  rm -f "$T/run/finish" "$T/run/report.json"
  "$KILN" boot --no-finish --cmdline "$T/cmdline" >"$T/out" 2>"$T/err"; RC=$?
}
refused() { # WHAT NAME ON WHY [CMDLINE...]: exit 3 with exactly this message, nothing written
  local what=$1 name=$2 on=$3 why=$4; shift 4
  local sum0 ev0 want
  sum0=$(sums); ev0=$(controller_sql "SELECT coalesce(max(id), 0) FROM events")
  boot_spec "$name" "$@"
  want="error: refusing to apply 'http://127.0.0.1:$HTTP_PORT/$name.yaml' on $on: $why; nothing was written; to reinstall on purpose, boot with kiln.reinstall=NEW-TOKEN or give the spec a new 'reinstall:' (docs/reinstall.md)"
  [[ $RC == 3 ]] && grep -qxF "$want" <(sed 's/^\[ *[0-9.]*\] //' "$T/err") && ok "$what: refused (exit 3)" \
    || { cat "$T/err"; not_ok "$what: rc=$RC, expected 3 and: $want"; }
  [[ $(sums) == "$sum0" ]] && ok "$what: both disk images' sha256 unchanged" || not_ok "$what: a disk image changed"
  [[ $(controller_sql "SELECT coalesce(max(id), 0) FROM events") == "$ev0" ]] || not_ok "$what: the webhook got events: $(controller_sql "SELECT type FROM events WHERE id > $ev0")"
  [[ ! -e $T/run/report.json && ! -e $T/run/finish ]] || not_ok "$what: a run report or a finish was written"
}
id_of() { printf %s "$1" | sha256sum | cut -c1-8; }
write_layout layout-b "$LOOP"
write_layout only-b "$LOOPB"
"$KILN" plan "$T/www/layout-b.yaml" >"$T/plan" 2>&1
grep -qxF "finished install: $LOOP holds a finished kiln install (installed with the reinstall token #$(id_of $TOK); no reinstall token was given)" "$T/plan" \
  && grep -qx "verdict: refuse (kiln boot refuses this plan, exit 3, nothing written; .*" "$T/plan" \
  && ok "kiln plan shows the marked disk and the verdict" || { cat "$T/plan"; not_ok "kiln plan over the marked disk"; }
"$KILN" plan --json "$T/www/layout-b.yaml" 2>/dev/null | jq -e --arg d "$LOOP" \
  '.finished_install.verdict == "refuse" and .finished_install.marked[0].disk == $d' >/dev/null \
  || not_ok "kiln plan --json: no finished_install: $("$KILN" plan --json "$T/www/layout-b.yaml" 2>&1 | jq -c .finished_install)"
refused "another layout, no token" layout-b "$LOOP" \
  "$LOOP holds a finished kiln install (installed with the reinstall token #$(id_of $TOK); no reinstall token was given)"
refused "another layout, the install's own token" layout-b "$LOOP" \
  "$LOOP holds a finished kiln install (installed with the reinstall token #$(id_of $TOK); the reinstall token '$TOK' is the one it was installed with)" \
  "kiln.reinstall=$TOK"
refused "only the blank disk beside the finished one" only-b "$LOOPB" \
  "$LOOP holds a finished kiln install (installed with the reinstall token #$(id_of $TOK); no reinstall token was given)"
refused "another layout, kiln.fresh" layout-b "$LOOP" \
  "$LOOP holds a finished kiln install (installed with the reinstall token #$(id_of $TOK); no reinstall token was given)" kiln.fresh
# kiln apply: without --yes the same refusal; --yes is the operator's act (docs/apply.md)
sum0=$(sums)
"$KILN" apply "$T/www/layout-b.yaml" >"$T/out" 2>"$T/err"; rc=$?
[[ $rc == 3 ]] && grep -qF "refusing to apply '$T/www/layout-b.yaml' on $LOOP: $LOOP holds a finished kiln install" "$T/err" \
  && ok "kiln apply without --yes: refused by the mark" || { cat "$T/err"; not_ok "kiln apply without --yes over the mark: rc=$rc"; }
[[ $(sums) == "$sum0" ]] || not_ok "kiln apply without --yes changed a disk"
# a spec that may not wipe, with a new token: refused, nothing written
sed 's/wipe: true/wipe: false/' "$T/www/layout-b.yaml" >"$T/www/nowipe.yaml"
sum0=$(sums)
boot_spec nowipe kiln.reinstall=finish-test-nowipe
# (the disk holds signatures: plan_build's refusal, before any look at the mark)
[[ $RC == 3 ]] && grep -q "disk rule 'a' selects $LOOP, which holds signatures (.*); set 'wipe: true' to destroy them" "$T/err" \
  && ok "wipe: false with a new token over the mark: refused (exit 3)" || { cat "$T/err"; not_ok "wipe: false over the mark: rc=$RC, expected 3"; }
[[ $(sums) == "$sum0" ]] || not_ok "wipe: false over the mark changed a disk"
# a new token: the operator's act; the new install's mark carries the new token
boot_spec layout-b kiln.reinstall=finish-test-b
[[ $RC == 0 ]] && ok "another layout with a new token: installed" || { cat "$T/err"; not_ok "layout B with a new token: rc=$RC"; }
[[ $(lsblk -nro NAME "$LOOP" | wc -l) == 3 ]] || not_ok "layout B: $LOOP has not two partitions: $(lsblk -nro NAME "$LOOP" | tr '\n' ' ')"
[[ $(ptuuid "$LOOP") =~ ^$(mark_of finish-test-b)$ ]] && ok "the new install's mark carries the new token" \
  || not_ok "PTUUID after the reinstall: '$(ptuuid "$LOOP")', expected a mark of finish-test-b"
[[ -z $(ptuuid "$LOOPB") ]] || not_ok "the blank disk got a partition table: $(ptuuid "$LOOPB")"
# an interrupted run leaves no mark: layout A (a new token to get past B's
# mark), the image missing; then layout B without a token is not refused
finish_spec reboot
sed -i "s|/small.tar.zst\"|/missing.tar.zst\"|" "$T/www/spec.yaml"
boot_spec spec kiln.reinstall=finish-test-int
[[ $RC == 5 ]] || { tail -3 "$T/err"; not_ok "the interrupted run: rc=$RC, expected 5 (image)"; }
[[ $(ptuuid "$LOOP") != 6b696c6e-f15d-* && -n $(ptuuid "$LOOP") ]] && ok "an interrupted run leaves no mark ($(ptuuid "$LOOP"))" \
  || not_ok "PTUUID after the interrupted run: '$(ptuuid "$LOOP")'"
boot_spec layout-b
[[ $RC == 0 ]] && ok "after an interrupted run, another layout needs no token" || { cat "$T/err"; not_ok "layout B after the interrupted run: rc=$RC"; }
[[ $(ptuuid "$LOOP") =~ ^6b696c6e-f15d-8100- ]] || not_ok "the install without a token: PTUUID '$(ptuuid "$LOOP")'"
umount -R "$T/target" 2>/dev/null
# kiln apply --yes is the operator's act: it installs over the mark, and says so
finish_spec reboot
"$KILN" apply --yes "$T/www/spec.yaml" >"$T/out" 2>"$T/err"; rc=$?
[[ $rc == 0 ]] && grep -qF "$LOOP holds a finished kiln install; --yes: applying '$T/www/spec.yaml' all the same" "$T/err" \
  && ok "kiln apply --yes installs over the mark" || { tail -5 "$T/err"; not_ok "kiln apply --yes over the mark: rc=$rc"; }
[[ $(lsblk -nro NAME "$LOOP" | wc -l) == 2 ]] || not_ok "kiln apply --yes: $LOOP has not layout A's one partition"
umount -R "$T/target" 2>/dev/null

checks_done
