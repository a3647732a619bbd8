#!/usr/bin/env python3
# run.sh: weight 3
"""test_cli.py - the alertbridge command line as an admin uses it: --help of every command,
version, check-config (valid, and errors that name file, line and key), render over a real
Alertmanager payload, map list/show/forget on a database the service filled (dry-run), and
serve's SIGTERM exit code.  Every process on 127.0.0.1, bounded in time."""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Proc, Runner, check, eq, event, free_port, http, poll, wait_ready)  # noqa: E402
from harness import temp_dir, write_file  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC", os.getcwd())
BIN = os.environ.get("ALERTBRIDGE_BIN", os.path.join(SRC, "alertbridge"))
FIX = os.path.join(SRC, "tests", "fixtures", "alertmanager")
TMP = temp_dir("ab-cli-")
runner = Runner()


def ab(*args, cwd=TMP, timeout=20):
    p = subprocess.run([BIN] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def write(name, text):
    return write_file(TMP, name, text)


@runner.case
def help_for_every_command():
    rc, out, _ = ab("--help")
    eq(rc, 0, "alertbridge --help exit code")
    for word in ("serve", "check-config", "render", "map", "version", "--config.file",
                 "--web.listen-address", "GITHUB_TOKEN"):
        check(word in out, "main help mentions %s" % word, out)
    for cmd in ("serve", "check-config", "render", "map", "healthcheck"):
        rc, out, _ = ab(cmd, "--help")
        eq(rc, 0, "%s --help exit code" % cmd)
        check(out.startswith("usage: alertbridge %s" % cmd), "%s --help usage line" % cmd, out)
    _, out, _ = ab("check-config", "--help")
    check("--reference" in out, "check-config --help names --reference", out)
    rc, _, err = ab("frobnicate")
    eq(rc, 2, "unknown command exit code")
    check('unknown command "frobnicate"' in err, "unknown command named", err)
    rc, _, err = ab("serve", "--no-such-flag")
    eq(rc, 2, "unknown flag exit code")
    check('unknown flag "--no-such-flag"' in err, "unknown flag named", err)


VERSION_LINES = (r"^alertbridge version \S+ \(revision: (?:[0-9a-f]{12}(?:-dirty)?|unknown)\)$",
                 r"^  build date: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$",
                 r"^  compiler: +(gcc|clang) \d",
                 r"^  libmicrohttpd: +\d+\.\d+", r"^  libcurl: +\d+\.\d+\.\d+ \(GnuTLS/",
                 r"^  jansson: +2\.", r"^  sqlite: +3\.", r"^  libyaml: +0\.",
                 r"^  gnutls: +3\.", r"^  nettle: +3\.")


@runner.case
def version_prints_version():
    want_version = open(os.path.join(SRC, "VERSION")).read().strip()
    outs = []
    for spelling in (["version"], ["--version"]):
        rc, out, err = ab(*spelling)
        eq(rc, 0, "%s exit code (%s)" % (" ".join(spelling), err.strip()))
        check(out.startswith("alertbridge version %s " % want_version), "version line", out)
        lines = out.splitlines()
        eq(len(lines), len(VERSION_LINES), "%s: one line per item" % spelling[0])
        for pattern, line in zip(VERSION_LINES, lines):
            check(re.match(pattern, line), "%s line matches %s" % (spelling[0], pattern), line)
        outs.append(out)
    eq(outs[0], outs[1], "version and --version print the same")
    check("version" in ab("--help")[1] and "healthcheck" in ab("--help")[1],
          "main help names version and healthcheck")


@runner.case
def build_info_metric_and_healthcheck():
    port = free_port()
    cfg = write("build-info.yml", "listen_address: 127.0.0.1:%d\ndatabase: %s\n"
                "github: {dry_run: true}\nreceivers:\n  - name: r\n    repo: o/r\n"
                % (port, os.path.join(TMP, "build-info.db")))
    rc, _, err = ab("healthcheck", "--web.listen-address=127.0.0.1:%d" % port)
    eq(rc, 1, "healthcheck with nothing listening exits 1")
    check("healthcheck" in err, "healthcheck says why", err)
    rc, _, err = ab("healthcheck", "--web.listen-address=nonsense")
    eq(rc, 1, "healthcheck of an address without a port exits 1")
    rc, _, err = ab("healthcheck", "--config.file=" + os.path.join(TMP, "missing.yml"))
    eq(rc, 1, "healthcheck without a loadable config exits 1")
    check("missing.yml" in err, "healthcheck names the config it could not load", err)
    proc = Proc("alertbridge", [BIN, "serve", "--config.file=" + cfg],
                os.path.join(TMP, "build-info.log"), cwd=TMP).start()
    try:
        wait_ready(proc, "http://127.0.0.1:%d/-/ready" % port)
        _, out, _ = ab("version")
        version = re.match(r"alertbridge version (\S+) \(revision: (\S+)\)", out)
        date = re.search(r"build date: +(\S+)", out).group(1)
        compiler = re.search(r"compiler: +(.+)", out).group(1)
        status, _, text = http("GET", "http://127.0.0.1:%d/metrics" % port)
        eq(status, 200, "metrics")
        want = ('alertbridge_build_info{version="%s",revision="%s",build_date="%s",'
                'compiler="%s"} 1' % (version.group(1), version.group(2), date, compiler))
        check(want in text.splitlines(), "build_info series " + want,
              [l for l in text.splitlines() if "build_info" in l])
        check("# TYPE alertbridge_build_info gauge" in text, "build_info is a gauge")
        rc, _, err = ab("healthcheck", "--web.listen-address=127.0.0.1:%d" % port)
        eq(rc, 0, "healthcheck of the running service exits 0 (%s)" % err.strip())
        rc, _, err = ab("healthcheck", "--config.file=" + cfg)
        eq(rc, 0, "healthcheck by the config's listen_address exits 0 (%s)" % err.strip())
    finally:
        eq(proc.stop(), 0, "SIGTERM exits 0")


@runner.case
def check_config_valid_and_invalid():
    rc, out, err = ab("check-config", os.path.join(SRC, "deploy/examples/alertbridge.yml"))
    eq(rc, 0, "example config is valid: " + err)
    check(out.startswith("SUCCESS: "), "SUCCESS line", out)
    check("receivers:" in out and "my-org/cluster-alerts" in out, "effective config dumped", out)
    bad = write("bad.yml", "github:\n  dry_run: true\nreceivers:\n  - name: a\n"
                "    repo: o/r\n    issue_per: sometimes\n")
    rc, out, err = ab("check-config", bad)
    eq(rc, 1, "invalid config exit code")
    check("bad.yml:6: receivers[0].issue_per:" in err, "error names file, line and key", err)
    unknown = write("unknown.yml", "receivers:\n  - name: a\n    repo: o/r\n    colour: red\n")
    rc, _, err = ab("check-config", unknown)
    eq(rc, 1, "unknown key exit code")
    check("unknown.yml:4: receivers[0].colour: unknown key" in err, "unknown key named", err)
    tmpl = write("broken.mustache", "{{#labels}}never closed\n")
    broken = write("broken.yml", "receivers:\n  - name: a\n    repo: o/r\n"
                   "    templates: {title: broken.mustache}\n")
    rc, _, err = ab("check-config", broken)
    eq(rc, 1, "broken template exit code")
    check("receivers[0].templates.title" in err and tmpl in err, "template error names it", err)
    secret = write("secret.yml", "github:\n  token_file: /nonexistent/token\n"
                   "receivers:\n  - name: a\n    repo: o/r\n")
    rc, _, err = ab("check-config", secret)
    eq(rc, 1, "missing secret file exit code")
    check("github.token_file" in err and "/nonexistent/token" in err, "secret file named", err)


@runner.case
def render_over_a_real_payload():
    title = os.path.join(SRC, "templates", "issue_title.mustache")
    rc, out, err = ab("render", "--template=" + title,
                      "--payload=" + os.path.join(FIX, "03_group_of_3_firing.json"))
    eq(rc, 0, "render exit code: " + err)
    eq(out.splitlines(), ["[warning] HighLatency: HighLatency on api-0"] * 3, "three titles")
    t = write("t.mustache", "{{fingerprint}} {{labels.container}} <{{status}}>")
    rc, out, _ = ab("render", "--template=" + t, "--alert=1",
                    "--payload=" + os.path.join(FIX, "03_group_of_3_firing.json"))
    eq(out, "9329cd68b64d6724 proxy <firing>\n", "alert 1 only")
    bad = write("bad.json", '{"version": "3", "status": "firing"}')
    rc, _, err = ab("render", "--template=" + t, "--payload=" + bad)
    eq(rc, 1, "bad payload exit code")
    check("version" in err, "bad payload error names the field", err)
    rc, _, err = ab("render", "--template=" + t)
    eq(rc, 2, "missing --payload is a usage error")


@runner.case
def render_prints_what_is_sent_for_each_kind():
    """--as picks the kind's escaping: a title is one line, a body reads values as text."""
    with open(os.path.join(FIX, "01_single_firing.json")) as f:
        payload = json.load(f)
    payload["alerts"][0]["labels"]["team"] = "a|b\n@octocat \u202e"
    hostile = write("hostile.json", json.dumps(payload))
    t = write("team.mustache", "{{labels.team}} {{{labels.team}}}")
    rc, out, err = ab("render", "--template=" + t, "--payload=" + hostile)
    # {{x}} is one line; the title is then cut at a line break a {{{x}}} put in
    eq((rc, out), (0, "a|b @octocat  a|b\n"), "title: one line " + err)
    for flag in ("--as=body", "--html"):
        rc, out, err = ab("render", "--template=" + t, "--payload=" + hostile, flag)
        eq((rc, out), (0, "a\\|b<br>@\u2060octocat  a|b\n@octocat \u202e\n"),
           flag + ": markdown " + err)
    rc, _, err = ab("render", "--template=" + t, "--payload=" + hostile, "--as=html")
    eq(rc, 2, "unknown --as is a usage error")
    check("title, body or comment" in err, "--as error names the kinds", err)


@runner.case
def map_commands_on_a_served_database():
    port = free_port()
    db = os.path.join(TMP, "served.db")
    cfg = write("serve.yml", "listen_address: 127.0.0.1:%d\ndatabase: %s\n"
                "github: {dry_run: true}\nreceivers:\n  - name: alert-service\n"
                "    repo: my-org/alerts\n" % (port, db))
    proc = Proc("alertbridge", [BIN, "serve", "--config.file=" + cfg],
                os.path.join(TMP, "serve.log"), cwd=TMP).start()
    try:
        wait_ready(proc, "http://127.0.0.1:%d/-/ready" % port)
        with open(os.path.join(FIX, "03_group_of_3_firing.json"), "rb") as f:
            body = f.read()
        status, _, data = http("POST", "http://127.0.0.1:%d/v1/webhook" % port,
                               headers={"Content-Type": "application/json"}, raw=body)
        eq(status, 200, "webhook accepted")
        # An alert invalid at intake: a dead letter without a map row.
        bad = json.loads(body)
        bad["alerts"] = bad["alerts"][:1]
        bad["alerts"][0]["fingerprint"] = "dead00000000beef"
        bad["alerts"][0]["labels"]["alertbridge_repo"] = "not a repo"
        status, _, data = http("POST", "http://127.0.0.1:%d/v1/webhook" % port,
                               headers={"Content-Type": "application/json"},
                               raw=json.dumps(bad).encode())
        eq(status, 200, "webhook with an invalid alert accepted")
        # dry-run creates are paced 1 s apart like live ones: three take about 2 s
        poll(lambda: 'result="created"} 3' in http(
            "GET", "http://127.0.0.1:%d/metrics" % port)[2], "three dry-run creates",
            timeout_s=20)
        status, _, page = http("GET", "http://127.0.0.1:%d/" % port)
        eq(status, 200, "status page")
        check("04b8c13f54b78add" in page, "status page lists the alerts", page[:400])
    finally:
        eq(proc.stop(), 0, "SIGTERM exits 0")
    rc, out, err = ab("map", "list", "--database.path=" + db)
    eq(rc, 0, "map list: " + err)
    rows = {line.split()[1]: line.split() for line in out.splitlines()}
    eq(sorted(rows), ["04b8c13f54b78add", "9329cd68b64d6724", "98e2b6219b0e1a8d",
                      "dead00000000beef"], "map keys")
    # The same columns on every line: receiver, key, repo[#number] or "-", then
    # "(no issue)" when none, state (a dead letter's: its status), episode start.
    eq(rows["9329cd68b64d6724"][:5],
       ["alert-service", "9329cd68b64d6724", "my-org/alerts", "(no", "issue)"], "a row's columns")
    eq(rows["dead00000000beef"][:6] + rows["dead00000000beef"][7:8],
       ["alert-service", "dead00000000beef", "-", "(no", "issue)", "firing", "dead:"],
       "a dead letter's columns")
    for key in ("9329cd68b64d6724", "dead00000000beef"):
        check(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", rows[key][6]),
              "the episode start in the 7th column", rows[key])
    rc, out, _ = ab("map", "show", "9329cd68b64d6724", "--database.path=" + db)
    eq(rc, 0, "map show")
    check("repo:              my-org/alerts" in out and "state:             open" in out,
          "map show fields", out)
    rc, _, err = ab("map", "forget", "9329cd68b64d6724", "--database.path=" + db)
    eq(rc, 2, "forget without --receiver is a usage error")
    rc, out, _ = ab("map", "forget", "9329cd68b64d6724", "--receiver=alert-service",
                    "--database.path=" + db)
    eq(rc, 0, "map forget")
    rc, out, _ = ab("map", "list", "--database.path=" + db)
    eq(len(out.splitlines()), 3, "two rows left, and the dead letter")
    rc, _, err = ab("map", "show", "9329cd68b64d6724", "--database.path=" + db)
    eq(rc, 1, "show of a forgotten key fails")
    rc, _, err = ab("map", "list", "--database.path=" + os.path.join(TMP, "none.db"))
    eq(rc, 1, "a missing database is an error, not a new file")
    check(not os.path.exists(os.path.join(TMP, "none.db")), "no database created by map")



@runner.case
def database_path_uri_checked_as_config():
    """--database.path gets check-config's test of a PostgreSQL URI: no password in it (never
    echoed), well formed for libpq; exit 2 before anything is opened."""
    for uri in ("postgres://ab:hunter2@127.0.0.1:1/x",
                "postgres://ab@127.0.0.1:1/x?password=hunter2"):
        for cmd in (["map", "list"], ["serve"], ["janitor", "sweep", "--once"]):
            rc, out, err = ab(*cmd, "--database.path=" + uri)
            eq(rc, 2, "%s with a password in --database.path" % " ".join(cmd))
            check("database_password_file" in err, "says where the password goes", err)
            check("hunter2" not in err + out, "the password never printed", err)
    rc, _, err = ab("map", "list", "--database.path=postgres://[bad")
    eq(rc, 2, "a malformed URI")
    check("not a valid PostgreSQL URI" in err, "libpq's reason", err)


sys.exit(runner.run())
