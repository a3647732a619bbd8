#!/usr/bin/env python3
# run.sh: weight 35, quick
"""test_store_stalls.py - a store that stalls or loses its file under a running service (issue 19,
items 5 and 6).

    this test --webhooks--> alertbridge serve --> sqlite file, or PostgreSQL (private cluster)
              \\-- another connection: a held write lock, a table lock, an unlink --/

sqlite_write_lock_held_elsewhere   a plain sqlite3 connection holds BEGIN IMMEDIATE while six
    webhooks of new alerts arrive at once: each is answered 503 with Retry-After while the lock
    is still held (database_statement_timeout: 2s bounds the wait), /-/healthy answers 200 and
    /-/ready 503 meanwhile; once the lock is let go /-/ready is 200 again, the refused webhooks
    sent again (as Alertmanager retries them) are answered 200, and every alert answered 200 is
    in the events table.
pg_table_locked                    the same on PostgreSQL with LOCK TABLE events IN ACCESS
    EXCLUSIVE MODE held by psql (statement_timeout and lock_timeout end the waits).
pg_server_frozen                   the same with the whole PostgreSQL server stopped (SIGSTOP:
    its host still answers TCP, so neither its statement_timeout nor keepalives end the wait);
    the client's own bound (statement_timeout + 5 s, store/db_pg.c) abandons the session, and
    a statement once waited for ever.  A private cluster, as it is frozen.
sqlite_file_deleted                the sqlite file is unlinked under the running service (a hard
    link keeps its contents, as a backup would): a new webhook and a repeat of an acknowledged
    one are answered 503 with Retry-After, never 200; /-/ready is 503; one error line names the
    path.  After a restart on the restored file the refused webhook sent again is answered 200,
    and every alert answered 200 is in the events table.

No timed assertions: every wait is bounded, and "before the lock was released" is checked by
the order of events.  Env: ALERTBRIDGE_BIN.  Prints a timeline and, last, "N passed, N failed".
"""

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertbridge, Runner, cases_main, check, eq, event, http, iso_ms, poll,  # noqa: E402
                     print_tail, webhook_payload, db_rows)
import pg  # noqa: E402

REPO = "acme/stalls"
GH_TOKEN = "ghs_storeStallsToken0123456789"
RECEIVER = "bridge"
LOCK_HOLD_S = 20      # the longest the other connection holds its lock
CONCURRENT = 6        # webhooks posted at once during the stall (webhook.threads is 4)

run = Runner()


def alert(n):
    fp = "57a11000000%05x" % n
    return {"fingerprint": fp, "status": "firing",
            "labels": {"alertname": "StoreStall", "pod": "pod-%d" % n},
            "annotations": {"summary": "stall test alert %d" % n},
            "startsAt": iso_ms(time.time() - 60)}


class Stack:
    """alertbridge serve (database_statement_timeout 2s) on sqlite or uri, a fake GitHub."""

    def __init__(self, name, uri=None):
        self.dir = tempfile.mkdtemp(prefix="ab-stall-%s-" % name)
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
        self.ab = Alertbridge(self.dir, self.gh.url, GH_TOKEN, REPO, receiver=RECEIVER)
        with open(self.ab.config) as f:
            text = f.read()
        if uri:
            text = text.replace("database: alertbridge.db\n", "database: %s\n" % uri)
        with open(self.ab.config, "w") as f:
            f.write(text + "database_statement_timeout: 2s\n")
        self.acked = []     # fingerprints answered 200

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0]:
            print_tail("alertbridge log (last 40 lines)", self.ab.tail(40))
        try:
            self.ab.stop()
        finally:
            self.gh.stop()
            shutil.rmtree(self.dir, ignore_errors=True)

    def post(self, n):
        a = alert(n)
        st, hdrs, body = self.ab.post(webhook_payload(RECEIVER, [a]), timeout_s=30)
        if st == 200:
            self.acked.append(a["fingerprint"])
        return st, hdrs, body

    def get(self, path):
        return http("GET", self.ab.url + path, timeout_s=30)

    def log(self):
        with open(self.ab.log_path, errors="replace") as f:
            return f.read()


def stall(s, hold, held, release, stored):
    """The stall case: hold() takes the lock elsewhere, held() says it still holds it, release()
    lets it go; stored() is the fingerprints in the events table."""
    s.ab.start()
    eq(s.post(0)[0], 200, "a webhook before the stall")
    hold()
    poll(held, "the other connection holds its lock", timeout_s=10)
    event("lock held elsewhere")
    answers = {}

    def one(n):
        st, hdrs, _ = s.post(n)
        answers[n] = (st, hdrs.get("retry-after"), held())

    posters = [threading.Thread(target=one, args=(n,), daemon=True)
               for n in range(1, CONCURRENT + 1)]
    for t in posters:
        t.start()
    st, _, _ = s.get("/-/healthy")
    health_during = (st, held())
    ready_503 = poll(lambda: s.get("/-/ready")[0] == 503 and (True, held()),
                     "/-/ready 503 during the stall", timeout_s=15)
    for t in posters:
        t.join(40)
    check(all(not t.is_alive() for t in posters), "every webhook answered")
    still_held = held()
    event("answers during the stall: %s" % sorted(answers.items()))
    release()
    event("lock released")
    eq(health_during, (200, True), "/-/healthy 200 while the lock is held")
    eq(ready_503, (True, True), "/-/ready 503 while the lock is held")
    check(still_held, "the lock was still held after the last answer (bounded wait)")
    eq(sorted(answers), list(range(1, CONCURRENT + 1)), "every webhook answered")
    for n, (code, retry, was_held) in sorted(answers.items()):
        eq((code, retry, was_held), (503, "5", True),
           "webhook %d: 503 with Retry-After while the lock was held" % n)
    poll(lambda: s.get("/-/ready")[0] == 200, "/-/ready 200 after the stall", timeout_s=15)
    for n in range(1, CONCURRENT + 1):  # Alertmanager sends them again
        eq(s.post(n)[0], 200, "webhook %d sent again after the stall" % n)
    have = stored()
    eq([fp for fp in s.acked if fp not in have], [], "acknowledged alerts missing from events")
    event("figures: acknowledged=%d stored=%d" % (len(s.acked), len(have)))


@run.case
def sqlite_write_lock_held_elsewhere():
    with Stack("sqlite") as s:
        release_ev = threading.Event()
        took = threading.Event()
        done = threading.Event()

        def locker():
            con = sqlite3.connect(s.ab.db, timeout=10, isolation_level=None)
            try:
                con.execute("BEGIN IMMEDIATE")
                took.set()
                release_ev.wait(LOCK_HOLD_S)
                con.execute("ROLLBACK")
            finally:
                con.close()
                done.set()

        t = threading.Thread(target=locker, daemon=True)

        def release():
            release_ev.set()
            t.join(10)

        stall(s, t.start, lambda: took.is_set() and not done.is_set(), release,
              lambda: {r[0] for r in db_rows(s.ab.db, "SELECT key FROM events")})


@run.case
def pg_table_locked():
    if not pg.installed():
        event("skipped: no PostgreSQL server installed")
        return
    cluster = pg.Cluster().start()
    uri = cluster.create_database()
    procs = []
    try:
        with Stack("pg", uri) as s:
            def hold():
                env = dict(os.environ, PGAPPNAME="ab-stall-locker")
                procs.append(subprocess.Popen(
                    [os.path.join(pg.bindir(), "psql"), "-X", "-q", "-d", uri, "-c",
                     "BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE; "
                     "SELECT pg_sleep(%d); COMMIT;" % LOCK_HOLD_S],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

            def held():
                return procs[0].poll() is None and cluster.sql(
                    uri, "SELECT count(*) FROM pg_locks WHERE relation = 'events'::regclass "
                    "AND mode = 'AccessExclusiveLock' AND granted")[0][0] == "1"

            def release():
                cluster.sql(uri, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name = 'ab-stall-locker'")
                procs[0].wait(10)

            stall(s, hold, held, release,
                  lambda: {r[0] for r in cluster.sql(uri, "SELECT key FROM events")})
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
        cluster.drop_database(uri)
        cluster.stop()


def cluster_pids(cluster):
    """The postmaster of cluster and every process it started (its backends, its workers)."""
    with open(os.path.join(cluster.dir, "data", "postmaster.pid")) as f:
        master = int(f.readline())
    pids = [master]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                        pids.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def stopped(pid):
    """Whether process pid is stopped (SIGSTOP: state T)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


@run.case
def pg_server_frozen():
    if not pg.installed():
        event("skipped: no PostgreSQL server installed")
        return
    cluster = pg.Cluster().start(share=False)  # frozen: no other test may share it
    uri = cluster.create_database()
    frozen = []
    try:
        with Stack("frozen", uri) as s:
            def hold():
                frozen.extend(cluster_pids(cluster))
                for pid in frozen:
                    os.kill(pid, signal.SIGSTOP)

            def release():
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)

            stall(s, hold, lambda: bool(frozen) and stopped(frozen[0]), release,
                  lambda: {r[0] for r in cluster.sql(uri, "SELECT key FROM events")})
    finally:
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        cluster.drop_database(uri)
        cluster.stop()


@run.case
def sqlite_file_deleted():
    with Stack("deleted") as s:
        s.ab.start()
        eq(s.post(0)[0], 200, "a webhook before the unlink")
        keep = s.ab.db + ".keep"
        os.link(s.ab.db, keep)  # what a backup would hold: the same file
        os.unlink(s.ab.db)
        event("database file unlinked")
        answers = [s.post(1), s.post(0), s.post(2)]  # new, a repeat of an acknowledged one, new
        for st, hdrs, _ in answers:
            eq((st, hdrs.get("retry-after")), (503, "5"), "503 with Retry-After after the unlink")
        st, _, body = s.get("/-/ready")
        eq(st, 503, "/-/ready after the unlink")
        check("deleted" in str(body), "/-/ready says why", body)
        lines = [line for line in s.log().splitlines()
                 if 'msg="the database file was deleted or replaced' in line]
        eq(len(lines), 1, "one error line for the lost file")
        check("level=error" in lines[0] and s.ab.db in lines[0], "at level error with the path",
              lines[0])
        eq(s.get("/-/healthy")[0], 200, "/-/healthy still 200")
        eq(s.ab.stop(), 0, "alertbridge exits 0 on SIGTERM")
        os.rename(keep, s.ab.db)
        event("database file restored")
        s.ab.start()
        for n in (1, 2):  # Alertmanager sends them again
            eq(s.post(n)[0], 200, "webhook %d sent again after the restart" % n)
        have = {r[0] for r in db_rows(s.ab.db, "SELECT key FROM events")}
        eq([fp for fp in s.acked if fp not in have], [], "acknowledged alerts missing from events")
        event("figures: acknowledged=%d stored=%d" % (len(s.acked), len(have)))


if __name__ == "__main__":
    sys.exit(cases_main(run, "STALL_CASES"))
