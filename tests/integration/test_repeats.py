#!/usr/bin/env python3
# run.sh: weight 3
"""test_repeats.py - a repeat adds no event (docs/DESIGN.md "Data flow").

Alertmanager re-sends every firing group at each repeat_interval, twice with an HA pair, and the
same payload on every retry.  The real binary against the fake GitHub: one alert posted 50 times
is one event row in the sqlite file (read read-only), and alertbridge_webhook_alerts_repeated_total
counts the 49 others; after a restart the same notification still adds nothing; a changed endsAt
or status adds one each; `alertbridge map forget` (run by the service, which holds the
database) makes the same firing new again: a new event and a new issue.  Before the fix
every post was a row.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, eq, http, iso_ms, poll,  # noqa: E402
                     webhook_payload)
from harness import alertbridge_run, run_cases  # noqa: E402

REPO = "acme/repeats"
GH_TOKEN = "ghs_repeatsToken0123456789"
RECEIVER = "bridge"
KEY = "00000000000abc01"

run = Runner()


def ro_rows(db, sql):
    """Rows of sql on the service's sqlite file, opened read-only."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def events(ab):
    return ro_rows(ab.db, "SELECT count(*) FROM events WHERE key = '%s'" % KEY)[0][0]


def metric(ab, name):
    _, _, text = http("GET", ab.url + "/metrics")
    return sum(float(v) for v in re.findall(r"^%s\{[^}]*\} (\S+)$" % name, text, re.M))


def alert(starts, status="firing", ends=None):
    a = {"status": status, "fingerprint": KEY, "labels": {"alertname": "Repeats"},
         "annotations": {"summary": "repeats"}, "startsAt": iso_ms(starts)}
    if ends is not None:
        a["endsAt"] = iso_ms(ends)
    return webhook_payload(RECEIVER, [a])


def post_n(ab, payload, n):
    for i in range(n):
        eq(ab.post(payload)[0], 200, "post %d" % i)


def settled(ab, n):
    poll(lambda: metric(ab, "alertbridge_bridge_events_total") >= n,
         "%d events finished" % n, timeout_s=30)


@run.case
def repeats_add_no_event_across_restarts_and_forget():
    tmp = tempfile.mkdtemp(prefix="ab-repeats-")
    gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, REPO, receiver=RECEIVER)
    with alertbridge_run(ab, tmp, gh):
        ab.start()
        t0 = int(time.time()) - 600
        firing = alert(t0)
        post_n(ab, firing, 50)
        eq(events(ab), 1, "50 identical posts are one event row")
        eq(metric(ab, "alertbridge_webhook_alerts_repeated_total"), 49, "49 repeats counted")
        settled(ab, 1)
        eq(len(gh.issues(REPO)), 1, "one issue")

        eq(ab.stop(), 0, "SIGTERM exits 0")
        ab.start()
        post_n(ab, firing, 3)
        eq(events(ab), 1, "after a restart the repeat still adds nothing")

        later = alert(t0, ends=t0 + 3600)  # Alertmanager moves a firing alert's endsAt
        post_n(ab, later, 3)
        eq(events(ab), 2, "a changed endsAt adds one event")
        resolved = alert(t0, status="resolved", ends=time.time() - 1)
        post_n(ab, resolved, 3)
        eq(events(ab), 3, "a changed status adds one event")
        settled(ab, 2)  # this run's metric: the two new events

        t1 = int(time.time()) - 60
        refired = alert(t1)
        post_n(ab, refired, 2)
        eq(events(ab), 4, "a re-fire (new startsAt) adds one event")
        settled(ab, 3)
        issues = len(gh.issues(REPO))
        # answered from the store's version (nothing written since): the forget below is
        # asked of the service, which holds the database (its admin endpoint, with the
        # config's webhook token), and its commit must end that answer
        post_n(ab, refired, 2)
        eq(events(ab), 4, "the re-fire repeats once its event is done")
        rc = subprocess.run([ALERTBRIDGE, "map", "forget", KEY, "--receiver=" + RECEIVER,
                             "--database.path=" + ab.db, "--config.file=" + ab.config],
                            capture_output=True, text=True, timeout=30)
        eq(rc.returncode, 0, "map forget: " + rc.stderr)
        post_n(ab, refired, 2)
        eq(events(ab), 5, "after map forget the same firing is new: one event")
        settled(ab, 4)
        poll(lambda: len(gh.issues(REPO)) == issues + 1, "a new issue after map forget",
             timeout_s=30)
        post_n(ab, refired, 2)
        eq(events(ab), 5, "and then it repeats again")
        eq(ab.stop(), 0, "SIGTERM exits 0")


def main():
    return run_cases(run)


if __name__ == "__main__":
    sys.exit(main())
