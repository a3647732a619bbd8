#!/usr/bin/env python3
# run.sh: weight 2
"""test_config_reference.py - the configuration reference (issue 20): `alertbridge check-config
--reference` prints exactly docs/configuration.md (`make docs` writes it again); every key of a
configuration that sets every section, as written and as check-config dumps it back, has its row
in the reference; every key the reference names is one the loader accepts (a key outside it is
"unknown key"); --reference is in check-config's usage.  Every process on 127.0.0.1, bounded in
time."""

import json
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Runner, check, eq  # noqa: E402
from harness import temp_dir, write_file  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(os.environ.get("ALERTBRIDGE_BIN", os.path.join(SRC, "alertbridge")))
DOC = os.path.join(SRC, "docs", "configuration.md")
TMP = temp_dir("ab-cfgref-")
runner = Runner()

# A bcrypt hash in the form web.auth checks (htpasswd -nbBC 10 u p).
HASH = "$2y$10$" + "a" * 53


def ab(*args, timeout=20):
    p = subprocess.run([BIN] + list(args), cwd=TMP, capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def write(name, text):
    return write_file(TMP, name, text)


def reference():
    rc, out, err = ab("check-config", "--reference")
    eq(rc, 0, "check-config --reference exit code")
    return out


def reference_keys(text):
    """The key paths of the reference's rows: `receivers[].routes[].repo`, ..."""
    return set(re.findall(r"^\| `([^`]+)` \|", text, re.M))


def key_paths(node, prefix=""):
    """Every key path of a parsed YAML document, list items as []."""
    out = set()
    if isinstance(node, dict):
        for k, v in node.items():
            path = "%s.%s" % (prefix, k) if prefix else str(k)
            out.add(path)
            out |= key_paths(v, path)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict):
                out |= key_paths(item, prefix + "[]")
    return out


# Mappings whose keys are data (user names, namespaces), not keys of the schema.
DATA_MAPS = ("web.auth.basic_auth_users", "janitor.slack.namespace_channels")


def schema_keys(paths):
    return {p for p in paths if not any(p.startswith(d + ".") for d in DATA_MAPS)}


def as_row(path, rows):
    """path as the reference writes its row: a list of records is `key[]`."""
    return path + "[]" if path + "[]" in rows else path


def full_config():
    """A configuration that sets a key of every mapping and every record."""
    secret = write("secret", "s3cret\n")
    tmpl = write("title.mustache", "{{labels.alertname}}\n")
    key = os.path.join(TMP, "app.pem")
    app = ""
    if shutil.which("openssl") and subprocess.run(
            ["openssl", "genrsa", "-out", key, "2048"], capture_output=True,
            timeout=60).returncode == 0:
        app = "  app: {app_id: 1, installation_id: 2, private_key_file: %s}\n" % key
    return write("full.yml", """\
listen_address: 127.0.0.1:9095
database: ab.db
database_retention: 3d
database_statement_timeout: 4s
log: {level: warn, format: json}
webhook:
  basic_auth: {username: am, password_file: %(s)s}
  tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem}
  max_body_bytes: 1000
  max_alerts: 10
  max_connections: 5
  read_timeout: 20s
  read_header_timeout: 5s
  max_connections_per_ip: 2
  threads: 2
web:
  auth: {basic_auth_users: {alice: "%(h)s"}}
  public_listen_address: 127.0.0.1:9096
  public_tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem}
github:
  api_url: https://github.example/api/v3
%(app)s  credentials:
  - {owner: other-org, token_file: %(s)s}
  content_per_minute: 10
  content_per_hour: 100
  timeout: 5s
  body_update_interval: 2m
  dry_run: true
  webhook_secret_file: %(s)s
alertmanager:
  url: http://127.0.0.1:9093
  basic_auth: {username: ab, password_file: %(s)s}
  timeout: 3s
  max_silence: 2d
receivers:
- name: team
  repo: org/alerts
  issue_per: group
  labels: [alert]
  assignees: [someone]
  auto_close: false
  reopen_window: 1d
  templates: {title: %(t)s, body: %(t)s, refire: %(t)s, resolve: %(t)s, reopen: %(t)s}
  storm: {enabled: true, storm_after: 5m}
  routes:
  - matchers: ['team="db"']
    repo: org/db
    labels: [db]
    assignees: [dba]
    templates: {title: %(t)s, body: %(t)s, refire: %(t)s, resolve: %(t)s, reopen: %(t)s}
  alertmanager:
    url: http://127.0.0.1:9094
    bearer_token_file: %(s)s
    timeout: 2s
    max_silence: 1d
janitor:
  enabled: true
  dry_run: true
  kubernetes: {context: ctx}
  exclude_namespaces: [kube-system, monitoring]
  sweep_interval: 2m
  max_deletions_per_sweep: 3
  notice_batch_window: 10s
  policies:
  - alertname: Idle
    grace: 12h
    notice_lead: 1h
    reminder_before: 20m
    owned: scale-to-zero
    message: hello
    postpone_by: 6h
    max_postpones: 2
    max_lifetime: 30d
  slack:
    api_url: https://slack.example/api
    bot_token_file: %(s)s
    signing_secret_file: %(s)s
    default_channel: "#ops"
    owner_label: owner
    namespace_channels: {default: "#default"}
leader_election:
  enabled: true
  namespace: ns
  lease_name: lease
  lease_duration: 20s
  identity: me
""" % {"s": secret, "t": tmpl, "h": HASH, "app": app})


@runner.case
def reference_equals_docs_configuration_md():
    out = reference()
    with open(DOC) as f:
        doc = f.read()
    if out != doc:
        got, want = out.splitlines(), doc.splitlines()
        first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                     min(len(got), len(want)))
        check(False, "docs/configuration.md is what check-config --reference prints (run "
              "`make docs`); first difference at line %d" % (first + 1),
              "printed: %r\ncommitted: %r" % (got[first] if first < len(got) else None,
                                              want[first] if first < len(want) else None))


@runner.case
def reference_rows_are_complete():
    rows = reference_keys(reference())
    check(len(rows) > 100, "the reference has a row per key", len(rows))
    for path in ("listen_address", "receivers[]", "receivers[].routes[].matchers",
                 "janitor.policies[].reminder_before", "github.credentials[].app.app_id",
                 "web.auth.basic_auth_users"):
        check(path in rows, "row of %s" % path, sorted(rows))
    for line in reference().splitlines():
        if line.startswith("| `"):
            eq(line.count(" | "), 5, "six cells in " + line)
            check(not line.endswith("|  |"), "a description in " + line)


@runner.case
def every_key_of_a_full_config_in_the_reference():
    path = full_config()
    rc, out, err = ab("check-config", path)
    eq(rc, 0, "check-config of the full configuration:\n" + err)
    rows = reference_keys(reference())
    with open(path) as f:
        written = schema_keys(key_paths(yaml.safe_load(f)))
    dump = out[out.index("# effective configuration"):]
    dumped = schema_keys(key_paths(yaml.safe_load(dump)))
    check(len(dumped) > 90, "the dump of the full configuration has its keys", len(dumped))
    for p in sorted(written | dumped):
        check(as_row(p, rows) in rows, "key %s (%s) has a row in the reference" % (
            p, "written" if p in written else "dumped"), sorted(rows))


def nest(path):
    """A document setting path (its items as []) to null: {"a": [{"b": None}]}."""
    head, _, rest = path.partition(".")
    record = head.endswith("[]")
    key = head[:-2] if record else head
    value = nest(rest) if rest else None
    return {key: [value if value is not None else {}] if record else value}


@runner.case
def every_key_of_the_reference_accepted():
    """Each key named alone (null keeps its default): never "unknown key" (a check that
    needs another key may fail: only the walk of the keys is tested)."""
    rows = reference_keys(reference())
    for p in sorted(rows) + ["receivers[].no_such_key"]:
        cfg = write("one.yml", json.dumps(nest(p)) + "\n")
        rc, _, err = ab("check-config", cfg)
        if p.endswith("no_such_key"):
            check("unknown key" in err, "a key outside the reference is unknown", err)
        else:
            check("unknown key" not in err, "%s accepted by the loader" % p, err)


@runner.case
def reference_flag_in_usage():
    rc, out, _ = ab("check-config", "--help")
    eq(rc, 0, "check-config --help exit code")
    check("--reference" in out, "check-config --help names --reference", out)
    rc, _, err = ab("check-config", "--reference", "some.yml")
    eq(rc, 2, "--reference with a file is a usage error")
    check(err.startswith("usage: alertbridge check-config"), "usage on stderr", err)


sys.exit(runner.run())
