#!/usr/bin/env python3
# run.sh: weight 85, asan skip
# (the model's SIGKILL-and-restart steps and test_lost_database run its paths under the sanitizers)
"""test_crash.py - alertbridge survives SIGKILL at any moment and drains on SIGTERM.

    Alertmanager --webhook--> recording proxy --> alertbridge --REST--> fake GitHub

kill_at_random_moments: a real Alertmanager keeps sending while a driver (seeded: CRASH_SEED,
logged) fires and resolves alerts and kills alertbridge with SIGKILL 8-12 times, half at a
random moment and half right after the fake GitHub performed a write but before it answered (a
crash between GitHub's change and our record of it), restarting it each time.  At the end
every alert whose webhook got a 200 is on GitHub in its last acknowledged state, with exactly
one issue per alert key and no comment posted twice.

sigterm_*: SIGTERM while a GitHub call is in flight (or waiting out a rate limit) stops the
listener at once, lets the call finish and records it, exits 0 within 10 s, and makes no
request after a wait it was told to honour.

Env: ALERTBRIDGE_BIN, ALERTMANAGER_BIN, CRASH_SEED, CRASH_ONLY=name,name.
Prints a timeline and, last, "N passed, N failed".
"""

import collections
import json
import os
import random
import re
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertbridge, Alertmanager, Failure, Runner, WebhookProxy,  # noqa: E402
                     check, eq, event, http, issues_by_key, iso_ms, last_acknowledged, poll,
                     port_open, print_tail, webhook_payload)
from harness import cases_main, drive_and_kill, drive_schedule  # noqa: E402
from harness import print_stack_tails, stop_all  # noqa: E402
from harness import flapping_schedule  # noqa: E402

REPO = "acme/crash"
GH_TOKEN = "ghs_crashTestToken0123456789"
RECEIVER = "bridge"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")

run = Runner()


class KillingGitHub(FakeGitHub):
    """The fake GitHub with a trap: when armed, the next successful write runs the trap after
    the fake changed its state and before it answers (so alertbridge dies not knowing)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.trap = None
        self.trap_path = ".*"

    def start(self):
        super().start()
        # A killed client resets its connection: expected here, not worth a traceback.
        self.server.handle_error = lambda request, client_address: None
        return self

    def handle_api(self, method, path, query, headers, raw):
        res = super().handle_api(method, path, query, headers, raw)
        if method in MUTATING and self.trap is not None and res[0] < 300 and \
                re.fullmatch(self.trap_path, path):
            trap, self.trap = self.trap, None
            trap(method, path)
        return res


def comment_duplicates(gh, issues):
    """Comments whose text appears twice on one issue (each text names its transition's time,
    so a repeat is one transition posted twice)."""
    dups = []
    for i in issues:
        c = collections.Counter(x["body"] for x in gh.comments(REPO, i["number"]))
        dups += [(i["number"], body[:80], n) for body, n in c.items() if n > 1]
    return dups


def queue_empty(ab):
    st, _, text = http("GET", ab.url + "/metrics", timeout_s=2)
    if st != 200 or not isinstance(text, str):
        return False
    for line in text.splitlines():
        if line.startswith("alertbridge_bridge_queue_pending"):
            return float(line.split()[-1]) == 0
    raise Failure("no pending-events gauge in /metrics")


@run.case
def kill_at_random_moments():
    seed = int(os.environ.get("CRASH_SEED") or time.time() * 1000) % 1000000
    rng = random.Random(seed)
    event("CRASH_SEED=%d (set it to replay this run's schedule)" % seed)
    n_alerts, duration_s = 10, 60.0
    tmp = tempfile.mkdtemp(prefix="ab-crash-")
    gh = KillingGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, REPO, receiver=RECEIVER)
    proxy = WebhookProxy(ab.port)
    am = Alertmanager(tmp, "http://127.0.0.1:%d/v1/webhook" % proxy.port, ab.hook_file,
                      receiver=RECEIVER, group_by=("alertname", "pod"), group_wait="500ms",
                      group_interval="1s")
    lock = threading.Lock()
    kills = {"random": 0, "at-write": 0, "at-create": 0}
    posted = {}       # alert index -> (status, startsAt) last posted to Alertmanager
    sent = [0]        # alert states posted to Alertmanager
    stop = threading.Event()
    errors = []

    def alert_json(i, firing, starts):
        a = {"labels": {"alertname": "CrashTest", "pod": "pod-%02d" % i,
                        "namespace": "chaos", "severity": "warning"},
             "annotations": {"summary": "crash test alert %d" % i},
             "startsAt": iso_ms(starts)}
        if not firing:
            a["endsAt"] = iso_ms(time.time() - 0.5)
        return a

    # Each alert fires first within 8 s, then toggles every 10-25 s until 5 s before the end.
    schedule = flapping_schedule(rng, n_alerts, 8, duration_s - 5, (10, 25))
    n_kills = rng.randint(8, 12)
    # The first kill comes right after GitHub created an issue (the create's answer lost);
    # the others at random moments or right after any write.
    kill_plan = sorted([(rng.uniform(0.5, 3), "at-create")] + [
        (rng.uniform(3, duration_s - 3), rng.choice(("random", "at-write")))
        for _ in range(n_kills - 1)])
    event("plan: %d alerts, %d state changes, %d kills" % (n_alerts, len(schedule), n_kills))

    def post(i, firing, starts):
        a = alert_json(i, firing, starts)
        am.post([a])
        sent[0] += 1
        posted[i] = ("firing" if firing else "resolved", a["startsAt"])
        event("posted %s pod-%02d" % (posted[i][0], i))

    def killer():
        t0 = time.time()
        try:
            for at, kind in kill_plan:
                if stop.wait(max(0.0, t0 + at - time.time())):
                    return
                if kind in ("at-write", "at-create"):
                    fired = threading.Event()
                    pid = ab.proc.p.pid

                    def trap(method, path, pid=pid, fired=fired):
                        os.kill(pid, signal.SIGKILL)
                        event("trap: SIGKILL after GitHub did %s %s" % (method, path))
                        fired.set()
                    gh.trap_path = "/repos/%s/issues" % REPO if kind == "at-create" else ".*"
                    gh.trap = trap
                    if not fired.wait(8):
                        gh.trap = None
                        time.sleep(0.05)
                        if not fired.is_set():
                            kind = "random"  # no write came: kill now instead
                with lock:
                    kills[kind] += 1
                    ab.kill()
                time.sleep(rng.uniform(0.1, 1.5))
                with lock:
                    ab.start()
        except Exception as e:
            errors.append("killer: %r" % e)

    try:
        ab.start()
        am.start()
        drive_and_kill(lambda: drive_schedule(schedule, stop, post, errors), killer,
                       duration_s + 60, errors)
        with lock:
            if not ab.alive():
                ab.start()
        event("chaos over: %d kills (%d random, %d at a GitHub write, %d at a create); "
              "draining" % (sum(kills.values()), kills["random"], kills["at-write"],
                            kills["at-create"]))

        def settled():
            ack = last_acknowledged(proxy.get())
            if len(ack) < n_alerts:
                return False
            final = {a["fingerprint"]: a["status"] for d in proxy.get()
                     for a in (d["payload"] or {}).get("alerts", [])}
            # Alertmanager has delivered each alert's last state with a 200 ...
            want = sorted(s for s, _ in posted.values())
            if sorted(s for s, _, _ in ack.values()) != want or \
                    any(ack[fp][0] != final[fp] for fp in ack):
                return False
            # ... and GitHub shows it, with nothing left in alertbridge's queue.
            byk = issues_by_key(gh.issues(REPO))
            for fp, (status, _, _) in ack.items():
                if fp not in byk or any(
                        (x["state"] == "open") != (status == "firing") for x in byk[fp]):
                    return False
            return queue_empty(ab)
        poll(settled, "every acknowledged alert on GitHub in its final state", timeout_s=60,
             interval_s=0.5)
        time.sleep(3)  # a wrong late call (a duplicate) would show now
        deliveries = proxy.get()
        ack = last_acknowledged(deliveries)
        issues = gh.issues(REPO)
        byk = issues_by_key(issues)
        dups = {k: [i["number"] for i in v] for k, v in byk.items() if len(v) > 1}
        lost = [fp for fp, (status, _, _) in ack.items()
                if fp not in byk or any((x["state"] == "open") != (status == "firing")
                                        for x in byk[fp])]
        cdups = comment_duplicates(gh, issues)
        writes = [r for r in gh.get_requests() if r["method"] in MUTATING]
        with open(ab.log_path, errors="replace") as f:
            log = f.read()
        found = log.count('msg="earlier create found by marker"') + \
            log.count('msg="earlier comment found by marker"')
        event("figures: seed=%d alerts=%d state_changes_sent=%d webhooks=%d answered_200=%d "
              "answered_other=%d kills=%d (random=%d at_write=%d at_create=%d) github_writes=%d "
              "found_by_marker_after_restart=%d issues=%d duplicate_issues=%d "
              "duplicate_comments=%d lost=%d" % (
                  seed, n_alerts, sent[0], len(deliveries),
                  sum(1 for d in deliveries if d["status"] == 200),
                  sum(1 for d in deliveries if d["status"] != 200), sum(kills.values()),
                  kills["random"], kills["at-write"], kills["at-create"], len(writes), found,
                  len(issues), len(dups), len(cdups), len(lost)))
        eq(len(ack), n_alerts, "alerts acknowledged with a 200")
        eq(dups, {}, "keys with more than one issue")
        eq(lost, [], "acknowledged alerts missing on GitHub or in the wrong state")
        eq(cdups, [], "comments posted twice")
        eq(len(issues), n_alerts, "one issue per alert")
        check(sum(kills.values()) >= 8, "at least 8 kills happened", kills)
        eq(ab.stop(), 0, "exit code of the last run on SIGTERM")
    except BaseException:
        print_stack_tails(ab, am, 20, 80)
        raise
    finally:
        stop.set()
        stop_all((am.stop, ab.stop, proxy.stop, gh.stop), tmp)


def one_alert(fp, name="SigtermTest"):
    return {"fingerprint": fp, "status": "firing",
            "labels": {"alertname": name, "pod": "pod-" + fp[:4], "severity": "warning"},
            "annotations": {"summary": "sigterm test"}, "startsAt": iso_ms(time.time() - 5)}


class Small:
    """The fake GitHub and alertbridge (no Alertmanager) in a temp dir, always cleaned up."""

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="ab-sigterm-")
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
        self.ab = Alertbridge(self.tmp, self.gh.url, GH_TOKEN, REPO, receiver=RECEIVER,
                              log_level="debug")
        return self

    def __exit__(self, et, ev, tb):
        if et is not None:
            print_tail("alertbridge log (last 60 lines)", self.ab.tail(60))
            print_tail("fake github requests", "\n".join(
                "%.2f %s %s -> %s" % (r["time"] - T_START, r["method"], r["path"], r["status"])
                for r in self.gh.get_requests()))
        stop_all((self.ab.stop, self.gh.stop), self.tmp)
        return False

    def creates(self):
        return [r for r in self.gh.get_requests()
                if r["method"] == "POST" and r["path"] == "/repos/%s/issues" % REPO]

    def sigterm(self):
        """SIGTERM; returns (exit code, seconds to exit), failing after 10 s."""
        t = time.time()
        self.ab.proc.p.send_signal(signal.SIGTERM)
        event("SIGTERM sent to %s" % self.ab.proc.name)
        return self.exited(t)

    def exited(self, t):
        """Wait for alertbridge to exit after the SIGTERM sent at t; returns (exit code,
        seconds since t), failing after 10 s."""
        try:
            self.ab.proc.p.wait(timeout=10)
        except Exception:
            raise Failure("alertbridge did not exit within 10 s of SIGTERM")
        took = time.time() - t
        code = self.ab.stop()
        event("alertbridge exited %s after %.2f s" % (code, took))
        return code, took


T_START = time.time()


@run.case
def sigterm_finishes_the_call_in_flight():
    with Small() as s:
        s.ab.start()
        # GitHub takes 3 s to answer the create: SIGTERM comes while it is in flight.
        s.gh.add_fault(method="POST", path="/repos/%s/issues" % REPO, action="delay",
                       delay_ms=3000)
        payload = webhook_payload(RECEIVER, [one_alert("a1b2c3d4e5f60708")])
        st, _, body = s.ab.post(payload)
        eq(st, 200, "webhook answer before SIGTERM")
        poll(s.creates, "the create reached GitHub", timeout_s=20)
        time.sleep(0.3)
        t = time.time()
        s.ab.proc.p.send_signal(signal.SIGTERM)
        event("SIGTERM sent with the create in flight")
        poll(lambda: not port_open(s.ab.port), "the listener closed", timeout_s=2,
             interval_s=0.05)
        event("listener closed after %.2f s" % (time.time() - t))
        check(s.ab.alive(), "alertbridge still runs (finishing the call) once it stopped "
              "accepting")
        code, took = s.exited(t)
        eq(code, 0, "exit code after SIGTERM")
        check(took >= 2.0, "alertbridge waited for GitHub's answer before exiting", took)
        eq(len(s.gh.issues(REPO)), 1, "issues after the drained create")
        with open(s.ab.log_path) as f:
            log = f.read()
        check('msg="event applied"' in log, "the create's outcome was recorded", log[-2000:])
        # The outcome was recorded: a restart and the same webhook again make nothing new.
        s.ab.start()
        st, _, body = s.ab.post(payload)
        eq(st, 200, "the same webhook after the restart")
        time.sleep(3)
        eq(len(s.creates()), 1, "creates after the restart (a second would be a duplicate)")
        eq(len(s.gh.issues(REPO)), 1, "issues after the restart")
        code, took = s.sigterm()
        eq(code, 0, "exit code of an idle alertbridge after SIGTERM")
        check(took < 3, "an idle alertbridge exits at once", took)


@run.case
def sigterm_during_a_rate_limit_wait_exits_without_calling():
    with Small() as s:
        s.ab.start()
        # A secondary rate limit: "retry after 60 s".  SIGTERM must not wait 60 s, and must
        # not make the request early either.
        s.gh.add_fault(method="POST", path="/repos/%s/issues" % REPO, status=403,
                       headers={"retry-after": "60"},
                       body={"message": "You have exceeded a secondary rate limit. Please "
                             "wait a few minutes before you try again.",
                             "documentation_url": "https://docs.github.com/rest"})
        payload = webhook_payload(RECEIVER, [one_alert("0f1e2d3c4b5a6978", "RateLimited")])
        eq(s.ab.post(payload)[0], 200, "webhook answer")
        poll(lambda: [r for r in s.creates() if r["status"] == 403],
             "the rate-limited create", timeout_s=20)
        time.sleep(1.0)
        n = len(s.gh.get_requests())
        t = time.time()
        code, took = s.sigterm()
        eq(code, 0, "exit code after SIGTERM during a 60 s rate-limit wait")
        check(took < 10, "exited within 10 s", took)
        late = [r for r in s.gh.get_requests()[n:]]
        eq([(r["method"], r["path"]) for r in late], [],
           "requests to GitHub after SIGTERM during the wait (retry-after not honoured)")
        check(all(r["time"] < t for r in s.gh.get_requests()), "no request after SIGTERM")
        # The event stayed queued: the next start creates the issue, once.
        s.ab.start()
        poll(lambda: len(s.gh.issues(REPO)) == 1, "the issue created after the restart",
             timeout_s=30)
        time.sleep(2)
        eq(len(s.gh.issues(REPO)), 1, "issues after the restart")
        eq([r["status"] for r in s.creates()], [403, 201], "create answers")


@run.case
def sigterm_with_a_slow_client_exits_within_the_bound():
    with Small() as s:
        s.ab.start()
        # A client that sent a webhook's headers and half its body, then stalls (the default
        # read_timeout is 30 s): shutdown must not wait for it beyond the bound.
        body = json.dumps(webhook_payload(RECEIVER, [one_alert("1122334455667788")])).encode()
        sock = socket.create_connection(("127.0.0.1", s.ab.port), timeout=5)
        try:
            sock.sendall(("POST /v1/webhook HTTP/1.1\r\nHost: x\r\n"
                          "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                          "Content-Length: %d\r\n\r\n" % (s.ab.hook_token, len(body))).encode()
                         + body[:len(body) // 2])
            time.sleep(0.5)
            code, took = s.sigterm()
            eq(code, 0, "exit code after SIGTERM with a stalled client")
            check(took < 10, "exited within 10 s despite the stalled client", took)
            sock.settimeout(5)
            try:
                answer = sock.recv(4096)
            except OSError:
                answer = b""
            check(not answer.startswith(b"HTTP/1.1 200"), "the half-sent webhook was not "
                  "acknowledged", answer[:200])
        finally:
            sock.close()
        # Nothing of it was stored: a restart has nothing to do.
        s.ab.start()
        time.sleep(2)
        eq(s.creates(), [], "creates after the restart")


if __name__ == "__main__":
    sys.exit(cases_main(run, "CRASH_ONLY"))
