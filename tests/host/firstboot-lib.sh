# Shared by tests/host/test-firstboot*.sh (sourced, not a test itself): the
# install run of `kiln boot --skip-storage` into a plain directory that holds
# a real Debian root (mmdebstrap minbase, cached: tests/lib/rootfs.sh), the
# spec served by nginx, the stand-in controller (register-lib.sh) taking the
# calls, and the node's sshd over that root. After sourcing:
#   T, R=$T/target (the unpacked root), URL, HTTP_PORT, INV, and tests/lib/assert.sh
#   write_fb_spec USER password|key|both [STATIC_ADDRESS]
#                         the spec in $T/www/spec.yaml; a key is $KEY
#   install_run LOG       the install run into $R (exit status: kiln's)
#   firstboot_run LOG     kiln register --firstboot as the unit runs it (--root $R)
#   cs_calls              how many CloudStack calls the controller saw
#   no_secrets_under DIR  no secret of the spec in any file under DIR
#   target_add_sudo       Debian's sudo package installed into $R (dpkg --root)
#   start_target_sshd / stop_target_sshd   the node's sshd (below); have_sshd:
#                         sshd and paramiko (the stand-in's login) are here; need_sshd: else skip (77)
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (useradd in a chroot of the target)"; exit 77; }
command -v nginx >/dev/null || { echo "SKIP: nginx not installed"; exit 77; }
ROOTFS=$(bash "$SRC/tests/lib/rootfs.sh" minbase) || { echo "SKIP: no minbase rootfs (mmdebstrap)"; exit 77; }
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/host/register-lib.sh"
set +e

start_controller
R=$T/target
mkdir -p "$T/www" "$R"
tar -xf "$ROOTFS" -C "$R" || fail "cannot unpack $ROOTFS"
http_start "$T/www" || fail "nginx did not start"
INV=$SRC/tests/inventories/qemu-4disk.json
echo "kiln.spec=http://127.0.0.1:$HTTP_PORT/spec.yaml" >"$T/cmdline"

# write_fb_spec USER password|key|both [STATIC_ADDRESS]
write_fb_spec() {
  local auth="" net=""
  [[ -n ${3:-} ]] && net=$'network:\n  bridges:\n    - {name: cloudbr0, nic: {boot: true}, address: '"$3/24"$', gateway: 10.1.0.1}\n'

  [[ $2 == password || $2 == both ]] && auth+=$'\n'"    host_password: \"$HOST_PASSWORD\""
  [[ $2 == key || $2 == both ]] && auth+=$'\n'"    host_authorized_key: \"$KEY\""
  spec_write "$T/www/spec.yaml" root-disk register -- HOSTNAME=kvm-fb DISK=/dev/vda CTL="$URL" \
    API_KEY="$API_KEY" SECRET_KEY="$SECRET_KEY" HOST_USERNAME="$1" HOST_AUTH="$auth" HMAC_KEY="$HMAC_KEY"
  printf '%sfinish: none\n' "$net" >>"$T/www/spec.yaml"
}
install_run() { # LOG
  KILN_TARGET=$R KILN_RUN_DIR=$T/run "$KILN" boot --cmdline "$T/cmdline" --inventory "$INV" \
    --skip-storage --no-finish </dev/null >"$1" 2>&1
}
firstboot_run() { # LOG
  "$KILN" register --firstboot "$R/etc/kiln/firstboot.conf" --root "$R" </dev/null >"$1" 2>&1
}
cs_calls() { controller_sql "SELECT count(*) FROM requests WHERE path = '/client/api'"; }
no_secrets_under() { # DIR
  local s found=""
  for s in "$SECRET_KEY" "$HOST_PASSWORD" "$HMAC_KEY"; do
    found+=$(grep -rlF -- "$s" "$1" 2>/dev/null)
  done
  [[ -z $found ]] && ok "no secret of the spec in any file under the target" || not_ok "a secret is in: $found"
}

# target_add_sudo: the minbase root has no sudo; CloudStack's setup of a
# non-root account runs it. Debian's own package (tests/lib/deb.sh: the
# archive's .deb, cached) is installed with the target's dpkg, as a real image
# would carry it; its dependencies are all in minbase.
target_add_sudo() {
  local deb
  deb=$(bash "$SRC/tests/lib/deb.sh" sudo) || fail "no sudo package (tests/lib/deb.sh sudo)"
  dpkg --root="$R" -i "$deb" >"$T/dpkg-sudo.log" 2>&1 || { cat "$T/dpkg-sudo.log"; fail "dpkg --root $R -i $deb failed"; }
  [[ -u $R/usr/bin/sudo ]] || fail "the target's /usr/bin/sudo is not setuid"
}

# start_target_sshd: the node's sshd. Debian's OpenSSH (this host's: the
# minbase root has none) on 127.0.0.1:SSH_PORT, in a mount namespace of its
# own where:
#   - /etc/passwd is the target's plus this host's sshd privilege-separation
#     user, /etc/shadow the target's (the hash kiln wrote);
#   - the target is bound at /run/kiln-target (sshd wants root-owned,
#     unwritable directories all the way to a chroot, which /tmp is not);
#   - its config reads the target's drop-in first (kiln's lines win, as in
#     Debian's sshd_config) and sets no authentication option of its own, so
#     what is allowed is the drop-in's or OpenSSH's default; the keys are
#     the target's ~/.ssh/authorized_keys (StrictModes on: kiln's modes and
#     owners are checked by sshd);
#   - every session is chrooted into the target (ChrootDirectory): the
#     command runs the target's shell, sudo, sudoers and PAM; its /dev and a
#     fresh /proc and /run are mounted there, and $T/sbin (the stub
#     cloudstack-setup-agent, which records in $T/sbin/setup-agent.calls and
#     .users) over its /usr/local/sbin.
# Nothing outside the namespace changes. Log: $T/sshd/log.
have_sshd() { [[ -x /usr/sbin/sshd ]] && /usr/bin/python3 -c 'import paramiko' 2>/dev/null; }
need_sshd() { have_sshd || { echo "SKIP: no /usr/sbin/sshd (openssh-server) or python3-paramiko"; exit 77; }; }
start_target_sshd() {
  need_sshd
  local d=$T/sshd
  mkdir -p "$d" "$T/sbin"
  install -m 0755 "$SRC/tests/controller/cloudstack-setup-agent-stub" "$T/sbin/cloudstack-setup-agent"
  [[ -e $d/host_key ]] || ssh-keygen -q -t ed25519 -N '' -f "$d/host_key"
  { cat "$R/etc/passwd"; grep -E '^sshd:' /etc/passwd; } >"$d/passwd"
  SSH_PORT=$(free_port)
  cat >"$d/sshd_config" <<CFG
Include /run/kiln-target/etc/ssh/sshd_config.d/*.conf
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $d/host_key
PidFile $d/pid
UsePAM no
AuthorizedKeysFile /run/kiln-target%h/.ssh/authorized_keys
ChrootDirectory /run/kiln-target
LogLevel VERBOSE
CFG
  unshare --mount --propagation private /bin/sh -c "$MOUNTNS_DROP_LOOPS"'
    d=$1 t=$2 r=$3 c=/run/kiln-target
    mount --bind "$d/passwd" /etc/passwd && mount --bind "$r/etc/shadow" /etc/shadow &&
    mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd "$c" &&
    mount --bind "$r" "$c" && mount --bind "$t/sbin" "$c/usr/local/sbin" && mount --bind /dev "$c/dev" &&
    mount -t proc proc "$c/proc" && mount -t tmpfs -o mode=0755 tmpfs "$c/run" &&
    exec /usr/sbin/sshd -D -e -f "$d/sshd_config"' sh "$d" "$T" "$R" >"$d/log" 2>&1 &
  SSHD_PID=$!
  cleanup_pid "$SSHD_PID"
  wait_listen "$SSH_PORT" "$SSHD_PID" && return 0
  cat "$d/log"
  kill -0 "$SSHD_PID" 2>/dev/null || fail "the node's sshd did not start"
  fail "the node's sshd did not listen on 127.0.0.1:$SSH_PORT"
}
stop_target_sshd() {
  [[ -n $SSHD_PID ]] || return 0
  stop_pid "$SSHD_PID"; SSHD_PID=
  return 0
}

# ssh_try USER password|publickey [KEYFILE]: one login to the node's sshd
# with paramiko (the password on stdin, never argv). Prints "ok", "refused",
# "refused; the server allows: TYPES" when sshd does not offer the method, or
# "error: ..." when the login could not be tried.
ssh_try() {
  /usr/bin/python3 -c '
import sys, paramiko
user, how, keyfile, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = paramiko.SSHClient(); c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
def load(path):     # by its own class: with key_filename paramiko reports the last class it tried
    for cls in (paramiko.RSAKey, paramiko.Ed25519Key):
        try:
            return cls.from_private_key_file(path)
        except paramiko.SSHException:
            pass
    raise paramiko.SSHException("no RSA or Ed25519 private key in " + path)
kw = {"password": sys.stdin.read()} if how == "password" else {"pkey": load(keyfile)}
try:
    c.connect("127.0.0.1", port=port, username=user, timeout=10, look_for_keys=False, allow_agent=False, **kw)
    print("ok")
except paramiko.BadAuthenticationType as e:
    print("refused; the server allows: " + ",".join(e.allowed_types))
except paramiko.AuthenticationException:
    print("refused")
except Exception as e:
    print("error: %s: %s" % (type(e).__name__, e))
finally:
    c.close()' "$1" "$2" "${3:-}" "$SSH_PORT"
}
