#!/bin/bash
# Installs everything kiln's build, tests and demo need on Debian 12 (as root).
# Idempotent: does nothing when every package is already there.
set -euo pipefail
PKGS=(
  # build
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libyaml-dev libcurl4-openssl-dev libcryptsetup-dev libparted-dev libarchive-dev
  libblkid-dev libdevmapper-dev libjson-c-dev libssl-dev
  # tests and rig
  python3 jq curl zstd xz-utils gzip tar cpio kmod busybox-static
  mdadm lvm2 cryptsetup-bin xfsprogs e2fsprogs dosfstools parted fdisk fio sqlite3
  nginx-light qemu-system-x86 qemu-utils ipxe-qemu mmdebstrap file socat bc
  # the stand-in controller's SSH login on addHost (test-register-ssh): a test
  # sshd on 127.0.0.1 (never started as a service: policy-rc.d or no init)
  openssh-server python3-paramiko
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
