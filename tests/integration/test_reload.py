#!/usr/bin/env python3
# run.sh: weight 9
"""test_reload.py - reload with Prometheus' semantics (issue 8 item 1).

The real binary against the fake GitHub:
- under a steady webhook load (a bounded loop of posts from a thread), reloads by SIGHUP and by
  POST /-/reload lose and duplicate nothing: every alert has exactly one issue, every resolved
  alert exactly one comment;
- a broken file (a YAML syntax error, then an invalid value) keeps the running config: the
  reload fails with the file:line in the log; /-/reload's 500 says only "reload failed, see the
  log" (issue 19 item 8: the answer says less than the log), the gauge
  alertbridge_config_last_reload_successful is 0; a fixed file reloads, the gauge is 1 and the
  success timestamp newer;
- a changed label and title template show in the next created issue;
- a changed listen_address is logged as needing a restart; the old listener still serves;
- --config.auto-reload-interval picks up a ConfigMap-style update (a swapped symlink) with no
  signal;
- a rotated GitHub token file is used after a reload, with no restart;
- /-/reload is 403 without --web.enable-lifecycle, 405 for GET, 401 without the webhook token;
  PUT reloads as POST does (Prometheus' web.go registers both); with web.auth users and no
  webhook credentials it wants an admin (issue 19 item 8: it was open), and with both, either;
- a bad --config.auto-reload-interval is a usage error (exit 2).

Env: ALERTBRIDGE_BIN (default ./alertbridge).  Last line "N passed, N failed".
"""

import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, eq, event, http, iso_ms, poll,  # noqa: E402
                     print_tail, webhook_payload)

REPO = "acme/alerts"
TOKEN = "ghs_reloadToken0123456789"
RECEIVER = "bridge"

run = Runner()
# One second of the bridge's pacing lasts 20 ms (serve --test.second-ms, cmd/serve.c
# test_second()), so the load's creates, comments and closes drain in seconds.
SECOND_MS_FLAG = "--test.second-ms=20"


def write(path, text):
    """Replace path's contents at once (a rename), as an editor or a ConfigMap update does."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# oncall : "correct horse battery staple", bcrypt cost 4 (cheap for a test).
ADMIN_HASH = "$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG"
ADMIN = "Basic " + base64.b64encode(b"oncall:correct horse battery staple").decode()


def config(ab, gh, label="v1", listen_port=None, extra_receiver="", title_file="title.mustache",
           hook=True, admins=False):
    head = ("listen_address: 127.0.0.1:%d\n"
            "database: alertbridge.db\n"
            "log: {level: info, format: logfmt}\n" % (listen_port or ab.port))
    if hook:
        head += "webhook:\n  bearer_token_file: webhook-token\n"
    if admins:
        head += "web:\n  auth:\n    basic_auth_users:\n      oncall: \"%s\"\n" % ADMIN_HASH
    return head + ("github:\n"
                   "  api_url: %s\n"
                   "  token_file: github-token\n"
                   "  content_per_minute: 80\n"
                   "  timeout: 5s\n"
                   "  dry_run: false\n"
                   "receivers:\n"
                   "  - name: %s\n"
                   "    repo: %s\n"
                   "    labels: [\"%s\"]\n"
                   "    templates:\n"
                   "      title: %s\n"
                   "%s"
                   "janitor:\n"
                   "  enabled: false\n"
                   % (gh.url, RECEIVER, REPO, label, title_file, extra_receiver))


def setup(tmp, gh, *flags, title="v1 {{alertname}}", **cfg):
    ab = Alertbridge(tmp, gh.url, TOKEN, REPO, receiver=RECEIVER)
    write(os.path.join(tmp, "title.mustache"), title)
    write(ab.config, config(ab, gh, **cfg))
    ab.start(flags=[SECOND_MS_FLAG] + list(flags))
    return ab


def alert(name, fp, status="firing"):
    return {"status": status, "fingerprint": fp, "labels": {"alertname": name},
            "annotations": {"summary": name}, "startsAt": iso_ms(time.time() - 60),
            "endsAt": iso_ms(time.time()) if status == "resolved" else "0001-01-01T00:00:00Z"}


def post(ab, a):
    st, _, body = ab.post(webhook_payload(RECEIVER, [a]))
    return st, body


def reload_http(ab, token=None):
    headers = {"Authorization": "Bearer " + (token or ab.hook_token)}
    return http("POST", ab.url + "/-/reload", raw=b"", headers=headers)


def gauge(ab, name):
    _, _, text = http("GET", ab.url + "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def ok_gauge(ab):
    return gauge(ab, "alertbridge_config_last_reload_successful")


def ts_gauge(ab):
    return gauge(ab, "alertbridge_config_last_reload_success_timestamp_seconds")


def log_lines(ab, needle):
    with open(ab.log_path, encoding="utf-8", errors="replace") as f:
        return [ln for ln in f if needle in ln]


def issue_titled(gh, title):
    return [i for i in gh.issues(REPO) if i["title"] == title]


class Env:
    """A temp dir, a fake GitHub and an alertbridge; stopped and removed by close()."""

    def __init__(self, *flags, title="v1 {{alertname}}", **cfg):
        self.tmp = tempfile.mkdtemp(prefix="ab-reload-")
        self.gh = FakeGitHub(token=TOKEN, repos=[REPO]).start()
        self.ab = None
        self.ab = setup(self.tmp, self.gh, *flags, title=title, **cfg)

    def close(self, failed):
        if failed and self.ab:
            print_tail("alertbridge log", self.ab.tail(60))
        if self.ab and self.ab.alive():
            self.ab.stop()
        self.gh.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def with_env(*flags, **kw):
    def deco(fn):
        def case():
            env = Env(*flags, **kw)
            failed = True
            try:
                fn(env.ab, env.gh)
                failed = False
            finally:
                env.close(failed)
        case.__name__ = fn.__name__
        return case
    return deco


@run.case
@with_env("--web.enable-lifecycle")
def reload_under_load_loses_and_duplicates_nothing(ab, gh):
    n = 40
    results = []

    def load():
        for i in range(n):  # bounded: n firings, each resolved 8 posts later
            results.append(post(ab, alert("Load%d" % i, "%016x" % (0x10ad00 + i))))
            if i >= 8:
                j = i - 8
                results.append(post(ab, alert("Load%d" % j, "%016x" % (0x10ad00 + j),
                                              "resolved")))
            time.sleep(0.03)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    for k in range(6):  # three by SIGHUP, three by POST /-/reload, each a new label
        write(ab.config, config(ab, gh, label="load-%d" % k))
        if k % 2:
            st, _, body = reload_http(ab)
            eq(st, 200, "POST /-/reload #%d (%s)" % (k, body.strip()))
        else:
            ab.proc.p.send_signal(signal.SIGHUP)
        time.sleep(0.15)
    t.join(timeout=60)
    check(not t.is_alive(), "the load thread ended")
    eq(sorted(set(st for st, _ in results)), [200], "every webhook answered 200")
    eq(len(results), n + n - 8, "posts made")
    poll(lambda: len(log_lines(ab, "config reloaded")) >= 6, "six reloads logged", timeout_s=10)
    poll(lambda: len(gh.issues(REPO)) >= n, "%d issues" % n, timeout_s=60)
    closed = lambda: sum(1 for i in gh.issues(REPO) if i["state"] == "closed")  # noqa: E731
    poll(lambda: closed() >= n - 8, "%d resolved issues closed" % (n - 8), timeout_s=60)
    time.sleep(1)  # anything duplicated would show by now
    issues = gh.issues(REPO)
    titles = sorted(i["title"] for i in issues)
    eq(titles, sorted("v1 Load%d" % i for i in range(n)), "exactly one issue per alert")
    configured = {"v1"} | {"load-%d" % k for k in range(6)}
    used = set(lb["name"] for i in issues for lb in i["labels"])
    check(len(used) >= 2, "the reloads fell between the events (labels of several configs)",
          used)
    for i in issues:
        names = [lb["name"] for lb in i["labels"]]
        check(len(names) == 1 and names[0] in configured,
              "%s has the label of one config, not a mix" % i["title"], names)
        comments = [c["body"] for c in gh.comments(REPO, i["number"])]
        want = 1 if i["state"] == "closed" else 0
        eq(len(comments), want, "comments on %s" % i["title"])
    eq(ok_gauge(ab), 1.0, "alertbridge_config_last_reload_successful")


@run.case
@with_env("--web.enable-lifecycle")
def broken_file_keeps_the_running_config(ab, gh):
    eq(ok_gauge(ab), 1.0, "the gauge is 1 after start")
    ts0 = ts_gauge(ab)
    check(ts0 and abs(ts0 - time.time()) < 60, "the success timestamp is the start", ts0)
    good = config(ab, gh, label="old")
    write(ab.config, good)
    eq(reload_http(ab)[0], 200, "a valid reload")
    # A YAML syntax error on line 3.
    lines = good.splitlines(True)
    lines[2] = "log: {level: info, format: logfmt\n"
    write(ab.config, "".join(lines))
    ab.proc.p.send_signal(signal.SIGHUP)
    poll(lambda: log_lines(ab, "config reload failed"), "the failure logged", timeout_s=10)
    line = log_lines(ab, "config reload failed")[-1]
    check("alertbridge.yml:" in line and re.search(r"alertbridge\.yml:\d+:", line),
          "the log names file:line", line)
    check("trigger=SIGHUP" in line, "the log names the trigger", line)
    eq(ok_gauge(ab), 0.0, "the gauge is 0 after a failed reload")
    # An invalid value, by HTTP: 500, and the file:line and key only in the log (the answer
    # goes to whoever reaches the port).
    lines = good.splitlines(True)
    lines = [ln.replace("content_per_minute: 80", "content_per_minute: 81") for ln in lines]
    write(ab.config, "".join(lines))
    st, _, body = reload_http(ab)
    eq(st, 500, "POST /-/reload of an invalid value")
    eq(body, "reload failed, see the log\n", "the 500 says less than the log")
    poll(lambda: any(re.search(r"alertbridge\.yml:9: github\.content_per_minute", ln)
                     and "trigger=http" in ln for ln in log_lines(ab, "config reload failed")),
         "the log names file:line and key", timeout_s=10)
    eq(ok_gauge(ab), 0.0, "the gauge stays 0")
    # The old config still runs: its label on the next issue.
    eq(post(ab, alert("StillOld", "00000000000000b1"))[0], 200, "a webhook while broken")
    poll(lambda: issue_titled(gh, "v1 StillOld"), "its issue", timeout_s=30)
    eq([lb["name"] for lb in issue_titled(gh, "v1 StillOld")[0]["labels"]], ["old"],
       "the running config's label")
    time.sleep(1.1)  # a new second for the timestamp
    write(ab.config, config(ab, gh, label="fixed"))
    ab.proc.p.send_signal(signal.SIGHUP)
    poll(lambda: ok_gauge(ab) == 1.0, "the gauge back to 1", timeout_s=10)
    check(ts_gauge(ab) > ts0, "a newer success timestamp", (ts0, ts_gauge(ab)))


@run.case
@with_env("--web.enable-lifecycle")
def changed_labels_and_template_apply(ab, gh):
    eq(post(ab, alert("Before", "00000000000000c1"))[0], 200, "webhook before")
    poll(lambda: issue_titled(gh, "v1 Before"), "the first issue", timeout_s=30)
    write(os.path.join(ab.dir, "title2.mustache"), "v2 {{alertname}} ({{receiver}})")
    write(ab.config, config(ab, gh, label="changed", title_file="title2.mustache"))
    eq(reload_http(ab)[0], 200, "reload")
    eq(post(ab, alert("After", "00000000000000c2"))[0], 200, "webhook after")
    poll(lambda: issue_titled(gh, "v2 After (bridge)"), "the new title", timeout_s=30)
    eq([lb["name"] for lb in issue_titled(gh, "v2 After (bridge)")[0]["labels"]], ["changed"],
       "the new label")
    # A template with a Mustache error fails the reload with its file named.
    write(os.path.join(ab.dir, "title2.mustache"), "v3 {{#alertname}}")
    st, _, body = reload_http(ab)
    eq(st, 500, "a broken template fails the reload")
    check("title2.mustache" not in body, "the answer does not name the file", body)
    poll(lambda: any("title2.mustache" in ln for ln in log_lines(ab, "config reload failed")),
         "the log names the template file", timeout_s=10)
    eq(post(ab, alert("Kept", "00000000000000c3"))[0], 200, "webhook after the failure")
    poll(lambda: issue_titled(gh, "v2 Kept (bridge)"), "the compiled template still used",
         timeout_s=30)


@run.case
@with_env("--web.enable-lifecycle")
def listen_address_needs_a_restart(ab, gh):
    other = ab.port + 1 if ab.port < 65000 else ab.port - 1
    write(ab.config, config(ab, gh, label="moved", listen_port=other))
    st, _, body = reload_http(ab)
    eq(st, 200, "the rest of the config applies (%s)" % body.strip())
    lines = log_lines(ab, "needs a restart")
    check(any("key=listen_address" in ln and ":%d" % other in ln for ln in lines),
          "listen_address logged as needing a restart", lines)
    eq(http("GET", ab.url + "/-/healthy")[0], 200, "the old listener still serves")
    eq(post(ab, alert("Moved", "00000000000000d1"))[0], 200, "webhook on the old port")
    poll(lambda: issue_titled(gh, "v1 Moved"), "its issue", timeout_s=30)
    eq([lb["name"] for lb in issue_titled(gh, "v1 Moved")[0]["labels"]], ["moved"],
       "the label changed with it")


@run.case
def auto_reload_picks_up_a_configmap_update():
    tmp = tempfile.mkdtemp(prefix="ab-reload-auto-")
    gh = FakeGitHub(token=TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, TOKEN, REPO, receiver=RECEIVER)
    failed = True
    try:
        # As a ConfigMap volume: alertbridge.yml -> ..data/alertbridge.yml, ..data -> ..v1.
        write(os.path.join(tmp, "title.mustache"), "v1 {{alertname}}")
        os.mkdir(os.path.join(tmp, "..v1"))
        write(os.path.join(tmp, "..v1", "alertbridge.yml"), config(ab, gh, label="cm-1"))
        os.symlink("..v1", os.path.join(tmp, "..data"))
        os.remove(ab.config)
        os.symlink("..data/alertbridge.yml", ab.config)
        ab.start(flags=[SECOND_MS_FLAG, "--config.auto-reload-interval=200ms"])
        os.mkdir(os.path.join(tmp, "..v2"))
        write(os.path.join(tmp, "..v2", "alertbridge.yml"), config(ab, gh, label="cm-2"))
        os.symlink("..v2", os.path.join(tmp, "..data_tmp"))
        os.replace(os.path.join(tmp, "..data_tmp"), os.path.join(tmp, "..data"))
        poll(lambda: log_lines(ab, "config reloaded"), "the auto reload logged", timeout_s=10)
        check("trigger=auto" in log_lines(ab, "config reloaded")[0], "by the poll",
              log_lines(ab, "config reloaded"))
        eq(post(ab, alert("Auto", "00000000000000e1"))[0], 200, "webhook")
        poll(lambda: issue_titled(gh, "v1 Auto"), "its issue", timeout_s=30)
        eq([lb["name"] for lb in issue_titled(gh, "v1 Auto")[0]["labels"]], ["cm-2"],
           "the new label")
        # A template file the config names is watched too.
        write(os.path.join(tmp, "title.mustache"), "v9 {{alertname}}")
        poll(lambda: len(log_lines(ab, "config reloaded")) >= 2, "the second reload",
             timeout_s=10)
        eq(post(ab, alert("Auto2", "00000000000000e2"))[0], 200, "webhook")
        poll(lambda: issue_titled(gh, "v9 Auto2"), "the new title", timeout_s=30)
        time.sleep(0.6)  # nothing changed: no more reloads
        eq(len(log_lines(ab, "config reloaded")), 2, "no reload without a change")
        failed = False
    finally:
        if failed:
            print_tail("alertbridge log", ab.tail(60))
        if ab.alive():
            ab.stop()
        gh.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@run.case
@with_env()
def rotated_token_is_used_after_reload(ab, gh):
    new = "ghs_rotatedToken9876543210"
    gh.set_token(new)
    write(os.path.join(ab.dir, "github-token"), new + "\n")
    eq(post(ab, alert("Rotated", "00000000000000f1"))[0], 200, "webhook")
    poll(lambda: any(r["status"] == 401 for r in gh.get_requests()),
         "GitHub refuses the old token", timeout_s=30)
    check(not gh.issues(REPO), "no issue with the old token")
    ab.proc.p.send_signal(signal.SIGHUP)
    poll(lambda: issue_titled(gh, "v1 Rotated"), "the issue, with the new token", timeout_s=60)
    # The webhook's own token file reloads too.
    write(ab.hook_file, "hook-rotated\n")
    ab.proc.p.send_signal(signal.SIGHUP)
    poll(lambda: len(log_lines(ab, "config reloaded")) >= 2, "the second reload", timeout_s=10)
    eq(post(ab, alert("OldHook", "00000000000000f2"))[0], 401, "the old webhook token")
    ab.hook_token = "hook-rotated"
    eq(post(ab, alert("NewHook", "00000000000000f3"))[0], 200, "the new webhook token")


@run.case
@with_env()
def lifecycle_endpoint_is_off_by_default(ab, gh):
    st, _, body = reload_http(ab)
    eq(st, 403, "POST /-/reload without --web.enable-lifecycle (%s)" % body.strip())
    eq(len(log_lines(ab, "config reloaded")), 0, "nothing reloaded")


@run.case
@with_env("--web.enable-lifecycle")
def lifecycle_endpoint_methods_and_auth(ab, gh):
    eq(http("GET", ab.url + "/-/reload")[0], 405, "GET /-/reload")
    eq(http("POST", ab.url + "/-/reload", raw=b"")[0], 401, "POST /-/reload without the token")
    eq(reload_http(ab, token="wrong")[0], 401, "POST /-/reload with a wrong token")
    eq(len(log_lines(ab, "config reloaded")), 0, "nothing reloaded")
    eq(reload_http(ab)[0], 200, "POST /-/reload with the webhook token")
    st, _, body = http("PUT", ab.url + "/-/reload", raw=b"",
                       headers={"Authorization": "Bearer " + ab.hook_token})
    eq(st, 200, "PUT /-/reload with the webhook token, as Prometheus (%s)" % body.strip())
    eq(http("PUT", ab.url + "/-/reload", raw=b"")[0], 401, "PUT /-/reload without the token")
    poll(lambda: len(log_lines(ab, "config reloaded")) >= 2, "two reloads", timeout_s=10)


@run.case
@with_env("--web.enable-lifecycle", hook=False, admins=True)
def lifecycle_endpoint_wants_an_admin_when_only_the_page_is_protected(ab, gh):
    # Issue 19 item 8: web.auth and no webhook credentials; /-/reload was open.
    st, hdrs, _ = http("POST", ab.url + "/-/reload", raw=b"")
    eq(st, 401, "POST /-/reload without credentials")
    check("Basic" in str(hdrs), "a Basic challenge", hdrs)
    eq(http("POST", ab.url + "/-/reload", raw=b"",
            headers={"Authorization": "Basic b25jYWxsOndyb25n"})[0], 401, "a wrong password")
    eq(http("PUT", ab.url + "/-/reload", raw=b"")[0], 401, "PUT without credentials")
    eq(len(log_lines(ab, "config reloaded")), 0, "nothing reloaded")
    eq(http("POST", ab.url + "/-/reload", raw=b"", headers={"Authorization": ADMIN})[0], 200,
       "POST /-/reload as a web.auth admin")
    poll(lambda: len(log_lines(ab, "config reloaded")) >= 1, "reloaded", timeout_s=10)


@run.case
@with_env("--web.enable-lifecycle", admins=True)
def lifecycle_endpoint_takes_the_token_or_an_admin(ab, gh):
    # Issue 18 item 12: the webhook's token only, the web.auth admins were refused.
    eq(http("POST", ab.url + "/-/reload", raw=b"", headers={"Authorization": ADMIN})[0], 200,
       "POST /-/reload as a web.auth admin")
    eq(reload_http(ab)[0], 200, "POST /-/reload with the webhook token")
    eq(reload_http(ab, token="wrong")[0], 401, "a wrong token")


@run.case
def bad_auto_reload_interval_is_a_usage_error():
    for v in ("abc", "0s", "-1m"):
        out = subprocess.run([ALERTBRIDGE, "serve", "--config.auto-reload-interval=" + v],
                             capture_output=True, text=True, timeout=10)
        eq(out.returncode, 2, "--config.auto-reload-interval=%s exits 2" % v)
        check("--config.auto-reload-interval" in out.stderr, "the message names the flag",
              out.stderr)
    out = subprocess.run([ALERTBRIDGE, "serve", "--help"], capture_output=True, text=True,
                         timeout=10)
    check("--web.enable-lifecycle" in out.stdout and "POST /-/reload" in out.stdout,
          "serve --help names the flags", out.stdout)


if __name__ == "__main__":
    event("reload tests")
    sys.exit(run.run())
