# What the guest reaches on the host, all on 127.0.0.1 and free ports,
# through guestfwd/hostfwd relays: nginx (specs, images, reports), the
# stand-in controller, Tang, the guest's sshd. Sourced by tests/rig/lib.sh
# (its header is the index).

# rig_relay FILE PORT: the script QEMU runs once per guest connection
# (guestfwd ...-cmd:FILE) to reach 127.0.0.1:PORT, and only that. slirp gives
# it the guest's socket as stdin, stdout and stderr, so socat's own messages
# go to RIG_TMP/relay.log, never to the guest (a connect error read by curl
# as the reply: "Received HTTP/0.9").
rig_relay() {
  printf '#!/bin/sh\nexec socat - TCP:127.0.0.1:%s 2>>%s\n' "$2" "$RIG_TMP/relay.log" >"$1" && chmod +x "$1"
}

# nginx (tests/lib/http.sh's nginx_run) on 127.0.0.1:RIG_HTTP_PORT serving
# $RIG_TMP/www, with WebDAV PUT under /reports/ (a guest or kiln may upload
# there), and a guestfwd relay script that connects a guest's TCP connection
# to it.
rig_http_start() {
  local try
  for try in 1 2 3; do
    RIG_HTTP_PORT=$(free_port)
    nginx_run "$RIG_TMP/nginx" "$RIG_HTTP_PORT" 'types { text/plain yaml yml txt; }' \
      "server { listen 127.0.0.1:$RIG_HTTP_PORT; root $RIG_TMP/www; client_max_body_size 64m;
    location /reports/ { dav_methods PUT; create_full_put_path on; } }" >&2 && break
    rig_log "nginx did not start on port $RIG_HTTP_PORT (try $try)"
    NGINX_PID=
  done
  [[ -n ${NGINX_PID:-} ]] || rig_die "nginx did not start"
  rig_relay "$RIG_TMP/relay" "$RIG_HTTP_PORT"
  RIG_HTTP_URL="http://$RIG_HTTP_IP"       # how the guest reaches nginx
  RIG_HTTP_HOST_URL="http://127.0.0.1:$RIG_HTTP_PORT"
  rig_log "nginx on 127.0.0.1:$RIG_HTTP_PORT (pid $NGINX_PID), docroot $RIG_TMP/www"
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
  rig_relay "$RIG_TMP/relay-controller" "$RIG_CTL_PORT"
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
  RIG_SSH_PORT=$(free_port)
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

# rig_tang_start: tests/lib/tang.sh's Tang in RIG_TMP/tang (keys made fresh
# the first time, unless RIG_TMP/tang/db already holds some: a shared
# install's, rig_fixture_boot; kept across a stop and start; its log, one
# line a request, in RIG_TANG_LOG). The guest reaches it at RIG_TANG_IP:80
# through a guestfwd relay (added to RIG_NET_EXTRA once). Sets, for specs,
# RIG_VAR_TANG_URL and RIG_VAR_TANG_THP (`jose jwk thp` of the signing key).
rig_tang_start() {
  local try
  RIG_TANG_DIR=$RIG_TMP/tang RIG_TANG_LOG=$RIG_TMP/tang/log RIG_TANG_IP=10.0.2.102
  for try in 1 2 3; do
    tang_start "$RIG_TANG_DIR" && break
    TANG_PID=
  done
  [[ -n ${TANG_PID:-} ]] || rig_die "Tang did not start"
  if [[ -z ${RIG_TANG_RELAY:-} ]]; then
    RIG_TANG_RELAY=$RIG_TMP/relay-tang
    RIG_NET_EXTRA+=",guestfwd=tcp:$RIG_TANG_IP:80-cmd:$RIG_TANG_RELAY"
  fi
  rig_relay "$RIG_TANG_RELAY" "$TANG_PORT"
  RIG_VAR_TANG_URL=http://$RIG_TANG_IP RIG_VAR_TANG_THP=$TANG_THP
  rig_log "Tang on 127.0.0.1:$TANG_PORT (pid $TANG_PID), guest sees $RIG_VAR_TANG_URL, signing key thumbprint $RIG_VAR_TANG_THP"
}
# rig_tang_stop: Tang goes away (its port is closed; the relay's connection
# then fails at once)
rig_tang_stop() {
  [[ -n ${TANG_PID:-} ]] || return 0
  rig_log "Tang stopped (pid $TANG_PID)"
  tang_stop
}
# rig_tang_requests: the recovery requests Tang answered with 200 so far
# (RIG_TANG_LOG: also a kept run's, RIG_REPLAY)
rig_tang_requests() { grep -c 'POST /rec/.* => 200' "$RIG_TANG_LOG" 2>/dev/null || true; }
