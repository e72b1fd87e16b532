#!/usr/bin/env python3
"""A stand-in controller for kiln's tests and demo (CloudStack itself cannot be
installed here).

It speaks the subset of CloudStack's HTTP API that kiln uses -- listZones,
listPods, listClusters, listHosts, addHost -- as CloudStack's developer guide
documents it, and verifies every request the way CloudStack's ApiServer does:
the parameters except "signature", sorted by name, each value URL-encoded as
java.net.URLEncoder does with "+" turned into "%20", joined with "&", the whole
string lower-cased, HMAC-SHA1 with the account's secret key, Base64. With
signatureversion=3 the "expires" parameter (yyyy-MM-ddTHH:mm:ssZ) must be
present and in the future. A failed check answers HTTP 401 with CloudStack's
error body {"<command>response": {"errorcode": 401, "errortext": "unable to
verify user credentials and/or request signature"}}; a missing or invalid
parameter answers 431, as CloudStack does.

It also takes kiln's webhook (POST /kiln/webhook), checking
X-Kiln-Signature: sha256=<hex HMAC-SHA256 of the body>, and drops duplicates
by X-Kiln-Delivery.

Everything is kept in SQLite: zones, pods, clusters, hosts, events, reports,
and a log of every request with its status and, when refused, why. Host
passwords are never stored.

Usage:
  controller.py --db FILE --config FILE [--port N] [--port-file FILE]
                [--fail-503 N] [--fail-401] [--hang] [--fault-webhook]
  controller.py --dump DB          print what was recorded, as JSON

Fault modes act on the CloudStack API (and on the webhook with
--fault-webhook). They can also be changed while it runs: POST /kiln/admin
with {"fail_503": N, "fail_401": bool, "hang": bool, "fault_webhook": bool}. GET /kiln/dump returns the
same JSON as --dump. Listens on 127.0.0.1 only; --port 0 picks a free port,
which is printed as "PORT=N" and written to --port-file.

Config (JSON): {"api_key": "...", "secret_key": "...", "hmac_key": "...",
  "zones": [{"name": "lab", "pods": [{"name": "p1", "clusters": ["c1"]}]}]}
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AUTH_ERROR = "unable to verify user credentials and/or request signature"
MAX_BODY = 4 * 1024 * 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS zones (id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS pods (id TEXT PRIMARY KEY, name TEXT NOT NULL, zone_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clusters (id TEXT PRIMARY KEY, name TEXT NOT NULL, pod_id TEXT NOT NULL,
                                     zone_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (id TEXT PRIMARY KEY, name TEXT, ipaddress TEXT NOT NULL, url TEXT,
                                  username TEXT, password_given INTEGER, hypervisor TEXT, state TEXT,
                                  zone_id TEXT, pod_id TEXT, cluster_id TEXT, created TEXT);
CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, delivery TEXT UNIQUE,
                                   type TEXT, run_id TEXT, node_id TEXT, body TEXT, received TEXT);
CREATE TABLE IF NOT EXISTS reports (node_id TEXT, run_id TEXT, body TEXT, received TEXT,
                                    PRIMARY KEY (node_id, run_id));
CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT, method TEXT,
                                     path TEXT, command TEXT, status INTEGER, reason TEXT);
"""


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def java_urlencode(value):
    """java.net.URLEncoder.encode(value, "UTF-8").replace("+", "%20")."""
    out = []
    for b in value.encode("utf-8"):
        c = chr(b)
        if (c.isascii() and c.isalnum()) or c in ".-*_":
            out.append(c)
        elif c == " ":
            out.append("%20")
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def cloudstack_signature(params, secret_key):
    """params: name -> value, without "signature". Sorted by name as Java sorts strings."""
    unsigned = "&".join("%s=%s" % (k, java_urlencode(params[k])) for k in sorted(params))
    mac = hmac.new(secret_key.encode(), unsigned.lower().encode(), hashlib.sha1).digest()
    return base64.b64encode(mac).decode()


class State:
    def __init__(self, db_path, config):
        self.lock = threading.Lock()
        self.db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self.db.executescript(SCHEMA)
        self.config = config
        self.fail_503 = 0
        self.fail_401 = False
        self.hang = False
        self.fault_webhook = False
        self.stop = threading.Event()
        self.seed(config.get("zones", []))

    def seed(self, zones):
        with self.lock:
            for z in zones:
                row = self.db.execute("SELECT id FROM zones WHERE name=?", (z["name"],)).fetchone()
                zid = row[0] if row else str(uuid.uuid4())
                if not row:
                    self.db.execute("INSERT INTO zones VALUES (?,?)", (zid, z["name"]))
                for p in z.get("pods", []):
                    row = self.db.execute("SELECT id FROM pods WHERE name=? AND zone_id=?",
                                          (p["name"], zid)).fetchone()
                    pid = row[0] if row else str(uuid.uuid4())
                    if not row:
                        self.db.execute("INSERT INTO pods VALUES (?,?,?)", (pid, p["name"], zid))
                    for c in p.get("clusters", []):
                        if not self.db.execute("SELECT 1 FROM clusters WHERE name=? AND pod_id=?",
                                               (c, pid)).fetchone():
                            self.db.execute("INSERT INTO clusters VALUES (?,?,?,?)",
                                            (str(uuid.uuid4()), c, pid, zid))

    def log_request(self, method, path, command, status, reason):
        with self.lock:
            self.db.execute("INSERT INTO requests (time, method, path, command, status, reason) "
                            "VALUES (?,?,?,?,?,?)", (now_iso(), method, path, command, status, reason))

    def query(self, sql, args=()):
        with self.lock:
            cur = self.db.execute(sql, args)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def execute(self, sql, args=()):
        with self.lock:
            return self.db.execute(sql, args).rowcount


def dump(db):
    def rows(sql):
        cur = db.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    out = {
        "zones": rows("SELECT * FROM zones ORDER BY name"),
        "pods": rows("SELECT * FROM pods ORDER BY name"),
        "clusters": rows("SELECT * FROM clusters ORDER BY name"),
        "hosts": rows("SELECT * FROM hosts ORDER BY created"),
        "events": rows("SELECT * FROM events ORDER BY id"),
        "reports": rows("SELECT * FROM reports ORDER BY received"),
        "requests": rows("SELECT * FROM requests ORDER BY id"),
    }
    for key in ("events", "reports"):
        for r in out[key]:
            try:
                r["body"] = json.loads(r["body"])
            except (TypeError, ValueError):
                pass
    return out


class CloudStackError(Exception):
    def __init__(self, status, text):
        super().__init__(text)
        self.status = status
        self.text = text


class Handler(BaseHTTPRequestHandler):
    server_version = "kiln-controller"
    protocol_version = "HTTP/1.1"

    @property
    def state(self):
        return self.server.state

    def log_message(self, fmt, *args):
        # Never the query string: it may carry signatures (or, from other clients, passwords).
        sys.stderr.write("controller: %s %s\n" % (self.command, self.path.split("?")[0]))

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise CloudStackError(431, "request body too large")
        return self.rfile.read(n) if n else b""

    def fault(self, path, command):
        """Returns True when a fault mode answered the request."""
        st = self.state
        if st.hang:
            st.log_request(self.command, path, command, 0, "hang: never answered")
            st.stop.wait(3600)
            self.close_connection = True
            return True
        with st.lock:
            fail = st.fail_503 > 0
            if fail:
                st.fail_503 -= 1
        if fail:
            st.log_request(self.command, path, command, 503, "fault: 503")
            self.send_json(503, {"error": "service unavailable (fault mode)"})
            return True
        if st.fail_401:
            st.log_request(self.command, path, command, 401, "fault: 401")
            name = (command or "error").lower() + "response"
            self.send_json(401, {name: {"uuidList": [], "errorcode": 401, "errortext": AUTH_ERROR}})
            return True
        return False

    def do_GET(self):
        self.dispatch(b"")

    def do_POST(self):
        try:
            body = self.read_body()
        except CloudStackError as e:
            self.send_json(e.status, {"error": e.text})
            return
        self.dispatch(body)

    def dispatch(self, body):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/kiln/dump":
            with self.state.lock:
                self.send_json(200, dump(self.state.db))
            return
        if url.path == "/kiln/admin" and self.command == "POST":
            req = json.loads(body or b"{}")
            with self.state.lock:
                self.state.fail_503 = int(req.get("fail_503", self.state.fail_503))
                self.state.fail_401 = bool(req.get("fail_401", self.state.fail_401))
                self.state.hang = bool(req.get("hang", self.state.hang))
                self.state.fault_webhook = bool(req.get("fault_webhook", self.state.fault_webhook))
            self.send_json(200, {"ok": True})
            return
        if url.path == "/client/api":
            self.api(url, body)
            return
        if url.path == "/kiln/webhook":
            self.webhook(body)
            return
        self.state.log_request(self.command, url.path, None, 404, "no such path")
        self.send_json(404, {"error": "no such path"})

    # --- CloudStack API -------------------------------------------------
    def api(self, url, body):
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        ctype = self.headers.get("Content-Type", "")
        if self.command == "POST" and ctype.startswith("application/x-www-form-urlencoded"):
            pairs += urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        params = {}
        for k, v in pairs:
            params.setdefault(k, v)     # the servlet's first value wins
        command = next((v for k, v in params.items() if k.lower() == "command"), None)
        name = (command or "error").lower() + "response"
        if self.fault(url.path, command):
            return
        try:
            reason = self.verify(params)
            if reason:
                self.state.log_request(self.command, url.path, command, 401, reason)
                raise CloudStackError(401, AUTH_ERROR)
            lower = {k.lower(): v for k, v in params.items()}
            handler = COMMANDS.get((command or "").lower())
            if not handler:
                self.state.log_request(self.command, url.path, command, 405, "unknown command")
                raise CloudStackError(405, "The given command does not exist or it is not available for user")
            result = handler(self.state, lower, command)
            self.state.log_request(self.command, url.path, command, 200, None)
            self.send_json(200, {name: result})
        except CloudStackError as e:
            if e.status not in (401, 405):
                self.state.log_request(self.command, url.path, command, e.status, e.text)
            self.send_json(e.status, {name: {"uuidList": [], "errorcode": e.status, "errortext": e.text}})

    def verify(self, params):
        """None if the request is authentic, else why not (recorded, never sent)."""
        cfg = self.state.config
        signature = api_key = version = expires = None
        unsigned = {}
        for k, v in params.items():
            if k.lower() == "signature":
                signature = v
                continue
            if k.lower() == "apikey":
                api_key = v
            elif k.lower() == "signatureversion":
                version = v
            elif k.lower() == "expires":
                expires = v
            unsigned[k] = v
        if not api_key or not signature:
            return "missing apikey or signature"
        if not hmac.compare_digest(api_key, cfg["api_key"]):
            return "unknown apikey"
        if version == "3":
            if not expires:
                return "signatureversion 3 without expires"
            try:
                ts = datetime.datetime.strptime(expires, "%Y-%m-%dT%H:%M:%S%z")
            except ValueError:
                return "incorrect date format for expires"
            if datetime.datetime.now(datetime.timezone.utc) > ts:
                return "request expired"
        computed = cloudstack_signature(unsigned, cfg["secret_key"])
        if not hmac.compare_digest(signature.replace(" ", "+"), computed):
            return "bad signature"
        return None

    # --- webhook ----------------------------------------------------------
    def webhook(self, body):
        st = self.state
        if st.fault_webhook and self.fault("/kiln/webhook", None):
            return
        key = st.config.get("hmac_key")
        sent = self.headers.get("X-Kiln-Signature", "")
        event = self.headers.get("X-Kiln-Event", "")
        if key:
            want = "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(sent, want):
                st.log_request("POST", "/kiln/webhook", event, 401, "bad webhook signature")
                self.send_json(401, {"error": "bad signature"})
                return
        try:
            obj = json.loads(body)
        except ValueError:
            st.log_request("POST", "/kiln/webhook", event, 400, "body is not JSON")
            self.send_json(400, {"error": "body is not JSON"})
            return
        run_id = self.headers.get("X-Kiln-Run-Id")
        node_id = self.headers.get("X-Kiln-Node-Id")
        delivery = self.headers.get("X-Kiln-Delivery") or str(uuid.uuid4())
        text = body.decode("utf-8", "replace")
        n = st.execute("INSERT OR IGNORE INTO events (delivery, type, run_id, node_id, body, received) "
                       "VALUES (?,?,?,?,?,?)", (delivery, event, run_id, node_id, text, now_iso()))
        if event == "report" and isinstance(obj, dict):
            st.execute("INSERT OR REPLACE INTO reports VALUES (?,?,?,?)", (node_id, run_id, text, now_iso()))
        st.log_request("POST", "/kiln/webhook", event, 200, None if n else "duplicate delivery")
        self.send_json(200, {"ok": True, "duplicate": n == 0})


# --- the commands ---------------------------------------------------------
def need(p, name, command):
    v = p.get(name)
    if v is None or v == "":
        raise CloudStackError(431, "Unable to execute API command %s due to missing parameter %s"
                              % (command.lower(), name))
    return v


def listing(key, items):
    return {"count": len(items), key: items} if items else {}


def list_zones(st, p, command):
    rows = st.query("SELECT * FROM zones ORDER BY name")
    items = [{"id": r["id"], "name": r["name"], "allocationstate": "Enabled", "networktype": "Advanced"}
             for r in rows if (not p.get("id") or r["id"] == p["id"]) and
             (not p.get("name") or r["name"] == p["name"])]
    return listing("zone", items)


def list_pods(st, p, command):
    rows = st.query("SELECT pods.*, zones.name AS zonename FROM pods JOIN zones ON zones.id = pods.zone_id "
                    "ORDER BY pods.name")
    items = [{"id": r["id"], "name": r["name"], "zoneid": r["zone_id"], "zonename": r["zonename"],
              "allocationstate": "Enabled"}
             for r in rows if (not p.get("zoneid") or r["zone_id"] == p["zoneid"]) and
             (not p.get("name") or r["name"] == p["name"]) and (not p.get("id") or r["id"] == p["id"])]
    return listing("pod", items)


def list_clusters(st, p, command):
    rows = st.query("SELECT * FROM clusters ORDER BY name")
    items = [{"id": r["id"], "name": r["name"], "podid": r["pod_id"], "zoneid": r["zone_id"],
              "hypervisortype": "KVM", "clustertype": "CloudManaged", "allocationstate": "Enabled"}
             for r in rows if (not p.get("zoneid") or r["zone_id"] == p["zoneid"]) and
             (not p.get("podid") or r["pod_id"] == p["podid"]) and
             (not p.get("name") or r["name"] == p["name"]) and (not p.get("id") or r["id"] == p["id"])]
    return listing("cluster", items)


def host_json(r):
    return {"id": r["id"], "name": r["name"], "ipaddress": r["ipaddress"], "state": r["state"],
            "type": "Routing", "hypervisor": r["hypervisor"], "zoneid": r["zone_id"], "podid": r["pod_id"],
            "clusterid": r["cluster_id"], "created": r["created"]}


def list_hosts(st, p, command):
    rows = st.query("SELECT * FROM hosts ORDER BY created")
    if p.get("type") and p["type"].lower() != "routing":
        rows = []
    items = [host_json(r) for r in rows
             if all(not p.get(k) or r[col] == p[k] for k, col in
                    (("zoneid", "zone_id"), ("podid", "pod_id"), ("clusterid", "cluster_id"),
                     ("id", "id"), ("name", "name")))]
    return listing("host", items)


def add_host(st, p, command):
    zoneid = need(p, "zoneid", command)
    url = need(p, "url", command)
    hypervisor = need(p, "hypervisor", command)
    podid = need(p, "podid", command)
    clusterid = need(p, "clusterid", command)
    username = need(p, "username", command)
    if hypervisor.lower() != "kvm":
        raise CloudStackError(431, "Unable to execute API command addhost due to invalid value. "
                              "Invalid parameter hypervisor value=%s" % hypervisor)
    if not st.query("SELECT 1 FROM zones WHERE id=?", (zoneid,)):
        raise CloudStackError(431, "Unable to execute API command addhost due to invalid value. "
                              "Invalid parameter zoneid value=%s due to incorrect long value format, "
                              "or entity does not exist or due to incorrect parameter annotation" % zoneid)
    if not st.query("SELECT 1 FROM pods WHERE id=? AND zone_id=?", (podid, zoneid)):
        raise CloudStackError(431, "Unable to execute API command addhost due to invalid value. "
                              "Invalid parameter podid value=%s" % podid)
    if not st.query("SELECT 1 FROM clusters WHERE id=? AND pod_id=?", (clusterid, podid)):
        raise CloudStackError(431, "Unable to execute API command addhost due to invalid value. "
                              "Invalid parameter clusterid value=%s" % clusterid)
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise CloudStackError(431, "url is not of the form http://<host address>: %s" % url)
    ip = u.hostname
    dup = st.query("SELECT id FROM hosts WHERE ipaddress=?", (ip,))
    if dup:
        raise CloudStackError(530, "Skipping host %s because it is already in the database for host id %s"
                              % (ip, dup[0]["id"]))
    hid = str(uuid.uuid4())
    st.execute("INSERT INTO hosts VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
               (hid, ip, ip, url, username, 1 if p.get("password") else 0, "KVM", "Up",
                zoneid, podid, clusterid, now_iso()))
    rows = st.query("SELECT * FROM hosts WHERE id=?", (hid,))
    return {"count": 1, "host": [host_json(rows[0])]}


COMMANDS = {
    "listzones": list_zones,
    "listpods": list_pods,
    "listclusters": list_clusters,
    "listhosts": list_hosts,
    "addhost": add_host,
}


def main():
    ap = argparse.ArgumentParser(description="kiln's stand-in controller (CloudStack API subset + webhook)")
    ap.add_argument("--dump", metavar="DB", help="print what DB recorded, as JSON, and exit")
    ap.add_argument("--db")
    ap.add_argument("--config")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--fail-503", type=int, default=0, metavar="N", help="answer the first N requests with 503")
    ap.add_argument("--fail-401", action="store_true", help="answer every request with 401")
    ap.add_argument("--hang", action="store_true", help="never answer")
    ap.add_argument("--fault-webhook", action="store_true",
                    help="the fault modes apply to the webhook too (default: the CloudStack API only)")
    a = ap.parse_args()

    if a.dump:
        if not os.path.exists(a.dump):
            sys.exit("controller: no database '%s'" % a.dump)
        json.dump(dump(sqlite3.connect(a.dump)), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    if not a.db or not a.config:
        ap.error("--db and --config are needed to serve")
    with open(a.config) as f:
        config = json.load(f)
    state = State(a.db, config)
    state.fail_503, state.fail_401, state.hang = a.fail_503, a.fail_401, a.hang
    state.fault_webhook = a.fault_webhook

    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.state = state
    port = server.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    print("PORT=%d" % port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        state.stop.set()


if __name__ == "__main__":
    main()
