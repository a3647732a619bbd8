#!/usr/bin/env python3
# run.sh: weight 11
"""test_github_costs.py - what each transition of an alert costs on GitHub (issue 9 items 3, 4).

The real binary against the fake GitHub, whose request log is counted per transition:
  transitions_cost_the_goal      after the first event of the repository (which rebuilds the
      map once), a create is 1 call, a repeat none, a resolve and a re-fire each one conditional
      read (If-None-Match with the ETag the map row kept, answered 304, not counted in
      x-ratelimit-used) and their two mutations; no search, ever.  A person's change of the
      issue makes the next read a 200 (a new ETag), and it is noticed;
  rebuild_lists_only_its_own_issues  a repository with 250 issues of a person and alertbridge's
      own: after the database is lost the rebuild lists only issues opened by the token's
      login (GET /user once, then creator=LOGIN), one page, says so in the log (pages=1), and
      finds its issue (the resolve closes it, nothing new is made);
  rebuild_without_a_login_filters_by_labels  GET /user refused (as for a GitHub App's
      installation token): the list asks for the receiver's fixed labels (labels=alert) instead.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Prints a timeline, the figures, and last
"N passed, N failed".
"""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertbridge, Runner, check, eq, event, iso_ms, poll,  # noqa: E402
                     webhook_payload)
from harness import stacks_run  # noqa: E402

REPO = "acme/costs"
TOKEN = "ghs_costsToken0123456789"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")

run = Runner()
STACKS = []


def stack(receivers_yaml=None):
    d = tempfile.mkdtemp(prefix="ab-costs-")
    gh = FakeGitHub(token=TOKEN, repos=[REPO], search_lag_s=120).start()
    ab = Alertbridge(d, gh.url, TOKEN, REPO, log_level="debug", receivers_yaml=receivers_yaml)
    STACKS.append((d, gh, ab))
    return gh, ab


def alert(fp, status="firing", starts=None, ends=None):
    a = {"fingerprint": fp, "status": status,
         "labels": {"alertname": "Cost", "instance": fp, "severity": "warning"},
         "annotations": {"summary": "cost " + fp}, "startsAt": iso_ms(starts or time.time() - 60)}
    if ends:
        a["endsAt"] = iso_ms(ends)
    return a


def events_done(ab):
    from harness import http
    st, _, text = http("GET", ab.url + "/metrics")
    return sum(float(v) for v in re.findall(
        r"^alertbridge_bridge_events_total\{[^}]*\} (\S+)$", text, re.M))


def transition(gh, ab, name, alerts, events=1):
    """Post alerts, wait for the events to be applied, and return the requests it made."""
    done0, used0 = events_done(ab), gh.used
    gh.get_requests(clear=True)
    st, _, _ = ab.post(webhook_payload("bridge", alerts))
    eq(st, 200, "%s acknowledged" % name)
    poll(lambda: events_done(ab) >= done0 + events, "%s applied" % name, timeout_s=30)
    time.sleep(0.5 if events else 1.5)  # a late call would show here
    reqs = gh.get_requests()
    units = gh.used - used0
    event("%-8s %d calls: %s; rate units %d" % (name, len(reqs), " ".join(
        "%s %s%s" % (r["method"], r["path"], "->%s" % r["status"]) for r in reqs), units))
    return reqs, units


@run.case
def transitions_cost_the_goal():
    gh, ab = stack()
    ab.start()
    transition(gh, ab, "first", [alert("a000000000000001")])  # the repository's first event
    t0 = time.time() - 30
    reqs, units = transition(gh, ab, "create", [alert("b000000000000002", starts=t0)])
    eq([(r["method"], r["path"]) for r in reqs], [("POST", "/repos/%s/issues" % REPO)],
       "a create is one call")
    number = reqs[0]["status"] == 201 and [i for i in gh.issues(REPO)
                                           if "b000000000000002" in i["body"]][0]["number"]
    reqs, units = transition(gh, ab, "repeat", [alert("b000000000000002", starts=t0)], events=0)
    eq(reqs, [], "a repeat makes no call")
    res = alert("b000000000000002", "resolved", starts=t0, ends=time.time() - 1)
    reqs, units = transition(gh, ab, "resolve", [res])
    reads = [r for r in reqs if r["method"] == "GET"]
    eq(len(reads), 1, "a resolve reads once")
    eq(reads[0]["path"], "/repos/%s/issues/%d" % (REPO, number), "the issue")
    check(reads[0]["headers"].get("if-none-match", "").startswith('W/"'),
          "the read is conditional (the row's ETag)", reads[0]["headers"])
    eq(reads[0]["status"], 304, "an unchanged issue answers 304")
    eq(sorted(r["method"] for r in reqs if r["method"] in MUTATING), ["PATCH", "POST"],
       "comment + close")
    eq(units, 2, "rate units: the two mutations, the 304 is free")
    t1 = time.time()
    reqs, units = transition(gh, ab, "re-fire", [alert("b000000000000002", starts=t1)])
    reads = [r for r in reqs if r["method"] == "GET"]
    eq([r["status"] for r in reads], [304], "the re-fire's read is conditional and unchanged")
    eq(sorted(r["method"] for r in reqs if r["method"] in MUTATING), ["PATCH", "POST"],
       "reopen + comment")
    eq(units, 2, "rate units: the two mutations")
    check(not [r for r in gh.get_requests() if r["path"].startswith("/search/")], "no search")
    # A person closes it: the read is then a 200 with the new state, and nothing is posted.
    gh.human_close(REPO, number, "not_planned")
    res2 = alert("b000000000000002", "resolved", starts=t1, ends=time.time())
    reqs, units = transition(gh, ab, "resolve after a person's close", [res2])
    eq([r["status"] for r in reqs if r["method"] == "GET"], [200],
       "a changed issue answers 200 to the conditional read")
    eq([r for r in reqs if r["method"] in MUTATING], [], "closed by a person: nothing posted")
    ab.stop()


@run.case
def rebuild_lists_only_its_own_issues():
    gh, ab = stack()
    for n in range(250):
        gh.add_issue(REPO, "a person's issue %d" % n, creator="octocat", labels=["alert"])
    ab.start()
    transition(gh, ab, "create", [alert("c000000000000003")])
    eq(len(gh.issues(REPO)), 251, "one issue made")
    ab.stop()
    os.unlink(ab.db)
    ab.start()
    reqs, units = transition(gh, ab, "resolve after the loss",
                             [alert("c000000000000003", "resolved", ends=time.time() - 1)])
    lists = [r for r in reqs if r["method"] == "GET" and r["path"] == "/repos/%s/issues" % REPO]
    eq(len(lists), 1, "one page listed")
    eq(lists[0]["query"].get("creator"), "alertbridge-bot", "only the login's own issues")
    eq(len([r for r in reqs if r["path"] == "/user"]), 1, "the login read once")
    eq(len(gh.issues(REPO)), 251, "no second issue")
    mine = [i for i in gh.issues(REPO) if "c000000000000003" in (i["body"] or "")]
    eq(mine[0]["state"], "closed", "the resolve closed the rebuilt issue")
    log = open(ab.log_path).read()
    check(re.search(r'msg="map rebuilt from github".* pages=1\b', log), "the log says pages=1",
          [x for x in log.splitlines() if "map rebuilt" in x])
    ab.stop()


@run.case
def rebuild_without_a_login_filters_by_labels():
    gh, ab = stack("  - name: bridge\n    repo: %s\n"
                   "    labels: [alert, \"severity:{{labels.severity}}\"]\n" % REPO)
    for n in range(3):
        gh.add_issue(REPO, "a person's issue %d" % n, creator="octocat")
    gh.add_fault(method="GET", path="/user", count=10, status=403,
                 body={"message": "Resource not accessible by integration"})
    ab.start()
    reqs, _ = transition(gh, ab, "create", [alert("d000000000000004")])
    lists = [r for r in reqs if r["method"] == "GET" and r["path"] == "/repos/%s/issues" % REPO]
    eq(len(lists), 1, "listed once")
    eq(lists[0]["query"].get("labels"), "alert", "the receiver's fixed labels")
    check("creator" not in lists[0]["query"], "no creator without a login", lists[0]["query"])
    ab.stop()


if __name__ == "__main__":
    sys.exit(stacks_run(run, STACKS, 60))
