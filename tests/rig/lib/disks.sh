# The rig's disks: blank sparse files, qcow2 layers over them and the check
# that a boot wrote nothing. Sourced by tests/rig/lib.sh (its header is the index).

# rig_disks N [SIZE]: N blank sparse disks, disk0..disk(N-1), appended to RIG_DISK.
rig_disks() {
  local n=$1 size=${2:-2G} i
  for ((i = 0; i < n; i++)); do rig_disk "disk$i" "$size"; done
}
# rig_disk [--bus BUS] NAME [SIZE] [FILE]: one more disk (a blank sparse
# file, or a copy of FILE), serial "kiln-NAME", on BUS (rig_disk_device:
# virtio, nvme, sata, sas, scsi, usb; BUS:4k gives it 4096-byte logical
# sectors). Prints nothing; the path is $RIG_TMP/NAME.img and it is
# appended to RIG_DISK.
rig_disk() {
  local bus=virtio
  if [[ $1 == --bus ]]; then bus=$2; shift 2; fi
  local name=$1 size=${2:-2G} from=${3:-}
  local f=$RIG_TMP/$name.img
  if [[ -n $from ]]; then cp --sparse=always "$from" "$f"; else truncate -s "$size" "$f"; fi
  RIG_DISK_BUS[${#RIG_DISK[@]}]=$bus
  RIG_DISK+=("$f")
  RIG_DISK_SERIAL+=("kiln-$name")
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
