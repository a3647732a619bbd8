#!/usr/bin/env python3
# run.sh: weight 4
"""test_bad_input.py - malformed webhook bodies against the real alertbridge binary (issue 4,
item 7), and malformed config files against check-config and serve.

Webhooks: one alertbridge (github.dry_run, janitor enabled in dry-run against fake_kube) gets
a valid webhook on each endpoint, then each malformed request of CASES.  A body that is not a
version-4 webhook (not JSON, the envelope's fields) must get the expected 4xx with a JSON
{"error", "field"} naming the field where there is one, and leave the tables events, issues and
notices identical (dumped with Python's sqlite3 before and after).  A problem inside one alert
(issue 4) must get 200 with "invalid": 1 and add exactly one dead-lettered event whose reason
names the field and the problem, the other alerts' events done and nothing else changed.
Every case leaves the process healthy.  At the end valid webhooks are still accepted, at the
configured webhook.max_alerts too.
Config files: each error class makes check-config and serve exit 1 with "file:line: key" on
stderr, and creates no database (nor changes an existing one).
Env: ALERTBRIDGE_BIN (default ./alertbridge), BAD_ONLY=name,name.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import copy
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_kube import FakeKube  # noqa: E402
from harness import ALERTBRIDGE  # noqa: E402
from harness import (Failure, Runner, check, eq, event, free_port, http,  # noqa: E402
                     iso_ms, poll, print_tail)
from harness import only_from_env, start_alertbridge, write_file  # noqa: E402

HOOK_TOKEN = "bad-input-webhook-secret"
KUBE_TOKEN = "bad-input-kube-token"
MAX_ALERTS = 5000   # configured webhook.max_alerts (the default is 10000)
MAX_BODY = 4 << 20
TABLES = ("events", "issues", "notices")
JSON_CT = "application/json"

run = Runner()
S = {}  # the shared stack: dir, db, url, proc, kube


# ----- payloads --------------------------------------------------------------------------------

def alert(i=0, **over):
    a = {"status": "firing",
         "labels": {"alertname": "BadInputProbe", "instance": "node-%d" % i, "severity": "info"},
         "annotations": {"summary": "probe %d" % i},
         "startsAt": iso_ms(time.time() - 60),
         "endsAt": "0001-01-01T00:00:00Z",
         "generatorURL": "http://prometheus.example:9090/graph"}
    a.update(over)
    return a


def payload(alerts=None, receiver="default", **over):
    p = {"version": "4", "groupKey": "{}:{alertname=\"BadInputProbe\"}", "truncatedAlerts": 0,
         "status": "firing", "receiver": receiver,
         "groupLabels": {"alertname": "BadInputProbe"},
         "commonLabels": {"alertname": "BadInputProbe"}, "commonAnnotations": {},
         "externalURL": "http://alertmanager.example:9093",
         "alerts": alerts if alerts is not None else [alert(0)]}
    p.update(over)
    return p


def pod_alert(i=0, **over):
    a = alert(i)
    a["labels"] = {"alertname": "JanitorIdleGPUPod", "namespace": "ml", "pod": "p%d" % i}
    a.update(over)
    return a


def jpayload(alerts=None, **over):
    return payload(alerts if alerts is not None else [pod_alert(0)], receiver="janitor", **over)


def enc(obj):
    return json.dumps(obj).encode("utf-8")


def without(d, key):
    d = copy.deepcopy(d)
    del d[key]
    return d


def with_alert0(p, **over):
    p = copy.deepcopy(p)
    p["alerts"][0].update(over)
    return p


def alert0_without(p, key):
    p = copy.deepcopy(p)
    del p["alerts"][0][key]
    return p


def label0(p, name, value, where="labels"):
    p = copy.deepcopy(p)
    p["alerts"][0][where][name] = value
    return p


VALID = enc(payload())
VALID_TEXT = VALID.decode()
LV_MARK = '"severity": "info"'  # a label value to corrupt in raw bytes
assert LV_MARK in VALID_TEXT


def raw_sub(old, new):
    """VALID with the bytes old replaced once by new."""
    b = VALID
    check(old in b, "marker in the valid body", old)
    return b.replace(old, new, 1)


# ----- the cases -------------------------------------------------------------------------------
# (name, path, body bytes, headers (None: JSON content type), status, field or None, message
# substring).  field None: no "field" member expected; "" : none either (body not JSON).
# Status 200: the alert at field is dead-lettered with a reason holding field and message.

HOOK = "/v1/webhook"
JHOOK = "/v1/janitor/webhook"
# P is the seeded payload itself (VALID), not a second payload() call: alert(0)'s startsAt is
# taken from the clock, and two calls a millisecond apart made "two"'s valid alert a new episode
# rather than the repeat the cases below rely on (it failed on a loaded machine).
P = json.loads(VALID_TEXT)
JP = jpayload()


def cases():
    big = "x" * 5000
    deep = b"[" * 100000
    many_labels = {"l%03d" % i: "v" for i in range(300)}
    many_labels["alertname"] = "BadInputProbe"
    over = payload([alert(i) for i in range(2 * MAX_ALERTS)])  # 10k alerts
    jover = jpayload([pod_alert(i) for i in range(MAX_ALERTS + 1)])
    # The valid alert beside the invalid one repeats the seeded one (nothing changes for it).
    two = payload([copy.deepcopy(P["alerts"][0]), alert(1)])
    del two["alerts"][1]["status"]
    jtwo = jpayload([copy.deepcopy(JP["alerts"][0]), pod_alert(1)])
    del jtwo["alerts"][1]["labels"]["pod"]
    c = [
        # not JSON at all, or not one object
        ("empty body", HOOK, b"", None, 400, "", "invalid JSON"),
        ("truncated JSON (half)", HOOK, VALID[:len(VALID) // 2], None, 400, "", "invalid JSON"),
        ("truncated JSON (one brace)", HOOK, b"{", None, 400, "", "invalid JSON"),
        ("truncated JSON (last brace gone)", HOOK, VALID[:-1], None, 400, "", "invalid JSON"),
        ("array body", HOOK, b"[]", None, 400, "", "must be a JSON object"),
        ("string body", HOOK, b"\"hello\"", None, 400, "", "'[' or '{' expected"),
        ("number body", HOOK, b"4", None, 400, "", "'[' or '{' expected"),
        ("null body", HOOK, b"null", None, 400, "", "'[' or '{' expected"),
        ("trailing garbage", HOOK, VALID + b" x", None, 400, "", "invalid JSON"),
        ("two objects", HOOK, VALID + VALID, None, 400, "", "invalid JSON"),
        ("byte order mark", HOOK, b"\xef\xbb\xbf" + VALID, None, 400, "", "invalid JSON"),
        ("UTF-16 body", HOOK, VALID_TEXT.encode("utf-16"), None, 400, "", "invalid JSON"),
        ("form-encoded body", HOOK, b"version=4&status=firing", None, 400, "", "invalid JSON"),
        # encodings
        ("invalid UTF-8 byte", HOOK, raw_sub(b'"info"', b'"in\xfffo"'), None, 400, "",
         "invalid JSON"),
        ("overlong UTF-8", HOOK, raw_sub(b'"info"', b'"in\xc0\xaffo"'), None, 400, "",
         "invalid JSON"),
        ("UTF-8 surrogate", HOOK, raw_sub(b'"info"', b'"in\xed\xa0\x80fo"'), None, 400, "",
         "invalid JSON"),
        ("lone surrogate escape", HOOK, raw_sub(b'"info"', b'"in\\ud800fo"'), None, 400, "",
         "invalid JSON"),
        ("raw NUL in a string", HOOK, raw_sub(b'"info"', b'"in\x00fo"'), None, 400, "",
         "invalid JSON"),
        ("raw NUL after the object", HOOK, VALID + b"\x00", None, 400, "", "invalid JSON"),
        ("raw NUL before the object", HOOK, b"\x00" + VALID, None, 400, "", "invalid JSON"),
        ("\\u0000 in a label value", HOOK, raw_sub(b'"info"', b'"in\\u0000fo"'), None, 400, "",
         "invalid JSON"),
        ("\\u0000 in a label name", HOOK, raw_sub(b'"severity"', b'"sev\\u0000erity"'), None,
         400, "", "invalid JSON"),
        ("\\u0000 in the receiver", HOOK, raw_sub(b'"default"', b'"default\\u0000x"'), None,
         400, "", "invalid JSON"),
        ("control character in a string", HOOK, raw_sub(b'"info"', b'"in\x01fo"'), None, 400,
         "", "invalid JSON"),
        # duplicates, nesting, numbers
        ("duplicate top-level key", HOOK, VALID[:-1] + b', "status": "resolved"}', None, 400,
         "", "duplicate"),
        ("duplicate label name", HOOK, raw_sub(b'"severity": "info"',
                                               b'"severity": "info", "severity": "page"'),
         None, 400, "", "duplicate"),
        ("100k nested arrays", HOOK, deep, None, 400, "", "invalid JSON"),
        ("100k nested in a label", HOOK, raw_sub(b'"info"', deep), None, 400, "",
         "invalid JSON"),
        ("number overflow", HOOK, raw_sub(b'"truncatedAlerts": 0', b'"truncatedAlerts": 1e999'),
         None, 400, "", "invalid JSON"),
        ("integer overflow", HOOK, raw_sub(b'"truncatedAlerts": 0',
                                           b'"truncatedAlerts": 99999999999999999999999'),
         None, 400, "", "invalid JSON"),
        # the group's fields
        ("version missing", HOOK, enc(without(P, "version")), None, 400, "version", "missing"),
        ("version a number", HOOK, enc(dict(P, version=4)), None, 400, "version",
         "must be a string"),
        ("wrong version", HOOK, enc(dict(P, version="3")), None, 400, "version",
         "unsupported version"),
        ("status unknown", HOOK, enc(dict(P, status="pending")), None, 400, "status",
         "\"firing\" or \"resolved\""),
        ("status missing", HOOK, enc(without(P, "status")), None, 400, "status", "missing"),
        ("receiver missing", HOOK, enc(without(P, "receiver")), None, 400, "receiver",
         "missing"),
        ("receiver empty", HOOK, enc(dict(P, receiver="")), None, 400, "receiver",
         "must not be empty"),
        ("receiver a number", HOOK, enc(dict(P, receiver=7)), None, 400, "receiver",
         "must be a string"),
        ("groupKey missing", HOOK, enc(without(P, "groupKey")), None, 400, "groupKey",
         "missing"),
        ("groupKey an object", HOOK, enc(dict(P, groupKey={})), None, 400, "groupKey",
         "must be a string"),
        ("truncatedAlerts a string", HOOK, enc(dict(P, truncatedAlerts="2")), None, 400,
         "truncatedAlerts", "must be an integer"),
        ("truncatedAlerts negative", HOOK, enc(dict(P, truncatedAlerts=-1)), None, 400,
         "truncatedAlerts", "must not be negative"),
        ("truncatedAlerts a fraction", HOOK, enc(dict(P, truncatedAlerts=1.5)), None, 400,
         "truncatedAlerts", "must be an integer"),
        ("groupLabels an array", HOOK, enc(dict(P, groupLabels=["a"])), None, 400,
         "groupLabels", "must be an object"),
        ("commonLabels value a number", HOOK, enc(dict(P, commonLabels={"x": 1})), None, 400,
         "commonLabels.x", "must be a string"),
        ("commonAnnotations null", HOOK, enc(dict(P, commonAnnotations=None)), None, 400,
         "commonAnnotations", "must be an object"),
        ("externalURL a number", HOOK, enc(dict(P, externalURL=1)), None, 400, "externalURL",
         "must be a string"),
        # the alerts
        ("alerts missing", HOOK, enc(without(P, "alerts")), None, 400, "alerts", "missing"),
        ("alerts an object", HOOK, enc(dict(P, alerts={})), None, 400, "alerts",
         "must be an array"),
        ("alerts empty", HOOK, enc(dict(P, alerts=[])), None, 400, "alerts",
         "must not be empty"),
        ("alert a string", HOOK, enc(dict(P, alerts=["x"])), None, 400, "alerts[0]",
         "must be an object"),
        ("second alert without status", HOOK, enc(two), None, 200, "alerts[1].status",
         "missing"),
        ("alert status wrong", HOOK, enc(with_alert0(P, status="active")), None, 200,
         "alerts[0].status", "\"firing\" or \"resolved\""),
        ("labels missing", HOOK, enc(alert0_without(P, "labels")), None, 200,
         "alerts[0].labels", "missing"),
        ("labels empty", HOOK, enc(with_alert0(P, labels={})), None, 200, "alerts[0].labels",
         "at least one label"),
        ("label value a number", HOOK, enc(label0(P, "severity", 3)), None, 200,
         "alerts[0].labels.severity", "must be a string"),
        ("label value an object", HOOK, enc(label0(P, "severity", {"a": "b"})), None, 200,
         "alerts[0].labels.severity", "must be a string"),
        ("label value null", HOOK, enc(label0(P, "severity", None)), None, 200,
         "alerts[0].labels.severity", "must be a string"),
        ("label name empty", HOOK, enc(label0(P, "", "x")), None, 200, "alerts[0].labels",
         "empty name"),
        ("annotations an array", HOOK, enc(with_alert0(P, annotations=["x"])), None, 200,
         "alerts[0].annotations", "must be an object"),
        ("startsAt missing", HOOK, enc(alert0_without(P, "startsAt")), None, 200,
         "alerts[0].startsAt", "missing"),
        ("startsAt not a time", HOOK, enc(with_alert0(P, startsAt="yesterday")), None, 200,
         "alerts[0].startsAt", "not an RFC 3339 time"),
        ("startsAt Feb 30", HOOK, enc(with_alert0(P, startsAt="2024-02-30T00:00:00Z")), None,
         200, "alerts[0].startsAt", "not an RFC 3339 time"),
        ("startsAt without zone", HOOK, enc(with_alert0(P, startsAt="2024-02-03T00:00:00")),
         None, 200, "alerts[0].startsAt", "not an RFC 3339 time"),
        ("startsAt the zero time", HOOK, enc(with_alert0(P, startsAt="0001-01-01T00:00:00Z")),
         None, 200, "alerts[0].startsAt", "zero time"),
        ("startsAt a number", HOOK, enc(with_alert0(P, startsAt=1700000000)), None, 200,
         "alerts[0].startsAt", "must be a string"),
        ("endsAt missing", HOOK, enc(alert0_without(P, "endsAt")), None, 200,
         "alerts[0].endsAt", "missing"),
        ("endsAt garbage", HOOK, enc(with_alert0(P, endsAt="2024-01-01T25:00:00Z")), None, 200,
         "alerts[0].endsAt", "not an RFC 3339 time"),
        ("generatorURL a number", HOOK, enc(with_alert0(P, generatorURL=1)), None, 200,
         "alerts[0].generatorURL", "must be a string"),
        ("fingerprint short", HOOK, enc(with_alert0(P, fingerprint="abc")), None, 200,
         "alerts[0].fingerprint", "16 lowercase hex"),
        ("fingerprint upper case", HOOK, enc(with_alert0(P, fingerprint="ABCDEF0123456789")),
         None, 200, "alerts[0].fingerprint", "16 lowercase hex"),
        # sizes
        ("huge label value", HOOK, enc(label0(P, "severity", big)), None, 200,
         "alerts[0].labels.severity", "longer than 4096 bytes"),
        ("huge label name", HOOK, enc(label0(P, big, "x")), None, 200,
         "alerts[0].labels." + big[:110], "name longer than 4096 bytes"),
        ("300 labels", HOOK, enc(with_alert0(P, labels=many_labels)), None, 200,
         "alerts[0].labels", "more than 256 entries"),
        ("huge annotation", HOOK, enc(label0(P, "summary", "y" * 70000, "annotations")), None,
         200, "alerts[0].annotations.summary", "longer than 65536 bytes"),
        ("alerts over max_alerts", HOOK, enc(over), None, 400, "alerts",
         "more than %d alerts" % MAX_ALERTS),
        ("body over max_body_bytes", HOOK, b"{" + b" " * MAX_BODY + b"}", None, 413, None,
         "too large"),
        # the request around the body
        ("content type text/plain", HOOK, VALID, {"Content-Type": "text/plain"}, 415, None,
         "Content-Type"),
        ("no content type", HOOK, VALID, {}, 415, None, "Content-Type"),
        ("content type application/jsonx", HOOK, VALID,
         {"Content-Type": "application/jsonx"}, 415, None, "Content-Type"),
        ("content type multipart", HOOK, VALID, {"Content-Type": "multipart/form-data"}, 415,
         None, "Content-Type"),
        ("unknown receiver", HOOK, enc(dict(P, receiver="nobody")), None, 404, None,
         "unknown receiver"),
        ("invalid repo label", HOOK, enc(label0(P, "alertbridge_repo", "not a repo")), None,
         200, "alerts[0].labels.alertbridge_repo", "repo"),
        ("repo label path traversal", HOOK, enc(label0(P, "alertbridge_repo", "../../x")),
         None, 200, "alerts[0].labels.alertbridge_repo", "repo"),
        ("invalid repo query", HOOK + "?repo=a/b/c", VALID, None, 400, None, "repo"),
        ("receiver query invalid UTF-8", HOOK + "?receiver=%FF%FE", VALID, None, 404, None,
         "unknown receiver"),
        # the janitor's endpoint
        ("janitor: pod label missing", JHOOK, enc(jpayload([pod_alert(0, labels={
            "alertname": "JanitorIdleGPUPod", "namespace": "ml"})])), None, 200,
         "alerts[0].labels.pod", "pod"),
        ("janitor: namespace empty", JHOOK, enc(jpayload([pod_alert(0, labels={
            "alertname": "JanitorIdleGPUPod", "namespace": "", "pod": "p0"})])), None, 200,
         "alerts[0].labels.namespace", "namespace"),
        ("janitor: second alert without pod", JHOOK, enc(jtwo), None, 200,
         "alerts[1].labels.pod", "pod"),
        ("janitor: pod name with a slash", JHOOK, enc(jpayload([pod_alert(0, labels={
            "alertname": "JanitorIdleGPUPod", "namespace": "ml", "pod": "../../nodes/x"})])),
         None, 200, "alerts[0].labels.pod", "pod"),
        ("janitor: namespace upper case", JHOOK, enc(jpayload([pod_alert(0, labels={
            "alertname": "JanitorIdleGPUPod", "namespace": "ML", "pod": "p0"})])),
         None, 200, "alerts[0].labels.namespace", "namespace"),
        ("janitor: truncated JSON", JHOOK, enc(JP)[:40], None, 400, "", "invalid JSON"),
        ("janitor: wrong version", JHOOK, enc(dict(JP, version="5")), None, 400, "version",
         "unsupported version"),
        ("janitor: invalid UTF-8", JHOOK, enc(JP).replace(b'"ml"', b'"m\xffl"', 1), None, 400,
         "", "invalid JSON"),
        ("janitor: \\u0000", JHOOK, enc(JP).replace(b'"ml"', b'"m\\u0000l"', 1), None, 400, "",
         "invalid JSON"),
        ("janitor: 100k nested arrays", JHOOK, deep, None, 400, "", "invalid JSON"),
        ("janitor: alerts over max_alerts", JHOOK, enc(jover), None, 400, "alerts",
         "more than %d alerts" % MAX_ALERTS),
        ("janitor: startsAt garbage", JHOOK, enc(with_alert0(JP, startsAt="soon")), None, 200,
         "alerts[0].startsAt", "not an RFC 3339 time"),
        ("janitor: wrong content type", JHOOK, enc(JP), {"Content-Type": "text/json"}, 415,
         None, "Content-Type"),
        ("janitor: body over max_body_bytes", JHOOK, b"[" + b" " * MAX_BODY + b"]", None, 413,
         None, "too large"),
    ]
    return c


# ----- the stack -------------------------------------------------------------------------------

def write(name, text):
    return write_file(S["dir"], name, text)


def config_text(port):
    return ("listen_address: 127.0.0.1:%d\n"
            "database: alertbridge.db\n"
            "log: {level: info, format: logfmt}\n"
            "webhook:\n"
            "  bearer_token_file: webhook-token\n"
            "  max_body_bytes: %d\n"
            "  max_alerts: %d\n"
            "  read_timeout: 10s\n"
            "github:\n"
            "  dry_run: true\n"
            "receivers:\n"
            "  - name: default\n"
            "    repo: acme/alerts\n"
            "  - name: grouped\n"
            "    repo: acme/alerts\n"
            "    issue_per: group\n"
            "janitor:\n"
            "  enabled: true\n"
            "  dry_run: true\n"
            "  kubernetes: {kubeconfig: kubeconfig}\n"
            "  sweep_interval: 1h\n"
            "  policies:\n"
            "    - alertname: JanitorIdleGPUPod\n"
            "      grace: 1h\n"
            "      notice_lead: 10m\n"
            % (port, MAX_BODY, MAX_ALERTS))


def auth():
    return {"Authorization": "Bearer " + HOOK_TOKEN}


def post(path, raw, headers=None, timeout_s=30):
    h = auth()
    h.update({"Content-Type": JSON_CT} if headers is None else headers)
    if len(raw) > MAX_BODY:  # the server answers 413 and closes before the body is sent
        return post_raw(path, raw, h, timeout_s)
    return http("POST", S["url"] + path, raw=raw, headers=h, timeout_s=timeout_s)


def dump():
    """Every row of the tables that carry meaning, sorted, as lists of tuples."""
    con = sqlite3.connect("file:%s?mode=ro" % S["db"], uri=True, timeout=10)
    try:
        return {t: sorted(con.execute("SELECT * FROM %s" % t).fetchall(), key=repr)
                for t in TABLES}
    finally:
        con.close()


def pending():
    con = sqlite3.connect("file:%s?mode=ro" % S["db"], uri=True, timeout=10)
    try:
        return con.execute("SELECT COUNT(*) FROM events WHERE state = 'pending'").fetchone()[0]
    finally:
        con.close()


def digest(d):
    return hashlib.sha256(repr(d).encode()).hexdigest()[:12]


def healthy():
    check(S["proc"].alive(), "alertbridge still running", S["proc"].tail(20))
    st, _, _ = http("GET", S["url"] + "/-/healthy", timeout_s=5)
    eq(st, 200, "GET /-/healthy after the bad request")


def start_stack():
    S["dir"] = tempfile.mkdtemp(prefix="ab-bad-")
    S["kube"] = FakeKube(token=KUBE_TOKEN, namespaces=("default", "ml"))
    S["kube"].start()
    S["kube"].write_kubeconfig(os.path.join(S["dir"], "kubeconfig"), namespace="ml")
    S["kube"].add_pod("ml", "p0", labels={"owner": "alice"})
    port = free_port()
    S["url"] = "http://127.0.0.1:%d" % port
    write("webhook-token", HOOK_TOKEN + "\n")
    S["config"] = write("alertbridge.yml", config_text(port))
    S["db"] = os.path.join(S["dir"], "alertbridge.db")
    S["proc"] = start_alertbridge(ALERTBRIDGE, S["config"], S["dir"], S["url"])


def stop_stack():
    if "proc" in S and S["proc"].p is not None:
        S["proc"].stop()
    if "kube" in S:
        S["kube"].stop()
    if "dir" in S:
        shutil.rmtree(S["dir"], ignore_errors=True)


def on_failure(name):
    if "proc" in S:
        print_tail("alertbridge log (last 30 lines)", S["proc"].tail(30))


# ----- webhook cases ---------------------------------------------------------------------------

@run.case
def valid_webhooks_seed_the_database():
    if not (os.path.isfile(ALERTBRIDGE) and os.access(ALERTBRIDGE, os.X_OK)):
        raise Failure("alertbridge binary not found: %s (set ALERTBRIDGE_BIN)" % ALERTBRIDGE)
    start_stack()
    st, _, body = post(HOOK, VALID)
    eq((st, body.get("alerts") if isinstance(body, dict) else body), (200, 1), "valid webhook")
    st, _, body = post(JHOOK, enc(JP))
    eq((st, body.get("alerts") if isinstance(body, dict) else body), (200, 1),
       "valid janitor webhook")
    poll(lambda: pending() == 0, "both events processed", timeout_s=30)
    d = dump()
    check(len(d["events"]) == 2 and len(d["issues"]) == 1, "two events and one issue row", d)
    # quiescent: nothing changes on its own
    time.sleep(1.0)
    eq(dump(), d, "the database without any request")


def answer_ok(name, st, body, want_status, want_field, want_msg):
    eq(st, want_status, "%s: status" % name)
    check(isinstance(body, dict), "%s: a JSON object answer" % name, body)
    msg = body.get("error")
    check(isinstance(msg, str) and want_msg.lower() in msg.lower(),
          "%s: message names the problem (%r)" % (name, want_msg), body)
    if want_field:
        eq(body.get("field"), want_field, "%s: field" % name)
    else:
        check("field" not in body, "%s: no field member" % name, body)


STATS = {"webhook_cases": 0, "by_status": {}}


def new_events(after_id):
    con = sqlite3.connect("file:%s?mode=ro" % S["db"], uri=True, timeout=10)
    try:
        return con.execute("SELECT state, last_error FROM events WHERE id > ? ORDER BY id",
                           (after_id,)).fetchall()
    finally:
        con.close()


def dead_lettered_ok(name, st, body, before, field, msg):
    """A 200 for a payload with one invalid alert: that alert is one dead letter whose reason
    names field and msg; the other alerts' events are done; nothing else changed but the
    dead_reason (column 12) of the map row of the invalid alert's key, when it has one."""
    eq(st, 200, "%s: status" % name)
    check(isinstance(body, dict) and body.get("status") == "ok" and body.get("invalid") == 1,
          "%s: answered ok with one invalid alert" % name, body)
    poll(lambda: pending() == 0, "%s: the valid alerts' events processed" % name, timeout_s=30)
    after = dump()
    eq(digest(after["notices"]), digest(before["notices"]), "%s: table notices unchanged" % name)
    # issues: receiver .. updated_at_ms (0-11), dead_reason (12), then later migrations' columns
    b_rows = [r[:12] + r[13:] for r in before["issues"]]
    a_rows = [r[:12] + r[13:] for r in after["issues"]]
    check(digest(a_rows) == digest(b_rows), "%s: table issues unchanged but for dead_reason"
          % name, {"before only": [r for r in b_rows if r not in a_rows],
                   "after only": [r for r in a_rows if r not in b_rows]})
    # events: id, kind, receiver, key, status, starts_at_ms, ends_at_ms, payload, ..., last_error
    # (11), ..., state (13).  A new dead letter replaces an older one it repeats (the same
    # alert state and reason: store.h, store_enqueue); every other earlier event is unchanged.
    def repeats(old, new):
        return (old[13] == new[13] == "dead" and old[1:7] == new[1:7] and old[11] == new[11]
                and new[0] > old[0])
    gone = [r for r in before["events"] if r not in after["events"]]
    check(all(any(repeats(r, n) for n in after["events"]) for r in gone),
          "%s: every earlier event unchanged (or replaced by a repeat of its dead letter)"
          % name, gone)
    last_id = max([r[0] for r in before["events"]] or [0])
    added = new_events(last_id)
    dead = [r for r in added if r[0] == "dead"]
    check(len(dead) == 1 and dead[0][1].startswith("invalid alert: " + field + ": ") and
          msg.lower() in dead[0][1].lower(), "%s: one dead letter naming %s and %r" % (
              name, field, msg), added)
    check(all(r[0] == "done" for r in added if r[0] != "dead"), "%s: the rest done" % name,
          added)
    marked = [r[12] for r in after["issues"] if r not in before["issues"]]
    check(all(m == dead[0][1] for m in marked), "%s: a map row marked with the reason" % name,
          marked)


def run_cases(select):
    failures = []
    for name, path, raw, headers, status, field, msg in cases():
        if not select(path):
            continue
        before = dump()
        try:
            st, _, body = post(path, raw, headers)
            if status == 200:
                dead_lettered_ok(name, st, body, before, field, msg)
            else:
                answer_ok(name, st, body, status, field, msg)
                after = dump()
                eq(digest(after), digest(before), "%s: database unchanged" % name)
            healthy()
        except Failure as e:
            failures.append(str(e))
            event("  case FAILED %s" % e)
            continue
        STATS["webhook_cases"] += 1
        STATS["by_status"][status] = STATS["by_status"].get(status, 0) + 1
        event("  ok %-40s -> %d %s" % (name, st, json.dumps(body)[:110]))
    if failures:
        raise Failure("%d case(s) failed:\n  %s" % (len(failures), "\n  ".join(failures)))


@run.case
def bridge_rejects_each_malformed_body():
    run_cases(lambda p: p.startswith(HOOK))


@run.case
def janitor_rejects_each_malformed_body():
    run_cases(lambda p: p.startswith(JHOOK))


def raw_request(head, body_parts, read=True, timeout_s=30):
    """Send head (bytes) then each part of body_parts on one connection; return the answer's
    status line and body (b"" when the server closed without answering)."""
    s = socket.create_connection(("127.0.0.1", int(S["url"].rsplit(":", 1)[1])), timeout=timeout_s)
    try:
        s.sendall(head)
        for part in body_parts:
            try:
                s.sendall(part)
            except OSError:  # the server may answer 413 and close before the end
                break
        if not read:
            return b""
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:  # already closed by the server, which may have answered
            pass
        data = b""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def parse_answer(data):
    """(status, parsed JSON body or text) of one raw HTTP/1.1 answer with Content-Length."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    check(lines and lines[0].startswith("HTTP/1.1 "), "an HTTP answer", data[:200])
    try:
        parsed = json.loads(body.decode("utf-8"))
    except ValueError:
        parsed = body.decode("utf-8", "replace")
    return int(lines[0].split()[1]), {}, parsed


def post_raw(path, raw, headers, timeout_s):
    head = "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n" % (
        path, len(raw))
    head += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
    step = 1 << 16
    return parse_answer(raw_request(head.encode(), [raw[i:i + step]
                                                    for i in range(0, len(raw), step)],
                                    timeout_s=timeout_s))


@run.case
def chunked_and_cut_bodies_change_nothing():
    before = dump()
    auth_h = "Authorization: Bearer %s\r\n" % HOOK_TOKEN
    for path in (HOOK, JHOOK):
        # a chunked body past max_body_bytes: 413, whatever it would have said
        head = ("POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n" % (path, auth_h)).encode()
        chunk = b" " * 65536
        parts = [b"{"]
        parts = [b"1\r\n{\r\n"] + [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (MAX_BODY // 65536 + 2)
        parts.append(b"0\r\n\r\n")
        data = raw_request(head, parts)
        check(data.startswith(b"HTTP/1.1 413"), "%s chunked over the limit: 413" % path,
              data[:300])
        event("  ok chunked over max_body_bytes %s -> %s" % (path, data.split(b"\r\n")[0]))
        # a chunked valid-looking but truncated body, connection closed mid-chunk
        head2 = head
        raw_request(head2, [b"%x\r\n%s" % (len(VALID), VALID[:50])], read=False)
        # Content-Length larger than what is sent, then the client goes away
        head3 = ("POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\n"
                 "Content-Length: %d\r\n\r\n" % (path, auth_h, len(VALID))).encode()
        raw_request(head3, [VALID[:len(VALID) - 10]], read=False)
        # a chunked body with a malformed chunk size
        data = raw_request(head, [b"zz\r\n{}\r\n0\r\n\r\n"])
        check(data.startswith(b"HTTP/1.1 4"), "%s bad chunk size: a 4xx" % path, data[:300])
        event("  ok bad chunk size %s -> %s" % (path, data.split(b"\r\n")[0]))
        STATS["webhook_cases"] += 4
    time.sleep(0.5)
    eq(digest(dump()), digest(before), "database after chunked and cut bodies")
    healthy()


@run.case
def valid_webhooks_still_accepted_up_to_max_alerts():
    # still answering a plain valid webhook: a new alert, a new issue row
    a = alert(7)
    st, _, body = post(HOOK, enc(payload([a])))
    eq((st, body), (200, {"status": "ok", "receiver": "default", "alerts": 1}),
       "valid webhook after the bad ones")
    poll(lambda: pending() == 0, "the new event processed", timeout_s=30)
    eq(len(dump()["issues"]), 2, "issue rows after one new alert")
    # exactly max_alerts alerts: accepted (a group receiver: one event)
    at = payload([alert(i) for i in range(MAX_ALERTS)], receiver="grouped")
    raw = enc(at)
    check(len(raw) < MAX_BODY, "10k alerts fit max_body_bytes", len(raw))
    t = time.time()
    st, _, body = post(HOOK, raw, timeout_s=60)
    eq((st, body), (200, {"status": "ok", "receiver": "grouped", "alerts": MAX_ALERTS}),
       "%d alerts to the bridge" % MAX_ALERTS)
    event("  %d alerts (%d bytes) accepted in %.2f s" % (MAX_ALERTS, len(raw), time.time() - t))
    # and to the janitor: one event per pod
    n_before = len(dump()["events"])
    raw = enc(jpayload([pod_alert(i) for i in range(MAX_ALERTS)]))
    st, _, body = post(JHOOK, raw, timeout_s=60)
    eq((st, body), (200, {"status": "ok", "receiver": "janitor", "alerts": MAX_ALERTS}),
       "%d alerts to the janitor" % MAX_ALERTS)
    eq(len(dump()["events"]), n_before + MAX_ALERTS, "events stored: all of them")
    healthy()
    STATS["alerts_accepted"] = 2 + 1 + 2 * MAX_ALERTS
    # SIGTERM with 10k janitor events queued: a clean exit (the queue is kept for next time).
    # Known: a client that sent a partial body and went away (chunked_and_cut_bodies...)
    # holds srv_stop() until read_timeout (10 s here), so allow that much and a margin.
    t = time.time()
    code = S["proc"].stop(grace_s=20)
    STATS["sigterm_exit_s"] = round(time.time() - t, 2)
    if code != 0:
        print_tail("alertbridge log after SIGTERM", S["proc"].tail(25))
    eq(code, 0, "exit code after SIGTERM with a backlog (%.1f s)" % (time.time() - t))
    stop_stack()
    S.clear()


# ----- config files ----------------------------------------------------------------------------

GOOD_CONFIG = ("listen_address: 127.0.0.1:1\n"
               "database: state.db\n"
               "github:\n"
               "  dry_run: true\n"
               "receivers:\n"
               "  - name: default\n"
               "    repo: acme/alerts\n")

# (name, config text, extra files {name: text}, "line: key" expected in the message)
CONFIGS = [
    ("unknown top-level key", GOOD_CONFIG + "colour: blue\n", {}, ":8: colour"),
    ("unknown nested key", GOOD_CONFIG.replace("  dry_run: true\n",
                                               "  dry_run: true\n  tokn: x\n"), {},
     ":5: github.tokn"),
    ("YAML syntax error", GOOD_CONFIG + "receivers: [\n", {}, ":9"),
    ("tab indentation", GOOD_CONFIG.replace("  dry_run", "\tdry_run"), {}, ":4"),
    ("wrong type: list for a map", GOOD_CONFIG.replace("github:\n  dry_run: true\n",
                                                        "github: [1, 2]\n"), {}, ":3: github"),
    ("wrong type: map for a string", GOOD_CONFIG.replace("database: state.db",
                                                          "database: {a: b}"), {},
     ":2: database"),
    ("bad boolean", GOOD_CONFIG.replace("dry_run: true", "dry_run: maybe"), {},
     ":4: github.dry_run"),
    ("bad number", GOOD_CONFIG + "webhook: {max_body_bytes: lots}\n", {},
     ":8: webhook.max_body_bytes"),
    ("number out of range", GOOD_CONFIG + "webhook: {max_alerts: 0}\n", {},
     ":8: webhook.max_alerts"),
    ("negative number", GOOD_CONFIG + "webhook: {threads: -1}\n", {}, ":8: webhook.threads"),
    ("bad duration", GOOD_CONFIG + "webhook: {read_timeout: 5 minutes}\n", {},
     ":8: webhook.read_timeout"),
    ("bad enum", GOOD_CONFIG + "    issue_per: pod\n", {}, ":8: receivers[0].issue_per"),
    ("missing required key", GOOD_CONFIG.replace("    repo: acme/alerts\n", ""), {},
     "receivers[0]"),
    ("duplicate receiver", GOOD_CONFIG + "  - name: default\n    repo: acme/b\n", {},
     ":8: receivers[1].name"),
    ("duplicate key", GOOD_CONFIG + "database: other.db\n", {}, ":8: database"),
    ("secret file missing", GOOD_CONFIG + "webhook: {bearer_token_file: nope}\n", {},
     ":8: webhook.bearer_token_file"),
    ("secret file empty", GOOD_CONFIG + "webhook: {bearer_token_file: tok}\n", {"tok": ""},
     ":8: webhook.bearer_token_file"),
    ("template missing", GOOD_CONFIG + "    templates: {title: nope.mustache}\n", {},
     "receivers[0].templates.title"),
    ("template that does not compile", GOOD_CONFIG + "    templates: {title: t.mustache}\n",
     {"t.mustache": "{{#open}} never closed"}, "t.mustache"),
    ("invalid UTF-8", GOOD_CONFIG.replace("acme/alerts", "acme/al\xff"), {}, ""),
    ("NUL byte", GOOD_CONFIG + "x: \x00\n", {}, ""),
    ("empty file", "", {}, ""),
    ("a list, not a map", "- a\n- b\n", {}, ":1"),
    ("janitor without kubeconfig file", GOOD_CONFIG +
     "janitor: {enabled: true, kubernetes: {kubeconfig: nope}}\n", {}, "kubeconfig"),
    ("janitor with a malformed kubeconfig", GOOD_CONFIG +
     "janitor: {enabled: true, kubernetes: {kubeconfig: kc}}\n", {"kc": "clusters: [\n"},
     "kc:2"),
]


def run_cli(args, cwd, timeout_s=20):
    p = subprocess.run([ALERTBRIDGE] + args, cwd=cwd, capture_output=True, timeout=timeout_s,
                       env={k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"})
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


@run.case
def each_bad_config_exits_1_with_file_line_key():
    failures = []
    d = tempfile.mkdtemp(prefix="ab-badcfg-")
    try:
        # a database that exists already must not change either
        existing = os.path.join(d, "existing.db")
        con = sqlite3.connect(existing)
        con.execute("CREATE TABLE t (x)")
        con.execute("INSERT INTO t VALUES (1)")
        con.commit()
        con.close()
        with open(existing, "rb") as f:
            existing_bytes = f.read()
        for name, text, files, want in CONFIGS:
            for fn, ft in files.items():
                with open(os.path.join(d, fn), "w") as f:
                    f.write(ft)
            cfg = os.path.join(d, "bad.yml")
            with open(cfg, "wb") as f:
                f.write(text.encode("utf-8", "surrogateescape") if "\xff" not in text
                        else text.encode("latin-1"))
            try:
                code, out, err = run_cli(["check-config", cfg], d)
                eq(code, 1, "%s: check-config exit code (stderr %s)" % (name, err.strip()))
                check("bad.yml" in err and want in err,
                      "%s: check-config names file:line: key %r" % (name, want), err)
                check("SUCCESS" not in out, "%s: no SUCCESS" % name, out)
                code, out, err2 = run_cli(["serve", "--config.file=" + cfg,
                                           "--web.listen-address=127.0.0.1:%d" % free_port()], d)
                eq(code, 1, "%s: serve exit code (stderr %s)" % (name, err2.strip()[-300:]))
                check(want in err2, "%s: serve names the key %r" % (name, want), err2[-500:])
                check(not os.path.exists(os.path.join(d, "state.db")),
                      "%s: no database created" % name)
                code, out, err3 = run_cli(["serve", "--config.file=" + cfg,
                                           "--database.path=" + existing,
                                           "--web.listen-address=127.0.0.1:%d" % free_port()], d)
                eq(code, 1, "%s: serve with an existing database: exit code" % name)
                with open(existing, "rb") as f:
                    check(f.read() == existing_bytes, "%s: existing database unchanged" % name)
                event("  ok %-34s %s" % (name, err.strip().splitlines()[-1][:110]))
            except (Failure, subprocess.TimeoutExpired) as e:
                failures.append(str(e))
                event("  case FAILED %s" % e)
            finally:
                for fn in files:
                    os.unlink(os.path.join(d, fn))
                for leftover in ("state.db", "state.db-wal", "state.db-shm"):
                    if os.path.exists(os.path.join(d, leftover)):
                        os.unlink(os.path.join(d, leftover))
        STATS["config_cases"] = len(CONFIGS) - len(failures)
        # the control: the good config passes
        with open(os.path.join(d, "good.yml"), "w") as f:
            f.write(GOOD_CONFIG)
        code, out, err = run_cli(["check-config", os.path.join(d, "good.yml")], d)
        eq(code, 0, "the good config passes check-config (stderr %s)" % err)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if failures:
        raise Failure("%d config case(s) failed:\n  %s" % (len(failures), "\n  ".join(failures)))


def after():
    stop_stack()
    event("figures: %s" % json.dumps(STATS, sort_keys=True))


if __name__ == "__main__":
    only = only_from_env("BAD_ONLY")
    sys.exit(run.run(on_failure=on_failure, only=only, after=after))
