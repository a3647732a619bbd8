#!/usr/bin/env python3
# run.sh: weight 12
"""test_status_page.py - the on-call page at / in Debian's headless Chromium: the real alertbridge
with the fake GitHub, and the janitor on against the fake Kubernetes API and the fake Slack.
Alerts are posted to the webhooks directly (no Alertmanager: the page is what is tested).

    test -> /v1/webhook, /v1/janitor/webhook -> alertbridge -> fake_github, fake_kube, fake_slack
    chromium --headless --dump-dom http://oncall:PASSWORD@127.0.0.1:PORT/?filters

Checked in the DOM Chromium built (html.parser over --dump-dom): each alert's card with its
alertname, issue title and the issue's link, its state; the dead letter with its reason and the
retry command; the janitor's pod with owner, policy, janitor/expires and the notice's delivery;
the queue and GitHub budget tiles; the filters; a hostile alertname and summary shown as text
with no element of theirs in the DOM.  web.auth: / and /metrics need the Basic user (401 with
WWW-Authenticate otherwise), /-/healthy and /-/ready stay open; /metrics' time with and without
the bcrypt cache is printed.  A phone-sized screenshot (412 px wide) is written to a temp dir;
with STATUS_PAGE_SCREENSHOT=PATH (make docs-screenshot) to PATH as well.
Without chromium every case is skipped, and says so.
Env: ALERTBRIDGE_BIN (default ./alertbridge), CHROMIUM (default chromium on PATH).
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import base64
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import ALERTBRIDGE  # noqa: E402
from harness import (Failure, Runner, check, eq, event, http, iso_ms,  # noqa: E402
                     poll, print_tail, short)
from harness import service_config, start_alertbridge, stop_all  # noqa: E402
from harness import janitor_head  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium")
REPO = "acme/cluster-alerts"
MISSING_REPO = "acme/decommissioned"
GH_TOKEN = "ghs_statusPageToken0123456789"
HOOK_TOKEN = "status-page-webhook-secret"
KUBE_TOKEN = "status-page-kube-token"
SLACK_TOKEN = "xoxb-status-page-slack-token"
USER = "oncall"
PASSWORD = "correct horse battery staple"
# htpasswd -nbBC 10 oncall 'correct horse battery staple' (libxcrypt crypt_r, $2y$, cost 10)
HASH = "$2y$10$TnD4qJFgqkaiWogpqY.qW.F3RqJSEuLmh0VW.H7ERxFCttn6Bne1O"
HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_SUMMARY = '"><img src=x onerror=alert(2)>'
GPU = "JanitorIdleGPUPod"

run = Runner()


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(
        ("%s:%s" % (user, password)).encode()).decode()}


AUTH = basic(USER, PASSWORD)


def alert(name, severity="critical", summary=None, starts_ago_s=600, ends=None, **labels):
    labels = dict(labels, alertname=name, severity=severity)
    a = {"status": "firing" if ends is None else "resolved", "labels": labels,
         "annotations": {"summary": summary or "%s on %s" % (name, labels.get("instance", "?"))},
         "startsAt": iso_ms(time.time() - starts_ago_s), "endsAt": "0001-01-01T00:00:00Z",
         "generatorURL": "http://prometheus.example:9090/graph?g0.expr=up",
         "fingerprint": "%016x" % (abs(hash((name, tuple(sorted(labels.items()))))) % (1 << 64))}
    if ends is not None:
        a["endsAt"] = iso_ms(ends)
    return a


def payload(receiver, alerts):
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    return {"version": "4", "groupKey": "{}:{alertname=\"%s\"}" % alerts[0]["labels"]["alertname"],
            "truncatedAlerts": 0, "status": status, "receiver": receiver,
            "groupLabels": {"alertname": alerts[0]["labels"]["alertname"]},
            "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://alertmanager.example:9093", "alerts": alerts}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def cls(self):
        return (self.attrs.get("class") or "").split()

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def find(self, tag=None, cls=None):
        return [n for n in self.walk() if (tag is None or n.tag == tag) and
                (cls is None or cls in n.cls())]


class Dom(html.parser.HTMLParser):
    """The tree Chromium serialised (void elements closed at once)."""
    VOID = {"meta", "link", "input", "br", "img", "hr", "source", "area", "base", "col", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in self.VOID:
            self.cur = n

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


class Stack:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ab-page-")
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
        self.kube = FakeKube(token=KUBE_TOKEN, namespaces=("default", "ml"))
        self.kube.start()
        self.slack = FakeSlack(token=SLACK_TOKEN).start()
        self.slack.add_user("U0ALICE", "alice@example.com")
        self.kube.write_kubeconfig(os.path.join(self.dir, "kubeconfig"), namespace="ml")
        self.port, self.url, self.config = service_config(
            self.dir, self._config(),
            (("webhook-token", HOOK_TOKEN), ("github-token", GH_TOKEN),
             ("slack-token", SLACK_TOKEN)))
        self.ab = None

    def _config(self):
        """alertbridge.yml but its head (service_config() writes that)."""
        return ("web:\n"
                "  auth:\n"
                "    basic_auth_users:\n"
                "      %s: %s\n"
                "github: {api_url: %s, token_file: github-token, timeout: 5s, dry_run: false}\n"
                "receivers:\n"
                "  - {name: oncall, repo: %s}\n"
                "  - {name: platform, repo: %s}\n"
                % (USER, HASH, self.gh.url, REPO, MISSING_REPO) +
                janitor_head() +
                "  policies:\n"
                "    - {alertname: %s, grace: 6h, notice_lead: 2h, owned: scale-to-zero}\n"
                "  slack: {api_url: %s, bot_token_file: slack-token, default_channel: \"#ml\","
                " owner_label: owner}\n"
                "leader_election: {enabled: false}\n"
                % (GPU, self.slack.api_url))

    def start(self):
        self.ab = start_alertbridge(ALERTBRIDGE, self.config, self.dir, self.url)
        event("alertbridge ready on %s" % self.url)

    def stop(self):
        stop_all((lambda: self.ab and self.ab.stop(), self.gh.stop, self.kube.stop,
                  self.slack.stop), self.dir)

    def post(self, receiver, alerts, path="/v1/webhook"):
        st, _, body = http("POST", self.url + path, payload(receiver, alerts),
                           headers={"Authorization": "Bearer " + HOOK_TOKEN})
        eq(st, 200, "webhook answer (%s)" % short(body, 300))

    def page(self, query="", headers=AUTH):
        st, _, body = http("GET", self.url + "/" + query, headers=headers)
        eq(st, 200, "GET /%s" % query)
        return body

    def chromium(self, args, what):
        """One bounded headless Chromium run with a private profile; its stdout."""
        profile = tempfile.mkdtemp(prefix="ab-chromium-", dir=self.dir)
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + profile] + args
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise Failure("chromium did not finish %s within 60 s" % what)
        if r.returncode != 0:
            raise Failure("chromium %s exited %d: %s" % (what, r.returncode, r.stderr[-1500:]))
        return r.stdout

    def dom(self, query=""):
        url = "http://%s:%s@127.0.0.1:%d/%s" % (USER, PASSWORD.replace(" ", "%20"), self.port,
                                                query)
        text = self.chromium(["--dump-dom", url], "--dump-dom /%s" % query)
        check("<main>" in text, "chromium rendered the page for /%s" % query, text[-500:])
        return text, Dom(text).root

    def post_mortem(self):
        if self.ab is not None:
            print_tail("alertbridge log (last 60 lines)", self.ab.tail(60))


ST = None

DISK = alert("NodeFilesystemAlmostOutOfSpace", instance="node-7:9100", mountpoint="/var",
             summary="Filesystem /var on node-7 has 3% left", starts_ago_s=47 * 60)
CRASH = alert("KubePodCrashLooping", severity="warning", namespace="payments",
              pod="api-6d9f7c-x2k4q", summary="payments/api-6d9f7c-x2k4q restarts 6 times an hour",
              starts_ago_s=3 * 3600)
TARGET = alert("TargetDown", severity="warning", job="blackbox", starts_ago_s=2 * 3600,
               summary="1 of 3 blackbox targets are down")
GONE = alert("CertificateExpiry", instance="ingress-1", summary="TLS certificate expires in 6d",
             starts_ago_s=20 * 60)
HOSTILE = alert(HOSTILE_NAME, instance="evil", summary=HOSTILE_SUMMARY, starts_ago_s=60)


def card_of(root, name, cls="alert"):
    cards = [c for c in root.find("article", cls) if
             any(n.text() == name for n in c.find(cls="name"))]
    eq(len(cards), 1, "cards of %r" % name)
    return cards[0]


@run.case
def start_and_fill():
    global ST
    ST = Stack()
    ST.kube.add_pod("ml", "trainer-0", labels={"owner": "alice@example.com"})
    ST.start()
    ST.post("oncall", [DISK])
    ST.post("oncall", [CRASH])
    ST.post("oncall", [TARGET])
    ST.post("platform", [GONE])
    ST.post("janitor", [alert(GPU, severity="info", namespace="ml", pod="trainer-0",
                              summary="ml/trainer-0 idle GPU for 6h")], "/v1/janitor/webhook")
    poll(lambda: len(ST.gh.issues(REPO)) >= 3, "three issues on GitHub", timeout_s=30)
    ST.post("oncall", [dict(TARGET, status="resolved", endsAt=iso_ms(time.time() - 5))])
    poll(lambda: "resolved" in [c.cls()[-1] for c in Dom(ST.page()).root.find("article", "alert")
                                if "TargetDown" in c.text()], "TargetDown resolved", timeout_s=30)
    poll(lambda: "CertificateExpiry" in ST.page(), "the dead letter on the page", timeout_s=30)
    poll(lambda: "delivered" in "".join(n.text() for n in Dom(ST.page()).root.find(
        cls="notice")), "the janitor's pod with its notice delivered", timeout_s=30)
    event("issues %s" % [(i["number"], i["title"]) for i in ST.gh.issues(REPO)])


@run.case
def auth_guards_page_and_metrics():
    for path in ("/", "/metrics", "/?state=firing"):
        st, h, _ = http("GET", ST.url + path)
        eq(st, 401, "GET %s without credentials" % path)
        check(h.get("www-authenticate", "").startswith('Basic realm="alertbridge"'),
              "WWW-Authenticate of %s" % path, h)
        st, _, _ = http("GET", ST.url + path, headers=basic(USER, "wrong"))
        eq(st, 401, "GET %s with a wrong password" % path)
        st, _, _ = http("GET", ST.url + path, headers=basic("nobody", PASSWORD))
        eq(st, 401, "GET %s with an unknown user" % path)
    for path in ("/-/healthy", "/-/ready"):
        st, _, _ = http("GET", ST.url + path)
        eq(st, 200, "GET %s stays open" % path)
    st, h, body = http("GET", ST.url + "/", headers=AUTH)
    eq(st, 200, "GET / with the user")
    eq(h.get("content-security-policy"), "default-src 'none'; style-src 'unsafe-inline'; "
       "form-action 'self'; frame-ancestors 'none'", "the page's Content-Security-Policy")
    eq(h.get("cache-control"), "no-store", "the page's Cache-Control")
    st, _, body = http("GET", ST.url + "/metrics", headers=AUTH)
    eq(st, 200, "GET /metrics with the user")
    check("alertbridge_http_requests_total" in body, "metrics served", body[:300])
    # bcrypt (cost 10) once, then the cache: the time of a scrape with the same credentials.
    times = []
    for user, pw in ((USER, "wrong"), (USER, PASSWORD), (USER, PASSWORD), (USER, PASSWORD)):
        t = time.monotonic()
        http("GET", ST.url + "/metrics", headers=basic(user, pw))
        times.append((time.monotonic() - t) * 1000)
    event("GET /metrics: wrong password %.1f ms (bcrypt), right one %.1f, %.1f, %.1f ms "
          "(cached)" % tuple(times))
    check(times[0] > times[2] + 10, "a bcrypt check costs more than a cached one", times)


@run.case
def screenshot_phone():
    out = os.path.join(ST.dir, "status-page.png")
    url = "http://%s:%s@127.0.0.1:%d/" % (USER, PASSWORD.replace(" ", "%20"), ST.port)
    ST.chromium(["--screenshot=" + out, "--window-size=412,1720", url], "--screenshot")
    with open(out, "rb") as f:
        png = f.read()
    eq(png[:8], b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
    event("screenshot %s: %d bytes" % (out, len(png)))
    dest = os.environ.get("STATUS_PAGE_SCREENSHOT")
    if dest:
        shutil.copyfile(out, dest)
        event("screenshot copied to %s" % dest)


@run.case
def page_content_in_chromium():
    text, root = ST.dom()
    eq(root.find("script"), [], "script elements on the page")
    metas = {m.attrs.get("name"): m.attrs.get("content") for m in root.find("meta")}
    check("width=device-width" in (metas.get("viewport") or ""), "viewport meta", metas)
    issues = {i["title"]: i for i in ST.gh.issues(REPO)}
    for a, state in ((DISK, "firing"), (CRASH, "firing"), (TARGET, "resolved")):
        name = a["labels"]["alertname"]
        c = card_of(root, name)
        check(state in c.cls(), "%s's card is %s" % (name, state), c.cls())
        links = c.find("a", "title")
        eq(len(links), 1, "issue links on %s's card" % name)
        gi = issues.get(links[0].text())
        check(gi is not None, "the link text is the issue's title", links[0].text())
        eq(links[0].attrs.get("href"), "%s/%s/issues/%d" % (ST.gh.url, REPO, gi["number"]),
           "%s's issue link" % name)
        meta = " ".join(m.text() for m in c.find(cls="meta"))
        check("oncall" in meta and "Since" in meta and "Last event: %s" % a["status"] in meta
              or "Last event: resolved" in meta, "%s's receiver, since, last event" % name, meta)
    dead = [c for c in root.find("article", "deadletter") if "CertificateExpiry" in c.text()]
    eq(len(dead), 1, "the dead letter's card")
    reason = " ".join(n.text() for n in dead[0].find(cls="reason"))
    check("repository %s not found or no access" % MISSING_REPO in reason, "dead letter reason",
          reason)
    eq([n.text() for n in dead[0].find("code", "retry")],
       ["alertbridge map retry %s --receiver=platform" % GONE["fingerprint"]],
       "the retry command")
    pods = root.find("article", "pod")
    eq(len(pods), 1, "janitor pod cards")
    pt = pods[0].text()
    for want in ("ml/trainer-0", "alice@example.com", GPU, "janitor/expires", "Notice: delivered"):
        check(want in pt, "%r on the pod's card" % want, pt)
    check(re.search(r"janitor/expires \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in \d+h\d+m\)", pt),
          "expires with a countdown", pt)
    tiles = " | ".join(t.text() for t in root.find(cls="tile"))
    for want in ("alerts firing", "dead letters", "GitHub queue", "GitHub API calls left",
                 "writes left / minute", "writes left / hour", "janitor queue"):
        check(want in tiles, "tile %r" % want, tiles)


@run.case
def filters_in_chromium():
    _, root = ST.dom("?state=firing")
    names = sorted(n.text() for c in root.find("article", "alert") for n in c.find(cls="name"))
    eq(names, ["KubePodCrashLooping", "NodeFilesystemAlmostOutOfSpace"], "?state=firing")
    eq(root.find("article", "deadletter") + root.find("article", "pod"), [],
       "no dead letter or pod under ?state=firing")
    _, root = ST.dom("?receiver=platform")
    eq(root.find("article", "alert"), [], "alerts of receiver platform")
    eq(len(root.find("article", "deadletter")), 1, "dead letters of receiver platform")
    _, root = ST.dom("?alertname=filesystem")
    names = [n.text() for c in root.find("article", "alert") for n in c.find(cls="name")]
    eq(names, ["NodeFilesystemAlmostOutOfSpace"], "?alertname=filesystem")
    _, root = ST.dom("?state=dead-lettered&receiver=oncall")
    eq(root.find("article", "alert") + root.find("article", "deadletter"), [],
       "nothing dead-lettered for oncall")
    sel = [o for o in root.find("option") if "selected" in o.attrs]
    eq(sorted(o.text() for o in sel), ["dead-lettered", "oncall"], "the form keeps the filters")


@run.case
def hostile_label_is_text():
    ST.post("oncall", [HOSTILE])
    poll(lambda: any(HOSTILE_NAME in i["title"] for i in ST.gh.issues(REPO)),
         "the hostile alert's issue", timeout_s=30)
    text, root = ST.dom("?alertname=" + "%3Cscript%3E")
    c = card_of(root, HOSTILE_NAME)
    title = c.find("a", "title")[0].text()
    check(HOSTILE_NAME in title and HOSTILE_SUMMARY in title, "the title shown as text", title)
    eq(root.find("script"), [], "script elements")
    eq(root.find("img"), [], "img elements")
    eq([n.tag for n in root.walk() if any(k.startswith("on") for k in n.attrs)], [],
       "elements with event handler attributes")
    check("&lt;script&gt;alert(1)&lt;/script&gt;" in text, "the alertname escaped in the DOM")
    inp = [i for i in root.find("input") if i.attrs.get("name") == "alertname"]
    eq(inp[0].attrs.get("value"), "<script>", "the alertname filter echoed as a value")


CHROMIUM_CASES = ("screenshot_phone", "page_content_in_chromium", "filters_in_chromium",
                  "hostile_label_is_text")


def main():
    only = None
    if not CHROMIUM:
        only = [fn.__name__ for fn in run.cases if fn.__name__ not in CHROMIUM_CASES]
        for name in CHROMIUM_CASES:
            print("skip %s: chromium not found (Debian package chromium; `sh deploy/deps.sh "
                  "test` installs it, or set CHROMIUM=/path/to/chromium)" % name)

    def stop():
        if ST:
            ST.stop()
    run.run(on_failure=lambda name: ST and ST.post_mortem(), only=only, after=stop)


if __name__ == "__main__":
    main()
