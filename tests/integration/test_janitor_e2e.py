#!/usr/bin/env python3
# run.sh: weight 105
"""test_janitor_e2e.py - the pod janitor end to end: Debian's real Alertmanager routes
alertname=~"Janitor.*" to the real alertbridge's /v1/janitor/webhook (send_resolved), which
talks to a fake Kubernetes API server and a fake Slack; every scenario asserts the exact
requests the fakes received (method, path, content type, JSON body, timing) and the pods'
annotations, following DESIGN.md "Janitor semantics".

    Alertmanager --webhook--> recording proxy --> alertbridge --REST--> fake_kube, fake_slack

The live scenarios share one stack (janitor.dry_run: false); the dry-run scenario has its own.
Short durations keep the file under ~3 minutes: grace 6s (JanitorIdleGPUPod), 20s
(JanitorIdleCPUPod) or 8s (JanitorPodUnschedulable, with reminder_before 2.5s), notice_lead 3s,
sweep_interval 2s.
Env: ALERTBRIDGE_BIN (default ./alertbridge), ALERTMANAGER_BIN, E2E_ONLY=name,name.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import calendar
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import (Alertmanager, Failure, Runner, WebhookProxy, check, eq,  # noqa: E402
                     event, iso_ms, poll, print_tail, short, wait_ready)
from harness import only_from_env, resolved, service_config, stop_all, term_raises  # noqa: E402
from harness import ALERTBRIDGE, print_stack_tails, serve_proc, slack_section  # noqa: E402

KUBE_TOKEN = "e2e-kube-token"
SLACK_TOKEN = "xoxb-e2e-slack-token"
HOOK_TOKEN = "e2e-janitor-webhook-secret"
GPU = "JanitorIdleGPUPod"      # grace 6s, notice_lead 3s, owned: scale-to-zero
CPU = "JanitorIdleCPUPod"      # grace 20s, notice_lead 3s, owned: notify-only
REM = "JanitorPodUnschedulable"  # grace 8s, notice_lead 3s, reminder_before 2.5s (> a sweep)
GRACE_GPU_S, GRACE_CPU_S, GRACE_REM_S, NOTICE_LEAD_S, SWEEP_S = 6, 20, 8, 3, 2
REMINDER_S = 2.5
MERGE_PATCH = "application/merge-patch+json"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
JANITOR_KEYS = {"janitor/expires", "janitor/reason", "janitor/marked-at",
                "janitor/notified-at", "janitor/marked-expires"}
TIME_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
SLOP_S = 0.05
RETRY_AFTER_S = 5   # the fakes and alertbridge read the same clock; allow scheduling jitter only

run = Runner()


def parse_time(s):
    """janitor/* times: UTC YYYY-MM-DDTHH:MM:SSZ (kube-janitor's format) to epoch seconds."""
    check(isinstance(s, str) and TIME_RE.fullmatch(s), "a YYYY-MM-DDTHH:MM:SSZ time", s)
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def alert(name, ns, pod, uid, summary=None, ends=None):
    a = {"labels": {"alertname": name, "namespace": ns, "pod": pod, "uid": uid,
                    "severity": "info"},
         "annotations": {"summary": summary or "%s/%s idle" % (ns, pod)},
         "startsAt": iso_ms(time.time() - 60),
         "generatorURL": "http://prometheus.example:9090/graph?g0.expr=janitor"}
    if ends is not None:
        a["endsAt"] = iso_ms(ends)
    return a


class Stack:
    """fake kube + fake slack + alertbridge + recording proxy + Alertmanager in a temp dir."""

    def __init__(self, name, dry_run=False):
        self.name = name
        self.dry_run = dry_run
        self.dir = tempfile.mkdtemp(prefix="ab-jan-%s-" % name)
        self.kube = FakeKube(token=KUBE_TOKEN, namespaces=("default", "kube-system", "ml"))
        self.kube.start()
        self.slack = FakeSlack(token=SLACK_TOKEN).start()
        self.slack.add_user("U0ALICE", "alice@example.com")
        self.slack.add_user("U0BOB", "bob@example.com")
        event("fake kube on %s, fake slack on %s" % (self.kube.url, self.slack.url))
        self.kube.write_kubeconfig(os.path.join(self.dir, "kubeconfig"), namespace="ml")
        self.ab_port, self.ab_url, self.config = service_config(
            self.dir, self._config(), (("webhook-token", HOOK_TOKEN), ("slack-token", SLACK_TOKEN)))
        self.proxy = WebhookProxy(self.ab_port)
        self.hook_file = os.path.join(self.dir, "webhook-token")
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.ab = None
        base = "http://127.0.0.1:%d" % self.proxy.port
        self.am = Alertmanager(self.dir, base + "/v1/webhook", self.hook_file,
                               receiver="default", janitor_url=base + "/v1/janitor/webhook")

    def _config(self):
        """alertbridge.yml but its head (service_config() writes that)."""
        return ("janitor:\n"
                "  enabled: true\n"
                "  dry_run: %s\n"
                "  kubernetes: {kubeconfig: kubeconfig}\n"
                "  exclude_namespaces: [kube-system]\n"
                "  sweep_interval: %ds\n"
                "  max_deletions_per_sweep: 10\n"
                "  policies:\n"
                "    - alertname: %s\n"
                "      grace: %ds\n"
                "      notice_lead: %ds\n"
                "      owned: scale-to-zero\n"
                "    - alertname: %s\n"
                "      grace: %ds\n"
                "      notice_lead: %ds\n"
                "      owned: notify-only\n"
                "    - {alertname: %s, grace: %ds, notice_lead: %ds, reminder_before: %dms}\n"
                % ("true" if self.dry_run else "false", SWEEP_S,
                   GPU, GRACE_GPU_S, NOTICE_LEAD_S, CPU, GRACE_CPU_S, NOTICE_LEAD_S,
                   REM, GRACE_REM_S, NOTICE_LEAD_S, int(REMINDER_S * 1000)) +
                slack_section(self.slack.api_url, signing=False) +
                "leader_election: {enabled: false}\n")

    def start(self):
        try:
            self.ab = serve_proc("alertbridge[%s]" % self.name, self.config, self.dir, flags=(
                "--web.listen-address=127.0.0.1:%d" % self.ab_port,
                "--database.path=" + self.db))
            self.ab.start()
            wait_ready(self.ab, self.ab_url + "/-/ready", timeout_s=30)
            event("alertbridge ready on %s" % self.ab_url)
            self.am.start()
        except BaseException:
            self.post_mortem("start")
            self.stop()
            raise
        return self

    def stop(self):
        stop_all((self.am.stop, lambda: self.ab and self.ab.stop(), self.proxy.stop,
                  self.kube.stop, self.slack.stop), self.dir)

    def post_mortem(self, what):
        print("===== post-mortem of %s (stack %s) =====" % (what, self.name))
        print_stack_tails(self.ab, self.am, 15)
        reqs = self.kube.get_requests()
        print_tail("fake kube requests (last 60 of %d)" % len(reqs), "\n".join(
            "%.2f %s %s%s -> %s %s" % (r["time"] - reqs[0]["time"], r["method"], r["path"],
                                       "?" + "&".join("%s=%s" % kv for kv in r["query"].items())
                                       if r["query"] else "", r["status"],
                                       short(r["body"], 200) if r["body"] else "")
            for r in reqs[-60:]))
        print_tail("fake slack requests", "\n".join(
            "%s %s -> %s %s" % (r["slack_method"], short(r["body"], 200), r["status"],
                                short(r["answer"], 120)) for r in self.slack.get_requests()))
        print_tail("webhook deliveries", "\n".join(
            "%s %s -> %s %s" % (d["path"], [(a["status"], a["labels"].get("pod")) for a in
                                            (d["payload"] or {}).get("alerts", [])],
                                d["status"], short(d["answer"], 200)) for d in self.proxy.get()))

    # ----- views --------------------------------------------------------------------------------
    def pod_requests(self, ns, name, method=None):
        path = "/api/v1/namespaces/%s/pods/%s" % (ns, name)
        return [r for r in self.kube.get_requests() if r["path"] == path and
                (method is None or r["method"] == method)]

    def events_about(self, name):
        return [r for r in self.kube.get_requests() if r["method"] == "POST" and
                r["path"].endswith("/events") and isinstance(r["body"], dict) and
                (r["body"].get("involvedObject") or {}).get("name") == name]

    def posts(self):
        return [r for r in self.slack.get_requests() if r["slack_method"] == "chat.postMessage"]

    def messages_about(self, name):
        return [m for m in self.slack.get_messages() if name in (m["text"] or "")]

    def fire(self, alerts):
        self.am.post(alerts)
        event("posted %s" % ", ".join("%s %s/%s" % (a["labels"]["alertname"],
                                                    a["labels"]["namespace"],
                                                    a["labels"]["pod"]) for a in alerts))

    def wait_delivered(self, pod, status="firing", timeout_s=30):
        """Wait for Alertmanager's webhook about pod with status; fail at once on any answer
        but 200 from alertbridge (Alertmanager does not retry 4xx)."""
        def delivered():
            for d in self.proxy.get():
                alerts = (d["payload"] or {}).get("alerts", [])
                if not any(a["labels"].get("pod") == pod and a["status"] == status
                           for a in alerts):
                    continue
                eq(d["path"], "/v1/janitor/webhook", "webhook path for %s" % pod)
                if d["status"] != 200:
                    raise Failure("alertbridge answered the %s webhook for %s with %s: %s" % (
                        status, pod, d["status"], short(d["answer"], 300)))
                return d
            return None
        d = poll(delivered, "the %s webhook for %s" % (status, pod), timeout_s=timeout_s)
        event("webhook %s for %s answered 200" % (status, pod))
        return d

    def wait_annotation(self, ns, name, key, timeout_s=30):
        def has():
            p = self.kube.pod(ns, name)
            return p and key in p["metadata"].get("annotations", {}) and p
        p = poll(has, "%s on %s/%s" % (key, ns, name), timeout_s=timeout_s)
        event("%s/%s has %s=%s" % (ns, name, key, p["metadata"]["annotations"][key]))
        return p

    def wait_delete(self, ns, name, timeout_s=40):
        r = poll(lambda: self.pod_requests(ns, name, "DELETE"), "a DELETE of %s/%s" % (
            ns, name), timeout_s=timeout_s)[0]
        event("DELETE %s/%s -> %s" % (ns, name, r["status"]))
        return r

    def quiet(self, seconds, what):
        event("waiting %.1f s: %s" % (seconds, what))
        time.sleep(seconds)


# ----- shared assertions ---------------------------------------------------------------------

def check_kube_headers(st):
    for r in st.kube.get_requests():
        where = "%s %s" % (r["method"], r["path"])
        eq(r["headers"].get("authorization"), "Bearer " + KUBE_TOKEN, "Authorization of " +
           where)
        check(r["status"] != 401 and r["status"] != 415, "no 401/415 for " + where,
              r["status"])
        if r["method"] == "PATCH":
            eq(r["headers"].get("content-type", "").split(";")[0].strip(), MERGE_PATCH,
               "Content-Type of " + where)


def check_annotation_patches(reqs):
    """Every PATCH of a pod is a merge patch of metadata.annotations only, with the pod's
    metadata.uid as a precondition (the pod it read: never another under the same name) and,
    for a mark computed from a read, its metadata.resourceVersion (a stale attempt landing
    late gets 409)."""
    for r in reqs:
        b = r["body"]
        check(isinstance(b, dict) and list(b) == ["metadata"] and
              sorted(b["metadata"]) in (["annotations", "uid"],
                                        ["annotations", "resourceVersion", "uid"]),
              "PATCH %s touches metadata.annotations only" % r["path"], b)
        if (b["metadata"].get("annotations") or {}).get("janitor/marked-at"):
            check("resourceVersion" in b["metadata"],
                  "a mark PATCH carries the resourceVersion it was computed from", b)
        eq(b["metadata"]["uid"], r.get("pod_uid"), "PATCH %s names the pod it changed" %
           r["path"])
        eq(r["status"], 200, "PATCH %s answered" % r["path"])


def check_delete(r, uid):
    b = r["body"]
    check(isinstance(b, dict), "DELETE carries DeleteOptions", b)
    eq((b.get("preconditions") or {}).get("uid"), uid, "DELETE preconditions.uid")
    eq(b.get("propagationPolicy"), "Background", "DELETE propagationPolicy")
    check(b.get("gracePeriodSeconds") != 0, "DELETE never with grace period 0", b)


def check_marked(pod, reason_word=None):
    ann = pod["metadata"]["annotations"]
    expires = parse_time(ann.get("janitor/expires"))
    marked = parse_time(ann.get("janitor/marked-at"))
    check(ann.get("janitor/reason"), "janitor/reason set", ann)
    if reason_word:
        check(reason_word in ann["janitor/reason"], "janitor/reason names %s" % reason_word,
              ann["janitor/reason"])
    return ann, expires, marked


# ----- the live stack, shared by the live scenarios --------------------------------------------

_live = {}


def live():
    if "error" in _live:
        raise Failure("the live stack did not start: %s" % _live["error"])
    if "stack" not in _live:
        try:
            _live["stack"] = Stack("live").start()
        except Exception as e:
            _live["error"] = str(e).splitlines()[0] if str(e) else repr(e)
            raise
    return _live["stack"]


def on_failure(name):
    st = _live.get("stack")
    if st is not None and name != "dry_run_changes_nothing_but_logs":
        st.post_mortem(name)


@run.case
def idle_pod_marked_noticed_then_deleted():
    st = live()
    ns, name = "ml", "train-1"
    uid = st.kube.add_pod(ns, name, labels={"owner": "U0ALICE", "app": "train"},
                          annotations={"team/note": "long run"})["metadata"]["uid"]
    # Slack asks to wait 5 s before the notice goes out: the notice then reaches Alice less
    # than notice_lead before janitor/expires, and the deletion must wait for notice_lead.
    st.slack.add_fault("chat.postMessage", status=429, retry_after_s=RETRY_AFTER_S)
    st.fire([alert(GPU, ns, name, uid, summary="GPU idle for 2h & <1% used")])
    st.wait_delivered(name)
    pod = st.wait_annotation(ns, name, "janitor/notified-at")
    ann, expires, marked = check_marked(pod, GPU)
    notified = parse_time(ann["janitor/notified-at"])
    check(GRACE_GPU_S - 1 <= expires - marked <= GRACE_GPU_S,
          "janitor/expires is marked-at + grace (%d s)" % GRACE_GPU_S, ann)
    check(marked <= notified, "notified-at not before marked-at", ann)
    eq(ann["team/note"], "long run", "a person's annotation kept")
    patches = st.pod_requests(ns, name, "PATCH")
    check_annotation_patches(patches)
    first = patches[0]["body"]["metadata"]["annotations"]
    check({"janitor/expires", "janitor/reason", "janitor/marked-at"} <= set(first) and
          "janitor/notified-at" not in first, "the first PATCH marks the pod, no notice yet",
          first)
    notice_patch = [r for r in patches if "janitor/notified-at" in
                    r["body"]["metadata"]["annotations"]]
    eq(len(notice_patch), 1, "one PATCH records the notice")
    # the Event, and the notice in Alice's DM (owner label -> conversations.open)
    evs = st.events_about(name)
    eq(len(evs), 1, "one Event about the pod")
    ev = evs[0]
    eq((ev["path"], ev["status"]), ("/api/v1/namespaces/ml/events", 201), "Event POST")
    io = ev["body"]["involvedObject"]
    eq((io.get("kind"), io.get("namespace"), io.get("name"), io.get("uid")),
       ("Pod", ns, name, uid), "Event involvedObject")
    opens = [r for r in st.slack.get_requests() if r["slack_method"] == "conversations.open"]
    check(any((r["body"] or {}).get("users") == "U0ALICE" for r in opens),
          "conversations.open with the owner label's user", opens)
    msgs = st.messages_about(name)
    eq([(m["channel"], m["thread_ts"]) for m in msgs], [("D0ALICE", None)],
       "one notice, in Alice's DM, starting a thread")
    check("&amp; &lt;1%" in msgs[0]["text"], "the alert's summary, Slack-escaped",
          msgs[0]["text"])
    check(msgs[0]["time"] <= notice_patch[0]["time"], "notified-at written after the post",
          (msgs[0]["time"], notice_patch[0]["time"]))
    posts = st.posts()
    eq([r["status"] for r in posts], [429, 200], "the notice was rate limited once")
    check(posts[1]["time"] - posts[0]["time"] >= RETRY_AFTER_S - SLOP_S,
          "Retry-After (%d s) honoured" % RETRY_AFTER_S, posts[1]["time"] - posts[0]["time"])
    check(expires < notified + NOTICE_LEAD_S, "the late notice leaves less than notice_lead "
          "before janitor/expires (else this scenario tests nothing)", ann)
    event("marked: expires %s, notified-at %s" % (ann["janitor/expires"],
                                                  ann["janitor/notified-at"]))
    d = st.wait_delete(ns, name, timeout_s=GRACE_GPU_S + NOTICE_LEAD_S + 4 * SWEEP_S + 10)
    check_delete(d, uid)
    eq(d["status"], 200, "DELETE answered")
    check(d["time"] >= expires - SLOP_S, "not deleted before janitor/expires (%.2f s early)" %
          (expires - d["time"]))
    check(d["time"] >= notified + NOTICE_LEAD_S - SLOP_S,
          "not deleted before notified-at + notice_lead (%.2f s early)" % (
              notified + NOTICE_LEAD_S - d["time"]))
    check(d["time"] >= msgs[0]["time"] + NOTICE_LEAD_S - SLOP_S,
          "the notice was posted at least notice_lead before the DELETE")
    event("deleted %.1f s after the notice" % (d["time"] - msgs[0]["time"]))
    eq(len(st.pod_requests(ns, name, "DELETE")), 1, "one DELETE")
    eq(st.kube.pod(ns, name), None, "the pod is gone")
    check_kube_headers(st)


@run.case
def busy_again_unmarked_and_thread_says_so():
    st = live()
    ns, name = "ml", "nb-2"
    uid = st.kube.add_pod(ns, name, annotations={"janitor/notify": "bob@example.com",
                                                 "team/keep-note": "ask bob"})["metadata"]["uid"]
    a = alert(CPU, ns, name, uid)
    st.fire([a])
    st.wait_delivered(name)
    pod = st.wait_annotation(ns, name, "janitor/notified-at")
    check_marked(pod, CPU)
    lookups = [r for r in st.slack.get_requests() if r["slack_method"] == "users.lookupByEmail"]
    check(any(r["query"].get("email") == "bob@example.com" for r in lookups),
          "janitor/notify e-mail looked up", lookups)
    notice = poll(lambda: st.messages_about(name), "the notice to Bob", timeout_s=10)[0]
    eq((notice["channel"], notice["thread_ts"]), ("D0BOB", None), "notice in Bob's DM")
    st.kube.annotate(ns, name, {"team/owner-comment": "still needed"})
    event("a person annotated %s/%s; resolving the alert" % (ns, name))
    st.fire([resolved(a)])
    st.wait_delivered(name, status="resolved")

    def unmarked():
        ann = st.kube.pod(ns, name)["metadata"]["annotations"]
        return not (set(ann) & JANITOR_KEYS) and ann
    ann = poll(unmarked, "the janitor's annotations removed", timeout_s=20)
    eq(ann, {"janitor/notify": "bob@example.com", "team/keep-note": "ask bob",
             "team/owner-comment": "still needed"}, "only the janitor's annotations removed")
    patches = st.pod_requests(ns, name, "PATCH")
    check_annotation_patches(patches)
    last = patches[-1]["body"]["metadata"]["annotations"]
    check(last and all(v is None for v in last.values()) and set(last) <= JANITOR_KEYS,
          "the unmark PATCH sets only janitor keys to null", last)
    reply = poll(lambda: [m for m in st.slack.get_messages()
                          if m["thread_ts"] == notice["ts"]],
                 "a reply in the notice's thread", timeout_s=15)
    eq([(m["channel"], m["thread_ts"]) for m in reply], [("D0BOB", notice["ts"])],
       "the cancellation replies in the notice's thread")
    st.quiet(2 * SWEEP_S + 0.5, "sweeps after the unmark must not delete")
    eq(st.pod_requests(ns, name, "DELETE"), [], "never deleted")
    eq(st.kube.pod(ns, name)["metadata"]["uid"], uid, "the pod is still there")


@run.case
def recreated_pod_never_deleted():
    st = live()
    ns = "ml"
    # (a) the alert names an older pod of the same name: the janitor leaves the new one alone
    old = st.kube.add_pod(ns, "db-0")["metadata"]["uid"]
    new = st.kube.recreate_pod(ns, "db-0")
    st.fire([alert(GPU, ns, "db-0", old)])
    st.wait_delivered("db-0")
    poll(lambda: st.pod_requests(ns, "db-0", "GET"), "alertbridge GETs db-0", timeout_s=15)
    # (b) a marked pod replaced between the sweeper's fresh GET and its DELETE
    uid = st.kube.add_pod(ns, "sim-3", labels={"owner": "U0ALICE"})["metadata"]["uid"]
    st.fire([alert(GPU, ns, "sim-3", uid)])
    st.wait_delivered("sim-3")
    st.wait_annotation(ns, "sim-3", "janitor/notified-at")
    st.kube.add_fault("GET", r"/api/v1/namespaces/ml/pods/sim-3", action="recreate_after")
    event("armed: the next GET of ml/sim-3 is followed by its recreation")
    d = st.wait_delete(ns, "sim-3", timeout_s=GRACE_GPU_S + NOTICE_LEAD_S + 4 * SWEEP_S + 10)
    recreated = [r for r in st.pod_requests(ns, "sim-3", "GET") if r.get("recreated_uid")]
    check(recreated, "the sweeper GETs the pod afresh before deleting it")
    check(recreated[0]["time"] <= d["time"], "fresh GET before the DELETE")
    check_delete(d, uid)
    eq(d["status"], 409, "the uid precondition made the DELETE fail")
    st.quiet(2 * SWEEP_S + 0.5, "later sweeps must leave both new pods alone")
    eq(st.kube.pod(ns, "sim-3")["metadata"]["uid"], recreated[0]["recreated_uid"],
       "the new sim-3 lives")
    eq([r["status"] for r in st.pod_requests(ns, "sim-3", "DELETE")], [409],
       "no other DELETE of sim-3")
    eq([r["method"] for r in st.pod_requests(ns, "db-0") if r["method"] in MUTATING], [],
       "db-0 (newer uid) never patched or deleted")
    eq(st.kube.pod(ns, "db-0")["metadata"]["uid"], new, "the new db-0 lives")
    eq(st.events_about("db-0"), [], "no Event about db-0")
    eq(st.messages_about("db-0"), [], "no Slack notice about db-0")


@run.case
def exempt_and_kube_system_pods_untouched():
    st = live()
    past = "2020-01-01T00:00:00Z"
    ex = st.kube.add_pod("ml", "exempt-4", annotations={"janitor/exempt": "true",
                                                        "janitor/expires": past})
    ks = st.kube.add_pod("kube-system", "coredns-4", annotations={"janitor/expires": past})
    ctl = st.kube.add_pod("ml", "ctl-4")
    st.fire([alert(GPU, "ml", "exempt-4", ex["metadata"]["uid"]),
             alert(GPU, "kube-system", "coredns-4", ks["metadata"]["uid"]),
             alert(GPU, "ml", "ctl-4", ctl["metadata"]["uid"])])
    for p in ("exempt-4", "coredns-4", "ctl-4"):
        st.wait_delivered(p)
    st.wait_annotation("ml", "ctl-4", "janitor/notified-at")
    st.quiet(2 * SWEEP_S + 0.5, "sweeps that must skip the exempt and kube-system pods")
    for ns, name, pod in (("ml", "exempt-4", ex), ("kube-system", "coredns-4", ks)):
        eq([r["method"] for r in st.pod_requests(ns, name) if r["method"] in MUTATING], [],
           "no PATCH or DELETE of %s/%s" % (ns, name))
        eq(st.kube.pod(ns, name)["metadata"]["annotations"], pod["metadata"]["annotations"],
           "%s/%s annotations unchanged" % (ns, name))
        eq(st.events_about(name), [], "no Event about %s" % name)
        eq(st.messages_about(name), [], "no Slack message about %s" % name)


@run.case
def user_ttl_noticed_before_deletion():
    st = live()
    ns, name, ttl_s = "ml", "ttl-5", 8
    pod = st.kube.add_pod(ns, name, annotations={"janitor/ttl": "%ds" % ttl_s})
    uid = pod["metadata"]["uid"]
    created = parse_time(pod["metadata"]["creationTimestamp"])
    event("%s/%s created with janitor/ttl %ds, no alert" % (ns, name, ttl_s))
    p = st.wait_annotation(ns, name, "janitor/notified-at", timeout_s=ttl_s + 4 * SWEEP_S + 10)
    notified = parse_time(p["metadata"]["annotations"]["janitor/notified-at"])
    msgs = st.messages_about(name)
    eq([(m["channel"], m["thread_ts"]) for m in msgs], [("#gpu", None)],
       "one notice in the default channel (no owner label, no janitor/notify)")
    reqs = st.pod_requests(ns, name)
    check_annotation_patches([r for r in reqs if r["method"] == "PATCH"])
    rec = [r for r in reqs if r["method"] == "PATCH" and "janitor/notified-at" in
           r["body"]["metadata"]["annotations"]]
    check(rec and msgs[0]["time"] <= rec[0]["time"], "notified-at written after the notice",
          rec)
    eq([r for r in reqs if r["method"] == "DELETE"], [], "no DELETE before the notice lead")
    d = st.wait_delete(ns, name, timeout_s=NOTICE_LEAD_S + 4 * SWEEP_S + 10)
    check_delete(d, uid)
    eq(d["status"], 200, "DELETE answered")
    check(d["time"] >= created + ttl_s - SLOP_S, "not deleted before the ttl ran out")
    check(d["time"] >= notified + NOTICE_LEAD_S - SLOP_S and
          d["time"] >= msgs[0]["time"] + NOTICE_LEAD_S - SLOP_S,
          "deleted only notice_lead after the notice (%.2f s after it)" % (
              d["time"] - msgs[0]["time"]))
    event("ttl pod deleted %.1f s after its notice" % (d["time"] - msgs[0]["time"]))


@run.case
def zero_ttl_never_acted_on():
    """janitor/ttl: 0s is not "now": kube-janitor acts on a TTL only above zero, so do we."""
    st = live()
    ns, name = "ml", "ttl0-5"
    st.kube.add_pod(ns, name, annotations={"janitor/ttl": "0s"}, created_ago_s=60)
    event("%s/%s created 60 s ago with janitor/ttl 0s, no alert" % (ns, name))
    start = time.time()

    def sweeps_since():
        return [r for r in st.kube.get_requests() if r["method"] == "GET" and
                r["path"] == "/api/v1/pods" and r["time"] > start]
    poll(lambda: len(sweeps_since()) >= 2, "two sweeps that list ttl0-5",
         timeout_s=4 * SWEEP_S + 10)
    st.quiet(NOTICE_LEAD_S + SWEEP_S + 0.5, "past a notice lead: a zero TTL must stay idle")
    eq([r["method"] for r in st.pod_requests(ns, name) if r["method"] in MUTATING], [],
       "no PATCH or DELETE of %s/%s" % (ns, name))
    eq(st.messages_about(name), [], "no Slack notice about %s" % name)
    eq(st.events_about(name), [], "no Event about %s" % name)
    eq(st.kube.pod(ns, name)["metadata"]["annotations"], {"janitor/ttl": "0s"},
       "%s/%s annotations unchanged" % (ns, name))


@run.case
def reminder_in_the_notice_thread_before_deletion():
    """One reminder (slack_reminder.mustache) in the notice's thread reminder_before ahead of
    the deletion; none for a pod whose alert resolved first."""
    st = live()
    ns, name, gone = "ml", "rem-8", "rem-9"
    uid = st.kube.add_pod(ns, name, labels={"owner": "U0BOB"})["metadata"]["uid"]
    uid9 = st.kube.add_pod(ns, gone, labels={"owner": "U0BOB"})["metadata"]["uid"]
    a9 = alert(REM, ns, gone, uid9)
    st.fire([alert(REM, ns, name, uid), a9])
    st.wait_delivered(name)
    st.wait_delivered(gone)
    pod = st.wait_annotation(ns, name, "janitor/notified-at")
    ann, expires, _ = check_marked(pod, REM)
    notified = parse_time(ann["janitor/notified-at"])
    act = max(expires, notified + NOTICE_LEAD_S)
    notice = [m for m in st.messages_about("`%s/%s`" % (ns, name)) if not m["thread_ts"]]
    eq([(m["channel"], m["thread_ts"]) for m in notice], [("D0BOB", None)],
       "one notice about %s in Bob's DM" % name)
    # rem-9 turns busy again once noticed, before its reminder is due
    st.wait_annotation(ns, gone, "janitor/notified-at")
    st.fire([resolved(a9)])
    st.wait_delivered(gone, status="resolved")
    d = st.wait_delete(ns, name, timeout_s=GRACE_REM_S + NOTICE_LEAD_S + 4 * SWEEP_S + 10)
    eq(d["status"], 200, "DELETE answered")
    thread = poll(lambda: [m for m in st.slack.get_messages()
                           if m["thread_ts"] == notice[0]["ts"] and ":wastebasket:" in m["text"]]
                  and [m for m in st.slack.get_messages() if m["thread_ts"] == notice[0]["ts"]],
                  "the deleted reply in the notice's thread", timeout_s=15)
    reminders = [m for m in thread if ":alarm_clock:" in m["text"]]
    eq(len(reminders), 1, "exactly one reminder in the thread of %s" % name)
    r = reminders[0]
    eq(r["channel"], "D0BOB", "the reminder in the notice's channel")
    human = time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime(act))
    want = re.compile(
        r":alarm_clock: \*Reminder:\* pod `ml/rem-8` will be deleted in \d+ (?:seconds?|milliseconds?), at "
        + re.escape(human) + r" \(JanitorPodUnschedulable\)\.\n"
        r"\*To keep it:\* `kubectl annotate pod -n ml rem-8 janitor/exempt=true`\n"
        r"\*To snooze it:\* `kubectl annotate pod -n ml rem-8 --overwrite "
        r"janitor/expires=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ` \(any later UTC time\)\n?")
    check(want.fullmatch(r["text"]), "the reminder is slack_reminder.mustache rendered", r["text"])
    check(r["time"] >= act - REMINDER_S - 1 - SLOP_S,
          "the reminder not before reminder_before (%.1f s) ahead of the deletion" % REMINDER_S,
          (r["time"], act))
    check(r["time"] < d["time"], "the reminder before the DELETE", (r["time"], d["time"]))
    event("reminder %.1f s before the DELETE" % (d["time"] - r["time"]))
    st.quiet(SWEEP_S + 0.5, "a sweep after the deletion: still one reminder")
    eq(len([m for m in st.slack.get_messages() if m["thread_ts"] == notice[0]["ts"] and
            ":alarm_clock:" in m["text"]]), 1, "still exactly one reminder")
    about9 = st.messages_about("`%s/%s`" % (ns, gone))
    eq([m["text"].split()[0] for m in about9], [":hourglass_flowing_sand:",
                                                ":white_check_mark:"],
       "%s: the notice and the never-mind reply, no reminder" % gone)
    eq(st.pod_requests(ns, gone, "DELETE"), [], "%s never deleted" % gone)


@run.case
def deployment_owned_pod_scaled_to_zero():
    st = live()
    ns = "ml"
    rs = st.kube.add_deployment(ns, "nb7", replicas=1)
    name = rs + "-x7k2p"
    uid = st.kube.add_pod(ns, name, owner={"kind": "ReplicaSet", "name": rs},
                          labels={"owner": "U0ALICE"})["metadata"]["uid"]
    st.fire([alert(GPU, ns, name, uid)])
    st.wait_delivered(name)
    scale_path = "/apis/apps/v1/namespaces/ml/deployments/nb7/scale"
    r = poll(lambda: [x for x in st.kube.get_requests() if x["path"] == scale_path and
                      x["method"] == "PATCH"], "PATCH of the Deployment's scale",
             timeout_s=GRACE_GPU_S + NOTICE_LEAD_S + 4 * SWEEP_S + 10)
    event("scale PATCH -> %s" % r[0]["status"])
    eq(len(r), 1, "one scale PATCH")
    eq((r[0]["body"], r[0]["status"]), ({"spec": {"replicas": 0}}, 200), "scale to 0")
    eq(r[0]["headers"].get("content-type", "").split(";")[0].strip(), MERGE_PATCH,
       "scale Content-Type")
    check([x for x in st.kube.get_requests() if x["path"] ==
           "/apis/apps/v1/namespaces/ml/replicasets/" + rs], "the ReplicaSet was looked up")
    eq(st.kube.get("Deployment", ns, "nb7")["spec"]["replicas"], 0, "Deployment at 0")
    eq(st.pod_requests(ns, name, "DELETE"), [], "the pod itself is not deleted")
    eq([x for x in st.kube.get_requests() if x["method"] == "DELETE" and "nb7" in x["path"]],
       [], "nothing of nb7 deleted")
    notice = st.messages_about(name)
    check(notice and notice[0]["channel"] == "D0ALICE", "the owner had a notice", notice)
    check(r[0]["time"] >= notice[0]["time"] + NOTICE_LEAD_S - SLOP_S,
          "scaled only notice_lead after the notice")


@run.case
def dry_run_changes_nothing_but_logs():
    st = Stack("dryrun", dry_run=True)
    try:
        ns = "ml"
        idle = st.kube.add_pod(ns, "idle-6", labels={"owner": "U0ALICE"})
        st.kube.add_pod(ns, "ttl-6", annotations={"janitor/ttl": "1s"}, created_ago_s=60)
        st.start()
        st.fire([alert(GPU, ns, "idle-6", idle["metadata"]["uid"])])
        st.wait_delivered("idle-6")

        def logged():
            with open(st.ab.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            return "idle-6" in text and "ttl-6" in text and text
        poll(logged, "alertbridge logs its plan for idle-6 and ttl-6", timeout_s=30)
        poll(lambda: len([r for r in st.kube.get_requests() if r["method"] == "GET" and
                          r["path"].endswith("/pods")]) >= 2, "two sweeps", timeout_s=20)
        st.quiet(GRACE_GPU_S + 0.5, "past the grace: a live janitor would act now")
        eq([(r["method"], r["path"]) for r in st.kube.get_requests()
            if r["method"] in MUTATING], [], "no write to the Kubernetes API")
        eq(st.posts(), [], "no Slack message")
        eq(st.kube.pod(ns, "idle-6")["metadata"]["annotations"], {}, "idle-6 unchanged")
        eq(st.kube.pod(ns, "ttl-6")["metadata"]["annotations"], {"janitor/ttl": "1s"},
           "ttl-6 unchanged")
        # the plan, on demand
        before = len(st.kube.get_requests())
        try:
            out = subprocess.run([ALERTBRIDGE, "janitor", "sweep", "--once", "--dry-run",
                                  "--config.file=" + st.config], cwd=st.dir, timeout=30,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except subprocess.TimeoutExpired:
            raise Failure("janitor sweep --once --dry-run did not finish within 30 s")
        text = out.stdout.decode("utf-8", "replace")
        event("janitor sweep --once --dry-run: exit %d, %d lines" % (
            out.returncode, len(text.splitlines())))
        print(text, end="", flush=True)
        eq(out.returncode, 0, "exit code of janitor sweep --once --dry-run (stderr: %s)" %
           out.stderr.decode("utf-8", "replace")[-500:])
        row = [ln for ln in text.splitlines() if "ttl-6" in ln]
        check(row, "the plan table lists ml/ttl-6", text)
        check(any(r["method"] == "GET" for r in st.kube.get_requests()[before:]),
              "the plan was made from the API's pods")
        eq([(r["method"], r["path"]) for r in st.kube.get_requests() if r["method"] in MUTATING],
           [], "still no write to the Kubernetes API")
        eq(st.posts(), [], "still no Slack message")
    except BaseException:
        st.post_mortem("dry_run_changes_nothing_but_logs")
        raise
    finally:
        st.stop()


def main():
    term_raises()
    event("alertbridge binary: %s" % ALERTBRIDGE)
    only = only_from_env("E2E_ONLY")
    def stop_live():
        if "stack" in _live:
            _live.pop("stack").stop()
    try:
        return run.run(on_failure=on_failure, only=only, after=stop_live)
    finally:
        stop_live()   # on KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
