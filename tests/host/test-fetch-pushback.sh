#!/bin/bash
# A server pushing back (docs/benchmarks.md "A rack at once"): kiln's fetcher
# waits at least a 503's or 429's Retry-After (delta-seconds and HTTP-date),
# keeps its connection over a 503 with a small body (no CURLOPT_FAILONERROR),
# gives up a connection whose error page is longer than 64 KiB but still
# retries, and bounds 503s by --retries (kiln fetch has no push-back budget).
set -euo pipefail
: "${KILN:?}" "${SRC:?}"
. "$SRC/tests/lib/http.sh"
test_tmpdir fetch-pushback

# PATH: /<answers>/name, answers a comma list for the requests in order, each
# 503:RA (RA: seconds, "date:N" for an HTTP-date N s ahead, "-" none),
# 429:RA, big (503 with a 1 MiB body) or ok.
cat >"$T/server.py" <<'PY'
import email.utils, http.server, sys, threading, time
count = {}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        answers = self.path.split("/")[1].split(",")
        with lock:
            i = count.get(self.path, 0)
            count[self.path] = i + 1
        a = answers[min(i, len(answers) - 1)]
        with open(sys.argv[2], "a") as f:
            f.write("%.3f %d %s %s\n" % (time.time(), self.client_address[1], self.path, a))
        if a == "ok":
            body, code, ra = b"hello\n", 200, None
        elif a == "big":
            body, code, ra = b"x" * (1024 * 1024), 503, None
        else:
            code, ra = a.split(":", 1)
            code, body = int(code), b"busy\n"
            if ra == "-":
                ra = None
            elif ra.startswith("date:"):
                ra = email.utils.formatdate(time.time() + int(ra[5:]), usegmt=True)
        self.send_response(code)
        if ra:
            self.send_header("Retry-After", ra)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
python3 "$T/server.py" "$T/port" "$T/log" &
cleanup_pid $!
for _ in $(seq 50); do [[ -s $T/port ]] && break; sleep 0.1; done
U="http://127.0.0.1:$(cat "$T/port")"
log_of() { grep " /$1/" "$T/log"; }
gap() {   # gap PATH I: seconds between request I-1 and I of PATH
  log_of "$1" | awk -v i="$2" 'NR == i - 1 { a = $1 } NR == i { printf "%.2f", $1 - a }'
}

# Retry-After in seconds: the retry comes no sooner, over the same connection
run_kiln 0 fetch "$U/503:3,ok/a" --retries 2 -o "$T/out"
[[ $(cat "$T/out") == hello ]] || fail "wrong body"
g=$(gap "503:3,ok" 2)
awk "BEGIN { exit !($g >= 3.0) }" || fail "retried after $g s, before Retry-After: 3"
[[ $(log_of "503:3,ok" | awk '{print $2}' | sort -u | wc -l) == 1 ]] || fail "the 503 cost a new connection: $(log_of "503:3,ok")"

# Retry-After as an HTTP-date, and a 429
run_kiln 0 fetch "$U/429:date:3,ok/b" --retries 2 -o "$T/out"
[[ $(log_of "429:date:3,ok" | awk '{print $2}' | sort -u | wc -l) == 1 ]] || fail "the 429 was not answered on its connection"
g=$(gap "429:date:3,ok" 2)
awk "BEGIN { exit !($g >= 2.0) }" || fail "retried after $g s, before the Retry-After date (3 s ahead, 1 s resolution)"

# without Retry-After: a delay from the spread window (at least 250 ms)
run_kiln 0 fetch "$U/503:-,ok/c" --retries 2 -o "$T/out"
g=$(gap "503:-,ok" 2)
awk "BEGIN { exit !($g >= 0.25) }" || fail "retried after $g s"

# a 1 MiB error page: the connection is given up, the 503 still retried
run_kiln 0 fetch "$U/big,ok/d" --retries 2 -o "$T/out"
[[ $(log_of "big,ok" | awk '{print $2}' | sort -u | wc -l) == 2 ]] || fail "a 1 MiB error page was read on one connection"

# 503 forever: --retries bounds it (kiln fetch has no push-back budget)
run_kiln 8 fetch "$U/503:1/e" --retries 1 -o "$T/out2"
expect_err "HTTP 503 (gave up after 2 attempts)"
[[ ! -e $T/out2 ]] || fail "-o FILE was created on failure"
echo "PASS: test-fetch-pushback"
