#!/bin/bash
# kiln fetch against a real nginx on 127.0.0.1, through a fault-injecting
# proxy: retries, resume with Range, servers ignoring Range, 4xx final,
# schemes, size limit, HTTPS with and without the extra CA.
set -euo pipefail
[[ -n ${TRACE:-} ]] && set -x
source "$SRC/tests/lib/http.sh"
test_tmpdir fetch

mkdir -p "$T/www"
head -c 2500000 /dev/urandom >"$T/www/blob"
SUM=$(sha256sum "$T/www/blob" | cut -d' ' -f1)
http_start "$T/www"
U="http://127.0.0.1:$HTTP_PORT"

# plain fetch, verified
run_kiln 0 fetch "$U/blob" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out" || fail "content differs"
# wrong digest
run_kiln 8 fetch "$U/blob" --sha256 "$(printf '0%.0s' {1..64})" -o "$T/out"
grep -q "sha256 mismatch for '$U/blob'" "$T/err" || fail "no mismatch message"

# 404 is final: exactly one request reaches the proxy
proxy_start
run_kiln 8 fetch "http://127.0.0.1:$PROXY_PORT/missing" -o "$T/out"
grep -q "failed to fetch 'http://127.0.0.1:$PROXY_PORT/missing': HTTP 404" "$T/err" || { cat "$T/err"; fail "404 message"; }
[[ $(requests) == 1 ]] || fail "404 was retried: $(requests) requests"
proxy_stop

# 403 is final too
proxy_start status:403
run_kiln 8 fetch "http://127.0.0.1:$PROXY_PORT/blob" -o "$T/out"
grep -q "HTTP 403" "$T/err" || fail "403 message"
[[ $(requests) == 1 ]] || fail "403 was retried"
proxy_stop

# 503, 503, then 200: retried, verified (Retry-After 1: a wait of 1-5 s each)
proxy_start status:503:1 status:503:1
run_kiln 0 fetch "http://127.0.0.1:$PROXY_PORT/blob" --sha256 "$SUM" -o "$T/out"
[[ $(requests) == 3 ]] || fail "expected 3 requests, saw $(requests)"
grep -q "3 attempt(s)" "$T/err" || fail "attempts not reported"
cmp "$T/www/blob" "$T/out"
proxy_stop

# 503 forever: gives up after the bounded count (1 + 2 retries)
proxy_start status:503:1 status:503:1 status:503:1 status:503:1 status:503:1
run_kiln 8 fetch "http://127.0.0.1:$PROXY_PORT/blob" --retries 2 -o "$T/out"
grep -q "HTTP 503 (gave up after 3 attempts)" "$T/err" || { cat "$T/err"; fail "503 give-up message"; }
[[ $(requests) == 3 ]] || fail "expected 3 requests, saw $(requests)"
proxy_stop

# connection cut half way: resumes with Range from the last byte delivered
proxy_start cut:1200000
run_kiln 0 fetch "http://127.0.0.1:$PROXY_PORT/blob" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out" || fail "resumed content differs"
[[ $(requests) == 2 ]] || fail "expected 2 requests, saw $(requests)"
sed -n 1p "$PROXY_LOG" | grep -q "range=- " || fail "first request had a range"
off=$(sed -n 2p "$PROXY_LOG" | sed -n 's/.*range=bytes=\([0-9]*\)-.*/\1/p')
[[ -n $off && $off -gt 0 && $off -lt 1200000 ]] || { cat "$PROXY_LOG"; fail "second request did not resume: '$off'"; }
grep -q "0 restart(s)" "$T/err" || fail "resume counted as restart"
proxy_stop

# cut, then a server that ignores Range: restarts cleanly from 0
proxy_start cut:1200000 norange
run_kiln 0 fetch "http://127.0.0.1:$PROXY_PORT/blob" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out" || fail "restarted content differs"
grep -q "1 restart(s)" "$T/err" || { cat "$T/err"; fail "restart not reported"; }
proxy_stop

# cut three times with one retry allowed: gives up, and -o FILE is not
# created (no partial file, no temporary file left beside it)
proxy_start cut:500000 cut:500000 cut:500000
run_kiln 8 fetch "http://127.0.0.1:$PROXY_PORT/blob" --retries 1 -o "$T/cut"
grep -q "gave up after 2 attempts" "$T/err" || { cat "$T/err"; fail "cut give-up message"; }
[[ ! -e $T/cut ]] || fail "a failed fetch left a partial '$T/cut' ($(stat -c %s "$T/cut") bytes)"
proxy_stop
# a 206 must carry the range asked for, to the end of the file: the proxy
# rewrites the resumed answer's Content-Range. The right value passes (the
# rewrite itself is harmless); each wrong one (trailing junk, another total,
# another start, short of the end, two ranges) is final (no third request
# although retries are left) and -o FILE is not created
proxy_start cut:1200000 "crange:bytes {first}-2499999/2500000"
run_kiln 0 fetch "http://127.0.0.1:$PROXY_PORT/blob" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out" || fail "resumed content differs after a rewritten Content-Range"
proxy_stop
for bad in "bytes {first}-2499999/2500000x" "bytes {first}-2599999/2600000" "bytes 0-2499999/2500000" \
           "bytes {first}-2499998/2500000" "bytes {first}-2499999/2500000, bytes 0-1/2500000"; do
  proxy_start cut:1200000 "crange:$bad"
  run_kiln 8 fetch "http://127.0.0.1:$PROXY_PORT/blob" --retries 3 -o "$T/badrange"
  grep -q "failed to fetch 'http://127.0.0.1:$PROXY_PORT/blob': the server answered a Range request with HTTP 206 and a wrong range" \
    "$T/err" || { cat "$T/err"; fail "Content-Range '$bad' not refused"; }
  [[ $(requests) == 2 ]] || { cat "$PROXY_LOG"; fail "Content-Range '$bad': expected 2 requests, saw $(requests)"; }
  [[ ! -e $T/badrange ]] || fail "Content-Range '$bad' left '$T/badrange'"
  proxy_stop
done
# a wrong digest or a 404 leaves an existing FILE as it was
echo old >"$T/keep"
run_kiln 8 fetch "$U/blob" --sha256 "$(printf '0%.0s' {1..64})" -o "$T/keep"
[[ $(cat "$T/keep") == old ]] || fail "wrong digest: -o FILE was overwritten"
run_kiln 8 fetch "$U/missing" -o "$T/keep"
[[ $(cat "$T/keep") == old ]] || fail "404: -o FILE was overwritten"
leftover=$(find "$T" -maxdepth 1 -name '.*.??????')
[[ -z $leftover ]] || fail "temporary file left behind: $leftover"

# refused connection: retried, then a clear error
port=$(free_port)
run_kiln 8 fetch "http://127.0.0.1:$port/blob" --retries 1 -o "$T/out"
grep -q "Couldn't connect to server (gave up after 2 attempts)" "$T/err" || { cat "$T/err"; fail "refused message"; }

# schemes: ftp and friends are refused before any connection
proxy_start
for u in "ftp://127.0.0.1:$PROXY_PORT/blob" "gopher://127.0.0.1:$PROXY_PORT/blob" "dict://127.0.0.1:$PROXY_PORT/blob"; do
  run_kiln 8 fetch "$u" -o "$T/out"
  grep -q "unsupported URL scheme (only http, https and file)" "$T/err" || fail "scheme $u not refused"
done
[[ $(requests) == 0 ]] || fail "a refused scheme still connected"
proxy_stop
# file:// works
run_kiln 0 fetch "file://$T/www/blob" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out"

# size limit: refused from Content-Length, and for file:// too
run_kiln 8 fetch "$U/blob" --max 1M -o "$T/out"
grep -q "larger than the limit of 1048576 bytes" "$T/err" || fail "max message"
run_kiln 8 fetch "file://$T/www/blob" --max 1M -o "$T/out"
grep -q "larger than the limit" "$T/err" || fail "max message (file)"
http_stop

# HTTPS: a CA made here; verification succeeds with it and fails without it
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 -subj "/CN=kiln test CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$T/ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -out "$T/srv.pem" -days 2 -extfile "$T/ext" 2>/dev/null
http_start "$T/www" "$T/srv.pem" "$T/srv.key"
run_kiln 0 fetch "https://127.0.0.1:$HTTPS_PORT/blob" --ca "$T/ca.pem" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out"
run_kiln 8 fetch "https://127.0.0.1:$HTTPS_PORT/blob" -o "$T/out"
grep -qi "certificate" "$T/err" || { cat "$T/err"; fail "no certificate error without the CA"; }
grep -q "gave up" "$T/err" && fail "a verification failure was retried"
# a CA file that is no CA
echo "not a certificate" >"$T/bad.pem"
run_kiln 8 fetch "https://127.0.0.1:$HTTPS_PORT/blob" --ca "$T/bad.pem" -o "$T/out"
# the wrong CA
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca2.key" -out "$T/ca2.pem" -days 2 -subj "/CN=other CA" 2>/dev/null
run_kiln 8 fetch "https://127.0.0.1:$HTTPS_PORT/blob" --ca "$T/ca2.pem" -o "$T/out"
grep -qi "certificate" "$T/err" || fail "wrong CA accepted"
echo "ok"
