#!/usr/bin/env python3
# run.sh: weight 33
"""test_lost_database.py - alertbridge loses its sqlite file and rebuilds the map from GitHub.

Issues are made through the real binary (posted straight to /v1/webhook): one open, one closed,
one that fired again (a "firing again" comment), and one created seconds before the loss.  Then
alertbridge is stopped, its database deleted, and it is started again.  Before any create for
a key, it must list the repository's issues page by page (state=all, per_page=100; never the
search API, which the fake makes lag behind writes as GitHub's does) and rebuild the rows from
the markers.  The same notifications are re-sent (nothing may happen: no issue, no comment),
then new transitions (applied to the right issues), then a new alert (one new issue).

Two more losses check what the rebuild reads from the comments' transition markers and how a
group without its stored members goes on:
  applied_resolve_survives_the_rebuild  a resolve applied before the loss (a "resolved" comment
      with auto_close: false; a close a person then undid by reopening) is not applied again when
      Alertmanager re-sends it: no second comment, no close of the reopened issue;
  group_episode_survives_the_rebuild    issue_per: group: a group issue a person closed while
      the group fired stays closed when, after the loss, one of its alerts resolved and fired
      again (the same episode of the group); a group that resolved before the loss and fires
      again after it is a new episode: with auto_close: false (its resolved comment) a "firing
      again" comment, and one whose resolve met an issue a person had closed (no comment; its
      body's marker, rewritten with the member list, says it) is reopened.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Prints a timeline, the figures, and last
"N passed, N failed".
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
from harness import ALERTBRIDGE  # noqa: E402
from harness import (Proc, Runner, check, eq, event, free_port, http, iso_ms,  # noqa: E402
                     poll, print_tail, wait_ready)
from harness import run_cases, TEMPLATE_FILES, write_config  # noqa: E402
from harness import issues_by_key, prom_alert  # noqa: E402
from harness import delete_database, run_on_stack  # noqa: E402

REPO = "acme/lostdb"
GH_TOKEN = "ghs_lostDbToken0123456789"
HOOK_TOKEN = "lostdb-webhook-secret"
RECEIVER = "bridge"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
FILLER = 130  # unrelated issues, so the rebuild must read more than one page of 100

run = Runner()


class Stack:
    def __init__(self, receivers=None):
        self.dir = tempfile.mkdtemp(prefix="ab-lostdb-")
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO], search_lag_s=120).start()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.config = write_config(
            self.dir, self.port,
            "github:\n"
            "  api_url: %s\n"
            "  token_file: github-token\n"
            "  content_per_minute: 60\n"
            "  timeout: 5s\n"
            "  body_update_interval: 1s\n"
            "receivers:\n" % self.gh.url +
            "".join("  - name: %s\n"
                    "    repo: %s\n"
                    "    reopen_window: 7d\n"
                    "    templates: {title: title.mustache, body: body.mustache}\n%s"
                    % (name, REPO, extra)
                    for name, extra in receivers or [(RECEIVER, "    auto_close: true\n")]),
            (("webhook-token", HOOK_TOKEN), ("github-token", GH_TOKEN)) + TEMPLATE_FILES)
        self.ab = None
        self.runs = 0

    def start(self):
        self.runs += 1
        self.ab = Proc("alertbridge#%d" % self.runs, [ALERTBRIDGE, "serve",
                                                       "--config.file=" + self.config],
                       os.path.join(self.dir, "alertbridge.log"), cwd=self.dir,
                       env={k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"})
        self.ab.start()
        wait_ready(self.ab, self.url + "/-/ready", timeout_s=30)

    def stop(self):
        if self.ab:
            eq(self.ab.stop(), 0, "alertbridge exits 0 on SIGTERM")
            self.ab = None

    def cleanup(self):
        try:
            if self.ab:
                self.ab.stop()
        finally:
            self.gh.stop()
            shutil.rmtree(self.dir, ignore_errors=True)

    def post(self, status, alerts, receiver=RECEIVER, group_key="{}:{}"):
        payload = {"version": "4", "status": status, "receiver": receiver,
                   "groupKey": group_key, "truncatedAlerts": 0, "groupLabels": {},
                   "commonLabels": {}, "commonAnnotations": {},
                   "externalURL": "http://am.example:9093", "alerts": alerts}
        st, _, body = http("POST", self.url + "/v1/webhook", payload,
                           headers={"Authorization": "Bearer " + HOOK_TOKEN})
        eq(st, 200, "webhook acknowledged")

    def lose_database(self):
        self.stop()
        delete_database(self.db)
        event("database deleted")
        self.gh.get_requests(clear=True)
        self.start()

    def idle(self, events):
        """Wait until this alertbridge process finished `events` events in all (bounded)."""
        def finished():
            st, _, text = http("GET", self.url + "/metrics")
            n = sum(float(v) for v in re.findall(
                r"^alertbridge_bridge_events_total\{[^}]*\} (\S+)$", text, re.M))
            return st == 200 and n >= events
        poll(finished, "%d events finished" % events, timeout_s=60, interval_s=0.2)


alert = prom_alert


def resolved(a):
    return dict(a, status="resolved", endsAt=iso_ms(time.time() - 1))


def by_key(gh):
    return issues_by_key(gh.issues(REPO))


def snapshot(gh):
    """(number, state, state_reason, comment count) per key."""
    return {k: [(i["number"], i["state"], i["state_reason"], len(gh.comments(REPO, i["number"])))
                for i in v] for k, v in by_key(gh).items()}


@run.case
def rebuild_after_the_database_is_deleted():
    s = Stack()
    try:
        body = lost_database(s)
    except BaseException:
        print_tail("alertbridge log (last 80 lines)", s.ab.tail(80) if s.ab else
                   open(os.path.join(s.dir, "alertbridge.log")).read()[-6000:])
        reqs = s.gh.get_requests()
        print_tail("fake github requests (last 60)", "\n".join(
            "%.2f %s %s %s -> %s" % (r["time"], r["method"], r["path"], r["query"], r["status"])
            for r in reqs[-60:]))
        raise
    finally:
        s.cleanup()
    return body


def lost_database(s):
    # Unrelated issues first (oldest), so the keys live on the second page of the list.
    for n in range(FILLER):
        st, _, _ = http("POST", s.gh.url + "/repos/%s/issues" % REPO,
                        {"title": "filler %d" % n, "body": "not alertbridge's"},
                        headers={"Authorization": "Bearer " + GH_TOKEN,
                                 "User-Agent": "test"})
        eq(st, 201, "filler issue")
    s.start()
    t0 = time.time() - 600
    a_open = alert("LostOpen", t0)
    b_closed = alert("LostClosed", t0)
    c_refired = alert("LostRefired", t0)
    s.post("firing", [a_open, b_closed, c_refired])
    s.idle(3)
    b_resolve = resolved(b_closed)
    s.post("resolved", [b_resolve])
    c2 = dict(c_refired, startsAt=iso_ms(t0 + 300))  # a new episode while the issue is open
    s.post("firing", [c2])
    s.idle(5)
    d_late = alert("LostLate", t0 + 500)
    s.post("firing", [d_late])
    poll(lambda: d_late["fingerprint"] in by_key(s.gh), "the late issue exists", timeout_s=30)
    s.stop()  # seconds after the last create
    before = snapshot(s.gh)
    keys = [x["fingerprint"] for x in (a_open, b_closed, c_refired, d_late)]
    eq(sorted(before), sorted(keys), "one issue per alert before the loss")
    eq([before[k][0][1:] for k in keys],
       [("open", None, 0), ("closed", "completed", 1), ("open", None, 1), ("open", None, 0)],
       "states and comments before the loss (open, closed, refired, late)")
    delete_database(s.db)
    event("database deleted")
    s.gh.get_requests(clear=True)

    s.start()
    # The same notifications again (Alertmanager's repeat, or its retry of what we lost).
    s.post("firing", [a_open, c2, d_late])
    s.post("resolved", [b_resolve])  # the same notification: same endsAt
    s.idle(4)
    time.sleep(1.5)
    reqs = s.gh.get_requests()
    eq([(r["method"], r["path"]) for r in reqs if r["method"] in MUTATING], [],
       "re-sent notifications change nothing on GitHub (no create, no comment)")
    lists = [r for r in reqs if r["method"] == "GET" and r["path"] == "/repos/%s/issues" % REPO]
    check(len(lists) >= 2, "the rebuild read the list page by page", len(lists))
    eq((lists[0]["query"].get("state"), lists[0]["query"].get("per_page")), ("all", "100"),
       "the rebuild lists state=all, per_page=100")
    check(not [r for r in reqs if r["path"].startswith("/search/")], "search never used")
    eq(snapshot(s.gh), before, "GitHub unchanged")
    out = subprocess.run([ALERTBRIDGE, "map", "list", "--config.file=" + s.config], cwd=s.dir,
                         capture_output=True, text=True, timeout=10)
    for k in keys:
        line = [x for x in out.stdout.splitlines() if k in x]
        check(line and ("%s#%d" % (REPO, before[k][0][0])) in line[0],
              "map list shows the rebuilt row of %s" % k, out.stdout)

    # New transitions go to the right issues.
    s.post("resolved", [resolved(a_open)])
    b2 = dict(b_closed, startsAt=iso_ms(time.time()))  # a new episode after the resolve
    s.post("firing", [b2])
    s.post("resolved", [resolved(c2)])
    e_new = alert("LostNew", time.time() - 5)
    s.post("firing", [e_new])
    s.idle(8)
    time.sleep(1.5)
    after = snapshot(s.gh)
    ka, kb, kc, kd = keys
    eq(after[ka], [(before[ka][0][0], "closed", "completed", 1)], "open issue closed")
    eq(after[kb], [(before[kb][0][0], "open", "reopened", 2)], "closed issue reopened")
    eq(after[kc], [(before[kc][0][0], "closed", "completed", 2)], "refired issue closed")
    eq(after[kd], before[kd], "late issue untouched")
    eq(len(after[e_new["fingerprint"]]), 1, "a new alert makes one new issue")
    dup = sum(len(v) - 1 for v in by_key(s.gh).values())
    eq(dup, 0, "duplicate issues")
    print("figures: alerts 5, transitions after the loss 8 (4 re-sent, 4 new), issues %d, "
          "duplicates %d, lost 0, list pages read %d" % (len(after), dup, len(lists)),
          flush=True)


def with_stack(receivers, fn):
    run_on_stack(Stack(receivers), fn)


def mutating(gh):
    """The mutating requests, but for a group's body rewrite (its member list)."""
    return [(r["method"], r["path"]) for r in gh.get_requests() if r["method"] in MUTATING
            and not (r["method"] == "PATCH" and set(r["body"] or {}) == {"body"})]


@run.case
def applied_resolve_survives_the_rebuild():
    def body(s):
        s.start()
        t0 = time.time() - 600
        kept = alert("KeptOpen", t0)        # auto_close: false: resolved by a comment only
        undone = alert("CloseUndone", t0)   # closed on resolve, then reopened by a person
        s.post("firing", [kept], receiver="keep")
        s.post("firing", [undone])
        s.idle(2)
        kept_res, undone_res = resolved(kept), resolved(undone)
        s.post("resolved", [kept_res], receiver="keep")
        s.post("resolved", [undone_res])
        s.idle(4)
        nk, nu = by_key(s.gh)[kept["fingerprint"]][0]["number"], \
            by_key(s.gh)[undone["fingerprint"]][0]["number"]
        s.gh.human_reopen(REPO, nu)
        before = snapshot(s.gh)
        eq([before[kept["fingerprint"]], before[undone["fingerprint"]]],
           [[(nk, "open", None, 1)], [(nu, "open", "reopened", 1)]],
           "before the loss: a resolved comment; a close a person undid")
        s.lose_database()
        s.post("resolved", [kept_res], receiver="keep")  # Alertmanager re-sends them
        s.post("resolved", [undone_res])
        s.idle(2)
        time.sleep(1.0)
        eq(mutating(s.gh), [], "re-sent resolves change nothing (no comment, no close)")
        eq(snapshot(s.gh), before, "GitHub unchanged")

    with_stack([(RECEIVER, "    auto_close: true\n"), ("keep", "    auto_close: false\n")],
               body)


@run.case
def group_episode_survives_the_rebuild():
    def body(s):
        s.start()
        t0 = time.time() - 900
        x, y = alert("GroupX", t0), alert("GroupY", t0 + 10)
        u, v = alert("GroupU", t0), alert("GroupV", t0 + 10)
        z = alert("GroupZ", t0)
        closed_gk, kept_gk, quiet_gk = '{}:{g="closed"}', '{}:{g="kept"}', '{}:{g="quiet"}'
        s.post("firing", [x, y], receiver="groups", group_key=closed_gk)
        s.post("firing", [u, v], receiver="groups-keep", group_key=kept_gk)
        s.post("firing", [z], receiver="groups", group_key=quiet_gk)
        s.idle(3)
        s.post("resolved", [resolved(u), resolved(v)], receiver="groups-keep",
               group_key=kept_gk)
        s.idle(4)
        issues = sorted(s.gh.issues(REPO), key=lambda i: i["number"])
        eq(len(issues), 3, "one issue per group")
        nc, nk, nq = issues[0]["number"], issues[1]["number"], issues[2]["number"]
        s.gh.human_close(REPO, nc, "completed")  # while the group fires
        # A person closes Z's issue while it fires; then the group resolves: no comment on the
        # closed issue, only its body's member list (and marker) rewritten.
        s.gh.human_close(REPO, nq, "completed")
        s.post("resolved", [resolved(z)], receiver="groups", group_key=quiet_gk)
        s.idle(5)
        poll(lambda: "event=resolved-" in next(i["body"] for i in s.gh.issues(REPO)
                                                if i["number"] == nq),
             "the resolved group's body rewritten", timeout_s=30, interval_s=0.2)
        before = snapshot(s.gh)
        eq(sorted(before.values()), sorted([[(nc, "closed", "completed", 0)],
                                            [(nk, "open", None, 1)],
                                            [(nq, "closed", "completed", 0)]]),
           "before the loss: groups closed by a person, a group resolved (comment)")
        s.lose_database()
        # X resolved and fired again while Y kept the group firing: the same episode.
        x2 = dict(x, startsAt=iso_ms(t0 + 300))
        s.post("firing", [x2, y], receiver="groups", group_key=closed_gk)
        s.idle(1)
        time.sleep(1.0)
        eq(mutating(s.gh), [], "the group a person closed is left closed (no reopen)")
        eq(snapshot(s.gh), before, "GitHub unchanged (but for the body's member list)")
        # The resolved group fires again: a new episode.
        s.post("firing", [dict(u, startsAt=iso_ms(time.time()))], receiver="groups-keep",
               group_key=kept_gk)
        s.idle(2)
        time.sleep(1.0)
        # Z fires again after its resolve (known from its body only): a new episode, reopened.
        s.post("firing", [dict(z, startsAt=iso_ms(time.time()))], receiver="groups",
               group_key=quiet_gk)
        s.idle(3)
        time.sleep(1.0)
        after = snapshot(s.gh)
        eq(sorted(after.values()), sorted([[(nc, "closed", "completed", 0)],
                                           [(nk, "open", None, 2)],
                                           [(nq, "open", "reopened", 1)]]),
           "the resolved groups firing again: a 'firing again' comment, a reopen")

    with_stack([("groups", "    issue_per: group\n    auto_close: true\n"),
                ("groups-keep", "    issue_per: group\n    auto_close: false\n")], body)


def main():
    return run_cases(run, ALERTBRIDGE)


if __name__ == "__main__":
    sys.exit(main())
