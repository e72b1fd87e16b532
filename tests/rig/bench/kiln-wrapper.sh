#!/bin/sh
# Put first in the guest's PATH by tests/rig/test-bench.sh: instead of
# provisioning (`kiln boot`), run the crypt benchmark and its comparison with
# `cryptsetup benchmark` and fio on the guest's real kernel, and leave the
# results in /run/kiln, which /init copies into its report. Any other kiln
# command goes to the real binary.
[ "$1" = boot ] || exec /usr/bin/kiln "$@"
R=/run/kiln
mkdir -p $R
now() { cut -d' ' -f1 /proc/uptime; }
el() { awk "BEGIN{printf \"%.2f\", $2 - $1}"; }
RAW=/dev/vdb
OFF=32M SIZE=256M
{
echo "kernel=$(uname -r)"
# a LUKS2 device on the raw disk, opened, as the gate sees it after luksOpen
# (random key, pbkdf2 with few iterations: this is about throughput, not keys)
head -c 64 /dev/urandom >/run/bench.key
cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
  --cipher aes-xts-plain64 --key-size 512 --sector-size 4096 --key-file /run/bench.key $RAW
cryptsetup open --type luks2 --key-file /run/bench.key $RAW bc
echo "luks_open_rc=$?"
rm -f /run/bench.key

# kiln's whole gate: ciphers through dm-crypt, raw device, encrypted device
t0=$(now)
/usr/bin/kiln bench --json --write --offset $OFF --size $SIZE --crypt /dev/mapper/bc $RAW >$R/bench.json 2>$R/bench.err
echo "kiln_bench_rc=$?"
t1=$(now)
echo "kiln_gate_seconds=$(el "$t0" "$t1")"
/usr/bin/kiln bench --tune --cipher aes-xts-plain64:512 --cipher aes-xts-plain64:256 --cipher xchacha12,aes-adiantum-plain64:256 >$R/report-bench-tune.txt 2>&1
echo "kiln_tune_rc=$?"
t2=$(now)
echo "kiln_tune_seconds=$(el "$t1" "$t2")"
# an impossible floor fails the gate with exit code 6
/usr/bin/kiln bench --min-cipher 1000000 >/dev/null 2>$R/report-bench-floor.txt
echo "kiln_floor_rc=$?"
echo "dm_after=$(dmsetup ls 2>&1 | tr '\n' ' ')"

t3=$(now)
cryptsetup benchmark -c aes-xts-plain64 -s 512 >$R/report-bench-cryptsetup.txt 2>&1
echo "cryptsetup_rc=$?"
t4=$(now)
echo "cryptsetup_seconds=$(el "$t3" "$t4")"

# fio with kiln's I/O shape: 4 jobs x 1 request in flight, O_DIRECT, 1 MiB
# sequential and 4 KiB random, 2 s each, the same region
if command -v fio >/dev/null; then
  for dev in $RAW /dev/mapper/bc; do
    tag=${dev##*/}
    for rw in write read randread; do
      bs=1M; [ $rw = randread ] && bs=4k
      fio --name=k --filename=$dev --rw=$rw --bs=$bs --direct=1 --ioengine=psync --numjobs=4 --iodepth=1 \
        --thread --offset=$OFF --size=$SIZE --time_based --runtime=2 --group_reporting --output-format=terse \
        --terse-version=3 >/run/fio.out 2>&1
      # terse v3: field 7 read bw KiB/s, 8 read iops; 48 write bw KiB/s, 49 write iops
      awk -F';' -v t="$tag" -v rw=$rw '{ if (rw == "write") printf "fio_%s_%s_kbps=%s iops=%s\n", t, rw, $48, $49;
                                          else printf "fio_%s_%s_kbps=%s iops=%s\n", t, rw, $7, $8 }' /run/fio.out
    done
  done
else
  echo "fio=missing"
fi
cryptsetup close bc
} >$R/report-bench.txt 2>&1
echo poweroff >$R/finish
exit 0
