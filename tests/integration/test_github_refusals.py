#!/usr/bin/env python3
# run.sh: weight 7
"""test_github_refusals.py - GitHub's 403s that are no rate limit are dead-lettered with GitHub's
message, counted by reason, and `map retry` works once the cause is fixed (issue 18 item 5).

The real binary against the fake GitHub (fake_github.py models each 403 with the message GitHub
sends).  Before the fix each was ERR_AUTH: retried with backoff up to 10 minutes forever, logged
"github rejected the credentials", alertbridge_github_unauthorized_total 0.

locked_issue_comment_dead_lettered_then_retried
    An alert's issue is locked; its resolve's comment is answered 403 "Unable to create comment
    because issue is locked.": one request, no retry; the event is dead with that message;
    alertbridge_github_forbidden_total{reason="locked"} 1, dead letters {reason="forbidden"} 1,
    unauthorized 0, nothing logged as rejected credentials.  Unlocked, `map retry KEY`: the
    comment is made and the issue closed.
archived_and_read_only_dead_lettered_then_retried
    An alert for an archived repository: its create is answered 403 "Repository was archived so
    is read-only." and dead-lettered (reason archived); a read-only token's create 403
    "Resource not accessible by personal access token" (reason permission).  Both fixed, `map
    retry` of each key makes its issue.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, eq, event,  # noqa: E402
                     http, iso_ms, poll, print_tail, webhook_payload)
from harness import event_of, event_state, metric_sample, numbered_alert  # noqa: E402
from harness import run_cases  # noqa: E402

GOOD = "acme/good"
OLD = "acme/old"
GH_TOKEN = "ghs_refusalsToken0123456789"
RECEIVER = "bridge"
LOCKED = "Unable to create comment because issue is locked."
ARCHIVED = "Repository was archived so is read-only."
NO_WRITE = "Resource not accessible by personal access token"

run = Runner()


def alert(n, repo=None):
    return numbered_alert("Refused", 0xbeef00, n, repo)


def resolved(a):
    return dict(a, status="resolved", endsAt=iso_ms(time.time() - 1))


def metric(ab, name, labels=None):
    return metric_sample(http("GET", ab.url + "/metrics")[2], name, labels)


def map_retry(ab, key):
    out = subprocess.run([ALERTBRIDGE, "map", "retry", key, "--receiver=" + RECEIVER,
                          "--config.file=" + ab.config], cwd=ab.dir, capture_output=True,
                         text=True, timeout=10)
    eq(out.returncode, 0, "map retry exits 0: " + out.stderr)


def writes(gh, repo, path_re=".*"):
    return [(r["method"], r["path"], r["status"]) for r in gh.get_requests()
            if r["method"] != "GET" and r["path"].startswith("/repos/%s/" % repo)
            and re.fullmatch(path_re, r["path"])]


def check_refused(ab, key, message, reason, dead_letters):
    poll(lambda: event_state(ab.db, key) == "dead", "the refused event dead-lettered",
         timeout_s=20)
    st, why = event_of(ab.db, key)
    check(why.endswith("403 forbidden: " + message), "dead with GitHub's message", why)
    eq(metric(ab, "alertbridge_github_forbidden_total", 'reason="%s"' % reason), 1.0,
       "forbidden_total{reason=%s}" % reason)
    eq(metric(ab, "alertbridge_bridge_dead_letters_total",
              'receiver="%s",reason="forbidden"' % RECEIVER), float(dead_letters),
       "dead letters {reason=forbidden}")
    eq(metric(ab, "alertbridge_github_unauthorized_total"), 0.0, "no credentials rejected")
    check("github rejected the credentials" not in ab.tail(400),
          "not logged as rejected credentials", ab.tail(10))


class Case:
    def __init__(self, repos):
        self.tmp = tempfile.mkdtemp(prefix="ab-refusals-")
        self.gh = FakeGitHub(token=GH_TOKEN, repos=repos).start()
        self.ab = Alertbridge(self.tmp, self.gh.url, GH_TOKEN, GOOD, receiver=RECEIVER)

    def __enter__(self):
        self.ab.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            print_tail("alertbridge log", self.ab.tail(60))
            print_tail("fake github requests", "\n".join(
                "%s %s -> %s" % (r["method"], r["path"], r["status"])
                for r in self.gh.get_requests()))
        if self.ab.alive():
            self.ab.stop()
        self.gh.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False


@run.case
def locked_issue_comment_dead_lettered_then_retried():
    with Case([GOOD]) as c:
        ab, gh = c.ab, c.gh
        a = alert(1)
        eq(ab.post(webhook_payload(RECEIVER, [a]))[0], 200, "webhook, firing")
        poll(lambda: event_state(ab.db, a["fingerprint"]) == "done", "the issue made", timeout_s=20)
        number = gh.issues(GOOD)[0]["number"]
        gh.lock_issue(GOOD, number)
        eq(metric(ab, "alertbridge_github_forbidden_total", 'reason="locked"'), 0.0,
           "the series is there before the first refusal")
        eq(ab.post(webhook_payload(RECEIVER, [resolved(a)]))[0], 200, "webhook, resolved")
        check_refused(ab, a["fingerprint"], LOCKED, "locked", 1)
        eq(writes(gh, GOOD)[1:],
           [("POST", "/repos/%s/issues/%d/comments" % (GOOD, number), 403)],
           "after the create: one comment refused, not retried, no close")
        eq(gh.issues(GOOD)[0]["state"], "open", "the issue stays open")
        gh.lock_issue(GOOD, number, False)
        map_retry(ab, a["fingerprint"])
        poll(lambda: gh.issues(GOOD)[0]["state"] == "closed", "map retry: closed",
             timeout_s=20)
        eq(len(gh.comments(GOOD, number)), 1, "the resolve's comment is made once")
        eq(ab.stop(), 0, "alertbridge exits 0 on SIGTERM")


@run.case
def archived_and_read_only_dead_lettered_then_retried():
    with Case([GOOD, OLD]) as c:
        ab, gh = c.ab, c.gh
        gh.archive(OLD)
        old = alert(2, OLD)
        eq(ab.post(webhook_payload(RECEIVER, [old]))[0], 200, "webhook, archived repository")
        check_refused(ab, old["fingerprint"], ARCHIVED, "archived", 1)
        eq(writes(gh, OLD), [("POST", "/repos/%s/issues" % OLD, 403)], "one create refused")
        gh.set_read_only(GH_TOKEN)
        ro = alert(3)
        eq(ab.post(webhook_payload(RECEIVER, [ro]))[0], 200, "webhook, read-only token")
        poll(lambda: event_state(ab.db, ro["fingerprint"]) == "dead", "dead-lettered",
             timeout_s=20)
        check(event_of(ab.db, ro["fingerprint"])[1].endswith(NO_WRITE), "GitHub's message",
              event_of(ab.db, ro["fingerprint"]))
        eq(metric(ab, "alertbridge_github_forbidden_total", 'reason="permission"'), 1.0,
           "forbidden_total{reason=permission}")
        gh.archive(OLD, False)
        gh.set_read_only(GH_TOKEN, False)
        map_retry(ab, old["fingerprint"])
        map_retry(ab, ro["fingerprint"])
        poll(lambda: len(gh.issues(OLD)) == 1 and len(gh.issues(GOOD)) == 1,
             "map retry: both issues made", timeout_s=30)
        poll(lambda: [event_state(ab.db, x["fingerprint"]) for x in (old, ro)] == ["done"] * 2,
             "both events done", timeout_s=10)
        eq(ab.stop(), 0, "alertbridge exits 0 on SIGTERM")


def main():
    return run_cases(run)


if __name__ == "__main__":
    sys.exit(main())
