#!/usr/bin/env python3
# run.sh: weight 22
# (about 22 s on 2 cores: real serve, backup and restore processes)
"""test_backup.py - docs/operating.md's backup and restore, done as an admin would.

backup_while_running_then_restore
    The real binary runs behind the fake GitHub; a thread posts new alerts while
    `sqlite3 alertbridge.db ".backup FILE"` copies the database (sqlite's online backup: no
    stop, no lock held for long).  The copy passes `PRAGMA integrity_check` and holds every
    alert acknowledged before the backup began (an event or a map row).  Then life goes on:
    new alerts fire (new issues the backup does not know) and one resolves.  The admin stops
    the service, restores the copy, runs `alertbridge map rescan` and starts it again;
    Alertmanager re-sends what is firing and resolved.  Nothing may happen on GitHub: no second
    issue for the alerts created after the backup, no second comment, no close undone.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Prints a timeline, the figures, and last
"N passed, N failed".
"""

import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Runner, check, eq, event, http, poll  # noqa: E402
from harness import ALERTBRIDGE, delete_database, run_on_stack  # noqa: E402
from test_lost_database import (MUTATING, REPO, Stack, alert, by_key,  # noqa: E402
                                resolved, snapshot)

LOAD_POSTS = 12  # new alerts posted while the backup runs, 40 ms apart

run = Runner()


def sqlite3_cli(db, command):
    r = subprocess.run(["sqlite3", db, command], capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "sqlite3 %s exits 0 (%s)" % (command, r.stderr.strip()))
    return r.stdout.strip()


def known_keys(db):
    """Keys the database knows: map rows and events, as the restored service would see them."""
    out = sqlite3_cli(db, "SELECT key FROM issues UNION SELECT key FROM events")
    return set(out.split())


def queue_pending(s):
    st, _, text = http("GET", s.url + "/metrics")
    m = re.search(r"^alertbridge_bridge_queue_pending(?:\{[^}]*\})? (\S+)$", text, re.M)
    return float(m.group(1)) if st == 200 and m else -1


def backup_then_restore(s):
    s.start()
    t0 = time.time() - 600
    early = [alert("Early%d" % i, t0) for i in range(4)]
    s.post("firing", early)
    s.idle(len(early))

    acked = []  # (time the 200 came, fingerprint)
    stop = threading.Event()

    def load():
        for i in range(LOAD_POSTS):
            if stop.is_set():
                return
            a = alert("Load%d" % i, time.time() - 5)
            s.post("firing", [a])
            acked.append((time.time(), a["fingerprint"], a))
            time.sleep(0.04)

    th = threading.Thread(target=load, daemon=True)
    th.start()
    time.sleep(0.4)
    bak = os.path.join(s.dir, "backup.db")
    began = time.time()
    sqlite3_cli(s.db, ".backup " + bak)
    event("backup taken while %d of %d load posts were acknowledged" % (len(acked), LOAD_POSTS))
    th.join(timeout=30)
    stop.set()
    check(not th.is_alive(), "the load thread ended")
    eq(sqlite3_cli(bak, "PRAGMA integrity_check"), "ok", "the backup passes integrity_check")
    before_backup = {fp for t, fp, _ in acked if t < began} | {a["fingerprint"] for a in early}
    missing = before_backup - known_keys(bak)
    eq(sorted(missing), [], "alerts acknowledged before the backup began that it lacks")
    loads = [a for _, _, a in acked]
    s.idle(len(early) + len(loads))

    # Life after the backup: two new alerts (issues the backup never hears of), one resolve.
    late = [alert("AfterBackup%d" % i, time.time() - 5) for i in range(2)]
    s.post("firing", late)
    gone = resolved(early[0])
    s.post("resolved", [gone])
    s.idle(len(early) + len(loads) + 3)
    time.sleep(1.0)
    s.stop()
    before = snapshot(s.gh)
    every = early + loads + late
    eq(sorted(before), sorted(a["fingerprint"] for a in every), "one issue per alert")

    # Restore: the copy replaces the file (and its WAL), then map rescan, then start.
    delete_database(s.db)
    shutil.copyfile(bak, s.db)
    r = subprocess.run([ALERTBRIDGE, "map", "rescan", "--config.file=" + s.config], cwd=s.dir,
                       capture_output=True, text=True, timeout=10)
    eq(r.returncode, 0, "map rescan exits 0 (%s)" % r.stderr.strip())
    check("forgot 1 repository scan" in r.stdout, "map rescan says what it forgot", r.stdout)
    s.gh.get_requests(clear=True)
    s.start()
    # Alertmanager re-sends every firing group at repeat_interval, and the resolve.
    s.post("firing", early[1:] + loads + late)
    s.post("resolved", [gone])
    poll(lambda: queue_pending(s) == 0, "the queue drained after the restore", timeout_s=60,
         interval_s=0.2)
    time.sleep(1.0)
    reqs = s.gh.get_requests()
    eq([(r["method"], r["path"]) for r in reqs if r["method"] in MUTATING], [],
       "after the restore, re-sent alerts change nothing on GitHub")
    eq(snapshot(s.gh), before, "GitHub unchanged: no second issue, no second comment")
    dup = sum(len(v) - 1 for v in by_key(s.gh).values())
    print("figures: alerts %d (%d after the backup), acknowledged during the backup %d, "
          "duplicates %d, lost 0" % (len(every), len(late), len(loads), dup), flush=True)


@run.case
def backup_while_running_then_restore():
    run_on_stack(Stack(), backup_then_restore)


def main():
    return run.run()


if __name__ == "__main__":
    sys.exit(main())
