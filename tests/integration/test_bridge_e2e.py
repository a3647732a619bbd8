#!/usr/bin/env python3
# run.sh: weight 42
"""test_bridge_e2e.py - alertbridge end to end: Debian's real Alertmanager posts webhooks to the
real alertbridge binary, which talks to the fake GitHub; every scenario asserts the exact
requests GitHub received (method, path, headers, JSON body) and the issues it ends up with.

    Alertmanager --webhook--> recording proxy --> alertbridge --REST--> fake_github

Each scenario gets its own stack on 127.0.0.1 ephemeral ports and its own temp dir.
Env: ALERTBRIDGE_BIN (default ./alertbridge), ALERTMANAGER_BIN (default
/usr/bin/prometheus-alertmanager), E2E_ONLY=name,name to run some scenarios.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertmanager, Runner, WebhookProxy, check, eq,  # noqa: E402
                     event, free_port, http, iso_ms, poll, print_tail, short, wait_ready)
from harness import ALERTBRIDGE, cases_main, print_stack_tails, resolved, serve_proc  # noqa: E402
from harness import stop_all, write_file  # noqa: E402

REPO = "acme/cluster-alerts"
GH_TOKEN = "ghs_e2eGitHubToken0123456789"
HOOK_TOKEN = "e2e-webhook-secret"
RECEIVER = "bridge"
API_VERSION = "2022-11-28"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
TITLE_TMPL = "{{labels.alertname}}: {{labels.container}} on {{labels.namespace}}/{{labels.pod}}"
BODY_TMPL = ("Alert {{labels.alertname}} ({{labels.severity}}) fires for "
             "{{labels.namespace}}/{{labels.pod}}.\n\n{{annotations.summary}}\n")
LABELS = ["alert", "severity:{{labels.severity}}"]
ASSIGNEES = ["oncall-bot"]
# Between two mutating calls alertbridge waits >= 1 s; arrival times may jitter a little.
MIN_SPACING_S = 0.95

run = Runner()


def alert(name="E2eDiskFull", container="db", pod="db-0", namespace="prod",
          severity="critical", starts=None, ends=None):
    a = {"labels": {"alertname": name, "container": container, "namespace": namespace,
                    "pod": pod, "severity": severity},
         "annotations": {"summary": "%s on %s" % (name, pod)},
         "startsAt": iso_ms(starts if starts is not None else time.time()),
         "generatorURL": "http://prometheus.example:9090/graph?g0.expr=up%3D%3D0"}
    if ends is not None:
        a["endsAt"] = iso_ms(ends)
    return a


def expect_title(a):
    l = a["labels"]
    return "%s: %s on %s/%s" % (l["alertname"], l["container"], l["namespace"], l["pod"])


def expect_body_text(a):
    l = a["labels"]
    return "Alert %s (%s) fires for %s/%s.\n\n%s" % (
        l["alertname"], l["severity"], l["namespace"], l["pod"], a["annotations"]["summary"])


def marker(fp):
    return "<!-- alertbridge:key=%s -->" % fp


class Stack:
    """fake GitHub + alertbridge + recording proxy + Alertmanager, in a temp dir; a context
    manager that prints the logs' tails if the block fails and always stops everything."""

    def __init__(self, name, repeat_interval="1h"):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="ab-e2e-%s-" % name)
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
        event("fake github on %s" % self.gh.url)
        self.ab_port = free_port()
        self.ab_url = "http://127.0.0.1:%d" % self.ab_port
        self.proxy = WebhookProxy(self.ab_port)
        self.hook_file = self._write("webhook-token", HOOK_TOKEN + "\n")
        self._write("github-token", GH_TOKEN + "\n")
        self._write("issue_title.mustache", TITLE_TMPL)
        self._write("issue_body.mustache", BODY_TMPL)
        self.config = self._write("alertbridge.yml", self._config())
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.ab = None
        self.ab_runs = 0
        self.am = Alertmanager(self.dir, "http://127.0.0.1:%d/v1/webhook" % self.proxy.port,
                               self.hook_file, receiver=RECEIVER,
                               repeat_interval=repeat_interval)

    def _write(self, name, text):
        return write_file(self.dir, name, text)

    def _config(self):
        # Relative paths resolve against this file's directory (DESIGN.md "Configuration").
        return ("listen_address: 127.0.0.1:%d\n"
                "database: alertbridge.db\n"
                "log: {level: debug, format: logfmt}\n"
                "webhook:\n"
                "  bearer_token_file: webhook-token\n"
                "  max_body_bytes: 1048576\n"
                "github:\n"
                "  api_url: %s\n"
                "  token_file: github-token\n"
                "  content_per_minute: 60\n"
                "  timeout: 5s\n"
                "  dry_run: false\n"
                "receivers:\n"
                "  - name: %s\n"
                "    repo: %s\n"
                "    issue_per: alert\n"
                "    labels: [%s]\n"
                "    assignees: [%s]\n"
                "    auto_close: true\n"
                "    reopen_window: 7d\n"
                "    templates: {title: issue_title.mustache, body: issue_body.mustache}\n"
                "janitor:\n"
                "  enabled: false\n"
                % (self.ab_port, self.gh.url, RECEIVER, REPO,
                   ", ".join('"%s"' % x for x in LABELS), ", ".join(ASSIGNEES)))

    def start_alertbridge(self):
        self.ab_runs += 1
        self.ab = serve_proc("alertbridge#%d" % self.ab_runs, self.config, self.dir, flags=(
            "--web.listen-address=127.0.0.1:%d" % self.ab_port, "--database.path=" + self.db))
        self.ab.start()
        wait_ready(self.ab, self.ab_url + "/-/ready", timeout_s=30)
        event("alertbridge ready on %s" % self.ab_url)

    def __enter__(self):
        try:
            self.start_alertbridge()
            self.am.start()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, et, ev, tb):
        try:
            if et is not None:
                self.post_mortem()
        finally:
            stop_all((lambda: self.am.stop(), lambda: self.ab and self.ab.stop(),
                      self.proxy.stop, self.gh.stop), self.dir)
        return False

    def post_mortem(self):
        print_stack_tails(self.ab, self.am, 30)
        reqs = self.gh.get_requests()
        print_tail("fake github requests (%d)" % len(reqs), "\n".join(
            "%.2f %s %s -> %s %s" % (r["time"] - reqs[0]["time"], r["method"], r["path"],
                                     r["status"], short(r["body"], 300)) for r in reqs))
        print_tail("webhook deliveries", "\n".join(
            "%s %s -> %s %s" % (d["payload"].get("status") if d["payload"] else "?",
                                [a.get("fingerprint") for a in (d["payload"] or {}).get(
                                    "alerts", [])], d["status"], short(d["answer"], 200))
            for d in self.proxy.get()))

    # ----- views on what happened ------------------------------------------------------------
    def requests(self):
        return self.gh.get_requests()

    def mutating(self):
        return [r for r in self.requests() if r["method"] in MUTATING]

    def creates(self):
        return [r for r in self.mutating() if r["method"] == "POST" and
                r["path"] == "/repos/%s/issues" % REPO]

    def issues(self):
        return self.gh.issues(REPO)

    def wait_issues(self, n, what):
        poll(lambda: len(self.issues()) >= n, what, timeout_s=60)
        event("%d issue(s) on the fake" % len(self.issues()))
        return self.issues()

    def wait_delivery(self, pred, what, timeout_s=60):
        return poll(lambda: [d for d in self.proxy.get() if pred(d)], what,
                    timeout_s=timeout_s)

    def fingerprints(self, status="firing"):
        """Alertmanager's fingerprints by alert container, from the webhooks it sent."""
        out = {}
        for d in self.proxy.get():
            for a in (d["payload"] or {}).get("alerts", []):
                if a["status"] == status:
                    out[a["labels"].get("container")] = a["fingerprint"]
        return out

    def quiet(self, seconds, what):
        """Let time pass so a wrong extra call would have happened (bounded)."""
        event("waiting %.0f s: %s" % (seconds, what))
        time.sleep(seconds)


# ----- assertions shared by the scenarios ---------------------------------------------------------

def check_headers(reqs):
    """Every request alertbridge made carries GitHub's required headers (gh.h)."""
    check(reqs, "alertbridge made requests to GitHub")
    for r in reqs:
        h = r["headers"]
        where = "%s %s" % (r["method"], r["path"])
        eq(h.get("authorization"), "Bearer " + GH_TOKEN, "Authorization of " + where)
        eq(h.get("accept"), "application/vnd.github+json", "Accept of " + where)
        eq(h.get("x-github-api-version"), API_VERSION, "X-GitHub-Api-Version of " + where)
        check(h.get("user-agent", "").startswith("alertbridge"),
              "User-Agent of %s starts with alertbridge" % where, h.get("user-agent"))
        if r["method"] in ("POST", "PATCH", "PUT"):
            check(h.get("content-type", "").split(";")[0].strip() == "application/json",
                  "Content-Type of %s is application/json" % where, h.get("content-type"))
        check(isinstance(r["status"], int) and r["status"] < 400,
              "GitHub accepted %s" % where, r["status"])


def check_paced(reqs):
    m = [r for r in reqs if r["method"] in MUTATING]
    for a, b in zip(m, m[1:]):
        check(b["time"] - a["time"] >= MIN_SPACING_S,
              "mutating calls >= 1 s apart: %s %s then %s %s after %.3f s" % (
                  a["method"], a["path"], b["method"], b["path"], b["time"] - a["time"]))


def check_create(req, a, fp):
    """The exact create request for alert a with Alertmanager fingerprint fp."""
    eq((req["method"], req["path"]), ("POST", "/repos/%s/issues" % REPO), "create call")
    body = req["body"]
    check(isinstance(body, dict), "create body is a JSON object", body)
    eq(sorted(body), ["assignees", "body", "labels", "title"], "create body keys")
    eq(body["title"], expect_title(a), "issue title")
    eq(body["labels"], ["alert", "severity:" + a["labels"]["severity"]], "issue labels")
    eq(body["assignees"], ASSIGNEES, "issue assignees")
    text = body["body"]
    check(isinstance(text, str) and expect_body_text(a) in text,
          "issue body holds the rendered template %r" % expect_body_text(a), text)
    check(text.rstrip("\n").endswith(marker(fp)), "issue body ends with %s" % marker(fp), text)


def check_webhook_answers(st):
    for d in st.proxy.get():
        if d["status"] == 502 and "upstream" in str(d["answer"]):
            continue  # alertbridge was down (restart scenario); Alertmanager retries
        eq(d["status"], 200, "alertbridge's answer to a webhook")
        check(isinstance(d["answer"], dict) and d["answer"].get("status") == "ok",
              'webhook answer is {"status":"ok",...}', d["answer"])


def fire_one(st, a):
    """Post a to Alertmanager, wait for its issue; returns (fingerprint, issue)."""
    st.am.post([a])
    event("posted firing %s to alertmanager" % a["labels"]["alertname"])
    issue = st.wait_issues(1, "the issue for the firing alert")[0]
    fp = poll(lambda: st.fingerprints().get(a["labels"]["container"]),
              "the firing webhook recorded by the proxy", timeout_s=10)
    return fp, issue


def resolve_one(st, a, number):
    st.am.post([resolved(a)])
    event("posted resolved %s to alertmanager" % a["labels"]["alertname"])
    poll(lambda: [i for i in st.issues() if i["number"] == number and
                  i["state"] == "closed"], "issue #%d closed" % number, timeout_s=60)
    event("issue #%d closed" % number)


def fire_then_resolve(st, a):
    """fire_one(st, a), then resolve_one() of its issue; returns (fingerprint, issue number)."""
    fp, issue = fire_one(st, a)
    resolve_one(st, a, issue["number"])
    return fp, issue["number"]


def sole_issue_state(st, number, state, reason):
    issues = st.issues()
    eq([(i["number"], i["state"], i["state_reason"]) for i in issues],
       [(number, state, reason)], "issues on the fake")


def check_traffic(st):
    """Every scenario's closing checks: mutating calls paced, GitHub's headers on every
    request, every webhook answered ok."""
    reqs = st.requests()
    check_paced(reqs)
    check_headers(reqs)
    check_webhook_answers(st)


def check_created_then_closed(st, a, fp, n, what):
    """The mutating calls were exactly: the create of issue n for alert a (fingerprint fp),
    a comment on it, its close as completed (what: how the test says it); the issue is
    closed.  Returns the calls."""
    m = st.mutating()
    eq([(r["method"], r["path"]) for r in m], [
        ("POST", "/repos/%s/issues" % REPO),
        ("POST", "/repos/%s/issues/%d/comments" % (REPO, n)),
        ("PATCH", "/repos/%s/issues/%d" % (REPO, n))], what)
    check_create(m[0], a, fp)
    eq(m[2]["body"], {"state": "closed", "state_reason": "completed"}, "close body")
    sole_issue_state(st, n, "closed", "completed")
    return m


# ----- scenarios ----------------------------------------------------------------------------------

@run.case
def one_firing_alert_makes_one_issue():
    with Stack("one") as st:
        a = alert()
        fp, issue = fire_one(st, a)
        st.quiet(3, "no second issue or call may follow")
        creates = st.creates()
        eq(len(creates), 1, "exactly one create")
        check_create(creates[0], a, fp)
        eq(len(st.mutating()), 1, "no other mutating call")
        eq(issue["title"], expect_title(a), "title on GitHub")
        eq([x["name"] for x in issue["labels"]], ["alert", "severity:critical"],
           "labels on GitHub")
        sole_issue_state(st, 1, "open", None)
        check_traffic(st)


@run.case
def repeats_and_duplicate_webhooks_change_nothing():
    with Stack("repeat", repeat_interval="3s") as st:
        a = alert(name="E2eRepeat")
        fp, _ = fire_one(st, a)
        before = len(st.mutating())
        eq(before, 1, "one mutating call (the create) so far")
        st.wait_delivery(lambda d: d["payload"]["status"] == "firing", "first webhook")
        firing = poll(lambda: (lambda f: len(f) >= 2 and f)(
            [d for d in st.proxy.get() if d["payload"]["status"] == "firing"]),
            "Alertmanager's repeat of the firing notification", timeout_s=30)
        event("alertmanager repeated the notification (%d deliveries)" % len(firing))
        # The same captured webhook, posted again directly (an HA twin or a retry).
        status, _, answer = http("POST", st.ab_url + "/v1/webhook", raw=firing[0]["raw"],
                                 headers={"Authorization": "Bearer " + HOOK_TOKEN,
                                          "Content-Type": "application/json"})
        event("posted the captured webhook again directly -> %s" % status)
        eq(status, 200, "direct duplicate accepted")
        check(isinstance(answer, dict) and answer.get("status") == "ok", "answer status ok",
              answer)
        st.quiet(3, "a wrong duplicate create would happen now")
        eq(len(st.mutating()), before, "no new mutating call after repeats and duplicate")
        eq(len(st.creates()), 1, "one create")
        check_create(st.creates()[0], a, fp)
        sole_issue_state(st, 1, "open", None)
        check_traffic(st)


@run.case
def resolving_comments_then_closes():
    with Stack("resolve") as st:
        a = alert(name="E2eResolve")
        fp, n = fire_then_resolve(st, a)
        st.quiet(2, "nothing more may follow the close")
        m = check_created_then_closed(st, a, fp, n, "create, comment, close in order")
        eq(sorted(m[1]["body"]), ["body"], "comment body keys")
        check("resolved" in m[1]["body"]["body"].lower(), "comment says resolved",
              m[1]["body"])
        eq(len(st.gh.comments(REPO, n)), 1, "one comment on the issue")
        check_traffic(st)


@run.case
def firing_again_reopens_with_a_comment():
    with Stack("reopen") as st:
        a = alert(name="E2eReopen")
        fp, n = fire_then_resolve(st, a)
        closed_calls = len(st.mutating())
        eq(closed_calls, 3, "create, comment, close before the new episode")
        time.sleep(1.1)  # a new startsAt, a whole second later
        b = alert(name="E2eReopen", starts=time.time())
        st.am.post([b])
        event("posted firing again (new startsAt) to alertmanager")
        poll(lambda: [i for i in st.issues() if i["number"] == n and i["state"] == "open"],
             "issue #%d reopened" % n, timeout_s=60)
        poll(lambda: len(st.mutating()) >= closed_calls + 2, "reopen and its comment",
             timeout_s=30)
        st.quiet(2, "nothing more may follow the reopen")
        new = st.mutating()[closed_calls:]
        calls = sorted(((r["method"], r["path"]) for r in new))
        eq(calls, [("PATCH", "/repos/%s/issues/%d" % (REPO, n)),
                   ("POST", "/repos/%s/issues/%d/comments" % (REPO, n))],
           "reopen: one PATCH and one comment")
        patch = [r for r in new if r["method"] == "PATCH"][0]
        eq(patch["body"], {"state": "open", "state_reason": "reopened"}, "reopen body")
        comment = [r for r in new if r["method"] == "POST"][0]
        eq(sorted(comment["body"]), ["body"], "comment body keys")
        check("firing" in comment["body"]["body"].lower(), "comment says firing again",
              comment["body"])
        eq(len(st.creates()), 1, "no new issue within reopen_window")
        sole_issue_state(st, n, "open", "reopened")
        check_traffic(st)


@run.case
def group_of_three_makes_three_issues():
    with Stack("group") as st:
        now = time.time()
        alerts = [alert(name="E2eGroup", container=c, pod="api-0", severity="warning",
                        starts=now) for c in ("app", "proxy", "sidecar")]
        st.am.post(alerts)
        event("posted a group of three to alertmanager")
        st.wait_delivery(lambda d: len(d["payload"].get("alerts", [])) == 3,
                         "one webhook with the three alerts")
        st.wait_issues(3, "three issues")
        st.quiet(2, "no fourth issue may follow")
        fps = st.fingerprints()
        eq(sorted(fps), ["app", "proxy", "sidecar"], "three fingerprints")
        eq(len(set(fps.values())), 3, "fingerprints distinct")
        creates = st.creates()
        eq(len(creates), 3, "exactly three creates")
        by_fp = {}
        for r in creates:
            for c, fp in fps.items():
                if r["body"]["body"].rstrip("\n").endswith(marker(fp)):
                    by_fp[fp] = (c, r)
        eq(sorted(by_fp), sorted(fps.values()), "one create per fingerprint")
        for fp, (c, r) in by_fp.items():
            check_create(r, [x for x in alerts if x["labels"]["container"] == c][0], fp)
        eq(len(st.mutating()), 3, "no other mutating call")
        eq(sorted(i["number"] for i in st.issues()), [1, 2, 3], "issues 1..3")
        check_traffic(st)


@run.case
def restart_between_firing_and_resolving_keeps_the_map():
    with Stack("restart") as st:
        a = alert(name="E2eRestart")
        fp, issue = fire_one(st, a)
        n = issue["number"]
        st.quiet(1, "the map row commits")
        code = st.ab.stop()
        eq(code, 0, "alertbridge's exit code on SIGTERM")
        st.start_alertbridge()
        resolve_one(st, a, n)
        st.quiet(2, "nothing more may follow the close")
        check_created_then_closed(
            st, a, fp, n, "create before the restart; comment and close of the same issue after it")
        check_traffic(st)


def main():
    event("alertbridge binary: %s" % ALERTBRIDGE)
    return cases_main(run, "E2E_ONLY")


if __name__ == "__main__":
    sys.exit(main())
