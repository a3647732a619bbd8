#!/usr/bin/env python3
"""seed.py - (re)write the seed corpora in tests/fuzz/corpus/<harness>/ from the project's own
inputs: the Alertmanager fixtures, the Mustache spec (tests/mustache-spec, MIT), the shipped
templates, the config examples and unit-test data, and the kubeconfig variants of the unit tests.
Run from the repository root: python3 tests/fuzz/seed.py [MUSTACHE_SPEC_DIR].  Files are named
by content hash, so rerunning only adds what is new."""

import glob
import hashlib
import json
import os
import sys

ROOT = os.getcwd()
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(harness, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def spec_dir():
    for d in sys.argv[1:] + [os.path.join(ROOT, "tests", "mustache-spec")]:
        if os.path.isdir(d):
            return d
    return None


# ----- payloads --------------------------------------------------------------------------------
fixtures = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "alertmanager", "*.json")))
for p in fixtures:
    put("fuzz_am", read(p))
    put("fuzz_mustache_view", read(p))
first = json.loads(read(fixtures[0]))
for mutate in (lambda d: d.update(version="3"),
               lambda d: d.update(alerts=[]),
               lambda d: d["alerts"][0].update(fingerprint="XYZ"),
               lambda d: d["alerts"][0].update(endsAt="2024-02-30T00:00:00Z"),
               lambda d: d["alerts"][0]["labels"].update(bad="\u00e9\u4e2d\U0001F600"),
               lambda d: d.update(truncatedAlerts=-1),
               lambda d: d["alerts"][0].pop("fingerprint", None),
               lambda d: d.update(receiver="team\\.a\\(b\\)")):
    d = json.loads(json.dumps(first))
    mutate(d)
    put("fuzz_am", json.dumps(d))
put("fuzz_am", read(fixtures[0])[:50])
put("fuzz_am", b'{"version":"4","version":"4"}')
put("fuzz_am", b'{"a":"\\u0000"}')
put("fuzz_am", b'["not", "an", "object"]')

# ----- templates and views ---------------------------------------------------------------------
for p in sorted(glob.glob(os.path.join(ROOT, "templates", "*.mustache"))):
    put("fuzz_mustache", read(p))
sd = spec_dir()
if sd:
    for p in sorted(glob.glob(os.path.join(sd, "*.json"))):
        for t in json.loads(read(p)).get("tests", []):
            put("fuzz_mustache", t["template"])
            for src in (t.get("partials") or {}).values():
                put("fuzz_mustache", src)
            put("fuzz_mustache_view", json.dumps(t.get("data")))
else:
    print("seed.py: no mustache spec found; template seeds from templates/ only", file=sys.stderr)
put("fuzz_mustache_view", '{"alertname":"X","labels":{"a":"<b>"},"labelList":[{"name":"a",'
                          '"value":"1"}],"resolved":true,"previous":{"number":1,"url":"u"}}')

# ----- times and durations ---------------------------------------------------------------------
for s in ["0", "30s", "1h30m", "7d", "1y2w3d4h5m6s7ms", "292y", "300y", "1.5h", "-1s", "",
          "90d", "1h1h", "30m1h", "2024-02-29T12:34:56Z", "2024-02-29T12:34:56.123456789+05:30",
          "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "2016-12-31T23:59:60Z",
          "9999-12-31T23:59:59.999-23:59", "0000-01-01T00:00:00+00:01", "2024-13-01T00:00:00Z",
          "2026-11-21T00:49:48Z", "2026-11-21T00:49", "2026-11-21", "2026-1-2t3:4:5z",
          "5m", "10h", "2w", "forever", "FOREVER", "007d", "99999999999999999999s", "1x"]:
    put("fuzz_time", s)

# ----- configuration ---------------------------------------------------------------------------
TEMP_FILES = {"secrets/webhook-token": "token", "secrets/github-token": "token",
              "secrets/slack-token": "slack", "secrets/webhook-password": "password",
              "secrets/slack-webhook": "webhook", "secrets/app.pem": "key.pem",
              "tls/server.crt": "ca.pem", "/etc/tls/server.key": "key.pem",
              "tls/ca.crt": "ca.pem"}
for p in sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "data", "config", "*.yml")) +
                [os.path.join(ROOT, "deploy", "examples", "alertbridge.yml")]):
    text = read(p).decode()
    put("fuzz_config", text)
    for k, v in TEMP_FILES.items():  # names of the files the harness's temp dir holds
        text = text.replace(k, v)
    put("fuzz_config", text)
put("fuzz_config", "receivers:\n  - {name: a, repo: o/r, issue_per: foo}\n")
put("fuzz_config", "webhook: {max_body_byte: 1}\n")
put("fuzz_config", "github: {timeout: 10x, token_file: token}\nreceivers: [{name: a, repo: o/r}]\n")
put("fuzz_config", "a: &x {b: *x}\n")

# ----- kubeconfig ------------------------------------------------------------------------------
BASE = ("apiVersion: v1\nkind: Config\ncurrent-context: dev\nclusters:\n"
        "- name: dev-cluster\n  cluster:\n    server: https://dev.example:6443/\n"
        "    certificate-authority-data: Q0EgUEVNCg==\n"
        "- name: prod-cluster\n  cluster:\n    server: https://prod.example\n"
        "    insecure-skip-tls-verify: true\n"
        "contexts:\n- name: dev\n  context: {cluster: dev-cluster, user: dev-user, namespace: ml}\n"
        "- name: fuzz\n  context:\n    cluster: prod-cluster\n    user: prod-user\n"
        "users:\n- name: dev-user\n  user:\n    token: dev-token\n"
        "- name: prod-user\n  user:\n    client-certificate: client.crt\n"
        "    client-key: client.key\n")
put("fuzz_kubeconfig", BASE)
put("fuzz_kubeconfig", BASE.replace("    token: dev-token\n", "    tokenFile: token\n"))
put("fuzz_kubeconfig", BASE.replace("certificate-authority-data: Q0EgUEVNCg==",
                                    "certificate-authority: ca.crt"))
put("fuzz_kubeconfig", BASE.replace("    token: dev-token\n",
                                    "    exec:\n      apiVersion: client.authentication.k8s.io/v1"
                                    "\n      command: ./plugin.sh\n      args: [a1]\n      env:\n"
                                    "      - {name: MODE, value: x}\n"
                                    "      installHint: install it\n"
                                    "      provideClusterInfo: true\n"
                                    "      interactiveMode: Never\n"))
put("fuzz_kubeconfig", BASE.replace("    token: dev-token\n",
                                    "    client-certificate-data: Q0EgUEVNCg==\n"
                                    "    client-key-data: Q0EgUEVNCg==\n"))
put("fuzz_kubeconfig", BASE.replace("    token: dev-token\n", "    auth-provider: {name: gcp}\n"))
put("fuzz_kubeconfig", "apiVersion: v1\nkind: Config\n")
# ----- matchers: Alertmanager's own vectors (tests/unit/data/matchers) and RE2 patterns --------
with open(os.path.join(ROOT, "tests", "unit", "data", "matchers", "alertmanager.json")) as f:
    AM = json.load(f)
for section in ("classic", "utf8", "utf8_compliance", "fallback"):
    for case in AM[section]["cases"]:
        put("fuzz_matchers", case["input"])
for case in AM["match"]["cases"]:
    put("fuzz_matchers", case[1])
for pattern in ("\\d+", "caf.", "(?s)a.b", "(?i)\\p{Lu}", "[[:^space:]\\S]", "\\Q.*\\E", "a{2,1000}",
                "(?P<n>a)(?m:^b$)", "(a)\\1", "(?<=a)b", "a*+", "\\x{1F642}\\101"):
    put("fuzz_matchers", pattern)
# ----- slack clicks: block_actions payloads as Slack form-encodes them ----------------------------
import urllib.parse  # noqa: E402
VALUE = json.dumps({"ns": "ml", "pod": "train-1", "uid": "u-1", "notice": 7})
CLICK = {"type": "block_actions", "user": {"id": "U0ALICE", "username": "alice"},
         "container": {"type": "message", "message_ts": "1.2", "channel_id": "D0ALICE"},
         "message": {"text": "Pod *train-1* goes", "blocks": [{"type": "section"}]},
         "response_url": "https://hooks.slack.com/actions/T/1/x",
         "actions": [{"action_id": "postpone", "value": VALUE, "action_ts": "1.3"}]}
put("fuzz_slack_click", urllib.parse.urlencode({"payload": json.dumps(CLICK)}))
put("fuzz_slack_click", "token=x&" + urllib.parse.urlencode({"payload": json.dumps(
    dict(CLICK, actions=[{"action_id": "other", "value": "x"}]))}))
put("fuzz_slack_click", urllib.parse.urlencode({"payload": json.dumps(dict(CLICK, message={}))}))
put("fuzz_slack_click", "payload=%7B%22type%22%3A%22block_actions%22%7D")
print("seed.py: corpora in %s" % OUT)
