#!/bin/bash
# kickstart/setup.sh: sets up a kiln boot server on Debian 12 (as root) from
# the files beside it (dnsmasq.conf, nginx.conf, boot.ipxe, local.ipxe),
# with the operator's settings. docs/bootserver.md is the operator's page.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
ME=setup.sh
umask 022   # nginx's workers (www-data) read what is written

usage() {
  cat <<'EOF'
Usage: kickstart/setup.sh --interface IF [options]
       kickstart/setup.sh --stop [--root DIR]

Sets up a kiln boot server (dnsmasq: DHCP/TFTP, nginx: HTTP, optionally tang)
on Debian 12, as root, from the files in kickstart/. A second run with the same
settings changes nothing and says so; a changed setting rewrites only the files
it changes and restarts only the services those files belong to.

  --interface IF      the provisioning network's interface (required)
  --address IP        the boot server's IPv4 on IF (default: IF's first IPv4)
  --dhcp proxy|full   proxy (default): the lab's own DHCP server hands out the
                      addresses, dnsmasq only adds the boot options, and never
                      answers a client that is not PXE booting. full: dnsmasq
                      is the DHCP server for --range; before it starts, setup.sh
                      probes IF for another DHCP server (busybox udhcpc, lease
                      released at once) and refuses, naming it, if one answers.
  --range START,END   the addresses full DHCP hands out (full only; required
                      there; inside IF's subnet)
  --root DIR          where everything is laid out (default /srv/kiln):
                        DIR/etc   dnsmasq.conf nginx.conf tang.conf
                        DIR/tftp  undionly.kpxe ipxe.efi boot.ipxe vmlinuz initrd.img
                        DIR/www/kiln/{boot,specs,hosts,images}  what nginx serves
                        DIR/cache nginx's image slice cache and temp files
                        DIR/log   dnsmasq.log (log-dhcp) nginx-access.log
                                  nginx-error.log tang.log
                        DIR/run   dnsmasq.pid nginx.pid tang.pid (--no-systemd)
                        DIR/tang  tang's keys (mode 0700)
  --specs DIR         the spec dir, linked as DIR/www/kiln/specs (served at
                      /kiln/specs/; default: an empty dir there)
  --image-store URL   where nginx's slice cache fetches base images from
                      (http://HOST[:PORT]; default http://127.0.0.1:8081)
  --http-port N       nginx's port on ADDRESS (default 80)
  --kernel FILE --initrd FILE
                      the netboot kernel and initramfs (default: built with
                      initramfs/build.sh, which takes minutes)
  --kiln-args "..."   extra kernel arguments for boot.ipxe's kiln-args line,
                      e.g. kiln.enlist=http://CONTROLLER/kiln/enlist
  --ipxe-dir DIR      where undionly.kpxe and ipxe.efi are
                      (default /usr/lib/ipxe, Debian's ipxe package)
  --tang              also run tangd on ADDRESS:--tang-port (default 7500)
  --no-systemd        start the daemons directly (pid files under DIR/run);
                      default: kiln-*.service units where systemd is PID 1
  --dry-run           print every file it would write (content or diff) and
                      every command; write nothing, start nothing
  --stop              stop what setup.sh started under --root (its pid files;
                      its units, disabled too, where systemd runs)
  -h, --help          this text

Packages (installed only when missing, with no service starting during the
install): dnsmasq-base, nginx-light, ipxe, tang and socat (--tang). setup.sh
runs its own daemons; it never starts Debian's nginx or tang services.
EOF
}

die() { echo "$ME: $*" >&2; exit 1; }

IFACE= ADDR= DHCP=proxy RANGE= ROOT=/srv/kiln SPECS= STORE=http://127.0.0.1:8081 PORT=80
KERNEL= INITRD= KARGS= IPXE_DIR= TANG=0 TANG_PORT=7500 SYSTEMD=auto DRY=0 STOP=0
while (($#)); do
  case $1 in
    --interface) IFACE=${2:?--interface needs a value}; shift ;;
    --address) ADDR=${2:?--address needs a value}; shift ;;
    --dhcp) DHCP=${2:?--dhcp needs proxy or full}; shift ;;
    --range) RANGE=${2:?--range needs START,END}; shift ;;
    --root) ROOT=${2:?--root needs a dir}; shift ;;
    --specs) SPECS=${2:?--specs needs a dir}; shift ;;
    --image-store) STORE=${2:?--image-store needs a URL}; shift ;;
    --http-port) PORT=${2:?--http-port needs a port}; shift ;;
    --kernel) KERNEL=${2:?--kernel needs a file}; shift ;;
    --initrd) INITRD=${2:?--initrd needs a file}; shift ;;
    --kiln-args) KARGS=${2?--kiln-args needs a value}; shift ;;
    --ipxe-dir) IPXE_DIR=${2:?--ipxe-dir needs a dir}; shift ;;
    --tang) TANG=1 ;;
    --tang-port) TANG_PORT=${2:?--tang-port needs a port}; shift ;;
    --no-systemd) SYSTEMD=0 ;;
    --dry-run) DRY=1 ;;
    --stop) STOP=1 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
[[ $ROOT == /* ]] || ROOT=$PWD/$ROOT
ROOT=${ROOT%/}
# ROOT goes into the config files and command lines as it is
[[ $ROOT =~ ^[A-Za-z0-9._/+-]+$ ]] || die "bad --root '$ROOT': letters, digits and . _ + - / only"
if [[ $SYSTEMD == auto ]]; then
  [[ $(cat /proc/1/comm 2>/dev/null) == systemd ]] && SYSTEMD=1 || SYSTEMD=0
fi
UNITDIR=/etc/systemd/system
SERVICES=(dnsmasq nginx tang)

# --- running daemons ------------------------------------------------------------
# pid of our daemon NAME when it runs (its pid file names a live process of
# that program), else empty
our_pid() {
  local f=$ROOT/run/$1.pid p comm
  [[ -r $f ]] || return 0
  p=$(tr -dc 0-9 <"$f")
  [[ -n $p ]] && kill -0 "$p" 2>/dev/null || return 0
  comm=$(cat "/proc/$p/comm" 2>/dev/null)
  case $1 in tang) [[ $comm == socat ]] ;; *) [[ $comm == "$1" ]] ;; esac && echo "$p"
  return 0
}
unit_active() { systemctl is-active -q "kiln-$1.${2:-service}" 2>/dev/null; }
running() {  # running NAME: is our daemon up
  if ((SYSTEMD)); then
    if [[ $1 == tang ]]; then unit_active tang socket; else unit_active "$1"; fi
  else [[ -n $(our_pid "$1") ]]; fi
}
stop_daemon() {
  local p _
  if ((SYSTEMD)); then
    if [[ $1 == tang ]]; then systemctl stop kiln-tang.socket; else systemctl stop "kiln-$1.service"; fi
    ((STOP)) && systemctl disable -q "kiln-$1.$([[ $1 == tang ]] && echo socket || echo service)"
    return 0
  fi
  p=$(our_pid "$1")
  [[ -n $p ]] || return 0
  kill "$p"
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && kill -9 "$p"
  rm -f "$ROOT/run/$1.pid"
}

# --stop: the daemons of the pid files, and the units where systemd runs
# (whichever way they were started)
if ((STOP)); then
  stopped=()
  [[ $(cat /proc/1/comm 2>/dev/null) == systemd ]] && sd=1 || sd=0
  for s in "${SERVICES[@]}"; do
    for SYSTEMD in 0 $( ((sd)) && echo 1); do
      if running "$s"; then
        ((DRY)) && { echo "would stop $s"; continue; }
        stop_daemon "$s"; [[ " ${stopped[*]} " == *" $s "* ]] || stopped+=("$s")
      fi
    done
  done
  echo "stopped: ${stopped[*]:-nothing was running}"
  exit 0
fi

# --- checks: everything is refused before anything is written --------------------
[[ $EUID -eq 0 ]] || die "must run as root"
[[ -n $IFACE ]] || die "--interface is required (see --help)"
ip -o link show dev "$IFACE" >/dev/null 2>&1 || die "no such interface '$IFACE'"
mapfile -t CIDRS < <(ip -o -4 addr show dev "$IFACE" | awk '{print $4}')
((${#CIDRS[@]})) || die "interface '$IFACE' has no IPv4 address"
CIDR=
if [[ -z $ADDR ]]; then CIDR=${CIDRS[0]}; ADDR=${CIDR%/*}
else
  for c in "${CIDRS[@]}"; do [[ ${c%/*} == "$ADDR" ]] && CIDR=$c; done
  [[ -n $CIDR ]] || die "address $ADDR is not on interface '$IFACE' (it has ${CIDRS[*]})"
fi
PREFIX=${CIDR#*/}
ip2n() { local IFS=.; set -- $1; echo $(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 )); }
n2ip() { echo "$(( $1 >> 24 & 255 )).$(( $1 >> 16 & 255 )).$(( $1 >> 8 & 255 )).$(( $1 & 255 ))"; }
is_ip() { [[ $1 =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] &&
  (( BASH_REMATCH[1] < 256 && BASH_REMATCH[2] < 256 && BASH_REMATCH[3] < 256 && BASH_REMATCH[4] < 256 )); }
MASK=$(( (0xffffffff << (32 - PREFIX)) & 0xffffffff ))
NET=$(n2ip $(( $(ip2n "$ADDR") & MASK )))
SUBNET=$NET/$PREFIX
case $DHCP in
  proxy) [[ -z $RANGE ]] || die "--range is for --dhcp full only: proxy DHCP hands out no addresses (the lab's DHCP server does)" ;;
  full)
    [[ -n $RANGE ]] || die "--dhcp full needs --range START,END"
    START=${RANGE%%,*} END=${RANGE#*,}
    [[ $RANGE == *,* ]] && is_ip "$START" && is_ip "$END" || die "bad --range '$RANGE': give START,END (IPv4 addresses)"
    for a in "$START" "$END"; do
      (( ($(ip2n "$a") & MASK) == $(ip2n "$NET") )) || die "range $RANGE is outside $IFACE's subnet $SUBNET"
    done
    (( $(ip2n "$START") <= $(ip2n "$END") )) || die "range $RANGE is reversed (start after end)" ;;
  *) die "bad --dhcp '$DHCP': proxy or full" ;;
esac
[[ $PORT =~ ^[0-9]+$ ]] && ((PORT > 0 && PORT < 65536)) || die "bad --http-port '$PORT'"
[[ $TANG_PORT =~ ^[0-9]+$ ]] && ((TANG_PORT > 0 && TANG_PORT < 65536)) || die "bad --tang-port '$TANG_PORT'"
[[ $STORE =~ ^http://([^/:]+)(:([0-9]+))?/?$ ]] || die "bad --image-store '$STORE': give http://HOST[:PORT]"
STORE_HP=${BASH_REMATCH[1]}:${BASH_REMATCH[3]:-80}
if [[ -n $KERNEL || -n $INITRD ]]; then
  [[ -n $KERNEL && -n $INITRD ]] || die "--kernel and --initrd go together"
  [[ -f $KERNEL ]] || die "kernel file '$KERNEL' does not exist"
  [[ -f $INITRD ]] || die "initrd file '$INITRD' does not exist"
fi
if [[ -n $SPECS ]]; then
  [[ -d $SPECS ]] || die "specs dir '$SPECS' does not exist"
  SPECS=$(cd "$SPECS" && pwd)
fi
if [[ -n $IPXE_DIR ]]; then
  for f in undionly.kpxe ipxe.efi; do [[ -f $IPXE_DIR/$f ]] || die "iPXE file '$IPXE_DIR/$f' does not exist"; done
fi
IPXE_DIR=${IPXE_DIR:-${KILN_IPXE_DIR:-/usr/lib/ipxe}}   # KILN_IPXE_DIR: the default, for the tests

# port_user PROTO PORT: the listener on ADDR:PORT (or the wildcard) that is
# not one of our own daemons, as ss prints it; empty when the port is free
port_user() {
  local ours=() s p line
  for s in "${SERVICES[@]}"; do p=$(our_pid "$s"); [[ -z $p ]] || ours+=("$p"); done
  if ((SYSTEMD)); then
    for s in dnsmasq nginx tang; do
      p=$(systemctl show -p MainPID --value "kiln-$s.service" 2>/dev/null || true)
      [[ -z $p || $p == 0 ]] || ours+=("$p")
    done
    unit_active tang socket && ours+=(1)   # kiln-tang.socket's port is held by systemd
  fi
  ss -Hlnp -"$1" 2>/dev/null | awk -v a="$ADDR" -v p="$2" '{ n = split($4, x, ":"); port = x[n];
      host = substr($4, 1, length($4) - length(port) - 1); sub(/%.*/, "", host)
      if (port == p && (host == a || host == "0.0.0.0" || host == "*" || host == "[::]")) print }' |
  while read -r line; do
    for p in "${ours[@]}"; do [[ $line == *"pid=$p,"* ]] && continue 2; done
    # a worker of our nginx (its parent is ours)
    for p in $(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2); do
      [[ " ${ours[*]} " == *" $(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ') "* ]] && continue 2
    done
    echo "$line" | grep -o 'users:(.*' || echo "$line"
  done | head -1
}
check_port() {  # check_port WHAT PROTO PORT
  local u
  u=$(port_user "$2" "$3")
  [[ -z $u ]] || die "$1 port $3 is already in use on $ADDR ($u)"
}
check_port HTTP t "$PORT"
check_port TFTP u 69
[[ $DHCP == proxy ]] || check_port DHCP u 67
((TANG)) && check_port tang t "$TANG_PORT"

# Full DHCP beside another DHCP server would hand out addresses against it:
# ask the network (busybox udhcpc, a script that only records the answer;
# the lease, if any, is released at once) and refuse when a server other
# than this one answers.
WORK=$(mktemp -d /tmp/kiln-setup.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if [[ $DHCP == full ]]; then
  cat >"$WORK/probe.sh" <<'EOF'
#!/bin/sh
[ "$1" = bound ] && echo "${serverid:-$siaddr} ${ip:-}" >>"$PROBE_OUT"
exit 0
EOF
  chmod 0755 "$WORK/probe.sh"
  ((DRY)) && echo "+ busybox udhcpc -i $IFACE -n -q -R -t 3 -T 1 -A 1 -s PROBE-SCRIPT  # another DHCP server on $IFACE?"
  PROBE_OUT=$WORK/probe.out busybox udhcpc -i "$IFACE" -n -q -R -t 3 -T 1 -A 1 -s "$WORK/probe.sh" >/dev/null 2>&1 || true
  if [[ -s $WORK/probe.out ]]; then
    read -r srv offered <"$WORK/probe.out"
    [[ $srv == "$ADDR" ]] ||
      die "another DHCP server answers on $IFACE: $srv (it offered ${offered:-an address}); full DHCP would compete with it: use --dhcp proxy (the default) beside it"
  fi
fi

# --- packages ---------------------------------------------------------------------
have_pkg() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'; }
NEED=()
[[ -x /usr/sbin/dnsmasq ]] || NEED+=(dnsmasq-base)
command -v nginx >/dev/null || NEED+=(nginx-light)
[[ -f $IPXE_DIR/undionly.kpxe && -f $IPXE_DIR/ipxe.efi ]] || NEED+=(ipxe)
if ((TANG)); then
  [[ -x /usr/libexec/tangd ]] || NEED+=(tang)
  ((SYSTEMD)) || command -v socat >/dev/null || NEED+=(socat)
fi
run() { echo "+ $*"; ((DRY)) || "$@"; }
INSTALLED=()
if ((${#NEED[@]})); then
  echo "packages: installing ${NEED[*]} (no service starts during the install)"
  policy=/usr/sbin/policy-rc.d
  if ((DRY)); then
    echo "+ printf '#!/bin/sh\\nexit 101\\n' >$policy  # until the install ends"
    echo "+ apt-get update -qq"
    echo "+ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${NEED[*]}"
  else
    if [[ ! -e $policy ]]; then
      trap 'rm -rf "$WORK"; rm -f "$policy"' EXIT
      printf '#!/bin/sh\n# kickstart/setup.sh: no service starts while it installs packages\nexit 101\n' >"$policy"
      chmod 0755 "$policy"
    fi
    run apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive run apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${NEED[@]}"
    [[ ! -e $policy ]] || ! grep -q kickstart/setup.sh "$policy" || rm -f "$policy"
    INSTALLED=("${NEED[@]}")
  fi
else
  echo "packages: all present (dnsmasq, nginx, iPXE$( ((TANG)) && echo ", tang"))"
fi
[[ -f $IPXE_DIR/undionly.kpxe || $DRY == 1 ]] || die "no '$IPXE_DIR/undionly.kpxe' after installing ipxe"

# --- the netboot kernel and initramfs -------------------------------------------------
if [[ -z $KERNEL ]]; then
  if ((DRY)); then
    echo "+ $SRC/initramfs/build.sh  # prints KILN_KERNEL= and KILN_INITRD="
    KERNEL='(built)' INITRD='(built)'
  else
    echo "+ $SRC/initramfs/build.sh"
    out=$("$SRC/initramfs/build.sh") || die "initramfs/build.sh failed"
    KERNEL=$(sed -n 's/^KILN_KERNEL=//p' <<<"$out") INITRD=$(sed -n 's/^KILN_INITRD=//p' <<<"$out")
    [[ -f $KERNEL && -f $INITRD ]] || die "initramfs/build.sh printed no KILN_KERNEL=/KILN_INITRD= files"
  fi
fi

# --- the files, made in WORK/new (a tree like ROOT), then compared ----------------------
N=$WORK/new
mkdir -p "$N/etc"
# edit FILE SED-EXPR...: each expression must match (the example is what we expect)
edit() {
  local f=$1 e; shift
  for e in "$@"; do
    sed -n "${e%%|*}p" "$f" | grep -q . || die "kickstart/$(basename "$f"): no line matches '${e%%|*}' (the example changed?)"
  done
}
HOSTPORT=$ADDR; ((PORT == 80)) || HOSTPORT=$ADDR:$PORT
URL=http://$HOSTPORT

# dnsmasq.conf: the example with the interface, range, paths and URL filled in
d=(-e "s|^interface=eth1 .*|interface=$IFACE|"
   -e "s|^tftp-root=/srv/tftp|tftp-root=$ROOT/tftp|"
   -e "s|^dhcp-boot=tag:efihttp,http://192.0.2.1/|dhcp-boot=tag:efihttp,$URL/|"
   -e "s|^dhcp-boot=tag:ipxe,boot.ipxe,,192.0.2.1\$|dhcp-boot=tag:ipxe,boot.ipxe,,$ADDR|")
if [[ $DHCP == proxy ]]; then
  d+=(-e "s|^dhcp-range=192.0.2.0,proxy|dhcp-range=$NET,proxy|")
else
  d+=(-e "s|^dhcp-range=192.0.2.0,proxy|dhcp-range=$START,$END,12h|"
      -e "s|^pxe-service=|#pxe-service=|" -e "s|^#dhcp-boot=tag:!ipxe,|dhcp-boot=tag:!ipxe,|")
fi
for e in '/^interface=eth1 /' '/^tftp-root=\/srv\/tftp$/' '/^dhcp-range=192.0.2.0,proxy$/' \
         '/^dhcp-boot=tag:efihttp,http:\/\/192.0.2.1\//' '/^dhcp-boot=tag:ipxe,boot.ipxe,,192.0.2.1$/' '/^pxe-service=/' '/^#dhcp-boot=tag:!ipxe,/'; do
  grep -q "$(sed -e 's|^/||' -e 's|/$||' -e 's|\\/|/|g' <<<"$e")" "$HERE/dnsmasq.conf" ||
    die "kickstart/dnsmasq.conf: no line matches $e (the example changed?)"
done
{
  sed "${d[@]}" "$HERE/dnsmasq.conf"
  cat <<EOF

# --- kickstart/setup.sh: this server's own (--dhcp $DHCP) ---
bind-dynamic
log-facility=$ROOT/log/dnsmasq.log
pid-file=$ROOT/run/dnsmasq.pid
dhcp-leasefile=$ROOT/run/dnsmasq.leases
EOF
} >"$N/etc/dnsmasq.conf"

# nginx.conf: the example with its address, port, paths and image store filled in
for e in '^pid /run/nginx-kiln.pid;' 'access_log /var/log/nginx/kiln-access.log;' 'error_log /var/log/nginx/kiln-error.log;' \
         'proxy_cache_path /var/cache/nginx/kiln ' 'server 192.0.2.10:80; ' '  listen 80; ' 'root /srv/kiln/www;' '^http {'; do
  grep -q -- "$e" "$HERE/nginx.conf" || die "kickstart/nginx.conf: no line matches '$e' (the example changed?)"
done
sed -e "s|^pid /run/nginx-kiln.pid;|pid $ROOT/run/nginx.pid;|" \
    -e "s|/var/log/nginx/kiln-access.log|$ROOT/log/nginx-access.log|" \
    -e "s|/var/log/nginx/kiln-error.log|$ROOT/log/nginx-error.log|" \
    -e "s|/var/cache/nginx/kiln |$ROOT/cache/images |" \
    -e "s|server 192.0.2.10:80; .*|server $STORE_HP;|" \
    -e "s|  listen 80; .*|  listen $ADDR:$PORT;|" \
    -e "s|root /srv/kiln/www;|root $ROOT/www;|" \
    -e "s|^http {|http {\n    client_body_temp_path $ROOT/cache/tmp; proxy_temp_path $ROOT/cache/tmp;\n    fastcgi_temp_path $ROOT/cache/tmp; uwsgi_temp_path $ROOT/cache/tmp; scgi_temp_path $ROOT/cache/tmp;|" \
    "$HERE/nginx.conf" >"$N/etc/nginx.conf"

# boot.ipxe: the set lines filled in (kernel and initramfs over HTTP)
for e in '^set kiln-base ' '^set kiln-specs ' '^set kiln-hosts ' '^set kiln-args '; do
  grep -q "$e" "$HERE/boot.ipxe" || die "kickstart/boot.ipxe: no line matches '$e' (the example changed?)"
done
base_args=$(sed -n 's/^set kiln-args //p' "$HERE/boot.ipxe")
[[ $KARGS != *$'\n'* ]] || die "bad --kiln-args: one line only"
kargs=${KARGS//\\/\\\\}; kargs=${kargs//&/\\&}; kargs=${kargs//|/\\|}   # for sed's replacement
sed -e "s|^set kiln-base .*|set kiln-base $URL/kiln/boot|" \
    -e "s|^set kiln-specs .*|set kiln-specs $URL/kiln/specs|" \
    -e "s|^set kiln-hosts .*|set kiln-hosts $URL/kiln/hosts|" \
    -e "s|^set kiln-args .*|set kiln-args $base_args${kargs:+ $kargs}|" \
    "$HERE/boot.ipxe" >"$N/etc/boot.ipxe"

if ((TANG)); then
  printf '# kickstart/setup.sh: tangd on this address and port, keys in %s/tang/db\nTANG_ADDRESS=%s\nTANG_PORT=%s\n' \
    "$ROOT" "$ADDR" "$TANG_PORT" >"$N/etc/tang.conf"
fi

# systemd units (written to /etc/systemd/system)
if ((SYSTEMD)); then
  mkdir -p "$N/units"
  cat >"$N/units/kiln-dnsmasq.service" <<EOF
[Unit]
Description=kiln boot server: dnsmasq (DHCP $DHCP, TFTP) on $IFACE
After=network-online.target
Wants=network-online.target
[Service]
ExecStart=/usr/sbin/dnsmasq -k --conf-file=$ROOT/etc/dnsmasq.conf
Restart=on-failure
[Install]
WantedBy=multi-user.target
EOF
  cat >"$N/units/kiln-nginx.service" <<EOF
[Unit]
Description=kiln boot server: nginx on $ADDR:$PORT
After=network-online.target
Wants=network-online.target
[Service]
ExecStart=$(command -v nginx || echo /usr/sbin/nginx) -c $ROOT/etc/nginx.conf -p $ROOT -e $ROOT/log/nginx-error.log -g 'daemon off;'
Restart=on-failure
[Install]
WantedBy=multi-user.target
EOF
  if ((TANG)); then
    cat >"$N/units/kiln-tang.socket" <<EOF
[Unit]
Description=kiln boot server: tang on $ADDR:$TANG_PORT
[Socket]
ListenStream=$ADDR:$TANG_PORT
FreeBind=yes
Accept=yes
[Install]
WantedBy=sockets.target
EOF
    cat >"$N/units/kiln-tang@.service" <<EOF
[Unit]
Description=kiln boot server: tang request
[Service]
StandardInput=socket
StandardOutput=socket
StandardError=journal
ExecStart=/usr/libexec/tangd $ROOT/tang/db
EOF
  fi
fi

# dst for a staged file
declare -A DEST
DEST[etc/dnsmasq.conf]=$ROOT/etc/dnsmasq.conf
DEST[etc/nginx.conf]=$ROOT/etc/nginx.conf
((TANG)) && DEST[etc/tang.conf]=$ROOT/etc/tang.conf
# copies (source file, destination); the boot files go to TFTP and to www
COPIES=()
for dir in tftp www/kiln/boot; do
  COPIES+=("$IPXE_DIR/undionly.kpxe|$ROOT/$dir/undionly.kpxe" "$IPXE_DIR/ipxe.efi|$ROOT/$dir/ipxe.efi"
           "$N/etc/boot.ipxe|$ROOT/$dir/boot.ipxe" "$KERNEL|$ROOT/$dir/vmlinuz" "$INITRD|$ROOT/$dir/initrd.img")
done
for k in "${!DEST[@]}"; do COPIES+=("$N/$k|${DEST[$k]}"); done
if ((SYSTEMD)); then
  for f in "$N"/units/*; do COPIES+=("$f|$UNITDIR/$(basename "$f")"); done
fi

# affects DEST-PATH: the service a file belongs to (restarted when it changes)
affects() {
  case $1 in
    "$ROOT/etc/dnsmasq.conf"|*/kiln-dnsmasq.service) echo dnsmasq ;;
    "$ROOT/etc/nginx.conf"|*/kiln-nginx.service) echo nginx ;;
    "$ROOT/etc/tang.conf"|*/kiln-tang*) echo tang ;;
  esac
}
is_text() { [[ $1 == */etc/* || $1 == */boot.ipxe || $1 == $UNITDIR/* ]]; }

CHANGED=() UNCHANGED=() RESTART=()
DIRS=("$ROOT" "$ROOT/etc" "$ROOT/tftp" "$ROOT/www/kiln/boot" "$ROOT/www/kiln/hosts" "$ROOT/www/kiln/images"
      "$ROOT/cache/images" "$ROOT/cache/tmp" "$ROOT/log" "$ROOT/run")
((TANG)) && DIRS+=("$ROOT/tang")
for d in "${DIRS[@]}"; do
  [[ -d $d ]] && continue
  if ((DRY)); then echo "would create directory $d/"; else mkdir -p "$d"; fi
  CHANGED+=("$d/")
done
# specs: a link to --specs, else a dir of its own
SL=$ROOT/www/kiln/specs
if [[ -n $SPECS ]]; then
  if [[ ! -L $SL || $(readlink "$SL") != "$SPECS" ]]; then
    [[ -e $SL && ! -L $SL ]] && { [[ -z $(ls -A "$SL") ]] || die "$SL is a dir with files: move them to $SPECS first"; }
    if ((DRY)); then echo "would link $SL -> $SPECS"; else rm -rf "$SL"; ln -s "$SPECS" "$SL"; fi
    CHANGED+=("$SL -> $SPECS")
  fi
elif [[ ! -d $SL ]]; then
  if ((DRY)); then echo "would create directory $SL/"; else rm -f "$SL"; mkdir -p "$SL"; fi
  CHANGED+=("$SL/")
fi

for c in "${COPIES[@]}"; do
  from=${c%%|*} to=${c#*|}
  if [[ -f $to && -f $from ]] && cmp -s "$from" "$to"; then UNCHANGED+=("$to"); continue; fi
  if ((DRY)); then
    if [[ $from == '(built)' ]]; then echo "would copy the built kernel/initramfs to $to"
    elif ! is_text "$to"; then echo "would copy $from to $to ($(stat -c %s "$from") bytes)"
    elif [[ -f $to ]]; then echo "would change $to:"; diff -u "$to" "$from" | sed '1,2d' || true
    else echo "would write $to:"; sed 's/^/    /' "$from"; fi
  else
    mkdir -p "$(dirname "$to")"
    cp "$from" "$to.kiln-new" && mv -f "$to.kiln-new" "$to"
  fi
  CHANGED+=("$to")
  s=$(affects "$to")
  [[ -z $s || " ${RESTART[*]} " == *" $s "* ]] || RESTART+=("$s")
done
if ((TANG)) && [[ ! -d $ROOT/tang/db ]]; then
  if ((DRY)); then echo "+ /usr/libexec/tangd-keygen $ROOT/tang/db  # (dir mode 0700)"
  else (umask 077; mkdir -p "$ROOT/tang/db"); chmod 0700 "$ROOT/tang"; /usr/libexec/tangd-keygen "$ROOT/tang/db"; fi
  CHANGED+=("$ROOT/tang/db/ (new keys)")
  [[ " ${RESTART[*]} " == *" tang "* ]] || RESTART+=(tang)
fi
((SYSTEMD)) && ((${#CHANGED[@]})) && [[ " ${CHANGED[*]} " == *"$UNITDIR/"* ]] && run systemctl daemon-reload

# --- the daemons --------------------------------------------------------------------
start_daemon() {
  if ((SYSTEMD)); then
    if [[ $1 == tang ]]; then run systemctl enable --now kiln-tang.socket
    else run systemctl enable --now "kiln-$1.service"; fi
    return 0
  fi
  case $1 in
    dnsmasq) run /usr/sbin/dnsmasq --conf-file="$ROOT/etc/dnsmasq.conf" ;;
    nginx) run nginx -c "$ROOT/etc/nginx.conf" -p "$ROOT" -e "$ROOT/log/nginx-error.log" ;;
    tang)
      echo "+ socat TCP-LISTEN:$TANG_PORT,bind=$ADDR,reuseaddr,fork EXEC:'/usr/libexec/tangd $ROOT/tang/db' &"
      ((DRY)) && return 0
      setsid socat "TCP-LISTEN:$TANG_PORT,bind=$ADDR,reuseaddr,fork" "EXEC:/usr/libexec/tangd $ROOT/tang/db" \
        </dev/null >/dev/null 2>>"$ROOT/log/tang.log" &
      echo $! >"$ROOT/run/tang.pid" ;;
  esac
}
STARTED=() RESTARTED=() STOPPED=() KEPT=()
WANT=(dnsmasq nginx); ((TANG)) && WANT+=(tang)
if ((!DRY)); then
  /usr/sbin/dnsmasq --test --conf-file="$ROOT/etc/dnsmasq.conf" >/dev/null 2>&1 ||
    die "dnsmasq refuses $ROOT/etc/dnsmasq.conf: $(/usr/sbin/dnsmasq --test --conf-file="$ROOT/etc/dnsmasq.conf" 2>&1)"
  nginx -t -q -c "$ROOT/etc/nginx.conf" -p "$ROOT" -e "$ROOT/log/nginx-error.log" 2>"$WORK/nginx-t" ||
    die "nginx refuses $ROOT/etc/nginx.conf: $(cat "$WORK/nginx-t")"
fi
for s in "${WANT[@]}"; do
  if running "$s"; then
    if [[ " ${RESTART[*]} " == *" $s "* ]]; then
      if ((DRY)); then echo "+ (stop $s)"; else stop_daemon "$s"; fi
      start_daemon "$s"; RESTARTED+=("$s")
    else KEPT+=("$s"); fi
  else
    start_daemon "$s"; STARTED+=("$s")
  fi
done
if ((!TANG)) && running tang; then
  if ((DRY)); then echo "+ (stop tang: no --tang)"; else stop_daemon tang; fi
  STOPPED+=(tang)
fi
# Debian's own nginx and tang services (port 80 / 7500 of every address) stay off
if ((SYSTEMD && !DRY)); then
  for p in "${INSTALLED[@]}"; do
    case $p in
      nginx-light) run systemctl disable --now nginx.service || true ;;
      tang) run systemctl disable --now tangd.socket || true ;;
    esac
  done
fi
# up: running, and (nginx, tang) listening; 10 s each
listening() { ss -Htln 2>/dev/null | awk -v a="$ADDR:$1" '$4 == a { f = 1 } END { exit !f }'; }
if ((!DRY)); then
  for s in "${WANT[@]}"; do
    for _ in $(seq 100); do
      if running "$s"; then
        case $s in nginx) listening "$PORT" && break ;; tang) listening "$TANG_PORT" && break ;; *) break ;; esac
      fi
      sleep 0.1
    done
    running "$s" || die "$s did not start (see $ROOT/log/)"
  done
fi

# --- what was done, and what to do next ------------------------------------------------
W=would; ((DRY)) || W=
if ((${#CHANGED[@]} == 0 && ${#STARTED[@]} == 0 && ${#RESTARTED[@]} == 0 && ${#STOPPED[@]} == 0)); then
  echo "nothing changed: ${#UNCHANGED[@]} files as they were, running: ${KEPT[*]}"
else
  ((DRY)) && echo "dry run: nothing was written, nothing started"
  for f in "${CHANGED[@]}"; do echo "${W:+would be }written: $f"; done
  echo "unchanged: ${#UNCHANGED[@]} files"
  echo "${W:+would be }started: ${STARTED[*]:-none}"
  echo "${W:+would be }restarted: ${RESTARTED[*]:-none}"
  ((${#STOPPED[@]})) && echo "${W:+would be }stopped: ${STOPPED[*]}"
  echo "running unchanged: ${KEPT[*]:-none}"
fi
SPECDIR=${SPECS:-$ROOT/www/kiln/specs}
cat <<EOF

kiln boot server on $IFACE ($ADDR, DHCP $DHCP): $URL/kiln/, TFTP $ADDR
Next:
  kiln validate SPEC.yaml                          check a spec
  cp SPEC.yaml $SPECDIR/<mac>.yaml     one node (MAC lower case, colons)
  cp rack.yaml $SPECDIR/rack.yaml      every node without a file of its own
  cp $HERE/local.ipxe $ROOT/www/kiln/hosts/<mac>.ipxe   mark a node deployed (boots its disks)
  tail -f $ROOT/log/dnsmasq.log $ROOT/log/nginx-access.log   watch a node boot
  $0 --stop --root $ROOT   stop the boot server
EOF
