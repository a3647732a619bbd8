#!/usr/bin/env python3
# run.sh: weight 12
"""test_retention.py - done events are pruned after database_retention (issue #7).

The real binary with `database_retention: 2s` against the fake GitHub: alerts fire and resolve
(six done events).  Within a bounded time the done rows are gone from the sqlite file while the
map rows stay, and the file is in incremental-vacuum mode (dead letters staying is
test_store_events.c's and test_repo_missing.py's).  Before the fix nothing ever pruned them.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertbridge, Runner, check, db_rows, eq, event,  # noqa: E402
                     http, iso_ms, poll, webhook_payload)
from harness import alertbridge_run, run_cases  # noqa: E402

REPO = "acme/retention"
GH_TOKEN = "ghs_retentionToken0123456789"
RECEIVER = "bridge"

run = Runner()



def finished(ab):
    _, _, text = http("GET", ab.url + "/metrics")
    return sum(float(v) for v in re.findall(
        r"^alertbridge_bridge_events_total\{[^}]*\} (\S+)$", text, re.M))


def alert(n, starts, status="firing", labels=None):
    a = {"status": status, "fingerprint": "%016x" % (0xab000 + n),
         "labels": dict({"alertname": "Retention%d" % n}, **(labels or {})),
         "annotations": {"summary": "retention %d" % n}, "startsAt": iso_ms(starts)}
    if status == "resolved":
        a["endsAt"] = iso_ms(time.time() - 1)
    return a


@run.case
def done_events_are_pruned_after_the_retention():
    tmp = tempfile.mkdtemp(prefix="ab-retention-")
    gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, REPO, receiver=RECEIVER)
    with open(ab.config) as f:
        text = f.read()
    with open(ab.config, "w") as f:
        f.write(text.replace("database: alertbridge.db\n",
                             "database: alertbridge.db\ndatabase_retention: 2s\n"))
    with alertbridge_run(ab, tmp, gh):
        ab.start()
        t0 = time.time() - 60
        alerts = [alert(i, t0) for i in range(3)]
        eq(ab.post(webhook_payload(RECEIVER, alerts))[0], 200, "firing webhook")
        poll(lambda: finished(ab) >= 3, "3 events finished", timeout_s=30)
        resolved = [dict(a, status="resolved", endsAt=iso_ms(time.time() - 1)) for a in alerts]
        eq(ab.post(webhook_payload(RECEIVER, resolved))[0], 200, "resolved webhook")
        poll(lambda: finished(ab) >= 6, "6 events finished", timeout_s=30)
        event("events: %s" % db_rows(ab.db, "SELECT state, count(*) FROM events GROUP BY state"))
        eq(len(db_rows(ab.db, "SELECT 1 FROM issues WHERE number > 0")), 3, "three map rows")
        poll(lambda: db_rows(ab.db, "SELECT count(*) FROM events WHERE state = 'done'")[0][0] == 0,
             "the done events pruned (retention 2s)", timeout_s=15)
        eq(db_rows(ab.db, "SELECT count(*) FROM events"), [(0,)], "no event is left")
        eq(len(db_rows(ab.db, "SELECT 1 FROM issues WHERE number > 0")), 3,
           "the map rows stay")
        eq(db_rows(ab.db, "PRAGMA auto_vacuum"), [(2,)], "incremental vacuum")
        with open(ab.log_path) as f:
            log = f.read()
        check("done events pruned" in log, "the prune is logged")
        check("switched to incremental vacuum" not in log, "a new file needs no VACUUM")
        eq(len(gh.issues(REPO)), 3, "three issues")
        eq(ab.stop(), 0, "alertbridge exits 0 on SIGTERM")


def main():
    return run_cases(run)


if __name__ == "__main__":
    sys.exit(main())
