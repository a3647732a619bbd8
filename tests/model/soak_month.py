#!/usr/bin/env python3
"""soak_month.py - a month of Alertmanager traffic replayed at an accelerated pace (make soak).

1,000 alerts (100 alertnames x 10 instances, one Alertmanager group per alertname, the real
version-4 payload shapes) fire on day 0; every repeat_interval (4 h of virtual time) each group
is re-sent; every day 5% of the alerts flap (resolve, then fire again with a new startsAt a few
minutes later).  The virtual month lies in the past (startsAt/endsAt come from it); the bridge
runs with its own pacing scaled down (serve --test.second-ms=1), against the fake GitHub.

Checks: after the first week and at the end of the month, once the queue is empty, the
database's size (file + WAL) and alertbridge's RSS; both must stay within 10% of the first
week's.  `database_retention` is set to one virtual week (scaled to wall time) when the binary
accepts the key.  At the end every issue is right: one issue per alert, open for the firing
ones, closed (completed) for the resolved ones, no duplicate comment.

Env: ALERTBRIDGE_BIN (default ./alertbridge), SOAK_ALERTS (default 1000), SOAK_DAYS (default 30),
SOAK_KEEP=1 keeps the directory.  The last line is "N passed, N failed".
"""

import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from fake_github import FakeGitHub  # noqa: E402
from harness import ALERTBRIDGE  # noqa: E402
from harness import free_port, http, iso_ms, write_config  # noqa: E402
from world_process import ServeProcess  # noqa: E402

N_ALERTS = int(os.environ.get("SOAK_ALERTS") or 1000)
DAYS = int(os.environ.get("SOAK_DAYS") or 30)
PER_GROUP = 10
REPEAT_S = 4 * 3600
FLAP_PER_DAY = 0.05
REPO = "acme/soak"
TOKEN = "ghs_soakToken0123456789"
HOOK = "soak-webhook-secret"
MARK_RE = re.compile(r"<!--\s*alertbridge:key=([A-Za-z0-9._-]{1,128})\s*-->")
BOT_MARK_RE = re.compile(r"<!--\s*alertbridge:episode=[^>]*-->")


def log(msg):
    print("[%7.1fs] %s" % (time.time() - T0, msg), flush=True)


T0 = time.time()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def db_bytes(path):
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


class Soak(ServeProcess):
    """The soak's alertbridge (serve --test.second-ms=1) and its fake GitHub."""

    second_ms = 1
    ready_s = 30
    stop_grace_s = 15

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ab-soak-")
        # A month in minutes: GitHub's hourly budget of 5,000 requests, counted in wall-clock
        # hours, would stand for a month of a busy cluster, so the fake's is scaled up with
        # the clock (the bridge's pacing still runs, scaled by --test.second-ms).
        self.gh = FakeGitHub(token=TOKEN, repos=[REPO], search_lag_s=60,
                             rate_limit=10 ** 9).start()
        self.gh.server.handle_error = lambda request, address: None
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.log_path = os.path.join(self.dir, "alertbridge.log")
        self.proc = None

    def fail(self, msg):
        raise RuntimeError(msg)

    def config(self, retention):
        """Write alertbridge.yml (database_retention: retention, unless None) and the token
        files; the config's path."""
        return write_config(
            self.dir, self.port,
            "%s"
            "github: {api_url: %s, token_file: github-token, content_per_minute: 80,"
            " timeout: 5s}\n"
            "receivers:\n"
            "  - name: soak\n"
            "    repo: %s\n"
            "    labels: [alert]\n"
            "    reopen_window: 7d\n"
            "janitor: {enabled: false}\n"
            % ("database_retention: %s\n" % retention if retention else "", self.gh.url, REPO),
            files=(("webhook-token", HOOK), ("github-token", TOKEN)), log_level="warn")

    def stop(self):
        ServeProcess.stop(self)
        self.gh.stop()

    def pending(self):
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
        try:
            return con.execute("SELECT count(*) FROM events WHERE state = 'pending'").fetchone()[0]
        finally:
            con.close()

    def quiet(self, limit_s=300):
        deadline = time.time() + limit_s
        while self.pending():
            if time.time() > deadline:
                con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
                try:
                    rows = con.execute("SELECT id, key, status, attempts, last_error FROM events "
                                       "WHERE state = 'pending' LIMIT 5").fetchall()
                finally:
                    con.close()
                raise RuntimeError("queue not empty after %d s (%d pending), e.g. %s" % (
                    limit_s, self.pending(), rows))
            time.sleep(0.1)


def main():
    if not os.access(ALERTBRIDGE, os.X_OK):
        print("alertbridge binary not found: %s\n0 passed, 1 failed" % ALERTBRIDGE)
        return 1
    rng = random.Random(4242)
    s = Soak()
    # A virtual week lasts about this long in wall time (measured on the first week, below);
    # database_retention of one virtual week is given as the first week's wall time.
    probe = s.config("1h")
    accepted = subprocess.run([ALERTBRIDGE, "check-config", probe],
                              capture_output=True).returncode == 0
    results = []
    try:
        alerts = []
        for g in range(N_ALERTS // PER_GROUP):
            for i in range(PER_GROUP):
                alerts.append({
                    "fp": "%016x" % rng.getrandbits(64), "group": g, "firing": True,
                    "labels": {"alertname": "SoakAlert%03d" % g, "instance": "node-%d:9100" % i,
                               "job": "node", "namespace": "ns-%d" % (g % 7),
                               "pod": "pod-%d-%d" % (g, i), "severity": ["warning",
                                                                         "critical"][g % 2]},
                    "annotations": {"summary": "Soak alert %d on node-%d" % (g, i),
                                    "description": "Something is wrong with node-%d " % i * 4,
                                    "runbook_url": "https://runbooks.example/soak/%d" % g},
                    "starts": None, "ends": None})
        groups = {}
        for a in alerts:
            groups.setdefault(a["group"], []).append(a)
        t = int((time.time() - (DAYS + 2) * 86400) * 1000)
        for a in alerts:
            a["starts"] = t + rng.randint(0, 600) * 1000

        def payload(g, members):
            al = [{"status": "firing" if a["firing"] else "resolved", "labels": a["labels"],
                   "annotations": a["annotations"], "startsAt": iso_ms(a["starts"] / 1000.0),
                   "endsAt": iso_ms(a["ends"] / 1000.0) if not a["firing"]
                   else "0001-01-01T00:00:00Z",
                   "generatorURL": "http://prometheus.example:9090/graph?g0.expr=up&g0.tab=1",
                   "fingerprint": a["fp"]} for a in members]
            name = members[0]["labels"]["alertname"]
            return {"receiver": "soak", "status": "firing" if any(a["firing"] for a in members)
                    else "resolved", "alerts": al, "groupLabels": {"alertname": name},
                    "commonLabels": {"alertname": name, "job": "node"},
                    "commonAnnotations": {}, "externalURL": "http://alertmanager.example:9093",
                    "version": "4", "groupKey": '{}:{alertname="%s"}' % name,
                    "truncatedAlerts": 0}

        def post(g, members):
            st, _, body = http("POST", s.url + "/v1/webhook", payload(g, members),
                               headers={"Authorization": "Bearer " + HOOK}, timeout_s=30)
            if st != 200:
                raise RuntimeError("webhook answered %s: %s" % (st, body))

        week_s = None
        s.config(None)
        s.start()
        first = None
        posts = 0
        t0 = time.time()
        ticks_per_day = 86400 // REPEAT_S
        for day in range(DAYS):
            flapping = set(rng.sample(range(len(alerts)), int(len(alerts) * FLAP_PER_DAY)))
            flap_tick = {i: rng.randrange(ticks_per_day) for i in flapping}
            for tick in range(ticks_per_day):
                now = t + (day * 86400 + tick * REPEAT_S) * 1000
                resolved_now = set()
                for i, k in flap_tick.items():
                    if k == tick:
                        a = alerts[i]
                        a["firing"], a["ends"] = False, now + 60000
                        resolved_now.add(a["group"])
                for g, members in groups.items():
                    post(g, members)      # the repeat (and the resolves of this tick)
                    posts += 1
                for i, k in flap_tick.items():
                    if k == tick:         # fires again a few minutes later
                        a = alerts[i]
                        a["firing"], a["starts"], a["ends"] = True, now + 600000, None
                for g in resolved_now:
                    post(g, groups[g])
                    posts += 1
            if day % 7 == 6:
                log("day %d: %d posts, %d events pending, database %d bytes, RSS %d kB" % (
                    day + 1, posts, s.pending(), db_bytes(s.db), rss_kb(s.proc.pid)))
            if day == 6:
                s.quiet()
                week_s = time.time() - t0
                first = (db_bytes(s.db), rss_kb(s.proc.pid))
                log("after week 1 (%d posts, %.0f s): database %d bytes, RSS %d kB" % (
                    posts, week_s, first[0], first[1]))
                if accepted:
                    # Restart with database_retention = one virtual week in wall time.
                    s.proc.send_signal(signal.SIGTERM)
                    s.proc.wait(timeout=30)
                    s.config("%ds" % max(1, int(week_s)))
                    s.start()
                    log("restarted with database_retention: %ds (one virtual week)" %
                        max(1, int(week_s)))
                else:
                    log("database_retention is not a config key of this binary: not set")
        s.quiet()
        end = (db_bytes(s.db), rss_kb(s.proc.pid))
        log("after day %d (%d posts, %.0f s): database %d bytes, RSS %d kB" % (
            DAYS, posts, time.time() - t0, end[0], end[1]))
        results.append(("database size flat after week 1 (%d -> %d bytes)" % (first[0], end[0]),
                        end[0] <= first[0] * 1.10))
        results.append(("RSS flat after week 1 (%d -> %d kB)" % (first[1], end[1]),
                        end[1] <= first[1] * 1.10))
        by = {}
        for i in s.gh.issues(REPO):
            m = MARK_RE.findall(i["body"] or "")
            if m:
                by.setdefault(m[-1], []).append(i)
        wrong = []
        for a in alerts:
            got = by.get(a["fp"], [])
            want = ("open", ) if a["firing"] else ("closed", )
            if len(got) != 1 or (got[0]["state"],) != want:
                wrong.append("%s: %s, want one %s" % (a["fp"], [(x["number"], x["state"])
                                                                 for x in got], want[0]))
                continue
            marks = []
            for c in s.gh.comments(REPO, got[0]["number"]):
                marks += BOT_MARK_RE.findall(c["body"] or "")
            if len(set(marks)) != len(marks):
                wrong.append("%s: a comment twice on #%d" % (a["fp"], got[0]["number"]))
        results.append(("every issue right at the end (%d alerts, %d wrong%s)" % (
            len(alerts), len(wrong), ": " + "; ".join(wrong[:5]) if wrong else ""), not wrong))
    except Exception as e:  # noqa: BLE001
        results.append(("soak ran to the end: %s" % e, False))
    finally:
        s.stop()
        if os.environ.get("SOAK_KEEP"):
            log("kept %s" % s.dir)
        else:
            shutil.rmtree(s.dir, ignore_errors=True)
    for what, ok in results:
        print("%s %s" % ("PASS" if ok else "FAIL", what))
    passed = sum(1 for _, ok in results if ok)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
