# The QEMU rig: boots the real kiln initramfs on blank virtual disks, with
# its host spec served by a real nginx on 127.0.0.1, and reads back what the
# guest's kernel reports. Source it from a tests/rig/test-*.sh script:
#
#   . "$SRC/tests/rig/lib.sh"
#   rig_init                            # temp dir, cleanup trap, builds the initramfs
#   rig_disks 4 2G                      # disk0..disk3 (RIG_DISK[i]), blank sparse files
#   rig_disk extra 2G                   # one more, by name (not selected by the spec)
#   rig_add_initrd_segment DIR          # DIR's files in the guest's initramfs too (report hooks)
#   rig_spec specs/raid10.yaml          # serve it as the spec of RIG_MAC (with @VARS@ filled)
#   rig_boot --pxe                      # or --direct (-kernel/-initrd: faster); waits for the guest
#   rig_report_section mdstat           # what the guest's kernel said
#   rig_expect_exit 0
#   rig_boot_image; rig_tang_start      # the bootable image, Tang on loopback
#   rig_boot_disk [--uefi] [--without 0] # boot the installed system from its disks
#   rig_ssh_forward; rig_controller_ssh 10.0.2.15  # the guest's sshd for the stand-in's addHost
#   rig_job_setup SPEC PREFIX; rig_job_boot_installed 10.0.2.15  # the whole job's pieces
#   rig_fixture_boot boot-tang specs/boot-tang.yaml  # start from the shared install:
#                                       # qcow2 overlays of its disks, its Tang keys, spec, boot 1
#   rig_disk_layer; rig_boot ...; rig_check "..." rig_disks_unwritten  # the boot wrote nothing
#
# Install once, boot many: a test that starts from a finished install boots
# copy-on-write qcow2 overlays (backing file: the raw disks) of one install
# made per ctest run by tests/rig/fixture-NAME.sh, in BUILD/rig-fixtures/NAME;
# tests that judge the install itself still install. See "install once,
# boot many" below for what the fixture holds and when it is made.
#
# Assertions only look at the guest report (written by /init to the second
# serial port, see initramfs/init), never at kiln's own log.
#
# Knobs (environment): RIG_MEM (MiB, 1024), RIG_SMP (2), RIG_TIMEOUT (s, 600),
# RIG_KEEP=1 keeps the temp dir, RIG_REPLAY=DIR checks a kept dir's reports
# instead of booting, KILN_CACHE (initramfs cache), KILN_RIG_INITRD /
# KILN_RIG_KERNEL (use these instead of building), RIG_APPEND (more kernel args),
# RIG_DISK_CACHE (the disks' host-side cache options, "cache=unsafe": the
# host page cache, fastest; tests/rig/test-bench.sh asks for
# "cache=none,aio=threads" to measure the disk, not the page cache).
#
# Everything the rig starts (nginx, QEMU) is stopped by PID on exit, and the
# temp dir is removed, also when a test fails.

RIG_MAC=${RIG_MAC:-52:54:00:6b:69:01}
RIG_SMBIOS_SERIAL=${RIG_SMBIOS_SERIAL:-RIG0001}    # ${serial} in specs
RIG_SMBIOS_UUID=${RIG_SMBIOS_UUID:-6b696c6e-0000-4000-8000-000000000001}  # ${uuid}
RIG_HTTP_IP=10.0.2.100                  # the guest's view of the host's nginx
RIG_MEM=${RIG_MEM:-1024}
RIG_SMP=${RIG_SMP:-2}
RIG_TIMEOUT=${RIG_TIMEOUT:-600}
RIG_DISK_CACHE=${RIG_DISK_CACHE:-cache=unsafe}
RIG_DISK=()                             # disk image files, in -drive order
RIG_DISK_SERIAL=()                      # their virtio serials (kiln-disk0 ...)
RIG_PIDS=()
RIG_FAILS=0
RIG_T0=$(date +%s.%N)

rig_log() { echo "rig: $*" >&2; }
rig_skip() { echo "rig: SKIP: $*" >&2; exit 77; }
rig_die() { echo "rig: FAIL: $*" >&2; exit 1; }

rig_cleanup() {
  local rc=$? p
  for p in "${RIG_PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill "$p" 2>/dev/null; fi
  done
  for p in "${RIG_PIDS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  done
  if [[ -n ${RIG_TMP:-} && -d $RIG_TMP ]]; then
    # a failure shows the console's end; a skip or an interrupt (130) does not
    if ((rc != 0 && rc != 77 && rc != 130)) && [[ -f $RIG_TMP/serial.log ]]; then
      echo "rig: last lines of the guest console ($RIG_TMP/serial.log):" >&2
      tail -40 "$RIG_TMP/serial.log" | sed 's/^/  | /' >&2
    fi
    if [[ ${RIG_KEEP:-0} == 1 ]]; then rig_log "kept $RIG_TMP"; else rm -rf "$RIG_TMP"; fi
  fi
  return $rc
}

# rig_init: check the tools, make the temp dir, install the trap, build (or
# reuse) the kernel and initramfs, start nginx.
rig_init() {
  local t
  [[ $(id -u) == 0 ]] || rig_skip "the rig needs root (apt-get, /var/cache/kiln)"
  for t in qemu-system-x86_64 nginx socat zstd cpio; do
    command -v "$t" >/dev/null || rig_skip "'$t' is missing (bash tests/deps.sh)"
  done
  : "${SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
  : "${KILN:=$SRC/out/build/kiln}"
  [[ -x $KILN ]] || rig_die "no kiln binary at '$KILN'"
  "$KILN" help 2>/dev/null | grep -q '^  boot ' || rig_skip "this kiln has no 'boot' command yet"
  RIG_TMP=$(mktemp -d /tmp/kiln-rig.XXXXXX)
  trap rig_cleanup EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$RIG_TMP/www/specs" "$RIG_TMP/www/images" "$RIG_TMP/www/keys" "$RIG_TMP/www/reports" "$RIG_TMP/tftp" "$RIG_TMP/nginx"
  # nginx's workers run unprivileged: they traverse the temp dir, read www
  # and may write reports (PUT)
  chmod 0711 "$RIG_TMP"; chmod 0755 "$RIG_TMP/www" "$RIG_TMP/www"/*; chmod 0777 "$RIG_TMP/www/reports"
  rig_build_initramfs
  rig_http_start
}

# The initramfs: built (or reused from the cache) from the kiln under test.
# A sanitizer build cannot run in the initramfs; KILN_RIG_BINARY overrides.
rig_build_initramfs() {
  if [[ -n ${KILN_RIG_INITRD:-} && -n ${KILN_RIG_KERNEL:-} ]]; then
    RIG_INITRD=$KILN_RIG_INITRD RIG_KERNEL=$KILN_RIG_KERNEL
    return
  fi
  local bin=${KILN_RIG_BINARY:-$KILN} out
  if [[ ${KILN_SANITIZE:-} == ON ]]; then rig_skip "the rig runs the normal build, not the sanitizer build"; fi
  local t0; t0=$(date +%s.%N)
  out=$(bash "$SRC/initramfs/build.sh" --kiln "$bin" ${RIG_EXTRA:+--extra "$RIG_EXTRA"} 2>"$RIG_TMP/initramfs.log") \
    || { cat "$RIG_TMP/initramfs.log" >&2; rig_die "initramfs build failed"; }
  RIG_KERNEL=$(sed -n 's/^KILN_KERNEL=//p' <<<"$out")
  RIG_INITRD=$(sed -n 's/^KILN_INITRD=//p' <<<"$out")
  RIG_INITRD_EXTRA=$(sed -n 's/^KILN_INITRD_EXTRA=//p' <<<"$out")
  RIG_INITRD_SIZE=$(sed -n 's/^KILN_INITRD_SIZE=//p' <<<"$out")
  # a private copy: other builds sharing the cache prune old images
  cp "$RIG_INITRD" "$RIG_TMP/initrd.img" && RIG_INITRD=$RIG_TMP/initrd.img
  rig_log "initramfs: $RIG_INITRD, $RIG_INITRD_SIZE bytes ($(awk "BEGIN{printf \"%.1f\", $RIG_INITRD_SIZE/1048576}") MiB), ready in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s"
}

# A free TCP port on 127.0.0.1 (never a fixed one: the machine is shared).
rig_free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

# nginx on 127.0.0.1:RIG_HTTP_PORT serving $RIG_TMP/www, with WebDAV PUT
# under /reports/ (a guest or kiln may upload there), and a guestfwd relay
# script that connects a guest's TCP connection to it.
rig_http_start() {
  local try
  for try in 1 2 3 4 5; do
    RIG_HTTP_PORT=$(rig_free_port) || rig_die "no free port"
    cat >"$RIG_TMP/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $RIG_TMP/nginx/nginx.pid;
error_log $RIG_TMP/nginx/error.log warn;
events { worker_connections 64; }
http {
  access_log $RIG_TMP/nginx/access.log;
  client_body_temp_path $RIG_TMP/nginx/body;
  proxy_temp_path $RIG_TMP/nginx/proxy;
  fastcgi_temp_path $RIG_TMP/nginx/fastcgi;
  uwsgi_temp_path $RIG_TMP/nginx/uwsgi;
  scgi_temp_path $RIG_TMP/nginx/scgi;
  default_type application/octet-stream;
  types { text/plain yaml yml txt; }
  sendfile on;
  server {
    listen 127.0.0.1:$RIG_HTTP_PORT;
    root $RIG_TMP/www;
    client_max_body_size 64m;
    location /reports/ {
      dav_methods PUT;
      create_full_put_path on;
    }
  }
}
EOF
    nginx -c "$RIG_TMP/nginx/nginx.conf" -e "$RIG_TMP/nginx/error.log" -p "$RIG_TMP/nginx" &
    local pid=$!
    RIG_PIDS+=("$pid")
    for _ in $(seq 50); do
      curl -fsS -o /dev/null "http://127.0.0.1:$RIG_HTTP_PORT/" 2>/dev/null && break
      curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RIG_HTTP_PORT/" 2>/dev/null | grep -q '^[1-5]' && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      RIG_NGINX_PID=$pid
      break
    fi
    rig_log "nginx did not start on port $RIG_HTTP_PORT (try $try): $(tail -1 "$RIG_TMP/nginx/error.log" 2>/dev/null)"
  done
  [[ -n ${RIG_NGINX_PID:-} ]] || rig_die "nginx did not start"
  # QEMU runs this once per guest connection (guestfwd ...-cmd:): it must only
  # ever reach 127.0.0.1.
  cat >"$RIG_TMP/relay" <<EOF
#!/bin/sh
exec socat - TCP:127.0.0.1:$RIG_HTTP_PORT
EOF
  chmod +x "$RIG_TMP/relay"
  RIG_HTTP_URL="http://$RIG_HTTP_IP"       # how the guest reaches nginx
  RIG_HTTP_HOST_URL="http://127.0.0.1:$RIG_HTTP_PORT"
  rig_log "nginx on 127.0.0.1:$RIG_HTTP_PORT (pid $RIG_NGINX_PID), docroot $RIG_TMP/www"
}

# rig_controller [OPTIONS...]: the stand-in CloudStack controller
# (tests/controller/, OPTIONS go to controller.py, e.g. --fail-503 2) on
# 127.0.0.1 and a free port, reached by the guest at 10.0.2.101:80 through a
# guestfwd relay (added to RIG_NET_EXTRA). Sets RIG_CTL_DIR, RIG_CTL_PORT and,
# for @NAME@ in specs, RIG_VAR_CONTROLLER_IP, RIG_VAR_API_KEY,
# RIG_VAR_SECRET_KEY, RIG_VAR_HMAC_KEY. Stopped by PID on exit.
rig_controller() {
  local out
  RIG_CTL_DIR=$RIG_TMP/controller
  out=$(bash "$SRC/tests/controller/start.sh" "$RIG_CTL_DIR" "$@" 2>&1) \
    || { printf '%s\n' "$out" >&2; rig_die "the stand-in controller did not start"; }
  RIG_PIDS+=("$(cat "$RIG_CTL_DIR/pid")")
  RIG_CTL_PORT=$(cat "$RIG_CTL_DIR/port")
  printf '#!/bin/sh\nexec socat - TCP:127.0.0.1:%s\n' "$RIG_CTL_PORT" >"$RIG_TMP/relay-controller"
  chmod +x "$RIG_TMP/relay-controller"
  RIG_VAR_CONTROLLER_IP=10.0.2.101
  RIG_NET_EXTRA+=",guestfwd=tcp:$RIG_VAR_CONTROLLER_IP:80-cmd:$RIG_TMP/relay-controller"
  RIG_VAR_API_KEY=$(rig_ctl_config api_key) RIG_VAR_SECRET_KEY=$(rig_ctl_config secret_key) \
    RIG_VAR_HMAC_KEY=$(rig_ctl_config hmac_key)
  rig_log "stand-in controller on 127.0.0.1:$RIG_CTL_PORT (pid $(cat "$RIG_CTL_DIR/pid")), guest sees $RIG_VAR_CONTROLLER_IP:80"
}
rig_ctl_config() {  # one string field of the controller's config.json
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$RIG_CTL_DIR/config.json" "$1"
}
# rig_controller_dump FILE: what the controller recorded (hosts, events,
# reports), as JSON
rig_controller_dump() {
  python3 "$SRC/tests/controller/controller.py" --dump "$RIG_CTL_DIR/controller.db" >"$1"
}

# rig_ssh_forward: the guest's port 22 reachable on 127.0.0.1 (a QEMU
# hostfwd on a free port, added to RIG_NET_EXTRA: both rig_boot and
# rig_boot_disk use it; the guest's own address is QEMU's first DHCP
# address, 10.0.2.15). Sets RIG_SSH_PORT. With the stand-in controller
# running, `rig_controller_ssh ADDRESS` maps the node's address to it.
rig_ssh_forward() {
  RIG_SSH_PORT=$(rig_free_port) || rig_die "no free port"
  RIG_NET_EXTRA+=",hostfwd=tcp:127.0.0.1:$RIG_SSH_PORT-:22"
  rig_log "the guest's ssh (port 22) on 127.0.0.1:$RIG_SSH_PORT"
}
# rig_controller_ssh ADDRESS [TIMEOUT]: the stand-in's addHost logs in to
# ADDRESS over SSH through the hostfwd of rig_ssh_forward (every other
# address is unreachable), with TIMEOUT seconds (default 60: sshd under
# emulation is slow) for the connection, the login and the command.
rig_controller_ssh() {
  local body
  body=$(printf '{"ssh": {"hosts": {"%s": %s}, "required": true, "timeout": %s}}' "$1" "$RIG_SSH_PORT" "${2:-60}")
  curl -fsS -o /dev/null -X POST --data-binary "$body" "http://127.0.0.1:$RIG_CTL_PORT/kiln/admin" \
    || rig_die "the stand-in controller did not take the SSH map"
}

# rig_small_image: the small base image (initramfs/base-image/build-small.sh)
# served at @HTTP@/images/small.tar.zst; sets RIG_VAR_IMAGE_SHA256 and
# RIG_IMAGE_MANIFEST (its manifest, for a check inside the guest).
rig_small_image() {
  bash "$SRC/initramfs/base-image/build-small.sh" "$RIG_TMP/image" >"$RIG_TMP/image.log" 2>&1 \
    || { cat "$RIG_TMP/image.log" >&2; rig_die "could not build the small image"; }
  cp "$RIG_TMP/image/small.tar.zst" "$RIG_TMP/www/images/"
  RIG_VAR_IMAGE_SHA256=$(rig_sha256 "$RIG_TMP/image/small.tar.zst")
  RIG_IMAGE_MANIFEST=$RIG_TMP/image/small.manifest
}

# rig_boot_image: the small bootable image (initramfs/base-image/build-boot.sh,
# cached in KILN_CACHE) served at @HTTP@/images/boot.tar.zst; sets
# RIG_VAR_BOOT_IMAGE_SHA256 and RIG_BOOT_IMAGE_SIZE.
rig_boot_image() {
  local out t0; t0=$(date +%s.%N)
  out=$(bash "$SRC/initramfs/base-image/build-boot.sh" "$RIG_TMP/boot-image" 2>"$RIG_TMP/boot-image.log") \
    || { tail -40 "$RIG_TMP/boot-image.log" >&2; rig_die "could not build the bootable image"; }
  local img; img=$(sed -n 's/^KILN_BOOT_IMAGE=//p' <<<"$out")
  mv "$img" "$RIG_TMP/www/images/boot.tar.zst"
  RIG_VAR_BOOT_IMAGE_SHA256=$(sed -n 's/^KILN_BOOT_IMAGE_SHA256=//p' <<<"$out")
  RIG_BOOT_IMAGE_SIZE=$(sed -n 's/^KILN_BOOT_IMAGE_SIZE=//p' <<<"$out")
  rig_log "bootable image: $RIG_BOOT_IMAGE_SIZE bytes, ready in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s"
}

# rig_tang_start: a Tang server (Debian's tang) on 127.0.0.1 and a free
# port: socat runs one `/usr/libexec/tangd DB` per connection, its log (one
# line per request, "POST /rec/KID => 200") goes to RIG_TANG_LOG. The keys
# are made fresh for the test (tangd-keygen) the first time, unless
# RIG_TMP/tang/db already holds some (a shared install's, rig_fixture_boot),
# and kept across a stop and start. The guest reaches it at RIG_TANG_IP:80 through a
# guestfwd relay (added to RIG_NET_EXTRA once). Sets, for specs,
# RIG_VAR_TANG_URL and RIG_VAR_TANG_THP (`jose jwk thp` of the signing key).
rig_tang_start() {
  local k port pid
  RIG_TANG_DIR=$RIG_TMP/tang RIG_TANG_LOG=$RIG_TMP/tang/log RIG_TANG_IP=10.0.2.102
  [[ -x /usr/libexec/tangd ]] || rig_skip "no /usr/libexec/tangd (bash tests/deps.sh: tang)"
  command -v jose >/dev/null || rig_skip "no jose (bash tests/deps.sh)"
  if [[ ! -d $RIG_TANG_DIR/db ]]; then
    mkdir -p "$RIG_TANG_DIR/db"
    /usr/libexec/tangd-keygen "$RIG_TANG_DIR/db" || rig_die "tangd-keygen failed"
  fi
  if [[ -z ${RIG_VAR_TANG_THP:-} ]]; then   # the first start (fresh keys, or a shared install's)
    for k in "$RIG_TANG_DIR"/db/*.jwk; do
      if jq -e '.key_ops | index("verify")' "$k" >/dev/null; then RIG_VAR_TANG_THP=$(jose jwk thp -i "$k"); fi
    done
    [[ -n ${RIG_VAR_TANG_THP:-} ]] || rig_die "tangd-keygen made no signing key"
    RIG_NET_EXTRA+=",guestfwd=tcp:$RIG_TANG_IP:80-cmd:$RIG_TMP/relay-tang"
  fi
  for _ in 1 2 3 4 5; do
    port=$(rig_free_port) || rig_die "no free port"
    socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "EXEC:/usr/libexec/tangd $RIG_TANG_DIR/db" \
      2>>"$RIG_TANG_LOG" &
    pid=$!
    for _ in $(seq 50); do
      ss -Htln "sport = :$port" 2>/dev/null | grep -q . && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && break
    pid=
  done
  [[ -n $pid ]] || rig_die "Tang did not start"
  RIG_PIDS+=("$pid") RIG_TANG_PID=$pid RIG_TANG_PORT=$port
  printf '#!/bin/sh\nexec socat - TCP:127.0.0.1:%s\n' "$port" >"$RIG_TMP/relay-tang"
  chmod +x "$RIG_TMP/relay-tang"
  RIG_VAR_TANG_URL=http://$RIG_TANG_IP
  rig_log "Tang on 127.0.0.1:$port (pid $pid), guest sees $RIG_VAR_TANG_URL, signing key thumbprint $RIG_VAR_TANG_THP"
}
# rig_tang_stop: Tang goes away (its port is closed; the relay's connection
# then fails at once)
rig_tang_stop() {
  [[ -n ${RIG_TANG_PID:-} ]] || return 0
  kill "$RIG_TANG_PID" 2>/dev/null
  wait "$RIG_TANG_PID" 2>/dev/null || true
  rig_log "Tang stopped (pid $RIG_TANG_PID)"
  RIG_TANG_PID=
}
# rig_tang_requests: the recovery requests Tang answered with 200 so far
rig_tang_requests() { grep -c 'POST /rec/.* => 200' "$RIG_TANG_LOG" 2>/dev/null || true; }

# rig_secret PREFIX: PREFIX followed by 16 random hex digits (a throwaway
# passphrase or password that a test then looks for where it must not be)
rig_secret() { printf '%s%s\n' "$1" "$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"; }

# rig_disks N [SIZE]: N blank sparse disks, disk0..disk(N-1), appended to RIG_DISK.
rig_disks() {
  local n=$1 size=${2:-2G} i
  for ((i = 0; i < n; i++)); do rig_disk "disk$i" "$size"; done
}
# rig_disk NAME [SIZE] [FILE]: one more disk (a blank sparse file, or a copy
# of FILE), virtio serial "kiln-NAME". Prints nothing; the path is
# $RIG_TMP/NAME.img and it is appended to RIG_DISK.
rig_disk() {
  local name=$1 size=${2:-2G} from=${3:-}
  local f=$RIG_TMP/$name.img
  if [[ -n $from ]]; then cp --sparse=always "$from" "$f"; else truncate -s "$size" "$f"; fi
  RIG_DISK+=("$f")
  RIG_DISK_SERIAL+=("kiln-$name")
}

# rig_drive I: QEMU's -drive for RIG_DISK[I] (id dI): a raw image, or a
# qcow2 overlay (a name ending in .qcow2: rig_fixture_boot, rig_disk_layer)
rig_drive() {
  local f=${RIG_DISK[$1]} fmt=raw
  [[ $f == *.qcow2 ]] && fmt=qcow2
  printf 'file=%s,if=none,id=d%s,format=%s,%s,discard=unmap' "$f" "$1" "$fmt" "$RIG_DISK_CACHE"
}

# rig_spec FILE [MAC]: serve FILE as the spec of MAC (default RIG_MAC), with
# @HTTP@ replaced by the guest's URL of nginx and @NAME@ by $RIG_VAR_NAME.
rig_spec() {
  local file=$1 mac=${2:-$RIG_MAC} out
  [[ $file == /* ]] || file=$SRC/tests/rig/$file
  [[ -r $file ]] || rig_die "no spec '$file'"
  out=$RIG_TMP/www/specs/$mac.yaml
  # rig_subst's rig_die ends only its own subshell (the while loop of a
  # pipeline): its status has to stop the test here
  rig_subst <"$file" >"$out" || { rm -f "$out"; rig_die "spec '$file': not every @VAR@ could be filled in"; }
  RIG_SPEC=$out
}
rig_subst() {
  local line v name
  sed "s|@HTTP@|$RIG_HTTP_URL|g" | while IFS= read -r line; do
    while [[ $line =~ @([A-Z0-9_]+)@ ]]; do
      name=${BASH_REMATCH[1]}; v=RIG_VAR_$name
      [[ -n ${!v+x} ]] || rig_die "spec uses @$name@ but RIG_VAR_$name is not set"
      line=${line//@$name@/${!v}}
    done
    printf '%s\n' "$line"
  done
}

# rig_initrd_join OUT FILE...: the initramfs archives FILE... one after the
# other in OUT. The kernel finds a further uncompressed archive only at a
# 4-byte boundary and skips NUL padding between archives, so each FILE but
# the last is padded to a multiple of 4 bytes.
rig_initrd_join() {
  local out=$1 f pad; shift
  {
    for f in "$@"; do
      cat "$f" || return 1
      shift; (($#)) || break
      pad=$(( (4 - $(stat -c %s "$f") % 4) % 4 ))
      head -c "$pad" /dev/zero
    done
  } >"$out"
}

# rig_add_initrd_segment DIR [COMPRESSOR...]: DIR's tree as one more initramfs
# archive (newc cpio, piped through COMPRESSOR such as `gzip -1` when given),
# appended to RIG_INITRD_EXTRA, which rig_boot loads after the kiln
# initramfs: a test's report hooks (etc/kiln/report.d/), tools or pre-init
# scripts. Call it after rig_init, once per segment.
rig_add_initrd_segment() {
  local dir=$1 n; shift
  [[ -d $dir ]] || rig_die "rig_add_initrd_segment: no directory '$dir'"
  RIG_SEGMENTS=$((${RIG_SEGMENTS:-0} + 1)); n=$RIG_SEGMENTS
  if (($#)); then
    (cd "$dir" && find . | cpio -o -H newc --quiet | "$@") >"$RIG_TMP/segment-$n.img"
  else
    (cd "$dir" && find . | cpio -o -H newc --quiet) >"$RIG_TMP/segment-$n.img"
  fi || rig_die "cannot pack the initramfs segment '$dir'"
  if [[ -n ${RIG_INITRD_EXTRA:-} ]]; then
    rig_initrd_join "$RIG_TMP/extra-$n.img" "$RIG_INITRD_EXTRA" "$RIG_TMP/segment-$n.img" \
      || rig_die "cannot append the initramfs segment '$dir'"
    RIG_INITRD_EXTRA=$RIG_TMP/extra-$n.img
  else
    RIG_INITRD_EXTRA=$RIG_TMP/segment-$n.img
  fi
}

# rig_sha256 FILE...: hashes, one line each
rig_sha256() { sha256sum "$@" | awk '{print $1}'; }

# rig_boot [--pxe|--direct] [--append ARGS] [--no-report]: boot the guest with
# RIG_DISK, wait until it powers off (or RIG_TIMEOUT), then parse the report.
# --pxe:    QEMU's iPXE → DHCP → TFTP boot.ipxe (from kickstart/) → kernel+initrd
# --direct: -kernel/-initrd/-append (no PXE; a few seconds faster)
# Sets RIG_REPORT (file), RIG_SERIAL (console log), RIG_BOOT_SECONDS,
# RIG_INIT_SECONDS (guest uptime when /init started). Returns 0 when the guest
# stopped by itself, 1 on timeout.
rig_boot() {
  local mode=direct extra_append= i until=
  while (($#)); do
    case $1 in
      --pxe) mode=pxe; shift ;;
      --direct) mode=direct; shift ;;
      --append) extra_append+=" $2"; shift 2 ;;
      --until) until=$2; shift 2 ;;   # stop the guest once its console matches (no report needed)
      *) rig_die "rig_boot: unknown option '$1'" ;;
    esac
  done
  RIG_BOOT_N=$((${RIG_BOOT_N:-0} + 1))
  if [[ -n ${RIG_REPLAY:-} ]]; then      # re-run a test's checks on a kept run's files
    RIG_REPORT=$RIG_REPLAY/report-$RIG_BOOT_N.txt RIG_SERIAL=$RIG_REPLAY/serial-$RIG_BOOT_N.log
    RIG_BOOT_SECONDS=replay RIG_INIT_SECONDS=replay
    return 0
  fi
  RIG_SERIAL=$RIG_TMP/serial-$RIG_BOOT_N.log
  RIG_REPORT=$RIG_TMP/report-$RIG_BOOT_N.txt
  : >"$RIG_SERIAL"; : >"$RIG_REPORT"
  ln -sf "$RIG_SERIAL" "$RIG_TMP/serial.log"
  local initrd=$RIG_INITRD
  if [[ -n ${RIG_INITRD_EXTRA:-} ]]; then
    initrd=$RIG_TMP/initrd-combined.img
    rig_initrd_join "$initrd" "$RIG_INITRD" "$RIG_INITRD_EXTRA"
  fi
  local spec_url="$RIG_HTTP_URL/specs/\${mac}.yaml"
  local append="console=ttyS0,115200n8 loglevel=4 panic=-1 kiln.report=/dev/ttyS1 ${RIG_APPEND:-}$extra_append"
  local net="user,id=n0,restrict=on,guestfwd=tcp:$RIG_HTTP_IP:80-cmd:$RIG_TMP/relay${RIG_NET_EXTRA:-}"
  local args=(-accel tcg,thread=multi -cpu max -m "$RIG_MEM" -smp "$RIG_SMP"
    -display none -monitor none -parallel none -no-reboot -nodefaults
    -smbios "type=1,manufacturer=kiln-rig,product=rig,serial=$RIG_SMBIOS_SERIAL,uuid=$RIG_SMBIOS_UUID"
    -serial "file:$RIG_SERIAL" -serial "file:$RIG_REPORT")
  if [[ $mode == pxe ]]; then
    cp "$RIG_KERNEL" "$RIG_TMP/tftp/vmlinuz"
    cp "$initrd" "$RIG_TMP/tftp/initrd.img"
    # the operator's iPXE script, pointed at the rig's TFTP and nginx
    sed -e "s|^set kiln-base .*|set kiln-base tftp://10.0.2.2|" \
        -e "s|^set kiln-specs .*|set kiln-specs $RIG_HTTP_URL/specs|" \
        -e "s|^set kiln-hosts .*|set kiln-hosts $RIG_HTTP_URL/hosts|" \
        -e "s|^set kiln-args .*|set kiln-args $append|" \
        "$SRC/kickstart/boot.ipxe" >"$RIG_TMP/tftp/boot.ipxe"
    net+=",tftp=$RIG_TMP/tftp,bootfile=boot.ipxe"
    args+=(-boot n)
  else
    args+=(-kernel "$RIG_KERNEL" -initrd "$initrd" -append "$append kiln.spec=$spec_url")
  fi
  args+=(-netdev "$net" -device "virtio-net-pci,netdev=n0,mac=$RIG_MAC")
  for i in "${!RIG_DISK[@]}"; do
    args+=(-drive "$(rig_drive "$i")" -device "virtio-blk-pci,drive=d$i,serial=${RIG_DISK_SERIAL[$i]}")
  done
  rig_log "boot $RIG_BOOT_N ($mode, ${#RIG_DISK[@]} disks, ${RIG_MEM} MiB): console $RIG_SERIAL"
  local rc=0
  RIG_UNTIL=$until RIG_HOLD=0 rig_qemu "${args[@]}" || rc=1
  RIG_INIT_SECONDS=$(sed -n 's/.*kiln-init: started at \([0-9.]*\) s.*/\1/p' "$RIG_SERIAL" | head -1)
  rig_log "boot $RIG_BOOT_N: guest stopped after $RIG_BOOT_SECONDS s (/init at ${RIG_INIT_SECONDS:-?} s guest uptime), report $(wc -c <"$RIG_REPORT") bytes"
  ((rc == 0)) || return 1
  [[ -n $until ]] && return 0
  # the report is complete only with its end marker
  grep -q '^=== kiln-report end' "$RIG_REPORT" || { rig_log "the guest sent no complete report"; return 1; }
  return 0
}

# rig_qemu ARGS...: run qemu-system-x86_64 ARGS (the command saved as
# qemu-N.cmd) until the guest stops by itself, RIG_TIMEOUT passes, or, with
# RIG_UNTIL=REGEX set, the console (RIG_SERIAL) matches REGEX and then
# RIG_HOLD more seconds (default 0) pass. Sets RIG_BOOT_SECONDS and
# RIG_UNTIL_SECONDS (when REGEX matched); strips CRs from the report.
# Returns 0 when the guest stopped by itself or REGEX matched, 1 on timeout.
rig_qemu() {
  printf '%q ' qemu-system-x86_64 "$@" >"$RIG_TMP/qemu-$RIG_BOOT_N.cmd"
  local t0; t0=$(date +%s.%N)
  qemu-system-x86_64 "$@" 2>"$RIG_TMP/qemu-$RIG_BOOT_N.err" &
  local qpid=$! timed_out=0 matched=0 stop_at=
  RIG_PIDS+=("$qpid")
  RIG_UNTIL_SECONDS=
  local deadline=$(( $(date +%s) + RIG_TIMEOUT ))
  while kill -0 "$qpid" 2>/dev/null; do
    if [[ -n ${RIG_UNTIL:-} && $matched == 0 ]] && tr -d '\r' <"$RIG_SERIAL" | grep -Eq -- "$RIG_UNTIL"; then
      matched=1
      RIG_UNTIL_SECONDS=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
      stop_at=$(( $(date +%s) + ${RIG_HOLD:-0} ))
      rig_log "boot $RIG_BOOT_N: the console shows /$RIG_UNTIL/ after $RIG_UNTIL_SECONDS s; stopping in ${RIG_HOLD:-0} s"
    fi
    if [[ -n $stop_at ]] && (( $(date +%s) >= stop_at )); then
      kill "$qpid" 2>/dev/null
      break
    fi
    if (( $(date +%s) > deadline )); then
      rig_log "the guest did not stop within ${RIG_TIMEOUT}s: stopping QEMU (pid $qpid)"
      kill "$qpid" 2>/dev/null; timed_out=1
      break
    fi
    sleep 0.5
  done
  wait "$qpid" 2>/dev/null || true
  RIG_BOOT_SECONDS=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  [[ -s $RIG_TMP/qemu-$RIG_BOOT_N.err ]] && sed 's/^/rig: qemu: /' "$RIG_TMP/qemu-$RIG_BOOT_N.err" >&2
  tr -d '\r' <"$RIG_REPORT" >"$RIG_REPORT.tmp" && mv "$RIG_REPORT.tmp" "$RIG_REPORT"
  ((timed_out == 0))
}

# rig_boot_disk [--uefi] [--without N]... [--until REGEX] [--hold S]: boot
# the installed system from RIG_DISK (no kernel, no PXE): SeaBIOS with
# `-boot c` (it tries only the first disk: --without 0 leaves disk 0 off
# the command line, as a pulled disk), or with --uefi OVMF
# (OVMF_CODE_4M.fd and a fresh copy of OVMF_VARS_4M.fd per boot; OVMF
# writes to the second serial port too, which the report parser skips).
# The guest's NIC is on the rig's user network (restrict=on, the relays of
# RIG_NET_EXTRA such as Tang). Waits until the guest powers off (the
# bootable image's kiln-report unit does, after writing its report to
# ttyS1), or with --until until the console matches REGEX and --hold S
# seconds more have passed, or RIG_TIMEOUT. Sets RIG_REPORT, RIG_SERIAL,
# RIG_BOOT_SECONDS, RIG_UNTIL_SECONDS. Returns 0 when the guest powered off
# with a complete report or REGEX matched, 1 otherwise.
rig_boot_disk() {
  local fw=bios until= hold=0 i skip=" "
  while (($#)); do
    case $1 in
      --uefi) fw=uefi; shift ;;
      --without) skip+="$2 "; shift 2 ;;
      --until) until=$2; shift 2 ;;
      --hold) hold=$2; shift 2 ;;
      *) rig_die "rig_boot_disk: unknown option '$1'" ;;
    esac
  done
  RIG_BOOT_N=$((${RIG_BOOT_N:-0} + 1))
  if [[ -n ${RIG_REPLAY:-} ]]; then
    RIG_REPORT=$RIG_REPLAY/report-$RIG_BOOT_N.txt RIG_SERIAL=$RIG_REPLAY/serial-$RIG_BOOT_N.log
    RIG_BOOT_SECONDS=replay RIG_UNTIL_SECONDS=replay
    return 0
  fi
  RIG_SERIAL=$RIG_TMP/serial-$RIG_BOOT_N.log RIG_REPORT=$RIG_TMP/report-$RIG_BOOT_N.txt
  : >"$RIG_SERIAL"; : >"$RIG_REPORT"
  ln -sf "$RIG_SERIAL" "$RIG_TMP/serial.log"
  local args=(-accel tcg,thread=multi -cpu max -m "$RIG_MEM" -smp "$RIG_SMP"
    -display none -monitor none -parallel none -no-reboot -nodefaults
    -smbios "type=1,manufacturer=kiln-rig,product=rig,serial=$RIG_SMBIOS_SERIAL,uuid=$RIG_SMBIOS_UUID"
    -serial "file:$RIG_SERIAL" -serial "file:$RIG_REPORT")
  if [[ $fw == uefi ]]; then
    local code=/usr/share/OVMF/OVMF_CODE_4M.fd vars=/usr/share/OVMF/OVMF_VARS_4M.fd
    [[ -r $code && -r $vars ]] || rig_skip "no OVMF firmware (bash tests/deps.sh: ovmf)"
    cp "$vars" "$RIG_TMP/ovmf-vars-$RIG_BOOT_N.fd"
    args+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$code"
           -drive "if=pflash,format=raw,unit=1,file=$RIG_TMP/ovmf-vars-$RIG_BOOT_N.fd")
  else
    args+=(-boot c)
  fi
  # a VGA adapter, as servers have: without one GRUB's i386-pc console (BIOS
  # int 10h) hangs before it loads the kernel
  args+=(-device VGA)
  # no option ROM on the NIC: the firmware boots the disks, not the network
  args+=(-netdev "user,id=n0,restrict=on,guestfwd=tcp:$RIG_HTTP_IP:80-cmd:$RIG_TMP/relay${RIG_NET_EXTRA:-}"
         -device "virtio-net-pci,netdev=n0,mac=$RIG_MAC,romfile=")
  local n=0 idx=1
  for i in "${!RIG_DISK[@]}"; do
    [[ $skip == *" $i "* ]] && continue
    args+=(-drive "$(rig_drive "$i")"
           -device "virtio-blk-pci,drive=d$i,serial=${RIG_DISK_SERIAL[$i]},bootindex=$idx")
    n=$((n + 1)) idx=$((idx + 1))
  done
  rig_log "boot $RIG_BOOT_N (disks, $fw, $n of ${#RIG_DISK[@]} disks, ${RIG_MEM} MiB): console $RIG_SERIAL"
  local rc=0
  RIG_UNTIL=$until RIG_HOLD=$hold rig_qemu "${args[@]}" || rc=1
  rig_log "boot $RIG_BOOT_N: guest stopped after $RIG_BOOT_SECONDS s, report $(wc -c <"$RIG_REPORT") bytes"
  ((rc == 0)) || return 1
  [[ -n $until ]] && return 0
  grep -q '^=== kiln-report end' "$RIG_REPORT" || { rig_log "the guest sent no complete report"; return 1; }
  return 0
}

# rig_report_section NAME: the lines of one section of the last report
# ("--- NAME" up to the next "---"/"==="). NAME may be a prefix match such as
# "mdadm-detail" (all matching sections are printed).
rig_report_section() {
  awk -v want="$1" '
    /^=== kiln-report end/ { on = 0; next }
    /^--- / { on = (substr($0, 5) == want || index(substr($0, 5), want " ") == 1); next }
    on { print }' "$RIG_REPORT"
}
rig_report_sections() { sed -n 's/^--- //p' "$RIG_REPORT"; }
# rig_last_report: one power-on may write several reports on ttyS1 (the kiln
# initramfs' /init, then, after kiln boots the installed system by kexec,
# the installed system's kiln-report): RIG_REPORT keeps the last one, the
# whole stream stays in RIG_REPORT.all. Sets RIG_REPORTS (how many began).
rig_last_report() {
  RIG_REPORTS=$(grep -c '^=== kiln-report begin' "$RIG_REPORT" || true)
  cp "$RIG_REPORT" "$RIG_REPORT.all"
  if ((RIG_REPORTS > 1)); then
    awk -v n="$RIG_REPORTS" '/^=== kiln-report begin/ { i++ } i == n' "$RIG_REPORT.all" >"$RIG_REPORT"
  fi
}
# rig_section_has NAME REGEX: a line of the section matches (grep -E). The
# section is read whole first: `rig_report_section | grep -q` lets grep quit
# at the first match, awk dies of SIGPIPE, and under pipefail a match reads
# as a miss (this failed test-kvm-full at random).
rig_section_has() { local text; text=$(rig_report_section "$1"); grep -Eq -- "$2" <<<"$text"; }
rig_exit_code() { rig_report_section exit | head -1; }

# --- the whole job (tests/rig/test-whole-job.sh; tests/demo.sh shows its
# boots 1 and 2): one node PXE first on every boot, installed, then booting
# its installed system, which registers with the stand-in controller
RIG_JOB_NODE_IP=10.0.2.15      # QEMU's user network gives the node this address

# rig_job_setup SPEC SECRET-PREFIX (after rig_init): the bootable image,
# Tang, the stand-in controller, the node's sshd on 127.0.0.1 for addHost
# (rig_ssh_forward), throwaway secrets for the spec's @PASSPHRASE@ and
# @HOST_PASSWORD@ (PREFIX names them: wj-luks-..., wj-host-...), four blank
# 2 GiB disks, and SPEC served (rig_spec) and validated.
rig_job_setup() {
  local spec=$1 prefix=$2
  command -v jq >/dev/null || rig_skip "no jq (bash tests/deps.sh)"
  /usr/bin/python3 -c 'import paramiko' 2>/dev/null || rig_skip "no python3-paramiko (bash tests/deps.sh)"
  rig_boot_image
  rig_tang_start
  rig_controller
  rig_ssh_forward
  RIG_VAR_PASSPHRASE=$(rig_secret "${prefix}luks-")
  RIG_VAR_HOST_PASSWORD=$(rig_secret "${prefix}host-")
  rig_disks 4 2G
  rig_spec "$spec"
  "$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec '$spec' does not validate"
}

# rig_job_boot_installed ADDRESS [--disk]: a boot of the installed node: PXE
# first (kiln finds the finished run and kexecs the installed system), or
# with --disk from its disks (SeaBIOS); the stand-in's addHost logs in to
# ADDRESS through the hostfwd. Sets RIG_TANG_BEFORE (Tang's answered
# recovery requests before the boot) and keeps the installed system's report
# as RIG_REPORT (rig_last_report). Returns rig_boot's status.
rig_job_boot_installed() {
  local rc=0
  rig_controller_ssh "$1"
  RIG_TANG_BEFORE=$(rig_tang_requests)
  if [[ ${2:-} == --disk ]]; then rig_boot_disk || rc=1; else rig_boot --pxe || rc=1; fi
  rig_last_report
  return $rc
}

# rig_job_secrets: the job's secrets, one a line (the LUKS passphrase, the
# host password, the API secret, the webhook's HMAC key), for
# grep -F -f <(rig_job_secrets): printf is a builtin, so they reach no argv
rig_job_secrets() {
  printf '%s\n' "$RIG_VAR_PASSPHRASE" "$RIG_VAR_HOST_PASSWORD" "$RIG_VAR_SECRET_KEY" "$RIG_VAR_HMAC_KEY"
}
# rig_no_secret_in FILE...: none of the job's secrets in any FILE
rig_no_secret_in() { ! grep -a -q -F -f <(rig_job_secrets) "$@"; }

# --- install once, boot many: shared installs and qcow2 overlays (issue 23) --
# A test that starts from a finished install does not install again: it
# boots copy-on-write qcow2 overlays (backing file: the install's raw disks)
# of one shared install, the fixture NAME, made by tests/rig/fixture-NAME.sh
# (ctest: the test rig/fixture-NAME, FIXTURES_SETUP rig-NAME; a script that
# calls `rig_fixture_boot NAME` gets FIXTURES_REQUIRED rig-NAME, and
# rig/fixture-NAME-cleanup removes the directory after the last of them).
# The fixture lives in RIG_FIXTURES/NAME (default BUILD/rig-fixtures: one
# ctest run's build dir; never /var/cache/kiln: an install holds random
# keys, it is no reproducible cache), mode 0700:
#   disk0.img ...   the install's raw sparse disks (the base; "disks" lists
#                   them in -drive order), base.stat their size and times
#   tang/db, tang/log   the Tang keys the LUKS volume is bound to (the spec
#                   pins their thumbprint) and Tang's log of the install
#   spec.yaml       the spec as served, every @VAR@ filled in (the throwaway
#                   passphrase too, as every served spec in RIG_TMP holds it)
#   report-1.txt, serial-1.log, boot-seconds   the install boot's report,
#                   console and time: the dependent test's boot 1
#   inputs          the hash of what the install came from: the rig's
#                   kernel and initramfs (so kiln), the image, the spec file
# The setup always installs afresh (one install per ctest run, its checks
# made every run) and publishes the directory by a rename, only when the
# install passed. A test run directly, with no fixture for its inputs in
# RIG_FIXTURES (none made yet, or another kiln or image), runs the same
# script first and says so: into RIG_FIXTURES (the next test finds it), or,
# with BUILD unset, into its own temp dir.

RIG_FIXTURES=${RIG_FIXTURES:-${BUILD:+$BUILD/rig-fixtures}}

# rig_fixture_inputs SPEC: the hash of a shared install's inputs (after
# rig_init and the image: RIG_KERNEL, RIG_INITRD, RIG_VAR_BOOT_IMAGE_SHA256)
rig_fixture_inputs() {
  local spec=$1
  [[ $spec == /* ]] || spec=$SRC/tests/rig/$spec
  { rig_sha256 "$RIG_KERNEL" "$RIG_INITRD" "$spec"; echo "${RIG_VAR_BOOT_IMAGE_SHA256:-}"; } | rig_sha256 -
}

# rig_fixture_publish NAME SPEC (the setup script, after a passed install
# boot): Tang stopped, the disks, Tang's keys and log, the served spec and
# the install boot's report and console moved into RIG_FIXTURES/NAME
# (written as NAME.new.PID, then renamed over the old one).
rig_fixture_publish() {
  local name=$1 spec=$2 dir new i
  [[ -n ${RIG_FIXTURES:-} ]] || rig_die "rig_fixture_publish: no RIG_FIXTURES (nor BUILD)"
  dir=$RIG_FIXTURES/$name new=$RIG_FIXTURES/$name.new.$$
  rig_tang_stop
  mkdir -p "$RIG_FIXTURES" && rm -rf "$new" && mkdir -m 0700 "$new" "$new/tang" || rig_die "cannot make $new"
  for i in "${!RIG_DISK[@]}"; do
    mv "${RIG_DISK[$i]}" "$new/" && basename "${RIG_DISK[$i]}" >>"$new/disks" || rig_die "cannot move the disks into $new"
  done
  (cd "$new" && rig_fixture_stat $(cat disks) >base.stat) || rig_die "cannot stat the disks"
  cp -a "$RIG_TANG_DIR/db" "$new/tang/db" && cp "$RIG_TANG_LOG" "$new/tang/log" \
    && cp "$RIG_SPEC" "$new/spec.yaml" && chmod 0600 "$new/spec.yaml" \
    && cp "$RIG_REPORT" "$new/report-1.txt" && cp "$RIG_SERIAL" "$new/serial-1.log" \
    && echo "$RIG_BOOT_SECONDS" >"$new/boot-seconds" \
    && rig_fixture_inputs "$spec" >"$new/inputs" || rig_die "cannot fill $new"
  RIG_DISK=() RIG_DISK_SERIAL=()
  rm -rf "$dir" && mv "$new" "$dir" || rig_die "cannot publish $dir"
  rig_log "shared install '$name' in $dir ($(du -sh "$dir" | cut -f1) on disk)"
}

# rig_fixture_boot NAME SPEC (after rig_init and rig_boot_image): start from
# the shared install NAME of SPEC (installing one first when there is none
# for these inputs, see above): its Tang keys and log copied into RIG_TMP
# and Tang started (RIG_VAR_TANG_THP is the spec's pin), its served spec
# served again (RIG_SPEC; RIG_VAR_PASSPHRASE read back from it), RIG_DISK a
# fresh qcow2 overlay of each base disk (serials kiln-disk0 ...), and the
# install boot as this test's boot 1: RIG_BOOT_N=1, RIG_REPORT, RIG_SERIAL,
# RIG_BOOT_SECONDS. Sets RIG_FIXTURE_DIR; rig_done then checks the base.
rig_fixture_boot() {
  local name=$1 spec=$2 dir key d
  if [[ -n ${RIG_REPLAY:-} ]]; then   # a kept run's boot 1 (its copy of the install's report)
    RIG_BOOT_N=1 RIG_REPORT=$RIG_REPLAY/report-1.txt RIG_SERIAL=$RIG_REPLAY/serial-1.log RIG_BOOT_SECONDS=replay
    RIG_VAR_PASSPHRASE=$(rig_secret replay-) RIG_TANG_LOG=$RIG_REPLAY/tang/log
    return 0
  fi
  key=$(rig_fixture_inputs "$spec")
  dir=${RIG_FIXTURES:+$RIG_FIXTURES/$name}
  if [[ -z $dir || ! -f $dir/inputs || $(<"$dir/inputs") != "$key" ]]; then
    local rc=0 where=${RIG_FIXTURES:-$RIG_TMP/fixtures}
    rig_log "no shared install '$name' for these inputs${dir:+ in $dir}: installing one in $where/$name (tests/rig/fixture-$name.sh)"
    RIG_FIXTURES=$where bash "$SRC/tests/rig/fixture-$name.sh" || rc=$?
    ((rc != 77)) || rig_skip "the install of '$name' was skipped"
    ((rc == 0)) || rig_die "the install of '$name' failed"
    dir=$where/$name
    [[ $(<"$dir/inputs") == "$key" ]] || rig_die "the install of '$name' came from other inputs"
  fi
  RIG_FIXTURE_DIR=$dir
  mkdir -p "$RIG_TMP/tang" && cp -a "$dir/tang/db" "$RIG_TMP/tang/db" && cp "$dir/tang/log" "$RIG_TMP/tang/log" \
    || rig_die "cannot copy the Tang keys of '$name'"
  RIG_VAR_TANG_THP=
  rig_tang_start
  grep -q "thp: \"$RIG_VAR_TANG_THP\"" "$dir/spec.yaml" || rig_die "the spec of '$name' pins another Tang key"
  RIG_SPEC=$RIG_TMP/www/specs/$RIG_MAC.yaml
  cp "$dir/spec.yaml" "$RIG_SPEC" && chmod 0644 "$RIG_SPEC" || rig_die "cannot serve the spec of '$name'"
  RIG_VAR_PASSPHRASE=$(sed -n 's/.*passphrase: "\([^"]*\)".*/\1/p' "$RIG_SPEC" | head -1)
  for d in $(cat "$dir/disks"); do
    qemu-img create -q -f qcow2 -F raw -b "$dir/$d" "$RIG_TMP/${d%.img}.qcow2" || rig_die "cannot make an overlay of $dir/$d"
    RIG_DISK+=("$RIG_TMP/${d%.img}.qcow2")
    RIG_DISK_SERIAL+=("kiln-${d%.img}")
  done
  RIG_BOOT_N=1 RIG_REPORT=$RIG_TMP/report-1.txt RIG_SERIAL=$RIG_TMP/serial-1.log
  cp "$dir/report-1.txt" "$RIG_REPORT" && cp "$dir/serial-1.log" "$RIG_SERIAL" || rig_die "cannot copy the install's report"
  RIG_BOOT_SECONDS=$(<"$dir/boot-seconds")
  rig_log "boot 1: the shared install '$name' ($dir, installed in $RIG_BOOT_SECONDS s): ${#RIG_DISK[@]} qcow2 overlays"
}

# rig_disk_layer: one more empty qcow2 layer on top of every disk in
# RIG_DISK (its backing file the disk as it is now), so that
# rig_disks_unwritten can say the next boots wrote nothing
rig_disk_layer() {
  local i f fmt new
  [[ -n ${RIG_REPLAY:-} ]] && return 0
  RIG_LAYER=$((${RIG_LAYER:-0} + 1))
  for i in "${!RIG_DISK[@]}"; do
    f=${RIG_DISK[$i]} fmt=raw; [[ $f == *.qcow2 ]] && fmt=qcow2
    new=$RIG_TMP/disk$i-layer$RIG_LAYER.qcow2
    qemu-img create -q -f qcow2 -F "$fmt" -b "$f" "$new" || rig_die "cannot make a qcow2 layer over $f"
    RIG_DISK[$i]=$new
  done
}
# rig_disks_unwritten: nothing was written to any disk since its top layer
# was made (qemu-img map: no extent at depth 0, not even zeroes or a
# discard): stronger than an unchanged sha256, which a write of the same
# bytes keeps. Names the disks that were written on stderr.
rig_disks_unwritten() {
  local f bad=0
  [[ -n ${RIG_REPLAY:-} ]] && return 0
  for f in "${RIG_DISK[@]}"; do
    if ! qemu-img map --output=json "$f" | jq -e 'all(.[]; .depth > 0)' >/dev/null; then
      rig_log "$(basename "$f"): written ($(qemu-img map --output=json "$f" | jq '[.[] | select(.depth == 0) | .length] | add') bytes allocated in this layer)"
      bad=1
    fi
  done
  ((bad == 0))
}
# rig_fixture_check_base (rig_done calls it): the shared install's base disks
# are what the install left: QEMU opened them only as read-only backing
# files. Their size, mtime and ctime (ns) as at the publish: any write
# moves the ctime, and nothing can set a ctime back. (Their sha256 would
# read 8 GiB: a minute per test on this host.)
rig_fixture_stat() { stat -c '%n %s %y %z' "$@"; }
rig_fixture_check_base() {
  rig_check "the shared install's base disks were not written (size, mtime, ctime of $(wc -l <"$RIG_FIXTURE_DIR/base.stat") disks)" \
    eval '(cd "$RIG_FIXTURE_DIR" && rig_fixture_stat $(cat disks) | cmp -s - base.stat)'
}

# --- assertions (they count failures; rig_done decides) ---------------------
rig_ok() { echo "ok - $*"; }
rig_not_ok() { echo "not ok - $*"; RIG_FAILS=$((RIG_FAILS + 1)); }
rig_check() {  # rig_check DESCRIPTION COMMAND...
  local d=$1; shift
  if "$@"; then rig_ok "$d"; else rig_not_ok "$d"; fi
}
# rig_expect_section NAME REGEX [DESCRIPTION]: a line of the section matches (grep -E)
rig_expect_section() {
  local sec=$1 re=$2 d=${3:-"$1 matches /$2/"}
  if rig_section_has "$sec" "$re"; then rig_ok "$d"
  else
    rig_not_ok "$d"
    echo "# section '$sec' of the report:" ; rig_report_section "$sec" | head -40 | sed 's/^/#   /'
  fi
}
# rig_expect_no_section NAME REGEX [DESCRIPTION]: no line of the section matches
rig_expect_no_section() {
  local sec=$1 re=$2 d=${3:-"$1 has no /$2/"}
  if [[ -z $(rig_report_sections | grep -F -- "$sec") ]]; then rig_not_ok "$d (no section '$sec' in the report)"
  elif rig_section_has "$sec" "$re"; then
    rig_not_ok "$d"
    echo "# section '$sec' of the report:" ; rig_report_section "$sec" | grep -E -- "$re" | head -10 | sed 's/^/#   /'
  else rig_ok "$d"; fi
}
rig_expect_exit() {
  local want=$1 got; got=$(rig_exit_code)
  if [[ $got == "$want" ]]; then rig_ok "kiln exit code $want"
  else rig_not_ok "kiln exit code is '$got', expected $want"; fi
}
rig_done() {
  [[ -n ${RIG_FIXTURE_DIR:-} ]] && rig_fixture_check_base
  rig_log "whole run: $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $RIG_T0}") s"
  if ((RIG_FAILS)); then rig_log "$RIG_FAILS check(s) failed"; exit 1; fi
  exit 0
}

# --- the layout tests' four disks and a spare (raid10 far 2 over four) -------
# rig_disks_and_spare: four blank 2 GiB disks, then a fifth of 512 MiB that
# the specs do not select, with 4 MiB of random data on it (something to
# keep): RIG_SPARE is its image, RIG_SPARE_SUM its sha256 now.
rig_disks_and_spare() {
  rig_disks 4 2G
  rig_disk spare 512M
  RIG_SPARE=${RIG_DISK[4]}
  dd if=/dev/urandom of="$RIG_SPARE" bs=1M count=4 conv=notrunc status=none
  RIG_SPARE_SUM=$(rig_sha256 "$RIG_SPARE")
}
# rig_expect_raid10_f2: the guest's mdstat and mdadm --detail show one md
# raid10, far 2, 256K chunks, with 4 of 4 members active
rig_expect_raid10_f2() {
  rig_expect_section mdstat '^md[0-9]+ : active raid10 ' "md array is raid10"
  rig_expect_section mdstat '\[4/4\] \[UUUU\]' "all four members active"
  rig_expect_section mdadm-detail 'Raid Level : raid10' "mdadm: raid10"
  rig_expect_section mdadm-detail 'Layout : far=2' "mdadm: layout far=2"
  rig_expect_section mdadm-detail 'Chunk Size : 256K' "mdadm: 256K chunk"
  rig_expect_section mdadm-detail 'Active Devices : 4' "mdadm: 4 active devices"
}
# rig_expect_kvm_vg: VG kvm_vg with one PV and the two LVs, root (1 GiB) and
# images, both xfs, mounted at /target and /target/var/lib/libvirt/images
rig_expect_kvm_vg() {
  rig_expect_section vgs '^ *kvm_vg\|1\|2\|' "VG kvm_vg with one PV and two LVs"
  rig_expect_section lvs '^ *kvm_vg\|root\|1073741824B\|active' "LV root, 1 GiB, active"
  rig_expect_section lvs '^ *kvm_vg\|images\|[0-9]+B\|active' "LV images, active"
  rig_expect_section mounts '^/dev/(mapper/kvm_vg-root|kvm_vg/root) /target xfs ' "root LV mounted on /target as xfs"
  rig_expect_section mounts '^/dev/(mapper/kvm_vg-images|kvm_vg/images) /target/var/lib/libvirt/images xfs .*noatime' "images LV mounted as xfs, noatime"
}
# rig_spare_done: the spare (/dev/vde in the guest) is no md member, carries
# no signature and its image is unchanged; then the timings and rig_done
rig_spare_done() {
  rig_expect_no_section mdadm-detail '/dev/vde' "the spare disk is not an md member"
  rig_expect_no_section blkid '^/dev/vde' "the spare disk carries no signature"
  rig_check "the fifth (unselected) disk is unchanged" test "$RIG_SPARE_SUM" = "$(rig_sha256 "$RIG_SPARE")"
  echo "# initramfs ${RIG_INITRD_SIZE:-?} bytes, /init at ${RIG_INIT_SECONDS}s guest uptime, guest run ${RIG_BOOT_SECONDS}s"
  rig_done
}
