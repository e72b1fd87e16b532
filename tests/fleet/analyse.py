#!/usr/bin/env python3
"""Checks and figures of one tests/fleet/fleet.sh run (see there).

Reads LOGS/nodes.txt (index rc start end blob-sha complete), identities.txt
(index mac serial ip), expect.txt (index box layout, "-": it must enlist) and
outcomes.txt (index layout-in-its-report reasons-it-enlisted-with, -1: did not
enlist; both absent in logs kept from before the mix), nginx-access.log (fleet format: msec status method
uri body_bytes range connection connection_requests), proxy.log and
controller.json (controller.py --dump). Prints the figures, writes them to
--summary as JSON, exits 1 when an assertion fails.

The bounds (docs/benchmarks.md "A rack at once" writes them down):

retries: a retry is any request of a node for its spec or its image after
  its first one. Nearly all of them follow a 503 (nginx pushing back), and
  kiln draws each such delay uniformly from one window W wide
  (agent/net/backoff.h: BACKOFF_PUSHBACK_WINDOW_MS, read from the source;
  before it, BACKOFF_MIN_WINDOW_MS, and 250 ms before that). A node's retry
  lands in a given second with probability at most p = min(1, 1 s / W), so
  the nodes retrying in one second are at most Binomial(N, p); the bound is
  the least k with P(X >= k) <= 1e-5, minus one. W = 16 s: 7 for N = 16,
  19 for N = 100.

the mix (issue 27 item 4): every node's report names the layout expect.txt
  gives its box; a box with "-" enlisted (once, at the controller) with a
  reason per layout, and has no report, image or host; every other node
  registered exactly once.

the two bounds of issue 27 (item 6), each with its limit as an option:
  peak: the most nodes retrying in one second, under --peak-share x N
    (0.2: 20 of 100);
  wall: the rack's wall time (nodes 1..N, all at once) within --wall-ratio x
    the reference plus --wall-slack seconds, the reference computed in the
    same run: node 0's time alone x N / slots (CONN), what N nodes would take
    if every slot were busy all the time (1.2 and 0 s for 100 nodes).

controller: the requests a node makes before its image is complete (E, the
  image stage-begin event) come after its spec, which nginx lets through at
  SPEC_RATE/s plus SPEC_BURST; the ones after (Q: stage-end, registration,
  report) come after its image, which holds one of CONN download slots for
  at least (size/2)/RATE seconds (a resumed transfer is at least half the
  image), so at most CONN * (floor(RATE / (size/2)) + 1) images end in one
  second:
      bound = E (SPEC_RATE + SPEC_BURST) + Q CONN (floor(2 RATE / size) + 1)
  with E and Q the largest per-node counts seen.
"""
import argparse
import collections
import json
import math
import re
import sys
from datetime import datetime
from pathlib import Path


def parse_rate(s):
    m = re.fullmatch(r"(\d+)([kKmM]?)", s)
    mult = {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    return int(m.group(1)) * mult


def backoff_window_ms(agent):
    for name in ("BACKOFF_PUSHBACK_WINDOW_MS", "BACKOFF_MIN_WINDOW_MS"):
        for p in list(Path(agent).rglob("backoff.h")):
            m = re.search(r"#define\s+%s\s+(\d+)" % name, p.read_text())
            if m:
                return int(m.group(1)), "%s in %s" % (name, p)
    return 250, "none (before BACKOFF_MIN_WINDOW_MS: [d/2, d], d = 500 ms)"


def binomial_bound(n, p, tail):
    """The largest count k with P(X > k) <= tail for X ~ Binomial(n, p)."""
    if p >= 1:
        return n
    pmf = [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]
    above = 0.0
    for k in range(n, -1, -1):
        if above + pmf[k] > tail:
            return k
        above += pmf[k]
    return 0


def iso_ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=None).timestamp() - \
        (datetime(1970, 1, 1) - datetime.utcfromtimestamp(0)).total_seconds()


def main():
    ap = argparse.ArgumentParser()
    for a in ("logs", "summary", "backoff", "rate", "blob-sha"):
        ap.add_argument("--" + a, required=True)
    for a in ("n", "image-size", "conn", "spec-rate", "spec-burst", "cuts"):
        ap.add_argument("--" + a, type=int, required=True)
    for a in ("fleet-start", "fleet-end"):
        ap.add_argument("--" + a, type=float, required=True)
    ap.add_argument("--peak-share", type=float, default=0.2)
    ap.add_argument("--wall-ratio", type=float, default=1.2)
    ap.add_argument("--wall-slack", type=float, default=0.0)
    a = ap.parse_args()
    logs = Path(a.logs)
    N, size = a.n, a.image_size
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    ident = {}
    for line in (logs / "identities.txt").read_text().split("\n"):
        if line.strip():
            i, mac, serial, ip = line.split()
            ident[int(i)] = {"mac": mac, "serial": serial, "ip": ip}
    by_mac = {v["mac"]: i for i, v in ident.items()}
    nodes = {}
    for line in (logs / "nodes.txt").read_text().split("\n"):
        if line.strip():
            i, rc, st, en, blob, comp = line.split()
            nodes[int(i)] = {"rc": int(rc), "start": float(st), "end": float(en), "blob": blob, "complete": comp}

    # --- the mix: which box each node is, the layout it must get
    expect, outcome = {}, {}
    if (logs / "expect.txt").exists():
        for line in (logs / "expect.txt").read_text().split("\n"):
            if line.strip():
                i, box, want = line.split()
                expect[int(i)] = {"box": box, "layout": want}
        for line in (logs / "outcomes.txt").read_text().split("\n"):
            if line.strip():
                f = line.split() + ["none", "none"]
                outcome[int(f[0])] = {"layout": f[1], "reasons": int(f[2]), "row": f[3], "hostname": f[4]}
    enlist = {i for i, e in expect.items() if e["layout"] == "-"}
    fit = [i for i in ident if i not in enlist]

    # --- every node: exit 0, image verified and complete
    bad = [i for i, n in nodes.items() if n["rc"] != 0]
    check(not bad, "every node exited 0 (failed: %s)" % (bad[:10] or "none"))
    bad = [i for i, n in nodes.items() if i not in enlist and (n["blob"] != a.blob_sha or n["complete"] != "complete")]
    check(not bad, "every fitting node's image verified and complete in its target (bad: %s)" % (bad[:10] or "none"))
    if expect:
        n_layouts = max(o["reasons"] for o in outcome.values())
        bad = ["%d (%s: %s, expected %s)" % (i, e["box"], outcome.get(i, {}).get("layout"), e["layout"])
               for i, e in sorted(expect.items()) if i not in enlist and outcome.get(i, {}).get("layout") != e["layout"]]
        check(not bad, "every fitting node installed the layout its box must get (wrong: %s)" % (bad[:10] or "none"))
        bad = ["%d (%s)" % (i, expect[i]["box"]) for i in sorted(enlist)
               if outcome.get(i, {}).get("reasons", -1) < 1 or outcome[i]["layout"] != "none" or nodes[i]["blob"] != "none"]
        check(not bad and n_layouts >= 1, "every box that fits no layout enlisted with its reasons (%d a box), "
              "and has no report or image (wrong: %s)" % (n_layouts, bad[:10] or "none"))
        bad = [i for i in fit if outcome.get(i, {}).get("reasons", -1) != -1]
        check(not bad, "no fitting node enlisted (enlisted: %s)" % (bad[:10] or "none"))
        # the rack spec's nodes table: node 1 by its MAC, node 2 by its serial, the others the default row
        def row_of(i):
            if i == 1:
                return ident[1]["mac"], "rack-n1"
            if i == 2:
                return ident[2]["serial"], "rack-n2"
            return "default", "spare-" + ident[i]["mac"].replace(":", "")
        bad = ["%d (%s %s, expected %s %s)" % ((i, outcome[i]["row"], outcome[i]["hostname"]) + row_of(i))
               for i in fit if (outcome[i]["row"], outcome[i]["hostname"]) != row_of(i)]
        check(not bad, "every fitting node's report names its nodes row and its host name from it (wrong: %s)" % (
            bad[:10] or "none"))

    # --- registered exactly once
    cj = logs / "controller.json"
    ctl = json.loads(cj.read_text()) if cj.exists() and cj.stat().st_size else None
    if ctl is None:
        print("note: no controller.json in the logs: the controller's checks and figures are left out")
        ctl = {"hosts": [], "requests": [], "reports": [], "events": [], "_missing": True}
    check_ctl = check if not ctl.get("_missing") else (lambda ok, what: print("skip " + what))
    hosts = collections.Counter(h["ipaddress"] for h in ctl.get("hosts", []))
    bad = [i for i in fit if hosts.get(ident[i]["ip"], 0) != 1]
    check_ctl(not bad and len(ctl.get("hosts", [])) == len(fit),
          "every fitting node registered exactly once: %d hosts for %d nodes (wrong: %s)" % (
              len(ctl.get("hosts", [])), len(fit), bad[:10] or "none"))
    uuid = lambda i: "6b1f2c3d-4e5f-4a6b-8c7d-%012x" % i
    enlisted = {e.get("node_id"): e.get("posts") for e in ctl.get("enlisted", [])}
    check_ctl(set(enlisted) == {uuid(i) for i in enlist} and all(v == 1 for v in enlisted.values()),
              "the controller holds each box that fits no layout, enlisted once, and no other: %d of %d (%s)" % (
                  len(enlisted), len(enlist), sorted(enlisted.values()) if enlisted else "none"))
    reqs = ctl.get("requests", [])
    adds = collections.Counter()
    for r in reqs:
        if r.get("command") == "addHost" and r.get("status") == 200:
            adds[r.get("ipaddress") or r.get("detail") or "?"] += 1
    n_add = sum(1 for r in reqs if r.get("command") == "addHost")
    check_ctl(n_add == len(fit), "addHost sent once per fitting node: %d calls for %d nodes" % (n_add, len(fit)))
    reports = collections.Counter(r.get("node_id") for r in ctl.get("reports", []))
    bad = [i for i, v in ident.items() if reports.get(v["mac"], 0) + reports.get(uuid(i), 0) != (0 if i in enlist else 1)]
    check_ctl(not bad, "every fitting node's final report arrived once, none of an enlisted one (wrong: %s)" % (
        bad[:10] or "none"))
    if expect:
        evs_row = collections.Counter()
        for e in ctl.get("events", []):
            body = e.get("body") if isinstance(e.get("body"), dict) else {}
            if body.get("type") and body.get("node_id"):
                evs_row[body.get("nodes_row") is not None] += 1
        check_ctl(evs_row[True] > 0 and evs_row[False] == 0,
                  "every webhook event names the nodes row (%d events, %d without)" % (sum(evs_row.values()), evs_row[False]))

    # --- nginx: bytes, statuses, retries, connections
    t0 = a.fleet_start
    hits = []
    ctl_conns, ctl_front = set(), 0
    for line in (logs / "nginx-access.log").read_text().split("\n"):
        if not line.strip():
            continue
        f = line.split()
        t, status, uri, body = float(f[0]), int(f[1]), f[3], int(f[4])
        rng = f[5].strip('"')
        conn = f[6]
        if uri.startswith("/specs/"):
            kind, mac = "spec", uri[len("/specs/"):-len(".yaml")]
        elif uri.startswith("/images/"):
            kind, mac = "image", uri.split("node=")[-1]
        elif uri.startswith("/client/api") or uri.startswith("/kiln/webhook"):
            if t >= a.fleet_start:
                ctl_conns.add(conn)
                ctl_front += 1
            continue
        else:
            continue
        hits.append({"t": t, "status": status, "kind": kind, "node": by_mac.get(mac), "body": body,
                     "range": rng if rng != "-" else None, "conn": conn})
    fleet_hits = [h for h in hits if h["node"] and h["node"] > 0]
    img = [h for h in fleet_hits if h["kind"] == "image"]
    img_bytes = sum(h["body"] for h in img if h["status"] in (200, 206))
    resumed_bytes = sum(h["body"] for h in img if h["status"] == 206)
    full = collections.Counter(h["node"] for h in img if h["status"] == 200 and not h["range"])
    restarted = [i for i, c in full.items() if c > 1]
    check(img_bytes <= N * size + resumed_bytes,
          "image bytes served %d <= N x size %d + resumed ranges %d" % (img_bytes, N * size, resumed_bytes))
    check(not restarted, "no node downloaded its image from zero twice (restarted: %s)" % (restarted[:10] or "none"))
    # the rack spec's one image url holds ${mac}: each node fetched it under its own MAC, an enlisted one never
    fetched = {h["node"] for h in img}
    bad = [i for i in fit if i > 0 and i not in fetched] + [i for i in enlist if i in fetched]
    check(not bad, "every fitting node fetched the image by its own url (${mac} expanded), no enlisted one (wrong: %s)" % (
        bad[:10] or "none"))
    proxy_cuts = sum(1 for l in (logs / "proxy.log").read_text().split("\n") if "action=cut" in l)
    n_206 = sum(1 for h in img if h["status"] == 206)
    st = collections.Counter("%s %d" % (h["kind"], h["status"]) for h in fleet_hits)

    # retries: every request of a node for one kind after its first
    first = {}
    retries = []
    for h in sorted(fleet_hits, key=lambda h: h["t"]):
        k = (h["node"], h["kind"])
        if k in first:
            retries.append(h)
        else:
            first[k] = h
    per_sec = collections.defaultdict(set)
    for h in retries:
        per_sec[int(h["t"] - t0)].add(h["node"])
    hist = {s: len(v) for s, v in sorted(per_sec.items())}
    peak_retry = max(hist.values()) if hist else 0
    W, wsrc = backoff_window_ms(a.backoff)
    p = min(1.0, 1000.0 / W)
    retry_bound = binomial_bound(N, p, 1e-5)
    check(peak_retry <= retry_bound,
          "retries jittered: at most %d nodes retried in one second, bound %d (W = %d ms from %s, p = %.3f)" % (
              peak_retry, retry_bound, W, wsrc, p))
    conns = collections.defaultdict(set)
    for h in fleet_hits:
        if h["kind"] == "spec":
            conns[h["node"]].add(h["conn"])
    spec_reqs = collections.Counter(h["node"] for h in fleet_hits if h["kind"] == "spec")

    # --- controller: requests per node, peak rate
    fleet_reqs = [r for r in reqs if iso_ts(r["time"]) >= t0 - 0.01]
    per_sec_ctl = collections.Counter(int(iso_ts(r["time"]) - t0) for r in fleet_reqs)
    peak_ctl = max(per_sec_ctl.values()) if per_sec_ctl else 0
    cmds = collections.Counter(r.get("command") or r.get("path") for r in fleet_reqs)
    evs = [e for e in ctl.get("events", []) if e.get("node_id")]
    ev_types = collections.Counter()
    for e in evs:
        body = e.get("body") if isinstance(e.get("body"), dict) else {}
        ev_types[(body.get("type"), body.get("stage"))] += 1
    per_node = len(fleet_reqs) / N
    E = 1
    Q = math.ceil(per_node) + 2
    rate = parse_rate(a.rate)
    ctl_bound = E * (a.spec_rate + a.spec_burst) + Q * a.conn * (math.floor(2 * rate / size) + 1)
    check_ctl(peak_ctl <= ctl_bound, "controller peak %d requests in one second, bound %d (E=%d, Q=%d)" % (
        peak_ctl, ctl_bound, E, Q))

    base = nodes[0]["end"] - nodes[0]["start"]
    wall = a.fleet_end - a.fleet_start
    concurrency = a.conn
    reference = base * max(N, concurrency) / concurrency
    peak_limit = a.peak_share * N
    check(peak_retry < peak_limit, "retry peak: %d of %d nodes (%.0f%%) retried in one second, under %.0f%% of N (%g)" % (
        peak_retry, N, 100.0 * peak_retry / N, 100 * a.peak_share, peak_limit))
    wall_limit = a.wall_ratio * reference + a.wall_slack
    check(wall <= wall_limit, "wall time %.1f s = %.2fx the reference %.1f s (node 0 alone %.2f s x %d / %d slots), "
          "limit %.2fx + %g s = %.1f s" % (wall, wall / reference, reference, base, N, concurrency, a.wall_ratio,
                                         a.wall_slack, wall_limit))
    summary = {
        "n": N, "image_bytes": size, "rate": a.rate, "conn": a.conn, "spec_rate": a.spec_rate,
        "spec_burst": a.spec_burst, "cuts_planned": a.cuts, "cuts_done": proxy_cuts,
        "baseline_seconds": round(base, 2), "wall_seconds": round(wall, 2),
        "expected_seconds": round(reference, 2), "wall_ratio": round(wall / reference, 3),
        "wall_limit_seconds": round(wall_limit, 2),
        "node_seconds": {"min": round(min(n["end"] - n["start"] for i, n in nodes.items() if i), 2),
                         "max": round(max(n["end"] - n["start"] for i, n in nodes.items() if i), 2)},
        "nginx_image_bytes": img_bytes, "nginx_resumed_bytes": resumed_bytes, "ranges_206": n_206,
        "nginx_status": dict(st),
        "spec_requests_per_node": {"mean": round(sum(spec_reqs.values()) / N, 2), "max": max(spec_reqs.values())},
        "spec_connections_per_node": {"mean": round(sum(len(v) for v in conns.values()) / N, 2),
                                      "max": max(len(v) for v in conns.values())},
        "retry_histogram": hist, "retry_peak": peak_retry, "retry_bound": retry_bound,
        "retry_peak_share": round(peak_retry / N, 3), "retry_peak_limit": peak_limit,
        "seconds_over_20pct": sum(1 for v in hist.values() if v >= 0.2 * N),
        "retries": len(retries),
        "controller_requests": len(fleet_reqs),
        "controller_connections_per_node": round(len(ctl_conns) / N, 2),
        "controller_requests_per_connection": round(ctl_front / max(1, len(ctl_conns)), 2), "controller_requests_per_node": round(per_node, 2),
        "controller_commands": dict(cmds), "controller_peak_per_second": peak_ctl,
        "controller_bound": ctl_bound,
        "mix": {e["box"]: e["layout"] for e in expect.values()},
        "layouts_installed": dict(collections.Counter(o["layout"] for i, o in outcome.items() if i not in enlist)),
        "enlisted": len(enlist), "enlisted_at_controller": len(enlisted),
        "failures": failures,
    }
    Path(a.summary).write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    sys.exit(1 if failures else 0)


main()
