#!/bin/sh
# Put first in the guest's PATH by tests/rig/test-bench.sh. For `kiln boot`
# it first runs the crypt benchmark's comparison on the guest's real kernel
# -- ROUNDS alternating rounds of kiln against `cryptsetup benchmark` and fio,
# measuring the same thing -- leaves the results in /run/kiln (which /init
# copies into its report), and then runs the real `kiln boot` (the spec with
# the impossible floor). Any other kiln command goes to the real binary.
[ "$1" = boot ] || exec /usr/bin/kiln "$@"
ARGS="$*"       # "boot --no-finish": plain words
R=/run/kiln
mkdir -p $R
ROUNDS=$(sed -n 's/.*kiln\.rig\.rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
ROUNDS=${ROUNDS:-5}
now() { cut -d' ' -f1 /proc/uptime; }
el() { awk "BEGIN{printf \"%.2f\", $2 - $1}"; }
RAW=/dev/vdb
OFF=32M SIZE=256M
# fio's reference: its steady state, 100 ms ramp then 500 ms measured (the
# device's figure the gate's short windows must agree with; at 50 ms fio's
# own figures swung 0.3-2x between back-to-back runs); --gtod_reduce=1: fio
# does not time each request, so its own cost per request under TCG (4 KiB
# reads) stays small, like kiln's one clock read per batch of completions
FIO_MS=500

kiln_gate() {   # round: the whole gate as apply runs it: one cipher, the raw device, the encrypted device (--gate: no AF_ALG figure)
  t0=$(now)
  /usr/bin/kiln bench --json --gate --write --offset $OFF --size $SIZE --crypt /dev/mapper/bc $RAW >$R/bench-$1.json 2>$R/bench-$1.err
  echo "kiln_bench_rc_$1=$?"
  t1=$(now)
  echo "kiln_gate_seconds_$1=$(el "$t0" "$t1")"
}

kiln_rest() {   # round
  # the same with 150 ms windows: what the default short ones cost
  t0=$(now)
  /usr/bin/kiln bench --json --gate --slice 150 --write --offset $OFF --size $SIZE --crypt /dev/mapper/bc $RAW >$R/bench-s150-$1.json 2>$R/bench-s150-$1.err
  t1=$(now)
  echo "kiln_s150_seconds_$1=$(el "$t0" "$t1")"
  # the cipher as `cryptsetup benchmark` measures it: one request in flight, and AF_ALG
  /usr/bin/kiln bench --json --depth 1 --cipher aes-xts-plain64:512 >$R/bench-depth1-$1.json 2>$R/bench-depth1-$1.err
  echo "kiln_depth1_rc_$1=$?"
}

fio_one() {   # key device rw fio-options...: one fio run with kiln's I/O shape, printed as "key=KiB/s IOPS"
  # one sequential stream (random for 4k) with 4 requests in flight,
  # O_DIRECT, 1 MiB / 4 KiB, the same region
  key=$1 dev=$2 rw=$3; shift 3
  bs=1M; [ $rw = randread ] && bs=4k
  fio --name=k --filename=$dev --rw=$rw --bs=$bs --direct=1 --ioengine=libaio --iodepth=4 --numjobs=1 \
    --offset=$OFF --size=$SIZE --time_based "$@" --output-format=terse --terse-version=3 >/run/fio.out 2>&1
  # terse v3: field 7 read bw KiB/s, 8 read iops; 48 write bw KiB/s, 49 write iops
  awk -F';' -v k="$key" -v rw=$rw 'NF > 50 { if (rw == "write") print k "=" $48 " " $49; else print k "=" $7 " " $8 }' /run/fio.out
}

ref_cryptsetup() {    # round
  t0=$(now)
  cryptsetup benchmark -c aes-xts-plain64 -s 512 >/run/cs.out 2>&1
  echo "cryptsetup_rc_$1=$?"
  t1=$(now)
  echo "cryptsetup_seconds_$1=$(el "$t0" "$t1")"
  # "    aes-xts        512b        24.1 MiB/s        25.3 MiB/s"
  awk -v r="$1" '$1 == "aes-xts" && $2 == "512b" { printf "cryptsetup_enc_mibps_%s=%s\ncryptsetup_dec_mibps_%s=%s\n", r, $3, r, $5 }' /run/cs.out
}

ref_fio() {    # round order: fio in the gate's order ("forward") or the reverse, its
  # start-up kept out of its figure with --ramp_time, as kiln's warm-up is
  # out of its own; --norandommap: random offsets may repeat, as kiln's do
  runs="$RAW:write $RAW:read $RAW:randread /dev/mapper/bc:write /dev/mapper/bc:read /dev/mapper/bc:randread"
  if [ "$2" = reverse ]; then
    rev=; for run in $runs; do rev="$run $rev"; done; runs=$rev
  fi
  for run in $runs; do
    dev=${run%:*} rw=${run##*:}
    fio_one "fio_${dev##*/}_${rw}_$1" $dev $rw --ramp_time=100ms --runtime=${FIO_MS}ms --norandommap --gtod_reduce=1
  done
}

{
echo "kernel=$(uname -r)"
echo "rounds=$ROUNDS"
# a LUKS2 device on the raw disk, opened, as the gate sees it after luksOpen
# (random key, pbkdf2 with few iterations: this is about throughput, not keys)
head -c 64 /dev/urandom >/run/bench.key
cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
  --cipher aes-xts-plain64 --key-size 512 --sector-size 4096 --key-file /run/bench.key $RAW
cryptsetup open --type luks2 --key-file /run/bench.key $RAW bc
echo "luks_open_rc=$?"
rm -f /run/bench.key
command -v fio >/dev/null || echo "fio=missing"

i=1
while [ $i -le "$ROUNDS" ]; do
  # odd rounds kiln first, even rounds the references first; the gate and
  # fio's device runs side by side, fio in the gate's order after it and in
  # the reverse before it, so that each figure's two measurements lie close
  # in time (on a shared host disk the device's rate moves within seconds)
  if [ $((i % 2)) = 1 ]; then
    kiln_rest $i; kiln_gate $i; ref_fio $i forward; ref_cryptsetup $i
  else
    ref_cryptsetup $i; ref_fio $i reverse; kiln_gate $i; kiln_rest $i
  fi
  i=$((i + 1))
done

# the device tests at 1 s instead of 150 ms, kiln and fio once each: does
# the sample length move either of them?
/usr/bin/kiln bench --json --slice 1000 --write --offset $OFF --size $SIZE --crypt /dev/mapper/bc $RAW >$R/bench-long.json 2>$R/bench-long.err
for rw in write read randread; do fio_one fio_long_$rw /dev/mapper/bc $rw --runtime=1s; done

# the noise of one sample against its length: NOISE_REPS back-to-back runs of
# the cipher part alone (dm-crypt depth 1 and AF_ALG) per sample length
for ms in 50 100 200; do
  k=1
  while [ $k -le 5 ]; do
    /usr/bin/kiln bench --json --depth 1 --slice $ms --cipher aes-xts-plain64:512 >$R/bench-noise-$ms-$k.json 2>$R/bench-noise-$ms-$k.err
    k=$((k + 1))
  done
done

# the same ciphers: tuning over the three allowed candidates against
# `cryptsetup benchmark` for those three
t0=$(now)
/usr/bin/kiln bench --json --gate --tune --cipher aes-xts-plain64:512 --cipher aes-xts-plain64:256 \
  --cipher xchacha12,aes-adiantum-plain64:256 >$R/bench-tune.json 2>$R/report-bench-tune-err.txt
echo "kiln_tune_rc=$?"
t1=$(now)
echo "kiln_tune_seconds=$(el "$t0" "$t1")"
for c in "aes-xts-plain64 512" "aes-xts-plain64 256" "xchacha12,aes-adiantum-plain64 256"; do
  set -- $c
  cryptsetup benchmark -c "$1" -s "$2" >>$R/report-bench-cryptsetup3.txt 2>&1
done
t2=$(now)
echo "cryptsetup3_seconds=$(el "$t1" "$t2")"

# an impossible floor fails kiln bench with exit code 6
/usr/bin/kiln bench --min-cipher 1000000 >/dev/null 2>$R/report-bench-floor.txt
echo "kiln_floor_rc=$?"
cryptsetup close bc
echo "dm_after=$(dmsetup ls 2>&1 | tr '\n' ' ')"
} >$R/report-bench.txt 2>&1

# then the real thing: provisioning with the spec's impossible floor
exec /usr/bin/kiln $ARGS
