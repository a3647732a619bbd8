#!/usr/bin/env python3
# run.sh: weight 26
"""test_lifecycle.py - an alert's issue over its whole life, through the real binary against
fake_github: webhooks are posted straight to /v1/webhook, and each case asserts the issues,
comments, labels and map rows that result, and that no event is left retrying.

Cases:
  refire_after_reopen_window_links_a_new_issue  reopen_window 0: every re-fire of a closed
      issue makes a new issue linking the old; the row points at the new one, the next resolve
      closes it.
  dry_run_rows_go_live  rows written in dry-run (no issue) are taken over by the first live
      event: a resolve records the state and calls nothing, a re-fire creates the issue.
  shared_repo_rebuild_keeps_to_its_receiver  two receivers post the same alerts to one
      repository; after the database is lost each rebuilds only its own rows.
  new_labels_are_added_on_a_new_episode  a label that renders differently on a new episode is
      added to the open (or reopened) issue; labels are never removed.
  unassignable_assignee_is_dropped  GitHub answers 422 for an assignee who cannot be assigned:
      the create is made once more without that assignee, counted, and never dead-lettered.

Env: ALERTBRIDGE_BIN (default ./alertbridge), LIFECYCLE_ONLY=name,name.  Prints a timeline
and, last, "N passed, N failed".
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
from harness import (Alertbridge, Runner, check, eq, event, http, iso_ms, poll,  # noqa: E402
                     print_tail)
from harness import config_head, only_from_env, run_cases  # noqa: E402
from harness import prom_alert  # noqa: E402
from harness import delete_database  # noqa: E402

REPO = "acme/lifecycle"
GH_TOKEN = "ghs_lifecycleToken0123456789"
HOOK_TOKEN = "lifecycle-webhook-secret"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
KEY_RE = re.compile(r"<!-- alertbridge:key=([A-Za-z0-9._-]+) -->")

run = Runner()


class Stack:
    """fake GitHub + one alertbridge (harness.Alertbridge, restartable) in a temp dir, with
    receivers: a list of (name, extra YAML lines under the receiver), all posting to REPO."""

    def __init__(self, receivers, dry_run=False, assignable=None):
        self.dir = tempfile.mkdtemp(prefix="ab-lifecycle-")
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO], search_lag_s=120,
                             assignable=assignable).start()
        self.ab = Alertbridge(self.dir, self.gh.url, GH_TOKEN, REPO, hook_token=HOOK_TOKEN,
                              log_level="debug")
        self.url = self.ab.url
        self.db = self.ab.db
        self.config = self.ab.config
        self.receivers = receivers
        self.write_config(dry_run)

    def write_config(self, dry_run):
        """Replace the harness's one-receiver config with this stack's receivers."""
        rcv = "".join("  - name: %s\n    repo: %s\n    auto_close: true\n%s" % (n, REPO, extra)
                      for n, extra in self.receivers)
        with open(self.config, "w") as f:
            f.write(config_head(self.ab.port) +
                    "github:\n"
                    "  api_url: %s\n"
                    "  token_file: github-token\n"
                    "  content_per_minute: 80\n"
                    "  timeout: 5s\n"
                    "  dry_run: %s\n"
                    "receivers:\n%s"
                    "janitor: {enabled: false}\n"
                    % (self.gh.url, "true" if dry_run else "false", rcv))

    def start(self):
        self.ab.start()

    def stop(self):
        eq(self.ab.stop(), 0, "alertbridge exits 0 on SIGTERM")

    def cleanup(self):
        try:
            self.ab.stop()
        finally:
            self.gh.stop()
            shutil.rmtree(self.dir, ignore_errors=True)

    def post(self, receiver, status, alerts):
        payload = {"version": "4", "status": status, "receiver": receiver,
                   "groupKey": "{}:{}", "truncatedAlerts": 0, "groupLabels": {},
                   "commonLabels": {}, "commonAnnotations": {},
                   "externalURL": "http://am.example:9093", "alerts": alerts}
        st, _, body = self.ab.post(payload)
        eq(st, 200, "webhook acknowledged (%s)" % body)

    def metric(self, name, label_filter=""):
        st, _, text = http("GET", self.url + "/metrics")
        eq(st, 200, "GET /metrics")
        return sum(float(v) for labels, v in re.findall(
            r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M)
            if label_filter in (labels or ""))

    def idle(self, events):
        """Wait until this process finished `events` events in all (bounded); then none of
        them may have been retried or dead-lettered."""
        poll(lambda: self.metric("alertbridge_bridge_events_total") >= events,
             "%d events finished" % events, timeout_s=30, interval_s=0.2)
        eq(self.metric("alertbridge_bridge_events_total", 'result="retried"'), 0,
           "events retried")
        eq(self.metric("alertbridge_bridge_events_total", 'result="dead"'), 0,
           "events dead-lettered")

    def cli(self, *args):
        out = subprocess.run([ALERTBRIDGE] + list(args) + ["--config.file=" + self.config],
                             cwd=self.dir, capture_output=True, text=True, timeout=20)
        eq(out.returncode, 0, "alertbridge %s: %s" % (" ".join(args), out.stderr))
        return out.stdout

    def row(self, key, receiver):
        """The map row of (receiver, key) as `alertbridge map show` prints it: {field: value}."""
        text = self.cli("map", "show", key, "--receiver=" + receiver)
        return dict((k.strip(), v.strip()) for k, v in
                    (line.split(":", 1) for line in text.splitlines() if ":" in line))

    def mutations(self):
        return [(r["method"], r["path"]) for r in self.gh.get_requests()
                if r["method"] in MUTATING]


def alert(name, starts, status="firing", ends=None, severity="warning"):
    return prom_alert(name, starts, status, ends, severity=severity)


def resolved(a):
    return dict(a, status="resolved", endsAt=iso_ms(time.time() - 1))


def issues_of(gh, key):
    return [i for i in gh.issues(REPO) if KEY_RE.findall(i["body"] or "")[-1:] == [key]]


def with_stack(fn, *args, **kw):
    s = Stack(*args, **kw)
    try:
        fn(s)
    except BaseException:
        log = os.path.join(s.dir, "alertbridge.log")
        print_tail("alertbridge log (last 60 lines)",
                   open(log).read()[-6000:] if os.path.exists(log) else "(none)")
        print_tail("fake github requests (last 40)", "\n".join(
            "%s %s %s -> %s" % (r["method"], r["path"], r["query"], r["status"])
            for r in s.gh.get_requests()[-40:]))
        raise
    finally:
        s.cleanup()


# ----- 1. a re-fire after reopen_window ---------------------------------------------------------

@run.case
def refire_after_reopen_window_links_a_new_issue():
    with_stack(refire_after_window, [("ops", "    reopen_window: 0s\n")])


def refire_after_window(s):
    s.start()
    a = alert("LifeRefire", time.time() - 600)
    key = a["fingerprint"]
    s.post("ops", "firing", [a])
    s.idle(1)
    s.post("ops", "resolved", [resolved(a)])
    s.idle(2)
    a2 = dict(a, startsAt=iso_ms(time.time()))
    s.post("ops", "firing", [a2])
    s.idle(3)
    got = issues_of(s.gh, key)
    eq([(i["number"], i["state"]) for i in got], [(1, "closed"), (2, "open")],
       "the re-fire made a second issue, the first stays closed")
    check("#1" in got[1]["body"], "the new issue links the old one", got[1]["body"])
    row = s.row(key, "ops")
    eq((row.get("issue"), row.get("previous_issue")), ("2", "1"),
       "the row points at the new issue and remembers the old")
    s.post("ops", "resolved", [resolved(a2)])
    s.idle(4)
    got = issues_of(s.gh, key)
    eq([(i["number"], i["state"]) for i in got], [(1, "closed"), (2, "closed")],
       "the next resolve closed the new issue")
    eq(len(s.gh.comments(REPO, 2)), 1, "one resolve comment on the new issue")
    bad = [p for m, p in s.mutations() if "/issues/0" in p]
    eq(bad, [], "calls on issue 0")


# ----- 2. dry-run, then live ------------------------------------------------------------------

@run.case
def dry_run_rows_go_live():
    with_stack(dry_run_then_live, [("ops", "")], dry_run=True)


def dry_run_then_live(s):
    s.start()
    t0 = time.time() - 600
    a = alert("DryResolved", t0)
    b = alert("DryRefired", t0)
    s.post("ops", "firing", [a, b])
    s.idle(2)
    eq(s.mutations(), [], "dry-run calls nothing")
    eq(s.row(a["fingerprint"], "ops").get("issue"), "0 (no issue on GitHub)",
       "a dry-run row has no issue")
    applied = [x for x in s.ab.tail(400).splitlines() if 'msg="event applied"' in x]
    check(applied and all("issue=none" in x for x in applied),
          "the log says a dry-run event made no issue (not issue=0)", applied)
    s.stop()
    s.write_config(dry_run=False)
    s.start()
    s.post("ops", "resolved", [resolved(a)])
    s.idle(1)
    eq(s.mutations(), [], "resolving a dry-run row without an issue calls nothing")
    eq(s.row(a["fingerprint"], "ops").get("state"), "closed", "the resolve is recorded")
    b2 = dict(b, startsAt=iso_ms(time.time()))
    s.post("ops", "firing", [b2])
    s.idle(2)
    eq(s.mutations(), [("POST", "/repos/%s/issues" % REPO)], "the re-fire creates the issue")
    got = issues_of(s.gh, b["fingerprint"])
    eq([(i["number"], i["state"]) for i in got], [(1, "open")], "one issue for the re-fire")
    eq(s.row(b["fingerprint"], "ops").get("issue"), "1", "the row points at it")
    s.post("ops", "resolved", [resolved(b2)])
    s.idle(3)
    eq([i["state"] for i in issues_of(s.gh, b["fingerprint"])], ["closed"],
       "and its resolve closes it")
    lines = s.cli("map", "list").splitlines()
    la = [x for x in lines if a["fingerprint"] in x]
    lb = [x for x in lines if b["fingerprint"] in x]
    check(la and "(no issue)" in la[0], "map list labels the row without an issue", lines)
    check(lb and "%s#1" % REPO in lb[0] and "no issue" not in lb[0],
          "map list shows the live row's issue", lines)
    eq([p for m, p in s.mutations() if "/issues/0" in p], [], "calls on issue 0")


# ----- 3. receivers sharing a repository, after the database is lost ------------------------------

@run.case
def shared_repo_rebuild_keeps_to_its_receiver():
    with_stack(shared_repo_rebuild, [("ops", ""), ("dev", "")])


def map_rows(s, receiver):
    """{key: issue number} of `alertbridge map list --receiver=R`."""
    out = {}
    for line in s.cli("map", "list", "--receiver=" + receiver).splitlines():
        m = re.match(r"^(\S+)\s+(\S+)\s+%s#(\d+) " % re.escape(REPO), line)
        if m:
            eq(m.group(1), receiver, "map list --receiver lists that receiver's rows")
            out[m.group(2)] = int(m.group(3))
    return out


def shared_repo_rebuild(s):
    t0 = time.time() - 600
    a, b, c = alert("SharedOps", t0), alert("SharedDev", t0), alert("SharedBoth", t0)
    legacy = alert("SharedLegacy", t0)
    # An issue an older alertbridge made: its marker names no receiver.
    st, _, j = http("POST", s.gh.url + "/repos/%s/issues" % REPO,
                    {"title": "legacy", "body": "old\n\n<!-- alertbridge:episode=%s -->\n"
                     "<!-- alertbridge:key=%s -->" % (legacy["startsAt"],
                                                      legacy["fingerprint"])},
                    headers={"Authorization": "Bearer " + GH_TOKEN, "User-Agent": "old"})
    eq(st, 201, "legacy issue")
    s.start()
    s.post("ops", "firing", [a, c])
    s.post("dev", "firing", [b, c])
    s.idle(4)
    number = {}
    for i in s.gh.issues(REPO):
        m = re.search(r"<!-- alertbridge:receiver=(\w+) --> <!-- alertbridge:key=(\w+) -->$",
                      i["body"])
        check(m or i["number"] == 1, "every new issue ends with its receiver's marker",
              i["body"][-200:])
        if m:
            number[(m.group(1), m.group(2))] = i["number"]
    ka, kb, kc, kl = (x["fingerprint"] for x in (a, b, c, legacy))
    eq(sorted(number), sorted([("ops", ka), ("ops", kc), ("dev", kb), ("dev", kc)]),
       "one issue per receiver and alert")
    before = {"ops": map_rows(s, "ops"), "dev": map_rows(s, "dev")}
    s.stop()
    delete_database(s.db)
    event("database deleted")
    s.gh.get_requests(clear=True)
    s.start()
    s.post("ops", "firing", [a, c])
    s.post("dev", "firing", [b, c])
    s.idle(4)
    eq(s.mutations(), [], "re-sent notifications change nothing on GitHub")
    eq(map_rows(s, "ops"), dict(before["ops"], **{kl: 1}),
       "ops rebuilt its own rows (and the legacy issue no receiver claims)")
    eq(map_rows(s, "dev"), dict(before["dev"], **{kl: 1}), "dev rebuilt its own rows")
    eq(map_rows(s, "ops")[kc], number[("ops", kc)], "ops' row of the shared alert: ops' issue")
    s.post("ops", "resolved", [resolved(c)])
    s.idle(5)
    state = {i["number"]: i["state"] for i in s.gh.issues(REPO)}
    eq((state[number[("ops", kc)]], state[number[("dev", kc)]]), ("closed", "open"),
       "ops' resolve closes ops' issue, not dev's")


# ----- 4. labels of a new episode ---------------------------------------------------------------

@run.case
def new_labels_are_added_on_a_new_episode():
    with_stack(new_labels, [("ops", '    labels: [alert, "severity:{{labels.severity}}"]\n')])


def label_posts(s):
    return [r["body"] for r in s.gh.get_requests()
            if r["method"] == "POST" and r["path"].endswith("/labels")]


def labels_of(s, key):
    return [[x["name"] for x in i["labels"]] for i in issues_of(s.gh, key)]


def new_labels(s):
    s.start()
    a = alert("LifeLabels", time.time() - 600, severity="warning")
    key = a["fingerprint"]
    s.post("ops", "firing", [a])
    s.idle(1)
    eq(labels_of(s, key), [["alert", "severity:warning"]], "labels at create")
    st, _, _ = http("POST", s.gh.url + "/repos/%s/issues/1/labels" % REPO,
                    {"labels": ["team:db"]},
                    headers={"Authorization": "Bearer " + GH_TOKEN, "User-Agent": "a-human"})
    eq(st, 200, "a person adds a label")
    s.gh.get_requests(clear=True)
    a2 = dict(a, startsAt=iso_ms(time.time() - 300),
              labels=dict(a["labels"], severity="critical"))
    s.post("ops", "firing", [a2])  # a new episode while the issue is open
    s.idle(2)
    eq(label_posts(s), [{"labels": ["severity:critical"]}], "only the new label is added")
    eq(labels_of(s, key), [["alert", "severity:warning", "team:db", "severity:critical"]],
       "labels after the re-fire: none removed")
    eq(len(s.gh.comments(REPO, 1)), 1, "the re-fire comment")
    s.post("ops", "resolved", [resolved(a2)])
    s.idle(3)
    s.gh.get_requests(clear=True)
    a3 = dict(a, startsAt=iso_ms(time.time()), labels=dict(a["labels"], severity="page"))
    s.post("ops", "firing", [a3])  # a new episode within reopen_window: reopened
    s.idle(4)
    eq(label_posts(s), [{"labels": ["severity:page"]}], "the reopened issue gets the new label")
    eq([(i["state"], i["state_reason"]) for i in issues_of(s.gh, key)], [("open", "reopened")],
       "reopened")
    eq(labels_of(s, key),
       [["alert", "severity:warning", "team:db", "severity:critical", "severity:page"]],
       "labels after the reopen")
    s.post("ops", "resolved", [resolved(a3)])
    s.idle(5)
    s.gh.get_requests(clear=True)
    s.post("ops", "firing", [dict(a3, startsAt=iso_ms(time.time()))])  # same labels again
    s.idle(6)
    eq(label_posts(s), [], "no label call when nothing new renders")


# ----- 5. assignees GitHub cannot assign ---------------------------------------------------------

@run.case
def unassignable_assignee_is_dropped():
    with_stack(unassignable, [("ops", "    assignees: [oncall, ghost]\n")],
               assignable=["oncall"])


def unassignable(s):
    s.start()
    a = alert("LifeAssign", time.time() - 60)
    s.post("ops", "firing", [a])
    s.idle(1)
    creates = [r for r in s.gh.get_requests()
               if r["method"] == "POST" and r["path"] == "/repos/%s/issues" % REPO]
    eq([(r["status"], r["body"].get("assignees")) for r in creates],
       [(422, ["oncall", "ghost"]), (201, ["oncall"])],
       "the create GitHub rejected is made once more without the login it named")
    got = issues_of(s.gh, a["fingerprint"])
    eq([[x["login"] for x in i["assignees"]] for i in got], [["oncall"]],
       "one issue, assigned to the login GitHub accepts")
    eq(s.metric("alertbridge_github_assignees_dropped_total"), 1, "assignees dropped")
    eq(s.metric("alertbridge_dead_letter_events"), 0, "dead letters")


def main():
    return run_cases(run, ALERTBRIDGE, only=only_from_env("LIFECYCLE_ONLY"))


if __name__ == "__main__":
    sys.exit(main())
