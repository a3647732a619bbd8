#!/usr/bin/env python3
# run.sh: weight 16, quick
"""test_slack_postpone.py - "Keep my pod" from Slack (issue 21, section 2), end to end.

The real binary marks a pod from a janitor alert and posts its notice to the fake Slack with a
"Keep until ..." button (janitor.slack.signing_secret_file is set).  The fake Slack then sends
clicks to POST /v1/slack/interactions as Slack does (block_actions, form-encoded payload=,
X-Slack-Request-Timestamp and the v0= HMAC-SHA256 signature; a response_url of its own), and
the fake Kubernetes refuses a patch whose metadata.uid or resourceVersion is stale (409, as the
API server's preconditions do).  Checked:
  - no signature, a wrong secret, a tampered body, a timestamp 301 s old: 401, nothing changes;
  - another user's click: an ephemeral "only by its owner" answer, nothing changes;
  - the owner's click: janitor/expires moves postpone_by (8 s here) later, janitor/postponed
    "1", the PATCH carries the pod's uid and resourceVersion, the message is updated (button
    gone, who kept it until when), a reply in its thread, a JanitorPostponed Event;
  - the same request replayed: 200, nothing changes; the same button clicked again: an
    ephemeral "kept already", nothing changes;
  - the pod is deleted only after the new expiry (after a fresh notice);
  - a reload (SIGHUP) reads a rotated signing secret: the old one is refused.
Short durations: grace 6s, notice_lead 3s, postpone_by 8s, sweep_interval 1s (about 25 s).
Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import calendar
import json
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import ALERTBRIDGE  # noqa: E402
from harness import (Failure, Proc, Runner, check, eq, event, free_port, http, iso_ms,  # noqa: E402
                     poll, print_tail, wait_ready, webhook_payload)
from harness import config_head, janitor_head, slack_section, write_files  # noqa: E402

KUBE_TOKEN = "postpone-kube-token"
SLACK_TOKEN = "xoxb-postpone-token"
HOOK_TOKEN = "postpone-webhook-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
GPU = "JanitorIdleGPUPod"
GRACE_S, LEAD_S, POSTPONE_S = 6, 3, 8
NS, POD = "ml", "train-1"

run = Runner()
st = {}


def parse_time(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


class Stack:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ab-postpone-")
        self.kube = FakeKube(token=KUBE_TOKEN, namespaces=("default", "kube-system", NS)).start()
        self.slack = FakeSlack(token=SLACK_TOKEN).start()
        self.slack.add_user("U0ALICE", "alice@example.com")
        self.slack.add_user("U0BOB", "bob@example.com")
        self.kube.write_kubeconfig(os.path.join(self.dir, "kubeconfig"), namespace=NS)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        write_files(self.dir, (("webhook-token", HOOK_TOKEN), ("slack-token", SLACK_TOKEN),
                               ("slack-signing-secret", SIGNING_SECRET)))
        with open(os.path.join(self.dir, "alertbridge.yml"), "w") as f:
            f.write(config_head(self.port) + janitor_head("1s") +
                    "  notice_batch_window: 0s\n"
                    "  policies:\n"
                    "    - {alertname: %s, grace: %ds, notice_lead: %ds, reminder_before: 0s,\n"
                    "       postpone_by: %ds, max_postpones: 1}\n"
                    % (GPU, GRACE_S, LEAD_S, POSTPONE_S) + slack_section(self.slack.api_url))
        self.ab = Proc("alertbridge", [ALERTBRIDGE, "serve", "--config.file=alertbridge.yml"],
                       os.path.join(self.dir, "alertbridge.log"), cwd=self.dir)

    def start(self):
        self.ab.start()
        wait_ready(self.ab, self.url + "/-/ready")

    def stop(self):
        self.ab.stop()
        self.kube.stop()
        self.slack.stop()

    def post_interaction(self, body, headers):
        return http("POST", self.url + "/v1/slack/interactions", raw=body, headers=headers)

    def pod(self):
        return self.kube.pod(NS, POD)

    def annotations(self):
        return dict(self.pod()["metadata"].get("annotations") or {})

    def metric(self, line):
        text = http("GET", self.url + "/metrics")[2]
        for ln in text.splitlines():
            if ln.startswith(line + " "):
                return float(ln.split()[-1])
        return 0.0


S = None


def button_value(msg):
    for b in msg.get("blocks") or []:
        for el in b.get("elements") or []:
            if el.get("action_id") == "postpone":
                return el["value"], el["text"]["text"]
    return None


def unchanged_since(kube_mark, slack_mark, ann):
    """No write to Kubernetes, no Slack call, the pod's annotations as they were."""
    muts = [r for r in S.kube.get_requests()[kube_mark:] if r["method"] in ("PATCH", "DELETE")]
    eq(muts, [], "Kubernetes writes")
    eq([r["path"] for r in S.slack.get_requests()[slack_mark:]], [], "Slack calls")
    eq(S.annotations(), ann, "the pod's annotations")


@run.case
def notice_carries_the_keep_button():
    uid = S.kube.add_pod(NS, POD, labels={"owner": "U0ALICE"})["metadata"]["uid"]
    alert = {"status": "firing", "fingerprint": "00000000deadbeef",
             "labels": {"alertname": GPU, "namespace": NS, "pod": POD, "uid": uid},
             "annotations": {"summary": "GPU idle for 2h"}, "startsAt": iso_ms(time.time() - 60)}
    code, _, body = http("POST", S.url + "/v1/janitor/webhook",
                         body=webhook_payload("janitor", [alert]),
                         headers={"Authorization": "Bearer " + HOOK_TOKEN})
    eq(code, 200, "janitor webhook answer (%s)" % body)
    msg = poll(lambda: next((m for m in S.slack.get_messages() if button_value(m)), None),
               "a notice with a Keep button", timeout_s=20)
    value, label = button_value(msg)
    eq(json.loads(value), {"ns": NS, "pod": POD, "uid": uid,
                           "notice": json.loads(value)["notice"]}, "the button's value")
    check(label.startswith("Keep until "), "the button's label", label)
    eq(msg["channel_id"], "D0ALICE", "the owner's DM (owner label U0ALICE)")
    check(msg["blocks"][0]["type"] == "section" and POD in msg["blocks"][0]["text"]["text"],
          "the notice's text as a section", msg["blocks"][0])
    ann = poll(lambda: (S.annotations() if "janitor/notified-at" in S.annotations() else None),
               "janitor/notified-at on the pod", timeout_s=20)
    st.update(uid=uid, msg=msg, value=value, expires=ann["janitor/expires"])
    event("notice %s: %r, expires %s" % (msg["ts"], label, ann["janitor/expires"]))


@run.case
def unsigned_forged_and_stale_clicks_are_refused():
    ann, km, sm = S.annotations(), len(S.kube.get_requests()), len(S.slack.get_requests())
    body, h = S.slack.click_request(st["msg"], st["value"], SIGNING_SECRET)
    cases = [
        ("no signature", body, {k: v for k, v in h.items() if k != "X-Slack-Signature"},
         "no_signature"),
        ("no timestamp", body, {k: v for k, v in h.items() if k != "X-Slack-Request-Timestamp"},
         "no_timestamp"),
        ("wrong secret", *S.slack.click_request(st["msg"], st["value"], "not-the-secret"),
         "bad_signature"),
        ("tampered body", body.replace(b"U0ALICE", b"U0BOB"), h, "bad_signature"),
        ("301 s old", *S.slack.click_request(st["msg"], st["value"], SIGNING_SECRET,
                                             timestamp=time.time() - 301), "stale"),
    ]
    for what, b, hh, reason in cases:
        code, _, answer = S.post_interaction(b, hh)
        eq(code, 401, "answer to a click with %s (%s)" % (what, answer))
        check(S.metric('alertbridge_slack_interactions_total{outcome="refused",reason="%s"}'
                       % reason) >= 1, "refusal counted as %s" % reason)
    time.sleep(1.5)  # a sweep or two: had anything been queued, it would show
    unchanged_since(km, sm, ann)
    eq(S.slack.get_responses(), [], "answers to refused requests")


@run.case
def another_user_is_told_only_the_owner_may():
    ann, km = S.annotations(), len(S.kube.get_requests())
    body, h = S.slack.click_request(st["msg"], st["value"], SIGNING_SECRET, user="U0BOB")
    code, _, answer = S.post_interaction(body, h)
    eq(code, 200, "answer to Bob's signed click (%s)" % answer)
    r = poll(lambda: S.slack.get_responses(), "an ephemeral answer to Bob", timeout_s=10)
    eq(r[0]["body"]["response_type"], "ephemeral", "response_type")
    check("can be kept only by its owner" in r[0]["body"]["text"], "why", r[0]["body"]["text"])
    eq([x for x in S.kube.get_requests()[km:] if x["method"] == "PATCH"], [], "patches")
    eq(S.annotations(), ann, "the pod's annotations")


@run.case
def the_owner_keeps_the_pod_postpone_by_longer():
    km = len(S.kube.get_requests())
    body, h = S.slack.click_request(st["msg"], st["value"], SIGNING_SECRET, user="U0ALICE")
    t = time.time()
    code, _, answer = S.post_interaction(body, h)
    event("click answered %d in %.0f ms" % (code, (time.time() - t) * 1000))
    eq(code, 200, "answer to Alice's signed click (%s)" % answer)
    ann = poll(lambda: (S.annotations() if S.annotations().get("janitor/postponed") else None),
               "janitor/postponed on the pod", timeout_s=10)
    eq(ann["janitor/postponed"], "1", "janitor/postponed")
    eq(parse_time(ann["janitor/expires"]), parse_time(st["expires"]) + POSTPONE_S,
       "janitor/expires moved postpone_by later")
    eq(ann["janitor/marked-expires"], ann["janitor/expires"], "still the janitor's own mark")
    check("janitor/notified-at" not in ann, "notified-at cleared: a fresh notice comes", ann)
    patch = [r for r in S.kube.get_requests()[km:] if r["method"] == "PATCH"][0]
    md = patch["body"]["metadata"]
    eq(md["uid"], st["uid"], "the PATCH's uid precondition")
    check(md.get("resourceVersion"), "the PATCH's resourceVersion precondition", md)
    msg = poll(lambda: (S.slack.message(st["msg"]["ts"])
                        if S.slack.message(st["msg"]["ts"]).get("edited") else None),
               "the notice updated", timeout_s=10)
    line = ("<@U0ALICE> kept pod `%s/%s` until %s (1 of 1)." % (NS, POD, ann["janitor/expires"]))
    check(msg["text"].endswith(line), "the updated text", msg["text"])
    eq(button_value(msg), None, "the clicked button is gone")
    reply = poll(lambda: next((m for m in S.slack.get_messages()
                               if m["thread_ts"] == st["msg"]["ts"]), None),
                 "a reply in the notice's thread", timeout_s=10)
    check(line in reply["text"], "the thread reply", reply["text"])
    evs = poll(lambda: [e for e in S.kube.list("Event", NS) if e.get("reason") ==
                        "JanitorPostponed"], "a JanitorPostponed Event", timeout_s=10)
    check("by Slack user U0ALICE" in evs[0]["message"], "the Event's message", evs[0]["message"])
    st.update(new_expires=ann["janitor/expires"], ann=ann, click=(body, h))
    event("kept until %s; message now: %r; thread reply: %r; Event: %r" % (
        ann["janitor/expires"], msg["text"], reply["text"], evs[0]["message"]))


@run.case
def a_replay_or_a_second_click_changes_nothing():
    ann, km = S.annotations(), len(S.kube.get_requests())
    body, h = st["click"]
    code, _, _ = S.post_interaction(body, h)   # the same request again (Slack's retry, or a replay)
    eq(code, 200, "answer to the replayed request")
    check(S.metric('alertbridge_slack_interactions_total{outcome="accepted",reason="duplicate"}')
          >= 1, "counted as a duplicate")
    n = len(S.slack.get_responses())
    body, h = S.slack.click_request(st["msg"], st["value"], SIGNING_SECRET, user="U0ALICE")
    eq(S.post_interaction(body, h)[0], 200, "answer to the second click")
    r = poll(lambda: S.slack.get_responses()[n:], "an ephemeral answer to the second click",
             timeout_s=10)
    check("kept already with this button" in r[0]["body"]["text"], "why", r[0]["body"]["text"])
    eq([x for x in S.kube.get_requests()[km:] if x["method"] == "PATCH" and
        "janitor/postponed" in json.dumps(x["body"])], [], "postpone patches")
    eq(S.annotations().get("janitor/expires"), ann["janitor/expires"], "janitor/expires")
    eq(S.annotations().get("janitor/postponed"), "1", "janitor/postponed")


@run.case
def deleted_only_after_the_new_expiry():
    dl = poll(lambda: [r for r in S.kube.get_requests() if r["method"] == "DELETE"],
              "the pod's deletion", timeout_s=30)
    eq(len(dl), 1, "deletions")
    check(dl[0]["time"] >= parse_time(st["new_expires"]), "deleted at or after %s"
          % st["new_expires"], iso_ms(dl[0]["time"]))
    eq(dl[0]["body"]["preconditions"]["uid"], st["uid"], "the DELETE's uid precondition")
    notices = [m for m in S.slack.get_messages() if m["ts"] != st["msg"]["ts"]
               and not m["thread_ts"] and "marked for clean-up" in (m["text"] or "")]
    check(notices, "a fresh notice before the new expiry", S.slack.get_messages())
    # max_postpones is 1 and the pod was kept once: a click could only be refused (8cc4986)
    eq([button_value(m) for m in notices], [None] * len(notices),
       "the fresh notice's Keep button, at max_postpones")
    check(S.metric('alertbridge_janitor_postpones_total{result="done",reason="done"}') == 1,
          "one postpone done")
    event("deleted at %s, new expiry %s; answers: %r" % (
        iso_ms(dl[0]["time"]), st["new_expires"],
        [r["body"]["text"] for r in S.slack.get_responses()]))


@run.case
def a_reload_reads_the_new_signing_secret():
    with open(os.path.join(S.dir, "slack-signing-secret"), "w") as f:
        f.write("rotated-signing-secret\n")
    S.ab.p.send_signal(signal.SIGHUP)

    def answer(secret):
        body, h = S.slack.click_request(st["msg"], st["value"], secret, action_id="other")
        return S.post_interaction(body, h)[0]
    poll(lambda: answer("rotated-signing-secret") == 200, "the rotated secret accepted",
         timeout_s=10)
    eq(answer(SIGNING_SECRET), 401, "answer to a click signed with the old secret")


def main():
    global S
    if not os.path.exists(ALERTBRIDGE):
        print("no binary %s" % ALERTBRIDGE)
        return 1
    S = Stack()
    try:
        S.start()
    except Failure as e:
        print_tail("alertbridge", S.ab.tail(60))
        print("0 passed, 1 failed (%s)" % e)
        return 1

    def on_failure(name):
        print_tail("alertbridge", S.ab.tail(60))

    def after():
        S.stop()
        shutil.rmtree(S.dir, ignore_errors=True)

    return run.run(on_failure=on_failure, after=after)


if __name__ == "__main__":
    sys.exit(main())
