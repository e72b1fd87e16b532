#!/bin/bash
# Registration at the installed system's first boot (docs/register.md "Where
# addHost belongs"). `kiln boot --skip-storage` installs into a plain
# directory that holds a real Debian root (mmdebstrap minbase, cached:
# tests/lib/rootfs.sh), the spec served by nginx, the stand-in controller
# taking the calls (tests/host/firstboot-lib.sh):
#   - the install run sends no CloudStack call at all; the webhook gets the
#     report, whose registration.cloudstack says FIRSTBOOT;
#   - the target has kiln (a copy of the binary that ran), the report, the
#     unit (exact text) enabled in multi-user.target.wants, firstboot.conf
#     (0600, the spec URL, its sha256, no secret), the account made with the
#     target's useradd, its password hashed (yescrypt, verified with crypt(3))
#     in the target's /etc/shadow, the management server's key in its
#     authorized_keys (0700/0600, its owner), sudo rights, the sshd drop-in;
#     no secret of the spec in any file under the target;
#   - `kiln register --firstboot` (as the unit runs it, --root for the
#     directory) fetches the spec again, adds the host once (at the static
#     address the spec gives the installed system's bridge), writes the
#     marker; a second run adds nothing;
#   - a spec changed on the server is refused with both hashes named and
#     nothing sent, no marker, the report unchanged; a bad config is exit 64;
#   - root with only a key: PermitRootLogin prohibit-password, the key in
#     /root/.ssh, no sudoers file left from the account before;
#   - root with a password, through the node's sshd (firstboot-lib.sh: this
#     host's OpenSSH over the target's passwd, shadow and drop-in, sessions
#     chrooted into the target): the stand-in's key is not offered a login
#     (password only), its password login is checked by sshd against kiln's
#     hash, the stub runs as root with no sudo, the host is Up; cloudadmin is
#     not in AllowUsers;
#   - kiln apply without --spec-url refuses before writing anything.
# The key-only login, and a user other than root through sudo:
# test-firstboot-ssh.sh (the same preamble, firstboot-lib.sh).
source "$(dirname "$0")/firstboot-lib.sh"
KEY="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEk3c2tpbG4tdGVzdC1tYW5hZ2VtZW50LXNlcnZlcg mgmt@cloudstack"

# ---- 1. the install run: account cloudadmin with password and key -----------
write_fb_spec cloudadmin both 10.1.0.5      # the installed system's static address: the one CloudStack gets
SPEC_SHA=$(sha256sum "$T/www/spec.yaml" | cut -d' ' -f1)
install_run "$T/install.log"; rc=$?
[[ $rc == 0 ]] && ok "install run exit 0" || { cat "$T/install.log"; fail "install run exit $rc"; }
[[ $(cs_calls) == 0 ]] && ok "the install run made no CloudStack call (no addHost)" \
  || not_ok "the install run called CloudStack: $(controller_sql "SELECT group_concat(command) FROM requests WHERE path = '/client/api'")"
[[ $(controller_sql "SELECT body FROM reports" | jq -r .registration.cloudstack.result) == FIRSTBOOT ]] \
  && ok "the webhook got the report, registration.cloudstack FIRSTBOOT" \
  || not_ok "webhook report: $(controller_sql 'SELECT body FROM reports' | jq -c .registration)"
[[ $(jq -r '.registration.cloudstack.result + " " + .registration.cloudstack.unit' "$R/var/lib/kiln/report.json") == "FIRSTBOOT kiln-register.service" ]] \
  && ok "the target's report says the first boot registers" || not_ok "target report: $(jq -c .registration "$R/var/lib/kiln/report.json")"
cmp -s "$KILN" "$R/usr/local/sbin/kiln" && [[ -x $R/usr/local/sbin/kiln ]] && ok "kiln copied to /usr/local/sbin/kiln" \
  || not_ok "no copy of kiln in /usr/local/sbin"
if file -L "$KILN" | grep -q 'statically linked'; then
  ! grep -q "dynamically linked" "$T/install.log" && ok "static kiln: no warning" || not_ok "static kiln warned"
else
  grep -q "warning: first boot: this kiln is dynamically linked (interpreter /lib64/ld-linux-x86-64.so.2): the installed system runs its copy /usr/local/sbin/kiln at first boot only if it has the same libraries" "$T/install.log" \
    && ok "dynamic kiln: the warning says so" || { grep first "$T/install.log"; not_ok "dynamic kiln: no warning"; }
fi
cat >"$T/unit.want" <<'UNIT'
# written by kiln: CloudStack's addHost from the running host, once (docs/register.md)
[Unit]
Description=kiln: register this node with CloudStack
Wants=network-online.target
After=network-online.target ssh.service libvirtd.service
ConditionPathExists=!/var/lib/kiln/registered

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/kiln register --firstboot /etc/kiln/firstboot.conf
Restart=on-failure
RestartSec=60
RestartPreventExitStatus=2 4 64
TimeoutStartSec=900

[Install]
WantedBy=multi-user.target
UNIT
diff -u "$T/unit.want" "$R/etc/systemd/system/kiln-register.service" && ok "the unit's text" || not_ok "the unit differs"
[[ $(readlink "$R/etc/systemd/system/multi-user.target.wants/kiln-register.service") == /etc/systemd/system/kiln-register.service ]] \
  && ok "the unit is enabled in multi-user.target.wants" || not_ok "the unit is not enabled"
cat >"$T/conf.want" <<CONF
# written by kiln: what kiln-register.service registers with at first boot.
# No secret: the spec is fetched again from 'spec' and must hash to 'spec_sha256'.
spec=http://127.0.0.1:$HTTP_PORT/spec.yaml
spec_sha256=$SPEC_SHA
report=/var/lib/kiln/report.json
marker=/var/lib/kiln/registered
ip=10.1.0.5
CONF
diff -u "$T/conf.want" "$R/etc/kiln/firstboot.conf" && [[ $(stat -c %a "$R/etc/kiln/firstboot.conf") == 600 ]] \
  && ok "firstboot.conf: URL, sha256, report, marker, the bridge's static address; 0600" || not_ok "firstboot.conf differs or is not 0600"
[[ ! -e $R/var/lib/kiln/registered ]] && ok "no marker yet" || not_ok "a marker before the first boot"

grep -q '^cloudadmin:x:[0-9]*:[0-9]*::/home/cloudadmin:/bin/bash$' "$R/etc/passwd" && ok "useradd made cloudadmin" \
  || not_ok "passwd: $(grep cloudadmin "$R/etc/passwd")"
hash=$(awk -F: '$1 == "cloudadmin" { print $2 }' "$R/etc/shadow")
[[ $hash == '$y$'* ]] && ok "cloudadmin's password is a yescrypt hash in /etc/shadow" || not_ok "shadow field: '$hash'"
# crypt(3) of the password with that hash as salt gives the hash (the password on stdin, never argv)
printf '%s' "$HOST_PASSWORD" | HASH=$hash /usr/bin/python3 -W ignore -c '
import crypt, os, sys
h = os.environ["HASH"]
sys.exit(0 if crypt.crypt(sys.stdin.read(), h) == h else 1)' && ok "the hash verifies against the spec's password" \
  || not_ok "the hash does not verify"
uid=$(awk -F: '$1 == "cloudadmin" { print $3 ":" $4 }' "$R/etc/passwd")
[[ $(stat -c '%a %u:%g' "$R/home/cloudadmin/.ssh") == "700 $uid" && $(stat -c '%a %u:%g' "$R/home/cloudadmin/.ssh/authorized_keys") == "600 $uid" ]] \
  && [[ $(cat "$R/home/cloudadmin/.ssh/authorized_keys") == "$KEY" ]] && ok "the key in ~cloudadmin/.ssh/authorized_keys, 0700/0600, its owner" \
  || not_ok "authorized_keys: $(stat -c '%a %u:%g %n' "$R/home/cloudadmin/.ssh" "$R/home/cloudadmin/.ssh/authorized_keys" 2>&1)"
[[ $(grep -v '^#' "$R/etc/sudoers.d/kiln-cloudadmin") == "cloudadmin ALL=(ALL:ALL) NOPASSWD: ALL" && $(stat -c %a "$R/etc/sudoers.d/kiln-cloudadmin") == 440 ]] \
  && ok "sudo rights for cloudadmin (0440)" || not_ok "sudoers: $(cat "$R/etc/sudoers.d/kiln-cloudadmin" 2>&1)"
[[ $(grep -v '^#' "$R/etc/ssh/sshd_config.d/kiln.conf") == $'AllowUsers cloudadmin\nPermitRootLogin no\nPasswordAuthentication yes\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes' ]] \
  && ok "sshd drop-in allows cloudadmin alone, password and key" || not_ok "drop-in: $(cat "$R/etc/ssh/sshd_config.d/kiln.conf")"
grep -q "warning: first boot: the image has no /usr/sbin/sshd: CloudStack's addHost logs in over SSH" "$T/install.log" \
  && ok "the missing sshd is named" || not_ok "no warning about sshd"
no_secrets_under "$R"
assert_no_secrets "$T/install.log" "$T/run/report.json"

# ---- 2. the first boot: kiln register as the unit runs it --------------------
firstboot_run "$T/fb1.log"; rc=$?
[[ $rc == 0 ]] && ok "first-boot register exit 0" || { cat "$T/fb1.log"; not_ok "first-boot register exit $rc"; }
grep -qF "fetched spec 'http://127.0.0.1:$HTTP_PORT/spec.yaml' again: sha256 $SPEC_SHA as pinned by $R/etc/kiln/firstboot.conf" "$T/fb1.log" \
  && ok "the spec was fetched again and matched its pin" || not_ok "no refetch line: $(cat "$T/fb1.log")"
[[ $(controller_sql "SELECT ipaddress || ' ' || username || ' ' || password_given FROM hosts") == "10.1.0.5 cloudadmin 1" ]] \
  && ok "one host added from the running host at its static address, as cloudadmin" || not_ok "hosts: $(controller_sql 'SELECT * FROM hosts')"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] && ok "one addHost" || not_ok "addHost count"
grep -q '^registered .* run ' "$R/var/lib/kiln/registered" 2>/dev/null && ok "the marker is written" || not_ok "no marker"
[[ $(jq -r .registration.cloudstack.result "$R/var/lib/kiln/report.json") == SUCCESS ]] && ok "the target's report says SUCCESS" \
  || not_ok "target report after first boot: $(jq -c .registration.cloudstack "$R/var/lib/kiln/report.json")"
assert_no_secrets "$T/fb1.log" "$R/var/lib/kiln/report.json"
firstboot_run "$T/fb2.log"; rc=$?
[[ $rc == 0 && $(controller_sql "SELECT count(*) FROM hosts") == 1 && $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] \
  && ok "a second run adds nothing" || { cat "$T/fb2.log"; not_ok "second run: rc $rc, $(controller_sql 'SELECT count(*) FROM hosts') hosts"; }

# ---- 3. the spec changed on the server: refused, nothing sent ----------------
rm -f "$R/var/lib/kiln/registered"
echo "# changed" >>"$T/www/spec.yaml"
NEW_SHA=$(sha256sum "$T/www/spec.yaml" | cut -d' ' -f1)
before=$(controller_sql "SELECT count(*) FROM requests")
rep_before=$(sha256sum <"$R/var/lib/kiln/report.json")
firstboot_run "$T/fb3.log"; rc=$?
want="spec 'http://127.0.0.1:$HTTP_PORT/spec.yaml' fetched at first boot has sha256 $NEW_SHA, not $SPEC_SHA, the spec this node was installed with ($R/etc/kiln/firstboot.conf): refusing to register; nothing was sent"
[[ $rc == 8 ]] && grep -qF -- "$want" "$T/fb3.log" && ok "a changed spec: exit 8, both hashes named" \
  || { cat "$T/fb3.log"; not_ok "changed spec: rc $rc"; }
[[ $(controller_sql "SELECT count(*) FROM requests") == "$before" ]] && ok "nothing was sent to the controller" || not_ok "requests were sent"
[[ ! -e $R/var/lib/kiln/registered && $(sha256sum <"$R/var/lib/kiln/report.json") == "$rep_before" ]] \
  && ok "no marker, the report unchanged" || not_ok "marker or report written"
# a bad config
sed '/^spec_sha256=/d' "$R/etc/kiln/firstboot.conf" >"$T/bad.conf"
"$KILN" register --firstboot "$T/bad.conf" --root "$R" >"$T/fb4.log" 2>&1; rc=$?
[[ $rc == 64 ]] && grep -qF "first-boot config '$T/bad.conf': no 'spec_sha256'" "$T/fb4.log" && ok "a config without spec_sha256: exit 64" \
  || { cat "$T/fb4.log"; not_ok "bad config: rc $rc"; }
"$KILN" register --firstboot "$R/etc/kiln/firstboot.conf" --spec "$T/www/spec.yaml" >"$T/fb5.log" 2>&1; rc=$?
[[ $rc == 64 ]] && grep -qF "kiln register --firstboot takes the report and the spec from its config: no --report or --spec" "$T/fb5.log" \
  && ok "--firstboot with --spec: exit 64" || { cat "$T/fb5.log"; not_ok "--firstboot --spec: rc $rc"; }

# ---- 4. root with a key only, over the same target --------------------------
write_fb_spec root key
install_run "$T/install2.log"; rc=$?
[[ $rc == 0 ]] && ok "install run (root, key) exit 0" || { cat "$T/install2.log"; not_ok "install run 2 exit $rc"; }
[[ $(grep -v '^#' "$R/etc/ssh/sshd_config.d/kiln.conf") == $'AllowUsers root\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes' ]] \
  && ok "sshd drop-in: root by key only" || not_ok "drop-in: $(cat "$R/etc/ssh/sshd_config.d/kiln.conf")"
[[ $(cat "$R/root/.ssh/authorized_keys") == "$KEY" && $(stat -c '%a %u:%g' "$R/root/.ssh/authorized_keys") == "600 0:0" ]] \
  && ok "the key in /root/.ssh/authorized_keys" || not_ok "root's authorized_keys"
[[ -z $(ls "$R/etc/sudoers.d/" | grep '^kiln-') ]] && ok "no sudoers file left from the account before" || not_ok "stale sudoers: $(ls "$R/etc/sudoers.d")"
[[ $(awk -F: '$1 == "root" { print $2 }' "$R/etc/shadow") == "$(awk -F: '$1 == "root" { print $2 }' <(tar -xOf "$ROOTFS" ./etc/shadow))" ]] \
  && ok "root's password is left as the image had it" || not_ok "root's shadow entry changed"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] && ok "still no addHost from an install run" || not_ok "install run 2 sent addHost"

# ---- 5. root with a password, and the stand-in's SSH login through it --------
# The node's sshd (start_target_sshd, firstboot-lib.sh): Debian's OpenSSH with
# the target's passwd, shadow (the hash kiln wrote) and authorized_keys, kiln's
# drop-in first, every session chrooted into the target. The stand-in tries
# its own key first, as CloudStack does; the drop-in of a password-only spec
# offers no key login, so the password logs in.
if have_sshd; then
  controller_stop
  start_controller
  write_fb_spec root password
  install_run "$T/install3.log" || { cat "$T/install3.log"; not_ok "install run 3 failed"; }
  start_target_sshd
  d=$T/sshd
  controller_admin "{\"ssh\": {\"hosts\": {\"10.0.2.15\": $SSH_PORT}, \"required\": true}}"
  rm -f "$R/var/lib/kiln/registered"
  firstboot_run "$T/fb6.log"; rc=$?
  [[ $rc == 0 ]] && ok "first boot with root's password: registered" || { cat "$T/fb6.log" "$d/log"; not_ok "first boot 3: rc $rc"; }
  [[ $(controller_sql "SELECT username || ' ' || auth || ' ' || result FROM logins") == "root password ok" ]] && grep -q "Accepted password for root from 127.0.0.1" "$d/log" \
    && ok "the stand-in logged in as root with the spec's password, checked by sshd against kiln's hash" \
    || not_ok "logins: $(controller_sql 'SELECT * FROM logins'); sshd: $(tail -5 "$d/log")"
  got=$(ssh_try root publickey "$T/ctl/management_key")
  [[ $got == "refused; the server allows: password" ]] \
    && ok "root logs in by password only: sshd offers no key login (the drop-in), so the management server's key was refused" \
    || not_ok "root with the management key: $got"
  [[ $(cat "$T/sbin/setup-agent.users" 2>&1) == "uid=0 user=root sudo_user=" && -s $T/sbin/setup-agent.calls && $(controller_sql "SELECT state FROM hosts") == Up ]] \
    && ok "the agent setup ran as root (no sudo), the host is Up" \
    || not_ok "setup: $(cat "$T/sbin/setup-agent.users" "$T/sbin/setup-agent.calls" 2>&1), hosts: $(controller_sql 'SELECT * FROM hosts')"
  # any other login is refused by the drop-in's AllowUsers (cloudadmin still has the password from part 1)
  got=$(printf '%s' "$HOST_PASSWORD" | ssh_try cloudadmin password)
  [[ $got == refused ]] && grep -q "User cloudadmin from 127.0.0.1 not allowed because not listed in AllowUsers" "$d/log" \
    && ok "a login as cloudadmin is refused: not listed in AllowUsers" || not_ok "cloudadmin login: $got; sshd: $(tail -5 "$d/log")"
  stop_target_sshd
  assert_no_secrets "$T/fb6.log" "$d/log"
else
  echo "skip: no /usr/sbin/sshd or python3-paramiko for the SSH login part"
fi

# ---- 6. kiln apply needs --spec-url with register.cloudstack ------------------
# (planned on a recorded disk whose device no machine has: were the refusal
# missing, the run would fail on a path that does not exist, never on this host's disks)
jq '.disks[0].path = "/dev/kiln-test-no-such-disk"' "$INV" >"$T/inv-nodisk.json"
sed 's|path: /dev/vda|path: /dev/kiln-test-no-such-disk|' "$T/www/spec.yaml" >"$T/apply.yaml"
rm -rf "$T/t2"
KILN_TARGET=$T/t2 KILN_RUN_DIR=$T/run2 "$KILN" apply "$T/apply.yaml" --inventory "$T/inv-nodisk.json" --yes >"$T/apply.log" 2>&1; rc=$?
[[ $rc == 64 ]] && grep -qF "spec '$T/apply.yaml' registers with CloudStack at the installed system's first boot, which fetches the spec again: give --spec-url URL (where the node fetches this same file; its sha256 is pinned); nothing was written" "$T/apply.log" \
  && [[ ! -e $T/t2 && ! -e $T/run2 ]] && ok "kiln apply without --spec-url: exit 64, nothing written" || { cat "$T/apply.log"; not_ok "apply without --spec-url: rc $rc"; }

checks_done
