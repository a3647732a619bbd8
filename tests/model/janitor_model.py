#!/usr/bin/env python3
# run.sh: weight 50, quick 33
# (make check runs it on 3 seeds)
"""janitor_model.py - the model-based test of the janitor (issue 21), with postpone steps.

One seed is one world: the real binary (`alertbridge serve`, janitor enabled and live, the
"Keep until" button on, --test.second-ms), the fake Kubernetes (tests/integration/fake_kube.py)
and the fake Slack (tests/integration/fake_slack.py), and seeded random steps drawn from the
enabled feature classes:

  fire resolve        an idle alert fires, or resolves (the pod is active again), posted to
                      /v1/janitor/webhook as Alertmanager does (labels namespace, pod, uid)
  replace delete      a person deletes a pod, or it is recreated under its name (a new uid,
                      no annotations); a deleted pod comes back later as a new pod
  race                the pod is replaced right after the janitor's next GET of it
                      (fake_kube's recreate_after): its PATCH or DELETE meets a new uid
  slack ratelimit     Slack's chat.postMessage fails (500) or rate limits (429, Retry-After)
  click               signed "Keep until" clicks (fake_slack.click_request): by the owner (on
                      the newest button, or "keen": waiting for a fresh unused one), by
                      someone else, the same button twice, the same request replayed, an old
                      button (a replaced pod's, or after the postpone limit), a SIGKILL right
                      after the click was stored (answered once, applied once); "limit": kept
                      max_postpones times, then a button of an earlier episode clicked
  kill                SIGKILL and restart on the same database
  wait                time passes (1-3 s): expiries are reached (grace 4 s, notice_lead 3 s,
                      postpone_by 3 s, max_postpones 2, max_lifetime 16 s, sweep 300 ms)

The janitor reads the wall clock; its durations are scaled down in the config (as
test_janitor_e2e/test_slack_postpone do), "time jumps" are real waits.  The reference model
(tests/model/janitor_reference.py) says which pods must be marked, the outcome each click must
get, and what the record may show; checked at quiet points (both queues and the outbox empty):
  - every event done, or dead-lettered with a reason (none is expected dead);
  - a pod whose alert fires is marked (and notified unless it was postponed since), one whose
    alert resolved carries no janitor annotation, a pod no alert named none at all;
  - in the fakes' records: no pod deleted without a notice delivered notice_lead before it
    (and after its last postpone), no pod touched whose uid no alert named, a deleted pod was
    expired (its postpones counted) and its alert not resolved before, postpones <=
    max_postpones and never past creation + max_lifetime, no Keep button after the limit;
  - each click's answer (the ephemeral text to response_url, or the postpone) as predicted.
At the end the faults are cleared and every pod whose alert still fires must be deleted
(after its expiry).

Env: MODEL_SEED=S (only seed S), MODEL_SEEDS=N (default 6), MODEL_FIRST (default 1),
MODEL_STEPS (default 20), MODEL_JOBS (default 6), MODEL_FEATURES, MODEL_KEEP, MODEL_REPEAT,
ALERTBRIDGE_BIN (default ./alertbridge); as tests/model/lifecycle.py (model_suite.py runs both).
A failing seed prints its steps and a one-line replay; the last line is "N passed, N failed".
"""

import hashlib
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

import lifecycle as lc  # noqa: E402
from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import free_port, http, iso_ms, webhook_payload  # noqa: E402
from harness import janitor_head, slack_section, write_config  # noqa: E402
from janitor_reference import (Policy, PodModel, button_values, expected_click,  # noqa: E402
                               parse_time, pod_problems, reason_of, trace_problems)

FEATURES = ("fire", "resolve", "replace", "race", "delete", "slack", "ratelimit", "click",
            "kill", "wait")
KUBE_TOKEN = "jmodel-kube-token"
SLACK_TOKEN = "xoxb-jmodel-token"
HOOK_TOKEN = "jmodel-webhook-token"
SECRET = "jmodel-signing-secret-0123456789"
ALERT = "JanitorIdleGPUPod"
NS = "ml"
POL = Policy(grace_s=4, lead_s=3, by_s=3, max_postpones=2, lifetime_s=16)
SWEEP_MS = 300
SECOND_MS = 20
QUIET_S = 20
USERS = ("U0ALICE", "U0BOB")
PODS = (("train-0", "U0ALICE"), ("train-1", "U0BOB"), ("train-2", "U0ALICE"))


def postponed_to(r):
    """The janitor/postponed a PATCH request writes (None: none, or removed)."""
    body = r["body"] if isinstance(r["body"], dict) else {}
    return ((body.get("metadata") or {}).get("annotations") or {}).get("janitor/postponed")


class World(lc.ServeProcess):
    second_ms = SECOND_MS

    def __init__(self, seed, features, steps, keep):
        self.seed, self.features, self.n_steps, self.keep = seed, features, steps, keep
        self.rng = random.Random(seed)
        self.log_lines = []
        self.dir = tempfile.mkdtemp(prefix="ab-jmodel-%d-" % seed)
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.log_path = os.path.join(self.dir, "alertbridge.log")
        self.uri = None
        self.step_no = 0
        self.proc = None
        self.kube = self.slack = None
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.pods = {name: PodModel(NS, name, owner) for name, owner in PODS}
        self.clicks = []          # every click request sent: (body, headers) for replays
        self.kills = 0
        self.outcomes = {}        # click outcome -> how many
        self.t0 = time.time()

    # ----- plumbing ---------------------------------------------------------------------------
    def note(self, msg):
        self.log_lines.append("%3d %6.2f %s" % (self.step_no, time.time() - self.t0, msg))

    def fail(self, msg):
        raise lc.ModelFailure(msg)

    def write_config(self):
        self.kube.write_kubeconfig(os.path.join(self.dir, "kubeconfig"), namespace=NS)
        write_config(self.dir, self.port,
                     janitor_head("%dms" % SWEEP_MS) +
                     "  max_deletions_per_sweep: 10\n"
                     "  notice_batch_window: 0s\n"
                     "  policies:\n"
                     "    - {alertname: %s, grace: %ds, notice_lead: %ds, reminder_before: 0s,\n"
                     "       postpone_by: %ds, max_postpones: %d, max_lifetime: %ds}\n"
                     % (ALERT, POL.grace_s, POL.lead_s, POL.by_s, POL.max_postpones,
                        POL.lifetime_s) +
                     slack_section(self.slack.api_url) +
                     "leader_election: {enabled: false}\n",
                     files=(("webhook-token", HOOK_TOKEN), ("slack-token", SLACK_TOKEN),
                            ("slack-signing-secret", SECRET)))

    def figures(self):
        """What the world exercised, summed over the passing worlds by summarize()."""
        reqs = [r for r in self.kube.get_requests() if isinstance(r["status"], int) and
                r["status"] < 300 and "/pods/" in r["path"]]
        f = {"deletions": sum(r["method"] == "DELETE" for r in reqs),
             "postpones": sum(r["method"] == "PATCH" and postponed_to(r) is not None
                              for r in reqs),
             "kills": self.kills,
             "races": sum(1 for r in self.kube.get_requests() if r.get("recreated_uid")),
             "notices": len([m for m in self.slack.get_messages() if not m.get("thread_ts")])}
        for outcome, n in self.outcomes.items():
            f["click " + outcome] = n
        return f

    def close(self):
        try:
            self.stop()
        except Exception:  # noqa: BLE001
            self.kill()
        for fake in (self.kube, self.slack):
            if fake:
                fake.stop()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def rows(self, sql):
        if not os.path.exists(self.db):
            return []
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
        try:
            return con.execute(sql).fetchall()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return []
            raise
        finally:
            con.close()

    # ----- the world's pods -------------------------------------------------------------------
    def add_pod(self, p):
        obj = self.kube.add_pod(NS, p.name, labels={"owner": p.owner})
        p.uid = obj["metadata"]["uid"]
        p.created[p.uid] = parse_time(obj["metadata"]["creationTimestamp"])
        return p.uid

    def post_alert(self, p, uid, status):
        fp = hashlib.sha1(("%s/%s" % (p.name, uid)).encode()).hexdigest()[:16]
        a = {"status": status, "fingerprint": fp,
             "labels": {"alertname": ALERT, "namespace": NS, "pod": p.name, "uid": uid},
             "annotations": {"summary": "%s idle" % p.name},
             "startsAt": iso_ms(time.time() - 1)}
        if status == "resolved":
            a["endsAt"] = iso_ms(time.time())
        sent = time.time()
        code, _, body = http("POST", self.url + "/v1/janitor/webhook",
                             body=webhook_payload("janitor", [a]),
                             headers={"Authorization": "Bearer " + HOOK_TOKEN})
        if code != 200:
            self.fail("janitor webhook answered %s: %s" % (code, body))
        p.alerts.append((sent, time.time(), uid, status))

    # ----- steps ------------------------------------------------------------------------------
    def choices(self):
        w = {"fire": 5, "resolve": 2, "replace": 1, "race": 1, "delete": 1, "slack": 1,
             "ratelimit": 1,
             "click": 5, "limit": 1, "kill": 1, "wait": 3}
        return [(k, n) for k, n in w.items() if k in self.features or
                (k == "limit" and "click" in self.features)]

    def step(self):
        kinds = self.choices()
        kind = self.rng.choices([k for k, _ in kinds], [n for _, n in kinds])[0]
        p = self.pods[self.rng.choice(sorted(self.pods))]
        for q in self.pods.values():  # the janitor deletes pods, a race replaces them
            obj = self.kube.pod(NS, q.name)
            q.uid = obj["metadata"]["uid"] if obj else None
            if q.uid and q.uid not in q.created:
                q.created[q.uid] = parse_time(obj["metadata"]["creationTimestamp"])
                self.note("pod %s was replaced by the race (uid %s)" % (q.name, q.uid[:8]))
        getattr(self, "step_" + kind)(p)
        time.sleep(self.rng.choice((0.05, 0.1, 0.3)))

    def step_fire(self, p):
        if p.uid is None:
            self.add_pod(p)
            self.note("pod %s created (uid %s)" % (p.name, p.uid[:8]))
        uid = p.uid
        if self.rng.random() < 0.15:  # an alert about the pod before it was replaced
            old = [u for u in p.created if u != p.uid]
            if old:
                uid = self.rng.choice(old)
        self.post_alert(p, uid, "firing")
        self.note("fire %s uid %s%s" % (p.name, uid[:8], "" if uid == p.uid else " (stale)"))

    def step_resolve(self, p):
        firing = [u for u in p.created if p.alert_state(u) == "firing"]
        if not firing:
            return self.step_fire(p)
        uid = self.rng.choice(firing)
        self.post_alert(p, uid, "resolved")
        self.note("resolve %s uid %s (active again)" % (p.name, uid[:8]))

    def step_replace(self, p):
        if p.uid is None:
            return self.step_fire(p)
        old = p.uid
        p.uid = self.kube.recreate_pod(NS, p.name)
        p.created[p.uid] = parse_time(self.kube.pod(NS, p.name)["metadata"]["creationTimestamp"])
        self.note("replace %s: uid %s -> %s" % (p.name, old[:8], p.uid[:8]))

    def step_delete(self, p):
        if p.uid is None:
            return self.step_fire(p)
        with self.kube.lock:
            self.kube.objects.pop(("Pod", NS, p.name), None)
            self.kube.rv += 1
        self.note("delete %s uid %s (by a person)" % (p.name, p.uid[:8]))
        p.uid = None

    def step_race(self, p):
        """The next GET of the pod is answered, then the pod is replaced (a new uid): what
        the janitor does next with it (mark, delete, postpone) meets another pod."""
        self.kube.add_fault(method="GET", path="/api/v1/namespaces/%s/pods/%s" % (NS, p.name),
                            action="recreate_after")
        self.note("race: the next GET of %s is followed by its replacement" % p.name)

    def step_slack(self, p):
        self.slack.add_fault(method="chat.postMessage", count=1, status=500)
        self.note("slack: next chat.postMessage -> 500")

    def step_ratelimit(self, p):
        self.slack.add_fault(method="chat.postMessage", count=1, status=429, retry_after_s=1)
        self.note("slack: next chat.postMessage -> 429 Retry-After 1")

    def step_kill(self, p):
        self.kill()
        self.kills += 1
        self.start()
        self.note("SIGKILL and restart")

    def step_wait(self, p):
        s = self.rng.choice((1, 2, 3))
        self.note("wait %d s" % s)
        time.sleep(s)

    # ----- clicks -----------------------------------------------------------------------------
    def buttons(self, p, ever=False):
        """[(message, uid, notice, value)] of the Keep buttons for p's pods the messages show
        now, oldest first; ever: every button they ever showed (a clicked one is removed by
        chat.update; an owner's Slack client may still show it)."""
        out, seen = [], set()
        for m in self.slack.get_messages():
            shown = [m] + (list(reversed(m.get("history") or [])) if ever else [])
            for version in shown:
                for uid, notice, pod, value in button_values(version):
                    if pod == p.name and uid in p.created and value not in seen:
                        seen.add(value)
                        out.append((m, uid, notice, value))
        return out

    def settle(self, what, timeout_s=QUIET_S):
        """Wait until no janitor or postpone event is pending."""
        deadline = time.time() + timeout_s
        while True:
            self.alive()
            pending = self.rows("SELECT id, kind, key, attempts, coalesce(last_error, '') "
                                "FROM events WHERE kind IN ('janitor', 'postpone') "
                                "AND state = 'pending'")
            if not pending:
                return
            if time.time() > deadline:
                self.fail("%s: events stuck pending after %d s: %s" % (what, timeout_s,
                                                                        pending[:5]))
            time.sleep(0.02)

    def alive(self):
        if self.proc is None or self.proc.poll() is not None:
            self.fail("alertbridge died (exit %s)" % (self.proc and self.proc.returncode))

    def step_click(self, p):
        bs = self.buttons(p)
        if not bs:  # another pod's button, if one shows
            some = [q for q in sorted(self.pods) if self.buttons(self.pods[q])]
            if some:
                p = self.pods[self.rng.choice(some)]
                bs = self.buttons(p)
        if not bs:
            self.note("click %s: no button yet" % p.name)
            return
        how = self.rng.choice(("owner", "owner", "keen", "keen", "other", "twice", "replay",
                               "old", "crash"))
        if how == "keen":  # the owner clicks the newest button not used yet, waiting for it
            b = self.wait_button(p, "keen click")
            if b:
                self.click(p, b[0], b[1], b[2], b[3], p.owner, how)
            return
        if how == "replay" and self.clicks:
            body, h, desc = self.rng.choice(self.clicks)
            self.settle("before a replayed click")
            km, rm = len(self.kube.get_requests()), len(self.slack.get_responses())
            code = http("POST", self.url + "/v1/slack/interactions", raw=body, headers=h)[0]
            self.settle("a replayed click")
            time.sleep(0.1)
            writes = [r for r in self.kube.get_requests()[km:]
                      if r["method"] == "PATCH" and postponed_to(r) is not None]
            news = self.slack.get_responses()[rm:]
            self.note("replay of (%s) -> %d, %d postpones, %d answers" % (
                desc, code, len(writes), len(news)))
            if code != 200 or writes or news:
                self.fail("a replayed click request (%s) was acted on again: HTTP %d, %d "
                          "postpone patches, answers %s" % (desc, code, len(writes), news))
            return
        if how == "old":
            bs = self.buttons(p, ever=True)
        m, uid, notice, value = self.rng.choice(bs) if how == "old" else bs[-1]
        user = p.owner if how != "other" else [u for u in USERS if u != p.owner][0]
        for _ in range(2 if how == "twice" else 1):
            self.click(p, m, uid, notice, value, user, how)

    def wait_button(self, p, what, timeout_s=POL.by_s + 1, keep=()):
        """The newest button for p's current pod not used yet (nor in keep), waited for;
        None if none."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            fresh = [b for b in self.buttons(p) if b[1] == p.uid and
                     (b[1], b[2]) not in p.used_buttons and b[3] not in keep]
            if fresh:
                return fresh[-1]
            time.sleep(0.1)
        self.note("%s %s: no fresh button within %d s" % (what, p.name, timeout_s))
        return None

    def step_limit(self, p):
        """The owner keeps the pod max_postpones times, then clicks a button an earlier
        episode of its alert left unused (fire, notice, resolve, fire again)."""
        if p.uid is None:
            self.add_pod(p)
            self.note("pod %s created (uid %s)" % (p.name, p.uid[:8]))
        self.post_alert(p, p.uid, "firing")
        self.note("limit %s: fire uid %s" % (p.name, p.uid[:8]))
        first = self.wait_button(p, "limit")
        if first is None:
            return
        self.post_alert(p, p.uid, "resolved")
        self.post_alert(p, p.uid, "firing")
        self.note("limit %s: resolve, fire again" % p.name)
        self.settle("a new episode")
        for _ in range(POL.max_postpones):
            b = self.wait_button(p, "limit", keep=(first[3],))
            if b is None:
                return
            self.click(p, b[0], b[1], b[2], b[3], p.owner, "keen")
        m, uid, notice, value = first
        self.click(p, m, uid, notice, value, p.owner, "first-episode")

    def click(self, p, m, uid, notice, value, user, how):
        self.settle("before a click")
        obj = self.kube.pod(NS, p.name)
        exists = obj["metadata"]["uid"] if obj else None
        ann = dict((obj or {"metadata": {}})["metadata"].get("annotations") or {})
        want = expected_click(p, uid, notice, user, ann, exists, POL, time.time())
        rurl = self.slack.new_response_url()
        body, h = self.slack.click_request(m, value, SECRET, user=user, response_url=rurl)
        km = len(self.kube.get_requests())
        code, _, answer = http("POST", self.url + "/v1/slack/interactions", raw=body, headers=h)
        if code != 200:
            self.fail("a signed click answered %s: %s" % (code, answer))
        desc = "%s click by %s on %s uid %s notice %s" % (how, user, p.name, uid[:8], notice)
        self.clicks.append((body, h, desc))
        if how == "crash":  # stored (200): a SIGKILL now must lose nothing, apply nothing twice
            time.sleep(self.rng.choice((0, 0.01, 0.03, 0.06)))
            self.kill()
            self.kills += 1
            self.start()
        self.settle("a click")
        deadline = time.time() + 5
        got = None

        def postpones():
            return [r for r in self.kube.get_requests()[km:] if r["method"] == "PATCH" and
                    r.get("pod_uid") == uid and isinstance(r["status"], int) and
                    r["status"] < 300 and postponed_to(r) is not None]
        while got is None and time.time() < deadline:
            if postpones():  # first: after a crash, the click run again answers "already"
                got = "done"
                break
            rs = [r for r in self.slack.get_responses() if r["url"] == rurl]
            if rs:
                got = reason_of(rs[0]["body"].get("text") or "")
                break
            time.sleep(0.02)
        if len(postpones()) > 1:
            self.fail("%s was applied %d times: %s" % (desc, len(postpones()), [
                r["body"] for r in postpones()]))
        if got is None:
            got = "no answer"
        if got == "gone" and self.kube.pod(NS, p.name) is None:
            want = want | {"gone"}  # the sweep deleted it meanwhile
        if any(r.get("recreated_uid") and r["path"].endswith("/pods/" + p.name)
               for r in self.kube.get_requests()[km:]):
            want = want | {"uid-changed"}  # the race replaced it under the click
        self.note("%s -> %s (model: %s; postponed %s, expires %s)" % (
            desc, got, "|".join(sorted(want)), ann.get("janitor/postponed", "0"),
            ann.get("janitor/expires", "-")))
        if got not in want:
            self.fail("%s got %s, the model expects %s (the pod's annotations then: %s)" % (
                desc, got, " or ".join(sorted(want)), ann))
        if got == "done":
            p.used_buttons.add((uid, notice))
        self.outcomes[got] = self.outcomes.get(got, 0) + 1

    # ----- quiet points -----------------------------------------------------------------------
    def quiet(self, timeout_s=QUIET_S):
        """Both queues and the outbox empty, and still so a sweep later (a message marked
        sent is followed by its janitor/notified-at patch)."""
        deadline = time.time() + timeout_s
        self.quiet_once(deadline, timeout_s)
        time.sleep(SWEEP_MS / 1000.0 + 0.1)
        self.quiet_once(deadline, timeout_s)

    def quiet_once(self, deadline, timeout_s):
        while True:
            self.alive()
            busy = self.rows("SELECT 'event', id, kind, coalesce(last_error, '') FROM events "
                             "WHERE kind IN ('janitor', 'postpone') AND state = 'pending' "
                             "UNION ALL SELECT 'notice', id, kind, coalesce(last_error, '') "
                             "FROM notices WHERE state = 'pending' "
                             "UNION ALL SELECT 'digest', id, kind, coalesce(last_error, '') "
                             "FROM digests WHERE state = 'pending'")
            if not busy:
                return
            if time.time() > deadline:
                self.fail("not quiet after %d s: %s" % (timeout_s, busy[:6]))
            time.sleep(0.02)

    def notice_uids(self):
        out = {}
        for uid, ts in self.rows("SELECT n.uid, coalesce(n.slack_ts, d.slack_ts) FROM notices n "
                                 "LEFT JOIN digests d ON d.id = n.digest_id "
                                 "WHERE n.kind = 'notice' AND n.state = 'sent'"):
            if ts:
                out.setdefault(ts, set()).add(uid)
        return out

    def check(self, final=False):
        self.quiet()
        problems = []
        for e in self.rows("SELECT id, kind, key, coalesce(last_error, '') FROM events "
                           "WHERE kind IN ('janitor', 'postpone') AND state = 'dead'"):
            problems.append("event %d (%s %s) dead-lettered%s" % (
                e[0], e[1], e[2][:24], ": " + e[3] if e[3] else " without a reason"))
        for n in self.rows("SELECT id, kind, pod FROM notices WHERE state = 'dead' AND "
                           "coalesce(last_error, '') = ''"):
            problems.append("notice %d (%s %s) dead without a reason" % n)
        postponed = set()
        for r in self.kube.get_requests():
            if r["method"] == "PATCH" and postponed_to(r) is not None and \
                    isinstance(r["status"], int) and r["status"] < 300:
                postponed.add(r.get("pod_uid"))
        for p in self.pods.values():
            obj = self.kube.pod(NS, p.name)
            if obj is not None:
                problems += pod_problems(p, obj, POL, postponed)
        problems += trace_problems(self.pods, self.kube.get_requests(),
                                   self.slack.get_messages(), self.notice_uids(), POL)
        self.note("quiet point%s: %d problem(s)" % (" (final)" if final else "", len(problems)))
        if problems:
            self.fail("; ".join(problems[:8]))

    def drain(self):
        """No more faults; every pod whose alert still fires goes, after its expiry."""
        with self.slack.lock:
            self.slack.faults = []
        with self.kube.lock:
            self.kube.faults = []
        self.quiet()
        deadline = time.time() + POL.lifetime_s + POL.lead_s + 6
        while True:
            due = []
            for p in self.pods.values():
                obj = self.kube.pod(NS, p.name)
                uid = obj and obj["metadata"]["uid"]
                if obj and p.alert_state(uid) == "firing":
                    due.append("%s (uid %s, annotations %s)" % (
                        p.name, uid[:8], obj["metadata"].get("annotations")))
            if not due:
                break
            if time.time() > deadline:
                self.fail("pods whose alert fires were not deleted by %s: %s" % (
                    "creation + max_lifetime + notice_lead", "; ".join(due)))
            time.sleep(0.1)
        self.note("drained: every firing pod deleted")

    def run(self):
        self.kube = FakeKube(token=KUBE_TOKEN, namespaces=("default", "kube-system", NS)).start()
        self.slack = FakeSlack(token=SLACK_TOKEN).start()
        for server in (self.kube.server, self.slack.server):
            server.handle_error = lambda request, address: None  # a SIGKILL's reset sockets
        for u in USERS:
            self.slack.add_user(u, "%s@example.com" % u[2:].lower())
        self.write_config()
        for p in self.pods.values():
            self.add_pod(p)
        self.note("world: pods %s" % ", ".join("%s (owner %s, uid %s)" % (
            p.name, p.owner, p.uid[:8]) for p in self.pods.values()))
        self.start()
        lc.walk_steps(self, 0.3)
        self.check()
        self.drain()
        self.check(final=True)


def summarize(figures):
    total = {}
    for f in figures:
        for k, v in f.items():
            total[k] = total.get(k, 0) + v
    print("model: the passing worlds made %s" % ", ".join(
        "%d %s" % (total[k], k) for k in sorted(total)))


SUITE = lc.Suite(World, FEATURES, "tests/model/janitor_model.py", steps=20, seeds=6, jobs=6,
                 summarize=summarize)

if __name__ == "__main__":
    sys.exit(lc.main(SUITE))
