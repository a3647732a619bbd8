#!/usr/bin/env python3
# run.sh: weight 7
"""test_repo_missing.py - a repository that does not exist is dead-lettered, not retried
forever (issue #5).

The real binary against the fake GitHub, one receiver whose repo is acme/good; alerts name
other repositories with the alertbridge_repo label.  An alert for acme/missing (no such
repository: the fake answers 404 on every endpoint under it, GET /repos/acme/missing included)
is dead-lettered with "repository acme/missing not found or no access" within bounded time while
the alert beside it gets its issue; more alerts for the same repository are dead-lettered from
the cached answer without more calls; a 5xx on GET /repos/{o}/{r} keeps the event queued (only
a 404 from the repository endpoint counts); once the repository exists, `alertbridge map retry
KEY` re-queues the key's dead events and the issue is made.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, eq, event,  # noqa: E402
                     http, poll, print_tail, webhook_payload)
from harness import event_of, event_state, metric_sample, numbered_alert  # noqa: E402
from harness import run_cases  # noqa: E402

GOOD = "acme/good"
MISSING = "acme/missing"
FLAKY = "acme/flaky"
GH_TOKEN = "ghs_repoMissingToken0123456789"
RECEIVER = "bridge"
REASON = "repository %s not found or no access"

run = Runner()


def alert(n, repo=None):
    return numbered_alert("RepoMissing", 0xfeed00, n, repo)


def metric(ab, name, labels):
    v = metric_sample(http("GET", ab.url + "/metrics")[2], name, labels)
    return 0.0 if v is None else v


def calls_to(gh, repo):
    return [(r["method"], r["path"], r["status"]) for r in gh.get_requests()
            if r["path"] == "/repos/" + repo or r["path"].startswith("/repos/%s/" % repo)]


def map_cmd(ab, *args):
    return subprocess.run([ALERTBRIDGE, "map"] + list(args) + ["--config.file=" + ab.config],
                          cwd=ab.dir, capture_output=True, text=True, timeout=10)


@run.case
def missing_repository_is_dead_lettered_then_retried():
    tmp = tempfile.mkdtemp(prefix="ab-repomissing-")
    gh = FakeGitHub(token=GH_TOKEN, repos=[GOOD]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, GOOD, receiver=RECEIVER)
    try:
        ab.start()
        good, bad = alert(1), alert(2, MISSING)
        t0 = time.time()
        eq(ab.post(webhook_payload(RECEIVER, [good, bad]))[0], 200, "webhook")
        poll(lambda: len(gh.issues(GOOD)) == 1, "the good alert's issue", timeout_s=20)
        poll(lambda: event_state(ab.db, bad["fingerprint"]) == "dead",
             "the missing repository's event dead-lettered", timeout_s=20)
        event("dead-lettered after %.1f s" % (time.time() - t0))
        eq(event_of(ab.db, bad["fingerprint"]), ("dead", REASON % MISSING), "state and reason")
        first = calls_to(gh, MISSING)
        event("calls for %s: %s" % (MISSING, first))
        check(("GET", "/repos/" + MISSING, 404) in first,
              "GitHub was asked for the repository (GET /repos/{o}/{r})", first)
        check(len(first) <= 4, "a bounded number of calls", first)
        eq(metric(ab, "alertbridge_bridge_dead_letters_total",
                  'receiver="%s",reason="repo_not_found"' % RECEIVER), 1.0, "metric")
        # The content budget (issue #6) shows what the create used of both windows.
        eq(metric(ab, "alertbridge_github_content_budget_remaining", 'window="hour"'), 499.0,
           "hourly content budget left after one create")
        eq(metric(ab, "alertbridge_github_content_budget_remaining", 'window="minute"'), 79.0,
           "per-minute content budget left after one create")

        # More alerts for it: dead-lettered from the cached answer, no more calls.
        more = [alert(n, MISSING) for n in (3, 4, 5)]
        eq(ab.post(webhook_payload(RECEIVER, more))[0], 200, "webhook, three more")
        for a in more:
            poll(lambda: event_state(ab.db, a["fingerprint"]) == "dead",
                 "%s dead-lettered" % a["fingerprint"], timeout_s=20)
            eq(event_of(ab.db, a["fingerprint"])[1], REASON % MISSING, "reason")
        eq(calls_to(gh, MISSING), first, "no call for the repository known missing")
        eq(metric(ab, "alertbridge_bridge_dead_letters_total",
                  'receiver="%s",reason="repo_not_found"' % RECEIVER), 4.0, "metric")
        listed = map_cmd(ab, "list")
        check(bad["fingerprint"] in listed.stdout and REASON % MISSING in listed.stdout,
              "map list shows the dead letter with its reason", listed.stdout)

        # A 5xx on GET /repos/{o}/{r} is no answer: the event stays queued.
        gh.add_fault(method="GET", path="/repos/" + FLAKY, count=5, status=503,
                     headers={"Retry-After": "0"})
        flaky = alert(6, FLAKY)
        eq(ab.post(webhook_payload(RECEIVER, [flaky]))[0], 200, "webhook, flaky")
        poll(lambda: len([c for c in calls_to(gh, FLAKY) if c[2] == 503]) == 5,
             "five 503 answers on GET /repos/%s" % FLAKY, timeout_s=20)
        time.sleep(0.3)
        st = event_of(ab.db, flaky["fingerprint"])
        eq(st[0], "pending", "after 5xx on the repository endpoint the event is kept")
        poll(lambda: event_state(ab.db, flaky["fingerprint"]) == "dead",
             "the flaky repository, answered 404 at last, dead-lettered", timeout_s=30)

        # The repository appears; map retry KEY re-queues that key's dead events only.
        gh.add_repo(MISSING)
        out = map_cmd(ab, "retry", bad["fingerprint"], "--receiver=" + RECEIVER)
        eq(out.returncode, 0, "map retry exits 0: " + out.stderr)
        check("1" in out.stdout, "map retry says how many it re-queued", out.stdout)
        poll(lambda: len(gh.issues(MISSING)) == 1, "the issue in the repository now there",
             timeout_s=30)
        # the issue is made before its event is marked done: wait for the mark (ASan is slow)
        poll(lambda: event_of(ab.db, bad["fingerprint"])[0] == "done",
             "the re-queued event is done", timeout_s=10)
        eq([event_of(ab.db, a["fingerprint"])[0] for a in more], ["dead"] * 3,
           "the other keys' dead letters stay")
        # SIGHUP re-queues every dead letter of a missing repository (the reload's promise).
        ab.proc.p.send_signal(signal.SIGHUP)
        poll(lambda: len(gh.issues(MISSING)) == 4, "SIGHUP: the three other keys' issues",
             timeout_s=30)
        poll(lambda: [event_of(ab.db, a["fingerprint"])[0] for a in more] == ["done"] * 3,
             "their events done", timeout_s=10)
        check(re.search(r'msg="dead letters re-queued" events=[1-9]', ab.tail(200)),
              "SIGHUP's re-queue is logged", ab.tail(20))
        out = map_cmd(ab, "retry", "0123456789abcdef", "--receiver=" + RECEIVER)
        eq(out.returncode, 1, "map retry of a key without dead events exits 1")
        out = map_cmd(ab, "retry", bad["fingerprint"])
        eq(out.returncode, 2, "map retry without --receiver is a usage error")
        eq(ab.stop(), 0, "alertbridge exits 0 on SIGTERM")
    except BaseException:
        print_tail("alertbridge log", ab.tail(60))
        print_tail("fake github requests", "\n".join(
            "%s %s -> %s" % (r["method"], r["path"], r["status"]) for r in gh.get_requests()))
        raise
    finally:
        if ab.alive():
            ab.stop()
        gh.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    return run_cases(run)


if __name__ == "__main__":
    sys.exit(main())
