# Sourced by tests/rig/lib.sh (its header is the index).

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
    RIG_VAR_PASSPHRASE=$(secret replay-) RIG_TANG_LOG=$RIG_REPLAY/tang/log
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
