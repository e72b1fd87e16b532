# Sourced by tests/rig/lib.sh (its header is the index).

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
  RIG_VAR_PASSPHRASE=$(secret "${prefix}luks-")
  RIG_VAR_HOST_PASSWORD=$(secret "${prefix}host-")
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
