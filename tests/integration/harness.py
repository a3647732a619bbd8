"""harness.py - shared helpers for alertbridge's integration tests (Python 3 stdlib only).

A tiny test runner (named cases, a timeline of events in seconds since start, the closing
"N passed, N failed" line tests/run.sh reads), an HTTP client that never follows redirects,
bounded polling, loopback ports, and child processes that are always stopped (SIGTERM, then
SIGKILL after 5 s) with their logs kept for post-mortems.  What the tests hand alertbridge and
read back (payloads, config files, issue markers, database rows, /metrics samples) is in
harness_data.py, re-exported here.

Env (set by tests/run.sh for its valgrind stage):
  ALERTBRIDGE_WRAPPER   a command line (split like a shell's words, no expansion) put before
                        every Proc whose program is $ALERTBRIDGE_BIN, e.g. "valgrind -q ..."
  ALERTBRIDGE_SLOWDOWN  a factor >= 1 applied to every poll() timeout and to Proc.stop()'s
                        grace before SIGKILL, for binaries run that much slower (default 1)
"""

import atexit
import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

from harness_data import (  # noqa: F401 - the tests import these from harness
    TEMPLATE_FILES, config_head, db_rows, delete_database, event_of, event_state, iso_ms,
    issue_key, issues_by_key, janitor_head, last_acknowledged, metric_sample,
    numbered_alert, prom_alert, resolved, slack_section, webhook_payload, write_config,
    write_file, write_files)

T0 = time.time()
SLOWDOWN = max(1.0, float(os.environ.get("ALERTBRIDGE_SLOWDOWN") or 1))


def stamp():
    return "[%7.2fs]" % (time.time() - T0)


def event(msg):
    """One timeline line: seconds since the test file started, then what happened."""
    print("%s %s" % (stamp(), msg), flush=True)


class Failure(AssertionError):
    pass


def check(cond, what, got=None):
    if not cond:
        raise Failure(what if got is None else "%s (got: %s)" % (what, short(got)))


def eq(got, want, what):
    if got != want:
        raise Failure("%s:\n    want %s\n    got  %s" % (what, short(want), short(got)))


def short(v, limit=1500):
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return s if len(s) <= limit else s[:limit] + "...(%d more)" % (len(s) - limit)


class Checks:
    """The tally of a script of named checks on files, which runs no service (the deploy
    files', the source tree's): report() or skip() each check, end() prints the closing line
    "N passed, N failed" (and how many were skipped) and gives the exit code."""

    def __init__(self, max_problems=None):
        self.passed = self.failed = self.skipped = 0
        self.max_problems = max_problems  # problems printed per check (None: all)

    def report(self, name, problems):
        """problems: a list of strings; empty means the check passed."""
        if problems:
            self.failed += 1
            print("FAIL %s" % name)
            for p in problems[:self.max_problems]:
                print("     %s" % p)
        else:
            self.passed += 1
            print("ok   %s" % name)

    def skip(self, name, why):
        self.skipped += 1
        print("skip %s: %s" % (name, why))

    def guarded(self, errors, fn, *args):
        """fn(*args); an exception of the classes errors (a file it cannot read or parse)
        fails that check, named after fn, not the run."""
        try:
            return fn(*args)
        except errors as e:
            self.report(fn.__name__, ["%s: %s" % (type(e).__name__, e)])
            return None

    def end(self):
        if self.skipped:
            print("(%d skipped)" % self.skipped)
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


class Runner:
    """Runs named cases in order; a case is a function taking no arguments that raises on
    failure.  on_failure (optional) is called after a failing case (to print logs)."""

    def __init__(self):
        self.cases = []
        self.passed = 0
        self.failed = 0

    def case(self, fn):
        self.cases.append(fn)
        return fn

    def run(self, on_failure=None, only=None, after=None):
        """after (optional) runs once after the last case, before the closing line (to stop
        shared processes, whose log lines must not follow it)."""
        for fn in self.cases:
            name = fn.__name__
            if only and name not in only:
                continue
            event("RUN  %s" % name)
            try:
                fn()
            except Exception as e:  # a case's failure must never stop the others
                self.failed += 1
                event("FAIL %s: %s" % (name, e))
                if not isinstance(e, Failure):
                    traceback.print_exc(file=sys.stdout)
                if on_failure:
                    try:
                        on_failure(name)
                    except Exception:
                        traceback.print_exc(file=sys.stdout)
            else:
                self.passed += 1
                event("PASS %s" % name)
        if after:
            try:
                after()
            except Exception:
                traceback.print_exc(file=sys.stdout)
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        return 0 if self.failed == 0 and self.passed > 0 else 1


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(NoRedirect)


def http(method, url, body=None, headers=None, timeout_s=10, raw=None):
    """One HTTP request.  body is JSON-encoded unless raw (bytes) is given.  Returns
    (status, headers as a dict with lower-case names, parsed JSON or text or None).
    Never follows redirects; never raises for an HTTP status."""
    data = raw
    h = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        h.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        resp = _opener.open(req, timeout=timeout_s)
        status, rh, payload = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        status, rh, payload = e.code, e.headers, e.read()
    hdrs = {k.lower(): v for k, v in rh.items()}
    text = payload.decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = text
    return status, hdrs, parsed


def poll(cond, what, timeout_s=60, interval_s=0.1):
    """Call cond() until it returns a true value (returned) or timeout_s passes (Failure)."""
    assert 0 < timeout_s <= 60, "every wait is bounded by 60 s"
    timeout_s *= SLOWDOWN
    deadline = time.time() + timeout_s
    last_exc = None
    while True:
        try:
            v = cond()
            if v:
                return v
        except (OSError, ValueError) as e:
            last_exc = e
        if time.time() >= deadline:
            raise Failure("timed out after %.0f s waiting for %s%s" % (
                timeout_s, what, "" if last_exc is None else " (last error: %s)" % last_exc))
        time.sleep(interval_s)


_held_ports = []  # the claims of this process (and of its forked children): never released


def _port_range():
    """The ports free_port draws from: the 12,000 below the kernel's ephemeral range, so that
    no outgoing connection (whose local port the kernel takes from that range) can hold one
    when a server of a test binds it, e.g. when a killed alertbridge restarts on its port."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(1024, low - 12000), max(1025, low)


def free_port():
    """A loopback port for a server of the test to bind, outside the kernel's ephemeral range
    and claimed by this process for its lifetime: the claim is an abstract-namespace Unix
    socket named after the port (released by the kernel when the process ends), so the tests
    running at once never draw the same port, nor does one process draw a port twice.  The
    port was free when drawn (a bind with SO_REUSEADDR, as the servers bind, succeeded)."""
    lo, hi = _port_range()
    start = random.SystemRandom().randrange(lo, hi)
    for k in range(hi - lo):
        port = lo + (start - lo + k) % (hi - lo)
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind("\0alertbridge-test-port-%d" % port)
        except OSError:
            claim.close()
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                claim.close()
                continue
        _held_ports.append(claim)
        return port
    raise OSError("no free loopback port in %d-%d" % (lo, hi - 1))


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def wrapped(argv):
    """argv with $ALERTBRIDGE_WRAPPER in front when its program is $ALERTBRIDGE_BIN."""
    wrapper = os.environ.get("ALERTBRIDGE_WRAPPER")
    target = os.environ.get("ALERTBRIDGE_BIN")
    if not (wrapper and target and argv and
            os.path.realpath(argv[0]) == os.path.realpath(target)):
        return list(argv)
    return shlex.split(wrapper) + list(argv)


class Proc:
    """A child process with its stdout+stderr in a log file."""

    def __init__(self, name, argv, log_path, env=None, cwd=None):
        self.name = name
        self.argv = wrapped(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.p = None
        self.exit_code = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.p = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                  start_new_session=True)
        self.exit_code = None
        event("%s started (pid %d)" % (self.name, self.p.pid))
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def stop(self, grace_s=5):
        """SIGTERM, then SIGKILL after grace_s (times ALERTBRIDGE_SLOWDOWN).  Returns the exit
        code (negative: signal)."""
        grace_s *= SLOWDOWN
        if self.p is None:
            return self.exit_code
        if self.p.poll() is None:
            try:
                self.p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                event("%s did not exit within %d s of SIGTERM: SIGKILL" % (self.name, grace_s))
                self.p.kill()
                self.p.wait(timeout=5)
        return self.reaped("stopped")

    def reaped(self, how):
        """After the process was waited for: keep its exit code, say how it ended (an event:
        "NAME how (exit CODE)"), close its log and forget it.  Returns the exit code."""
        self.exit_code = self.p.returncode
        event("%s %s (exit %s)" % (self.name, how, self.exit_code))
        self.p = None
        self.log.close()
        return self.exit_code

    def tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read().decode("utf-8", "replace").splitlines()
        except OSError as e:
            return "(no log: %s)" % e
        return "\n".join(data[-lines:])


def wait_ready(proc, url, timeout_s=30):
    """Poll GET url until 200; fail at once if proc exits meanwhile."""
    def ready():
        if not proc.alive():
            raise Failure("%s exited (%s) before it was ready:\n%s" % (
                proc.name, proc.p.poll() if proc.p else "?", proc.tail(15)))
        return http("GET", url, timeout_s=2)[0] == 200
    poll(ready, "%s ready (%s)" % (proc.name, url), timeout_s=timeout_s)


def print_tail(title, text):
    print("----- %s -----" % title)
    print(text)
    print("----- end %s -----" % title, flush=True)


def print_stack_tails(ab, am, am_lines, ab_lines=60):
    """The start of a stack's post-mortem: the last ab_lines of alertbridge's log (ab, its
    Proc or Alertbridge; nothing when it never ran: None) and the last am_lines of
    Alertmanager's (am)."""
    if ab is not None:
        print_tail("alertbridge log (last %d lines)" % ab_lines, ab.tail(ab_lines))
    print_tail("alertmanager log (last %d lines)" % am_lines, am.proc.tail(am_lines))


# ----- a recording proxy between Alertmanager and alertbridge ---------------------------------

import threading  # noqa: E402
from fake_base import LocalServer, QuietHandler  # noqa: E402


class WebhookProxy(LocalServer):
    """Forwards every request to http://127.0.0.1:<upstream_port> unchanged (method, path, body,
    headers but Host/Content-Length/Connection) and records it with the upstream's answer, so a
    test can see what Alertmanager sent and what alertbridge answered.  When the upstream is
    down it answers 502 (Alertmanager retries 5xx, as it would a refused connection).
    upstream_port may be a list of ports: each request then goes to the next one in turn and,
    when that one refuses the connection, to the others (as a Kubernetes Service in front of
    replicas); `refused` counts the connections refused.  answer_delay_s holds each answer that
    long after the upstream's (an Alertmanager records a notification in its log only once it
    was answered)."""

    def __init__(self, upstream_port, answer_delay_s=0):
        self.upstream_port = upstream_port
        ports = list(upstream_port) if isinstance(upstream_port, (list, tuple)) else \
            [upstream_port]
        self.lock = threading.Lock()
        self.deliveries = []
        self.refused = 0
        turn = [0]
        proxy = self

        class Handler(QuietHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n > 0 else b""
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("host", "content-length", "connection")}
                with proxy.lock:
                    first = turn[0]
                    turn[0] += 1
                for k in range(len(ports)):
                    port = ports[(first + k) % len(ports)]
                    url = "http://127.0.0.1:%d%s" % (port, self.path)
                    try:
                        st, rh, body = http("POST", url, headers=hdrs, raw=raw, timeout_s=15)
                        break
                    except OSError as e:
                        st, rh, body = 502, {}, {"error": "upstream: %s" % e}
                        if not isinstance(getattr(e, "reason", e), ConnectionRefusedError):
                            break
                        with proxy.lock:
                            proxy.refused += 1
                try:
                    payload = json.loads(raw.decode("utf-8"))
                except ValueError:
                    payload = None
                rec = {"time": time.time(), "path": self.path, "headers": hdrs, "raw": raw,
                       "payload": payload, "status": st, "answer": body, "port": port}
                with proxy.lock:
                    proxy.deliveries.append(rec)
                what = payload.get("status") if isinstance(payload, dict) else "?"
                nal = len(payload.get("alerts", [])) if isinstance(payload, dict) else 0
                event("webhook %s (%d alerts) -> %s" % (what, nal, st))
                time.sleep(answer_delay_s)
                data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
                self.send_response(st)
                self.send_header("Content-Type", rh.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._serve(Handler)

    def get(self):
        with self.lock:
            return list(self.deliveries)


# ----- Debian's real Alertmanager ---------------------------------------------------------------

ALERTMANAGER = os.environ.get("ALERTMANAGER_BIN", "/usr/bin/prometheus-alertmanager")


class Alertmanager:
    """One Alertmanager on 127.0.0.1 (no clustering) whose receiver `receiver` posts to
    webhook_url with a bearer token read from token_file and send_resolved: true.  With
    janitor_url, alerts matching alertname=~"Janitor.*" go instead to a receiver "janitor"
    posting there (as deploy/alertmanager/alertmanager.yml routes them), one pod per group."""

    def __init__(self, workdir, webhook_url, token_file, receiver="bridge",
                 group_by=("alertname", "namespace", "pod"), group_wait="1s",
                 group_interval="2s", repeat_interval="1h", janitor_url=None):
        self.dir = os.path.join(workdir, "alertmanager")
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = os.path.join(self.dir, "alertmanager.yml")
        receiver_tmpl = ("  - name: %s\n"
                         "    webhook_configs:\n"
                         "      - url: %s\n"
                         "        send_resolved: true\n"
                         "        http_config:\n"
                         "          authorization:\n"
                         "            credentials_file: %s\n")
        routes = receivers = ""
        if janitor_url:
            routes = ("  routes:\n"
                      "    - receiver: janitor\n"
                      "      matchers: ['alertname=~\"Janitor.*\"']\n"
                      "      group_by: [alertname, namespace, pod]\n")
            receivers = receiver_tmpl % ("janitor", janitor_url, token_file)
        with open(cfg, "w") as f:
            f.write("route:\n"
                    "  receiver: %s\n"
                    "  group_by: [%s]\n"
                    "  group_wait: %s\n"
                    "  group_interval: %s\n"
                    "  repeat_interval: %s\n"
                    "%s"
                    "receivers:\n"
                    % (receiver, ", ".join(group_by), group_wait, group_interval,
                       repeat_interval, routes))
            f.write(receiver_tmpl % (receiver, webhook_url, token_file))
            f.write(receivers)
        self.proc = Proc("alertmanager", [
            ALERTMANAGER, "--config.file=" + cfg,
            "--storage.path=" + os.path.join(self.dir, "data"),
            "--web.listen-address=127.0.0.1:%d" % self.port,
            "--cluster.listen-address=", "--log.level=debug"],
            os.path.join(self.dir, "alertmanager.log"))

    def start(self):
        self.proc.start()
        wait_ready(self.proc, self.url + "/-/ready", timeout_s=30)
        event("alertmanager ready on %s" % self.url)
        return self

    def post(self, alerts):
        """POST /api/v2/alerts (Alertmanager API v2); alerts as the API takes them."""
        st, _, body = http("POST", self.url + "/api/v2/alerts", alerts)
        if st != 200:
            raise Failure("alertmanager refused alerts: %s %s" % (st, body))

    def stop(self):
        return self.proc.stop()


# ----- crash, HA and shutdown helpers (test_crash.py, test_ha.py) -------------------------------

def flapping_schedule(rng, n_alerts, first_within_s, until_s, gap_s):
    """[(t, alert index, firing)] in time order (t in seconds from the start): each alert
    fires first within first_within_s, then toggles after rng.uniform(*gap_s) seconds, again
    and again while before until_s.  rng is the case's seeded random.Random."""
    schedule = []
    for i in range(n_alerts):
        t, firing = rng.uniform(0, first_within_s), True
        while t < until_s:
            schedule.append((t, i, firing))
            firing = not firing
            t += rng.uniform(*gap_s)
    schedule.sort()
    return schedule


def drive_schedule(schedule, stop, post, errors):
    """A chaos test's driver: for each (t, key, firing) of schedule (flapping_schedule()),
    wait until t seconds after the call (returning early once the event stop is set), then
    post(key, firing, starts), starts the time.time() the key last began to fire.  An
    exception ends it, appended to errors as "driver: ..."."""
    t0, starts = time.time(), {}
    try:
        for at, key, firing in schedule:
            if stop.wait(max(0.0, t0 + at - time.time())):
                return
            if firing:
                starts[key] = time.time()
            post(key, firing, starts[key])
    except Exception as e:  # reported by the case
        errors.append("driver: %r" % e)


def drive_and_kill(driver, killer, timeout_s, errors, stop=None):
    """Run a chaos test's driver and killer, each on a daemon thread of its own; wait for each
    (timeout_s at the most), set the event stop (if any), then check both finished and that
    errors, the list they append to, stayed empty."""
    threads = [threading.Thread(target=driver, daemon=True),
               threading.Thread(target=killer, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    if stop is not None:
        stop.set()
    check(not any(t.is_alive() for t in threads), "driver and killer finished")
    check(not errors, "driver and killer ran without errors", errors)


def kill9(proc):
    """SIGKILL proc (a crash: no cleanup runs) and reap it.  Returns the exit code (-9)."""
    if proc.p is None:
        return proc.exit_code
    try:
        proc.p.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.p.wait(timeout=10)
    return proc.reaped("killed with SIGKILL")


def alertmanager_cluster_args(listen_port, peer_ports, peer_timeout="1s"):
    """Flags that put one Alertmanager in a loopback gossip cluster with peer_ports: short
    gossip and push-pull intervals so the notification log spreads within a second, and a
    short peer timeout so a peer that hears nothing sends on its own (more duplicates for the
    receiver, as a slow gossip would cause)."""
    args = ["--cluster.listen-address=127.0.0.1:%d" % listen_port,
            "--cluster.advertise-address=127.0.0.1:%d" % listen_port,
            "--cluster.gossip-interval=50ms", "--cluster.pushpull-interval=1s",
            "--cluster.peer-timeout=%s" % peer_timeout, "--cluster.settle-timeout=5s",
            "--cluster.reconnect-interval=1s"]
    for p in peer_ports:
        args.append("--cluster.peer=127.0.0.1:%d" % p)
    return args


def clustered_alertmanager(workdir, name, webhook_url, token_file, listen_port, peer_ports,
                           **kwargs):
    """An Alertmanager (see Alertmanager) named name, in workdir/name, that joins the loopback
    cluster of peer_ports by gossiping on listen_port; kwargs as Alertmanager takes them."""
    sub = os.path.join(workdir, name)
    am = Alertmanager(sub, webhook_url, token_file, **kwargs)
    am.proc.name = name
    argv = [a for a in am.proc.argv if not a.startswith("--cluster.")]
    am.proc.argv = argv + alertmanager_cluster_args(listen_port, peer_ports)
    return am


ALERTBRIDGE = os.path.abspath(os.environ.get("ALERTBRIDGE_BIN", "./alertbridge"))


class Alertbridge:
    """`alertbridge serve` on a loopback port with a minimal config in workdir (one receiver
    posting to repo on the fake GitHub at github_url, bearer-token webhooks, default templates,
    sqlite in workdir), which can be started, stopped (SIGTERM) and killed (SIGKILL) again and
    again; every run appends to the same log.  extra_github adds lines under `github:`;
    receivers_yaml (optional) replaces the receiver block: the lines under `receivers:`
    (repo and receiver are then unused); write_receivers() rewrites it for the next start."""

    def __init__(self, workdir, github_url, github_token, repo, receiver="bridge",
                 hook_token="hook-secret", content_per_minute=80, log_level="info",
                 extra_github="", receivers_yaml=None):
        self.dir = workdir
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.hook_token = hook_token
        self.receiver = receiver
        self.runs = 0
        self.proc = None
        self.hook_file = os.path.join(workdir, "webhook-token")
        with open(self.hook_file, "w") as f:
            f.write(hook_token + "\n")
        with open(os.path.join(workdir, "github-token"), "w") as f:
            f.write(github_token + "\n")
        self.db = os.path.join(workdir, "alertbridge.db")
        self.config = os.path.join(workdir, "alertbridge.yml")
        self._config_args = (log_level, github_url, content_per_minute, extra_github)
        self.write_receivers(receivers_yaml or "  - name: %s\n    repo: %s\n" % (receiver, repo))
        self.log_path = os.path.join(workdir, "alertbridge.log")

    def write_receivers(self, receivers_yaml):
        log_level, github_url, content_per_minute, extra_github = self._config_args
        with open(self.config, "w") as f:
            f.write("listen_address: 127.0.0.1:%d\n"
                    "database: alertbridge.db\n"
                    "log: {level: %s, format: logfmt}\n"
                    "webhook:\n"
                    "  bearer_token_file: webhook-token\n"
                    "github:\n"
                    "  api_url: %s\n"
                    "  token_file: github-token\n"
                    "  content_per_minute: %d\n"
                    "  timeout: 5s\n"
                    "  dry_run: false\n"
                    "%s"
                    "receivers:\n"
                    "%s"
                    "janitor:\n"
                    "  enabled: false\n"
                    % (self.port, log_level, github_url, content_per_minute, extra_github,
                       receivers_yaml))

    def start(self, wait=True, flags=()):
        """Run `alertbridge serve --config.file=CONFIG` plus flags; wait for /-/ready."""
        self.runs += 1
        self.proc = serve_proc("alertbridge#%d" % self.runs, self.config, self.dir, flags)
        self.proc.start()
        if wait:
            wait_ready(self.proc, self.url + "/-/ready", timeout_s=30)
        return self

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def stop(self, grace_s=5):
        return self.proc.stop(grace_s) if self.proc else None

    def kill(self):
        return kill9(self.proc) if self.proc else None

    def post(self, payload, timeout_s=10):
        """POST payload (a dict) to /v1/webhook with the bearer token; (status, headers, body)."""
        return http("POST", self.url + "/v1/webhook", payload, timeout_s=timeout_s,
                    headers={"Authorization": "Bearer " + self.hook_token})

    def tail(self, lines=60):
        return self.proc.tail(lines) if self.proc else "(never started)"


# ----- a test's alertbridge and its script ------------------------------------------------------

def service_config(directory, body, files=(), log_level="debug"):
    """A test's alertbridge in directory: a free loopback port (free_port()), its URL and its
    config, written by write_config(directory, port, body, files, log_level);
    (port, url, config path)."""
    port = free_port()
    return (port, "http://127.0.0.1:%d" % port,
            write_config(directory, port, body, files, log_level))


def run_cases(run, binary=ALERTBRIDGE, **kw):
    """A test script's main(): run's cases (run.run(**kw)), or one failure when the alertbridge
    binary is not there (ALERTBRIDGE_BIN unset or wrong)."""
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print("alertbridge binary not found: %s (set ALERTBRIDGE_BIN)" % binary)
        print("0 passed, 1 failed")
        return 1
    return run.run(**kw)


def only_from_env(name):
    """The cases the environment variable name selects (names, comma-separated), or None when
    it is unset or empty: every case (Runner.run's only)."""
    return [x for x in os.environ.get(name, "").split(",") if x] or None


def _raise_on_term(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def term_raises():
    """Turn SIGTERM (e.g. tests/run.sh's timeout) into KeyboardInterrupt, so every case's
    cleanup runs: a stack's children live in sessions of their own and would otherwise
    outlive the test."""
    signal.signal(signal.SIGTERM, _raise_on_term)


def cases_main(run, only_env, **kw):
    """A test script's main(): SIGTERM raises (term_raises()) and the cases the environment
    variable only_env selects run (run.run(**kw)); the exit code."""
    term_raises()
    return run.run(only=only_from_env(only_env), **kw)


import contextlib  # noqa: E402
import shutil  # noqa: E402


@contextlib.contextmanager
def alertbridge_run(ab, tmp, *others):
    """A test's run of the alertbridge ab: when the with-block fails, the last 60 lines of its
    log are printed; after it, ab is stopped (if still running), then each of others (their
    stop(): the fakes), and the directory tmp removed."""
    try:
        yield ab
    except BaseException:
        print_tail("alertbridge log", ab.tail(60))
        raise
    finally:
        if ab.alive():
            ab.stop()
        for other in others:
            other.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def temp_dir(prefix):
    """A new directory /tmp/<prefix>XXXXXX of the test's, removed when its process exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def serve_proc(name, config, directory, flags=(), binary=ALERTBRIDGE,
               log_name="alertbridge.log"):
    """A Proc named name, not started yet, of `binary serve --config.file=config` plus flags,
    run in directory without GITHUB_TOKEN in its environment (the config's token file is what
    counts), its log directory/log_name.  Failure when binary is not an executable file."""
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise Failure("alertbridge binary not found or not executable: %s (set ALERTBRIDGE_BIN)"
                      % binary)
    return Proc(name, [binary, "serve", "--config.file=" + config] + list(flags),
                os.path.join(directory, log_name),
                env={k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}, cwd=directory)


def start_alertbridge(binary, config, directory, url, log_name="alertbridge.log"):
    """`binary serve --config.file=config` started in directory (serve_proc()), its log
    directory/log_name; ready once url/-/ready answers (30 s at the most).  Its Proc."""
    proc = serve_proc("alertbridge", config, directory, binary=binary, log_name=log_name)
    proc.start()
    wait_ready(proc, url + "/-/ready", timeout_s=30)
    return proc


def run_on_stack(s, fn, lines=60):
    """fn(s) for a stack s with an alertbridge s.ab (None once gone) writing s.dir's
    alertbridge.log: when fn fails, the log's last lines are printed first; s.cleanup() after,
    in any case."""
    try:
        fn(s)
    except BaseException:
        print_tail("alertbridge log (last %d lines)" % lines, s.ab.tail(lines) if s.ab else
                   open(os.path.join(s.dir, "alertbridge.log")).read()[-100 * lines:])
        raise
    finally:
        s.cleanup()


def stop_state(state, *names):
    """The teardown of a script whose cases share the dict state: state[name].stop() for each
    of names present (one with a process, an Alertbridge or an Alertmanager, only while it
    runs), then the directory state["dir"] removed."""
    for name in names:
        x = state.get(name)
        if x is not None and (not hasattr(x, "proc") or (x.proc and x.proc.alive())):
            x.stop()
    shutil.rmtree(state.get("dir", "/nonexistent"), ignore_errors=True)


def tail_on_failure(state, lines=40):
    """A Runner.run on_failure that prints the last lines of state["ab"]'s log."""
    def on_failure(name):
        if "ab" in state:
            print_tail("alertbridge log (last %d lines)" % lines, state["ab"].tail(lines))
    return on_failure


def stop_all(stops, directory):
    """Call each of stops in turn, going on past an error (said as an event), then remove the
    directory: a stack's teardown."""
    for stop in stops:
        try:
            stop()
        except Exception as e:  # keep stopping the rest
            event("cleanup error: %s" % e)
    shutil.rmtree(directory, ignore_errors=True)


def stacks_run(run, stacks, tail_lines):
    """Run run's cases on stacks, a list of (directory, FakeGitHub, Alertbridge) the cases fill:
    on a failure the last tail_lines of each alertbridge's log are printed; at the end each is
    stopped, its fake GitHub too, and its directory removed.  The exit code."""
    def on_failure(name):
        for d, gh, ab in stacks:
            print_tail("alertbridge log (%s)" % name, ab.tail(tail_lines))

    def cleanup():
        for d, gh, ab in stacks:
            try:
                if ab.alive():
                    ab.stop()
            finally:
                gh.stop()
                shutil.rmtree(d, ignore_errors=True)

    return run.run(on_failure=on_failure, after=cleanup)
