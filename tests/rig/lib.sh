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
#   rig_boot_disk [--uefi] [--without 0] [--late N:S] # boot the installed system from its disks
#   rig_ssh_forward; rig_controller_ssh 10.0.2.15  # the guest's sshd for the stand-in's addHost
#   rig_job_setup SPEC PREFIX; rig_job_boot_installed 10.0.2.15  # the whole job's pieces
#   rig_fixture_boot boot-tang specs/boot-tang.yaml  # start from the shared install:
#                                       # qcow2 overlays of its disks, its Tang keys, spec, boot 1
#   rig_disk_layer; rig_boot ...; rig_check "..." rig_disks_unwritten  # the boot wrote nothing
#   RIG_NICS=("e1000 52:54:00:6b:69:03")  # a second NIC, on one hub with the boot NIC
#   rig_failover_disk; rig_boot_disk --qmp rig_bond_failover  # bond0's active NIC's link goes down
#   rig_netns_start; rig_netns_tap tap0 # a namespace of the test's own: bridge, taps
#   RIG_NET_TAP=tap0 RIG_FIRMWARE=uefi rig_boot --pxe  # a node on the real network
#
# Install once, boot many: a test that starts from a finished install boots
# copy-on-write qcow2 overlays (backing file: the raw disks) of one install
# made per ctest run by tests/rig/fixture-NAME.sh, in BUILD/rig-fixtures/NAME;
# tests that judge the install itself still install. See "install once,
# boot many" in lib/fixture.sh for what the fixture holds and when it is made.
#
# Assertions only look at the guest report (written by /init to the second
# serial port, see initramfs/init), never at kiln's own log.
#
# Knobs (environment): RIG_MEM (MiB, 1024), RIG_SMP (2), RIG_CPU (QEMU -cpu), RIG_TIMEOUT (s, 600),
# RIG_KEEP=1 keeps the temp dir, RIG_REPLAY=DIR checks a kept dir's reports
# instead of booting, KILN_CACHE (initramfs cache), KILN_RIG_INITRD /
# KILN_RIG_KERNEL (use these instead of building), RIG_APPEND (more kernel args),
# RIG_DISK_CACHE (the disks' host-side cache options, "cache=unsafe": the
# host page cache, fastest; tests/rig/test-bench.sh asks for
# "cache=none,aio=threads" to measure the disk, not the page cache).
#
# Everything the rig starts (nginx, QEMU) is stopped by PID on exit, and the
# temp dir is removed, also when a test fails.
#
# Tests source this file only; it sources the pieces, one file a concern,
# in tests/rig/lib/:
#   machine.sh  rig_init, rig_cleanup, the initramfs (rig_build_initramfs,
#               rig_add_initrd_segment), rig_boot, rig_boot_disk, rig_qemu, rig_drive,
#               the NICs (rig_nic_args), QMP (rig_qmp, rig_late_plug, rig_bond_failover)
#   disks.sh    rig_disks, rig_disk, rig_disk_layer, rig_disks_unwritten,
#               rig_disks_and_spare
#   servers.sh  nginx (rig_http_start, rig_spec, rig_small_image,
#               rig_boot_image), the stand-in controller, rig_ssh_forward, Tang
#   report.sh   the report (rig_report_section ...), the checks (rig_check,
#               rig_expect_*, rig_ok), rig_done, the layout tests' checks
#   job.sh      the whole job's pieces (rig_job_*, rig_no_secret_in)
#   fixture.sh  install once, boot many (rig_fixture_*)
#   netns.sh    a real network: a namespace with a bridge and taps, where the
#               boot server of kickstart/setup.sh runs (rig_netns_*)
# Here: the knobs' defaults and the state every piece shares (below), the
# log and rig_sha256.

RIG_MAC=${RIG_MAC:-52:54:00:6b:69:01}
RIG_SMBIOS_SERIAL=${RIG_SMBIOS_SERIAL:-RIG0001}    # ${serial} in specs
RIG_SMBIOS_UUID=${RIG_SMBIOS_UUID:-6b696c6e-0000-4000-8000-000000000001}  # ${uuid}
RIG_HTTP_IP=10.0.2.100                  # the guest's view of the host's nginx
RIG_MEM=${RIG_MEM:-1024}
RIG_SMP=${RIG_SMP:-2}
# QEMU's most capable CPU without ERMS and FSRM ("enhanced rep movsb/stosb",
# "fast short rep mov"): with them the guest kernel clears every page it
# allocates (Debian's init_on_alloc) and copies with `rep stosb`/`rep movsb`,
# which TCG runs one byte an iteration; the rig's guests stalled tens of
# seconds in clear_page_erms (soft lockups in modprobe, lvm and dm-crypt's
# workers, 2026-12-06). Without them the kernel takes `rep stosq`, eight
# bytes an iteration. Real junk boxes older than Ivy Bridge lack ERMS too.
RIG_CPU=${RIG_CPU:-max,erms=off,fsrm=off}
RIG_TIMEOUT=${RIG_TIMEOUT:-600}
RIG_DISK_CACHE=${RIG_DISK_CACHE:-cache=unsafe}
RIG_DISK=()                             # disk image files, in -drive order
RIG_DISK_SERIAL=()                      # their serials (kiln-disk0 ...)
RIG_DISK_BUS=()                         # their buses (rig_disk --bus; unset: virtio)
RIG_NIC_MODEL=${RIG_NIC_MODEL:-virtio-net-pci}  # the guest's NIC (e1000e: an Intel one)
RIG_NICS=()                             # more NICs, "MODEL MAC" each (rig_nic_args: on one hub with it)
RIG_PIDS=()
RIG_FAILS=0
RIG_T0=$(date +%s.%N)

rig_log() { echo "rig: $*" >&2; }
rig_skip() { echo "rig: SKIP: $*" >&2; exit 77; }
rig_die() { echo "rig: FAIL: $*" >&2; exit 1; }

# rig_sha256 FILE...: hashes, one line each
rig_sha256() { sha256sum "$@" | awk '{print $1}'; }

# the shared toolkit (tests/lib): free_port, the EXIT trap (rig_init hangs
# rig_cleanup on it), nginx_run, tang_start, netns_exec, secret (assert.sh: a throwaway
# passphrase or password that a test then looks for where it must not be)
# shellcheck source=../lib/http.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/http.sh"
# shellcheck source=../lib/tang.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tang.sh"
# shellcheck source=../lib/mountns.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mountns.sh"
# shellcheck source=lib/machine.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/machine.sh"
# shellcheck source=lib/disks.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/disks.sh"
# shellcheck source=lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/servers.sh"
# shellcheck source=lib/report.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/report.sh"
# shellcheck source=lib/job.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/job.sh"
# shellcheck source=lib/fixture.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/fixture.sh"
# shellcheck source=lib/netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/netns.sh"
