#!/usr/bin/env python3
"""A small fault-injecting HTTP proxy for kiln's host tests.

    faultproxy.py UPSTREAM_PORT PORTFILE LOGFILE ACTION...

Listens on 127.0.0.1 (a free port, written to PORTFILE), forwards each
request to 127.0.0.1:UPSTREAM_PORT with "Connection: close", and applies the
next ACTION to it (then "pass" once the list is used up):
  pass        forward unchanged
  cut:N       forward, but drop the connection after N bytes of the response
  status:C    answer with HTTP status C and an empty body, upstream untouched
  status:C:S  the same with "Retry-After: S" (a 503 without one is retried
              at push-back's slow pace, agent/net/backoff.h)
  norange     drop the Range header (the server then ignores the range)
  stall:N     send N bytes of the response, then go silent for 60 s
  crange:V    forward, with the response's Content-Range value replaced by V
              ("{first}" in V becomes the first byte the request asked for)
Each request is logged to LOGFILE as "METHOD PATH range=VALUE action=ACTION".
"""
import socket
import sys
import threading
import time

upstream = int(sys.argv[1])
portfile, logfile = sys.argv[2], sys.argv[3]
actions = list(sys.argv[4:])
lock = threading.Lock()


def next_action():
    with lock:
        return actions.pop(0) if actions else "pass"


def log(line):
    with lock:
        with open(logfile, "a") as f:
            f.write(line + "\n")


def handle(conn):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        req = lines[0].decode("latin-1")
        headers = [h for h in lines[1:] if not h.lower().startswith(b"connection:")]
        rng = [h.split(b":", 1)[1].strip().decode() for h in headers if h.lower().startswith(b"range:")]
        action = next_action()
        method, path = req.split(" ")[0:2]
        log("%s %s range=%s action=%s" % (method, path, rng[0] if rng else "-", action))
        if action.startswith("status:"):
            f = action.split(":")
            ra = b"Retry-After: %d\r\n" % int(f[2]) if len(f) > 2 else b""
            conn.sendall(b"HTTP/1.1 %d Injected\r\n%sContent-Length: 0\r\nConnection: close\r\n\r\n" % (int(f[1]), ra))
            return
        if action == "norange":
            headers = [h for h in headers if not h.lower().startswith(b"range:")]
        headers.append(b"Connection: close")
        up = socket.create_connection(("127.0.0.1", upstream))
        up.sendall(b"\r\n".join([lines[0]] + headers) + b"\r\n\r\n" + rest)
        limit = None
        stall = False
        if action.startswith("cut:"):
            limit = int(action.split(":")[1])
        elif action.startswith("stall:"):
            limit = int(action.split(":")[1])
            stall = True
        sent = 0
        pending = b""
        if action.startswith("crange:"):
            while b"\r\n\r\n" not in pending:
                chunk = up.recv(65536)
                if not chunk:
                    break
                pending += chunk
            first = rng[0].split("=", 1)[1].split("-", 1)[0] if rng else "0"
            value = action.split(":", 1)[1].replace("{first}", first).encode()
            rhead, sep, body = pending.partition(b"\r\n\r\n")
            rlines = [b"Content-Range: " + value if h.lower().startswith(b"content-range:") else h
                      for h in rhead.split(b"\r\n")]
            conn.sendall(b"\r\n".join(rlines) + sep + body)
        while True:
            chunk = up.recv(65536)
            if not chunk:
                break
            if limit is not None and sent + len(chunk) >= limit:
                conn.sendall(chunk[: limit - sent])
                if stall:
                    time.sleep(60)
                break
            conn.sendall(chunk)
            sent += len(chunk)
        up.close()
    except OSError:
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(256)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


main()
