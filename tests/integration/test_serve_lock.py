#!/usr/bin/env python3
# run.sh: weight 2
"""test_serve_lock.py - one serving process per sqlite file (issue 18 items 7 and 9).

The real binary in dry-run on 127.0.0.1, no GitHub: a second `serve` on the same database exits
1 naming the first one's PID (before: it started and both acted, 40 alerts became 78 issues);
`map forget` while the service runs is asked of it (POST /-/map/forget, behind the admin guard:
the config's webhook token) and refused without credentials, and once the service stopped it
opens the file itself; `store copy` from a served file is refused; a serve killed with SIGKILL
leaves a lock file that blocks nobody.  Dry-run stores what live stores: the same firing posted
6 times is one event (before: 6, every copy over the dry-run row).

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import contextlib
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, db_rows, eq, free_port,  # noqa: E402
                     http, poll, webhook_payload)
from harness import alertbridge_run  # noqa: E402

RECEIVER = "bridge"
KEY = "aa11bb22cc33dd44"
run = Runner()


def dry_run_service(tmp):
    """An Alertbridge (harness) whose config says github.dry_run: true (no GitHub is called)."""
    ab = Alertbridge(tmp, "http://127.0.0.1:1", "ghs_unused", "acme/lock")
    with open(ab.config) as f:
        text = f.read()
    with open(ab.config, "w") as f:
        f.write(text.replace("  dry_run: false\n", "  dry_run: true\n"))
    return ab


@contextlib.contextmanager
def started_service():
    """A dry-run service in a temp dir of its own (dry_run_service()), started for the block;
    stopped and the dir removed after it (alertbridge_run()).  Yields (ab, the dir)."""
    tmp = tempfile.mkdtemp(prefix="ab-lock-")
    ab = dry_run_service(tmp)
    with alertbridge_run(ab, tmp):
        ab.start()
        yield ab, tmp


def firing():
    return webhook_payload(RECEIVER, [{
        "fingerprint": KEY, "status": "firing",
        "labels": {"alertname": "LockTest", "severity": "page"},
        "startsAt": "2026-01-01T00:00:00Z"}])


def cli(ab, *args):
    p = subprocess.run([ALERTBRIDGE] + list(args), cwd=ab.dir, capture_output=True, text=True,
                       timeout=20, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def events(ab):
    return db_rows(ab.db, "SELECT count(*) FROM events WHERE key = ?", (KEY,))[0][0]


def row_written(ab):
    return db_rows(ab.db, "SELECT count(*) FROM issues WHERE key = ?", (KEY,))[0][0] == 1


@run.case
def second_serve_refused_and_map_commands_ask_the_service():
    with started_service() as (ab, tmp):
        for _ in range(5):
            eq(ab.post(firing())[0], 200, "webhook answered")
        poll(lambda: row_written(ab), "the dry-run worker wrote the map row (issue 0)",
             timeout_s=15)
        eq(ab.post(firing())[0], 200, "a copy after the row is written")
        eq(events(ab), 1, "dry-run: 6 copies of one firing are one event")

        other = subprocess.run([ALERTBRIDGE, "serve", "--config.file=" + ab.config,
                                "--web.listen-address=127.0.0.1:%d" % free_port()],
                               cwd=tmp, capture_output=True, text=True, timeout=20,
                               stdin=subprocess.DEVNULL)
        eq(other.returncode, 1, "a second serve on the same file exits 1")
        check("in use by process %d" % ab.proc.p.pid in other.stderr,
              "it names the holder's PID", other.stderr)

        rc, _, err = cli(ab, "map", "forget", KEY, "--receiver=" + RECEIVER,
                         "--database.path=" + ab.db)
        eq(rc, 1, "map forget without the config's credentials: " + err)
        check("refused the credentials" in err, "the service refused them", err)
        rc, out, err = cli(ab, "map", "forget", KEY, "--receiver=" + RECEIVER,
                           "--config.file=" + ab.config)
        eq((rc, out), (0, "forgot %s/%s: the next firing creates a new issue\n" % (RECEIVER, KEY)),
           "map forget asked of the service: " + err)
        status, _, body = http("GET", ab.url + "/metrics")
        check(re.search(r'alertbridge_http_requests_total\{method="POST",'
                        r'path="/-/map/forget",code="200"\} 1\b', body or ""),
              "the service answered it", body)
        rc, _, err = cli(ab, "store", "copy", "--from=" + ab.db,
                         "--to=" + os.path.join(tmp, "copy.db"))
        eq(rc, 1, "store copy from a served file is refused: " + err)
        check("in use by process %d" % ab.proc.p.pid in err, "it names the holder", err)
        rc, out, err = cli(ab, "map", "list", "--config.file=" + ab.config)
        eq(rc, 0, "map list reads beside the service: " + err)
        check(KEY not in out, "the row is gone", out)
        eq(ab.post(firing())[0], 200, "the firing again")
        eq(events(ab), 2, "after the forget the same firing is new (the service's version moved)")
        eq(ab.stop(), 0, "SIGTERM exits 0")

        rc, out, err = cli(ab, "map", "rescan", "--config.file=" + ab.config)
        eq(rc, 0, "map rescan with no service opens the file itself: " + err)
        check(out.startswith("forgot "), "its line", out)
        rc, _, err = cli(ab, "map", "forget", KEY, "--config.file=" + ab.config)
        eq(rc, 2, "map forget without --receiver is a usage error: " + err)


@run.case
def killed_serve_blocks_nobody():
    with started_service() as (ab, _):
        with open(ab.db + ".lock") as f:
            eq(f.readline().strip(), str(ab.proc.p.pid), "the lock file names the holder")
        ab.kill()
        ab.start()  # waits for /-/ready
        with open(ab.db + ".lock") as f:
            eq(f.readline().strip(), str(ab.proc.p.pid), "the new holder")
        eq(ab.stop(), 0, "SIGTERM exits 0")


sys.exit(run.run())
