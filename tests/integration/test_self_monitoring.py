#!/usr/bin/env python3
# run.sh: weight 26, asan skip
# (the rules and the dashboard against /metrics' names: the sanitizers run the metrics in the unit tests)
"""test_self_monitoring.py - the alerts on alertbridge itself (deploy/prometheus/
alertbridge-rules.yml) and the Grafana dashboard (deploy/grafana/alertbridge.json) use only
what exists:

- every alert has severity, summary, description and a runbook_url whose anchor is a heading of
  docs/metrics-and-alerts.md, and its promtool unit tests (deploy/prometheus/tests/alertbridge-rules.test.yml,
  run by test_shipped_rules.py) have a case where it fires and one where it does not;
- the dashboard is a Grafana schema-39 dashboard with a ${datasource} variable that every panel
  and query uses, and the panels the issue asks for;
- every PromQL expression of the rules (their annotation queries too) and of the dashboard
  (panel targets and variable queries, Grafana variables such as $__rate_interval substituted)
  parses: they are written as recording rules into a temporary file that `promtool check rules`
  must accept (and a broken one must be rejected);
- every metric name those expressions use is exposed by the real binary: alertbridge runs with
  the bridge (fake GitHub), the janitor (fake Kubernetes API, fake Slack) and leader election,
  is driven through an issue, a 422 dead letter, an invalid alert, a marked pod and its Slack
  notice, a janitor sweep, and its /metrics is scraped (histograms by their _bucket, _sum and
  _count series).

Prints one line per check and, last, "N passed, N failed"; exits 1 on any failure.
Env: ALERTBRIDGE_BIN (default ./alertbridge).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:  # a Python of its own (pyenv) beside Debian's python3-yaml (deploy/deps.sh)
    sys.path.append("/usr/lib/python3/dist-packages")
    import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import (Failure, Runner, check, eq, event, http,  # noqa: E402
                     iso_ms, poll, print_tail, webhook_payload)
from harness import service_config, start_alertbridge, stop_all  # noqa: E402
from harness import janitor_head  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(os.environ.get("ALERTBRIDGE_BIN", os.path.join(SRC, "alertbridge")))
RULES = os.path.join(SRC, "deploy", "prometheus", "alertbridge-rules.yml")
RULES_TEST = os.path.join(SRC, "deploy", "prometheus", "tests", "alertbridge-rules.test.yml")
DASHBOARD = os.path.join(SRC, "deploy", "grafana", "alertbridge.json")
RUNBOOKS = os.path.join(SRC, "docs", "metrics-and-alerts.md")
TIMEOUT_S = 60

# Series Prometheus itself adds to every scrape.
SYNTHETIC = {"up"}

# Values for Grafana's own variables (https://grafana.com/docs/grafana/latest/dashboards/
# variables/add-template-variables/#global-variables) in expressions.
GRAFANA_GLOBALS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h",
                   "__interval_ms": "60000", "__range_s": "3600"}

# The panels issue 8 item 4 asks for: (what, a regex one panel's title must match).
WANTED_PANELS = [
    ("webhook rate and codes", r"^Webhook requests by code$"),
    ("queue depth", r"^Queue depth$"),
    ("queue age", r"^Oldest queued event age$"),
    ("GitHub calls by outcome", r"^GitHub calls by outcome$"),
    ("GitHub budget", r"^GitHub budget$"),
    ("issues by state", r"^Issues by state$"),
    ("janitor marks", r"^Pods marked$"),
    ("notices", r"^Slack notices$"),
    ("deletions", r"^Deletions and scale-downs$"),
    ("expiry timeline", r"^Expiry timeline$"),
]

PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "bool", "offset", "inf", "nan"}

run = Runner()


# ---- reading the files ---------------------------------------------------------------------

def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def alerting_rules():
    return [r for g in load_yaml(RULES)["groups"] for r in g["rules"] if "alert" in r]


def runbook_anchors():
    """GitHub's anchors of docs/metrics-and-alerts.md's headings: lower case, punctuation but - and _ dropped,
    spaces to -."""
    anchors = set()
    with open(RUNBOOKS, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
            if m:
                a = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
                anchors.add(a)
    return anchors


def dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def all_panels(d):
    out = []
    for p in d.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def substitute(expr, variables):
    """expr with Grafana's global variables and the dashboard's own replaced by sample values;
    raises Failure for a variable nobody defines."""
    def one(m):
        name = m.group(1) or m.group(2)
        if name in GRAFANA_GLOBALS:
            return GRAFANA_GLOBALS[name]
        if name in variables:
            return variables[name]
        raise Failure("unknown Grafana variable $%s in %s" % (name, expr))
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", one, expr)


def dashboard_exprs(d):
    """(where, PromQL) of every panel target and every query variable, variables substituted."""
    variables = {}
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            variables[v["name"]] = ".*" if v.get("includeAll") else "alertbridge"
    out = []
    for p in all_panels(d):
        for t in p.get("targets", []):
            out.append(("panel %r %s" % (p["title"], t["refId"]), substitute(t["expr"], variables)))
    for v in d["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", q)
        check(m is not None, "variable %s: a label_values(SELECTOR, LABEL) query" % v["name"], q)
        out.append(("variable %s" % v["name"], substitute(m.group(1), variables)))
    return out


def rule_exprs():
    """(where, PromQL) of every rule's expr and every query in its annotations' templates."""
    out = []
    for g in load_yaml(RULES)["groups"]:
        for r in g["rules"]:
            name = r.get("alert") or r.get("record")
            out.append(("rule %s" % name, r["expr"]))
            for key, text in sorted((r.get("annotations") or {}).items()):
                for q in re.findall(r'printf\s+"((?:[^"\\]|\\.)*)"', text.replace("\n", " ")):
                    out.append(("rule %s annotation %s" % (name, key),
                                q.replace("%s", "x").replace("'", '"')))
    return out


def metric_names(expr):
    """The metric names a PromQL expression selects (string literals, label matchers, ranges,
    grouping clauses and function names are not names)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\{[^}]*\}", "{}", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\boffset\s+-?\w+", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)\s*(\()?", e):
        if m.group(2) or m.group(1).lower() in PROMQL_KEYWORDS:
            continue
        names.add(m.group(1))
    return names


def promtool_check(exprs):
    """Run promtool check rules on exprs written as recording rules; (ok, output)."""
    rules = {"groups": [{"name": "dashboard-and-rules", "rules": [
        {"record": "check:expr_%d" % i, "expr": e} for i, (_, e) in enumerate(exprs)]}]}
    with tempfile.TemporaryDirectory(prefix="ab-promql-") as tmp:
        path = os.path.join(tmp, "exprs.yml")
        with open(path, "w") as f:
            yaml.safe_dump(rules, f, sort_keys=False)
        p = subprocess.run(["promtool", "check", "rules", path], capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    return p.returncode == 0, p.stdout + p.stderr


# ---- the rules -----------------------------------------------------------------------------

@run.case
def every_alert_has_severity_summary_description_and_a_runbook_in_the_docs():
    alerts = alerting_rules()
    check(len(alerts) >= 10, "at least the ten alerts of issue 8 item 4", [a["alert"] for a in alerts])
    anchors = runbook_anchors()
    problems = []
    for a in alerts:
        name = a["alert"]
        if (a.get("labels") or {}).get("severity") not in ("info", "warning", "critical"):
            problems.append("%s: severity %r" % (name, (a.get("labels") or {}).get("severity")))
        ann = a.get("annotations") or {}
        for key in ("summary", "description", "runbook_url"):
            if not str(ann.get(key, "")).strip():
                problems.append("%s: no %s" % (name, key))
        url = ann.get("runbook_url", "")
        m = re.fullmatch(r"https://\S+/docs/metrics-and-alerts\.md#([\w-]+)", url)
        if not m:
            problems.append("%s: runbook_url %r is not docs/metrics-and-alerts.md#anchor" % (name, url))
        elif m.group(1) not in anchors:
            problems.append("%s: docs/metrics-and-alerts.md has no heading for #%s" % (name, m.group(1)))
        elif m.group(1) != name.lower():
            problems.append("%s: its runbook section should be named after it, not #%s"
                            % (name, m.group(1)))
    check(not problems, "alerts without their parts:\n    " + "\n    ".join(problems))
    event("%d alerts, each with a section in docs/metrics-and-alerts.md" % len(alerts))


@run.case
def the_alerts_the_issue_names_exist_with_their_metrics():
    exprs = {a["alert"]: a["expr"] for a in alerting_rules()}
    wanted = {
        "AlertbridgeDeadLettersRising": "alertbridge_bridge_dead_letters_total",
        "AlertbridgeQueueStuck": "alertbridge_bridge_queue_oldest_event_timestamp_seconds",
        "AlertbridgeGitHubUnauthorized": "alertbridge_github_unauthorized_total",
        "AlertbridgeGitHubRateLimited": "alertbridge_github_ratelimit_remaining",
        "AlertbridgeSlackNoticesFailing": "alertbridge_janitor_notices_total",
        "AlertbridgeJanitorSweepFailing": "alertbridge_janitor_sweeps_total",
        "AlertbridgeConfigReloadFailed": "alertbridge_config_last_reload_successful",
        "AlertbridgeNoLeader": "alertbridge_leader_election_is_leader",
        "AlertbridgeDown": "up",
        "AlertbridgeAbsent": "up",
    }
    for name, metric in wanted.items():
        check(name in exprs, "alert %s exists" % name, sorted(exprs))
        check(metric in metric_names(exprs[name]), "%s uses %s" % (name, metric), exprs[name])
    check(re.search(r'up\{job="alertbridge"\}\s*==\s*0', exprs["AlertbridgeDown"]),
          "AlertbridgeDown is up{job=...} == 0", exprs["AlertbridgeDown"])
    check(exprs["AlertbridgeAbsent"].startswith("absent("), "AlertbridgeAbsent uses absent()",
          exprs["AlertbridgeAbsent"])


@run.case
def every_alert_has_a_firing_and_a_silent_promtool_test():
    tests = load_yaml(RULES_TEST)
    check(tests.get("rule_files") == ["../alertbridge-rules.yml"], "the test file loads the rules",
          tests.get("rule_files"))
    fires, silent = set(), set()
    for t in tests["tests"]:
        for a in t.get("alert_rule_test", []):
            (fires if a.get("exp_alerts") else silent).add(a["alertname"])
    names = {a["alert"] for a in alerting_rules()}
    eq(sorted(names - fires), [], "alerts without a promtool case where they fire")
    eq(sorted(names - silent), [], "alerts without a promtool case where they stay silent")


# ---- the dashboard -------------------------------------------------------------------------

@run.case
def dashboard_is_schema_39_with_a_datasource_variable_every_panel_uses():
    d = dashboard()
    check(37 <= d.get("schemaVersion", 0) <= 41, "schemaVersion about 39", d.get("schemaVersion"))
    for key, kind in (("title", str), ("uid", str), ("panels", list), ("templating", dict),
                      ("time", dict), ("tags", list)):
        check(isinstance(d.get(key), kind), "dashboard.%s is a %s" % (key, kind.__name__),
              d.get(key))
    check(d.get("id") is None, "no instance-specific id (importable anywhere)", d.get("id"))
    variables = {v["name"]: v for v in d["templating"]["list"]}
    ds = variables.get("datasource")
    check(ds is not None and ds["type"] == "datasource" and ds["query"] == "prometheus",
          "a ${datasource} variable of type datasource (prometheus)", ds)
    want_ds = {"type": "prometheus", "uid": "${datasource}"}
    problems, ids = [], set()
    for p in all_panels(d):
        title = p.get("title", "?")
        if p.get("id") in ids:
            problems.append("%s: id %s used twice" % (title, p.get("id")))
        ids.add(p.get("id"))
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("h", "w", "x", "y")) or \
                g.get("x", 0) + g.get("w", 0) > 24:
            problems.append("%s: bad gridPos %r" % (title, g))
        if p["type"] == "row":
            continue
        if p.get("datasource") != want_ds:
            problems.append("%s: datasource %r" % (title, p.get("datasource")))
        if not p.get("targets"):
            problems.append("%s: no query" % title)
        for t in p.get("targets", []):
            if t.get("datasource") != want_ds:
                problems.append("%s %s: datasource %r" % (title, t.get("refId"),
                                                          t.get("datasource")))
            if not t.get("expr", "").strip():
                problems.append("%s %s: empty expr" % (title, t.get("refId")))
    for v in d["templating"]["list"]:
        if v["type"] == "query" and v.get("datasource") != want_ds:
            problems.append("variable %s: datasource %r" % (v["name"], v.get("datasource")))
    check(not problems, "panels:\n    " + "\n    ".join(problems))
    titles = [p.get("title", "") for p in all_panels(d)]
    missing = [what for what, rx in WANTED_PANELS if not any(re.search(rx, t) for t in titles)]
    eq(missing, [], "panels issue 8 asks for that the dashboard lacks")
    event("%d panels" % len(titles))


# ---- PromQL --------------------------------------------------------------------------------

@run.case
def metric_name_extraction_self_test():
    eq(metric_names('histogram_quantile(0.9, sum by (le) (rate(a_bucket{x="y", z=~"w|v"}[5m])))'
                    ' / on (job) group_left (version) b:ratio > bool 1e3 unless c offset 5m'),
       {"a_bucket", "b:ratio", "c"}, "names of a mixed expression")
    eq(metric_names('time() - (x{job=~"$job"} > 0) and ignoring (result) y[10m:1m]'),
       {"x", "y"}, "names beside functions and subqueries")
    eq(metric_names('absent(up{job="alertbridge"}) or vector(0)'), {"up"}, "absent/vector")


@run.case
def every_expression_parses_with_promtool():
    check(shutil.which("promtool") is not None, "promtool installed (apt-get install prometheus)")
    exprs = rule_exprs() + dashboard_exprs(dashboard())
    ok, out = promtool_check(exprs)
    check(ok, "promtool check rules accepts all %d expressions" % len(exprs),
          out + "\n" + "\n".join("%d %s: %s" % (i, w, e) for i, (w, e) in enumerate(exprs)))
    event("promtool: %s" % out.strip().splitlines()[-1].strip())
    # The check must be able to fail: a dangling operator.
    ok, out = promtool_check([("broken", "sum(rate(alertbridge_webhook_requests_total[5m])) /")])
    check(not ok, "promtool rejects a broken expression (self-test)", out)


# ---- the names /metrics exposes ------------------------------------------------------------

class Stack:
    """alertbridge with the bridge, the janitor and leader election against the fakes."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ab-selfmon-")
        self.gh = FakeGitHub(token="gh-token", repos=("acme/alerts",)).start()
        self.kube = FakeKube(token="kube-token", namespaces=("default", "ml", "alertbridge"))
        self.kube.start()
        self.slack = FakeSlack(token="xoxb-slack").start()
        self.kube.write_kubeconfig(os.path.join(self.dir, "kubeconfig"), namespace="ml")
        self.port, self.url, self.config = service_config(
            self.dir,
            "github: {api_url: %s, token_file: github-token, content_per_minute: 80,"
            " timeout: 5s}\n"
            "receivers:\n"
            "  - {name: default, repo: acme/alerts}\n" % self.gh.url +
            janitor_head() +
            "  policies:\n"
            "    - {alertname: JanitorIdleGPUPod, grace: 1h, notice_lead: 1s}\n"
            "  slack: {api_url: %s, bot_token_file: slack-token, "
            "default_channel: \"#gpu\", owner_label: owner}\n"
            # janitor.leader_election: the deprecated alias, kept here on purpose
            "  leader_election: {enabled: true, namespace: alertbridge, "
            "lease_name: alertbridge, identity: selfmon-0}\n" % self.slack.api_url,
            (("webhook-token", "hook"), ("github-token", "gh-token"),
             ("slack-token", "xoxb-slack")))
        self.ab = None

    def start(self):
        check(os.access(BIN, os.X_OK), "alertbridge binary at %s (set ALERTBRIDGE_BIN)" % BIN)
        self.ab = start_alertbridge(BIN, self.config, self.dir, self.url)
        return self

    def post(self, path, payload):
        status, _, body = http("POST", self.url + path, payload,
                               headers={"Authorization": "Bearer hook"})
        eq(status, 200, "POST %s answered 200 (%s)" % (path, body))

    def metrics(self):
        status, _, body = http("GET", self.url + "/metrics")
        eq(status, 200, "GET /metrics")
        return body.decode() if isinstance(body, bytes) else body

    def stop(self):
        stop_all((lambda: self.ab and self.ab.stop(), self.gh.stop, self.kube.stop,
                  self.slack.stop), self.dir)


def exposed_names(text):
    return {re.match(r"[a-zA-Z_:][\w:]*", line).group(0)
            for line in text.splitlines() if line and not line.startswith("#")}


def sample(text, series):
    """The value of one exposed series (exact name and labels), or None."""
    m = re.search(r"^%s (\S+)$" % re.escape(series), text, re.M)
    return float(m.group(1)) if m else None


def bridge_alert(fp, labels=None):
    return {"fingerprint": fp, "status": "firing",
            "labels": dict({"alertname": "DiskFull", "instance": fp}, **(labels or {})),
            "annotations": {"summary": "disk full"}, "startsAt": iso_ms(time.time() - 60)}


def janitor_alert(fp, pod, labels=None):
    lab = {"alertname": "JanitorIdleGPUPod", "namespace": "ml", "severity": "info"}
    if pod:
        lab["pod"] = pod
    lab.update(labels or {})
    return {"fingerprint": fp, "status": "firing", "labels": lab,
            "annotations": {"summary": "idle"}, "startsAt": iso_ms(time.time() - 60)}


@run.case
def every_metric_the_rules_and_dashboard_use_is_exposed():
    s = Stack()
    try:
        s.start()
        event("alertbridge ready (leader) on %s" % s.url)
        text = s.metrics()
        eq(sample(text, "alertbridge_leader_election_is_leader"), 1.0, "the leader's gauge")
        eq(sample(text, "alertbridge_bridge_queue_oldest_event_timestamp_seconds"), 0.0,
           "oldest event of an empty queue")
        # An issue.
        first = webhook_payload("default", [bridge_alert("f0000000000000a1")])
        s.post("/v1/webhook", first)
        poll(lambda: len(s.gh.issues("acme/alerts")) == 1, "the issue is created", TIMEOUT_S)
        s.post("/v1/webhook", first)  # Alertmanager's repeat: stored already
        poll(lambda: sample(s.metrics(), 'alertbridge_bridge_issues{state="open"}') == 1.0,
             "alertbridge_bridge_issues counts the open issue", TIMEOUT_S)
        # A token GitHub rejects once (401: the event is kept and retried after a backoff):
        # the queue's oldest event is the one waiting, then the queue drains.
        s.gh.add_fault(method="POST", path=r"/repos/acme/alerts/issues", status=401,
                       body={"message": "Bad credentials"})
        t0 = time.time()
        s.post("/v1/webhook", webhook_payload("default", [bridge_alert("f0000000000000a2")]))
        oldest = poll(lambda: sample(s.metrics(),
                                     "alertbridge_bridge_queue_oldest_event_timestamp_seconds")
                      or None, "a waiting event's receipt time", TIMEOUT_S)
        check(t0 - 2 <= oldest <= time.time() + 1, "the oldest event's time is its receipt",
              (t0, oldest))
        poll(lambda: len(s.gh.issues("acme/alerts")) == 2, "the retry creates it", TIMEOUT_S)
        eq(sample(s.metrics(), "alertbridge_github_unauthorized_total"), 1.0, "the 401 counted")
        poll(lambda: sample(s.metrics(),
                            "alertbridge_bridge_queue_oldest_event_timestamp_seconds") == 0.0,
             "the drained queue's oldest event time is 0 again", TIMEOUT_S)
        # A dead letter (422) and an alert invalid at intake.
        s.gh.add_fault(method="POST", path=r"/repos/acme/alerts/issues", status=422,
                       body={"message": "Validation Failed"})
        s.post("/v1/webhook", webhook_payload("default", [
            bridge_alert("f0000000000000a3"),
            bridge_alert("f0000000000000a4", {"alertbridge_repo": "not a repo"})]))
        poll(lambda: "alertbridge_bridge_dead_letters_total{" in s.metrics(),
             "the 422 is dead-lettered", TIMEOUT_S)
        # A marked pod, its Slack notice, sweeps; an alert without its pod label.
        s.kube.add_pod("ml", "trainer", labels={"owner": "#ml-team"})
        s.post("/v1/janitor/webhook", webhook_payload("janitor", [
            janitor_alert("f0000000000000b1", "trainer"),
            janitor_alert("f0000000000000b2", None)]))
        poll(lambda: 'alertbridge_janitor_notices_total{result="sent"}' in s.metrics(),
             "the notice is sent", TIMEOUT_S)
        poll(lambda: (sample(s.metrics(), 'alertbridge_janitor_sweeps_total{result="ok"}') or 0)
             >= 1, "a sweep succeeded", TIMEOUT_S)
        text = s.metrics()
        exposed = exposed_names(text)
        event("/metrics exposes %d names" % len(exposed))
        used = {}
        for where, expr in rule_exprs() + dashboard_exprs(dashboard()):
            for n in metric_names(expr):
                used.setdefault(n, []).append(where)
        missing = sorted(n for n in used if n not in exposed | SYNTHETIC)
        check(not missing, "names the rules and dashboard use but /metrics lacks:\n    " +
              "\n    ".join("%s (%s)" % (n, ", ".join(used[n][:3])) for n in missing))
        unused = sorted(n for n in exposed if n.startswith("alertbridge_") and n not in used)
        event("%d names used, all exposed; exposed but unused: %s"
              % (len(used), ", ".join(unused) or "none"))
    except Exception:
        if s.ab is not None:
            print_tail("alertbridge log (last 60 lines)", s.ab.tail(60))
        raise
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(run.run())
