#!/usr/bin/env python3
# run.sh: weight 2
"""test_public_listener.py - the endpoints the internet must reach on a listener of their own
(issue 21, section 3: exposure).

GitHub's webhook (POST /v1/github/webhook) and Slack's interactions (POST
/v1/slack/interactions) must be reachable from the internet while the Alertmanager webhook,
the page, /metrics and the admin endpoints stay inside.  Without web.public_listen_address
everything is on the main listener.  With it (or with the flag --web.public-listen-address)
the public endpoints move there alone: the public port answers 404 for everything else
(/v1/webhook, /metrics, /, /-/healthy, /-/reload), and the main port answers 404 for them.
The public port reads at most GH_WEBHOOK_MAX_BODY (1 MiB) of a body: a larger one is answered
413 and counted as refused, too_large; on the main port (16 MiB) the endpoint itself answers
413.  A public address equal to listen_address is a config error.  The GitHub webhook's
secret is set, so its 404 is the routing's and not the endpoint's "disabled"; the Slack
endpoint is off here (no janitor), so whether it was reached is told by its "disabled"
counter.  Without the secret the GitHub endpoint answers 404 too, counted as disabled.

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub, send_webhook  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, eq, free_port, http,  # noqa: E402
                     print_tail, webhook_payload)

REPO = "acme/public"
GH_TOKEN = "ghs_publicToken0123456789"
SECRET = "It's a Secret to Everybody"

ALERTS = webhook_payload("bridge", [{
    "fingerprint": "5d3b1d5c2f1e0a99", "status": "firing",
    "labels": {"alertname": "PublicTest", "severity": "info"},
    "startsAt": "2026-11-27T10:00:00Z"}])

run = Runner()
st = {}


def ping(base):
    status, body, _ = send_webhook(base + "/v1/github/webhook", SECRET, "ping",
                                   {"zen": "Keep it logically awesome.", "hook_id": 1})
    return status, body


def status_of(method, url, **kw):
    return http(method, url, **kw)[0]


def inside_routes(base):
    """The status of each inside endpoint at base (the Alertmanager webhook with its token)."""
    ab = st["ab"]
    return {
        "/v1/webhook": http("POST", base + "/v1/webhook?receiver=bridge", ALERTS,
                            headers={"Authorization": "Bearer " + ab.hook_token})[0],
        "/metrics": status_of("GET", base + "/metrics"),
        "/": status_of("GET", base + "/"),
        "/-/healthy": status_of("GET", base + "/-/healthy"),
        "/-/reload": status_of("POST", base + "/-/reload"),
    }


def start(public=None, flags=()):
    """(Re)start alertbridge with web.public_listen_address = public (None: not set)."""
    if "ab" in st:
        st["ab"].stop()
    extra = "  webhook_secret_file: gh-secret\n"
    if public:
        extra += "web:\n  public_listen_address: %s\n" % public
    ab = st["ab"] = Alertbridge(st["dir"], st["fg"].url, GH_TOKEN, REPO, extra_github=extra)
    ab.start(flags=flags)
    return ab


def slack_reached(base, url):
    """POST url (an unsigned interaction); whether the Slack endpoint's handler ran (its
    refused/disabled counter at base rose), and the status."""
    name = "alertbridge_slack_interactions_total"
    before = metric(base, name, outcome="refused", reason="disabled")
    status = http("POST", url, raw=b"payload=%7B%7D",
                  headers={"Content-Type": "application/x-www-form-urlencoded"})[0]
    return metric(base, name, outcome="refused", reason="disabled") - before == 1.0, status


def too_large(base):
    return metric(base, "alertbridge_github_webhook_requests_total", outcome="refused",
                  reason="too_large")


def big_post(url, n):
    return status_of("POST", url + "/v1/github/webhook", raw=b"x" * n,
                     headers={"Content-Type": "application/json", "X-GitHub-Event": "ping",
                              "X-GitHub-Delivery": "d-1",
                              "X-Hub-Signature-256": "sha256=" + "0" * 64})


def metric(base, name, **labels):
    text = http("GET", base + "/metrics")[2]
    for line in text.splitlines():
        if line.startswith(name + "{") and all(('%s="%s"' % kv) in line
                                               for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@run.case
def without_a_public_address_all_on_the_main_listener():
    st["dir"] = tempfile.mkdtemp(prefix="ab-public-")
    st["fg"] = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    with open(os.path.join(st["dir"], "gh-secret"), "w") as f:
        f.write(SECRET + "\n")
    ab = start()
    eq(ping(ab.url), (200, {"status": "ping"}), "the GitHub webhook on the main port")
    routes = inside_routes(ab.url)
    eq(routes["/v1/webhook"], 200, "the Alertmanager webhook")
    eq(routes["/metrics"], 200, "/metrics")
    eq(slack_reached(ab.url, ab.url + "/v1/slack/interactions"), (True, 404),
       "the Slack endpoint on the main port (off: no janitor)")
    before = too_large(ab.url)
    eq(big_post(ab.url, (1 << 20) + 1), 413, "a body over 1 MiB on the main port")
    eq(too_large(ab.url) - before, 1.0, "counted as refused, too_large")


@run.case
def with_a_public_address_github_moves_there_alone():
    port = st["public_port"] = free_port()
    ab = start("127.0.0.1:%d" % port)
    public = "http://127.0.0.1:%d" % port
    eq(ping(public), (200, {"status": "ping"}), "the GitHub webhook on the public port")
    eq(ping(ab.url)[0], 404, "the GitHub webhook on the main port")
    eq(slack_reached(ab.url, public + "/v1/slack/interactions"), (True, 404),
       "the Slack endpoint reached on the public port")
    eq(slack_reached(ab.url, ab.url + "/v1/slack/interactions"), (False, 404),
       "the Slack endpoint not routed on the main port")
    eq(inside_routes(public), {"/v1/webhook": 404, "/metrics": 404, "/": 404,
                               "/-/healthy": 404, "/-/reload": 404},
       "the inside endpoints on the public port")
    routes = inside_routes(ab.url)
    eq((routes["/v1/webhook"], routes["/metrics"], routes["/-/healthy"]), (200, 200, 200),
       "the inside endpoints on the main port")
    check("public_port=%d" % port in ab.tail(200), "the start line names the public port",
          ab.tail(20))
    # An unsigned request to the public port is refused by the endpoint, as on the main one.
    status, body, _ = send_webhook(public + "/v1/github/webhook", None, "ping", {"zen": "x"})
    eq((status, body), (401, {"error": "unauthorized"}), "unsigned on the public port")


@run.case
def public_port_reads_at_most_a_mebibyte():
    base = st["ab"].url
    public = "http://127.0.0.1:%d" % st["public_port"]
    before = too_large(base)
    eq(big_post(public, (1 << 20) + 1), 413, "a body over 1 MiB")
    eq(too_large(base) - before, 1.0, "counted as refused, too_large")
    eq(ping(public), (200, {"status": "ping"}), "a body of 1 MiB or less still answered")


@run.case
def the_flag_sets_the_public_address():
    port = free_port()
    ab = start(flags=("--web.public-listen-address=127.0.0.1:%d" % port,))
    eq(ping("http://127.0.0.1:%d" % port), (200, {"status": "ping"}), "on the flag's port")
    eq(ping(ab.url)[0], 404, "no longer on the main port")
    eq(status_of("GET", "http://127.0.0.1:%d/metrics" % port), 404, "/metrics not public")


@run.case
def without_the_secret_the_github_endpoint_is_off():
    port = free_port()
    ab = st["ab"]
    ab.stop()
    ab = st["ab"] = Alertbridge(st["dir"], st["fg"].url, GH_TOKEN, REPO,
                                extra_github="web:\n  public_listen_address: 127.0.0.1:%d\n" % port)
    ab.start()
    eq(ping("http://127.0.0.1:%d" % port), (404, {"error": "not found"}), "no secret: 404")
    eq(metric(ab.url, "alertbridge_github_webhook_requests_total", outcome="refused",
              reason="disabled"), 1.0, "counted as disabled")


@run.case
def the_same_address_twice_is_a_config_error():
    ab = st["ab"]
    ab.stop()
    main = "127.0.0.1:%d" % ab.port
    path = os.path.join(st["dir"], "same.yml")
    with open(ab.config) as f:
        text = f.read()
    text = text.replace("web:\n  public_listen_address: 127.0.0.1:", "web:\n  old_public: ")
    check("old_public" in text, "the last case's config has the public address", text)
    with open(path, "w") as f:
        f.write(text.replace("old_public: ", "public_listen_address: %s  # " % main))
    out = subprocess.run([ALERTBRIDGE, "check-config", path], capture_output=True, text=True,
                         timeout=20, cwd=st["dir"])
    eq(out.returncode, 1, "check-config exit code")
    check("web.public_listen_address: must differ from listen_address" in out.stderr + out.stdout,
          "says why", out.stderr + out.stdout)


def on_failure(name):
    if "ab" in st:
        print_tail("alertbridge log", st["ab"].tail(60))


def after():
    if "ab" in st:
        st["ab"].stop()
    if "fg" in st:
        st["fg"].stop()
    if "dir" in st:
        shutil.rmtree(st["dir"], ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run.run(on_failure=on_failure, after=after))
