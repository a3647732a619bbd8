#!/usr/bin/env python3
# run.sh: weight 55, asan skip
# (its store faults' paths run under the sanitizers in test_bridge_store_faults and test_store_stalls, its kills in the model)
"""campaign.py - issue 19's fault campaign: the model-based lifecycle test under slow and
failing GitHub answers, a failing store, attackers and signals.

Each seed is a world of tests/model/lifecycle.py (its steps, its reference model, its quiet
points and invariants: 0 lost, 0 duplicated, every event done or dead-lettered with a reason,
GitHub and the map as the model says) with these feature classes added, each a step:

  slow       GitHub does a create, comment or update but only after github.timeout (1 s),
             within its processing limit (10 s, scaled as the bridge scales it: LIMIT_S):
             the fake's "delay", so the write the bridge gave up on appears later; no issue
             or comment twice, no late write undoing a newer one
  diskfull   every write of the store fails ("database or disk is full": triggers that
             another sqlite connection adds, as tests/unit/test_bridge_store_faults.c does)
             for 1..MODEL_FAULT_S s while an event is in flight and another arrives
  stall      another sqlite connection holds the write lock (BEGIN IMMEDIATE) that long;
             /-/healthy answers within 1 s meanwhile (best of 3)
  unlink     the database file is deleted under the running service: the next webhook is
             not acknowledged (503) and /-/ready is not 200; a restart then makes a new
             database, rebuilt from GitHub's markers, and nothing acknowledged is lost
  attack     from 127.0.0.2..127.0.0.9, one of: password guesses on the web.auth guard,
             slowloris connections from one address, more idle connections than
             max_connections (class Attack); a notification is delivered and a quiet point
             (with its latency probes) is held under it
  term       SIGTERM while a webhook is in flight (half the time beside one of 2,000 invalid
             alerts, each dead-lettered when answered 200): the service ends within 10 s;
             restarted

Webhooks are delivered as Alertmanager does: a 503 (which must carry Retry-After) or a lost
connection is tried again, for at most 60 s.  On top of the model's invariants, every quiet
point checks:
  - latency: a legitimate webhook, a repeat and a new alert, is answered 200 within 1 s
    (the best of 3 tries each: a loaded 2-core machine may stall one);
  - budget: GitHub's mutating calls of each credential, counted at the fake, stay within
    content_per_minute (20) in every window of one scaled minute (60 x --test.second-ms ms,
    shortened by a fifth for the fake's view of the timing), across SIGKILL, SIGTERM and
    restarts too: a new process goes on with the budget the store recorded (check_budget());
    during a store fault at most STORE_CALLS(seconds) calls of any kind (the failing store
    backs off: defect 3 of issue 19 spent the hourly budget in 31 s).

Env: as lifecycle.py (MODEL_SEED, MODEL_SEEDS default 6, MODEL_FIRST, MODEL_STEPS default
30, MODEL_JOBS default 2, MODEL_REPEAT, MODEL_KEEP, ALERTBRIDGE_BIN); MODEL_FEATURES over
lifecycle's classes and these ("all" is every one; the default leaves out ON_HOLD, the
classes that still fail on the code of today, none now: see its comment); MODEL_FAULT_S
(longest store fault, default 3; make soak: 8, past the store's 5 s busy timeout).  sqlite only.  Passing
worlds add their figures to the summary (latency per situation, GitHub calls per store
fault, SIGTERM exit times).  The last line is "N passed, N failed".
"""

import base64
import math
import os
import random
import socket
import sqlite3
import sys
import threading
import time
from http.client import HTTPException

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("MODEL_ENGINE", "sqlite")

import lifecycle as lc  # noqa: E402
from harness import http, webhook_payload  # noqa: E402

CAMPAIGN = ("slow", "diskfull", "stall", "unlink", "attack", "term")
FEATURES = lc.FEATURES + CAMPAIGN
# Classes left out of the default run (make test) until their issue 19 fix is in; make soak
# and MODEL_FEATURES=all run them.  None today: attack was held while, right after a start,
# the connection reserve knew no client and 300 idle connections from 8 addresses kept
# Alertmanager out (MODEL_SEED=2 MODEL_FEATURES=fire,resolve,repeat,close,kill,dryrun,attack);
# now at the cap an idle connection of the address holding the most makes room
# (core/http_server_conns.c).
ON_HOLD = ()
TIMEOUT_S = 1.0          # github.timeout in lifecycle's config
# GitHub ends a request it has processed for 10 s ("Troubleshooting the REST API", Timeouts),
# scaled as the bridge scales it under --test.second-ms (bridge/gh.h gh_write_settled_at)
LIMIT_S = 10 * lc.SECOND_MS / 1000.0
CPM = 20                 # github.content_per_minute of the campaign's config
SLO_S = 1.0              # a legitimate webhook's answer
POST_S = 60              # Alertmanager-like retries of one notification, at most
TERM_S = 10              # SIGTERM to exit
FAULT_S = float(os.environ.get("MODEL_FAULT_S") or 3)
ATTACKERS = ["127.0.0.%d" % n for n in range(2, 10)]
GUESSERS = 32            # connections guessing passwords at once
SLOW = 400               # slowloris connections from one address
IDLE = 300               # idle connections over 8 addresses (max_connections is 256)
# htpasswd -nbBC 10 oncall 'correct horse battery staple' (as test_status_page.py)
HASH = "$2y$10$TnD4qJFgqkaiWogpqY.qW.F3RqJSEuLmh0VW.H7ERxFCttn6Bne1O"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")


def store_calls(seconds):
    """GitHub calls allowed while the store fails for `seconds`: the worker backs off from
    retry_base (5 scaled seconds) doubling up to retry_max (600 scaled seconds), then once a
    retry_max; a few calls per attempt, plus the event in flight."""
    base, cap = 5 * lc.SECOND_MS / 1000.0, 600 * lc.SECOND_MS / 1000.0
    attempts = math.log2(max(2.0, min(seconds, cap) / base)) + 2 + seconds / cap
    return int(2 * attempts) + 4


class Attack:
    """One attack on the service's port from 127.0.0.2..9 (Linux routes 127/8 to lo); stop()
    ends it and says what it saw.  The kinds (issue 19 items 1 and 2):
      guess      GUESSERS threads from the 8 addresses, each sending GET /metrics with a
                 random Basic password, one request per connection (a password check each)
      slowloris  SLOW connections from one address, each sending a request head one header
                 line every 0.5 s, never finished; reconnected when cut
      idle       IDLE connections spread over the 8 addresses that send nothing at all
                 (more than max_connections, 256); reconnected when cut"""

    KINDS = ("guess", "slowloris", "idle")

    def __init__(self, port, kind):
        self.port, self.kind = port, kind
        self.halt = threading.Event()
        self.threads = []
        self.answers = {}         # guess: status (or closed/error) -> count
        self.cut = 0              # slowloris, idle: connections the server closed
        self.lock = threading.Lock()

    def connect(self, n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.bind((ATTACKERS[n % len(ATTACKERS)], 0))
            s.connect(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return None
        return s

    def guess(self, n):
        rng = random.Random(n)
        while not self.halt.is_set():
            s = self.connect(n)
            if s is None:
                self.halt.wait(0.05)
                continue
            cred = base64.b64encode(b"oncall:guess%d" % rng.getrandbits(48)).decode()
            try:
                s.sendall(("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
                           "Basic %s\r\nConnection: close\r\n\r\n" % cred).encode())
                head = s.recv(64).split(b" ")
                status = head[1].decode() if len(head) > 1 else "closed"
            except OSError:
                status = "error"
            finally:
                s.close()
            with self.lock:
                self.answers[status] = self.answers.get(status, 0) + 1

    def hold(self, count, spread, trickle):
        """Keep count connections open (from one address unless spread): a closed one is
        opened again within 0.1 s; when trickle, each sends a request head, then a byte of a
        header every 0.5 s, never finished."""
        socks = [None] * count
        tick = 0
        try:
            while not self.halt.is_set():
                tick += 1
                for i in range(count):
                    if self.halt.is_set():
                        break
                    s = socks[i]
                    try:
                        if s is None:
                            s = socks[i] = self.connect(i if spread else 0)
                            if s is None:
                                continue
                            # Non-blocking: on a socket with a timeout, recv() waits it
                            # out before it looks (and a TimeoutError read as a cut).
                            s.setblocking(False)
                            if trickle:
                                s.sendall(b"POST /v1/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                            continue
                        try:
                            if s.recv(1) == b"":
                                raise OSError("closed")
                        except BlockingIOError:
                            if trickle and tick % 5 == 0:
                                s.sendall(b"X")
                    except OSError:
                        s.close()
                        socks[i] = None
                        with self.lock:
                            self.cut += 1
                self.halt.wait(0.1)
        finally:
            for s in socks:
                if s is not None:
                    s.close()

    def start(self):
        if self.kind == "guess":
            self.threads = [threading.Thread(target=self.guess, args=(n,), daemon=True)
                            for n in range(GUESSERS)]
        else:
            self.threads = [threading.Thread(target=self.hold, daemon=True, args=(
                SLOW if self.kind == "slowloris" else IDLE, self.kind == "idle",
                self.kind == "slowloris"))]
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(10)
        if self.kind == "guess":
            return "%d password guesses (%s)" % (sum(self.answers.values()), " ".join(
                "%s:%d" % kv for kv in sorted(self.answers.items())))
        return "%d %s connections, %d cut by the server" % (
            SLOW if self.kind == "slowloris" else IDLE, self.kind, self.cut)


class CampaignWorld(lc.World):
    """A lifecycle world with issue 19's faults, Alertmanager-like retries and the checks
    of latency and budget at its quiet points."""

    def __init__(self, seed, features, steps, keep):
        super().__init__(seed, features, steps, keep)
        # The probes draw from their own generator: how many tries a probe takes depends on
        # timing, and the steps must stay those of the seed.
        self.probe_rng = random.Random(seed * 1000003 + 19)
        # A write in doubt is looked for once it can no longer land: github.timeout and
        # GitHub's 10 s limit on a request (issue 19 item 4).
        self.quiet_s = 30
        self.situation = "quiet point"
        self.timings = []
        self.settled = 0          # fake requests before this index have all been answered
        self.fig = {"latency": {}, "store": [], "term": [], "slow": 0, "calls": 0,
                    "unlink": [], "attack": []}

    def write_config(self):
        super().write_config()
        path = os.path.join(self.dir, "alertbridge.yml")
        with open(path) as f:
            text = f.read()
        text = text.replace("  content_per_minute: 80\n", "  content_per_minute: %d\n" % CPM)
        text += "web:\n  auth:\n    basic_auth_users:\n      oncall: \"%s\"\n" % HASH
        with open(path, "w") as f:
            f.write(text)

    # ----- delivering as Alertmanager does ---------------------------------------------------
    def post_once(self, payload):
        """One attempt: (status or None for a lost connection, headers, body, seconds)."""
        t0 = time.monotonic()
        try:
            st, hdrs, body = http("POST", self.url + "/v1/webhook", payload, timeout_s=10,
                                  headers={"Authorization": "Bearer " + lc.HOOK_TOKEN})
        except (OSError, HTTPException) as e:
            st, hdrs, body = None, {}, str(e)
        secs = time.monotonic() - t0
        self.timings.append((st, secs))
        return st, hdrs, body, secs

    def post(self, receiver, alerts, group_key=None, status=None):
        p = webhook_payload(receiver, alerts, status=status)
        if group_key:
            p["groupKey"], p["groupLabels"] = group_key, lc.group_labels(group_key)
        deadline = time.time() + POST_S
        while True:
            st, hdrs, body, _ = self.post_once(p)
            if st == 200:
                return p
            if st == 503 and "retry-after" not in hdrs:
                self.fail("webhook answered 503 without Retry-After: %s" % body)
            if st not in (None, 503):
                self.fail("webhook answered %s: %s" % (st, body))
            if time.time() > deadline:
                self.fail("webhook not acknowledged within %d s (last: %s %s)" % (
                    POST_S, st, body))
            time.sleep(0.05)

    def flip(self, a=None):
        """Pick an alert (or take a) and deliver its next transition: a firing of one that is
        not firing, a resolve of one that is.  Returns the delivery's arguments without
        delivering when a is given (the caller delivers)."""
        given = a is not None
        if a is None:
            a = self.rng.choice([x for x in self.alerts if x.receiver == "alerts"])
        if a.firing:
            a.firing, a.ends = False, self.vt
        else:
            a.firing, a.starts, a.ends = True, self.vt, None
        a.sent.append((a.firing, a.starts, a.ends))
        if given:
            return a.firing, a.starts, a.ends
        self.deliver(a, a.firing, a.starts, a.ends)
        return None

    # ----- quiet points ----------------------------------------------------------------------
    def check(self):
        if self.proc is not None:
            self.probe()
        self.quiet()
        self.settle()
        super().check()
        self.check_budget()

    def probe(self):
        """A legitimate webhook answered 200 within SLO_S: a repeat, then a new alert, each
        the best of 3 single attempts (no retry inside one) of the same notification, which
        is then delivered and applied to the model."""
        rng = self.probe_rng
        for kind in ("repeat", "new"):
            if kind == "repeat":
                sent = [a for a in self.alerts if a.sent]
                if not sent:
                    continue
                a = rng.choice(sent)
                args = a.sent[-1]
            else:
                fresh = [a for a in self.alerts if a.receiver == "alerts" and
                         (a.starts is None or (not a.firing and "refire" in self.features))]
                if fresh:
                    a = rng.choice(fresh)
                else:
                    a = lc.Alert(rng, "alerts", 100 + len(self.alerts))
                    self.add_alert(a)
                args = self.flip(a)
            payload = webhook_payload(a.receiver, [a.notification(*args)])
            tries = []
            for _ in range(3):
                st, _, _, secs = self.post_once(payload)
                tries.append("%s in %.2f s" % (st, secs))
                if st == 200 and secs <= SLO_S:
                    self.fig["latency"].setdefault(self.situation, []).append(secs)
                    break
                time.sleep(0.1)
            else:
                self.fail("a legitimate webhook (%s, %s) not answered 200 within %.0f s in 3 "
                          "tries: %s" % (kind, self.situation, SLO_S, ", ".join(tries)))
            self.deliver(a, *args)

    def settle(self):
        """Wait (at most 10 s) until the fake has answered every request it got: a write
        delayed past the timeout lands before the invariants are read."""
        deadline = time.time() + 10
        while True:
            with self.gh.lock:
                reqs = self.gh.requests
                while self.settled < len(reqs) and reqs[self.settled]["status"] is not None:
                    self.settled += 1
                busy = any(r["status"] is None for r in reqs[self.settled:])
            if not busy:
                return
            if time.time() > deadline:
                self.fail("the fake GitHub still handles a request after 10 s")
            time.sleep(0.02)

    def check_budget(self):
        """No more than content_per_minute mutating GitHub calls (per token) in any 0.8 of a
        scaled minute, across process starts too: each start loads what the processes before
        it spent from the store (store/store_budget.h; issue 19: before, a restarted
        alertbridge started with a full minute, and seed 3 of make test's run saw 21 within
        240 ms around two restarts).  The message counts the starts in the window."""
        window = 60 * lc.SECOND_MS / 1000.0 * 0.8
        by_token = {}
        starts = sorted(getattr(self, "starts", []))
        with self.gh.lock:
            self.fig["calls"] = len(self.gh.requests)
            for r in self.gh.requests:
                if r["method"] in MUTATING and r["path"].startswith("/repos/"):
                    by_token.setdefault(r["headers"].get("authorization", ""), []).append(
                        r["time"])
        for times in by_token.values():
            times.sort()
            lo = 0
            for hi, t in enumerate(times):
                while times[lo] < t - window:
                    lo += 1
                if hi - lo + 1 > CPM:
                    self.fail("%d mutating GitHub calls within %.0f ms (content_per_minute %d "
                              "in a scaled minute of %d ms; %d process starts among them); "
                              "calls at +ms %s" % (
                                  hi - lo + 1, window * 1000, CPM, 60 * lc.SECOND_MS,
                                  sum(1 for x in starts if times[lo] < x <= t),
                                  [round((x - times[lo]) * 1000) for x in times[lo:hi + 1]]))

    def calls_since(self, n0):
        with self.gh.lock:
            return len(self.gh.requests) - n0

    # ----- the campaign's steps --------------------------------------------------------------
    def step(self):
        what = None
        enabled = [c for c in CAMPAIGN if c in self.features]
        if enabled and self.rng.random() < 0.25:
            what = self.rng.choice(enabled)
        if what in ("diskfull", "stall", "unlink", "slow") and self.dry:
            what = None           # store faults and writes are for live worlds
        if what is None:
            super().step()
            return
        self.tick()
        getattr(self, "do_" + what)()

    def do_slow(self):
        delay_ms = int(1000 * (TIMEOUT_S + LIMIT_S * self.rng.choice((0.1, 0.5, 0.8))))
        method = self.rng.choice(("POST", "PATCH", "POST|PATCH"))
        self.gh.add_fault(method=method, path=r"/repos/acme/(alerts|moved)/issues.*",
                          count=self.rng.randint(1, 2), action="delay", delay_ms=delay_ms)
        self.fig["slow"] += 1
        self.note("fault: next %s done and answered %d ms later (timeout %d ms)" % (
            method, delay_ms, TIMEOUT_S * 1000))
        self.flip()

    def store_fault(self, what, seconds, on, off):
        """Run on(con) now and off(con) after `seconds` (from a timer: the deliveries meanwhile
        wait as Alertmanager would), while one event is in flight and another arrives; check
        the GitHub calls made meanwhile."""
        self.flip()
        con = sqlite3.connect(self.db, timeout=10, isolation_level=None,
                              check_same_thread=False)
        n0 = self.calls_since(0)
        t0 = time.time()
        done = []

        def lift():
            try:
                off(con)
            finally:
                done.append(time.time())
        on(con)
        timer = threading.Timer(seconds, lift)
        timer.start()
        try:
            if what == "stall":
                self.health_during(what)
            self.flip()
        finally:
            timer.join(seconds + 30)
            con.close()
        if not done:
            self.fail("%s: could not lift the fault" % what)
        calls = self.calls_since(n0)
        self.fig["store"].append((what, done[0] - t0, calls))
        self.note("%s for %.1f s: %d GitHub calls meanwhile" % (what, done[0] - t0, calls))
        if calls > store_calls(done[0] - t0):
            self.fail("%d GitHub calls while the store failed for %.1f s (at most %d: a failing "
                      "store backs off)" % (calls, done[0] - t0, store_calls(done[0] - t0)))

    def do_diskfull(self):
        def on(con):
            tables = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%'")]
            for t in tables:
                for op in ("INSERT", "UPDATE", "DELETE"):
                    con.execute('CREATE TRIGGER "campaign_full_%s_%s" BEFORE %s ON "%s" BEGIN '
                                "SELECT RAISE(ABORT, 'database or disk is full'); END" % (
                                    t, op, op, t))

        def off(con):
            for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                       "AND name LIKE 'campaign_full_%'").fetchall():
                con.execute('DROP TRIGGER "%s"' % name)
        self.store_fault("diskfull", self.rng.uniform(1, FAULT_S), on, off)

    def do_stall(self):
        self.store_fault("stall", self.rng.uniform(1, FAULT_S),
                         lambda con: con.execute("BEGIN IMMEDIATE"),
                         lambda con: con.execute("ROLLBACK"))

    def health_during(self, what):
        tries = []
        for _ in range(3):
            t0 = time.monotonic()
            try:
                st = http("GET", self.url + "/-/healthy", timeout_s=5)[0]
            except (OSError, HTTPException) as e:
                st = str(e)
            secs = time.monotonic() - t0
            tries.append("%s in %.2f s" % (st, secs))
            if st == 200 and secs <= SLO_S:
                self.fig["latency"].setdefault("/-/healthy during " + what, []).append(secs)
                return
        self.fail("/-/healthy not answered 200 within %.0f s during a %s: %s" % (
            SLO_S, what, ", ".join(tries)))

    def do_unlink(self):
        self.check()              # nothing pending: what the deleted file held is done
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(self.db + suffix)
            except FileNotFoundError:
                pass
        a = self.rng.choice([x for x in self.alerts if x.receiver == "alerts"])
        args = self.flip(a)
        st, _, body, _ = self.post_once(webhook_payload(a.receiver, [a.notification()]))
        if st == 200:
            self.fail("a webhook was acknowledged (200) after the database file was deleted: "
                      "it is lost at the next start")
        ready = http("GET", self.url + "/-/ready", timeout_s=5)[0]
        if ready == 200:
            self.fail("/-/ready answers 200 after the database file was deleted")
        self.stop()
        self.map_lost()
        self.start()
        self.deliver(a, *args)
        self.fig["unlink"].append((st, ready))
        self.note("database file deleted: webhook %s, ready %s; restarted on a new one" % (
            st, ready))

    def do_attack(self):
        kind = self.rng.choice(Attack.KINDS)
        atk = Attack(self.port, kind).start()
        try:
            time.sleep(0.5)
            self.situation = "attack " + kind
            self.probe()          # at once: the retries of a delivery may outlast an attack
            self.flip()
            self.check()
        finally:
            self.situation = "quiet point"
            seen = atk.stop()
        self.fig["attack"].append((kind, seen))
        self.note("attack: " + seen)

    def junk(self, n):
        """A webhook of n invalid alerts (startsAt not a time), each to be dead-lettered
        (issue 19 item 7: they cost quadratic time and held a SIGTERM for minutes)."""
        alerts = []
        for _ in range(n):
            x = lc.Alert(self.rng, "alerts", 0)
            self.keys[("alerts", x.fp)] = lc.Key("alerts", x.fp, bad=True)
            alerts.append(dict(x.notification(True, self.vt, None), startsAt="not a time"))
        return webhook_payload("alerts", alerts)

    def do_term(self):
        """SIGTERM while a notification (and, half the time, a webhook of 2,000 invalid
        alerts, answered or not) is in flight; then a restart."""
        pause = self.rng.random() * 0.03
        junk = self.junk(2000) if self.rng.random() < 0.5 else None
        a = self.rng.choice([x for x in self.alerts if x.receiver == "alerts"])
        args = self.flip(a)
        errs = []

        def send():
            try:
                self.deliver(a, *args)
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(e)
        ts = [threading.Thread(target=send, daemon=True)]
        if junk:
            ts.append(threading.Thread(target=self.post_once, args=(junk,), daemon=True))
        for t in ts:
            t.start()
        time.sleep(pause)
        t0 = time.time()
        os.kill(self.proc.pid, lc.signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=TERM_S)
        except lc.subprocess.TimeoutExpired:
            self.fail("alertbridge did not exit within %d s of SIGTERM" % TERM_S)
        self.fig["term"].append(time.time() - t0)
        self.proc = None
        if rc != 0:
            self.fail("alertbridge exited %s on SIGTERM" % rc)
        self.start()
        for t in ts:
            t.join(POST_S + 10)
        if errs:
            raise errs[0]
        self.note("SIGTERM during a webhook%s (exit in %.2f s) and restart" % (
            " and one of 2,000 invalid alerts" if junk else "", self.fig["term"][-1]))

    def figures(self):
        return self.fig


def summarize(figs):
    lat = {}
    for f in figs:
        for where, xs in f["latency"].items():
            lat.setdefault(where, []).extend(xs)
    for where, xs in sorted(lat.items()):
        xs.sort()
        print("latency %s: %d probes, median %.3f s, max %.3f s" % (
            where, len(xs), xs[len(xs) // 2], xs[-1]))
    store = [s for f in figs for s in f["store"]]
    for what in ("diskfull", "stall"):
        xs = [s for s in store if s[0] == what]
        if xs:
            print("%s: %d faults, %.0f s in all, GitHub calls meanwhile: %d (most in one: %d)"
                  % (what, len(xs), sum(s[1] for s in xs), sum(s[2] for s in xs),
                     max(s[2] for s in xs)))
    unlink = [u for f in figs for u in f["unlink"]]
    if unlink:
        print("database file deleted: %d times; the next webhook answered %s, /-/ready %s" % (
            len(unlink), "/".join(sorted({str(u[0]) for u in unlink})),
            "/".join(sorted({str(u[1]) for u in unlink}))))
    attack = [x for f in figs for x in f["attack"]]
    for kind in Attack.KINDS:
        seen = [x[1] for x in attack if x[0] == kind]
        if seen:
            print("attack %s: %d, the last: %s" % (kind, len(seen), seen[-1]))
    term = sorted(t for f in figs for t in f["term"])
    if term:
        print("SIGTERM: %d, exit within %.2f s" % (len(term), term[-1]))
    print("slow answers injected: %d, duplicates: 0; GitHub requests: %d in %d worlds" % (
        sum(f["slow"] for f in figs), sum(f["calls"] for f in figs), len(figs)))


CAMPAIGN_SUITE = lc.Suite(CampaignWorld, FEATURES, "tests/model/campaign.py", steps=30,
                          seeds=6, jobs=2, summarize=summarize,
                          features=",".join("-" + c for c in ON_HOLD) or "all",
                          env=("MODEL_FAULT_S",))

if __name__ == "__main__":
    if lc.ENGINE != "sqlite":
        raise SystemExit("campaign.py: sqlite only (its store faults act on the file)")
    sys.exit(lc.main(CAMPAIGN_SUITE))
