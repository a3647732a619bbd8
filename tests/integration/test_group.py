#!/usr/bin/env python3
# run.sh: weight 10
"""test_group.py - issue_per: group end to end: the real alertbridge binary receives the real
group payloads of tests/fixtures/alertmanager/ (03 group of 3 firing, 04 one of them resolved,
04b all resolved) and talks to the fake GitHub.

  group_lifecycle  03 (the member "app" started before the others) -> one issue whose body lists
                   the three members as unchecked tasks; 04, then 04 without "app" (Alertmanager
                   drops a resolved alert once notified) -> no comment at all (no "firing
                   again": the group kept firing), and after github.body_update_interval one body
                   update with "app" checked, the two others not, the key marker last; the two
                   webhooks are coalesced into that one update; 04b -> the resolved comment and
                   the close (completed); 03 again with a later startsAt -> the same issue
                   reopened (a new episode), its body listing the new episode's members.

Env: ALERTBRIDGE_BIN (default ./alertbridge), E2E_ONLY=name,name.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import copy
import json
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import Alertbridge, check, eq, event, poll, print_tail  # noqa: E402

REPO = "acme/group-alerts"
GH_TOKEN = "ghs_groupGitHubToken0123456789"
RECEIVER = "alert-service"  # the fixtures' receiver
INTERVAL_S = 2
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                        "alertmanager")
T_EARLY = "2026-11-21T00:40:00.000Z"  # "app" started before the two others
T_AGAIN = "2026-11-21T01:30:00.000Z"  # the next episode, after 04b's endsAt

from harness import Runner, only_from_env  # noqa: E402

run = Runner()


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def by_container(p):
    return {a["labels"]["container"]: a for a in p["alerts"]}


def task_lines(body):
    """{container: checked?} of the body's Markdown task list."""
    out = {}
    for m in re.finditer(r"^- \[( |x)\] .*container=(\w+)", body or "", re.M):
        out[m.group(2)] = m.group(1) == "x"
    return out


def mutating(gh):
    return [r for r in gh.get_requests() if r["method"] in ("POST", "PATCH")]


@run.case
def group_lifecycle():
    tmp = tempfile.mkdtemp(prefix="ab-group-")
    gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, REPO, receiver=RECEIVER,
                     extra_github="  body_update_interval: %ds\n" % INTERVAL_S)
    with open(ab.config) as f:
        text = f.read()
    with open(ab.config, "w") as f:
        f.write(text.replace("    repo: %s\n" % REPO, "    repo: %s\n    issue_per: group\n"
                             % REPO))
    ok = False
    try:
        ab.start()
        fired = fixture("03_group_of_3_firing.json")
        by_container(fired)["app"]["startsAt"] = T_EARLY
        partly = fixture("04_group_partially_resolved.json")
        by_container(partly)["app"]["startsAt"] = T_EARLY
        dropped = copy.deepcopy(partly)
        dropped["alerts"] = [a for a in dropped["alerts"] if a["labels"]["container"] != "app"]

        eq(ab.post(fired)[0], 200, "03 accepted")
        poll(lambda: len(gh.issues(REPO)) == 1, "the group's issue", timeout_s=20)
        issue = gh.issues(REPO)[0]
        n = issue["number"]
        eq(task_lines(issue["body"]), {"app": False, "proxy": False, "sidecar": False},
           "created body: every member unchecked")
        check(issue["body"].rstrip().endswith("-->") and
              re.search(r"<!-- alertbridge:key=[0-9a-f]{64} -->$", issue["body"].rstrip()),
              "created body ends with the key marker", issue["body"][-200:])
        event("issue #%d created" % n)

        eq(ab.post(partly)[0], 200, "04 accepted")
        eq(ab.post(dropped)[0], 200, "04 without app accepted")
        sent = time.time()
        poll(lambda: task_lines(gh.issues(REPO)[0]["body"]) ==
             {"app": True, "proxy": False, "sidecar": False},
             "body updated: app checked, proxy and sidecar not", timeout_s=20)
        took = time.time() - sent
        event("body updated after %.1f s" % took)
        body = gh.issues(REPO)[0]["body"]
        check(re.search(r"<!-- alertbridge:key=[0-9a-f]{64} -->$", body.rstrip()),
              "updated body ends with the key marker", body[-200:])
        # The receiver's marker stays too, or a rebuild would let every receiver of the
        # repository import the group's issue (it was lost on body updates).
        check(re.search(r"<!-- alertbridge:receiver=%s --> <!-- alertbridge:key=[0-9a-f]{64} "
                        r"-->$" % re.escape(RECEIVER), body.rstrip()),
              "updated body keeps the receiver marker", body[-200:])
        time.sleep(INTERVAL_S + 1)  # room for a second (wrong) update or comment
        eq(gh.comments(REPO, n), [], "no comment while the group keeps firing")
        patches = [r for r in mutating(gh) if r["method"] == "PATCH" and
                   r["path"] == "/repos/%s/issues/%d" % (REPO, n)]
        eq(len(patches), 1, "two webhooks coalesced into one body update")
        check(set(patches[0]["body"]) == {"body"}, "a body update sends only the body",
              patches[0]["body"].keys())
        eq(len(gh.issues(REPO)), 1, "still one issue")

        eq(ab.post(fixture("04b_group_all_resolved.json"))[0], 200, "04b accepted")
        poll(lambda: gh.issues(REPO)[0]["state"] == "closed", "closed when all resolved",
             timeout_s=20)
        eq(gh.issues(REPO)[0]["state_reason"], "completed", "closed as completed")
        comments = gh.comments(REPO, n)
        eq(len(comments), 1, "one comment: the resolved one")
        check("resolved" in comments[0]["body"].lower(), "the resolved comment",
              comments[0]["body"])
        poll(lambda: all(task_lines(gh.issues(REPO)[0]["body"]).values()),
             "body updated: every member checked", timeout_s=20)

        again = fixture("03_group_of_3_firing.json")
        for a in again["alerts"]:
            a["startsAt"] = T_AGAIN
        again["alerts"] = again["alerts"][1:]  # a new episode of proxy and sidecar only
        eq(ab.post(again)[0], 200, "03 again accepted")
        poll(lambda: gh.issues(REPO)[0]["state"] == "open", "reopened: a new episode",
             timeout_s=20)
        eq(len(gh.issues(REPO)), 1, "reopened, no second issue")
        poll(lambda: len(gh.comments(REPO, n)) == 2, "the reopen comment", timeout_s=20)
        poll(lambda: task_lines(gh.issues(REPO)[0]["body"]) ==
             {"proxy": False, "sidecar": False},
             "body lists the new episode's members, unchecked", timeout_s=20)
        ok = True
    finally:
        ab.stop()
        gh.stop()
        if not ok:
            print_tail("alertbridge log", ab.tail(80))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run.run(only=only_from_env("E2E_ONLY")))
