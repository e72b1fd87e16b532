#!/bin/bash
# Image install benchmark: kiln vs `curl URL | zstd -dc | tar -x --numeric-owner`
# (GNU tar), the same ~1 GiB tar.zst served by nginx on 127.0.0.1, extracted
# into a directory on the host, both followed by a sync of that filesystem
# (kiln syncs itself; the pipeline gets `sync -f DIR`).
#
#   tests/bench/image-bench.sh [--rounds N] [--kiln PATH] [--cache DIR] [--dir DIR]
#
# Rounds alternate the order (kiln first, then the pipeline first, ...).
# Prints every run, the median wall-time ratio kiln/pipeline and kiln's peak
# RSS (/usr/bin/time -v). Targets: ratio <= 1.0, RSS < 32 MiB.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
ROUNDS=3
KILN=${KILN:-$SRC/out/build/kiln}
CACHE=${KILN_BENCH_CACHE:-${KILN_CACHE:-/var/cache/kiln}/bench}
DIR=
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --kiln) KILN=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    *) echo "usage: image-bench.sh [--rounds N] [--kiln PATH] [--cache DIR] [--dir DIR]" >&2; exit 64 ;;
  esac
done
[[ -x $KILN ]] || { echo "no kiln binary at '$KILN' (build first or pass --kiln)" >&2; exit 1; }
for t in curl zstd tar nginx python3 /usr/bin/time; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done
source "$SRC/tests/lib/http.sh"

mkdir -p "$CACHE"
key=$(sha256sum "$HERE/gen-bench-image.py" | cut -c1-12)
IMG=$CACHE/bench-$key.tar.zst
if [[ ! -s $IMG ]]; then
  echo "bench: generating $IMG (once; cached)" >&2
  source "$HERE/../../initramfs/cache.sh"
  tar_tmp=$(cache_tmp "$CACHE/bench-$key.tar" .tar) img_tmp=$(cache_tmp "$IMG" .tar.zst)
  python3 "$HERE/gen-bench-image.py" "$tar_tmp"
  zstd -q -T2 -3 --rm -f "$tar_tmp" -o "$img_tmp"
  cache_commit "$img_tmp" "$IMG"
fi
SUM=$(sha256sum "$IMG" | cut -d' ' -f1)
WORK=${DIR:-$(mktemp -d /var/tmp/kiln-bench.XXXXXX)}
mkdir -p "$WORK/www" "$WORK/target"
ln -sf "$IMG" "$WORK/www/image.tar.zst"
bench_cleanup() { rm -rf "$WORK/target" "$WORK/www" "$WORK"/*.time; [[ -n $DIR ]] || rmdir "$WORK" 2>/dev/null || true; }
cleanup_do bench_cleanup
http_start "$WORK/www"
URL=http://127.0.0.1:$HTTP_PORT/image.tar.zst

bench_fresh() { rm -rf "$WORK/target"; mkdir "$WORK/target"; sync -f "$WORK"; }
time_kiln() {
  bench_fresh
  /usr/bin/time -v -o "$WORK/kiln.time" "$KILN" -q image "$URL" --sha256 "$SUM" --target "$WORK/target" >/dev/null
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s} /Maximum resident/ {print $2}' "$WORK/kiln.time" | paste -sd' '
}
run_pipe() {
  bench_fresh
  /usr/bin/time -v -o "$WORK/pipe.time" bash -c 'set -o pipefail; curl -sSf "$1" | zstd -dc | tar -x --numeric-owner -C "$2" && sync -f "$2"' _ "$URL" "$WORK/target"
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/pipe.time"
}

echo "bench: image $(basename "$IMG") $(stat -c %s "$IMG") bytes compressed, $(zstd -lv "$IMG" 2>/dev/null | sed -n 's/.*Decompressed Size: *\([^(]*\).*/\1/p' | head -1) uncompressed; target $WORK/target ($(df -T "$WORK" | awk 'NR==2 {print $2}'))"
ks=() ps=() rss=()
for ((i = 1; i <= ROUNDS; i++)); do
  if ((i % 2)); then
    read -r k m <<<"$(time_kiln)"; p=$(run_pipe)
  else
    p=$(run_pipe); read -r k m <<<"$(time_kiln)"
  fi
  ks+=("$k"); ps+=("$p"); rss+=("$m")
  printf 'round %d: kiln %6.2f s (peak RSS %d KiB)   pipeline %6.2f s   ratio %.3f\n' "$i" "$k" "$m" "$p" "$(awk -v a="$k" -v b="$p" 'BEGIN {print a / b}')"
done
python3 - "${ks[*]}" "${ps[*]}" "${rss[*]}" <<'PY'
import statistics, sys
k = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
m = [int(x) for x in sys.argv[3].split()]
ratios = [a / b for a, b in zip(k, p)]
print("median: kiln %.2f s, pipeline %.2f s, ratio (median of per-round ratios) %.3f; kiln peak RSS max %.1f MiB"
      % (statistics.median(k), statistics.median(p), statistics.median(ratios), max(m) / 1024))
PY
