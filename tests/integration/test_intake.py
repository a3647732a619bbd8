#!/usr/bin/env python3
# run.sh: weight 3
"""test_intake.py - what a new user met on the running service, against the real binary and the
fake GitHub on 127.0.0.1:

- one bad alert no longer loses its group (issue 4): a webhook of 3 alerts, one with an invalid
  alertbridge_repo label and one with a 70 KiB annotation, is answered 200; the good alert gets
  its issue, `alertbridge map list` and the status page show the two dead letters with their
  reasons, the metrics count them, and what was stored before is intact;
- a body over webhook.max_body_bytes sent with Content-Length is answered 413, which the client
  sees (20 tries with Python's urllib, none a connection reset), and each 413 is logged (issue 9);
- SIGHUP neither kills nor stops the service: it reloads the config and keeps answering; a
  broken file is logged and the running config stays (issue 8; test_reload.py covers reload).

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Prints a timeline and, last, "N passed, N failed".
"""

import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, eq, event, http,  # noqa: E402
                     iso_ms, poll)
from harness import metric_sample, stop_state, tail_on_failure  # noqa: E402

REPO = "acme/intake"
GH_TOKEN = "ghs_intakeToken0123456789"
MAX_BODY = 1 << 20  # webhook.max_body_bytes, set in start() (the default is 16 MiB)
run = Runner()
S = {}


def alert(name, fp, **over):
    a = {"status": "firing", "fingerprint": fp,
         "labels": {"alertname": name, "pod": "p-" + name.lower()},
         "annotations": {"summary": "%s fires" % name},
         "startsAt": iso_ms(time.time() - 60), "endsAt": "0001-01-01T00:00:00Z",
         "generatorURL": "http://prometheus.example:9090/graph"}
    a.update(over)
    return a


def payload(alerts):
    return {"version": "4", "status": "firing", "receiver": "bridge",
            "groupKey": "{}:{alertname=\"Intake\"}", "truncatedAlerts": 0,
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://am.example:9093", "alerts": alerts}


def db_rows():
    con = sqlite3.connect("file:%s?mode=ro" % S["ab"].db, uri=True, timeout=10)
    try:
        return {"events": con.execute(
                    "SELECT id, key, status, state, last_error FROM events ORDER BY id").fetchall(),
                "issues": con.execute(
                    "SELECT receiver, key, repo, number, state, dead_reason FROM issues "
                    "ORDER BY key").fetchall()}
    finally:
        con.close()


def start():
    S["dir"] = tempfile.mkdtemp(prefix="ab-intake-")
    S["gh"] = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(S["dir"], S["gh"].url, GH_TOKEN, REPO)
    with open(ab.config) as f:
        text = f.read()
    with open(ab.config, "w") as f:
        f.write(text.replace("  bearer_token_file: webhook-token\n",
                             "  bearer_token_file: webhook-token\n"
                             "  max_body_bytes: %d\n" % MAX_BODY, 1))
    S["ab"] = ab.start()


def stop():
    stop_state(S, "ab", "gh")


@run.case
def one_bad_alert_does_not_lose_its_group():
    if not (os.path.isfile(ALERTBRIDGE) and os.access(ALERTBRIDGE, os.X_OK)):
        raise AssertionError("alertbridge binary not found: %s" % ALERTBRIDGE)
    start()
    ab, gh = S["ab"], S["gh"]
    # Something stored before: an alert with its issue.
    st, _, body = ab.post(payload([alert("Before", "00000000000000b0")]))
    eq(st, 200, "a first valid webhook")
    poll(lambda: len(gh.issues(REPO)) == 1, "the first issue", timeout_s=30)
    poll(lambda: db_rows()["issues"] and db_rows()["issues"][0][3] == 1, "its map row")
    before = db_rows()

    good = alert("Good", "00000000000000a1")
    bad_repo = alert("BadRepo", "00000000000000a2")
    bad_repo["labels"]["alertbridge_repo"] = "not a repo"
    huge = alert("Huge", "00000000000000a3")
    huge["annotations"]["description"] = "y" * (70 * 1024)
    st, _, body = ab.post(payload([bad_repo, good, huge]))
    eq(st, 200, "the webhook with two invalid alerts is acknowledged")
    eq(body, {"status": "ok", "receiver": "bridge", "alerts": 3, "invalid": 2}, "its answer")

    poll(lambda: len(gh.issues(REPO)) == 2, "the good alert's issue", timeout_s=30)
    titles = sorted(i["title"] for i in gh.issues(REPO))
    check(any("Good" in t for t in titles) and not any("Huge" in t or "BadRepo" in t
                                                          for t in titles),
          "issues for Before and Good only", titles)

    rc = subprocess.run([ALERTBRIDGE, "map", "list", "--database.path=" + ab.db],
                        capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    eq(rc.returncode, 0, "map list exit code")
    out = rc.stdout
    event("map list:\n" + out.rstrip())
    want = [("00000000000000a2", "invalid alert: alerts[0].labels.alertbridge_repo: "),
            ("00000000000000a3", "invalid alert: alerts[2].annotations.description: "
                                 "longer than 65536 bytes")]
    for key, reason in want:
        line = [ln for ln in out.splitlines() if key in ln]
        # "receiver key - (no issue) status startsAt dead: reason" (cmd/map.c)
        check(len(line) == 1 and re.search(r"\(no issue\) \S+ \S+ dead: ", line[0]) and
              "dead: " + reason in line[0],
              "map list shows %s dead with its reason" % key, out)
    check(re.search(r"^bridge\s+00000000000000a1\s+%s#2 open" % re.escape(REPO), out, re.M),
          "map list shows the good alert's issue", out)

    st, _, page = http("GET", ab.url + "/")
    check(st == 200 and "00000000000000a3" in page and "longer than 65536 bytes" in page,
          "the status page lists the dead letters", page[-800:] if isinstance(page, str) else page)

    def counted():
        _, _, text = http("GET", ab.url + "/metrics")
        return (metric_sample(text, "alertbridge_webhook_alerts_invalid_total",
                       'receiver="bridge",reason="alertbridge_repo"') == 1 and
                metric_sample(text, "alertbridge_webhook_alerts_invalid_total",
                       'receiver="bridge",reason="annotations"') == 1 and
                re.search(r"^alertbridge_dead_letter_events 2$", text, re.M))
    poll(counted, "the invalid alerts counted, 2 dead letters", timeout_s=30)

    after = db_rows()
    eq([r for r in after["issues"] if r[1] == "00000000000000b0"], before["issues"],
       "the earlier map row is intact")
    eq(after["events"][:len(before["events"])], before["events"], "earlier events intact")
    dead = [e for e in after["events"] if e[3] == "dead"]
    eq(sorted(e[1] for e in dead), ["00000000000000a2", "00000000000000a3"], "dead events")
    check(all(e[3] == "done" for e in after["events"] if e[3] != "dead"),
          "every other event done", after["events"])
    check(ab.alive(), "alertbridge still running")


def urlopen_status(url, data, headers):
    """POST with urllib as a user would; the HTTP status, or the exception's name."""
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
    except (urllib.error.URLError, OSError) as e:
        return type(getattr(e, "reason", e)).__name__


@run.case
def body_over_the_limit_is_answered_413_not_reset():
    ab = S["ab"]
    body = b"{" + b" " * (2 * MAX_BODY - 2) + b"}"
    headers = {"Authorization": "Bearer " + ab.hook_token, "Content-Type": "application/json"}
    got = [urlopen_status(ab.url + "/v1/webhook", body, headers) for _ in range(20)]
    event("20 tries of %d bytes: %s" % (len(body), got))
    eq(got, [413] * 20, "every try sees the 413")

    def logged():
        with open(ab.log_path, encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if "body too large" in ln]
        return len(lines) >= 20 and lines
    lines = poll(logged, "20 log lines for the 413s", timeout_s=10)
    check(all("remote_addr=127.0.0.1" in ln and "path=/v1/webhook" in ln and
              "content_length=%d" % len(body) in ln and "max_body_bytes=%d" % MAX_BODY in ln
              for ln in lines), "each names remote, path and sizes", lines[:2])
    st, _, _ = http("GET", ab.url + "/-/healthy")
    eq(st, 200, "healthy after the 413s")


@run.case
def sighup_reloads_and_the_service_keeps_running():
    ab = S["ab"]
    pid = ab.proc.p.pid
    for _ in range(3):
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.2)

    def logged():
        with open(ab.log_path, encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if "config reloaded" in ln]
        return len(lines) >= 3 and lines
    lines = poll(logged, "the reload log lines", timeout_s=10)
    check(all("level=info" in ln and "trigger=SIGHUP" in ln for ln in lines),
          "each says the config was reloaded by SIGHUP", lines[0])
    # A broken file is reported with its line, and the running config stays.
    with open(ab.config, "a") as f:
        f.write("no_such_key: 1\n")
    os.kill(pid, signal.SIGHUP)
    poll(lambda: "config reload failed" in ab.tail(5) and "no_such_key: unknown key" in ab.tail(5),
         "the failed reload logged", timeout_s=10)
    check(ab.alive(), "alertbridge still running after SIGHUP", ab.tail(10))
    for path in ("/-/healthy", "/-/ready"):
        st, _, _ = http("GET", ab.url + path)
        eq(st, 200, "GET %s after SIGHUP" % path)
    st, _, _ = ab.post(payload([alert("AfterHup", "00000000000000c1")]))
    eq(st, 200, "a webhook after SIGHUP")
    poll(lambda: len(S["gh"].issues(REPO)) == 3, "its issue", timeout_s=30)
    eq(ab.stop(), 0, "SIGTERM still stops it with 0")


if __name__ == "__main__":
    sys.exit(run.run(on_failure=tail_on_failure(S), after=stop))
