"""harness_data.py - what the integration tests hand alertbridge and read back (Python 3 stdlib
only; harness.py re-exports all of it, so tests import it from there).

Handed over: Alertmanager's alerts and version-4 webhook bodies (as Prometheus and Alertmanager
send them: RFC 3339 times with milliseconds), and the files of a test's alertbridge (its
alertbridge.yml, token and template files).  Read back: the hidden key marker of an issue's
body, rows of the service's sqlite database, and one series of its /metrics text.
"""

import os
import re
import sqlite3
import time

# ----- handed over: alerts and webhooks ------------------------------------------------------

def iso_ms(ts):
    """RFC 3339 UTC with milliseconds, as Prometheus sends to Alertmanager."""
    import datetime
    d = datetime.datetime.fromtimestamp(ts, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def prom_alert(name, starts, status="firing", ends=None, **labels):
    """An alert as Prometheus sends it to Alertmanager's API: named name, label pod
    p-<name in lower case> and labels, started at starts (epoch seconds), ended at ends (None:
    not yet); its fingerprint a hash of name, the same in every run."""
    fp = "%016x" % (sum(ord(c) * 131 ** i for i, c in enumerate(name)) % (1 << 63))
    return {"status": status, "fingerprint": fp,
            "labels": dict({"alertname": name, "pod": "p-" + name.lower()}, **labels),
            "annotations": {"summary": "%s fires" % name},
            "startsAt": iso_ms(starts),
            "endsAt": iso_ms(ends) if ends else "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus.example/graph"}


def numbered_alert(prefix, base, n, repo=None):
    """Firing alert number n of a test's, for webhook_payload(): alertname <prefix><n>,
    fingerprint base + n (16 hex digits), summary "alert <n>", started a minute ago; repo
    (optional): its label alertbridge_repo, which a receiver's repo template may route by."""
    labels = {"alertname": "%s%d" % (prefix, n)}
    if repo:
        labels["alertbridge_repo"] = repo
    return {"status": "firing", "fingerprint": "%016x" % (base + n), "labels": labels,
            "annotations": {"summary": "alert %d" % n}, "startsAt": iso_ms(time.time() - 60)}


def resolved(alert):
    """The same alert, resolved: endsAt a second ago (as Prometheus sends a resolution)."""
    r = dict(alert)
    r["endsAt"] = iso_ms(time.time() - 1)
    return r


def webhook_payload(receiver, alerts, status=None):
    """An Alertmanager version-4 webhook body for alerts (each {fingerprint, status, labels,
    annotations, startsAt, endsAt}), with the group fields Alertmanager fills in."""
    common = dict(alerts[0]["labels"])
    for a in alerts[1:]:
        common = {k: v for k, v in common.items() if a["labels"].get(k) == v}
    if status is None:
        status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    full = []
    for a in alerts:
        x = {"status": a["status"], "labels": a["labels"],
             "annotations": a.get("annotations", {}), "startsAt": a["startsAt"],
             "endsAt": a.get("endsAt", "0001-01-01T00:00:00Z"),
             "generatorURL": "http://prometheus.example:9090/graph?g0.expr=up",
             "fingerprint": a["fingerprint"]}
        full.append(x)
    return {"receiver": receiver, "status": status, "alerts": full,
            "groupLabels": {"alertname": common.get("alertname", "")},
            "commonLabels": common, "commonAnnotations": {},
            "externalURL": "http://127.0.0.1:9093", "version": "4",
            "groupKey": '{}:{alertname="%s"}' % common.get("alertname", ""),
            "truncatedAlerts": 0}


# ----- handed over: the files of a test's alertbridge ------------------------------------------

def write_file(directory, name, text):
    """Write text as the file name in directory; its path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_files(directory, files):
    """Write each (name, text) of files into directory, the text and a newline: tokens and
    templates as alertbridge reads them."""
    for name, text in files:
        with open(os.path.join(directory, name), "w") as f:
            f.write(text + "\n")


def config_head(port, log_level="debug"):
    """The first lines of a test's alertbridge.yml: listening on 127.0.0.1:port, the database
    alertbridge.db beside it, logs at log_level as logfmt, the webhook's token in
    webhook-token."""
    return ("listen_address: 127.0.0.1:%d\n"
            "database: alertbridge.db\n"
            "log: {level: %s, format: logfmt}\n"
            "webhook: {bearer_token_file: webhook-token}\n" % (port, log_level))


def write_config(directory, port, body, files=(), log_level="debug"):
    """Write files ((name, text) pairs, write_files()) into directory, then its
    alertbridge.yml: config_head(port, log_level) and body.  The config's path."""
    write_files(directory, files)
    path = os.path.join(directory, "alertbridge.yml")
    with open(path, "w") as f:
        f.write(config_head(port, log_level) + body)
    return path


def janitor_head(sweep_interval="1s"):
    """The first lines of a config's janitor section: enabled, live (not dry-run), on the
    kubeconfig file beside alertbridge.yml, sweeping every sweep_interval."""
    return ("janitor:\n"
            "  enabled: true\n"
            "  dry_run: false\n"
            "  kubernetes: {kubeconfig: kubeconfig}\n"
            "  sweep_interval: %s\n" % sweep_interval)


def slack_section(api_url, signing=True):
    """A janitor config's slack section: the fake Slack at api_url, its bot token in the file
    slack-token, the signing secret in slack-signing-secret (signing=False: none, so no "Keep
    until" button), default channel #gpu, each pod's owner in its label owner."""
    return ("  slack:\n"
            "    api_url: %s\n"
            "    bot_token_file: slack-token\n"
            "%s"
            "    default_channel: \"#gpu\"\n"
            "    owner_label: owner\n"
            % (api_url, "    signing_secret_file: slack-signing-secret\n" if signing else ""))


# The templates of a receiver with templates: {title: title.mustache, body: body.mustache}.
TEMPLATE_FILES = (("title.mustache", "{{labels.alertname}} on {{labels.pod}}"),
                  ("body.mustache", "{{annotations.summary}}\n"))


def delete_database(path):
    """Remove the sqlite database path with its -wal and -shm files (those that exist)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)


# ----- read back: issue markers, database rows, metrics ------------------------------------

def issue_key(issue):
    """The alert key of an issue, from the hidden marker its body ends with; None if none."""
    body = issue.get("body") or ""
    start = body.rfind("<!-- alertbridge:key=")
    if start < 0:
        return None
    end = body.find(" -->", start)
    return body[start + len("<!-- alertbridge:key="):end] if end > 0 else None


def issues_by_key(issues):
    """{key: [issue, ...]} of issues that carry alertbridge's marker."""
    out = {}
    for i in issues:
        k = issue_key(i)
        if k is not None:
            out.setdefault(k, []).append(i)
    return out


def last_acknowledged(deliveries):
    """{fingerprint: (status, startsAt, time)} of each alert's last webhook that got a 200,
    in the order the answers were recorded."""
    out = {}
    for d in sorted(deliveries, key=lambda d: d["time"]):
        if d["status"] != 200 or not isinstance(d["payload"], dict):
            continue
        for a in d["payload"].get("alerts", []):
            out[a["fingerprint"]] = (a["status"], a["startsAt"], d["time"])
    return out


def db_rows(db, sql, args=()):
    """The rows of one SQL statement on alertbridge's sqlite file, through a connection of the
    test's own (WAL: it reads while the service writes)."""
    con = sqlite3.connect(db, timeout=5)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def event_of(db, key):
    """(state, last_error) of the newest event of key in the database file db, or None."""
    r = db_rows(db, "SELECT state, last_error FROM events WHERE key = ? ORDER BY id DESC LIMIT 1",
                (key,))
    return r[0] if r else None


def event_state(db, key):
    """The state of key's newest event in the database file db; "" when it has none."""
    return (event_of(db, key) or ("",))[0]


def metric_sample(text, name, labels=None):
    """The value of the series name{labels} in text, a /metrics answer (labels: the text
    between the braces, as exposed; None: the series without labels); None when absent."""
    sel = "" if labels is None else r"\{%s\}" % re.escape(labels)
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), sel), text, re.M)
    return float(m.group(1)) if m else None
