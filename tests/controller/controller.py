#!/usr/bin/env python3
"""A stand-in controller for kiln's tests and demo (CloudStack itself cannot be
installed here).

It speaks the subset of CloudStack's HTTP API that kiln uses -- listZones,
listPods, listClusters, listHosts, addHost -- plus the few admin calls a test
needs (deleteHost, createRole, createRolePermission, listRoles, updateAccount,
listAccounts), as CloudStack's developer guide documents them, and verifies
every request the way CloudStack's ApiServer does:
the parameters except "signature", sorted by name, each value URL-encoded as
java.net.URLEncoder does with "+" turned into "%20", joined with "&", the whole
string lower-cased, HMAC-SHA1 with the account's secret key, Base64. With
signatureversion=3 the "expires" parameter (yyyy-MM-ddTHH:mm:ssZ) must be
present and in the future. A failed check answers HTTP 401 with CloudStack's
error body {"<command>response": {"errorcode": 401, "errortext": "unable to
verify user credentials and/or request signature"}}; a missing or invalid
parameter answers 431, as CloudStack does.

Accounts and dynamic roles, as CloudStack's DynamicRoleBasedAPIAccessChecker
does it: the config's api_key belongs to the registration account (default
"kiln") whose role (default "kiln-register", type Admin) has the rules
listZones, listPods, listClusters, listHosts, addHost: allow, then "*": deny;
admin_api_key is the root admin, who may call everything. Rules are checked in
order, the first whose pattern ("*" matches anything) fits the command decides;
with no fitting rule a role of type Admin may call every command (CloudStack
falls back to the API's own annotations), any other type only listZones. A
refused call answers 432 "The API [X] does not exist or is not available for
the account NAME." (UNSUPPORTED_ACTION_ERROR), as the DynamicRoleBasedAPIAccessChecker of
current CloudStack answers it.

addHost behaves as LibvirtServerDiscoverer: the host's address is the url's
host (an IPv6 address kept in Java's long form, as InetAddress gives it), its
guid the name-based UUID of that address; a second addHost for an address
already in the zone answers 530 "Skipping host A because G is already in the
database for resource G-LibvirtComputingResource with ID U". The host row is
made at once in state Connecting (so two concurrent addHosts for one address
give one host), then, when the config's "ssh" says so, the controller logs in
to the host over SSH (paramiko) as the LibvirtServerDiscoverer of CloudStack
4.18 and later does: first with the management server's own key pair
(CloudStack's "ssh.privatekey"; here an RSA key made on first use beside the
database, management_key (0600) and management_key.pub, also served by GET
/kiln/management-key), then, on the same connection, with addHost's password
when it has one. It runs "cloudstack-setup-agent -m MGMT -z ZONE -p POD -c
CLUSTER -g GUID -a -s ..." there, for a user other than root as "sudo
cloudstack-setup-agent ..." (CloudStack's exact command: no -n, and no
terminal, so sudo can only succeed where no password is asked), and only then
sets the host Up. The 530 texts are that discoverer's, inside
ResourceManagerImpl's "Could not add host at [URL] with zone [Z], pod [P] and
cluster [C] due to: [CAUSE].": the key refused and no password, CAUSE
"Authentication error with ssh private key"; the password refused too,
"Authentication error with host password"; the setup command failing,
"CloudStack Agent setup through command [CMD] with parameters [ARGS] failed.".
An address it cannot reach answers 530 "Unable to add the host: Cannot find
the server resources at URL". Either way the host row is removed again. The
logins table keeps each login: user, auth (publickey or password), result,
the command, its exit status and its stderr. listHosts pages as CloudStack does:
page and pagesize, at most 500 a page (more: 431), 500 when not given, and
"count" is the number of all hosts that match.

It also takes kiln's webhook (POST /kiln/webhook), checking
X-Kiln-Signature: sha256=<hex HMAC-SHA256 of the body>, and drops duplicates
by X-Kiln-Delivery. Enlisting nodes (kiln.enlist=, docs/register.md
"Enlist") POST their inventory to /kiln/enlist, signed the same way (under
config "enlist_key", else "hmac_key"); the body is kept byte for byte, the
latest per X-Kiln-Node-Id, and GET /kiln/enlisted/NODE_ID returns it (the
file `kiln plan --inventory` reads); GET /kiln/enlisted lists them.

Everything is kept in SQLite: zones, pods, clusters, hosts, events, reports,
and a log of every request with its status and, when refused, why. Host
passwords are never stored.

Usage:
  controller.py --db FILE --config FILE [--port N] [--port-file FILE]
                [--fail-503 N [--fail-status S] [--fail-errorcode C]
                 [--retry-after SEC]] [--fail-401] [--hang] [--fault-webhook]
                [--delay-ms MS] [--addhost-ms MS]
  controller.py --dump DB          print what was recorded, as JSON

Fault modes act on the CloudStack API (and on the webhook with
--fault-webhook). --delay-ms makes every API call take that long (before it
is looked at: race tests), --addhost-ms makes addHost take that much longer
while its host is Connecting. They can also be changed while it runs: POST
/kiln/admin with {"fail_503": N, "fail_command": "addHost" (only that command
fails), "fail_status": S (the failing answers' HTTP status, default 503),
"fail_errorcode": C (their body is then CloudStack's error JSON
{"<command>response": {"uuidList": [], "errorcode": C, "errortext": T}}, as
CloudStack answers API_LIMIT_EXCEED with 429; null: the plain body
{"error": ...} of a proxy), "fail_text": T, "retry_after": SEC (a
Retry-After header on them; null: none), "fail_401": bool, "hang": bool, "fault_webhook": bool, "delay_ms": MS,
"addhost_ms": MS, "ssh": {...}, "seed_hosts": {"zone": NAME, "addresses": [...]}}
(seed_hosts adds Up hosts directly, for paging tests). GET /kiln/dump returns
the same JSON as --dump. Listens on 127.0.0.1 only; --port 0 picks a free
port, which is printed as "PORT=N" and written to --port-file.

Config (JSON): {"api_key": "...", "secret_key": "...", "hmac_key": "...",
  "admin_api_key": "...", "admin_secret_key": "...",       (optional)
  "account": "kiln", "role": "kiln-register",               (optional)
  "roles": [{"name": ..., "type": "Admin", "rules": [[RULE, "allow"|"deny"], ...]}],
  "ssh": {"hosts": {"ADDRESS": PORT, ...}, "required": bool, "timeout": SEC},
  "management_address": "127.0.0.1",
  "zones": [{"name": "lab", "pods": [{"name": "p1", "clusters": ["c1"]}]}]}
"ssh" (optional): addHost logs in to 127.0.0.1:PORT for the addresses listed;
with "required" an address not listed cannot be reached; without "ssh" no
login is made (the initramfs registrations of the rig).
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AUTH_ERROR = "unable to verify user credentials and/or request signature"
# The fault mode's errortext per errorcode when the test gives none: 429 is
# what CloudStack's API rate limit (plugins/api/rate-limit,
# ApiRateLimitServiceImpl) says, as recalled, not checked against its source
# (kiln decides on the HTTP status and errorcode, never on this text).
FAULT_TEXTS = {
    429: "The given user has reached his/her account api limit, please retry after 1000 ms.",
    534: "Resource unavailable",
}
MAX_BODY = 4 * 1024 * 1024
MAX_PAGE_SIZE = 500             # CloudStack's default.page.size
ROOT_ADMIN_ROLE = "Root Admin"
KILN_RULES = [["listZones", "allow"], ["listPods", "allow"], ["listClusters", "allow"],
              ["listHosts", "allow"], ["addHost", "allow"], ["*", "deny"]]
TRANSIENT_STATES = ("Creating", "Connecting")

SCHEMA = """
CREATE TABLE IF NOT EXISTS zones (id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS pods (id TEXT PRIMARY KEY, name TEXT NOT NULL, zone_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clusters (id TEXT PRIMARY KEY, name TEXT NOT NULL, pod_id TEXT NOT NULL,
                                     zone_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, name TEXT,
                                  ipaddress TEXT NOT NULL, url TEXT, username TEXT, password_given INTEGER,
                                  hypervisor TEXT, state TEXT, zone_id TEXT, pod_id TEXT, cluster_id TEXT,
                                  guid TEXT, created TEXT);
CREATE TABLE IF NOT EXISTS logins (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT, address TEXT, port INTEGER,
                                   username TEXT, auth TEXT, result TEXT, command TEXT, exit_status INTEGER,
                                   stderr TEXT);
CREATE TABLE IF NOT EXISTS roles (id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, type TEXT NOT NULL,
                                  description TEXT);
CREATE TABLE IF NOT EXISTS role_permissions (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,
                                             role_id TEXT NOT NULL, rule TEXT NOT NULL,
                                             permission TEXT NOT NULL, description TEXT);
CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, role_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, delivery TEXT UNIQUE,
                                   type TEXT, run_id TEXT, node_id TEXT, body TEXT, received TEXT);
CREATE TABLE IF NOT EXISTS reports (node_id TEXT, run_id TEXT, body TEXT, received TEXT,
                                    PRIMARY KEY (node_id, run_id));
CREATE TABLE IF NOT EXISTS enlisted (node_id TEXT PRIMARY KEY, run_id TEXT, delivery TEXT, body TEXT,
                                     received TEXT, posts INTEGER);
CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT, method TEXT,
                                     path TEXT, command TEXT, status INTEGER, reason TEXT, account TEXT,
                                     detail TEXT);
"""


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def java_host_address(host):
    """The address as Java's InetAddress.getHostAddress() writes it: IPv4 dotted,
    IPv6 as eight groups without leading zeros and without "::" (Java never
    shortens). A name is resolved (only /etc/hosts answers here); None if not."""
    try:
        a = ipaddress.ip_address(host)
    except ValueError:
        try:
            a = ipaddress.ip_address(socket.getaddrinfo(host, None)[0][4][0])
        except (OSError, ValueError, IndexError):
            return None
    if a.version == 6:
        return ":".join("%x" % int(g, 16) for g in a.exploded.split(":"))
    return str(a)


def host_guid(address):
    """UUID.nameUUIDFromBytes(address.getBytes()): MD5, version 3, no namespace."""
    d = bytearray(hashlib.md5(address.encode()).digest())
    d[6] = (d[6] & 0x0F) | 0x30
    d[8] = (d[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(d)))


def rule_matches(rule, command):
    """CloudStack's Rule: an API name, or a pattern where "*" matches anything."""
    return re.fullmatch(".*".join(re.escape(part) for part in rule.split("*")), command) is not None


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
        self.key_path = os.path.join(os.path.dirname(os.path.abspath(db_path)), "management_key")
        self.key_lock = threading.Lock()
        self.key = None
        self.fail_503 = 0
        self.fail_command = None
        self.fail_status = 503
        self.fail_errorcode = None      # None: the plain body {"error": ...}; else CloudStack's error JSON
        self.fail_text = None
        self.retry_after = None
        self.fail_401 = False
        self.hang = False
        self.fault_webhook = False
        self.delay_ms = int(config.get("delay_ms", 0))
        self.addhost_ms = int(config.get("addhost_ms", 0))
        self.ssh = {}
        self.set_ssh(config.get("ssh"))
        self.stop = threading.Event()
        self.seed(config.get("zones", []))
        self.keys = {}          # api key -> (account name, secret key); kept in memory only
        self.seed_accounts(config)

    def management_key(self):
        """The management server's key pair (paramiko.RSAKey): read from
        key_path, or made there on first use (RSA 2048, as CloudStack makes
        its own). The private key is 0600 from its first byte and never
        leaves that file but for the SSH login."""
        with self.key_lock:
            if self.key is None:
                import paramiko
                if not os.path.exists(self.key_path):
                    key = paramiko.RSAKey.generate(2048)
                    tmp = "%s.tmp.%d" % (self.key_path, os.getpid())
                    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), "w") as f:
                        key.write_private_key(f)
                    with open(tmp + ".pub", "w") as f:
                        f.write("%s %s cloud@kiln-stand-in\n" % (key.get_name(), key.get_base64()))
                    os.rename(tmp + ".pub", self.key_path + ".pub")
                    os.rename(tmp, self.key_path)
                self.key = paramiko.RSAKey.from_private_key_file(self.key_path)
            return self.key

    def set_ssh(self, ssh):
        ssh = dict(ssh or {})
        hosts = {}
        for addr, port in (ssh.get("hosts") or {}).items():
            hosts[java_host_address(addr) or addr] = int(port)
        ssh["hosts"] = hosts
        self.ssh = ssh if (hosts or ssh.get("required")) else {}

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

    def role_id(self, name, type_="Admin", rules=None, description=None):
        """The id of role name, made (with its rules) if it is not there."""
        row = self.db.execute("SELECT id FROM roles WHERE name=?", (name,)).fetchone()
        if row:
            return row[0]
        rid = str(uuid.uuid4())
        self.db.execute("INSERT INTO roles VALUES (?,?,?,?)", (rid, name, type_, description))
        for rule, perm in rules or []:
            self.db.execute("INSERT INTO role_permissions (id, role_id, rule, permission) VALUES (?,?,?,?)",
                            (str(uuid.uuid4()), rid, rule, perm))
        return rid

    def seed_accounts(self, cfg):
        with self.lock:
            self.role_id(ROOT_ADMIN_ROLE, "Admin", description="all APIs")
            for r in cfg.get("roles", []):
                self.role_id(r["name"], r.get("type", "Admin"), r.get("rules", []), r.get("description"))
            role = cfg.get("role", "kiln-register")
            rid = self.role_id(role, "Admin", KILN_RULES if role == "kiln-register" else [],
                               "kiln's registration: the five calls it makes")
            accounts = [(cfg.get("account", "kiln"), cfg["api_key"], cfg["secret_key"], rid)]
            if cfg.get("admin_api_key"):
                accounts.append(("admin", cfg["admin_api_key"], cfg["admin_secret_key"],
                                 self.role_id(ROOT_ADMIN_ROLE)))
            for name, key, secret, rid in accounts:
                if not self.db.execute("SELECT 1 FROM accounts WHERE name=?", (name,)).fetchone():
                    self.db.execute("INSERT INTO accounts VALUES (?,?,?)", (str(uuid.uuid4()), name, rid))
                self.keys[key] = (name, secret)

    def allowed(self, account, command):
        """None when the account's role allows command, else the role's name."""
        with self.lock:
            role = self.db.execute("SELECT roles.id, roles.name, roles.type FROM accounts JOIN roles "
                                   "ON roles.id = accounts.role_id WHERE accounts.name=?", (account,)).fetchone()
            if not role:
                return "(no role)"
            rid, name, type_ = role
            if name == ROOT_ADMIN_ROLE:
                return None
            rules = self.db.execute("SELECT rule, permission FROM role_permissions WHERE role_id=? ORDER BY seq",
                                    (rid,)).fetchall()
        for rule, perm in rules:
            if rule_matches(rule, command):
                return None if perm.lower() == "allow" else name
        if type_.lower() == "admin" or command == "listZones":
            return None
        return name

    def log_request(self, method, path, command, status, reason, account=None, detail=None):
        with self.lock:
            self.db.execute("INSERT INTO requests (time, method, path, command, status, reason, account, detail) "
                            "VALUES (?,?,?,?,?,?,?,?)",
                            (now_iso(), method, path, command, status, reason, account, detail))

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
        "hosts": rows("SELECT * FROM hosts ORDER BY seq"),
        "logins": rows("SELECT * FROM logins ORDER BY id"),
        "roles": rows("SELECT * FROM roles ORDER BY name"),
        "role_permissions": rows("SELECT * FROM role_permissions ORDER BY seq"),
        "accounts": rows("SELECT * FROM accounts ORDER BY name"),
        "events": rows("SELECT * FROM events ORDER BY id"),
        "reports": rows("SELECT * FROM reports ORDER BY received"),
        "requests": rows("SELECT * FROM requests ORDER BY id"),
    }
    try:
        out["enlisted"] = rows("SELECT * FROM enlisted ORDER BY received")
    except sqlite3.OperationalError:
        out["enlisted"] = []      # a database from before enlisting existed
    for key in ("events", "reports"):
        for r in out[key]:
            try:
                r["body"] = json.loads(r["body"])
            except (TypeError, ValueError):
                pass
    return out


class CloudStackError(Exception):
    def __init__(self, status, text, cserrorcode=None):
        super().__init__(text)
        self.status = status
        self.text = text
        self.cserrorcode = cserrorcode


class Handler(BaseHTTPRequestHandler):
    server_version = "kiln-controller"
    protocol_version = "HTTP/1.1"

    @property
    def state(self):
        return self.server.state

    def log_message(self, fmt, *args):
        # Never the query string: it may carry signatures (or, from other clients, passwords).
        sys.stderr.write("controller: %s %s\n" % (self.command, self.path.split("?")[0]))

    def send_json(self, status, obj, headers=None):
        body = json.dumps(obj).encode()
        try:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True    # the client gave up (its timeout); the work is done all the same

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
            fail = st.fail_503 > 0 and (not st.fail_command or st.fail_command == command)
            if fail:
                st.fail_503 -= 1
            status, code, text, ra = st.fail_status, st.fail_errorcode, st.fail_text, st.retry_after
        if fail:
            st.log_request(self.command, path, command, status, "fault: %d" % status)
            headers = {"Retry-After": str(ra)} if ra is not None else {}
            if code is None:
                self.send_json(status, {"error": "service unavailable (fault mode)"}, headers)
            else:
                name = (command or "error").lower() + "response"
                self.send_json(status, {name: {"uuidList": [], "errorcode": code,
                                               "errortext": text if text is not None else FAULT_TEXTS.get(code, "busy")}},
                               headers)
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
        if url.path == "/kiln/enlist" and self.command == "POST":
            self.enlist(body)
            return
        if url.path.startswith("/kiln/enlisted") and self.command == "GET":
            self.enlisted(url.path[len("/kiln/enlisted"):].lstrip("/"))
            return
        if url.path == "/kiln/management-key" and self.command == "GET":
            self.state.management_key()
            with open(self.state.key_path + ".pub", "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if url.path == "/kiln/dump":
            with self.state.lock:
                self.send_json(200, dump(self.state.db))
            return
        if url.path == "/kiln/admin" and self.command == "POST":
            req = json.loads(body or b"{}")
            st = self.state
            with st.lock:
                st.fail_503 = int(req.get("fail_503", st.fail_503))
                st.fail_command = req.get("fail_command", st.fail_command)
                st.fail_status = int(req.get("fail_status", st.fail_status))
                st.fail_errorcode = req.get("fail_errorcode", st.fail_errorcode)
                st.fail_text = req.get("fail_text", st.fail_text)
                st.retry_after = req.get("retry_after", st.retry_after)
                st.fail_401 = bool(req.get("fail_401", st.fail_401))
                st.hang = bool(req.get("hang", st.hang))
                st.fault_webhook = bool(req.get("fault_webhook", st.fault_webhook))
                st.delay_ms = int(req.get("delay_ms", st.delay_ms))
                st.addhost_ms = int(req.get("addhost_ms", st.addhost_ms))
                if "ssh" in req:
                    st.set_ssh(req["ssh"])
            if "seed_hosts" in req:
                seed_hosts(st, req["seed_hosts"])
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
        if self.state.delay_ms:
            time.sleep(self.state.delay_ms / 1000)
        if self.fault(url.path, command):
            return
        account = None
        lower = {k.lower(): v for k, v in params.items()}
        try:
            account, reason = self.verify(params)
            if reason:
                self.state.log_request(self.command, url.path, command, 401, reason)
                raise CloudStackError(401, AUTH_ERROR)
            handler = COMMANDS.get((command or "").lower())
            if not handler:
                self.state.log_request(self.command, url.path, command, 405, "unknown command", account)
                raise CloudStackError(405, "The given command does not exist or it is not available for user")
            canonical = COMMAND_NAMES[command.lower()]
            role = self.state.allowed(account, canonical)
            if role:
                self.state.log_request(self.command, url.path, command, 432,
                                       "role %s does not allow %s" % (role, canonical), account)
                raise CloudStackError(432, "The API [%s] does not exist or is not available for the account %s."
                                      % (canonical, account), 9999)
            result = handler(self.state, lower, command)
            self.state.log_request(self.command, url.path, command, 200, None, account, request_detail(lower))
            self.send_json(200, {name: result})
        except CloudStackError as e:
            if e.status not in (401, 405, 432):
                self.state.log_request(self.command, url.path, command, e.status, e.text, account,
                                       request_detail(lower))
            err = {"uuidList": [], "errorcode": e.status, "errortext": e.text}
            if e.cserrorcode:
                err["cserrorcode"] = e.cserrorcode
            self.send_json(e.status, {name: err})

    def verify(self, params):
        """(account, None) if the request is authentic, else (None, why not): recorded, never sent."""
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
            return None, "missing apikey or signature"
        found = next((v for k, v in self.state.keys.items() if hmac.compare_digest(api_key, k)), None)
        if not found:
            return None, "unknown apikey"
        account, secret = found
        if version == "3":
            if not expires:
                return None, "signatureversion 3 without expires"
            try:
                ts = datetime.datetime.strptime(expires, "%Y-%m-%dT%H:%M:%S%z")
            except ValueError:
                return None, "incorrect date format for expires"
            if datetime.datetime.now(datetime.timezone.utc) > ts:
                return None, "request expired"
        computed = cloudstack_signature(unsigned, secret)
        if not hmac.compare_digest(signature.replace(" ", "+"), computed):
            return None, "bad signature"
        return account, None

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


    # --- enlist (kiln.enlist=) ----------------------------------------------
    def enlist(self, body):
        st = self.state
        if st.fault_webhook and self.fault("/kiln/enlist", None):
            return
        key = st.config.get("enlist_key") or st.config.get("hmac_key")
        want = "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(self.headers.get("X-Kiln-Signature", ""), want):
            st.log_request("POST", "/kiln/enlist", "enlist", 401, "bad enlist signature")
            self.send_json(401, {"error": "bad signature"})
            return
        node_id = self.headers.get("X-Kiln-Node-Id")
        try:
            inv = json.loads(body)
            ok = isinstance(inv, dict) and isinstance(inv.get("disks"), list) and node_id
        except ValueError:
            ok = False
        if not ok:
            st.log_request("POST", "/kiln/enlist", "enlist", 400, "not an inventory with a node id")
            self.send_json(400, {"error": "not an inventory"})
            return
        run_id = self.headers.get("X-Kiln-Run-Id")
        delivery = self.headers.get("X-Kiln-Delivery")
        st.execute("INSERT INTO enlisted VALUES (?,?,?,?,?,1) ON CONFLICT(node_id) DO UPDATE SET "
                   "run_id=excluded.run_id, delivery=excluded.delivery, body=excluded.body, "
                   "received=excluded.received, posts=posts+1",
                   (node_id, run_id, delivery, body.decode("utf-8", "replace"), now_iso()))
        st.log_request("POST", "/kiln/enlist", "enlist", 200, None)
        self.send_json(200, {"ok": True, "node_id": node_id})

    def enlisted(self, node_id):
        st = self.state
        if not node_id:
            rows = st.query("SELECT node_id, received, posts FROM enlisted ORDER BY received")
            self.send_json(200, rows)
            return
        rows = st.query("SELECT body FROM enlisted WHERE node_id = ?", (urllib.parse.unquote(node_id),))
        if not rows:
            self.send_json(404, {"error": "not enlisted"})
            return
        data = rows[0]["body"].encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# --- the commands ---------------------------------------------------------
def request_detail(p):
    """What the request log keeps of the parameters: never a password or a key."""
    keep = ("page", "pagesize", "zoneid", "url", "id", "name", "rule", "permission", "roleid", "account")
    return " ".join("%s=%s" % (k, p[k]) for k in keep if p.get(k)) or None


def need(p, name, command):
    v = p.get(name)
    if v is None or v == "":
        raise CloudStackError(431, "Unable to execute API command %s due to missing parameter %s"
                              % (command.lower(), name))
    return v


def invalid(command, name, value):
    return CloudStackError(431, "Unable to execute API command %s due to invalid value. Invalid parameter %s "
                           "value=%s due to incorrect long value format, or entity does not exist or due to "
                           "incorrect parameter annotation for the field in api cmd class."
                           % (command.lower(), name, value))


def listing(key, items):
    return {"count": len(items), key: items} if items else {}


def paged(command, p, key, items):
    """BaseListCmd: pagesize at most default.page.size (500), which is also what
    a request without pagesize gets; page counts from 1; count is all that matched."""
    size, page = MAX_PAGE_SIZE, 1
    if p.get("pagesize"):
        try:
            size = int(p["pagesize"])
        except ValueError:
            raise invalid(command, "pagesize", p["pagesize"])
        if size > MAX_PAGE_SIZE:
            raise CloudStackError(431, "Page size can't exceed max allowed page size value: %d" % MAX_PAGE_SIZE)
        if size < 1:
            raise invalid(command, "pagesize", p["pagesize"])
    if p.get("page"):
        try:
            page = int(p["page"])
        except ValueError:
            raise invalid(command, "page", p["page"])
        page = max(page, 1)
    if not items:
        return {}
    part = items[(page - 1) * size: page * size]
    return {"count": len(items), key: part} if part else {"count": len(items)}


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
    rows = st.query("SELECT * FROM hosts ORDER BY seq")
    if p.get("type") and p["type"].lower() != "routing":
        rows = []
    items = [host_json(r) for r in rows
             if all(not p.get(k) or r[col] == p[k] for k, col in
                    (("zoneid", "zone_id"), ("podid", "pod_id"), ("clusterid", "cluster_id"),
                     ("id", "id"), ("name", "name"), ("state", "state")))]
    return paged(command, p, "host", items)


def insert_host(st, address, url, username, password_given, state, zoneid, podid, clusterid):
    hid = str(uuid.uuid4())
    st.db.execute("INSERT INTO hosts (id, name, ipaddress, url, username, password_given, hypervisor, state, "
                  "zone_id, pod_id, cluster_id, guid, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (hid, address, address, url, username, password_given, "KVM", state, zoneid, podid, clusterid,
                   host_guid(address) + "-LibvirtComputingResource", now_iso()))
    return hid


def seed_hosts(st, req):
    """Up hosts put straight into the database (paging tests): {"zone": NAME, "addresses": [...]}."""
    with st.lock:
        z = st.db.execute("SELECT id FROM zones WHERE name=?", (req.get("zone", "lab"),)).fetchone()
        c = st.db.execute("SELECT id, pod_id FROM clusters WHERE zone_id=? ORDER BY name", (z[0],)).fetchone()
        st.db.execute("BEGIN")
        for a in req.get("addresses", []):
            a = java_host_address(a)
            insert_host(st, a, "http://" + a, "root", 1, "Up", z[0], c[1], c[0])
        st.db.execute("COMMIT")


def ssh_setup_agent(st, address, username, password, command):
    """Log in as LibvirtServerDiscoverer does (the management server's key,
    then the password if there is one, on one connection) and run the agent
    setup. Returns None when the host took it, else the cause: "key" (the key
    refused, no password), "password" (both refused), "setup" (the command
    failed) or "unreachable"."""
    port = st.ssh["hosts"].get(address)
    if port is None:
        st.execute("INSERT INTO logins (time, address, port, username, result) VALUES (?,?,?,?,?)",
                   (now_iso(), address, None, username, "unreachable: no SSH mapping for this address"))
        return "unreachable"
    import paramiko     # only tests that log in need it (tests/deps.sh installs python3-paramiko)
    timeout = float(st.ssh.get("timeout", 10))
    key = st.management_key()
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())   # CloudStack checks no host key either
    auth, result, status, err = None, None, None, None
    try:
        try:
            client.connect("127.0.0.1", port=port, username=username, pkey=key, timeout=timeout,
                           auth_timeout=timeout, banner_timeout=timeout, look_for_keys=False, allow_agent=False)
            auth = "publickey"
        except paramiko.AuthenticationException:
            if not password:
                raise
            # "Failed to authenticate with ssh key, retrying with password": the same connection
            client.get_transport().auth_password(username, password)
            auth = "password"
        _, out, errs = client.exec_command(command, timeout=timeout)
        status = out.channel.recv_exit_status()
        err = errs.read(4096).decode("utf-8", "replace")
        result = "ok" if status == 0 else "setup command failed"
    except paramiko.AuthenticationException:
        result = "authentication failed"
    except (OSError, paramiko.SSHException) as e:
        result = "unreachable: %s" % type(e).__name__
    finally:
        client.close()
    st.execute("INSERT INTO logins (time, address, port, username, auth, result, command, exit_status, stderr) "
               "VALUES (?,?,?,?,?,?,?,?,?)", (now_iso(), address, port, username, auth, result, command, status, err))
    if result == "ok":
        return None
    if result == "authentication failed":
        return "password" if password else "key"
    return "setup" if result == "setup command failed" else "unreachable"


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
        raise invalid(command, "zoneid", zoneid)
    if not st.query("SELECT 1 FROM pods WHERE id=? AND zone_id=?", (podid, zoneid)):
        raise invalid(command, "podid", podid)
    if not st.query("SELECT 1 FROM clusters WHERE id=? AND pod_id=?", (clusterid, podid)):
        raise invalid(command, "clusterid", clusterid)
    not_found = CloudStackError(530, "Unable to add the host: Cannot find the server resources at %s" % url, 4250)
    try:
        u = urllib.parse.urlsplit(url)
        host = u.hostname
    except ValueError:
        raise CloudStackError(431, "%s is not a valid uri" % url)
    if u.scheme != "http" or not host:
        raise not_found     # "urlString is not http so we're not taking care of the discovery"
    address = java_host_address(host)
    if not address:
        raise not_found     # UnknownHostException inside find()
    guid = host_guid(address)
    # Check and reserve at once: two concurrent addHosts for one address give one host.
    with st.lock:
        for r in st.db.execute("SELECT id, guid FROM hosts WHERE zone_id=?", (zoneid,)).fetchall():
            if r[1].lower().startswith(guid):
                raise CloudStackError(530, "Skipping host %s because %s is already in the database for resource "
                                      "%s with ID %s" % (address, guid, r[1], r[0]), 4250)
        # password_given: the parameter is there at all (an empty one counts: CloudStack would
        # take it as none, but a client that means "no password" should not send it)
        hid = insert_host(st, address, url, username, 1 if "password" in p else 0, "Connecting",
                          zoneid, podid, clusterid)
    try:
        if st.ssh:
            mgmt = st.config.get("management_address", "127.0.0.1")
            setup = "cloudstack-setup-agent " if username == "root" else "sudo cloudstack-setup-agent "
            args = (" -m %s -z %s -p %s -c %s -g %s -a -s  --pubNic=cloudbr0 --prvNic=cloudbr0 "
                    "--guestNic=cloudbr0 --hypervisor=kvm" % (mgmt, zoneid, podid, clusterid, guid))
            why = ssh_setup_agent(st, address, username, p.get("password"), setup + args)
            cause = {"key": "Authentication error with ssh private key",
                     "password": "Authentication error with host password",
                     "setup": "CloudStack Agent setup through command [%s] with parameters [%s] failed."
                              % (setup, args)}.get(why)
            if cause:
                raise CloudStackError(530, "Could not add host at [%s] with zone [%s], pod [%s] and cluster [%s] "
                                      "due to: [%s]." % (url, zoneid, podid, clusterid, cause), 4250)
            if why:
                raise not_found
        if st.addhost_ms:
            time.sleep(st.addhost_ms / 1000)
    except BaseException:
        st.execute("DELETE FROM hosts WHERE id=?", (hid,))
        raise
    st.execute("UPDATE hosts SET state='Up' WHERE id=?", (hid,))
    rows = st.query("SELECT * FROM hosts WHERE id=?", (hid,))
    return {"count": 1, "host": [host_json(rows[0])]}


def delete_host(st, p, command):
    hid = need(p, "id", command)
    if not st.execute("DELETE FROM hosts WHERE id=?", (hid,)):
        raise invalid(command, "id", hid)
    return {"success": True}


def role_json(r):
    return {"id": r["id"], "name": r["name"], "type": r["type"], "description": r["description"]}


def create_role(st, p, command):
    name = need(p, "name", command)
    type_ = need(p, "type", command)
    if type_ not in ("Admin", "ResourceAdmin", "DomainAdmin", "User"):
        raise CloudStackError(431, "Invalid role type provided")
    if st.query("SELECT 1 FROM roles WHERE name=?", (name,)):
        raise CloudStackError(431, "Role with name %s already exists" % name)
    with st.lock:
        rid = st.role_id(name, type_, [], p.get("description"))
    return {"role": role_json(st.query("SELECT * FROM roles WHERE id=?", (rid,))[0])}


def create_role_permission(st, p, command):
    rid = need(p, "roleid", command)
    rule = need(p, "rule", command)
    perm = need(p, "permission", command).lower()
    if not st.query("SELECT 1 FROM roles WHERE id=?", (rid,)):
        raise invalid(command, "roleid", rid)
    if perm not in ("allow", "deny"):
        raise CloudStackError(431, "Values for permission parameter should be: allow or deny")
    if not re.fullmatch(r"[A-Za-z0-9*]+", rule):
        raise CloudStackError(431, "Only API names and wildcards are allowed, invalid rule provided: %s" % rule)
    pid = str(uuid.uuid4())
    st.execute("INSERT INTO role_permissions (id, role_id, rule, permission, description) VALUES (?,?,?,?,?)",
               (pid, rid, rule, perm, p.get("description")))
    return {"rolepermission": {"id": pid, "roleid": rid, "rule": rule, "permission": perm,
                               "description": p.get("description")}}


def list_roles(st, p, command):
    rows = st.query("SELECT * FROM roles ORDER BY name")
    items = [role_json(r) for r in rows if (not p.get("name") or r["name"] == p["name"]) and
             (not p.get("id") or r["id"] == p["id"])]
    return listing("role", items)


def account_json(st, r):
    role = st.query("SELECT * FROM roles WHERE id=?", (r["role_id"],))[0]
    return {"id": r["id"], "name": r["name"], "roleid": role["id"], "rolename": role["name"],
            "roletype": role["type"]}


def list_accounts(st, p, command):
    rows = st.query("SELECT * FROM accounts ORDER BY name")
    items = [account_json(st, r) for r in rows if (not p.get("name") or r["name"] == p["name"]) and
             (not p.get("id") or r["id"] == p["id"])]
    return listing("account", items)


def update_account(st, p, command):
    rows = st.query("SELECT * FROM accounts WHERE id=? OR name=?", (p.get("id"), p.get("account")))
    if not rows:
        raise CloudStackError(431, "Unable to find account by id or account name")
    if p.get("roleid"):
        if not st.query("SELECT 1 FROM roles WHERE id=?", (p["roleid"],)):
            raise invalid(command, "roleid", p["roleid"])
        st.execute("UPDATE accounts SET role_id=? WHERE id=?", (p["roleid"], rows[0]["id"]))
    return {"account": account_json(st, st.query("SELECT * FROM accounts WHERE id=?", (rows[0]["id"],))[0])}


COMMANDS = {
    "listzones": list_zones,
    "listpods": list_pods,
    "listclusters": list_clusters,
    "listhosts": list_hosts,
    "addhost": add_host,
    "deletehost": delete_host,
    "createrole": create_role,
    "createrolepermission": create_role_permission,
    "listroles": list_roles,
    "listaccounts": list_accounts,
    "updateaccount": update_account,
}
COMMAND_NAMES = {n.lower(): n for n in ("listZones", "listPods", "listClusters", "listHosts", "addHost", "deleteHost",
                                        "createRole", "createRolePermission", "listRoles", "listAccounts",
                                        "updateAccount")}


def main():
    ap = argparse.ArgumentParser(description="kiln's stand-in controller (CloudStack API subset + webhook)")
    ap.add_argument("--dump", metavar="DB", help="print what DB recorded, as JSON, and exit")
    ap.add_argument("--db")
    ap.add_argument("--config")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--fail-503", type=int, default=0, metavar="N", help="answer the first N requests with 503")
    ap.add_argument("--fail-status", type=int, default=503, metavar="S", help="the --fail-503 answers' HTTP status")
    ap.add_argument("--fail-errorcode", type=int, default=None, metavar="C",
                    help="the --fail-503 answers carry CloudStack's error JSON with errorcode C")
    ap.add_argument("--retry-after", type=int, default=None, metavar="SEC", help="the --fail-503 answers' Retry-After")
    ap.add_argument("--fail-401", action="store_true", help="answer every request with 401")
    ap.add_argument("--hang", action="store_true", help="never answer")
    ap.add_argument("--delay-ms", type=int, default=None, metavar="MS", help="every API call takes MS longer")
    ap.add_argument("--addhost-ms", type=int, default=None, metavar="MS",
                    help="addHost takes MS longer (its host is Connecting meanwhile)")
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
    state.fail_status, state.fail_errorcode, state.retry_after = a.fail_status, a.fail_errorcode, a.retry_after
    state.fault_webhook = a.fault_webhook
    if a.delay_ms is not None:
        state.delay_ms = a.delay_ms
    if a.addhost_ms is not None:
        state.addhost_ms = a.addhost_ms

    ThreadingHTTPServer.request_queue_size = 128     # race tests connect 25 clients at once
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
