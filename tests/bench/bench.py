#!/usr/bin/env python3
"""bench.py - `make bench`: alertbridge's intake against a bare libmicrohttpd responder, in one run.

Three workloads, each against a fresh alertbridge (its own database) and each compared with the
bare responder measured in the same run (tests/bench/post.lua says what each sends), on each
store engine: sqlite (a file) and PostgreSQL (a private cluster on loopback started for the run,
tests/integration/pg.py, a database per alertbridge; when the server is installed):
  new      every request a new firing episode (each is a durable event per alert);
  repeat   the same payload again and again (Alertmanager's repeat_interval, HA twins, retries);
  mix      9 repeats in 10, 1 new.
For each: requests/s, p50/p99 (wrk), CPU per request (utime + stime of the server process from
/proc/PID/stat over the wrk run) and the ratio to the bare responder; then instructions per
request under callgrind (a short fixed sequential run after one warm-up request and the
worker's first GitHub calls, minus a run of the warm-up alone, so startup, the first event's
work and shutdown do not count: instruction counts do not drift with machine load the way times
do).
The worker is held back (live against the fake GitHub at 1 call a minute; not dry-run, where a
key's dry-run map row makes its next notification no repeat), so the intake is measured.
Durability is checked after each wrk run: `new` must have an event for every acknowledged alert,
`repeat` exactly one per alert of the payload (repeats are not stored).

Last, the GitHub calls per transition of one alert's life against the fake GitHub
(tests/integration/fake_github.py), from its request log: the repository's first event (a
create plus the map rebuild's reads, once per database), create, repeat, resolve, re-fire
(reopen), with the mutations, the reads, the 304s (conditional reads of an unchanged issue), the
searches and the rate-limit units used (GitHub does not count a 304).

usage: bench.py BARE_RESPONDER ALERTBRIDGE
env:   BENCH_DURATION (10s), BENCH_THREADS (2), BENCH_CONNECTIONS (16), BENCH_PAYLOAD,
       BENCH_CALLGRIND_REQUESTS (200; 0 skips callgrind), BENCH_CALLGRIND_KEEP (a folder
       where the callgrind outputs are kept, for callgrind_annotate), BENCH_MODES (new,repeat,mix),
       BENCH_ENGINES (sqlite,postgres; postgres only when installed).  callgrind counts the
       sqlite engine's runs only (on PostgreSQL the server's work is another process's).
Exit status 0; 1 when an answer was not 2xx or an acknowledged alert is missing; 2 on setup.
"""

import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

from fake_github import FakeGitHub  # noqa: E402
from harness import free_port, iso_ms  # noqa: E402
import pg  # noqa: E402

DURATION = os.environ.get("BENCH_DURATION", "10s")
THREADS = os.environ.get("BENCH_THREADS", "2")
CONNS = os.environ.get("BENCH_CONNECTIONS", "16")
PAYLOAD = os.environ.get("BENCH_PAYLOAD") or os.path.join(
    SRC, "tests", "fixtures", "alertmanager", "03_group_of_3_firing.json")
CG_REQUESTS = int(os.environ.get("BENCH_CALLGRIND_REQUESTS", "200"))
CG_WARMUP = 1  # requests in both callgrind runs: the first stores the payload's events
MODES = [m for m in os.environ.get("BENCH_MODES", "new,repeat,mix").split(",") if m]
ENGINES = [e for e in os.environ.get("BENCH_ENGINES", "sqlite,postgres" if pg.installed() else
                                     "sqlite").split(",") if e]
KEEP_CG = os.environ.get("BENCH_CALLGRIND_KEEP")
LUA = os.path.join(SRC, "tests", "bench", "post.lua")
CLK_TCK = os.sysconf("SC_CLK_TCK")
TOKEN = "bench-" + os.urandom(8).hex()


def die(msg):
    print("bench: " + msg, file=sys.stderr)
    sys.exit(2)


def cpu_seconds(pid):
    """utime + stime of pid and its threads, in seconds (/proc/PID/stat fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def wait_until(cond, what, proc, timeout_s=60):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            die("%s: the process exited early (%s)" % (what, proc.returncode))
        time.sleep(0.1)
    die("%s: not within %d s" % (what, timeout_s))


def get(port, path):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    except OSError:
        return 0, ""


def stop(proc, grace_s=30):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Bridge:
    """One alertbridge, live against the fake GitHub at github_url, in its own directory;
    content_per_minute 1 holds the worker back, so what is measured is the intake."""

    def __init__(self, binary, receiver, github_url, wrap=(), content_per_minute=1,
                 cluster=None):
        self.dir = tempfile.mkdtemp(prefix="ab-bench-")
        self.port = free_port()
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.cluster = cluster
        if cluster:
            self.db = cluster.create_database()
        with open(os.path.join(self.dir, "webhook-token"), "w") as f:
            f.write(TOKEN + "\n")
        with open(os.path.join(self.dir, "github-token"), "w") as f:
            f.write("ghs_benchToken0123456789\n")
        with open(os.path.join(self.dir, "alertbridge.yml"), "w") as f:
            f.write("listen_address: 127.0.0.1:%d\n"
                    "database: %s\n"
                    "log: {level: warn, format: logfmt}\n"
                    "webhook:\n"
                    "  bearer_token_file: webhook-token\n"
                    "  max_body_bytes: 1048576\n"
                    "  threads: 16\n"
                    "github:\n"
                    "  api_url: %s\n"
                    "  token_file: github-token\n"
                    "  content_per_minute: %d\n"
                    "  timeout: 10s\n"
                    "  dry_run: false\n"
                    "receivers:\n"
                    "  - name: %s\n"
                    "    repo: bench/alerts\n"
                    "    labels: [alert]\n"
                    "    auto_close: true\n"
                    "    reopen_window: 7d\n"
                    "janitor:\n"
                    "  enabled: false\n"
                    % (self.port, self.db if cluster else "alertbridge.db", github_url,
                       content_per_minute, receiver))
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
        self.log = open(os.path.join(self.dir, "alertbridge.log"), "w")
        self.proc = subprocess.Popen(list(wrap) + [binary, "serve",
                                                   "--config.file=alertbridge.yml"],
                                     cwd=self.dir, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        wait_until(lambda: get(self.port, "/-/ready")[0] == 200, "alertbridge ready", self.proc,
                   timeout_s=120)

    def pending(self):
        st, text = get(self.port, "/metrics")
        m = re.search(r"^alertbridge_bridge_queue_pending(?:\{[^}]*\})? (\S+)$", text, re.M)
        return float(m.group(1)) if st == 200 and m else -1

    def events(self):
        if self.cluster:
            return int(self.cluster.sql(self.db, "SELECT count(*) FROM events")[0][0])
        con = sqlite3.connect(self.db, timeout=10)
        try:
            return con.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            con.close()

    def close(self):
        stop(self.proc, grace_s=120)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.cluster:
            self.cluster.drop_database(self.db)


def wrk(port, mode):
    env = dict(os.environ, BENCH_PAYLOAD=PAYLOAD, BENCH_TOKEN=TOKEN, BENCH_MODE=mode)
    r = subprocess.run(["wrk", "-t" + THREADS, "-c" + CONNS, "-d" + DURATION, "--latency",
                        "-s", LUA, "http://127.0.0.1:%d/v1/webhook" % port], env=env,
                       capture_output=True, text=True, timeout=600)
    lines = [x for x in r.stdout.splitlines() if x.startswith("BENCH ")]
    if r.returncode != 0 or not lines:
        die("wrk failed (exit %d): %s %s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return {k: float(v) for k, v in (f.split("=", 1) for f in lines[-1].split()[1:])}


def measured(port, pid, mode):
    c0 = cpu_seconds(pid)
    res = wrk(port, mode)
    res["cpu_us"] = (cpu_seconds(pid) - c0) * 1e6 / max(res["requests"], 1)
    return res


def post_sequential(port, body_for, first, n):
    """n POSTs (body_for(first) ..) on one keep-alive connection; the count of 2xx answers."""
    if n == 0:
        return 0
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    ok = 0
    for i in range(first, first + n):
        c.request("POST", "/v1/webhook", body_for(i), {"Authorization": "Bearer " + TOKEN,
                                                      "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        ok += 200 <= r.status < 300
    c.close()
    return ok


def bodies(template):
    """body_for(i) per mode, as post.lua builds them."""
    base_ms = 1893456000000

    def new(i, fresh_keys=False):
        ts = iso_ms((base_ms + (i + 1) * 64) / 1000.0)
        body = re.sub(r'"startsAt": *"[^"]*"', '"startsAt": "%s"' % ts, template)
        if fresh_keys:
            k = iter(range(1, 1000))
            body = re.sub(r'"fingerprint": *"[^"]*"',
                          lambda m: '"fingerprint": "%012x%04x"' % ((i + 1) * 64, next(k)), body)
        return body

    return {"new": new, "repeat": lambda i: template,
            "mix": lambda i: new(i, True) if (i + 1) % 10 == 0 else template}


def worker_settled(gh_before, timeout_s=120):
    """Waits until the worker has made the warm-up's first GitHub calls (the create among them)
    and then 1 s passed with no further call, so a run's one-time work (the repository's map
    rebuild, the first create, lazily prepared statements) is in its baseline as well."""
    t0 = time.monotonic()
    seen, quiet_since = -1, time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        reqs = GH.get_requests()[gh_before:]
        created = any(r["method"] == "POST" and r["path"].endswith("/issues") for r in reqs)
        if len(reqs) != seen:
            seen, quiet_since = len(reqs), time.monotonic()
        elif created and time.monotonic() - quiet_since >= 1.0:
            return
        time.sleep(0.1)
    die("callgrind run: the worker made no create within %d s of the warm-up: %s" % (
        timeout_s, [(r["method"], r["path"], r["status"]) for r in GH.get_requests()[gh_before:]]))


def callgrind_total(cmd, cwd, port, body_for, n, is_bridge):
    """Instructions of the whole process for CG_WARMUP sequential requests, then (the bridge's
    worker settled) n more: callgrind's totals."""
    out = os.path.join(cwd, "callgrind.out")
    wrap = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out]
    if is_bridge:
        GH.reset()  # the same GitHub for every run: the worker's first calls are the same
        b = Bridge(cmd, RECEIVER, GH.url, wrap=wrap)
        proc = b.proc
    else:
        proc = subprocess.Popen(wrap + cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        wait_until(lambda: os.path.exists(os.path.join(cwd, "bare.port")) and
                   os.path.getsize(os.path.join(cwd, "bare.port")) > 0, "bare ready", proc,
                   timeout_s=120)
        port = int(open(os.path.join(cwd, "bare.port")).read())
    gh_before = len(GH.get_requests())
    ok = post_sequential(b.port if is_bridge else port, body_for, 0, CG_WARMUP)
    if is_bridge:
        worker_settled(gh_before)
    ok += post_sequential(b.port if is_bridge else port, body_for, CG_WARMUP, n)
    if ok != CG_WARMUP + n:
        die("callgrind run: %d of %d requests answered 2xx" % (ok, CG_WARMUP + n))
    stop(proc, grace_s=120)
    text = open(out).read()
    if KEEP_CG:
        shutil.copy(out, os.path.join(KEEP_CG, "callgrind.%d.%s.%d" % (
            len(os.listdir(KEEP_CG)), "alertbridge" if is_bridge else "bare", CG_WARMUP + n)))
    os.unlink(out)
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if is_bridge:
        b.log.close()
        shutil.rmtree(b.dir, ignore_errors=True)
    else:
        os.unlink(os.path.join(cwd, "bare.port"))
    if not m:
        die("no totals in the callgrind output")
    return int(m.group(1))


def gh_calls(binary, receiver, template):
    """The fake GitHub's requests per transition of one alert's life."""
    gh = FakeGitHub(token="ghs_benchToken0123456789", repos=["bench/alerts"]).start()
    b = Bridge(binary, receiver, gh.url, content_per_minute=80)
    alert = json.loads(template)
    alert["alerts"] = alert["alerts"][:1]
    alert["status"] = "firing"
    a = alert["alerts"][0]
    a["startsAt"] = iso_ms(time.time() - 60)
    rows = []

    def finished():
        st, text = get(b.port, "/metrics")
        return sum(float(v) for v in re.findall(
            r"^alertbridge_bridge_events_total\{[^}]*\} (\S+)$", text, re.M))

    def step(name, payload, events=1, settle_s=1.5):
        used0, done0 = gh.used, finished()
        gh.get_requests(clear=True)
        c = http.client.HTTPConnection("127.0.0.1", b.port, timeout=30)
        c.request("POST", "/v1/webhook", json.dumps(payload),
                  {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        c.close()
        if r.status != 200:
            die("gh calls: %s answered %d" % (name, r.status))
        wait_until(lambda: finished() >= done0 + events, "%s processed" % name, b.proc)
        time.sleep(settle_s)  # a call after the queue says done would show here
        reqs = gh.get_requests()
        muts = [x for x in reqs if x["method"] in ("POST", "PATCH", "PUT", "DELETE")]
        searches = [x for x in reqs if x["path"].startswith("/search/")]
        rows.append((name, len(reqs), len(muts), len(reqs) - len(muts),
                     sum(1 for x in reqs if x["status"] == 304), len(searches),
                     gh.used - used0, " ".join(sorted("%s %s" % (x["method"], re.sub(
                         r"/\d+", "/N", x["path"])) for x in reqs))))

    try:
        # The repository's first event also rebuilds the map once (GET /user, then the list of
        # the login's own issues): shown on its own row, so "create" is a create's steady cost.
        first = json.loads(json.dumps(alert))
        first["alerts"][0]["labels"]["bench_first"] = "1"
        if "fingerprint" in first["alerts"][0]:
            first["alerts"][0]["fingerprint"] = "00000000000000f1"
        step("first", first)
        step("create", alert)
        step("repeat", alert, events=0)
        res = json.loads(json.dumps(alert))
        res["status"] = "resolved"
        res["alerts"][0].update(status="resolved", endsAt=iso_ms(time.time() - 1))
        step("resolve", res)
        again = json.loads(json.dumps(alert))
        again["alerts"][0]["startsAt"] = iso_ms(time.time() - 1)
        step("re-fire", again)
    finally:
        b.close()
        gh.stop()
    return rows


def run_ours(binary, mode, per, cluster):
    """wrk against a fresh alertbridge on cluster (None: sqlite); the results with the
    durability check of its events after the run ("durable" says it, "ok_durable" 0/1)."""
    b = Bridge(binary, RECEIVER, GH.url, cluster=cluster)
    try:
        r = measured(b.port, b.proc.pid, mode)
        stop(b.proc, grace_s=120)
        events = b.events()
    finally:
        b.close()
    ok = int(r["ok"])
    if mode == "new":
        durable = events >= ok * per
        r["durable"] = "%d events for %d x %d alerts: %s" % (
            events, ok, per, "OK" if durable else "MISSING %d" % (ok * per - events))
    elif mode == "repeat":
        durable = events == per
        r["durable"] = "%d events for %d requests of %d alerts: %s" % (
            events, ok, per, "OK, repeats not stored" if durable else "WRONG")
    else:
        new = (ok + 9) // 10  # 1 in 10 per wrk thread: within a few of this
        durable = events >= per + max(ok // 10 - int(THREADS), 0) * per
        r["durable"] = "%d events for %d requests, about %d of them new x %d alerts " \
            "+ %d" % (events, ok, new, per, per)
    r["ok_durable"] = 1 if durable else 0
    return r


def main():
    global RECEIVER, GH
    if len(sys.argv) != 3:
        die("usage: bench.py BARE_RESPONDER ALERTBRIDGE")
    bare_bin, binary = (os.path.abspath(x) for x in sys.argv[1:])
    for tool in ("wrk", "valgrind") if CG_REQUESTS else ("wrk",):
        if not shutil.which(tool):
            die("%s is not installed" % tool)
    template = open(PAYLOAD).read()
    GH = FakeGitHub(token="ghs_benchToken0123456789", repos=["bench/alerts"]).start()
    RECEIVER = json.loads(template)["receiver"]
    per = len(json.loads(template)["alerts"])
    status = 0
    tmp = tempfile.mkdtemp(prefix="ab-bench-bare-")
    bare = subprocess.Popen([bare_bin, os.path.join(tmp, "bare.port")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    try:
        wait_until(lambda: os.path.exists(os.path.join(tmp, "bare.port")) and
                   os.path.getsize(os.path.join(tmp, "bare.port")) > 0, "bare ready", bare)
        bare_port = int(open(os.path.join(tmp, "bare.port")).read())
        os.unlink(os.path.join(tmp, "bare.port"))
        for engine in ENGINES:
            if engine == "postgres":  # fsync on: a commit costs what it costs in production
                os.environ["PG_DURABLE"] = "1"
            cluster = pg.Cluster().start(share=False) if engine == "postgres" else None
            try:
                for mode in MODES:
                    results[("bare", engine, mode)] = measured(bare_port, bare.pid, mode)
                    r = results[("ours", engine, mode)] = run_ours(binary, mode, per, cluster)
                    if not r["ok_durable"] or r["non2xx"] or \
                            results[("bare", engine, mode)]["non2xx"]:
                        status = 1
            finally:
                if cluster:
                    cluster.stop()
    finally:
        stop(bare)
        shutil.rmtree(tmp, ignore_errors=True)
        if not CG_REQUESTS:
            GH.stop()

    print("wrk -t%s -c%s -d%s, payload %s (%d alerts)" % (THREADS, CONNS, DURATION,
                                                           os.path.basename(PAYLOAD), per))
    print("%-8s %-21s %10s %9s %9s %11s %7s" % ("workload", "server", "requests/s", "p50 ms",
                                                "p99 ms", "CPU us/req", "non-2xx"))
    for engine in ENGINES:
        for mode in MODES:
            for who in ("bare", "ours"):
                r = results[(who, engine, mode)]
                print("%-8s %-21s %10.0f %9.3f %9.3f %11.1f %7d" % (
                    mode, "bare MHD" if who == "bare" else "alertbridge (%s)" % engine,
                    r["rps"], r["p50_us"] / 1000, r["p99_us"] / 1000, r["cpu_us"],
                    r["non2xx"]))
            o, b = results[("ours", engine, mode)], results[("bare", engine, mode)]
            print("%-8s %-21s %10.3f %9.2f %9.2f %11.2f" % (
                mode, "ratio", o["rps"] / b["rps"], o["p50_us"] / max(b["p50_us"], 1),
                o["p99_us"] / max(b["p99_us"], 1), o["cpu_us"] / max(b["cpu_us"], 1e-9)))
            print("         durability: %s" % o["durable"])

    if CG_REQUESTS:
        print()
        print("callgrind, %d sequential requests after %d, minus a run of the %d alone"
              " (instructions per request):" % (CG_REQUESTS, CG_WARMUP, CG_WARMUP))
        tmp = tempfile.mkdtemp(prefix="ab-bench-cg-")
        try:
            bf = bodies(template)
            bare0 = callgrind_total([bare_bin, os.path.join(tmp, "bare.port")], tmp, 0,
                                    bf["new"], 0, False)
            bareN = callgrind_total([bare_bin, os.path.join(tmp, "bare.port")], tmp, 0,
                                    bf["new"], CG_REQUESTS, False)
            bare_ipr = (bareN - bare0) / CG_REQUESTS
            print("%-8s %-12s %14.0f" % ("any", "bare MHD", bare_ipr))
            for mode in MODES:
                ours0 = callgrind_total(binary, tmp, 0, bf[mode], 0, True)
                n = callgrind_total(binary, tmp, 0, bf[mode], CG_REQUESTS, True)
                ipr = (n - ours0) / CG_REQUESTS
                print("%-8s %-12s %14.0f  (%.1f x bare)" % (mode, "alertbridge", ipr,
                                                            ipr / max(bare_ipr, 1)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            GH.stop()

    print()
    print("GitHub calls per transition of one alert (fake GitHub's request log):")
    print("%-8s %6s %10s %6s %5s %9s %11s  %s" % ("", "calls", "mutations", "reads", "304",
                                                  "searches", "rate units", "requests"))
    for row in gh_calls(binary, RECEIVER, template):
        print("%-8s %6d %10d %6d %5d %9d %11d  %s" % row)
    return status


RECEIVER = None
GH = None  # the fake GitHub the intake runs are live against

if __name__ == "__main__":
    sys.exit(main())
