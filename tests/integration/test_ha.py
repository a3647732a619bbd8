#!/usr/bin/env python3
# run.sh: weight 26
"""test_ha.py - two real Alertmanagers in a gossip cluster (an HA pair) both notify alertbridge:
exactly one issue per alert, and a resolve closes it once.

    Prometheus (this test) --alerts--> am1, am2 (clustered on loopback, same config)
    am1, am2 --webhook--> recording proxy --> alertbridge --REST--> fake GitHub

Alerts are posted to BOTH Alertmanagers, as Prometheus does.  The pair deduplicates through its
gossiped notification log, but only as well as gossip keeps up; here --cluster.peer-timeout=0s
makes the second member send without waiting for the first (as a slow gossip or a partition
would), and the proxy answers each webhook 3 s late, so a member's notification log entry
(written once its webhook was answered) cannot reach the other before that one sends: both
deliver every notification, the duplicates reach alertbridge, whose map makes the outcome
exact.  (Without the late answer, on a loaded machine the members' sends drift apart and the
gossiped entry can arrive first: no duplicate at all, as a CI run saw.)

Env: ALERTBRIDGE_BIN, ALERTMANAGER_BIN, HA_ONLY=name,name.
Prints a timeline and, last, "N passed, N failed".
"""

import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertbridge, Runner, WebhookProxy, check,  # noqa: E402
                     clustered_alertmanager, eq, event, free_port, http, issues_by_key, iso_ms,
                     poll, print_tail, wait_ready)
from harness import cases_main, stop_all  # noqa: E402

REPO = "acme/ha"
GH_TOKEN = "ghs_haTestToken0123456789"
RECEIVER = "bridge"
N_ALERTS = 6
ANSWER_DELAY_S = 3   # each webhook answered this late: see the docstring

run = Runner()


def alert(i, starts, ends=None):
    a = {"labels": {"alertname": "HaTest", "pod": "pod-%d" % i, "namespace": "ha",
                    "severity": "critical"},
         "annotations": {"summary": "HA test alert %d" % i},
         "startsAt": iso_ms(starts)}
    if ends is not None:
        a["endsAt"] = iso_ms(ends)
    return a


def cluster_peers(am):
    st, _, body = http("GET", am.url + "/api/v2/status", timeout_s=2)
    if st != 200 or not isinstance(body, dict):
        return []
    return [p for p in (body.get("cluster") or {}).get("peers") or []]


@run.case
def ha_pair_makes_one_issue_per_alert_and_closes_it_once():
    tmp = tempfile.mkdtemp(prefix="ab-ha-")
    gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, REPO, receiver=RECEIVER)
    proxy = WebhookProxy(ab.port, answer_delay_s=ANSWER_DELAY_S)
    url = "http://127.0.0.1:%d/v1/webhook" % proxy.port
    c1, c2 = free_port(), free_port()
    ams = [clustered_alertmanager(tmp, name, url, ab.hook_file, mine, [peer],
                                  receiver=RECEIVER, group_by=("alertname", "pod"),
                                  group_wait="1s", group_interval="2s")
           for name, mine, peer in (("am1", c1, c2), ("am2", c2, c1))]
    for am in ams:
        # No peer wait: the second member does not wait for the first's notification log
        # entry, so both deliver (as with a slow gossip or a partition).
        am.proc.argv = [a.replace("--cluster.peer-timeout=1s", "--cluster.peer-timeout=0s")
                        for a in am.proc.argv]
    try:
        ab.start()
        for am in ams:
            am.proc.start()
        for am in ams:
            wait_ready(am.proc, am.url + "/-/ready", timeout_s=30)
        poll(lambda: all(len(cluster_peers(am)) == 2 for am in ams),
             "both Alertmanagers see a cluster of two", timeout_s=30)
        event("cluster formed: %s" % ", ".join(p["address"] for p in cluster_peers(ams[0])))

        t0 = time.time()
        firing = [alert(i, t0 - 10) for i in range(N_ALERTS)]
        for am in ams:
            am.post(firing)
        event("posted %d firing alerts to both Alertmanagers" % N_ALERTS)
        poll(lambda: len(gh.issues(REPO)) >= N_ALERTS, "%d issues" % N_ALERTS, timeout_s=60)
        time.sleep(5)  # repeats and the slower member's duplicates arrive now
        fps = {}
        for d in proxy.get():
            for a in (d["payload"] or {}).get("alerts", []):
                fps[a["labels"]["pod"]] = a["fingerprint"]
        eq(len(fps), N_ALERTS, "fingerprints seen in webhooks")

        resolved_pods = ["pod-%d" % i for i in range(0, N_ALERTS, 2)]
        ends = time.time() - 1
        for am in ams:
            am.post([alert(i, t0 - 10, ends) for i in range(0, N_ALERTS, 2)])
        event("posted %d resolutions to both Alertmanagers" % len(resolved_pods))

        def closed():
            byk = issues_by_key(gh.issues(REPO))
            return all(fps[p] in byk and byk[fps[p]][0]["state"] == "closed"
                       for p in resolved_pods)
        poll(closed, "the resolved alerts' issues closed", timeout_s=60)
        time.sleep(6)  # late duplicates of the resolution arrive now

        deliveries = proxy.get()
        seen = collections.Counter()
        for d in deliveries:
            if d["status"] != 200:
                continue
            for a in d["payload"]["alerts"]:
                seen[(a["fingerprint"], a["status"], a["startsAt"], a["endsAt"])] += 1
        dup_deliveries = sum(n - 1 for n in seen.values())
        reqs = gh.get_requests()
        creates = [r for r in reqs if r["method"] == "POST" and r["path"] ==
                   "/repos/%s/issues" % REPO]
        closes = [r for r in reqs if r["method"] == "PATCH" and
                  (r["body"] or {}).get("state") == "closed"]
        comments = [r for r in reqs if r["method"] == "POST" and r["path"].endswith("/comments")]
        issues = gh.issues(REPO)
        byk = issues_by_key(issues)
        event("figures: alertmanagers=2 alerts=%d resolved=%d webhooks=%d answered_200=%d "
              "alert_notifications=%d duplicate_notifications=%d issues=%d creates=%d "
              "closes=%d comments=%d duplicates=%d lost=%d" % (
                  N_ALERTS, len(resolved_pods), len(deliveries),
                  sum(1 for d in deliveries if d["status"] == 200), sum(seen.values()),
                  dup_deliveries, len(issues), len(creates), len(closes), len(comments),
                  sum(len(v) - 1 for v in byk.values()),
                  sum(1 for fp in fps.values() if fp not in byk)))
        eq(sorted(byk), sorted(fps.values()), "one issue key per alert")
        eq({k: len(v) for k, v in byk.items() if len(v) != 1}, {}, "keys with != 1 issue")
        eq(len(issues), N_ALERTS, "issues")
        eq(len(creates), N_ALERTS, "creates")
        for pod, fp in sorted(fps.items()):
            want = "closed" if pod in resolved_pods else "open"
            eq(byk[fp][0]["state"], want, "state of %s's issue" % pod)
            n = byk[fp][0]["number"]
            path = "/repos/%s/issues/%d" % (REPO, n)
            eq(len([r for r in closes if r["path"] == path]), 1 if want == "closed" else 0,
               "close calls for %s's issue" % pod)
            eq(len(gh.comments(REPO, n)), 1 if want == "closed" else 0,
               "comments on %s's issue" % pod)
        check(all(d["status"] == 200 for d in deliveries), "every webhook answered 200",
              [d["status"] for d in deliveries])
        # Else this test would not have shown alertbridge's own deduplication.
        eq(ab.stop(), 0, "alertbridge's exit code on SIGTERM")
        check(dup_deliveries >= N_ALERTS // 2, "both Alertmanagers delivered (duplicates reached "
              "alertbridge)", dup_deliveries)
    except BaseException:
        print_tail("alertbridge log (last 60 lines)", ab.tail(60))
        for am in ams:
            print_tail("%s log (last 15 lines)" % am.proc.name, am.proc.tail(15))
        raise
    finally:
        stop_all([am.stop for am in ams] + [ab.stop, proxy.stop, gh.stop], tmp)


if __name__ == "__main__":
    sys.exit(cases_main(run, "HA_ONLY"))
