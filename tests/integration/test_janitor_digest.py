#!/usr/bin/env python3
# run.sh: weight 41, asan skip
# (its code runs under the sanitizers in test_janitor_digest.c and test_store_digest.c)
"""test_janitor_digest.py - one Slack notice per owner, not per pod (issue 11, item 5): the real
alertbridge against fake_kube and fake_slack.

  - 500 due pods of one owner: the sweep's notices go out as a digest of at most 50 pods per
    message (10 chat.postMessage calls, no other Slack call), every pod listed exactly once
    across the parts; each pod is deleted only after its part was delivered notice_lead
    before, and its deletion is replied in its part's thread (one reply per part and sweep).
  - a burst of alerts within janitor.notice_batch_window joins one digest; a pod that becomes
    active (its alert resolved) after the digest and before the deletion is spared, and the
    "never mind" reply is in the digest's thread.
  - a digest written to the outbox but not delivered (Slack answering 500) survives a crash
    (SIGKILL) and a restart: delivered once, no pod missing or listed twice, no pod deleted
    while it was undelivered.
Prints the Slack call counts and, last, "N passed, N failed".  Env: ALERTBRIDGE_BIN (default
./alertbridge), E2E_ONLY=name.
"""

import os
import re
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import ALERTBRIDGE  # noqa: E402
from harness import (Failure, Runner, check, eq, event, free_port, http, iso_ms,  # noqa: E402
                     kill9, poll, print_tail)
from harness import start_alertbridge, stop_all  # noqa: E402

KUBE_TOKEN = "digest-kube-token"
SLACK_TOKEN = "xoxb-digest-slack-token"
HOOK_TOKEN = "digest-janitor-webhook-secret"
NS = "ml"
CPU = "JanitorIdleCPUPod"
GRACE_S, NOTICE_LEAD_S, SWEEP_S, WINDOW_S = 8, 3, 1, 2
SLOP_S = 0.3
POD_RE = re.compile(r"`%s/(p\d+)`" % NS)

run = Runner()
figures = {}


def utc(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


class Stack:
    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix="ab-jdigest-%s-" % name)
        self.kube = FakeKube(token=KUBE_TOKEN, namespaces=("default", "kube-system", NS)).start()
        self.slack = FakeSlack(token=SLACK_TOKEN).start()
        self.slack.add_channel("C0TEAM", "ml-team")
        self.kube.write_kubeconfig(os.path.join(self.dir, "kubeconfig"), namespace=NS)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        for name_, text in (("webhook-token", HOOK_TOKEN), ("slack-token", SLACK_TOKEN)):
            with open(os.path.join(self.dir, name_), "w") as f:
                f.write(text + "\n")
        self.config = os.path.join(self.dir, "alertbridge.yml")
        with open(self.config, "w") as f:
            f.write("listen_address: 127.0.0.1:%d\n"
                    "database: alertbridge.db\n"
                    "log: {level: info, format: logfmt}\n"
                    "webhook: {bearer_token_file: webhook-token}\n"
                    "janitor:\n"
                    "  enabled: true\n"
                    "  dry_run: false\n"
                    "  kubernetes: {kubeconfig: kubeconfig}\n"
                    "  sweep_interval: %ds\n"
                    "  max_deletions_per_sweep: 500\n"
                    "  notice_batch_window: %ds\n"
                    "  policies:\n"
                    "    - {alertname: %s, grace: %ds, notice_lead: %ds, reminder_before: 0s}\n"
                    "  slack: {api_url: %s, bot_token_file: slack-token, "
                    "default_channel: \"#gpu\", owner_label: owner}\n"
                    "leader_election: {enabled: false}\n"
                    % (self.port, SWEEP_S, WINDOW_S, CPU, GRACE_S, NOTICE_LEAD_S,
                       self.slack.api_url))
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.ab = None
        self.runs = 0

    def start(self):
        self.runs += 1
        self.ab = start_alertbridge(ALERTBRIDGE, self.config, self.dir, self.url,
                                    log_name="alertbridge-%d.log" % self.runs)
        return self

    def stop(self):
        stop_all((lambda: self.ab and self.ab.stop(), self.kube.stop, self.slack.stop), self.dir)

    def post_mortem(self):
        if self.ab is not None:
            print_tail("alertbridge log (last 60 lines)", self.ab.tail(60))
        print_tail("fake slack requests (last 30)", "\n".join(
            "%.2f %s -> %s" % (r["time"], r["slack_method"], r["status"])
            for r in self.slack.get_requests()[-30:]))

    def add_pods(self, names, annotations):
        for p in names:
            self.kube.add_pod(NS, p, annotations=dict(annotations))

    def parts(self):
        """Top-level Slack messages (digest parts or single notices) listing pods."""
        return [m for m in self.slack.get_messages()
                if not m["thread_ts"] and POD_RE.search(m["text"] or "")]

    def replies(self):
        return [m for m in self.slack.get_messages() if m["thread_ts"]]

    def posts(self, top_level=None):
        out = []
        for r in self.slack.get_requests():
            if r["slack_method"] != "chat.postMessage":
                continue
            threaded = bool((r.get("body") or {}).get("thread_ts"))
            if top_level is None or top_level != threaded:
                out.append(r)
        return out

    def deletes(self):
        return {r["path"].rsplit("/", 1)[1]: r for r in self.kube.get_requests()
                if r["method"] == "DELETE" and r["status"] == 200
                and r["path"].startswith("/api/v1/namespaces/%s/pods/" % NS)}

    def fire(self, pods, status="firing"):
        alerts = [{"status": status,
                   "labels": {"alertname": CPU, "namespace": NS, "pod": p,
                              "uid": self.kube.pod(NS, p)["metadata"]["uid"]},
                   "annotations": {"summary": "%s idle" % p},
                   "startsAt": iso_ms(time.time() - 60),
                   "endsAt": iso_ms(time.time() - 1) if status == "resolved"
                   else "0001-01-01T00:00:00Z"} for p in pods]
        body = {"version": "4", "status": status, "receiver": "janitor",
                "groupKey": "{}:{alertname=\"%s\"}" % CPU, "groupLabels": {"alertname": CPU},
                "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am",
                "alerts": alerts}
        st, _, j = http("POST", self.url + "/v1/janitor/webhook", body=body,
                        headers={"Authorization": "Bearer " + HOOK_TOKEN})
        eq(st, 200, "webhook answer (%s)" % j)


def wait_progress(count, want, what, deadline_s=300):
    """Wait until count() reaches want, as long as it grows within 60 s each time (a sweep
    of 500 pods against the Python fake takes longer than one poll may wait)."""
    end = time.time() + deadline_s
    while count() < want:
        if time.time() > end:
            raise Failure("%s: %d of %d after %d s" % (what, count(), want, deadline_s))
        last = count()
        if last >= want:  # reached between the loop's test and here
            break
        poll(lambda: count() > last, "%s: more than %d" % (what, last), timeout_s=60,
             interval_s=1)


def listed(parts):
    """pod -> the parts listing it."""
    out = {}
    for m in parts:
        for p in POD_RE.findall(m["text"]):
            out.setdefault(p, []).append(m)
    return out


def check_each_listed_once(parts, pods):
    by_pod = listed(parts)
    eq(sorted(by_pod), sorted(pods), "the pods the digest parts list")
    twice = sorted(p for p, ms in by_pod.items() if len(ms) != 1)
    eq(twice, [], "pods listed more than once")
    for m in parts:
        check(len(POD_RE.findall(m["text"])) <= 50, "at most 50 pods in a part",
              len(POD_RE.findall(m["text"])))
        check(len(m["text"]) <= 40000, "a part within Slack's 40,000 characters",
              len(m["text"]))
    return {p: ms[0] for p, ms in by_pod.items()}


def check_deleted_after_delivery(st, part_of, pods):
    dels = st.deletes()
    for p in pods:
        check(p in dels, "%s deleted" % p)
        check(dels[p]["time"] >= part_of[p]["time"] + NOTICE_LEAD_S - SLOP_S,
              "%s deleted notice_lead after its part was delivered" % p,
              (dels[p]["time"], part_of[p]["time"]))


def check_replies_in_part_threads(st, part_of, pods, word):
    """Each pod's reply containing word is in the thread of the part listing it, once."""
    seen = {}
    for m in st.replies():
        if word not in (m["text"] or ""):
            continue
        for p in POD_RE.findall(m["text"]):
            seen.setdefault(p, []).append(m)
    for p in pods:
        eq(len(seen.get(p, [])), 1, "replies (%s) about %s" % (word, p))
        eq(seen[p][0]["thread_ts"], part_of[p]["ts"], "%s's reply threads under its part" % p)
    return seen


_live = {}


def new_stack(name):
    """A fresh stack; the previous case's (kept for on_failure's post-mortem) is stopped."""
    old = _live.pop("stack", None)
    if old is not None:
        old.stop()
    st = _live["stack"] = Stack(name)
    return st


@run.case
def five_hundred_due_pods_of_one_owner():
    st = new_stack("500")
    pods = ["p%03d" % i for i in range(500)]
    # Due already (a person's janitor/expires in the past): each sweep notices them at once.
    st.add_pods(pods, {"janitor/expires": utc(time.time() - 60), "janitor/notify": "#ml-team"})
    st.start()
    t0 = time.time()
    poll(lambda: len(listed(st.parts())) == 500, "all 500 pods in delivered notices",
         timeout_s=60, interval_s=0.5)
    noticed_s = time.time() - t0
    notice_calls = len(st.slack.get_requests())
    wait_progress(lambda: len(st.deletes()), 500, "pods deleted")
    poll(lambda: sum(len(POD_RE.findall(m["text"])) for m in st.replies()) >= 500,
         "the 500 deletions replied", timeout_s=60, interval_s=0.5)
    parts = st.parts()
    part_of = check_each_listed_once(parts, pods)
    eq(len(parts), 10, "digest parts (messages) for 500 pods")
    eq(len(st.posts(top_level=True)), 10, "top-level chat.postMessage calls")
    eq(notice_calls, 10, "Slack calls until every pod was told")
    check_deleted_after_delivery(st, part_of, pods)
    check_replies_in_part_threads(st, part_of, pods, "was deleted")
    others = sorted({r["slack_method"] for r in st.slack.get_requests()} - {"chat.postMessage"})
    eq(others, [], "Slack methods besides chat.postMessage")
    figures["500 pods: notice calls"] = notice_calls
    figures["500 pods: seconds until all told"] = round(noticed_s, 1)
    figures["500 pods: reply calls"] = len(st.posts(top_level=False))
    figures["500 pods: Slack calls in all"] = len(st.slack.get_requests())
    event("500 pods: %d Slack calls to tell them (%.1f s), %d replies" % (
        notice_calls, noticed_s, len(st.posts(top_level=False))))


@run.case
def burst_of_alerts_joins_one_digest_and_active_pod_is_spared():
    st = new_stack("burst")
    pods = ["p%d" % i for i in range(6)]
    st.add_pods(pods, {"janitor/notify": "#ml-team"})
    st.start()
    for i in range(3):   # three webhooks within the window
        st.fire(pods[2 * i:2 * i + 2])
        time.sleep(0.4)
    poll(lambda: st.parts(), "the digest", timeout_s=30)
    time.sleep(WINDOW_S + 1)   # nothing else comes
    parts = st.parts()
    eq(len(parts), 1, "top-level messages for a burst of 6 alerts within the window")
    part_of = check_each_listed_once(parts, pods)
    # p0 becomes active again: its alert resolves after the digest, before the deletion.
    st.fire(["p0"], status="resolved")
    poll(lambda: len(st.deletes()) == 5, "the other 5 deleted", timeout_s=GRACE_S + 20)
    time.sleep(SWEEP_S * 2)
    check("p0" not in st.deletes(), "p0 (active again) not deleted")
    ann = st.kube.pod(NS, "p0")["metadata"].get("annotations", {})
    check("janitor/expires" not in ann, "p0 unmarked", ann)
    check_deleted_after_delivery(st, part_of, pods[1:])
    poll(lambda: len([m for m in st.replies() if "was deleted" in m["text"]]) >= 1,
         "the deletion replies", timeout_s=20)
    check_replies_in_part_threads(st, part_of, pods[1:], "was deleted")
    check_replies_in_part_threads(st, part_of, ["p0"], "Never mind")


@run.case
def undelivered_digest_survives_a_crash():
    st = new_stack("crash")
    pods = ["p%02d" % i for i in range(60)]
    st.add_pods(pods, {"janitor/expires": utc(time.time() - 60), "janitor/notify": "#ml-team"})
    st.slack.add_fault(method="chat.postMessage", count=100000, status=500)
    st.start()

    def queued():
        try:
            with sqlite3.connect("file:%s?mode=ro" % st.db, uri=True, timeout=5) as db:
                return db.execute("SELECT count(*) FROM notices WHERE digest_id IS NOT NULL"
                                  ).fetchone()[0] == 60
        except sqlite3.Error:
            return False
    poll(queued, "the 60 notices in digests in the outbox", timeout_s=30)
    poll(lambda: st.slack.get_requests(), "a failed post", timeout_s=30)
    kill9(st.ab)
    eq(st.deletes(), {}, "pods deleted while the digest was undelivered")
    with st.slack.lock:
        st.slack.faults = []
    st.start()
    poll(lambda: len(st.deletes()) == 60, "all 60 pods deleted after the restart", timeout_s=60)
    parts = st.parts()
    eq(len(parts), 2, "digest parts for 60 pods (50 + 10), each delivered once")
    part_of = check_each_listed_once(parts, pods)
    check_deleted_after_delivery(st, part_of, pods)


@run.case
def fake_slack_enforces_the_documented_limits():
    """The fake answers as Slack's chat.postMessage reference says past its limits, so a
    digest part that broke them would fail here as it would on Slack."""
    fs = FakeSlack(token=SLACK_TOKEN).start()
    try:
        def post(**args):
            args.setdefault("channel", "#ml-team")
            st_, _, j = http("POST", fs.api_url + "/chat.postMessage", body=args,
                             headers={"Authorization": "Bearer " + SLACK_TOKEN})
            eq(st_, 200, "HTTP status")
            return j.get("error") if not j.get("ok") else "ok"
        eq(post(text="x" * 40000), "ok", "40,000 characters")
        eq(post(text="é" * 40001), "msg_too_long", "40,001 characters")
        section = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3000}}
        eq(post(text="t", blocks=[section] * 50), "ok", "50 sections of 3,000 characters")
        eq(post(text="t", blocks=[section] * 51), "invalid_blocks", "51 blocks")
        long_ = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}
        eq(post(text="t", blocks=[long_]), "invalid_blocks", "a section of 3,001 characters")
        field = {"type": "section", "fields": [{"type": "mrkdwn", "text": "x" * 3001}]}
        eq(post(text="t", blocks=[field]), "invalid_blocks", "a field of 3,001 characters")
        eq(len(fs.get_messages()), 2, "messages posted")
    finally:
        fs.stop()


def on_failure(name):
    st = _live.get("stack")
    if st is not None:
        st.post_mortem()


def after():
    st = _live.pop("stack", None)
    if st is not None:
        st.stop()
    print("figures: " + ", ".join("%s %s" % kv for kv in sorted(figures.items())), flush=True)


def main():
    return run.run(on_failure=on_failure, only=os.environ.get("E2E_ONLY"), after=after)


if __name__ == "__main__":
    sys.exit(main())
