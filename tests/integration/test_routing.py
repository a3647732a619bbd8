#!/usr/bin/env python3
# run.sh: weight 16
"""test_routing.py - routing alerts to repositories (issue 9 item 2), real binary + fake GitHub.

  routes_and_repo_templates   a receiver whose repo is "{{labels.team}}/alerts" with two
      routes: severity=~"critical|page" and team!="ml" files into acme/pager with its own
      labels and assignee; alertname=Special takes its own title template (and the receiver's
      repo); the rest goes to the team's repository with the receiver's labels; an alert
      without a team renders "/alerts" and is dead-lettered with that value in the reason while
      the others of its webhook are filed; the regex is fully anchored (severity="critical-ish"
      is no match);
  group_repo_from_the_first_alert  issue_per: group renders the group's repo from its first
      alert, as its title;
  the_map_wins_after_a_reroute  an alert filed in infra/alerts keeps its issue when a new
      config routes it to acme/pager: its resolve closes the issue it has, nothing is made in
      acme/pager, while a new alert follows the new route;
  rerouted_alert_keeps_its_issue  (issue 20; found by the lifecycle model, seed 5 of
      fire,resolve,repeat,refire,refire_past,kill,lostdb,reroute) an alert filed in
      infra/alerts, then routed to acme/pager by a new config, the database lost: the rebuild
      reads every repository the receiver's configuration names (bridge_scan.c; it once read
      only the one the route names and made a second issue): the repeat makes nothing, the
      resolve closes the issue it has; a new alert follows the route;
  newest_issue_across_repositories  an alert's issue in infra/alerts closed long ago, a new
      episode after the reroute made a linked issue in acme/pager: after the loss the row is
      the newest, its previous the old one with GitHub's link to it; the resolve closes the
      newest;
  route_repository_errors_during_the_rebuild  a 502 from a route's repository keeps the event
      waiting for the scan (no second issue); a 403 that is no rate limit is skipped as a 404;
  unreadable_route_repository_is_skipped  a route to a repository GitHub answers 404 for: the
      rebuild skips it (logged) and the receiver's events go on; it is not recorded as
      scanned (a credential that lost it for a while must not miss its issues later): an
      alert routed there lists it again and is dead-lettered as before;
  check_config_shows_each_routes_repo  check-config prints the repo a sample alert gets for
      each route, and rejects a regex it cannot compile naming file:line.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Prints a timeline and last "N passed, N failed".
"""

import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, db_rows, eq, event,  # noqa: E402
                     http, iso_ms, poll, webhook_payload)
from harness import delete_database, stacks_run  # noqa: E402

TOKEN = "ghs_routingToken0123456789"
REPOS = ["acme/pager", "infra/alerts", "ml/alerts", "db/alerts"]
ROUTED = """  - name: bridge
    repo: "{{labels.team}}/alerts"
    labels: [alert]
    routes:
      - matchers: ['severity=~"critical|page"', team!="ml"]
        repo: acme/pager
        labels: [page, "sev:{{labels.severity}}"]
        assignees: [oncall]
      - matchers: [alertname=Special]
        templates: {title: special.mustache}
  - name: grouped
    repo: "{{labels.team}}/alerts"
    issue_per: group
"""

REROUTE_PLAIN = "  - name: bridge\n    repo: infra/alerts\n    reopen_window: %s\n"
REROUTE_ROUTED = REROUTE_PLAIN + ("    routes:\n"
                                  "      - matchers: ['alertname=~\"Down|Paged\"']\n"
                                  "        repo: %s\n")

run = Runner()
STACKS = []


def stack(receivers):
    d = tempfile.mkdtemp(prefix="ab-routing-")
    with open(os.path.join(d, "special.mustache"), "w") as f:
        f.write("special: {{labels.alertname}} for {{labels.team}}\n")
    gh = FakeGitHub(token=TOKEN, repos=REPOS).start()
    ab = Alertbridge(d, gh.url, TOKEN, REPOS[0], receivers_yaml=receivers)
    STACKS.append((d, gh, ab))
    return gh, ab


def started_stack(receivers_yaml):
    """stack(receivers_yaml) with its alertbridge started; (gh, ab)."""
    gh, ab = stack(receivers_yaml)
    ab.start()
    return gh, ab


def alert(fp, labels, status="firing", starts=None, ends=None):
    a = {"fingerprint": fp, "status": status, "labels": dict(labels),
         "annotations": {"summary": "routing " + fp},
         "startsAt": iso_ms(starts or time.time() - 60)}
    if ends:
        a["endsAt"] = iso_ms(ends)
    return a


def issues_of(gh, repo):
    return gh.issues(repo)


def done_events(ab):
    st, _, text = http("GET", ab.url + "/metrics")
    return sum(float(v) for v in re.findall(
        r"^alertbridge_bridge_events_total\{[^}]*\} (\S+)$", text, re.M))


def post(ab, receiver, alerts, events):
    before = done_events(ab)
    st, _, body = ab.post(webhook_payload(receiver, alerts))
    eq(st, 200, "webhook acknowledged")
    poll(lambda: done_events(ab) >= before + events, "%d events applied" % events, timeout_s=30)


@run.case
def routes_and_repo_templates():
    gh, ab = started_stack(ROUTED)
    post(ab, "bridge", [
        alert("a000000000000001", {"alertname": "Down", "team": "infra", "severity": "critical"}),
        alert("a000000000000002", {"alertname": "Down", "team": "ml", "severity": "page"}),
        alert("a000000000000003", {"alertname": "Special", "team": "db", "severity": "warning"}),
        alert("a000000000000004", {"alertname": "Down", "team": "infra",
                                   "severity": "critical-ish"}),
        alert("a000000000000005", {"alertname": "Down", "severity": "warning"}),
    ], events=5)
    pager = issues_of(gh, "acme/pager")
    eq(len(pager), 1, "one issue in acme/pager (the first route)")
    check("a000000000000001" in pager[0]["body"], "the infra critical alert", pager[0]["body"])
    eq(sorted(x["name"] for x in pager[0]["labels"]), ["page", "sev:critical"],
       "the route's labels, rendered")
    eq([x["login"] for x in pager[0]["assignees"]], ["oncall"], "the route's assignee")
    ml = issues_of(gh, "ml/alerts")
    eq(len(ml), 1, "team ml skips the first route (team!=\"ml\"): its team's repo")
    eq([x["name"] for x in ml[0]["labels"]], ["alert"], "the receiver's labels")
    db = issues_of(gh, "db/alerts")
    eq(len(db), 1, "the Special route takes the receiver's repo template")
    eq(db[0]["title"], "special: Special for db", "and its own title template")
    infra = issues_of(gh, "infra/alerts")
    eq(len(infra), 1, "critical-ish is no match for the anchored regex: the team's repo")
    check("a000000000000004" in infra[0]["body"], "the critical-ish alert", infra[0]["body"])
    dead = db_rows(ab.db, "SELECT key, last_error FROM events WHERE state = 'dead'")
    eq([r[0] for r in dead], ["a000000000000005"], "the alert without a team is dead-lettered")
    check('rendered to "/alerts"' in dead[0][1], "with the rendered value in the reason",
          dead[0][1])
    event("dead letter: %s" % dead[0][1])
    ab.stop()


@run.case
def group_repo_from_the_first_alert():
    gh, ab = started_stack(ROUTED)
    post(ab, "grouped", [
        alert("b000000000000001", {"alertname": "Lag", "team": "db", "instance": "a"}),
        alert("b000000000000002", {"alertname": "Lag", "team": "infra", "instance": "b"}),
    ], events=1)
    eq(len(issues_of(gh, "db/alerts")), 1, "the group's issue: the first alert's team")
    eq(len(issues_of(gh, "infra/alerts")), 0, "not the second's")
    ab.stop()


@run.case
def the_map_wins_after_a_reroute():
    gh, ab = started_stack("  - name: bridge\n    repo: \"{{labels.team}}/alerts\"\n")
    t0 = time.time() - 60
    labels = {"alertname": "Down", "team": "infra", "severity": "critical"}
    post(ab, "bridge", [alert("c000000000000001", labels, starts=t0)], events=1)
    eq(len(issues_of(gh, "infra/alerts")), 1, "filed by the repo template")
    ab.stop()
    ab.write_receivers(ROUTED)  # now severity=critical goes to acme/pager
    ab.start()
    post(ab, "bridge", [alert("c000000000000001", labels, "resolved", starts=t0,
                              ends=time.time() - 1)], events=1)
    infra = issues_of(gh, "infra/alerts")
    eq(infra[0]["state"], "closed", "the resolve closed the issue the alert has")
    eq(issues_of(gh, "acme/pager"), [], "nothing made where the new route points")
    post(ab, "bridge", [alert("c000000000000002", labels)], events=1)
    eq(len(issues_of(gh, "acme/pager")), 1, "a new alert follows the new route")
    ab.stop()


@run.case
def check_config_shows_each_routes_repo():
    d, gh, ab = STACKS[0] if STACKS else (None, None, None)
    gh, ab = stack(ROUTED)
    out = subprocess.run([ALERTBRIDGE, "check-config", ab.config], capture_output=True,
                         text=True, timeout=30)
    eq(out.returncode, 0, "valid")
    lines = [x for x in out.stdout.splitlines() if "repo for the sample alert" in x]
    event("\n".join(lines))
    check(any('route 0 [severity=~"critical|page", team!="ml"]: repo for the sample alert: '
              'acme/pager' in x for x in lines), "route 0's repo", lines)
    check(any('route 1 [alertname="Special"]: repo for the sample alert: sample/alerts' in x
              for x in lines), "route 1 renders the receiver's template", lines)
    with open(ab.config) as f:
        text = f.read()
    bad = text.replace("team!=\"ml\"]", "team!=\"ml\", 'x=~\"(a\"']")
    with open(ab.config, "w") as f:
        f.write(bad)
    line = [i + 1 for i, x in enumerate(bad.splitlines()) if "x=~" in x][0]
    out = subprocess.run([ALERTBRIDGE, "check-config", ab.config], capture_output=True,
                         text=True, timeout=30)
    eq(out.returncode, 1, "a regex that does not compile is rejected")
    check("alertbridge.yml:%d: receivers[0].routes[0].matchers[2]: invalid regex" % line
          in out.stderr, "naming file:line", out.stderr)


def named(fp, name, status="firing", starts=None, ends=None):
    """An alert of alertname name, fingerprint fp (also its label fp)."""
    return alert(fp, {"alertname": name, "fp": fp}, status, starts, ends)


def lose_database(ab):
    ab.stop()
    delete_database(ab.db)
    ab.start()
    event("database lost: files removed, alertbridge started again")


def lists_of(gh, repo):
    with gh.lock:
        return [r for r in gh.requests
                if r["method"] == "GET" and r["path"] == "/repos/%s/issues" % repo]


@run.case
def rerouted_alert_keeps_its_issue():
    gh, ab = stack(REROUTE_PLAIN % "7d")
    ab.start()
    t0 = time.time() - 120
    post(ab, "bridge", [named("e000000000000001", "Down", starts=t0)], events=1)
    eq(len(gh.issues("infra/alerts")), 1, "filed in the receiver's repository")
    ab.stop()
    ab.write_receivers(REROUTE_ROUTED % ("7d", "acme/pager"))  # Down now goes to acme/pager
    lose_database(ab)
    post(ab, "bridge", [named("e000000000000001", "Down", starts=t0)], events=1)
    eq(gh.issues("acme/pager"), [], "its repeat makes no issue where the route points")
    rows = db_rows(ab.db, "SELECT repo, number FROM issues WHERE key = 'e000000000000001'")
    eq(rows, [("infra/alerts", 1)], "the rebuilt row is the issue it has")
    post(ab, "bridge", [named("e000000000000001", "Down", "resolved", starts=t0,
                              ends=time.time() - 1)], events=1)
    eq(gh.issues("infra/alerts")[0]["state"], "closed", "the resolve closed the issue it has")
    eq(gh.issues("acme/pager"), [], "still nothing in acme/pager")
    post(ab, "bridge", [named("e000000000000002", "Down")], events=1)
    eq(len(gh.issues("acme/pager")), 1, "a new alert follows the route")
    eq(len(lists_of(gh, "acme/pager")), 1, "each repository listed once after the loss")
    ab.stop()


@run.case
def newest_issue_across_repositories():
    gh, ab = stack(REROUTE_PLAIN % "1s")
    ab.start()
    t0 = time.time() - 600
    fp = "e000000000000003"
    post(ab, "bridge", [named(fp, "Paged", starts=t0)], events=1)
    post(ab, "bridge", [named(fp, "Paged", "resolved", starts=t0, ends=t0 + 60)], events=1)
    eq(gh.issues("infra/alerts")[0]["state"], "closed", "the first episode's issue closed")
    ab.stop()
    ab.write_receivers(REROUTE_ROUTED % ("1s", "acme/pager"))
    ab.start()
    time.sleep(1.5)  # closed longer ago than reopen_window: the next episode gets a new issue
    t1 = time.time() - 30
    post(ab, "bridge", [named(fp, "Paged", starts=t1)], events=1)
    pager = gh.issues("acme/pager")
    eq(len(pager), 1, "the new episode's issue is made where the route points")
    check("/infra/alerts/issues/1" in pager[0]["body"], "and links the one it supersedes",
          pager[0]["body"])
    lose_database(ab)
    post(ab, "bridge", [named(fp, "Paged", starts=t1)], events=1)
    rows = db_rows(ab.db, "SELECT repo, number, previous_number, previous_url FROM issues "
                   "WHERE key = '%s'" % fp)
    eq(len(rows), 1, "one row")
    eq(rows[0][:3], ("acme/pager", 1, 1), "the newest issue, the old one as its previous")
    check((rows[0][3] or "").endswith("/infra/alerts/issues/1"),
          "previous_url: GitHub's link to the old one", rows[0][3])
    eq(len(gh.issues("acme/pager")) + len(gh.issues("infra/alerts")), 2, "no new issue")
    post(ab, "bridge", [named(fp, "Paged", "resolved", starts=t1, ends=time.time() - 1)], events=1)
    eq(gh.issues("acme/pager")[0]["state"], "closed", "the resolve closed the newest")
    ab.stop()


@run.case
def unreadable_route_repository_is_skipped():
    gh, ab = stack(REROUTE_PLAIN % "7d")
    ab.start()
    post(ab, "bridge", [named("e000000000000004", "Other")], events=1)
    ab.stop()
    ab.write_receivers(REROUTE_ROUTED % ("7d", "acme/missing"))
    lose_database(ab)
    post(ab, "bridge", [named("e000000000000004", "Other")], events=1)
    eq(len(gh.issues("infra/alerts")), 1, "no second issue: infra/alerts was scanned")
    eq([r["status"] for r in lists_of(gh, "acme/missing")], [404], "the route's repo: 404")
    poll(lambda: "rebuild: repository not readable, skipped" in open(ab.log_path).read(),
         "the skip is logged", timeout_s=5)
    post(ab, "bridge", [named("e000000000000005", "Other")], events=1)
    eq(len(gh.issues("infra/alerts")), 2, "the receiver's events go on")
    eq(len(lists_of(gh, "acme/missing")), 1, "nor list it again")
    post(ab, "bridge", [named("e000000000000006", "Down")], events=1)
    eq(len(lists_of(gh, "acme/missing")), 2,
       "a skipped repository is not recorded as scanned: read with an event routed there")
    dead = db_rows(ab.db, "SELECT key, last_error FROM events WHERE state = 'dead'")
    eq([r[0] for r in dead], ["e000000000000006"], "whose alert is dead-lettered")
    check("acme/missing not found" in dead[0][1], "naming the repository", dead[0][1])
    ab.stop()


@run.case
def route_repository_errors_during_the_rebuild():
    gh, ab = stack(REROUTE_PLAIN % "7d")
    ab.start()
    post(ab, "bridge", [named("e000000000000007", "Other")], events=1)
    ab.stop()
    ab.write_receivers(REROUTE_ROUTED % ("7d", "acme/pager"))
    lose_database(ab)
    # A 5xx from the route's repository: nothing is written or recorded until it answers
    # (its answer may hold the alert's issue); the listing is asked again.
    gh.add_fault("GET", "/repos/acme/pager/issues", count=1, status=502,
                 body={"message": "Server Error"})
    post(ab, "bridge", [named("e000000000000007", "Other", starts=time.time() - 30)], events=1)
    poll(lambda: [r["status"] for r in lists_of(gh, "acme/pager")] == [502, 200],
         "the listing is asked again after its 502", timeout_s=30)
    poll(lambda: db_rows(ab.db, "SELECT count(*) FROM events WHERE state = 'done'")[0][0] >= 1,
         "the event applied", timeout_s=30)
    eq(len(gh.issues("infra/alerts")), 1, "no second issue")
    eq(gh.issues("acme/pager"), [], "nothing where the route points")
    ab.stop()
    # A 403 that is no rate limit (an App's installation without that repository): skipped
    # like a 404, and listed again with the next scan.
    lose_database(ab)
    gh.add_fault("GET", "/repos/acme/pager/issues", count=1, status=403,
                 body={"message": "Resource not accessible by integration"})
    post(ab, "bridge", [named("e000000000000007", "Other", starts=time.time() - 20)], events=1)
    eq(len(gh.issues("infra/alerts")), 1, "still one issue")
    post(ab, "bridge", [named("e000000000000008", "Down")], events=1)
    eq([r["status"] for r in lists_of(gh, "acme/pager")][-2:], [403, 200],
       "the 403 skipped, not recorded: the event routed there lists it again")
    eq(len(gh.issues("acme/pager")), 1, "and files its alert there")
    ab.stop()


if __name__ == "__main__":
    sys.exit(stacks_run(run, STACKS, 40))
