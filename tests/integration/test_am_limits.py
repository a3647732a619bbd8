#!/usr/bin/env python3
# run.sh: weight 8
"""test_am_limits.py - what a real Alertmanager (Debian's prometheus-alertmanager) sends at the
edges of the intake's limits, through a recording proxy to the real binary and the fake GitHub
(issue 18 items 3, 4 and 11):

- long values copied into the group's fields: a group of one alert with a 70 KB description
  (Alertmanager copies it into commonAnnotations), one with a 5,000-byte label (into
  commonLabels), and a group where a 70 KB alert stands beside two good ones.  Each webhook
  is answered 200 (was 400 "commonAnnotations.description", never retried); each bad alert is
  a dead letter with its reason in `map list` and the metrics; the good ones get issues;
- a large group: 2,500 alerts with `max_alerts: 0` (the README's setting) are one webhook of
  well over the old 1 MiB default, answered 200 with the default `webhook.max_body_bytes`
  (was 413 at every group_interval), and become one group issue;
- `truncatedAlerts`: a receiver with `max_alerts: 5` and a group of 8 alerts: Alertmanager sends
  5 and truncatedAlerts 3; alertbridge logs and counts it, and the group's event document keeps
  it for the issue's view (bridge/view.c `truncatedAlerts`).

Env: ALERTBRIDGE_BIN (default ./alertbridge), ALERTMANAGER_BIN.  Prints a timeline and, last,
"N passed, N failed".
"""

import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Alertmanager, Runner, WebhookProxy,  # noqa: E402
                     check, eq, event, http, iso_ms, poll)
from harness import metric_sample, stop_state, tail_on_failure  # noqa: E402

REPO = "acme/am-limits"
GH_TOKEN = "ghs_amLimitsToken0123456789"
OLD_DEFAULT_MAX_BODY = 1 << 20
N_BIG = 2500
GENERATOR = ("http://prometheus-k8s-0:9090/graph?g0.expr=sum+by+%28namespace%2C+pod%29+%28"
             "kube_pod_status_phase%7Bjob%3D%22kube-state-metrics%22%2Cphase%3D~%22Pending%7C"
             "Unknown%22%7D%29+%3E+0&g0.tab=1")
run = Runner()
S = {}

RECEIVERS = """\
  - name: huge
    repo: %(repo)s
  - name: big
    repo: %(repo)s
    issue_per: group
  - name: trunc
    repo: %(repo)s
    issue_per: group
""" % {"repo": REPO}


def am_config(url, token_file):
    """Routes by the label `dest` to three receivers posting to url; `trunc` with max_alerts 5.
    group_interval is long: each group is sent once within the test."""
    recv = ("  - name: %s\n"
            "    webhook_configs:\n"
            "      - url: %s\n"
            "        send_resolved: true\n"
            "        max_alerts: %d\n"
            "        http_config:\n"
            "          authorization:\n"
            "            credentials_file: %s\n")
    return ("route:\n"
            "  receiver: huge\n"
            "  group_by: [alertname]\n"
            "  group_wait: 2s\n"
            "  group_interval: 1h\n"
            "  repeat_interval: 4h\n"
            "  routes:\n"
            "    - {receiver: big, matchers: ['dest=\"big\"']}\n"
            "    - {receiver: trunc, matchers: ['dest=\"trunc\"']}\n"
            "receivers:\n" +
            recv % ("huge", url, 0, token_file) + recv % ("big", url, 0, token_file) +
            recv % ("trunc", url, 5, token_file))


def am_alert(name, dest, i, annotations=None, **labels):
    """An alert as Prometheus posts it to Alertmanager's API v2 (startsAt now: the group waits
    its group_wait for the rest of its alerts)."""
    lab = {"alertname": name, "dest": dest, "namespace": "ml-training",
           "pod": "trainer-%05d-7f9c8d6b5-x2k4q" % i, "container": "trainer",
           "job": "kube-state-metrics", "severity": "warning"}
    lab.update(labels)
    ann = {"summary": "%s on pod %d" % (name, i)}
    ann.update(annotations or {})
    return {"labels": lab, "annotations": ann, "startsAt": iso_ms(time.time()),
            "generatorURL": GENERATOR}


def metrics():
    return http("GET", S["ab"].url + "/metrics")[2]


def db(sql):
    con = sqlite3.connect("file:%s?mode=ro" % S["ab"].db, uri=True, timeout=10)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def deliveries(receiver):
    return [d for d in S["proxy"].get()
            if isinstance(d["payload"], dict) and d["payload"].get("receiver") == receiver]


def start():
    S["dir"] = tempfile.mkdtemp(prefix="ab-amlimits-")
    S["gh"] = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(S["dir"], S["gh"].url, GH_TOKEN, REPO, receivers_yaml=RECEIVERS)
    S["ab"] = ab.start()
    S["proxy"] = WebhookProxy(ab.port)
    am = Alertmanager(S["dir"], "http://127.0.0.1:%d/v1/webhook" % S["proxy"].port, ab.hook_file)
    with open(os.path.join(am.dir, "alertmanager.yml"), "w") as f:
        f.write(am_config("http://127.0.0.1:%d/v1/webhook" % S["proxy"].port, ab.hook_file))
    S["am"] = am.start()


def stop():
    stop_state(S, "am", "ab", "proxy", "gh")


@run.case
def long_values_in_the_group_fields_lose_only_their_alert():
    start()
    big = "y" * (70 * 1024)
    S["am"].post([am_alert("HugeAlone", "huge", 1, {"description": big}),
                  am_alert("LongLabel", "huge", 2, long="z" * 5000),
                  am_alert("Mixed", "huge", 3, {"description": big}),
                  am_alert("Mixed", "huge", 4), am_alert("Mixed", "huge", 5)])
    got = poll(lambda: len(deliveries("huge")) >= 3 and deliveries("huge"),
               "Alertmanager's three webhooks to huge", timeout_s=30)
    by_name = {d["payload"]["groupLabels"]["alertname"]: d for d in got}
    alone = by_name["HugeAlone"]["payload"]
    eq(len(alone["commonAnnotations"].get("description", "")), 70 * 1024,
       "Alertmanager copied the 70 KB description into commonAnnotations")
    eq(len(by_name["LongLabel"]["payload"]["commonLabels"].get("long", "")), 5000,
       "Alertmanager copied the 5,000-byte label into commonLabels")
    for name, d in sorted(by_name.items()):
        eq(d["status"], 200, "the webhook of group %s answered (%s)" % (name, d["answer"]))
    eq(by_name["Mixed"]["answer"].get("invalid"), 1, "one invalid alert of three in Mixed")

    poll(lambda: len(S["gh"].issues(REPO)) == 2, "the two good Mixed alerts' issues",
         timeout_s=30)
    rc = subprocess.run([ALERTBRIDGE, "map", "list", "--database.path=" + S["ab"].db],
                        capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    out = rc.stdout
    event("map list:\n" + out.rstrip())
    # "receiver key - (no issue) status startsAt dead: reason" (cmd/map.c)
    dead = [ln for ln in out.splitlines()
            if re.search(r"\(no issue\) \S+ \S+ dead: invalid alert:", ln)]
    eq(len(dead), 3, "three dead letters in map list")
    check(sum("annotations.description: longer than 65536 bytes" in ln for ln in dead) == 2 and
          sum("labels.long: longer than 4096 bytes" in ln for ln in dead) == 1,
          "each with its reason", dead)
    text = metrics()
    eq(metric_sample(text, "alertbridge_webhook_alerts_invalid_total",
              'receiver="huge",reason="annotations"'), 2, "invalid annotations counted")
    eq(metric_sample(text, "alertbridge_webhook_alerts_invalid_total",
              'receiver="huge",reason="labels"'), 1, "invalid labels counted")
    eq(metric_sample(text, "alertbridge_webhook_requests_total", 'receiver="huge",code="400"'), 0,
       "no 400")
    log = open(S["ab"].log_path, encoding="utf-8", errors="replace").read()
    check('msg="webhook group fields left out" receiver=huge dropped=1 '
          'field=commonAnnotations.description' in log, "the cut logged")


@run.case
def a_group_of_2500_alerts_arrives_with_the_default_body_limit():
    t = time.time()
    S["am"].post([am_alert("BigGroup", "big", i) for i in range(N_BIG)])
    event("posted %d alerts to Alertmanager in %.1f s" % (N_BIG, time.time() - t))
    d = poll(lambda: deliveries("big") and deliveries("big")[0], "the big group's webhook",
             timeout_s=30)
    size = len(d["raw"])
    event("the %d-alert webhook: %d bytes (%d per alert), answered %s" % (
        len(d["payload"]["alerts"]), size, size // N_BIG, d["status"]))
    eq(len(d["payload"]["alerts"]), N_BIG, "every alert in one webhook (max_alerts: 0)")
    check(size > OLD_DEFAULT_MAX_BODY, "over the old 1 MiB default", size)
    eq(d["status"], 200, "answered 200 (%s)" % d["answer"])
    issue = poll(lambda: [i for i in S["gh"].issues(REPO) if "BigGroup" in i["title"]],
                 "the group's issue", timeout_s=30)
    eq(len(issue), 1, "one issue for the group")
    eq(metric_sample(metrics(), "alertbridge_webhook_requests_total",
                     'receiver="big",code="200"'), 1, "counted as one 200")


@run.case
def truncated_alerts_are_logged_counted_and_kept_for_the_view():
    S["am"].post([am_alert("Trunc", "trunc", i) for i in range(8)])
    d = poll(lambda: deliveries("trunc") and deliveries("trunc")[0], "the truncated webhook",
             timeout_s=30)
    eq((len(d["payload"]["alerts"]), d["payload"]["truncatedAlerts"]), (5, 3),
       "Alertmanager sent 5 alerts and truncatedAlerts 3")
    eq(d["status"], 200, "answered 200")
    eq(metric_sample(metrics(), "alertbridge_webhook_alerts_truncated_total", 'receiver="trunc"'),
       3, "alertbridge_webhook_alerts_truncated_total")
    log = open(S["ab"].log_path, encoding="utf-8", errors="replace").read()
    check('msg="webhook alerts truncated by alertmanager" receiver=trunc truncated=3 alerts=5'
          in log, "logged")
    payloads = [p for (p,) in db("SELECT payload FROM events WHERE receiver = 'trunc'")]
    eq(len(payloads), 1, "one group event")
    check('"truncatedAlerts":3' in payloads[0], "the event keeps truncatedAlerts for the view",
          payloads[0][-300:])
    poll(lambda: [i for i in S["gh"].issues(REPO) if "Trunc" in i["title"]],
         "the truncated group's issue", timeout_s=30)


if __name__ == "__main__":
    sys.exit(run.run(on_failure=tail_on_failure(S), after=stop))
