#!/bin/bash
# The first-boot registration on a real loop disk (plain GPT + ext4: this
# kernel has no md/dm), through `kiln apply --spec-url`, and across a resume:
# run 1 builds the storage, installs the image and configures the target,
# then the webhook refuses the report (401, final): exit 7, the progress
# record without 'register'. Run 2 resumes (configure skipped) and its
# register cloudstack step still installs the first-boot files into the
# mounted root and saves the report there; no run sends a CloudStack call.
# Assertions read the target tree, the progress record and the controller.
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup mkfs.ext4 findmnt jq zstd python3 sqlite3 curl
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
source "$SRC/tests/lib/loop.sh"
loop_init firstboot-resume
source "$SRC/tests/lib/controller.sh"
source "$SRC/tests/lib/spec.sh"

small_image_served
controller_start "$T/ctl" || exit 1
HOST_PASSWORD=$(secret host-pw-)
truncate -s 256M "$T/a.img"
attach "$T/a.img"; LOOP=$ATTACHED
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"
spec_write "$T/www/spec.yaml" root-disk register image finish -- HOSTNAME=kiln-fb-resume DISK="$LOOP" CTL="$CTL" \
  API_KEY="$(controller_key api_key)" SECRET_KEY="$(controller_key secret_key)" HOST_USERNAME=root \
  HOST_AUTH=$'\n'"    host_password: \"$HOST_PASSWORD\"" HMAC_KEY="$(controller_key hmac_key)" \
  IMAGE_URL="http://127.0.0.1:$HTTP_PORT/small.tar.zst" IMAGE_SHA256="$SMALL_SUM" FINISH=none
SPEC_URL="http://127.0.0.1:$HTTP_PORT/spec.yaml"
SHA=$(sha256sum "$T/www/spec.yaml" | cut -d' ' -f1)
R=$T/target

# 1. the webhook refuses the report: the run fails at register, after configure
controller_admin '{"fail_401": true, "fault_webhook": true}'
expect_kiln 7 "$T/run1.log" apply --yes --spec-url "$SPEC_URL" "$T/www/spec.yaml" && ok "run 1: kiln apply exit 7"
rec=$R/var/lib/kiln/progress.json
[[ $(jq -c .stages_done "$rec") == '["storage","image","configure"]' ]] && ok "run 1's record: storage, image, configure" \
  || not_ok "progress record: $(cat "$rec")"
umount -R "$R"          # the node reboots
controller_admin '{"fail_401": false, "fault_webhook": false}'

# 2. the resume: configure skipped, the first-boot files installed
expect_kiln 0 "$T/run2.log" apply --yes --spec-url "$SPEC_URL" "$T/www/spec.yaml" && ok "run 2: kiln apply exit 0"
grep -q "resuming the interrupted run of plan .*: stages done storage, image, configure" "$T/run2.log" \
  && ok "run 2 resumed with configure done" || not_ok "run 2 did not resume: $(grep -i resum "$T/run2.log")"
grep -Eq "step [0-9]+/[0-9]+ configure .*skipped|configure.*: skipped" "$T/run2.log" && ok "run 2 skipped configure" \
  || not_ok "configure not skipped: $(grep configure "$T/run2.log")"
grep -q "first boot: kiln-register.service enabled in $R" "$T/run2.log" && ok "run 2's register cloudstack step installed the first boot" \
  || not_ok "run 2 did not install the first boot: $(grep -i 'first boot\|register' "$T/run2.log")"
[[ -x $R/usr/local/sbin/kiln && -L $R/etc/systemd/system/multi-user.target.wants/kiln-register.service ]] \
  && ok "kiln and the enabled unit are in the resumed root" || not_ok "no first-boot files in the resumed root"
grep -qxF "spec=$SPEC_URL" "$R/etc/kiln/firstboot.conf" && grep -qxF "spec_sha256=$SHA" "$R/etc/kiln/firstboot.conf" \
  && ok "firstboot.conf names --spec-url and the file's sha256" || not_ok "firstboot.conf: $(cat "$R/etc/kiln/firstboot.conf")"
[[ $(awk -F: '$1 == "root" { print substr($2, 1, 3) }' "$R/etc/shadow") == '$y$' ]] && ok "root's password hashed in /etc/shadow" \
  || not_ok "shadow: $(cut -d: -f1,2 "$R/etc/shadow" | cut -c1-20)"
[[ $(jq -r .registration.cloudstack.result "$R/var/lib/kiln/report.json") == FIRSTBOOT ]] \
  && ok "the resumed run saved its report in the root, FIRSTBOOT" || not_ok "target report: $(jq -c .registration "$R/var/lib/kiln/report.json" 2>&1)"
[[ $(jq -r .run_id "$R/var/lib/kiln/report.json") == $(jq -r .run_id "$T/run/report.json") ]] \
  && ok "the root's report is this run's" || not_ok "the root's report is another run's"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE path = '/client/api'") == 0 ]] && ok "no CloudStack call from either run" \
  || not_ok "CloudStack calls: $(controller_sql "SELECT group_concat(command) FROM requests WHERE path = '/client/api'")"
if grep -rqF -- "$HOST_PASSWORD" "$R" "$T/run1.log" "$T/run2.log" "$T/run"; then not_ok "the host password is in the root or a log"
else ok "the host password is in no file of the root, no log, no report"; fi
checks_done
