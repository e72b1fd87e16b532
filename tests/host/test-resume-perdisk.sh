#!/bin/bash
# Per-disk LUKS under md (templates/kvm-perdisk-luks-raid10.yaml's layout:
# LUKS2 on each disk's partition, md over the opened mappings) with a
# generated, escrowed key bound to Tang: kiln's later openings go through
# each header's Tang pin first and judge the md only after that, as they do
# for LUKS on md. The md superblocks are inside the closed LUKS volumes, so
# no inventory sees them; before issue 28's fix the plan installed fresh and
# a finished node was judged by its marks alone (exit 3). On two loop disks
# partitioned where the plan puts the partitions, each partition a LUKS2
# header bound to a real tangd (unlock-probe bind; this host has no md and
# no device-mapper, so an activation stops there):
#  1. kiln plan: mode resume; every luks-open through its Tang pin, then the
#     assemble over the mappings "once the luks-open steps above opened
#     them" (no UUID in the plan);
#  2. Tang stopped: kiln apply's resume and kiln boot's look stop at the
#     first luks-open with the device, the Tang URL and the reason, exit 4,
#     both disks byte for byte as they were;
#  3. the disks marked as a finished install (the GPT disk GUID): kiln boot
#     with Tang stopped still looks through the pin (exit 4, not the marks'
#     exit 3), unchanged; with Tang up the look recovers the first disk's
#     key through its pin (then the activation fails here and, with no
#     record read, the marks refuse: exit 3), unchanged, the key in no log.
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices and LUKS2 headers"
skip_unless_tools cryptsetup jq sha256sum openssl losetup socat jose sfdisk partx clevis
PROBE=$BUILD/tests/unlock-probe
[[ -x $PROBE ]] || { echo "SKIP: no $PROBE"; exit 77; }
source "$SRC/tests/lib/loop.sh"
source "$SRC/tests/lib/tang.sh"
loop_init resumeperdisk
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

tang_start "$T/tang" || fail "Tang did not start"
url=$TANG_URL thp=$TANG_THP port=$TANG_PORT

# two disks of a size nothing else here has (the rule takes exactly 2)
for d in a b; do truncate -s 77M "$T/$d.img"; done
attach "$T/a.img"; A=$ATTACHED
attach "$T/b.img"; B=$ATTACHED

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/op.key" -out "$T/op.crt" -days 30 -subj /CN=kiln-op 2>/dev/null \
        || fail "openssl req"
echo kiln >"$T/f" && tar -C "$T" -cf "$T/img.tar" f || fail "tar"
{ printf 'version: 1\nhostname: perdisk\ndisks:\n  - {id: d, min_size: 76M, max_size: 78M, count: 2, wipe: true}\n'
  printf 'partitions:\n  - {id: data, on: d, size: rest}\n'
  printf 'luks:\n  - id: crypt\n    on: data\n    pbkdf: {type: pbkdf2, iterations: 1000}\n'
  printf '    unlock: {tang: [{url: "%s", thp: "%s"}]}\n' "$url" "$thp"
  printf '    key:\n      generate: true\n      escrow: |\n'
  sed 's/^/        /' "$T/op.crt"
  printf 'raid:\n  - {id: md0, level: 1, members: crypt}\n'
  printf 'filesystems:\n  - {on: md0, type: ext4, mount: /}\n'
  printf 'image: {url: "file://%s", sha256: "%s"}\n' "$T/img.tar" "$(sha256sum <"$T/img.tar" | cut -d' ' -f1)"
} >"$T/s.yaml"

# the layout an interrupted run of this plan left: its GPT (where the plan puts the partition), a LUKS2
# header on each partition with a key nobody keeps, each bound to Tang (what luks-bind wrote)
"$KILN" plan "$T/s.yaml" --json >"$T/fresh.json" 2>"$T/fresh.err" || fail "kiln plan on blank disks: $(cat "$T/fresh.err")"
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for D in "$A" "$B"; do
        read -r start size < <(jq -r --arg d "$D" '.steps[] | select(.kind == "partition" and .device == $d)
                | .partitions[0] | "\(.start / 512) \(.size / 512)"' "$T/fresh.json")
        [[ -n $start && -n $size ]] || fail "no partition step for $D in the fresh plan"
        printf 'label: gpt\nstart=%s, size=%s, type=linux\n' "$start" "$size" | sfdisk -q "$D" >/dev/null 2>&1 \
                || fail "sfdisk $D"
        partx -a "$D" 2>/dev/null       # (this kernel may not read GPT itself: partx adds the partition)
        [[ -b ${D}p1 ]] || fail "no ${D}p1"
        printf '%s' "$KEY" | cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
                --key-file - "${D}p1" || fail "luksFormat ${D}p1"
        printf '%s' "$KEY" | "$PROBE" bind "${D}p1" / 1 "$url" "$thp" >"$T/out" 2>"$T/err" && [[ $(cat "$T/out") == 1 ]] \
                || fail "bind ${D}p1: $(cat "$T/err")"
done
pinkey=$(clevis luks pass -d "${A}p1" -s 1 2>/dev/null)
[[ ${#pinkey} -ge 32 ]] || fail "clevis luks pass ${A}p1 -s 1"
unset KEY
hashes() { sha256sum <"$T/a.img"; sha256sum <"$T/b.img"; }

# 1. the plan: resume, the LUKS first, the md after them
"$KILN" plan "$T/s.yaml" >"$T/plan.out" 2>&1 || not_ok "kiln plan: $(cat "$T/plan.out")"
expect_in "kiln plan: md over per-disk LUKS resumes" "$T/plan.out" "mode: resume"
expect_in "kiln plan: the first disk's luks-open goes through its Tang pin" "$T/plan.out" \
        "open ${A}p1 as /dev/mapper/crypt-0, with the generated key its clevis token gives back through Tang"
expect_in "kiln plan: and the second's" "$T/plan.out" \
        "open ${B}p1 as /dev/mapper/crypt-1, with the generated key its clevis token gives back through Tang"
expect_in "kiln plan: the md is assembled over the mappings once they are open" "$T/plan.out" \
        "assemble md 'md0' from /dev/mapper/crypt-0, /dev/mapper/crypt-1, once the luks-open steps above opened them (their superblocks are read then: one array, its UUID); keeps the array and its data"
o0=$(grep -n "as /dev/mapper/crypt-0," "$T/plan.out" | cut -d: -f1) o1=$(grep -n "as /dev/mapper/crypt-1," "$T/plan.out" | cut -d: -f1)
m=$(grep -n "assemble md 'md0'" "$T/plan.out" | cut -d: -f1)
[[ -n $o0 && -n $o1 && -n $m ]] && ((o0 < m && o1 < m)) && ok "kiln plan: both luks-open steps come before the assemble" \
        || not_ok "kiln plan: step order (luks-open lines $o0 $o1, assemble line $m)"

# 2. Tang stopped: the resume and the look stop at the first luks-open, nothing written
tang_stop
h0=$(hashes)
tang_err="luks 'crypt' has a generated key, which only its Tang pin gives back, and that failed: tang decrypt of the token of keyslot 1 of ${A}p1: Tang '$url' did not answer the key recovery: Failed to connect to 127.0.0.1 port $port after * ms: Couldn't connect to server: *"
rm -rf "$KILN_RUN_DIR"
"$KILN" apply --yes "$T/s.yaml" >"$T/apply.log" 2>&1; rc=$?
want="error: step */* luks-open failed on '/dev/mapper/crypt-0': $tang_err; not resuming, and no fresh install either (a Tang that does not answer is no reason to wipe); nothing was written"
if ((rc == 4)) && [[ $(grep '^error:' "$T/apply.log" | tail -1) == $want ]]; then
        ok "kiln apply, Tang stopped: the resume stops at the first luks-open, exit 4"
else not_ok "kiln apply, Tang stopped: rc=$rc"; tail -15 "$T/apply.log"; fi
expect_eq "kiln apply, Tang stopped: both disks unchanged" "$h0" "$(hashes)"
grep -Eq "^step [0-9]+/[0-9]+ (wipe|partition|luks-format)" "$T/apply.log" \
        && not_ok "kiln apply, Tang stopped: a wipe, partition or format ran" || ok "kiln apply, Tang stopped: no wipe, no format"

echo "console=ttyS0 kiln.spec=file://$T/s.yaml" >"$T/cmdline"
boot() {  # DESC WANT_RC WANT_ERROR(glob) LOG
        rm -rf "$KILN_RUN_DIR"
        "$KILN" boot --cmdline "$T/cmdline" --no-finish --no-kexec >"$4" 2>&1; local rc=$?
        local got; got=$(sed 's/^\[ *[0-9.]*\] //' "$4" | grep '^error:' | tail -1)
        if ((rc == $2)) && [[ $got == $3 ]]; then ok "$1, exit $rc"
        else not_ok "$1: rc=$rc, last error '$got'"; tail -15 "$4"; fi
        expect_eq "$1: both disks unchanged" "$h0" "$(hashes)"
}
look_err="error: cannot look at the disks of '*': luks-open /dev/mapper/crypt-0: $tang_err; nothing was written"
boot "kiln boot, Tang stopped: the look stops at the first luks-open" 4 "$look_err" "$T/boot.log"

# 3. a finished node (the mark on both disks' GPT): still looked at through the pin, not judged by the marks
for D in "$A" "$B"; do
        sfdisk -q --disk-id "$D" 6b696c6e-f15d-8100-8a00-000000123456 >/dev/null 2>&1 || fail "mark $D"
        partx -a "$D" 2>/dev/null; [[ -b ${D}p1 ]] || fail "no ${D}p1 after the mark"
done
h0=$(hashes)
boot "kiln boot over the marked disks, Tang stopped: the look through the pin stops first (not the marks' exit 3)" 4 \
        "$look_err" "$T/boot2.log"
tang_start "$T/tang" "$port" || fail "Tang did not start again on $port"
boot "kiln boot over the marked disks, Tang up: the look opens through the pin, then (no md here) the marks refuse" 3 \
        "error: refusing to apply '*' on $A, $B: $A, $B hold a finished kiln install (*; no reinstall token was given); nothing was written; *" \
        "$T/boot3.log"
expect_in "kiln boot, Tang up: the look recovered the first disk's key through its pin" "$T/boot3.log" \
        "luks 'crypt' on ${A}p1: its generated key recovered through its Tang pin (keyslot 1)"
grep -rqsF -- "$pinkey" "$T"/*.log "$KILN_RUN_DIR" \
        && not_ok "the key Tang gives back shows in a log or the run directory" || ok "the key Tang gives back is in no log, report or run file"
checks_done
