#!/usr/bin/env python3
# run.sh: weight 3
"""test_silence.py - silences from the GitHub issue (issue 21, section 1).

A real Alertmanager (its API v2) posts an alert to the real binary, which opens its issue on the
fake GitHub; the fake then delivers signed issue_comment events to POST /v1/github/webhook as
GitHub does (X-GitHub-Event, X-GitHub-Delivery, X-Hub-Signature-256, User-Agent
GitHub-Hookshot/...).  `/silence 2h rollout` by a MEMBER makes one silence in Alertmanager whose
matchers are the alert's labels, createdBy the login, the comment the reason and the issue's URL,
and Alertmanager then shows the alert suppressed by it; alertbridge answers on the issue with
the link {externalURL}/#/silences/{id}.  `/unsilence` expires it and says so.  Bad input changes
nothing: no or a bad signature (401), a replayed delivery (200 duplicate; under a new delivery
ID: accepted, and the worker does nothing for a comment already acted on), an untracked issue
(200 untracked), a CONTRIBUTOR (200 not_allowed, no reply), an unknown command or a bad
duration (a short reply).  A reload re-reads the secret file.  Through a proxy in front of the
real Alertmanager: a POST whose answer is lost (502 after Alertmanager made it) makes no second
silence (the retry finds it by its comment marker), and a 400 is dead-lettered with its reason,
answered on the issue, and listed by `map list` and on the alert's card.

Env: ALERTBRIDGE_BIN (default ./alertbridge), ALERTMANAGER_BIN.  Last line "N passed, N failed".
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_base import LocalServer, QuietHandler  # noqa: E402
from fake_github import FakeGitHub, send_webhook  # noqa: E402
from harness import (ALERTBRIDGE, ALERTMANAGER, Alertbridge, Alertmanager, Runner,  # noqa: E402
                     db_rows, eq, check,
                     event, http, iso_ms, poll, print_tail)

REPO = "acme/silences"
GH_TOKEN = "ghs_silenceToken0123456789"
SECRET = "It's a Secret to Everybody"
LABELS = {"alertname": "GPUHot", "namespace": "ml", "pod": "trainer-0", "severity": "page"}

run = Runner()
st = {}


class AmProxy(LocalServer):
    """Forwards every request to the real Alertmanager, except that the next POST
    /api/v2/silences can be made to fail: "lose" forwards it and answers 502 instead of
    Alertmanager's answer (the silence exists, the caller cannot know: an ambiguous answer);
    "refuse" answers 400 as Alertmanager does for a silence it rejects, without forwarding."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.next_post = []
        self.posts = 0
        proxy = self

        class Handler(QuietHandler):
            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n > 0 else None
                mode = None
                if self.command == "POST" and self.path == "/api/v2/silences":
                    proxy.posts += 1
                    mode = proxy.next_post.pop(0) if proxy.next_post else None
                if mode == "refuse":
                    st, body = 400, '"silence invalid: refused by the test"'
                else:
                    hdrs = {"Content-Type": "application/json"} if raw else {}
                    st, _, parsed = http(self.command, proxy.upstream + self.path, raw=raw,
                                         headers=hdrs)
                    body = parsed if isinstance(parsed, str) else json.dumps(parsed)
                    if mode == "lose":
                        st, body = 502, "bad gateway"
                data = (body or "").encode()
                self.send_response(st)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = forward

        self._serve(Handler)


def hook(event_name, payload, **kw):
    return send_webhook(st["ab"].url + "/v1/github/webhook", kw.pop("secret", SECRET),
                        event_name, payload, **kw)


def am_silences():
    status, _, body = http("GET", st["am"].url + "/api/v2/silences")
    eq(status, 200, "GET /api/v2/silences")
    return body


def silence_events():
    return db_rows(st["ab"].db, "SELECT count(*) FROM events WHERE kind = 'silence'")[0][0]


def replies():
    return [c for c in st["fg"].comments(REPO, st["number"])
            if c["user"]["login"] == "alertbridge-bot"]


def metric(name, **labels):
    _, _, text = http("GET", st["ab"].url + "/metrics")
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(name + "{") and all(('%s="%s"' % kv) in line for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0 if want is not None else None


@run.case
def setup_issue_from_a_real_alertmanager():
    st["dir"] = tempfile.mkdtemp(prefix="ab-silence-")
    fg = st["fg"] = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    with open(os.path.join(st["dir"], "gh-secret"), "w") as f:
        f.write(SECRET + "\n")
    ab = st["ab"] = Alertbridge(st["dir"], fg.url, GH_TOKEN, REPO,
                                extra_github="  webhook_secret_file: gh-secret\n")
    am = st["am"] = Alertmanager(st["dir"], ab.url + "/v1/webhook?receiver=bridge", ab.hook_file)
    # The top-level alertmanager section, after github: (the harness writes github: last).
    args = list(ab._config_args)
    proxy = st["proxy"] = AmProxy(am.url)
    args[3] += "alertmanager:\n  url: %s\n  max_silence: 1d\n" % proxy.url
    ab._config_args = tuple(args)
    ab.write_receivers("  - name: bridge\n    repo: %s\n" % REPO)
    am.start()
    ab.start(flags=["--test.second-ms=50"])
    now = time.time()
    am.post([{"labels": LABELS, "annotations": {"summary": "GPU hot"},
              "startsAt": iso_ms(now - 5), "endsAt": iso_ms(now + 3600)}])
    issues = poll(lambda: fg.issues(REPO), "the alert's issue", timeout_s=30)
    st["number"] = issues[0]["number"]
    event("issue #%d: %s" % (st["number"], issues[0]["title"]))


@run.case
def ping_and_unsigned_or_badly_signed_deliveries():
    status, body, _ = hook("ping", {"zen": "Design for failure.", "hook_id": 1})
    eq((status, body), (200, {"status": "ping"}), "ping")
    payload = st["fg"].human_comment(REPO, st["number"], "octocat", "/silence 2h x", "MEMBER")
    status, body, _ = hook("issue_comment", payload, secret=None)
    eq((status, body), (401, {"error": "unauthorized"}), "no signature")
    status, body, _ = hook("issue_comment", payload, secret="not the secret")
    eq((status, body), (401, {"error": "unauthorized"}), "signed with another secret")
    # Signed for another body: the raw body is what is verified.
    status, body, _ = hook("issue_comment", payload,
                           signature="sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
    eq(status, 401, "the docs' signature of another body")
    eq(silence_events(), 0, "nothing queued")
    eq(am_silences(), [], "no silence")
    eq(metric("alertbridge_github_webhook_requests_total", outcome="refused",
              reason="bad_signature"), 2.0, "bad_signature counted")
    eq(metric("alertbridge_github_webhook_requests_total", outcome="refused",
              reason="no_signature"), 1.0, "no_signature counted")


@run.case
def non_member_and_untracked_issue_change_nothing():
    payload = st["fg"].human_comment(REPO, st["number"], "drive-by", "/silence 7d", "CONTRIBUTOR")
    status, body, _ = hook("issue_comment", payload)
    eq((status, body), (200, {"status": "not_allowed"}), "a CONTRIBUTOR")
    other = st["fg"].human_comment(REPO, st["number"], "octocat", "/silence 1h", "OWNER")
    other["issue"]["number"] = 999
    status, body, _ = hook("issue_comment", other)
    eq((status, body), (200, {"status": "untracked"}), "an issue alertbridge does not track")
    status, body, _ = hook("issue_comment", {"action": "created"})
    eq((status, body), (400, {"error": "not an issue_comment payload"}), "a signed non-payload")
    eq(silence_events(), 0, "nothing queued")
    time.sleep(0.5)
    eq(am_silences(), [], "no silence")
    eq(replies(), [], "no reply")


@run.case
def silence_made_once_and_answered():
    payload = st["fg"].human_comment(REPO, st["number"], "octocat",
                                     "/silence 2h rollout in progress\nmore words", "MEMBER")
    status, body, delivery = hook("issue_comment", payload)
    eq((status, body), (202, {"status": "queued"}), "queued")
    status, body, _ = hook("issue_comment", payload, delivery=delivery)
    eq((status, body), (200, {"status": "duplicate"}), "the same delivery again")
    sil = poll(lambda: [s for s in am_silences() if s["status"]["state"] == "active"],
               "the silence in Alertmanager", timeout_s=30)
    eq(len(sil), 1, "one silence")
    s = sil[0]
    eq(s["createdBy"], "octocat", "createdBy")
    eq(sorted((m["name"], m["value"], m["isRegex"], m.get("isEqual", True))
              for m in s["matchers"]),
       sorted((k, v, False, True) for k, v in LABELS.items()), "matchers = the alert's labels")
    check(s["comment"].startswith("rollout in progress https://github.com/%s/issues/%d"
                                  % (REPO, st["number"])), "comment", s["comment"])
    st["silence_id"] = s["id"]
    st["silence_payload"] = payload
    reply = poll(replies, "alertbridge's answer on the issue", timeout_s=30)
    eq(len(reply), 1, "one reply")
    text = reply[0]["body"]
    event("reply: %r" % text)
    check("@octocat silenced" in text and "until" in text and "rollout in progress" in text,
          "who, what, until, why", text)
    check("/#/silences/%s" % s["id"] in text, "the link to the silence", text)
    check("<!-- alertbridge:" in text, "the marker", text)
    # Alertmanager now shows the alert suppressed by it (its repeats stop).
    alerts = poll(lambda: [a for a in http("GET", st["am"].url + "/api/v2/alerts")[2]
                           if a["status"]["state"] == "suppressed"], "the alert silenced",
                  timeout_s=30)
    eq(alerts[0]["status"]["silencedBy"], [s["id"]], "silencedBy")
    amtool = shutil.which("amtool")
    if amtool:
        out = subprocess.run([amtool, "silence", "query", "--alertmanager.url=" + st["am"].url],
                             capture_output=True, text=True, timeout=20).stdout
        event("amtool silence query:\n" + out)
        check(s["id"] in out, "amtool lists it", out)
    # alertbridge's own reply, delivered to it, is no command.
    own = dict(payload, comment=dict(payload["comment"], body=text, id=payload["comment"]["id"] + 1))
    status, body, _ = hook("issue_comment", own)
    eq((status, body), (200, {"status": "own_comment"}), "its own reply")
    eq(metric("alertbridge_silences_total", outcome="created"), 1.0, "created counted")


@run.case
def replayed_body_under_a_new_delivery_id_does_nothing():
    """The signature covers the body, not X-GitHub-Delivery: a captured delivery sent again
    with a fresh delivery ID passes the webhook's checks, but its comment was acted on
    already, so the worker makes no second silence and no second reply."""
    n = len(replies())
    done = db_rows(st["ab"].db, "SELECT count(*) FROM events WHERE kind = 'silence' AND "
                   "state = 'done'")[0][0]
    payload = st["silence_payload"]
    status, body, _ = hook("issue_comment", payload)
    eq(status, 202, "accepted by the webhook (a new delivery ID)")
    poll(lambda: db_rows(st["ab"].db, "SELECT count(*) FROM events WHERE kind = 'silence' "
                         "AND state = 'done'")[0][0] > done, "the command handled",
         timeout_s=30)
    time.sleep(0.3)
    eq([s["id"] for s in am_silences() if s["status"]["state"] == "active"],
       [st["silence_id"]], "no second silence")
    eq(len(replies()), n, "no second reply")


def octocat_queued(text, association):
    """octocat comments text on the issue (as association); the delivery is queued (202)."""
    payload = st["fg"].human_comment(REPO, st["number"], "octocat", text, association)
    status, body, _ = hook("issue_comment", payload)
    eq((status, body), (202, {"status": "queued"}), "queued")


def reply_saying(text):
    """The replies on the issue that hold text, once there is one (30 s at most)."""
    return poll(lambda: [c for c in replies() if text in c["body"]], "the reply", timeout_s=30)


def refused_command(text, association, reply_has, reply_says, what):
    """octocat's command text (as association) is refused: a reply that holds reply_has and
    reply_says (what: how the check reads), and no new silence."""
    octocat_queued(text, association)
    r = reply_saying(reply_has)
    check(reply_says in r[0]["body"], what, r[0]["body"])
    eq(len([s for s in am_silences() if s["status"]["state"] == "active"]), 1, "no new silence")


@run.case
def unknown_command_gets_a_short_reply():
    refused_command("/ack", "COLLABORATOR", "unknown command", "`/ack`", "names the command")


@run.case
def bad_duration_says_why():
    refused_command("/silence soon", "MEMBER", "is not a duration", '"soon" is not a duration',
                    "says why")


@run.case
def unsilence_expires_it():
    octocat_queued("/unsilence", "OWNER")
    poll(lambda: [s for s in am_silences() if s["id"] == st["silence_id"]
                  and s["status"]["state"] == "expired"], "the silence expired", timeout_s=30)
    r = reply_saying("expired")
    event("reply: %r" % r[0]["body"])
    check(st["silence_id"] in r[0]["body"], "names the silence", r[0]["body"])
    eq(metric("alertbridge_silences_total", outcome="expired"), 1.0, "expired counted")
    eq(len(replies()), 4, "one reply per command (none for the replay)")


@run.case
def lost_answer_makes_no_second_silence():
    st["proxy"].next_post = ["lose"]
    posts = st["proxy"].posts
    payload = st["fg"].human_comment(REPO, st["number"], "octocat", "/silence 30m again",
                                     "MEMBER")
    eq(hook("issue_comment", payload)[0], 202, "queued")
    r = reply_saying("(30m): again")
    active = [s for s in am_silences() if s["status"]["state"] == "active"]
    eq(len(active), 1, "one silence, though its answer was lost")
    check("/#/silences/%s" % active[0]["id"] in r[0]["body"], "the reply links it", r[0]["body"])
    eq(st["proxy"].posts - posts, 1, "one POST: the retry looked it up first")
    st["again_id"] = active[0]["id"]


@run.case
def refused_silence_is_dead_lettered():
    st["proxy"].next_post = ["refuse"]
    n = len(replies())
    payload = st["fg"].human_comment(REPO, st["number"], "octocat", "/silence 1h", "MEMBER")
    eq(hook("issue_comment", payload)[0], 202, "queued")
    rows = poll(lambda: db_rows(st["ab"].db, "SELECT last_error FROM events WHERE "
                                "kind = 'silence' AND state = 'dead'"), "the dead letter",
                timeout_s=30)
    check("alertmanager refused the silence" in rows[0][0] and "400" in rows[0][0],
          "the reason", rows[0][0])
    eq(metric("alertbridge_silences_total", outcome="failed"), 1.0, "failed counted")
    eq([s["id"] for s in am_silences() if s["status"]["state"] == "active"], [st["again_id"]],
       "no new silence")
    # The issue is told that it failed, why, and how to send it again.
    r = poll(lambda: replies()[n:], "the reply saying it failed", timeout_s=30)
    eq(len(r), 1, "one reply")
    event("reply: %r" % r[0]["body"])
    check("@octocat: no silence: alertmanager refused the silence" in r[0]["body"]
          and "refused by the test" in r[0]["body"] and "alertbridge map retry" in r[0]["body"],
          "says it failed, why, and how to retry", r[0]["body"])
    # Where an operator looks at dead letters: `map list` and the alert's card.
    key = db_rows(st["ab"].db, "SELECT key FROM issues")[0][0]
    out = subprocess.run([ALERTBRIDGE, "map", "list", "--database.path=" + st["ab"].db],
                         capture_output=True, text=True, timeout=20)
    event("map list:\n" + out.stdout)
    eq(out.returncode, 0, "map list exit status")
    lines = [l for l in out.stdout.splitlines() if " silence by octocat " in l]
    eq(len(lines), 1, "map list: one refused silence")
    check(key in lines[0] and "%s#%d" % (REPO, st["number"]) in lines[0]
          and "dead: alertmanager refused the silence" in lines[0], "map list's line", lines[0])
    status, _, page = http("GET", st["ab"].url + "/")
    eq(status, 200, "the status page")
    check("Silence refused (dead letter): alertmanager refused the silence" in page
          and "refused by the test" in page, "the alert's card shows it", page[-3000:])


@run.case
def secret_reread_on_reload():
    with open(os.path.join(st["dir"], "gh-secret"), "w") as f:
        f.write("a rotated secret\n")
    st["ab"].proc.p.send_signal(signal.SIGHUP)
    poll(lambda: hook("ping", {"zen": "x"}, secret="a rotated secret")[0] == 200,
         "the new secret taken", timeout_s=20)
    status, body, _ = hook("ping", {"zen": "x"})
    eq((status, body), (401, {"error": "unauthorized"}), "the old secret refused")


def on_failure(name):
    if "ab" in st:
        print_tail("alertbridge log", st["ab"].tail(80))


def after():
    for k in ("ab", "am", "proxy"):
        if k in st:
            st[k].stop()
    if "fg" in st:
        st["fg"].stop()
    if "dir" in st:
        shutil.rmtree(st["dir"], ignore_errors=True)


if __name__ == "__main__":
    if not os.path.exists(ALERTMANAGER):
        print("skipped: no %s\n0 passed, 0 failed" % ALERTMANAGER)
        sys.exit(0)
    sys.exit(run.run(on_failure=on_failure, after=after))
