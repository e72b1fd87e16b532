#!/bin/bash
# Installs everything kiln's builds, tests and demo need on Debian 12 (as root),
# on a machine that has nothing but a minimal Debian (mmdebstrap --variant=
# minbase): tests/host/test-fresh-machine.sh proves it on a brand-new root.
# Idempotent: does nothing when every package is already there.
#   deps.sh          every build (normal, ASan+UBSan, static, fuzz), the tests, the rig
#   deps.sh --list   print the package names, one a line
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PKGS=(
  # the normal and sanitizer builds; the fuzz build (clang + libFuzzer runtime)
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libyaml-dev libcurl4-openssl-dev libcryptsetup-dev libparted-dev libarchive-dev
  libblkid-dev libdevmapper-dev libjson-c-dev libssl-dev
  # the tang pin in process (agent/storage/tang.c)
  libjose-dev libjansson-dev
  # libarchive is linked from its static archive in every build (CMakeLists.txt):
  # its private libraries come as their own -dev packages
  nettle-dev libacl1-dev liblzma-dev libzstd-dev liblz4-dev libbz2-dev zlib1g-dev
  # tests and rig
  python3 jq curl openssl ca-certificates procps iproute2 util-linux diffutils man-db
  zstd xz-utils gzip tar cpio kmod busybox-static
  mdadm lvm2 cryptsetup-bin xfsprogs e2fsprogs dosfstools parted fdisk fio sqlite3
  nginx-light qemu-system-x86 qemu-utils ipxe-qemu mmdebstrap file socat bc time
  dnsmasq-base
  # the boot server's iPXE: undionly.kpxe and ipxe.efi in /usr/lib/ipxe (kickstart/setup.sh,
  # tests/host/test-bootserver.sh)
  ipxe
  # the stand-in controller's SSH login on addHost (test-register-ssh): a test
  # sshd on 127.0.0.1 (never started as a service: policy-rc.d or no init)
  openssh-server python3-paramiko
  # luks[].unlock: clevis bound against a real tangd on 127.0.0.1 (tests/host/test-unlock.sh)
  clevis clevis-luks tang jose cryptsetup
  # booting the installed disks under UEFI (tests/rig/test-boot-disks.sh)
  ovmf
  # the escrowed volume's first data sector decrypted in user space
  # (tests/lib/luks-pv-label.py, tests/rig/test-boot-degraded.sh)
  python3-cryptography
)
# the static build's own list (initramfs/static/build.sh reads the same file)
mapfile -t -O "${#PKGS[@]}" PKGS < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/../initramfs/static/packages")
if [[ ${1:-} == --list ]]; then printf '%s\n' "${PKGS[@]}" | sort -u; exit 0; fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]})); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # No package starts its service while it installs (nginx on port 80 of
  # every address, sshd, tangd's socket): the tests and the demo start their
  # own servers, on 127.0.0.1 only. invoke-rc.d and deb-systemd-invoke ask
  # policy-rc.d; where the machine has none, one that says no (101) is in
  # place until this script ends. (The units stay enabled, as the packages
  # leave them: on a machine that reboots, disable them.)
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    trap 'rm -f "$policy"' EXIT
    printf '#!/bin/sh\n# tests/deps.sh: no service starts while it installs packages\nexit 101\n' >"$policy"
    chmod 0755 "$policy"
  fi
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
