#!/usr/bin/env python3
# run.sh: weight 127, asan skip
# (its code runs under the sanitizers in test_storm.c)
"""test_storm.py - alert storms: the real alertbridge binary receives 2,000 distinct alerts in
4 webhooks of 500 and talks to the fake GitHub.

  paced_without_storm  storm off: every alert is queued (in sqlite before the 200), and creation
                       keeps the content budget (>= 1 s apart, <= content_per_minute a minute)
                       over the first 30 s.
  ten_thousand_in_one_webhook
                       storm on, the default webhook.max_body_bytes: one webhook of 10,000
                       alerts shaped as Alertmanager sends kube-prometheus' (about 10 MB) is
                       answered 200 with every alert queued, and folded into one summary per
                       alertname (issue 18 item 4: the 1 MiB default answered 413).
  storm_folds          storm on (storm_after 10s): one summary issue per alertname, every
                       fingerprint in a summary or its own issue exactly once, the summary text
                       updated (paced) as alerts resolve, closed when all resolved; afterwards
                       new alerts and re-fires get their own issues again.

Env: ALERTBRIDGE_BIN (default ./alertbridge), E2E_ONLY=name,name.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import ALERTBRIDGE  # noqa: E402
from harness import (Failure, Proc, Runner, check, eq, event, free_port, http, iso_ms,  # noqa: E402
                     poll, print_tail, wait_ready)
from harness import only_from_env, write_file  # noqa: E402

REPO = "acme/storm-alerts"
GH_TOKEN = "ghs_stormGitHubToken0123456789"
HOOK_TOKEN = "storm-webhook-secret"
RECEIVER = "storm"
N_ALERTS = 2000
PER_WEBHOOK = 500
NAMES = ("StormHighLatency", "StormPodCrashLooping")
MIN_SPACING_S = 0.95

run = Runner()


def fingerprint(labels):
    """Alertmanager's fingerprint: FNV-1a 64 over name 0xff value 0xff in name order."""
    h = 0xcbf29ce484222325
    for k in sorted(labels):
        for part in (k.encode(), b"\xff", labels[k].encode(), b"\xff"):
            for byte in part:
                h = ((h ^ byte) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def make_alerts(n, start_ts, offset=0):
    out = []
    for i in range(offset, offset + n):
        labels = {"alertname": NAMES[i % 2], "instance": "node-%04d:9100" % i,
                  "job": "storm", "severity": "warning"}
        out.append({"status": "firing", "labels": labels,
                    "annotations": {"summary": "latency on node-%04d" % i},
                    "startsAt": iso_ms(start_ts), "endsAt": "0001-01-01T00:00:00Z",
                    "generatorURL": "http://prometheus.example:9090/graph",
                    "fingerprint": fingerprint(labels)})
    return out


def resolved(alerts):
    end = iso_ms(time.time() - 1)
    return [dict(a, status="resolved", endsAt=end) for a in alerts]


def payload(alerts, group=None):
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    group = group or {"job": "storm"}
    return {"version": "4", "receiver": RECEIVER, "status": status, "alerts": alerts,
            "groupLabels": group, "commonLabels": group,
            "commonAnnotations": {}, "externalURL": "http://alertmanager.example:9093",
            "groupKey": "{}:{%s}" % ",".join('%s="%s"' % kv for kv in sorted(group.items())),
            "truncatedAlerts": 0}


def kube_alerts(n, start_ts):
    """n alerts shaped as Alertmanager sends kube-prometheus' KubePodNotReady (11 labels, 3
    annotations, Prometheus' generatorURL): about 1 KB each, as a real Alertmanager 0.25 sends
    10,000 of them in 10,230,668 bytes (docs/config-guide.md, webhook.max_body_bytes)."""
    gen = ("http://prometheus-k8s-0:9090/graph?g0.expr=sum+by+%28namespace%2C+pod%2C+cluster%29+"
           "%28max+by+%28namespace%2C+pod%2C+cluster%29+%28kube_pod_status_phase%7Bjob%3D%22"
           "kube-state-metrics%22%2Cnamespace%3D~%22.%2A%22%2Cphase%3D~%22Pending%7CUnknown%22"
           "%7D%29%29+%3E+0&g0.tab=1")
    out = []
    for i in range(n):
        pod = "trainer-%05d-7f9c8d6b5-x2k4q" % i
        labels = {"alertname": NAMES[i % 2], "namespace": "ml-training", "pod": pod,
                  "container": "trainer", "job": "kube-state-metrics",
                  "instance": "10.244.3.17:8080", "endpoint": "http",
                  "service": "kube-state-metrics", "severity": "warning",
                  "prometheus": "monitoring/k8s", "cluster": "gpu-east-1"}
        out.append({"status": "firing", "labels": labels,
                    "annotations": {
                        "summary": "Pod has been in a non-ready state for more than 15 minutes.",
                        "description": "Pod ml-training/%s has been in a non-ready state for "
                                       "longer than 15 minutes." % pod,
                        "runbook_url": "https://runbooks.prometheus-operator.dev/runbooks/"
                                       "kubernetes/kubepodnotready"},
                    "startsAt": iso_ms(start_ts), "endsAt": "0001-01-01T00:00:00Z",
                    "generatorURL": gen, "fingerprint": fingerprint(labels)})
    return out


class Stack:
    """fake GitHub + alertbridge in a temp dir; prints logs on failure, always stops both."""

    def __init__(self, name, storm, content_per_minute, max_body_bytes=4194304):
        self.dir = tempfile.mkdtemp(prefix="ab-storm-%s-" % name)
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.db = os.path.join(self.dir, "alertbridge.db")
        self._write("webhook-token", HOOK_TOKEN + "\n")
        self._write("github-token", GH_TOKEN + "\n")
        self.config = self._write("alertbridge.yml", (
            "listen_address: 127.0.0.1:%d\n"
            "database: alertbridge.db\n"
            "log: {level: info, format: logfmt}\n"
            "webhook:\n"
            "  bearer_token_file: webhook-token\n"
            "%s"
            "github:\n"
            "  api_url: %s\n"
            "  token_file: github-token\n"
            "  content_per_minute: %d\n"
            "  timeout: 5s\n"
            "receivers:\n"
            "  - name: %s\n"
            "    repo: %s\n"
            "    storm: {enabled: %s, storm_after: 10s}\n"
            "janitor:\n"
            "  enabled: false\n") % (
                self.port, "  max_body_bytes: %d\n" % max_body_bytes if max_body_bytes else "",
                self.gh.url, content_per_minute, RECEIVER, REPO, "true" if storm else "false"))
        self.ab = None

    def _write(self, name, text):
        return write_file(self.dir, name, text)

    def __enter__(self):
        if not (os.path.isfile(ALERTBRIDGE) and os.access(ALERTBRIDGE, os.X_OK)):
            raise Failure("alertbridge binary not found: %s (set ALERTBRIDGE_BIN)" % ALERTBRIDGE)
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
        self.ab = Proc("alertbridge", [ALERTBRIDGE, "serve", "--config.file=" + self.config],
                       os.path.join(self.dir, "alertbridge.log"), env=env, cwd=self.dir)
        self.ab.start()
        wait_ready(self.ab, self.url + "/-/ready", timeout_s=30)
        return self

    def __exit__(self, et, ev, tb):
        try:
            if et is not None and self.ab:
                print_tail("alertbridge log", self.ab.tail(60))
        finally:
            if self.ab:
                self.ab.stop()
            self.gh.stop()
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def post(self, alerts, group=None):
        st, _, body = http("POST", self.url + "/v1/webhook", body=payload(alerts, group),
                           headers={"Authorization": "Bearer " + HOOK_TOKEN}, timeout_s=30)
        eq(st, 200, "webhook answer (%s)" % body)
        return body

    def sql(self, q, *args):
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=10)
        try:
            return con.execute(q, args).fetchall()
        finally:
            con.close()

    def creates(self):
        return [r for r in self.gh.get_requests()
                if r["method"] == "POST" and r["path"] == "/repos/%s/issues" % REPO]


def post_all(stack, alerts):
    t = time.time()
    for i in range(0, len(alerts), PER_WEBHOOK):
        stack.post(alerts[i:i + PER_WEBHOOK])
    event("posted %d alerts in %d webhooks in %.1f s" % (
        len(alerts), (len(alerts) + PER_WEBHOOK - 1) // PER_WEBHOOK, time.time() - t))


def poll_long(cond, what, timeout_s):
    """poll() in 60 s slices, for waits that include one summary update interval."""
    deadline = time.time() + timeout_s
    while True:
        left = deadline - time.time()
        try:
            return poll(cond, what, timeout_s=max(1, min(60, left)), interval_s=0.5)
        except Failure:
            if time.time() >= deadline:
                raise


@run.case
def paced_without_storm():
    cpm = 20
    with Stack("paced", storm=False, content_per_minute=cpm) as s:
        alerts = make_alerts(N_ALERTS, time.time() - 60)
        post_all(s, alerts)
        # Every acknowledged alert is queued: 2,000 distinct keys, none dead.
        rows = s.sql("SELECT count(DISTINCT key), count(*), sum(state = 'dead') FROM events "
                     "WHERE kind = 'bridge'")
        eq(rows[0][0], N_ALERTS, "distinct alerts queued")
        eq(rows[0][2], 0, "dead-lettered events")
        poll(lambda: len(s.creates()) >= 1, "the first create", timeout_s=30)
        first = s.creates()[0]["time"]
        window = 30.0
        time.sleep(max(0.0, first + window + 0.5 - time.time()))
        times = [r["time"] for r in s.creates() if r["time"] <= first + window]
        gaps = [b - a for a, b in zip(times, times[1:])]
        event("%d creates in the first %.0f s, smallest gap %.2f s" % (
            len(times), window, min(gaps) if gaps else 0))
        check(all(g >= MIN_SPACING_S for g in gaps), "creates at least 1 s apart", gaps)
        check(len(times) <= cpm, "at most content_per_minute creates in a minute", len(times))
        check(len(times) >= cpm - 2, "the budget is used, not idle", len(times))
        left = s.sql("SELECT count(*) FROM events WHERE kind = 'bridge' AND state = 'pending'")
        check(left[0][0] >= N_ALERTS - cpm - 2, "the rest still queued", left)


def summaries(s):
    return {i["title"]: i for i in s.gh.issues(REPO) if i["title"].startswith("[storm]")}


def summary_of(s, name):
    got = [i for i in s.gh.issues(REPO) if i["title"].startswith("[storm]") and
           re.search(r" × %s (firing|resolved)$" % name, i["title"])]
    check(len(got) == 1, "exactly one summary issue for %s" % name, [i["title"] for i in got])
    return got[0]


def own_issues(s):
    out = {}
    for i in s.gh.issues(REPO):
        if i["title"].startswith("[storm]"):
            continue
        m = re.search(r"<!-- alertbridge:key=([0-9a-f]{16}) -->", i["body"] or "")
        check(m is not None, "own issue #%d has a marker" % i["number"])
        check(m.group(1) not in out, "one issue per fingerprint (%s)" % m.group(1))
        out[m.group(1)] = i
    return out


def body_patches(s, number):
    return [r for r in s.gh.get_requests() if r["method"] == "PATCH" and
            r["path"] == "/repos/%s/issues/%d" % (REPO, number) and
            isinstance(r["body"], dict) and "body" in r["body"]]


@run.case
def ten_thousand_in_one_webhook():
    with Stack("ten-thousand", storm=True, content_per_minute=80, max_body_bytes=None) as s:
        alerts = kube_alerts(10000, time.time() - 60)
        raw = len(json.dumps(payload(alerts, {"namespace": "ml-training"})))
        check(raw > 8 << 20, "a body of about 10 MB", raw)
        t = time.time()
        body = s.post(alerts, {"namespace": "ml-training"})
        event("10,000 alerts (%d bytes) answered in %.2f s" % (raw, time.time() - t))
        eq(body, {"status": "ok", "receiver": RECEIVER, "alerts": 10000}, "the answer")
        eq(s.sql("SELECT count(*) FROM events")[0][0], 10000, "every alert queued before the 200")
        poll_long(lambda: s.sql("SELECT count(*) FROM events WHERE state = 'pending'")[0][0] == 0,
                  "every event handled", timeout_s=180)
        eq(s.sql("SELECT count(*) FROM events WHERE state = 'dead'")[0][0], 0, "dead events")
        poll(lambda: len(summaries(s)) == len(NAMES), "one summary per alertname", timeout_s=30)
        own = own_issues(s)
        event("%d summaries, %d own issues" % (len(summaries(s)), len(own)))
        check(len(own) < 100, "most alerts folded", len(own))
        eq(s.sql("SELECT count(*) FROM issues")[0][0], 10000, "a map row for every alert")


@run.case
def storm_folds():
    with Stack("storm", storm=True, content_per_minute=80) as s:
        alerts = make_alerts(N_ALERTS, time.time() - 60)
        fps = [a["fingerprint"] for a in alerts]
        check(len(set(fps)) == N_ALERTS, "2,000 distinct fingerprints")
        post_all(s, alerts)
        poll(lambda: s.sql("SELECT count(*) FROM events WHERE state = 'pending'")[0][0] == 0,
             "every event handled", timeout_s=60)
        eq(s.sql("SELECT count(*) FROM events WHERE state = 'dead'")[0][0], 0, "dead events")
        eq(s.sql("SELECT count(*) FROM issues")[0][0], N_ALERTS, "map rows")
        poll(lambda: len(summaries(s)) == len(NAMES), "one summary per alertname", timeout_s=30)
        own = own_issues(s)
        event("%d summaries, %d own issues" % (len(summaries(s)), len(own)))
        check(len(own) < 100, "most alerts folded", len(own))

        # Resolve 500 of the first alertname while the storm summary waits for its update.
        first = [a for a in alerts if a["labels"]["alertname"] == NAMES[0]]
        s.post(resolved(first[:500]))
        folded_resolved = [a for a in first[:500] if a["fingerprint"] not in own]
        want_firing = {n: sum(1 for a in alerts if a["labels"]["alertname"] == n and
                              a["fingerprint"] not in own) for n in NAMES}
        want_firing[NAMES[0]] -= len(folded_resolved)

        def updated():
            for n in NAMES:
                t = summary_of(s, n)["title"]
                if t != "[storm] {:,} × {} firing".format(want_firing[n], n):
                    return False
            return True
        poll_long(updated, "summary titles count the firing alerts", timeout_s=100)
        for n in NAMES:
            i = summary_of(s, n)
            check(len(i["body"]) <= 65536, "summary body within GitHub's limit", len(i["body"]))
            check("%s resolved" % ("{:,}".format(len(folded_resolved)) if n == NAMES[0]
                                   else "0") in i["body"], "resolved count in the body")
        bodies = " ".join(i["body"] for i in summaries(s).values())
        missing = [f for f in fps if f not in own and f not in bodies]
        eq(missing, [], "fingerprints neither in a summary nor in their own issue")
        both = [f for f in own if f in bodies]
        eq(both, [], "fingerprints in a summary and in their own issue")
        event("every fingerprint in a summary (%d) or its own issue (%d)" % (
            N_ALERTS - len(own), len(own)))

        # Every alert resolves: the summaries close, the own issues close.
        rest = resolved([a for a in alerts if a not in first[:500]])
        for i in range(0, len(rest), PER_WEBHOOK):
            s.post(rest[i:i + PER_WEBHOOK])

        def all_closed():
            return all(i["state"] == "closed" for i in s.gh.issues(REPO))
        poll_long(all_closed, "every issue closed", timeout_s=90)
        for n in NAMES:
            i = summary_of(s, n)
            eq(i["state_reason"], "completed", "summary %s closed as completed" % n)
            check(i["title"].endswith("× %s resolved" % n), "closed summary title", i["title"])
            patches = body_patches(s, i["number"])
            gaps = [b["time"] - a["time"] for a, b in zip(patches, patches[1:])]
            event("summary #%d: %d text updates, gaps %s" % (
                i["number"], len(patches), ["%.0f" % g for g in gaps]))
            check(all(g >= 59 for g in gaps[:-1]), "text updates at most one a minute "
                  "(the closing one excepted)", gaps)

        # The storm is over: a re-fire of a folded alert and new alerts get their own issues.
        n_before = len(s.gh.issues(REPO))
        folded_one = next(a for a in reversed(first) if a["fingerprint"] not in own)
        again = dict(folded_one, status="firing", startsAt=iso_ms(time.time()),
                     endsAt="0001-01-01T00:00:00Z")
        fresh = make_alerts(3, time.time(), offset=N_ALERTS)
        s.post([again] + fresh)
        poll(lambda: len(s.gh.issues(REPO)) == n_before + 4, "4 new own issues",
             timeout_s=30)
        own = own_issues(s)
        for a in [again] + fresh:
            check(a["fingerprint"] in own, "own issue for %s" % a["fingerprint"])
        eq(len(summaries(s)), len(NAMES), "no new summary once the storm is over")


if __name__ == "__main__":
    sys.exit(run.run(only=only_from_env("E2E_ONLY")))
