#!/usr/bin/env python3
# run.sh: weight 73, asan skip
# (test_db, test_active and test_store_lock run db_pg.c and the worker lock under the sanitizers)
"""test_pg_failover.py - two alertbridge processes on one PostgreSQL database (issue 10).

    this test --webhooks, alternating--> alertbridge A, B --REST--> fake GitHub
                                              \\-- one PostgreSQL database (private cluster) --/

kill_the_active_worker: every replica takes webhooks; exactly one (the holder of the store's
worker lock, alertbridge_store_worker_lock_held 1) calls GitHub.  A seeded driver
(PG_FAILOVER_SEED, printed with a one-line replay) fires and resolves alerts through both
replicas while a killer SIGKILLs the active one, half the time right after the fake GitHub
performed a write but before it answered, posts a probe alert to the survivor and measures the
takeover (kill -> the survivor's first GitHub call), then restarts the killed one.  At the end
every alert answered 200 has exactly one issue in its last acknowledged state, no comment is
posted twice, and every takeover is at least the grace (github.timeout) and within the bound
of store.h (1 s retry + grace + the 250 ms wait, with slack for a loaded machine).

real_alertmanager_through_a_failover: the same with a real Alertmanager (group_wait and
group_interval 1 s, repeat_interval 4 s) as the client, posting to one URL in front of both
replicas (harness.WebhookProxy on two ports: each webhook to the next replica, the other when
one refuses the connection, as a Kubernetes Service).  Six alerts are posted to Alertmanager's
API, three of them resolved later, on a seeded schedule; the worker-lock holder is SIGKILLed
once or twice at seeded moments mid-stream (a probe alert posted to Alertmanager right after,
the takeover measured as above) and restarted.  At the end every alert has exactly one issue,
open or closed as last posted, its last state answered 200, no comment twice, both replicas
answered webhooks, and every takeover is within the bound.

database_restarted_under_load: webhooks keep coming through both replicas while PostgreSQL is
stopped for 3 s and started again: while it is down they are answered 503 (nothing else but
200), /-/ready says not ready on both; every webhook answered 200, before or after, is on
GitHub at the end.

Env: ALERTBRIDGE_BIN, PG_FAILOVER_SEED, PG_FAILOVER_ONLY=name,name.  Skipped (said so) when no
PostgreSQL server is installed.  Prints a timeline and, last, "N passed, N failed".
"""

import collections
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (Alertbridge, Alertmanager, Failure, Runner, WebhookProxy,  # noqa: E402
                     check, eq, event, http, issues_by_key, iso_ms, last_acknowledged, poll,
                     print_tail, webhook_payload)
from harness import cases_main, drive_and_kill, drive_schedule  # noqa: E402
from harness import flapping_schedule, stop_all  # noqa: E402
from test_crash import KillingGitHub  # noqa: E402
import pg  # noqa: E402

REPO = "acme/failover"
GH_TOKEN = "ghs_pgFailoverToken0123456789"
RECEIVER = "bridge"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
GRACE_S = 2.0   # github.timeout below: the grace after taking the worker lock (core/active.h)

run = Runner()
# One second of alertbridge's own GitHub pacing lasts 100 ms (serve --test.second-ms,
# cmd/serve.c test_second()), so that the replicas drain what the test sends within its
# time budget.
SECOND_MS_FLAG = "--test.second-ms=100"


class Replica(Alertbridge):
    """alertbridge with its database on PostgreSQL (uri) and github.timeout GRACE_S."""

    def __init__(self, workdir, gh_url, uri, name):
        os.makedirs(workdir, exist_ok=True)
        self.uri = uri
        self.name = name
        super().__init__(workdir, gh_url, GH_TOKEN, REPO, receiver=RECEIVER, log_level="debug")

    def start(self, wait=True, flags=()):
        super().start(wait=wait, flags=[SECOND_MS_FLAG] + list(flags))

    def write_receivers(self, receivers_yaml):
        super().write_receivers(receivers_yaml)
        with open(self.config) as f:
            text = f.read()
        text = text.replace("database: alertbridge.db\n", "database: %s\n" % self.uri)
        text = text.replace("  timeout: 5s\n", "  timeout: %ds\n" % GRACE_S)
        with open(self.config, "w") as f:
            f.write(text)

    def metric(self, name):
        st, _, text = http("GET", self.url + "/metrics", timeout_s=2)
        if st != 200 or not isinstance(text, str):
            return None
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.split()[-1])
        return None

    def holds_lock(self):
        try:
            return self.alive() and self.metric("alertbridge_store_worker_lock_held") == 1
        except OSError:
            return False

    def ready(self):
        try:
            return http("GET", self.url + "/-/ready", timeout_s=2)[0]
        except OSError:
            return None


def alert(fp, firing, starts):
    a = {"fingerprint": fp, "status": "firing" if firing else "resolved",
         "labels": {"alertname": "PgFailover", "pod": "pod-" + fp[-4:], "namespace": "ha",
                    "severity": "warning"},
         "annotations": {"summary": "failover test alert " + fp[-4:]},
         "startsAt": iso_ms(starts)}
    if not firing:
        a["endsAt"] = iso_ms(time.time() - 0.5)
    return a


class Sender:
    """Posts webhooks to the replicas, alternating, falling back to the other on a refused
    connection; keeps each alert's last state answered 200 and counts the answers."""

    def __init__(self, replicas):
        self.replicas = replicas
        self.lock = threading.Lock()
        self.acked = {}                     # fp -> "firing" / "resolved"
        self.answers = collections.Counter()
        self.n = 0

    def post(self, a, tries=2):
        for k in range(tries):
            ab = self.replicas[(self.n + k) % len(self.replicas)]
            try:
                st, _, body = ab.post(webhook_payload(RECEIVER, [a]), timeout_s=10)
            except OSError:
                with self.lock:
                    self.answers["refused"] += 1
                continue
            with self.lock:
                self.n += 1
                self.answers[st] += 1
                if st == 200:
                    self.acked[a["fingerprint"]] = a["status"]
            return st, body
        with self.lock:
            self.n += 1
        return None, None


def settled(gh, sender, replicas):
    """Every alert answered 200 is on GitHub in its last state, once; the queue is empty."""
    byk = issues_by_key(gh.issues(REPO))
    with sender.lock:
        acked = dict(sender.acked)
    for fp, status in acked.items():
        if len(byk.get(fp, ())) != 1 or (byk[fp][0]["state"] == "open") != (status == "firing"):
            return False
    # The worker's own gauge (a standby's lags: it is recounted once a second).
    holder = [r for r in replicas if r.holds_lock()]
    return len(holder) == 1 and holder[0].metric("alertbridge_bridge_queue_pending") == 0


def verdict(gh, sender):
    """(issues, duplicate issues, duplicate comments, lost alerts, comments checked)."""
    issues = gh.issues(REPO)
    byk = issues_by_key(issues)
    dups = {k: [i["number"] for i in v] for k, v in byk.items() if len(v) > 1}
    with sender.lock:
        acked = dict(sender.acked)
    lost = [fp for fp, status in acked.items()
            if fp not in byk or any((x["state"] == "open") != (status == "firing")
                                    for x in byk[fp])]
    cdups, comments = [], 0
    for i in issues:
        c = collections.Counter(x["body"] for x in gh.comments(REPO, i["number"]))
        comments += sum(c.values())
        cdups += [(i["number"], body[:80], n) for body, n in c.items() if n > 1]
    return issues, dups, cdups, lost, comments


class Setup:
    """A private PostgreSQL cluster, a database, the fake GitHub and replicas A and B; always
    cleaned up, logs printed on failure."""

    def __init__(self, tag):
        self.tag = tag

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="ab-pgfo-")
        self.cluster = pg.Cluster().start(share=False)
        self.uri = self.cluster.create_database()
        self.gh = KillingGitHub(token=GH_TOKEN, repos=[REPO]).start()
        self.replicas = [Replica(os.path.join(self.tmp, n), self.gh.url, self.uri, n)
                         for n in ("A", "B")]
        return self

    def __exit__(self, et, ev, tb):
        if et is not None:
            for r in self.replicas:
                print_tail("alertbridge %s log (last 60 lines)" % r.name, r.tail(60))
                try:
                    with open(r.log_path, errors="replace") as f:
                        lines = [x for x in f if "worker lock" in x or "reconnected" in x or
                                 "level=error" in x and "store failed" not in x]
                except OSError:
                    lines = []
                print_tail("alertbridge %s: the worker lock and errors" % r.name,
                           "".join(lines[-40:]))
        stop_all([r.stop for r in self.replicas] + [self.gh.stop, self.cluster.stop], self.tmp)
        return False

    def pg_ctl(self, *args):
        """pg_ctl on the private cluster's data directory, as the user pg.sh ran it as."""
        argv = [os.path.join(pg.bindir(), "pg_ctl"), "-D", os.path.join(self.cluster.dir, "data"),
                "-l", os.path.join(self.cluster.dir, "log"), "-w", "-t", "30"] + list(args)
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        subprocess.run(argv, check=True, timeout=60, stdout=subprocess.DEVNULL)


def pg_case(fn):
    """run.case for fn, a case that needs a PostgreSQL server: without one installed it says
    so and passes."""
    def case():
        if not pg.installed():
            event("skipped: no PostgreSQL server installed")
            return
        fn()
    case.__name__ = fn.__name__
    return run.case(case)


def seeded(case):
    """(random.Random, seed) of PG_FAILOVER_SEED, else of the clock; prints the seed and the
    case's one-line replay."""
    seed = int(os.environ.get("PG_FAILOVER_SEED") or time.time() * 1000) % 1000000
    event("PG_FAILOVER_SEED=%d; replay: PG_FAILOVER_SEED=%d PG_FAILOVER_ONLY=%s python3 "
          "tests/integration/test_pg_failover.py" % (seed, seed, case))
    return random.Random(seed), seed


@pg_case
def kill_the_active_worker():
    rng, seed = seeded("kill_the_active_worker")
    n_alerts, duration_s = 8, 30.0
    fps = ["f0f0f0f0f0f0%04x" % i for i in range(n_alerts)]
    schedule = flapping_schedule(rng, n_alerts, 4, duration_s - 3, (4, 9))
    n_kills = rng.randint(4, 5)
    kill_kinds = [rng.choice(("random", "at-write")) for _ in range(n_kills)]
    kill_gaps = [rng.uniform(1.0, 3.0) for _ in range(n_kills)]
    restart_gaps = [rng.uniform(0.2, 1.0) for _ in range(n_kills)]
    event("plan: %d alerts, %d state changes, %d kills %s" % (n_alerts, len(schedule), n_kills,
                                                             kill_kinds))
    with Setup("failover") as s:
        sender = Sender(s.replicas)
        stop = threading.Event()
        errors, takeovers, probes = [], [], []

        def post(i, firing, starts):
            st, _ = sender.post(alert(fps[i], firing, starts))
            event("posted %s %s: %s" % ("firing" if firing else "resolved", fps[i], st))

        def kill_active(kind):
            """SIGKILL the worker-lock holder; (its replica, the kill time)."""
            active = poll(lambda: next((r for r in s.replicas if r.holds_lock()), None),
                          "a replica holding the worker lock", timeout_s=20)
            if kind == "at-write":
                fired = threading.Event()
                when = []
                pid = active.proc.p.pid

                def trap(method, path):
                    os.kill(pid, signal.SIGKILL)
                    when.append(time.time())
                    event("trap: SIGKILL %s after GitHub did %s %s" % (active.name, method, path))
                    fired.set()
                s.gh.trap = trap
                if fired.wait(6):
                    active.kill()
                    return active, when[0]
                s.gh.trap = None
                time.sleep(0.05)
                if fired.is_set():
                    active.kill()
                    return active, when[0]
            t = time.time()
            active.kill()
            return active, t

        def killer():
            try:
                for k in range(n_kills):
                    if stop.wait(kill_gaps[k]):
                        return
                    victim, t_kill = kill_active(kill_kinds[k])
                    survivor = next(r for r in s.replicas if r is not victim)
                    probe = "e0e0e0e0e0e0%04x" % k
                    probes.append(probe)
                    st, _ = sender.post(alert(probe, True, time.time()))
                    event("probe %s posted to the survivor: %s" % (probe, st))

                    def first_call():
                        later = [r["time"] for r in s.gh.get_requests() if r["time"] > t_kill]
                        return min(later) if later else None
                    t_call = poll(first_call, "the survivor's first GitHub call", timeout_s=20,
                                  interval_s=0.05)
                    takeovers.append(t_call - t_kill)
                    event("takeover %d: %.2f s (%s killed, %s)" % (k + 1, t_call - t_kill,
                                                                  victim.name, kill_kinds[k]))
                    time.sleep(restart_gaps[k])
                    victim.start()
            except Exception as e:
                errors.append("killer: %r" % e)

        for r in s.replicas:
            r.start()
        drive_and_kill(lambda: drive_schedule(schedule, stop, post, errors), killer,
                       duration_s + 90, errors, stop)
        for r in s.replicas:
            if not r.alive():
                r.start()
        poll(lambda: settled(s.gh, sender, s.replicas),
             "every acknowledged alert on GitHub in its final state", timeout_s=60,
             interval_s=0.5)
        time.sleep(2)  # a late wrong call (a duplicate) would show now
        issues, dups, cdups, lost, comments = verdict(s.gh, sender)
        holders = [r.name for r in s.replicas if r.holds_lock()]
        tk = sorted(takeovers)
        event("figures: seed=%d alerts=%d probes=%d webhooks=%s kills=%d (%s) takeover_s "
              "min=%.2f median=%.2f max=%.2f issues_checked=%d comments_checked=%d "
              "duplicate_issues=%d duplicate_comments=%d lost=%d" % (
                  seed, n_alerts, len(probes), dict(sender.answers), len(tk),
                  ",".join(kill_kinds), tk[0] if tk else -1, statistics.median(tk) if tk else -1,
                  tk[-1] if tk else -1, len(issues), comments, len(dups), len(cdups), len(lost)))
        eq(len(tk), n_kills, "takeovers measured")
        eq(dups, {}, "keys with more than one issue")
        eq(lost, [], "acknowledged alerts missing on GitHub or in the wrong state")
        eq(cdups, [], "comments posted twice")
        eq(len(issues), len(sender.acked), "one issue per alert acknowledged")
        eq(len(holders), 1, "replicas holding the worker lock at the end")
        check(tk[0] >= GRACE_S - 0.1, "no takeover before the grace", tk)
        check(tk[-1] <= GRACE_S + 1.0 + 0.25 + 4.0, "every takeover within the bound", tk)


@pg_case
def real_alertmanager_through_a_failover():
    rng, seed = seeded("real_alertmanager_through_a_failover")
    pods = ["pod-%d" % i for i in range(6)]
    resolved_pods = sorted(rng.sample(pods, 3))
    schedule = sorted([(rng.uniform(0, 3), p, True) for p in pods] +
                      [(rng.uniform(6, 10), p, False) for p in resolved_pods])
    n_kills = rng.randint(1, 2)
    kill_gaps = [rng.uniform(1.0, 5.0), rng.uniform(0.5, 3.0)][:n_kills]
    restart_gaps = [rng.uniform(0.2, 1.0) for _ in range(n_kills)]
    event("plan: %d alerts, %d resolved, %d kills after %s s" % (
        len(pods), len(resolved_pods), n_kills, " ".join("%.1f" % g for g in kill_gaps)))

    def am_alert(pod, starts, ends=None):
        a = {"labels": {"alertname": "PgFailoverAm", "pod": pod, "namespace": "ha",
                        "severity": "warning"},
             "annotations": {"summary": "failover test alert on " + pod},
             "startsAt": iso_ms(starts)}
        if ends is not None:
            a["endsAt"] = iso_ms(ends)
        return a

    with Setup("alertmanager") as s:
        a, b = s.replicas
        # One URL in front of both replicas: each webhook to the next live one, as a Service.
        front = WebhookProxy([a.port, b.port])
        am = Alertmanager(s.tmp, "http://127.0.0.1:%d/v1/webhook" % front.port, a.hook_file,
                          receiver=RECEIVER, group_by=("alertname", "pod"), group_wait="1s",
                          group_interval="1s", repeat_interval="4s")
        stop = threading.Event()
        errors, takeovers = [], []
        want = {}                           # pod -> "firing" / "resolved", as posted
        try:
            for r in s.replicas:
                r.start()
            am.start()

            def post(pod, firing, starts):
                # started a second before the post; resolved half a second before it
                if firing:
                    am.post([am_alert(pod, starts - 1)])
                else:
                    am.post([am_alert(pod, starts - 1, time.time() - 0.5)])
                want[pod] = "firing" if firing else "resolved"
                event("posted %s %s to Alertmanager" % (want[pod], pod))

            def killer():
                try:
                    for k in range(n_kills):
                        if stop.wait(kill_gaps[k]):
                            return
                        victim = poll(lambda: next((r for r in s.replicas if r.holds_lock()),
                                                   None), "a worker-lock holder", timeout_s=20)
                        victim.kill()
                        t_kill = time.time()
                        # Work for the survivor, through Alertmanager and the front.
                        probe = "probe-%d" % k
                        am.post([am_alert(probe, time.time() - 1)])
                        want[probe] = "firing"

                        def first_call():
                            later = [r["time"] for r in s.gh.get_requests() if r["time"] > t_kill]
                            return min(later) if later else None
                        t_call = poll(first_call, "the survivor's first GitHub call",
                                      timeout_s=20, interval_s=0.05)
                        takeovers.append(t_call - t_kill)
                        event("takeover %d: %.2f s (%s killed)" % (k + 1, t_call - t_kill,
                                                                  victim.name))
                        time.sleep(restart_gaps[k])
                        victim.start()
                except Exception as e:
                    errors.append("killer: %r" % e)

            drive_and_kill(lambda: drive_schedule(schedule, stop, post, errors), killer, 60,
                           errors, stop)

            def fingerprints():
                out = {}
                for d in front.get():
                    for x in (d["payload"] or {}).get("alerts", []):
                        out[x["labels"]["pod"]] = x["fingerprint"]
                return out

            def expected():
                fps = fingerprints()
                sender = Sender([])
                sender.acked = {fps.get(p, "missing-" + p): st for p, st in want.items()}
                return sender
            try:
                poll(lambda: settled(s.gh, expected(), s.replicas),
                     "every alert on GitHub in its final state", timeout_s=30, interval_s=0.5)
                unsettled = None
            except Failure as e:
                unsettled = str(e)  # the figures below say what is wrong
            time.sleep(2)  # a late wrong call (a duplicate) would show now
            issues, dups, cdups, lost, comments = verdict(s.gh, expected())
            deliveries = front.get()
            answers = collections.Counter(d["status"] for d in deliveries)
            by_replica = collections.Counter(r.name for d in deliveries for r in s.replicas
                                             if d["status"] == 200 and d["port"] == r.port)
            acked = last_acknowledged(deliveries)
            fps = fingerprints()
            holders = [r.name for r in s.replicas if r.holds_lock()]
            tk = sorted(takeovers)
            event("figures: seed=%d alerts=%d resolved=%d webhooks=%s answered_200_by=%s "
                  "refused_and_retried=%d kills=%d takeover_s=%s issues_checked=%d "
                  "comments_checked=%d duplicate_issues=%d duplicate_comments=%d lost=%d" % (
                      seed, len(want), len(resolved_pods), dict(answers), dict(by_replica),
                      front.refused, len(tk), ",".join("%.2f" % x for x in tk), len(issues),
                      comments, len(dups), len(cdups), len(lost)))
            eq(len(tk), n_kills, "takeovers measured")
            eq(sorted(fps), sorted(want), "every alert delivered by Alertmanager")
            eq(unsettled, None, "settled: every alert in its final state, the queue empty")
            eq({p: acked.get(fps[p], ("none",))[0] for p in want}, want,
               "each alert's last state answered 200")
            eq(dups, {}, "keys with more than one issue")
            eq(lost, [], "alerts missing on GitHub or in the wrong state")
            eq(cdups, [], "comments posted twice")
            eq(len(issues), len(want), "one issue per alert")
            eq(len(holders), 1, "replicas holding the worker lock at the end")
            check(all(by_replica[r.name] >= 1 for r in s.replicas),
                  "both replicas answered webhooks 200", dict(by_replica))
            check(tk[0] >= GRACE_S - 0.1, "no takeover before the grace", tk)
            check(tk[-1] <= GRACE_S + 1.0 + 0.25 + 4.0, "every takeover within the bound", tk)
        except Exception:
            print_tail("alertmanager log (last 30 lines)", am.proc.tail(30))
            raise
        finally:
            stop.set()
            for f in (am.stop, front.stop):
                try:
                    f()
                except Exception as e:
                    event("cleanup error: %s" % e)


@pg_case
def database_restarted_under_load():
    with Setup("restart") as s:
        sender = Sender(s.replicas)
        for r in s.replicas:
            r.start()
        stop = threading.Event()
        phase = ["before"]
        by_phase = collections.defaultdict(collections.Counter)
        errors = []

        def loader():
            k = 0
            try:
                while not stop.is_set() and k < 400:
                    fp = "d0d0d0d0d0d0%04x" % k
                    now = phase[0]
                    st, body = sender.post(alert(fp, True, time.time()), tries=1)
                    by_phase[now][st] += 1
                    if st not in (200, 503):
                        errors.append("webhook %s answered %s: %s" % (fp, st, body))
                    k += 1
                    stop.wait(0.1)
            except Exception as e:
                errors.append("loader: %r" % e)

        t = threading.Thread(target=loader, daemon=True)
        t.start()
        time.sleep(3)
        phase[0] = "stopping"
        s.pg_ctl("stop", "-m", "fast")
        phase[0] = "down"
        event("PostgreSQL stopped")
        poll(lambda: all(r.ready() == 503 for r in s.replicas),
             "/-/ready 503 on both replicas while the database is down", timeout_s=5)
        time.sleep(2)
        phase[0] = "starting"
        s.pg_ctl("start")
        phase[0] = "after"
        event("PostgreSQL started")
        poll(lambda: all(r.ready() == 200 for r in s.replicas),
             "/-/ready 200 on both replicas again", timeout_s=15)
        time.sleep(3)
        stop.set()
        t.join(30)
        check(not t.is_alive(), "loader finished")
        event("answers by phase: %s" % {k: dict(v) for k, v in by_phase.items()})
        check(not errors, "only 200 and 503 answers", errors[:5])
        check(by_phase["down"][503] >= 1, "webhooks answered 503 while the database is down",
              dict(by_phase["down"]))
        eq(by_phase["down"][200], 0, "webhooks answered 200 while the database is down")
        check(by_phase["before"][200] >= 5 and by_phase["after"][200] >= 5,
              "webhooks answered 200 before and after", {k: dict(v) for k, v in by_phase.items()})
        poll(lambda: settled(s.gh, sender, s.replicas),
             "every webhook answered 200 on GitHub", timeout_s=60, interval_s=0.5)
        issues, dups, cdups, lost, _ = verdict(s.gh, sender)
        event("figures: webhooks=%s issues=%d duplicate_issues=%d lost=%d" % (
            dict(sender.answers), len(issues), len(dups), len(lost)))
        eq(dups, {}, "keys with more than one issue")
        eq(lost, [], "acknowledged alerts missing on GitHub")
        logs = ""
        for r in s.replicas:
            with open(r.log_path, errors="replace") as f:
                logs += f.read()
        check(re.search(r'msg="webhook rejected" code=503 reason="store unavailable"', logs),
              "a log line for each 503")


@pg_case
def webhook_on_the_standby_seen_quickly():
    with Setup("wake") as s:
        a, b = s.replicas
        a.start()
        poll(a.holds_lock, "A holds the worker lock", timeout_s=10)
        b.start()
        time.sleep(GRACE_S + 0.5)
        check(a.holds_lock() and not b.holds_lock(), "A acts, B stands by")
        sender = Sender([b])
        lat = []
        for k in range(8):
            time.sleep(0.3 + 0.13 * k)  # the worker idle, at another point of its wait each time
            st, body = sender.post(alert("c0c0c0c0c0c0%04x" % k, True, time.time()), tries=1)
            eq(st, 200, "webhook to the standby")
            t0 = time.time()
            t1 = poll(lambda: min([r["time"] for r in s.gh.get_requests() if r["time"] > t0],
                                  default=None), "A's GitHub call for it", timeout_s=10,
                      interval_s=0.02)
            lat.append(t1 - t0)
        event("standby webhook -> active's first GitHub call: %s s" % (
            " ".join("%.3f" % x for x in lat)))
        # Waits of 250 ms (STORE_SHARED_WAIT_MS) put nearly all under 0.3 s; waits of 1 s would
        # put most over it.  One may be late on a loaded machine.
        slow = [x for x in lat if x > 0.3]
        check(len(slow) <= 1 and statistics.mean(lat) < 0.3,
              "webhooks taken by the standby seen within 0.3 s (one late allowed)", lat)


if __name__ == "__main__":
    sys.exit(cases_main(run, "PG_FAILOVER_ONLY"))
