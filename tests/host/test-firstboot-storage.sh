#!/bin/bash
# The storage check of the first-boot registration (issue 30, docs/register.md
# "The storage check at first boot"), with real mounts: two ext4 file systems
# on loop devices, mounted in a mount namespace of this test's own (unshare)
# under the installed root that `kiln boot --skip-storage` made
# (firstboot-lib.sh), and the /etc/fstab and /etc/crypttab of that root in
# the lines kiln writes: /srv/vmdata required, /var/lib/libvirt/images
# nofail. `kiln register --firstboot --root` runs inside the namespace, as
# the unit would on the node; the stand-in controller takes CloudStack's
# calls and the webhook (its HMAC checked: a badly signed event is not kept).
#   1. both mounted: registered, the report's storage_check is ok, no event;
#   2. the required mount point holds the other file system: exit 4, both
#      named with the device numbers, the event, no CloudStack call at all;
#   3. the image store's device gone (loop device detached), a nofail swap
#      and a nofail LUKS volume whose devices are not there, a noauto volume:
#      registered (one addHost), each named in the log, the event's body and
#      the report; the noauto line is not checked;
#   4. the required one's device there but not mounted, the image store's
#      gone: exit 4, the log lines, the event, no CloudStack call, no marker;
#   5. an fstab line of two fields: exit 4 with the file and line, nothing sent.
source "$(dirname "$0")/firstboot-lib.sh"
for c in losetup mkfs.ext4 blkid unshare mount; do command -v $c >/dev/null || { echo "SKIP: no $c"; exit 77; }; done

write_fb_spec root password
install_run "$T/install.log" || { cat "$T/install.log"; fail "install run failed"; }
NODE=$(jq -r .node.id "$R/var/lib/kiln/report.json")

truncate -s 32M "$T/req.img" "$T/img.img"
mkfs.ext4 -q -F "$T/req.img" && mkfs.ext4 -q -F "$T/img.img" || fail "mkfs.ext4"
REQ=$(losetup -f --show "$T/req.img") || fail "losetup"; cleanup_loop "$REQ"
IMG=$(losetup -f --show "$T/img.img") || fail "losetup"; cleanup_loop "$IMG"
U_REQ=$(blkid -o value -s UUID "$REQ"); U_IMG=$(blkid -o value -s UUID "$IMG")
U_SWAP=$(cat /proc/sys/kernel/random/uuid); U_LUKS=$(cat /proc/sys/kernel/random/uuid); U_ROOT=$(cat /proc/sys/kernel/random/uuid)
mkdir -p "$R/srv/vmdata" "$R/var/lib/libvirt/images"
devno() { printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")"; }

# the fstab as kiln writes it (configure.c, the plan's fstab_options)
fstab() { # [extra lines]
  { echo "# written by kiln"
    echo "UUID=$U_REQ /srv/vmdata ext4 defaults,x-systemd.device-timeout=300s 0 2"
    echo "UUID=$U_IMG /var/lib/libvirt/images ext4 defaults,nofail,x-systemd.device-timeout=300s 0 2"
    printf '%s' "${1:-}"; } >"$R/etc/fstab"
}
# in_ns LOG "MOUNTS": kiln register --firstboot in a mount namespace of its
# own, after the given mount commands; the exit status is kiln's
# own, after the given mount commands; the exit status is kiln's. Each case
# registers at an address of its own (--ip 10.1.0.CASE: a new host).
in_ns() {
  unshare --mount --propagation private /bin/sh -c "$2"'
    exec "$0" register --firstboot "$1/etc/kiln/firstboot.conf" --root "$1" --ip "$2" --timeout 30 </dev/null' "$KILN" "$R" "10.1.0.$CASE" >"$1" 2>&1
}
# what the controller saw since fresh CASE
fresh() {
  CASE=$1
  rm -f "$R/var/lib/kiln/registered"
  REQ0=$(controller_sql "SELECT coalesce(max(id), 0) FROM requests")
  EV0=$(controller_sql "SELECT coalesce(max(id), 0) FROM events")
}
events() { controller_sql "SELECT body FROM events WHERE type = 'storage-degraded' AND id > $EV0"; }
cs_since() { controller_sql "SELECT count(*) FROM requests WHERE path = '/client/api' AND id > $REQ0"; }
all_since() { controller_sql "SELECT count(*) FROM requests WHERE id > $REQ0"; }
addhost_since() { controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost' AND id > $REQ0"; }

# ---- 1. both mounted -----------------------------------------------------------
fresh 1
fstab
in_ns "$T/fb1.log" "mount $REQ $R/srv/vmdata && mount $IMG $R/var/lib/libvirt/images &&"; rc=$?
[[ $rc == 0 ]] && grep -qF "storage check: the 2 mount(s), swap(s) and volume(s) of /etc/fstab and /etc/crypttab are up" "$T/fb1.log" \
  && ok "both mounted: the check says so, exit 0" || { cat "$T/fb1.log"; not_ok "both mounted: rc $rc"; }
[[ $(addhost_since) == 1 && -e $R/var/lib/kiln/registered ]] \
  && ok "both mounted: registered (one addHost, the marker)" || not_ok "both mounted: not registered"
[[ $(jq -c '[.storage_check.result, .storage_check.systemd, [.storage_check.checked[] | [.mountpoint, .required, .up, .device]]]' "$R/var/lib/kiln/report.json") == \
   "[\"ok\",false,[[\"/srv/vmdata\",true,true,\"$REQ\"],[\"/var/lib/libvirt/images\",false,true,\"$IMG\"]]]" ]] \
  && ok "the report's storage_check: ok, both up on their devices, required as the fstab says" \
  || not_ok "storage_check: $(jq -c .storage_check "$R/var/lib/kiln/report.json")"
[[ -z $(events) ]] && ok "no storage-degraded event" || not_ok "an event: $(events)"
! grep -q "storage not up" "$T/fb1.log" && ok "no 'storage not up' line" || not_ok "a storage line: $(grep storage "$T/fb1.log")"

# ---- 2. the required mount point holds the other file system --------------------
fresh 2
in_ns "$T/fb2.log" "mount $IMG $R/srv/vmdata &&"; rc=$?
want="error: storage not up: mount /srv/vmdata (UUID=$U_REQ, required): mounted from device $(devno "$IMG"), not from UUID=$U_REQ ($REQ, $(devno "$REQ"))"
[[ $rc == 4 ]] && grep -qF -- "$want" "$T/fb2.log" \
  && grep -qF "error: required storage of node '$NODE' is not up: not registering it with CloudStack; nothing was sent to CloudStack" "$T/fb2.log" \
  && ok "another file system on the required mount point: exit 4, both devices named" || { cat "$T/fb2.log"; not_ok "wrong device: rc $rc"; }
[[ $(cs_since) == 0 && ! -e $R/var/lib/kiln/registered ]] && ok "no CloudStack call, no marker" || not_ok "CloudStack was called: $(cs_since)"
[[ $(events | jq -c '[.result, .registers, [.failed[].mountpoint]]') == '["required-missing",false,["/srv/vmdata","/var/lib/libvirt/images"]]' ]] \
  && ok "the event: required-missing, not registered, both named" || not_ok "event: $(events)"

# ---- 3. only what is not required is missing ------------------------------------
fresh 3
losetup -d "$IMG"
fstab "UUID=$U_SWAP none swap sw,nofail,x-systemd.device-timeout=300s 0 0
"
printf '# written by kiln\ncroot UUID=%s none luks,noauto\ncimages UUID=%s none luks,nofail,x-systemd.device-timeout=300s\n' \
  "$U_ROOT" "$U_LUKS" >"$R/etc/crypttab"
in_ns "$T/fb3.log" "mount $REQ $R/srv/vmdata &&"; rc=$?
[[ $rc == 0 ]] && ok "the image store, a swap and a volume missing, none required: exit 0" || { cat "$T/fb3.log"; not_ok "rc $rc"; }
for w in "warning: storage not up: mount /var/lib/libvirt/images (UUID=$U_IMG, not required): not mounted: its device UUID=$U_IMG is not there" \
         "warning: storage not up: swap UUID=$U_SWAP (UUID=$U_SWAP, not required): not in use as swap: its device UUID=$U_SWAP is not there" \
         "warning: storage not up: volume cimages (UUID=$U_LUKS, not required): not open (no /dev/mapper/cimages): its device UUID=$U_LUKS is not there"; do
  grep -qF -- "$w" "$T/fb3.log" && ok "logged: ${w#warning: storage not up: }" || not_ok "not logged: $w"
done
! grep -q croot "$T/fb3.log" && ok "the noauto volume (opened by the initramfs) is not checked on its own" || not_ok "croot checked"
[[ $(addhost_since) == 1 && -e $R/var/lib/kiln/registered ]] \
  && ok "registered: one addHost, the marker" || { cat "$T/fb3.log"; not_ok "not registered"; }
ev=$(events)
[[ $(jq -r '.type + " " + .result + " " + (.registers|tostring) + " " + .node_id' <<<"$ev") == "storage-degraded degraded true $NODE" ]] \
  && [[ $(jq -r .message <<<"$ev") == "3 of 4 mount(s), swap(s) or volume(s) not up, none of them required: node registered" ]] \
  && ok "the event (signed: the stand-in keeps only what its HMAC verifies): degraded, registers, the message" || not_ok "event: $ev"
[[ $(jq -c '.failed[0]' <<<"$ev") == "{\"kind\":\"mount\",\"mountpoint\":\"/var/lib/libvirt/images\",\"source\":\"UUID=$U_IMG\",\"required\":false,\"up\":false,\"why\":\"not mounted: its device UUID=$U_IMG is not there\",\"device_timeout\":\"300s\"}" ]] \
  && [[ $(jq -c '[.failed[] | .kind + " " + (.mountpoint // .swap // .volume)]' <<<"$ev") == "[\"mount /var/lib/libvirt/images\",\"swap UUID=$U_SWAP\",\"volume cimages\"]" ]] \
  && ok "the event's body names each one, its device and why" || not_ok "event failed[]: $(jq -c .failed <<<"$ev")"
[[ $(controller_sql "SELECT delivery FROM events WHERE type = 'storage-degraded' AND id > $EV0") == "$(jq -r .run_id "$R/var/lib/kiln/report.json")/storage-degraded/"* ]] \
  && ok "the event's delivery id: RUN_ID/storage-degraded/UUID" || not_ok "delivery: $(controller_sql "SELECT delivery FROM events WHERE type = 'storage-degraded' AND id > $EV0")"
[[ $(jq -r '.storage_check.result + " " + (.storage_check.checked | length | tostring) + " " + .registration.cloudstack.result' "$R/var/lib/kiln/report.json") == "degraded 4 SUCCESS" ]] \
  && [[ $(controller_sql "SELECT body FROM reports" | jq -r .storage_check.result) == degraded ]] \
  && ok "the report (the node's and the one posted) has the check: degraded, 4 checked, registered" \
  || not_ok "report: $(jq -c '[.storage_check.result, .registration.cloudstack.result]' "$R/var/lib/kiln/report.json")"

# ---- 4. the required one not mounted, its device there ---------------------------
fresh 4
fstab
rm -f "$R/etc/crypttab"
rep_reg=$(jq -c .registration "$R/var/lib/kiln/report.json")
in_ns "$T/fb4.log" ""; rc=$?
[[ $rc == 4 ]] && grep -qF -- "error: storage not up: mount /srv/vmdata (UUID=$U_REQ, required): not mounted, though its device UUID=$U_REQ ($REQ) is there" "$T/fb4.log" \
  && grep -qF -- "warning: storage not up: mount /var/lib/libvirt/images (UUID=$U_IMG, not required): not mounted: its device UUID=$U_IMG is not there" "$T/fb4.log" \
  && grep -qF "error: required storage of node '$NODE' is not up: not registering it with CloudStack; nothing was sent to CloudStack" "$T/fb4.log" \
  && ok "the required mount missing: exit 4, each named, not registered" || { cat "$T/fb4.log"; not_ok "required missing: rc $rc"; }
[[ $(cs_since) == 0 ]] && ok "the stand-in CloudStack saw no call (no addHost)" || not_ok "CloudStack calls: $(cs_since)"
[[ ! -e $R/var/lib/kiln/registered ]] && ok "no marker: the unit runs again at the next boot" || not_ok "a marker"
ev=$(events)
[[ $(jq -c '[.result, .registers, .message, [.failed[] | [.mountpoint, .required]]]' <<<"$ev") == \
   '["required-missing",false,"1 of 2 required mount(s), swap(s) or volume(s) not up: node not registered with CloudStack",[["/srv/vmdata",true],["/var/lib/libvirt/images",false]]]' ]] \
  && ok "the event: required-missing, not registered, each named" || not_ok "event: $ev"
[[ $(jq -r .storage_check.result "$R/var/lib/kiln/report.json") == required-missing && $(jq -c .registration "$R/var/lib/kiln/report.json") == "$rep_reg" ]] \
  && ok "the node's report has the check, its registration unchanged" || not_ok "report: $(jq -c '[.storage_check.result, .registration]' "$R/var/lib/kiln/report.json")"
assert_no_secrets "$T/fb1.log" "$T/fb2.log" "$T/fb3.log" "$T/fb4.log" "$R/var/lib/kiln/report.json"

# ---- 5. an fstab kiln did not write that way -------------------------------------
fresh 5
fstab "UUID=$U_REQ /srv/other
"
in_ns "$T/fb5.log" ""; rc=$?
[[ $rc == 4 ]] && grep -qF "error: cannot check the storage of node '$NODE': $R/etc/fstab:4: 2 field(s), expected at least 4; not registering it with CloudStack" "$T/fb5.log" \
  && ok "a bad fstab line: exit 4, the file and line named" || { cat "$T/fb5.log"; not_ok "bad fstab: rc $rc"; }
[[ $(all_since) == 0 ]] && ok "nothing sent (no CloudStack call, no event)" \
  || not_ok "requests: $(controller_sql 'SELECT path, command FROM requests')"

checks_done
