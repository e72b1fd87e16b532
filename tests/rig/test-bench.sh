#!/bin/bash
# The crypt benchmark on a real kernel (QEMU): kiln bench measures the cipher
# through dm-crypt over a zero target, reports crypt_benchmark() beside it
# (AF_ALG is there), measures the raw disk and the LUKS device over it with
# the overhead, stays inside its time bound, leaves no mapping behind, and an
# impossible floor fails with exit code 6. The same run measures `cryptsetup
# benchmark` and fio for docs/benchmarks.md (numbers printed at the end).
set -euo pipefail
. "$SRC/tests/rig/lib.sh"
RIG_EXTRA=fio
rig_init
rig_disks 2 1G
# first in PATH: the wrapper that runs the benchmark instead of provisioning
W=$RIG_TMP/overlay
mkdir -p "$W/usr/sbin"
install -m 0755 "$SRC/tests/rig/bench/kiln-wrapper.sh" "$W/usr/sbin/kiln"
(cd "$W" && find . | cpio -o -H newc --quiet | gzip -1) >"$RIG_TMP/overlay.cpio.gz"
if [[ -n ${RIG_INITRD_EXTRA:-} ]]; then
  cat "$RIG_INITRD_EXTRA" "$RIG_TMP/overlay.cpio.gz" >"$RIG_TMP/extra.img"
else
  cp "$RIG_TMP/overlay.cpio.gz" "$RIG_TMP/extra.img"
fi
RIG_INITRD_EXTRA=$RIG_TMP/extra.img
rig_boot --direct || rig_die "the guest did not finish"

kv() { rig_report_section "kiln-file report-bench.txt" | sed -n "s/^$1=//p" | head -1; }
J=$RIG_TMP/bench.json
rig_report_section "kiln-file bench.json" >"$J"
rig_check "kiln bench exit 0" test "$(kv kiln_bench_rc)" = 0
rig_check "kiln bench JSON parses" jq -e . "$J" >/dev/null
jqc() { jq -e "$1" "$J" >/dev/null; }
rig_check "aes-xts-plain64 512 measured through dm-crypt and chosen" \
  jqc '.ciphers[0] | .cipher == "aes-xts-plain64" and .key_size == 512 and .chosen and .write.mbps > 0 and .read.mbps > 0 and .error == null'
rig_check "crypt_benchmark() figures beside it (AF_ALG present)" \
  jqc '.kernel_api_missing == null and .ciphers[0].kernel_enc_mbps > 0 and .ciphers[0].kernel_dec_mbps > 0'
rig_check "raw device figures" jqc '.raw.device == "/dev/vdb" and .raw.seq_write.mbps > 0 and .raw.seq_read.mbps > 0 and .raw.rand_read.iops > 0 and .raw.rand_read.lat_p99_us >= .raw.rand_read.lat_p50_us'
rig_check "encrypted device figures" jqc '.crypt.device == "/dev/mapper/bc" and .crypt.seq_write.mbps > 0 and .crypt.seq_read.mbps > 0 and .crypt.rand_read.iops > 0'
rig_check "overhead reported" jqc '.overhead.write != null and .overhead.read != null and .overhead.write < 1'
rig_check "the gate took at most 10 s (kiln: $(jq .seconds "$J") s, wall $(kv kiln_gate_seconds) s)" \
  awk "BEGIN{exit !($(kv kiln_gate_seconds) <= 10.5 && $(jq .seconds "$J") <= 10)}"
rig_check "tuning ran (exit $(kv kiln_tune_rc))" test "$(kv kiln_tune_rc)" = 0
chosen_count() { rig_report_section "kiln-file report-bench-tune.txt" | grep -c -- '<- chosen'; }
rig_check "tuning chose exactly one candidate" test "$(chosen_count)" = 1
rig_check "an impossible floor exits 6 (got $(kv kiln_floor_rc))" test "$(kv kiln_floor_rc)" = 6
rig_expect_section "kiln-file report-bench-floor.txt" "^error: crypt benchmark gate failed:$" "the floor failure says why"
rig_expect_section "kiln-file report-bench-floor.txt" "^cipher aes-xts-plain64 through dm-crypt: [0-9.]+ MB/s is below the floor of 1000000.0 MB/s$"
rig_check "no benchmark mapping left behind ($(kv dm_after))" bash -c "! grep -q kiln-bench <<<'$(kv dm_after)'"

echo "# --- numbers for docs/benchmarks.md"
echo "# kernel $(kv kernel)"
echo "# kiln cipher aes-xts-plain64 512 via dm-crypt/zero: write $(jq .ciphers[0].write.mbps "$J") MB/s, read $(jq .ciphers[0].read.mbps "$J") MB/s; crypt_benchmark enc $(jq .ciphers[0].kernel_enc_mbps "$J") dec $(jq .ciphers[0].kernel_dec_mbps "$J") MB/s"
rig_report_section "kiln-file report-bench-cryptsetup.txt" | sed 's/^/# cryptsetup: /'
echo "# kiln gate $(kv kiln_gate_seconds) s wall (kiln says $(jq .seconds "$J") s); cryptsetup benchmark $(kv cryptsetup_seconds) s; tune $(kv kiln_tune_seconds) s"
for d in raw crypt; do
  echo "# kiln $d: seq write $(jq .$d.seq_write.mbps "$J") MB/s, seq read $(jq .$d.seq_read.mbps "$J") MB/s, 4k randread $(jq .$d.rand_read.iops "$J") IOPS (p50 $(jq .$d.rand_read.lat_p50_us "$J") us, p99 $(jq .$d.rand_read.lat_p99_us "$J") us)"
done
echo "# kiln overhead: $(jq -c .overhead "$J")"
rig_report_section "kiln-file report-bench.txt" | grep '^fio_' | sed 's/^/# /'
rig_report_section "kiln-file report-bench-tune.txt" | sed 's/^/# tune: /'
rig_done
