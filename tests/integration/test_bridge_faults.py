#!/usr/bin/env python3
# run.sh: weight 65
"""test_bridge_faults.py - the real alertbridge binary against a fake GitHub that injects
faults: 500/502/503, dropped connections, timeouts, a 5xx or a lost answer after the issue was
made (the ambiguous create), a 201 whose body cannot be read, 403 secondary rate limit with
retry-after, 429, the primary limit exhausted (x-ratelimit-remaining: 0 + reset), 401 (bad
token) and 422 (dead letter).  Alerts are posted straight to /v1/webhook (each 200 is an
acknowledgement); for every fault the test checks that each acknowledged alert reached GitHub
exactly once per transition (one issue per marker key, one comment per resolve), that the
content budget held (mutating calls >= 1 s apart, <= content_per_minute in any 60 s) and that
search, which lags behind writes, was never used.

    test --POST /v1/webhook--> alertbridge --REST--> fake_github (faults)

Env: ALERTBRIDGE_BIN (default ./alertbridge), FAULTS_ONLY=name,name, FAULTS_KEEP=1 (keep the
temp dir with alertbridge's log), FAULTS_SECOND_MS (250: the binary's second, its pacing and
backoff, serve --test.second-ms; 1000 checks the real pacing).
Prints a timeline, the figures, and last "N passed, N failed".
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
from harness import (Failure, Runner, check, eq, event, http,  # noqa: E402
                     iso_ms, poll, print_tail, short, wait_ready)
from harness import only_from_env, serve_proc, service_config, TEMPLATE_FILES  # noqa: E402
from harness import issues_by_key  # noqa: E402

REPO = "acme/faults"
GH_TOKEN = "ghs_faultsToken0123456789"
HOOK_TOKEN = "faults-webhook-secret"
RECEIVER = "bridge"
BUDGET = 20                # content_per_minute in the config
# The binary's own second (serve --test.second-ms: its pacing and backoff; GitHub's
# Retry-After and reset stay real): a quarter of one, so the cases take a quarter of the time.
SECOND_MS = int(os.environ.get("FAULTS_SECOND_MS") or "250")
SECOND_S = SECOND_MS / 1000.0
MIN_SPACING_S = 0.95 * SECOND_S  # >= 1 s between mutating calls; arrival times jitter a little
MUTATING = ("POST", "PATCH", "PUT", "DELETE")

run = Runner()
FIGURES = {"faults": 0, "alerts": 0, "issues": 0, "duplicates": 0, "lost": 0}


class Stack:
    """fake GitHub + one alertbridge for all scenarios (each uses its own alerts)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ab-faults-")
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO], search_lag_s=60).start()
        self.port, self.url, self.config = service_config(
            self.dir,
            "github:\n"
            "  api_url: %s\n"
            "  token_file: github-token\n"
            "  content_per_minute: %d\n"
            "  timeout: 2s\n"
            "receivers:\n"
            "  - name: %s\n"
            "    repo: %s\n"
            "    labels: [alert]\n"
            "    auto_close: true\n"
            "    reopen_window: 7d\n"
            "    templates: {title: title.mustache, body: body.mustache}\n"
            % (self.gh.url, BUDGET, RECEIVER, REPO),
            (("webhook-token", HOOK_TOKEN), ("github-token", GH_TOKEN)) + TEMPLATE_FILES)
        self.ab = serve_proc("alertbridge", self.config, self.dir,
                             flags=("--test.second-ms=%d" % SECOND_MS,))
        self.ab.start()
        wait_ready(self.ab, self.url + "/-/ready", timeout_s=30)

    def stop(self):
        for f in (self.ab.stop, self.gh.stop):
            try:
                f()
            except Exception as e:
                event("cleanup error: %s" % e)
        if os.environ.get("FAULTS_KEEP"):
            event("kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def post(self, status, alerts):
        payload = {"version": "4", "status": status, "receiver": RECEIVER,
                   "groupKey": "{}:{alertname=\"%s\"}" % alerts[0]["labels"]["alertname"],
                   "truncatedAlerts": 0, "groupLabels": {}, "commonLabels": {},
                   "commonAnnotations": {}, "externalURL": "http://am.example:9093",
                   "alerts": alerts}
        st, _, body = http("POST", self.url + "/v1/webhook", payload,
                           headers={"Authorization": "Bearer " + HOOK_TOKEN})
        eq(st, 200, "webhook acknowledged (%s)" % short(body, 200))
        if status == "firing":
            FIGURES["alerts"] += len(alerts)

    def metric(self, name):
        st, _, text = http("GET", self.url + "/metrics")
        eq(st, 200, "GET /metrics")
        m = re.search(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def log_text(self):
        with open(self.ab.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def post_mortem(self, name):
        print_tail("alertbridge log (last 60 lines)", self.ab.tail(60))
        reqs = self.gh.get_requests()
        print_tail("fake github requests (last 60)", "\n".join(
            "%.2f %s %s -> %s" % (r["time"], r["method"], r["path"], r["status"])
            for r in reqs[-60:]))


S = None


def alerts_for(tag, n, starts):
    out = []
    for i in range(n):
        fp = "%08x%08x" % (abs(hash(tag)) % (1 << 32), i + 1)
        out.append({"status": "firing", "fingerprint": fp,
                    "labels": {"alertname": "Fault%s" % tag, "pod": "pod-%d" % i,
                               "severity": "warning"},
                    "annotations": {"summary": "%s on pod-%d" % (tag, i)},
                    "startsAt": iso_ms(starts), "endsAt": "0001-01-01T00:00:00Z",
                    "generatorURL": "http://prometheus.example/graph"})
    return out


def resolved_of(alerts):
    ends = iso_ms(time.time() - 1)
    return [dict(a, status="resolved", endsAt=ends) for a in alerts]


def by_key():
    """{key: [issue, ...]} over the fake's live issues."""
    return issues_by_key(S.gh.issues(REPO))


def wait_issues(alerts, state, what, timeout_s=60):
    keys = [a["fingerprint"] for a in alerts]

    def done():
        by = by_key()
        return all(k in by and by[k][-1]["state"] == state for k in keys)
    poll(done, what, timeout_s=timeout_s, interval_s=0.2)


def check_exactly_once(alerts, resolved):
    """One issue per key; on each, one alertbridge comment per resolve, none for firing."""
    by = by_key()
    for a in alerts:
        fp = a["fingerprint"]
        got = by.get(fp, [])
        if not got:
            FIGURES["lost"] += 1
        FIGURES["duplicates"] += max(0, len(got) - 1)
        eq(len(got), 1, "issues carrying the marker of %s" % fp)
        n = got[0]["number"]
        comments = S.gh.comments(REPO, n)
        eq(len(comments), 1 if resolved else 0, "comments on #%d (%s)" % (n, fp))
        if resolved:
            check("event=resolved-" in comments[0]["body"],
                  "the resolve comment carries its transition marker", comments[0]["body"])
            eq((got[0]["state"], got[0]["state_reason"]), ("closed", "completed"),
               "state of #%d" % n)
    FIGURES["issues"] += len(alerts)


def check_budget(since):
    reqs = [r for r in S.gh.get_requests() if r["time"] >= since]
    m = [r for r in reqs if r["method"] in MUTATING]
    for a, b in zip(m, m[1:]):
        check(b["time"] - a["time"] >= MIN_SPACING_S,
              "mutating calls >= 1 (binary's) s apart: %s %s then %s %s after %.3f s" % (
                  a["method"], a["path"], b["method"], b["path"], b["time"] - a["time"]))
    for i, r in enumerate(m):
        window = [x for x in m[i:] if x["time"] - r["time"] < 60 * SECOND_S]
        check(len(window) <= BUDGET, "at most %d mutating calls in 60 (binary's) s" % BUDGET,
              len(window))
    check(not [r for r in reqs if r["path"].startswith("/search/")],
          "search (which lags behind writes) was never used")


def scenario(tag, create_fault=None, resolve_fault=None, n=2, timeout_s=60):
    """Fire n alerts with create_fault armed, wait for their issues; resolve them with
    resolve_fault armed, wait for the close; then check exactly-once and the budget."""
    since = time.time()
    alerts = alerts_for(tag, n, time.time() - 30)
    if create_fault:
        S.gh.add_fault(**create_fault)
    S.post("firing", alerts)
    event("%s: %d firing alerts acknowledged" % (tag, n))
    wait_issues(alerts, "open", "%s: the issues" % tag, timeout_s=timeout_s)
    if resolve_fault:
        S.gh.add_fault(**resolve_fault)
    S.post("resolved", resolved_of(alerts))
    wait_issues(alerts, "closed", "%s: the issues closed" % tag, timeout_s=timeout_s)
    time.sleep(1.5)  # a wrong extra call would come now
    check(not S.gh.faults, "every injected fault was hit", S.gh.faults)
    check_exactly_once(alerts, resolved=True)
    check_budget(since)
    for f in (create_fault, resolve_fault):
        FIGURES["faults"] += f.get("count", 1) if f else 0
    event("%s: exactly once, budget held" % tag)
    return alerts


ISSUES = r"/repos/%s/issues" % REPO
COMMENTS = r"/repos/%s/issues/\d+/comments" % REPO
ISSUE = r"/repos/%s/issues/\d+" % REPO


@run.case
def server_errors_500_502_503():
    for status in (500, 502, 503):
        scenario("E%d" % status, n=2 if status == 500 else 1,
                 create_fault=dict(method="POST", path=ISSUES, count=2, status=status,
                                   body={"message": "Server Error"}),
                 resolve_fault=dict(method="PATCH", path=ISSUE, count=1, status=status,
                                    body={"message": "Server Error"}))


def create_and_comment_fault(tag, action):
    """scenario(tag) with the fault action on the create and on the resolve's comment."""
    scenario(tag, create_fault=dict(method="POST", path=ISSUES, action=action),
             resolve_fault=dict(method="POST", path=COMMENTS, action=action))


@run.case
def dropped_connections():
    create_and_comment_fault("Drop", "drop")


@run.case
def ambiguous_create_5xx_after_the_write():
    before = S.metric("alertbridge_github_ambiguous_creates_resolved_total") or 0
    scenario("After5xx", create_fault=dict(method="POST", path=ISSUES, action="respond_after",
                                           status=502, body={"message": "Server Error"}),
             resolve_fault=dict(method="POST", path=COMMENTS, action="respond_after",
                                status=503, body={"message": "Unavailable"}))
    check((S.metric("alertbridge_github_ambiguous_creates_resolved_total") or 0) >= before + 2,
          "the lost create and the lost comment were found by their markers")


@run.case
def ambiguous_create_connection_dropped_after_the_write():
    create_and_comment_fault("DropAfter", "drop_after")


@run.case
def timeouts_after_the_write():
    # the fake does the write, then answers after 3 s; alertbridge's timeout is 2 s
    scenario("Timeout", create_fault=dict(method="POST", path=ISSUES, action="delay_after",
                                          delay_ms=3000),
             resolve_fault=dict(method="PATCH", path=ISSUE, action="delay_after",
                                delay_ms=3000))


@run.case
def created_201_with_unreadable_body_is_not_dead_lettered():
    dead = S.metric("alertbridge_dead_letter_events")
    scenario("Bad201", n=1, create_fault=dict(method="POST", path=ISSUES,
                                              action="respond_after", status=201,
                                              body="<html>upstream hiccup</html>"))
    eq(S.metric("alertbridge_dead_letter_events"), dead, "nothing dead-lettered")


@run.case
def secondary_rate_limit_403_retry_after_and_429():
    t = time.time()
    scenario("Secondary", n=1, create_fault=dict(
        method="POST", path=ISSUES, status=403, headers={"retry-after": "3"},
        body={"message": "You have exceeded a secondary rate limit. Please wait a few "
              "minutes before you try again."}))
    reqs = [r for r in S.gh.get_requests() if r["time"] >= t and r["method"] == "POST"
            and r["path"] == "/repos/%s/issues" % REPO]
    check(len(reqs) >= 2 and reqs[1]["time"] - reqs[0]["time"] >= 2.9,
          "the create was repeated only after retry-after (3 s)",
          [r["time"] - t for r in reqs])
    t = time.time()
    scenario("TooMany", n=1, create_fault=dict(method="POST", path=ISSUES, status=429,
                                               headers={"retry-after": "2"},
                                               body={"message": "Too Many Requests"}))
    reqs = [r for r in S.gh.get_requests() if r["time"] >= t and r["method"] == "POST"
            and r["path"] == "/repos/%s/issues" % REPO]
    check(len(reqs) >= 2 and reqs[1]["time"] - reqs[0]["time"] >= 1.9,
          "429: repeated only after retry-after (2 s)", [r["time"] - t for r in reqs])


@run.case
def primary_rate_limit_exhausted_waits_for_reset():
    t = time.time()
    reset = int(t) + 4
    scenario("Primary", n=1, create_fault=dict(
        method="POST", path=ISSUES, status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        body={"message": "API rate limit exceeded for installation ID 1."}))
    reqs = [r for r in S.gh.get_requests() if r["time"] >= t]
    first = [r for r in reqs if r["status"] == 403]
    check(first, "the limit answer was sent")
    after = [r for r in reqs if r["time"] > first[0]["time"]]
    check(after and after[0]["time"] >= reset - 0.05,
          "no request before x-ratelimit-reset", [r["time"] - reset for r in after[:3]])


@run.case
def bad_token_401_keeps_events_until_the_token_works():
    t = time.time()
    S.gh.set_token("ghs_rotatedElsewhere")
    alerts = alerts_for("Auth", 2, time.time() - 30)
    S.post("firing", alerts)
    poll(lambda: "github rejected the credentials, event kept" in S.log_text(),
         "the loud log line", timeout_s=30)
    line = [x for x in S.log_text().splitlines()
            if "github rejected the credentials" in x][-1]
    check("level=error" in line and "401" in line, "logged at error with the status", line)
    check(GH_TOKEN not in S.log_text(), "the token is never logged")
    check((S.metric("alertbridge_github_unauthorized_total") or 0) >= 1, "401 metric")
    eq(by_key().get(alerts[0]["fingerprint"]), None, "nothing made with a bad token")
    FIGURES["faults"] += 1
    S.gh.set_token(GH_TOKEN)
    event("token accepted again")
    wait_issues(alerts, "open", "the kept events delivered once the token works")
    S.post("resolved", resolved_of(alerts))
    wait_issues(alerts, "closed", "closed")
    time.sleep(1.5)
    check_exactly_once(alerts, resolved=True)
    check_budget(t)


@run.case
def invalid_422_is_dead_lettered_with_the_reason_and_never_retried():
    t = time.time()
    dead = S.metric("alertbridge_dead_letter_events") or 0
    alerts = alerts_for("Invalid", 1, time.time() - 30)
    reason = "Validation Failed"
    S.gh.add_fault(method="POST", path=ISSUES, count=1, status=422,
                   body={"message": reason, "errors": [{"resource": "Issue", "field": "labels",
                                                        "code": "invalid", "value": "bad"}]})
    FIGURES["faults"] += 1
    S.post("firing", alerts)
    poll(lambda: (S.metric("alertbridge_dead_letter_events") or 0) >= dead + 1,
         "alertbridge_dead_letter_events rises", timeout_s=30)
    time.sleep(3)
    creates = [r for r in S.gh.get_requests() if r["time"] >= t and r["method"] == "POST"]
    eq(len(creates), 1, "one attempt, never retried")
    eq(by_key().get(alerts[0]["fingerprint"]), None, "no issue")
    out = subprocess.run([ALERTBRIDGE, "map", "list", "--config.file=" + S.config], cwd=S.dir,
                         capture_output=True, text=True, timeout=10)
    eq(out.returncode, 0, "map list exit code (stderr: %s)" % out.stderr)
    rows = [x for x in out.stdout.splitlines() if alerts[0]["fingerprint"] in x]
    check(rows and "dead" in rows[0] and "422" in rows[0] and reason in rows[0],
          "map list shows the dead letter with GitHub's reason", out.stdout)
    check_budget(t)


def main():
    global S
    only = only_from_env("FAULTS_ONLY")
    if not (os.path.isfile(ALERTBRIDGE) and os.access(ALERTBRIDGE, os.X_OK)):
        print("alertbridge binary not found: %s (set ALERTBRIDGE_BIN)" % ALERTBRIDGE)
        print("0 passed, 1 failed")
        return 1
    S = Stack()
    try:
        rc = run.run(on_failure=S.post_mortem, only=only,
                     after=lambda: print(
                         "figures: faults injected %(faults)d, alerts sent %(alerts)d, issues "
                         "checked %(issues)d, duplicates %(duplicates)d, lost %(lost)d"
                         % FIGURES, flush=True) or S.stop())
    except BaseException:
        S.stop()
        raise
    return rc


if __name__ == "__main__":
    sys.exit(main())
