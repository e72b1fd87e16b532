#!/bin/bash
# The login CloudStack's management server makes at the installed system's
# first boot (docs/register.md "Where addHost belongs"), with a key and as a
# user other than root, through the node's real sshd. The install run and the
# first boot are test-firstboot's (tests/host/firstboot-lib.sh: `kiln boot
# --skip-storage` into a real Debian minbase root, the stand-in controller);
# the root gets Debian's sudo package (dpkg --root), and the node's sshd is
# this host's OpenSSH over the target's passwd, shadow, authorized_keys and
# kiln's drop-in, every session chrooted into the target (its shell, sudo,
# sudoers, PAM). The stand-in logs in as CloudStack 4.18+ does: its own key
# pair first (made on first use, served at /kiln/management-key), the
# password only when addHost has one; for a user other than root it runs
# `sudo cloudstack-setup-agent ...`, with no terminal. The spec: account
# cloudadmin, host_authorized_key, no host_password.
#   1. a key that is not the management server's: kiln sends addHost with no
#      password parameter; sshd refuses the stand-in's key; CloudStack's 530
#      "Authentication error with ssh private key", exit 7, no host, the
#      agent setup not run, no marker;
#   2. the management server's key but no sudoers rule (the file removed):
#      sshd takes the key, sudo refuses (no terminal to ask a password on);
#      530 "CloudStack Agent setup through command [sudo cloudstack-setup-agent ]
#      ... failed.", exit 7, no host, the setup not run, no marker;
#   3. with kiln's sudoers rule (installed again): registered; the stand-in
#      logged in with its key (sshd: "Accepted publickey", the key's
#      fingerprint), the stub ran as uid 0 with SUDO_USER=cloudadmin and
#      CloudStack's arguments, the host Up with no password given, the marker;
#   4. sshd allows exactly that login: a password login for cloudadmin, even
#      with the right password in shadow, is not offered (publickey only); a
#      key not in authorized_keys is refused; root is not in AllowUsers;
#   no secret of the spec, and no line of the management private key, under
#   the target, in kiln's output or in sshd's log.
source "$(dirname "$0")/firstboot-lib.sh"
need_sshd

MKEY=$(curl -sf "$URL/kiln/management-key")
[[ $MKEY == "ssh-rsa "*" cloud@kiln-stand-in" && $(stat -c %a "$T/ctl/management_key") == 600 ]] \
  && ok "the stand-in's management key pair: RSA, the private key 0600" || fail "management key: '$MKEY', $(stat -c %a "$T/ctl/management_key" 2>&1)"
MFP=$(ssh-keygen -lf "$T/ctl/management_key.pub" | awk '{ print $2 }')
ssh-keygen -q -t ed25519 -N '' -C other@elsewhere -f "$T/other_key"
ssh-keygen -q -t ed25519 -N '' -C never@installed -f "$T/third_key"
target_add_sudo
zone=$(controller_sql "SELECT id FROM zones WHERE name = 'lab'"); pod=$(controller_sql "SELECT id FROM pods WHERE name = 'p1'")
cluster=$(controller_sql "SELECT id FROM clusters WHERE name = 'c1'")
guid=$(python3 -c 'import hashlib, uuid; d = bytearray(hashlib.md5(b"10.0.2.15").digest()); d[6] = d[6] & 15 | 48; d[8] = d[8] & 63 | 128; print(uuid.UUID(bytes=bytes(d)))')
args=" -m 127.0.0.1 -z $zone -p $pod -c $cluster -g $guid -a -s  --pubNic=cloudbr0 --prvNic=cloudbr0 --guestNic=cloudbr0 --hypervisor=kvm"
refused="failed: CloudStack refused addHost (HTTP 530, errorcode 530): Could not add host at [http://10.0.2.15] with zone [$zone], pod [$pod] and cluster [$cluster] due to:"
nothing_done() { # WHAT: no host, the setup not run, no marker
  [[ $(controller_sql "SELECT count(*) FROM hosts") == 0 && ! -e $T/sbin/setup-agent.calls && ! -e $T/sbin/setup-agent.users && ! -e $R/var/lib/kiln/registered ]] \
    && ok "$1: no host, the agent setup did not run, no marker" \
    || not_ok "$1: hosts $(controller_sql 'SELECT count(*) FROM hosts'), $(ls "$T/sbin" "$R/var/lib/kiln")"
}

# ---- 1. a key that is not the management server's ---------------------------
KEY=$(cat "$T/other_key.pub")
write_fb_spec cloudadmin key
install_run "$T/install1.log" || { cat "$T/install1.log"; fail "install run 1 failed"; }
start_target_sshd       # its passwd is the target's as it is now: with the account
d=$T/sshd
controller_admin "{\"ssh\": {\"hosts\": {\"10.0.2.15\": $SSH_PORT}, \"required\": true}}"
[[ $(grep -v '^#' "$R/etc/ssh/sshd_config.d/kiln.conf") == $'AllowUsers cloudadmin\nPermitRootLogin no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes' ]] \
  && ok "the drop-in: cloudadmin alone, by key only" || not_ok "drop-in: $(cat "$R/etc/ssh/sshd_config.d/kiln.conf")"
[[ $(awk -F: '$1 == "cloudadmin" { print $2 }' "$R/etc/shadow") == '*' ]] && ok "cloudadmin has no password ('*', not locked)" \
  || not_ok "cloudadmin's shadow field: $(awk -F: '$1 == "cloudadmin" { print $2 }' "$R/etc/shadow")"
firstboot_run "$T/fb1.log"; rc=$?
want="$refused [Authentication error with ssh private key]."
[[ $rc == 7 ]] && grep -qF -- "$want" "$T/fb1.log" && ok "another key: exit 7, CloudStack's 530 'Authentication error with ssh private key'" \
  || { cat "$T/fb1.log"; not_ok "another key: rc $rc"; }
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] && ok "one addHost, not sent again" || not_ok "addHost count $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'")"
[[ $(controller_sql "SELECT username || ' ' || ifnull(auth, '-') || ' ' || result FROM logins") == "cloudadmin - authentication failed" ]] \
  && grep -q "Failed publickey for cloudadmin from 127.0.0.1 port [0-9]* ssh2: RSA $MFP" "$d/log" \
  && ok "sshd refused the management server's key (its fingerprint in sshd's log); no password was tried" \
  || not_ok "logins: $(controller_sql 'SELECT * FROM logins'); sshd: $(grep -i publickey "$d/log" | tail -3)"
nothing_done "another key"

# ---- 2. the management server's key, no sudoers rule --------------------------
KEY=$MKEY
write_fb_spec cloudadmin key
install_run "$T/install2.log" || { cat "$T/install2.log"; fail "install run 2 failed"; }
grep -qxF "$MKEY" "$R/home/cloudadmin/.ssh/authorized_keys" && ok "the management server's key in ~cloudadmin/.ssh/authorized_keys" \
  || not_ok "authorized_keys: $(cat "$R/home/cloudadmin/.ssh/authorized_keys")"
rm -f "$R/etc/sudoers.d/kiln-cloudadmin"
firstboot_run "$T/fb2.log"; rc=$?
want="$refused [CloudStack Agent setup through command [sudo cloudstack-setup-agent ] with parameters [$args] failed.]."
[[ $rc == 7 ]] && grep -qF -- "$want" "$T/fb2.log" && ok "no sudoers rule: exit 7, CloudStack's 530 naming the setup command" \
  || { cat "$T/fb2.log"; not_ok "no sudoers rule: rc $rc"; }
IFS='|' read -r l_user l_auth l_result l_status < <(controller_sql "SELECT username, auth, result, exit_status FROM logins ORDER BY id DESC LIMIT 1")
l_err=$(controller_sql "SELECT stderr FROM logins ORDER BY id DESC LIMIT 1")
[[ "$l_user $l_auth $l_result $l_status" == "cloudadmin publickey setup command failed 1" ]] \
  && grep -qxF "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper" <<<"$l_err" \
  && ok "logged in with the key; the target's sudo refused: no terminal to ask a password on (exit 1)" \
  || not_ok "login: $l_user $l_auth $l_result $l_status; stderr: $l_err"
nothing_done "no sudoers rule"

# ---- 3. kiln's sudoers rule: registered through sudo ---------------------------
install_run "$T/install3.log" || { cat "$T/install3.log"; fail "install run 3 failed"; }
[[ -e $R/etc/sudoers.d/kiln-cloudadmin ]] && ok "the install run wrote the sudoers rule again" || not_ok "no sudoers rule after install run 3"
firstboot_run "$T/fb3.log"; rc=$?
[[ $rc == 0 ]] && ok "registered: exit 0" || { cat "$T/fb3.log" "$d/log"; not_ok "first boot 3: rc $rc"; }
[[ $(controller_sql "SELECT ipaddress || ' ' || username || ' ' || password_given || ' ' || state FROM hosts") == "10.0.2.15 cloudadmin 0 Up" ]] \
  && ok "one host, Up, added as cloudadmin with no password parameter in addHost" || not_ok "hosts: $(controller_sql 'SELECT * FROM hosts')"
[[ $(controller_sql "SELECT username || ' ' || auth || ' ' || result || ' ' || command FROM logins ORDER BY id DESC LIMIT 1") == "cloudadmin publickey ok sudo cloudstack-setup-agent $args" ]] \
  && grep -q "Accepted publickey for cloudadmin from 127.0.0.1 port [0-9]* ssh2: RSA $MFP" "$d/log" \
  && ok "the stand-in logged in with the management server's key (sshd: Accepted publickey, its fingerprint) and ran sudo cloudstack-setup-agent" \
  || not_ok "login: $(controller_sql 'SELECT * FROM logins ORDER BY id DESC LIMIT 1'); sshd: $(grep -i publickey "$d/log" | tail -3)"
[[ $(cat "$T/sbin/setup-agent.users") == "uid=0 user=root sudo_user=cloudadmin" ]] \
  && [[ $(cat "$T/sbin/setup-agent.calls") == "-m 127.0.0.1 -z $zone -p $pod -c $cluster -g $guid -a -s --pubNic=cloudbr0 --prvNic=cloudbr0 --guestNic=cloudbr0 --hypervisor=kvm" ]] \
  && ok "the stub ran once, as uid 0 through sudo for cloudadmin, with CloudStack's arguments" \
  || not_ok "the stub recorded: $(cat "$T/sbin/setup-agent.users" "$T/sbin/setup-agent.calls" 2>&1)"
grep -q '^registered .* run ' "$R/var/lib/kiln/registered" 2>/dev/null && ok "the marker is written" || not_ok "no marker"

# ---- 4. sshd allows exactly that login ----------------------------------------
# cloudadmin gets a password sshd would take (a hash of a test password,
# written in place: the node's sshd has the file bound)
pw="fb-ssh-pw-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
h=$(printf '%s' "$pw" | openssl passwd -6 -stdin)
awk -F: -v OFS=: -v h="$h" '$1 == "cloudadmin" { $2 = h } { print }' "$R/etc/shadow" >"$T/shadow.new" && cat "$T/shadow.new" >"$R/etc/shadow"
got=$(printf '%s' "$pw" | ssh_try cloudadmin password)
[[ $got == "refused; the server allows: publickey" ]] && ok "a password login for cloudadmin is not offered, even with its password in shadow: publickey only" \
  || not_ok "cloudadmin by password: $got"
got=$(ssh_try cloudadmin publickey "$T/third_key")
[[ $got == refused ]] && grep -q "Failed publickey for cloudadmin from 127.0.0.1 port [0-9]* ssh2: ED25519 $(ssh-keygen -lf "$T/third_key.pub" | awk '{ print $2 }')" "$d/log" \
  && ok "a key not in authorized_keys is refused" || not_ok "cloudadmin with another key: $got"
got=$(ssh_try root publickey "$T/ctl/management_key")
[[ $got == refused ]] && grep -q "User root from 127.0.0.1 not allowed because not listed in AllowUsers" "$d/log" \
  && ok "root is refused: not listed in AllowUsers" || not_ok "root with the management key: $got"
stop_target_sshd

no_secrets_under "$R"
grep -v -- '-----' "$T/ctl/management_key" | sed -n 2p >"$T/keyline"
! grep -rqF -f "$T/keyline" "$R" "$T"/fb*.log "$T"/install*.log "$d/log" && ok "no line of the management private key under the target or in any log" \
  || not_ok "the management private key leaked"
controller_dump >"$T/dump.json"
assert_no_secrets "$T"/fb*.log "$T"/install*.log "$d/log" "$T/dump.json"
checks_done
