#!/bin/bash
# Enlist in the QEMU rig (docs/register.md "Enlist"): a node the boot server
# has no spec for (its kiln.spec= URL answers 404) netboots with
# kiln.enlist= pointing at the stand-in controller and the enlist key in an
# extra initramfs segment (etc/kiln/enlist.key, as the boot server adds it).
# It posts its inventory, powers off and writes nothing: every disk hashes
# the same afterwards. The controller keeps the inventory, and `kiln plan`
# of the KVM template on it selects the guest's four disks.
. "$SRC/tests/rig/lib.sh"
rig_init
rig_disks 4 2G
rig_disk extra 1G
rig_controller
mkdir -p "$RIG_TMP/key/etc/kiln"
(umask 077; printf '%s\n' "$RIG_VAR_HMAC_KEY" >"$RIG_TMP/key/etc/kiln/enlist.key")
rig_add_initrd_segment "$RIG_TMP/key"
before=$(rig_sha256 "${RIG_DISK[@]}")
# no rig_spec: nginx answers 404 for this MAC's spec
RIG_APPEND="${RIG_APPEND:-} kiln.enlist=http://$RIG_VAR_CONTROLLER_IP/kiln/enlist kiln.enlist.timeout=120" \
  rig_boot --pxe || rig_not_ok "the guest did not power off by itself"
rig_expect_exit 0
rig_check "every disk hashes the same after enlisting" [ "$(rig_sha256 "${RIG_DISK[@]}")" = "$before" ]
rig_controller_dump "$RIG_TMP/ctl.json"
node=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["enlisted"]; print(e[0]["node_id"] if len(e) == 1 else "")' \
  "$RIG_TMP/ctl.json")
rig_check "the controller enlisted one node ('$node')" [ -n "$node" ]
curl -sf "http://127.0.0.1:$RIG_CTL_PORT/kiln/enlisted/$node" -o "$RIG_TMP/enlisted.json" || rig_not_ok "no enlisted inventory"
rig_check "the enlisted inventory lists the guest's NIC $RIG_MAC" grep -qi "\"$RIG_MAC\"" "$RIG_TMP/enlisted.json"
for s in kiln-disk0 kiln-disk1 kiln-disk2 kiln-disk3 kiln-extra; do
  rig_check "the enlisted inventory lists disk serial $s" grep -q "\"$s\"" "$RIG_TMP/enlisted.json"
done
rc=0
"$KILN" plan "$SRC/templates/kvm-raid10-luks-lvm.yaml" --inventory "$RIG_TMP/enlisted.json" >"$RIG_TMP/plan" 2>&1 || rc=$?
rig_check "kiln plan of the KVM template on the enlisted inventory exits 0 (got $rc)" [ "$rc" = 0 ]
for d in vda vdb vdc vdd; do
  rig_check "the plan uses /dev/$d" grep -q "/dev/$d" "$RIG_TMP/plan"
done
rig_check "the guest posted its inventory once (no retry after the 200)" \
  [ "$(python3 -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1]))["requests"] if r["path"] == "/kiln/enlist"))' "$RIG_TMP/ctl.json")" = 1 ]
rig_done
