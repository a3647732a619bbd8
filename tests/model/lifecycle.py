#!/usr/bin/env python3
# run.sh: weight 95, quick 8
# (make check runs it on MODEL_SEEDS=10 seeds, the ASan stage on 25)
"""lifecycle.py - the model-based lifecycle test of the bridge.

Drives the real alertbridge binary against the fake GitHub (tests/integration/fake_github.py)
with seeded random sequences of steps, keeps a reference model of what GitHub must show
(tests/model/reference.py; DESIGN.md, "Bridge semantics") and, at every quiet point (the
bridge's queue empty), checks:

  - every event is done, or dead-lettered with a reason (none stuck pending);
  - for every alert (or group): exactly the issues the model expects, each in the expected
    state and state_reason, with the expected number of alertbridge comments - so one open
    issue per firing alert, none left open for a resolved one under auto_close, no duplicate
    issue - and no alertbridge comment twice on an issue (same transition marker);
  - the map (read-only: the sqlite file, or the PostgreSQL database through psql) equal to
    GitHub: each row names the alert's current issue, in GitHub's state (unless a person
    changed it since), issue 0 only for a dry-run row;
  - each issue in the repository the model expects (its route's when it was made), a linked
    issue's body linking the one it supersedes, every issue by the login of acme's credential
    and every rebuild listing by that login (config_steps.py).

One seed is one world: its own fake GitHub (repos acme/alerts, acme/moved for transfers and
acme/rerouted for reroutes), its own
alertbridge process and database, alerts of receivers "alerts" (issue_per: alert,
auto_close), "keep" (auto_close: false) and "groups" (issue_per: group), and MODEL_STEPS
steps (default 60) drawn from the enabled feature classes:

  fire resolve repeat dup ooo      firing, resolved, repeats, duplicates from two
                                   Alertmanagers (sent concurrently), out-of-order delivery
  refire refire_past               re-fire inside and past reopen_window (the fake ages the
                                   issue's closed_at: no wall clock is waited on)
  close wontfix reopen delete transfer   a person closes (completed / not planned),
                                   reopens, deletes or transfers an issue
  faults ratelimit timeout         GitHub 5xx, lost answers (before and after the write),
                                   403/429 with Retry-After, timeouts
  kill lostdb dryrun               SIGKILL and restart, a lost database (files removed; on
                                   PostgreSQL DROP DATABASE ... WITH (FORCE) and CREATE again),
                                   dry-run -> live
  group noclose storms badrepo     issue_per: group, auto_close: false, storms on (below
                                   their threshold) and off, an alert routed to a repository
                                   that does not exist (beside a good one in one webhook)
  refused                          GitHub refuses a write for good (issue 18 item 5): a
                                   firing alert's issue is locked or its repository archived
                                   when it resolves; the resolve is dead-lettered at once with
                                   GitHub's 403 message and changes nothing; once a person
                                   lifts the cause, `map retry KEY` applies it
  silence                          `/silence` and `/unsilence` on the issue, against a fake
                                   Alertmanager (tests/model/silence_steps.py, issue 21)
  reroute                          a receiver with issue_per: alert gets a route that sends some
                                   of its alerts to acme/rerouted, or loses it (the route flips
                                   back), and the bridge reloads (POST /-/reload, SIGHUP) or
                                   restarts (issue 18; tests/model/config_steps.py): an alert
                                   with an issue keeps it, a new issue (a new alert, a re-fire
                                   past reopen_window, after a deletion) is made where the route
                                   points then, a linked one linking the issue it supersedes

Credentials per organisation (issue 18 items 1, 2 and 6; config_steps.py): in the worlds of even
seeds the default token acts as one login and github.credentials gives the owner acme its own
credential, which acts as another (the fake keeps each issue's author): a token (seeds 0 mod 4,
login model-acme-bot) or a GitHub App (seeds 2 mod 4, model-acme[bot], learned from GET /app
with the App's JWT; GET /user is refused to it).  So a lost database is rebuilt by listing the
issues of acme's own login; a rebuild by the default's login would find none and duplicate them.

Lost database and reroutes: the bridge scans a repository for a receiver's issues once per
database, before the first event of the receiver its route sends there, together with every
other repository the receiver's configuration names then that it has not scanned yet
(bridge_scan.c); the model follows it (World.before_event; a repeat the store does not keep
makes no scan).  An alert whose issue is in a repository its route no longer names is found by
that scan while the configuration names the repository; one in a repository it no longer names
at the scan is out of reach (docs/guarantees.md), and the model expects the second issue.
Found by this model and fixed (issue 20): the bridge scanned only the repository the event's
route named, so an alert rerouted since its issue was made got a second issue after a lost
database (seed 5 of fire,resolve,repeat,refire,refire_past,kill,lostdb,reroute).

Found by this model and fixed: a group whose map row was rebuilt after a lost database, whose
issue a person then deleted, and whose first event since is its resolve, went on as the row's
episode at its next firing and fired with no issue (seed 90); the row now records a resolve
that met its issue deleted (bridge.c finish()).

Not modelled: a storm that folds alerts into summaries (storms are on, below their threshold),
reroutes of an issue_per: group receiver (its repository comes from the group's first alert,
which depends on the payload's order; tests/integration/test_routing.py covers it),
the group body's task list (its text is not checked), bad input (tests/integration covers it),
the janitor and its Slack postpone (issue 21 section 2: no pods in these worlds; the janitor's
own tests cover it).

Times that matter come from the payloads (startsAt/endsAt, a virtual clock in the past) and
the fake (closed_at); the binary runs with --test.second-ms (its own pacing and
backoff scaled down; GitHub's Retry-After is honoured as is).

Env (or flags): MODEL_SEEDS=N (default 200: seeds 1..N), MODEL_SEED=S (only seed S),
MODEL_FIRST=F (first seed, default 1), MODEL_STEPS (default 60), MODEL_JOBS (worlds run at
once, default 4), MODEL_FEATURES (comma list; "all" by default; "-x,-y" = all but x, y),
MODEL_REPEAT=N (run MODEL_SEED N times), MODEL_KEEP=1 (keep every world's directory; a
failing world's is always kept), ALERTBRIDGE_BIN (default ./alertbridge),
MODEL_ENGINE=sqlite|postgres (default sqlite; tests/model/lifecycle_pg.py sets postgres).
On PostgreSQL each world's store is a fresh database (tests/integration/pg.py) on the cluster
AB_TEST_PG_URI names (tests/run.sh starts one), or on a private cluster this run starts and
removes at its end; a kept world keeps its database (on a cluster that outlives the run only).
A failing seed prints what it saw, its steps, the log lines of the keys involved, the log's
tail and a one-line replay command.  A replay runs the same steps; what depends on timing (the
instant of a SIGKILL, which request meets an injected fault) may need MODEL_REPEAT to recur.
The last line is "N passed, N failed" (one per seed).
"""

import hashlib
import os
import random
import re
import shutil
import signal  # noqa: F401 - campaign.py uses lc.signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from fake_github import FakeGitHub  # noqa: E402
from harness import free_port, http, iso_ms, webhook_payload  # noqa: E402
import model_suite  # noqa: E402
from model_suite import ENGINE, ModelFailure, Suite, walk_steps  # noqa: E402,F401 - janitor_model
import reference  # noqa: E402
from reference import Key, apply_event, rebuild  # noqa: E402
from silence_steps import SilenceSteps, group_labels  # noqa: E402
from config_steps import REROUTED, ConfigSteps  # noqa: E402
from world_process import BIN, SECOND_MS, Psql, ServeProcess  # noqa: E402,F401 - janitor_model

FEATURES = ("fire", "resolve", "repeat", "dup", "ooo", "refire", "refire_past", "close",
            "wontfix", "reopen", "delete", "transfer", "faults", "ratelimit", "timeout", "kill",
            "lostdb", "dryrun", "group", "noclose", "storms", "badrepo", "refused", "silence",
            "reroute")
REPO = "acme/alerts"
MOVED = "acme/moved"
MISSING = "acme/missing"
GH_TOKEN = "ghs_modelToken0123456789"
HOOK_TOKEN = "model-webhook-secret"
WINDOW_S = 3600          # reopen_window
QUIET_S = 12             # a quiet point waits at most this long
MARK_RE = re.compile(r"<!--\s*alertbridge:key=([A-Za-z0-9._-]{1,128})\s*-->")
BOT_MARK_RE = re.compile(r"<!--\s*alertbridge:episode=[^>]*-->")


# ----- one world -------------------------------------------------------------------------------

class Alert:
    def __init__(self, rng, receiver, n, repo_label=None):
        self.fp = "%016x" % rng.getrandbits(64)
        self.labels = {"alertname": "Model%s%d" % (receiver.capitalize(), n),
                       "instance": "node-%d" % n, "severity": "warning"}
        if repo_label:
            self.labels["alertbridge_repo"] = repo_label
        self.receiver = receiver
        self.firing = False
        self.starts = None
        self.ends = None
        self.sent = []            # every (firing, starts, ends) generated, in order

    def notification(self, firing=None, starts=None, ends=None):
        if firing is None:
            firing, starts, ends = self.firing, self.starts, self.ends
        return {"fingerprint": self.fp, "status": "firing" if firing else "resolved",
                "labels": dict(self.labels),
                "annotations": {"summary": "model alert %s" % self.labels["instance"]},
                "startsAt": iso_ms(starts / 1000.0),
                "endsAt": iso_ms(ends / 1000.0) if not firing else "0001-01-01T00:00:00Z"}


class Group:
    def __init__(self, rng, n, members):
        self.labels = {"alertname": "ModelGroup%d" % n, "gk": "%x" % rng.getrandbits(32)}
        self.group_key = '{}/{}:{alertname="%(alertname)s", gk="%(gk)s"}' % self.labels
        self.key = hashlib.sha256(self.group_key.encode()).hexdigest()
        self.members = members
        self.active = False       # firing episode of the group
        self.starts = None        # the group episode's start
        self.ends = None
        self.last = None          # last payload sent


class World(SilenceSteps, ConfigSteps, ServeProcess):
    serve_flags = ("--web.enable-lifecycle",)  # POST /-/reload (the reroute step)
    hook_token = HOOK_TOKEN                     # which POST /-/reload takes too

    def __init__(self, seed, features, steps, keep):
        self.seed = seed
        self.features = features
        self.rng = random.Random(seed)
        self.n_steps = steps
        self.keep = keep
        self.log_lines = []
        self.dir = tempfile.mkdtemp(prefix="ab-model-%d-" % seed)
        self.gh = None
        self.proc = None
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.db = os.path.join(self.dir, "alertbridge.db")
        self.uri = None           # PostgreSQL: the world's database (run() creates it)
        self.psql = None
        self.step_no = 0
        self.quiet_s = QUIET_S
        self.log_path = os.path.join(self.dir, "alertbridge.log")
        rng = self.rng
        self.config_init(features)
        self.dry = "dryrun" in features and rng.random() < 0.5
        self.dry_until = rng.randint(5, max(6, steps // 2)) if self.dry else -1
        self.storms = "storms" in features and rng.random() < 0.5
        self.vt = int((time.time() - 20 * 86400) * 1000)
        self.keys = {}
        self.alerts = []
        for n in range(rng.randint(2, 4)):
            self.add_alert(Alert(rng, "alerts", n))
        if "noclose" in features:
            for n in range(2):
                self.add_alert(Alert(rng, "keep", n), auto_close=False)
        self.bad = None
        if "badrepo" in features:
            self.bad = Alert(rng, "alerts", 9, repo_label=MISSING)
            self.keys[("alerts", self.bad.fp)] = Key("alerts", self.bad.fp, bad=True)
        self.groups = []
        if "group" in features:
            for n in range(2):
                g = Group(rng, n, [Alert(rng, "groups", 10 * n + m) for m in range(3)])
                self.groups.append(g)
                self.keys[("groups", g.key)] = Key("groups", g.key)
        self.rebuild_pending = self.all_scans()
        self.held = []            # notifications held back (out-of-order delivery)
        self.newest = {}          # (receiver, key) -> the state of its newest stored event

    def add_alert(self, a, auto_close=True):
        self.alerts.append(a)
        self.keys[(a.receiver, a.fp)] = Key(a.receiver, a.fp, auto_close=auto_close)

    def note(self, msg):
        self.log_lines.append("step %d: %s" % (self.step_no, msg))

    def fail(self, msg):
        raise ModelFailure(msg)

    # ----- processes -------------------------------------------------------------------------
    def write_config(self):
        storm = "    storm: {enabled: true, storm_after: 1h}\n" if self.storms else ""
        with open(os.path.join(self.dir, "webhook-token"), "w") as f:
            f.write(HOOK_TOKEN + "\n")
        with open(os.path.join(self.dir, "github-token"), "w") as f:
            f.write(GH_TOKEN + "\n")
        secret, am = self.silence_config()
        creds = secret + self.credentials_config() + am
        with open(os.path.join(self.dir, "alertbridge.yml"), "w") as f:
            f.write("listen_address: 127.0.0.1:%d\n"
                    "database: \"%s\"\n"
                    "log: {level: debug, format: logfmt}\n"
                    "webhook: {bearer_token_file: webhook-token}\n"
                    "github:\n"
                    "  api_url: %s\n"
                    "  token_file: github-token\n"
                    "  content_per_minute: 80\n"
                    "  timeout: 1s\n"
                    "  dry_run: %s\n"
                    "%s"
                    "receivers:\n"
                    % (self.port, self.uri or "alertbridge.db", self.gh.url,
                       "true" if self.dry else "false", creds))
            for name, extra in (("alerts", ""), ("keep", "    auto_close: false\n"),
                                ("groups", "    issue_per: group\n")):
                f.write("  - name: %s\n"
                        "    repo: %s\n"
                        "    labels: [alert]\n"
                        "    reopen_window: 1h\n"
                        "%s%s%s" % (name, REPO, extra, storm, self.routes_config(name)))
            f.write("janitor:\n  enabled: false\n")

    # ----- delivering notifications ----------------------------------------------------------
    def post(self, receiver, alerts, group_key=None, status=None):
        p = webhook_payload(receiver, alerts, status=status)
        if group_key:
            p["groupKey"], p["groupLabels"] = group_key, group_labels(group_key)
        st, _, body = http("POST", self.url + "/v1/webhook", p, timeout_s=10,
                           headers={"Authorization": "Bearer " + HOOK_TOKEN})
        if st != 200:
            self.fail("webhook answered %s: %s" % (st, body))
        return p

    @staticmethod
    def all_scans():
        """The (receiver, repository) scans a new database has still to make."""
        return {(r, repo) for r in ("alerts", "keep", "groups") for repo in (REPO, REROUTED)}

    def stored(self, receiver, key, firing, starts, ends):
        """Whether the store keeps this notification as an event: not when it repeats the
        state of the key's newest event (store.h store_enqueue), which then makes no scan."""
        state = (firing, starts, None if firing else ends)
        if self.newest.get((receiver, key)) == state:
            return False
        self.newest[(receiver, key)] = state
        return True

    def before_event(self, receiver, repo):
        """The bridge scans the issues of (receiver, repo) before its first event there since
        the database was made, together with every other repository the receiver's
        configuration names now that it has not scanned yet (bridge_scan.c): the keys without
        a row take their newest issue in those repositories.  An issue in a repository the
        configuration no longer names is out of reach (docs/guarantees.md): the model then
        expects the second issue the bridge makes."""
        if self.dry or (receiver, repo) not in self.rebuild_pending:
            return
        repos = {r for r in {repo} | self.configured_repos(receiver, REPO)
                 if (receiver, r) in self.rebuild_pending}
        self.rebuild_pending -= {(receiver, r) for r in repos}
        rebuild([k for k in self.keys.values() if k.receiver == receiver], self.body_of, repos)

    def body_of(self, issue):
        """The body GitHub has now for an issue the model bound at a quiet point."""
        for i in self.gh.issues(issue.repo) if issue.repo else ():
            if i["number"] == issue.number:
                return i["body"]
        return None

    def deliver(self, a, firing, starts, ends, dup=False):
        """Post one alert's notification (twice at once when dup) and apply it to the model."""
        n = a.notification(firing, starts, ends)
        alerts = [n]
        bad = self.bad is not None and a.receiver == "alerts" and self.rng.random() < 0.15
        if bad:
            alerts.append(self.bad.notification(True, self.vt, None))
        if dup:
            errs = []

            def one():
                try:
                    self.post(a.receiver, alerts)
                except Exception as e:  # noqa: BLE001 - reported below
                    errs.append(e)
            ts = [threading.Thread(target=one) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(15)
            if errs:
                raise errs[0]
        else:
            self.post(a.receiver, alerts)
        repo = self.route_of(a.receiver, a.fp, REPO)
        k = self.keys[(a.receiver, a.fp)]
        if self.stored(a.receiver, a.fp, firing, starts, ends):
            self.before_event(a.receiver, repo)
            what = apply_event(k, firing, starts, ends, self.dry, repo)
        else:
            # No event, so nothing happens, even when a scan since found the alert an issue
            # (a repository a reroute named again: seed 4 on PostgreSQL).
            what = "nothing (a repeat the store does not keep)"
        if what.startswith("create"):
            what += " in " + repo
        self.note("%s%s %s %s starts=%d%s -> %s" % (
            "dup " if dup else "", a.receiver, a.fp, "firing" if firing else "resolved",
            starts, "" if firing else " ends=%d" % ends, what))
        if bad:
            self.note("  + alert %s routed to %s (must be dead-lettered)" % (self.bad.fp,
                                                                            MISSING))

    def deliver_group(self, g, dup=False):
        # As Alertmanager sends a group: its firing alerts and those resolved in this episode
        # (an alert resolved in an earlier episode was flushed long ago).
        alerts = [m.notification() for m in g.members if m.starts is not None and (
            m.firing or (m.ends is not None and m.ends >= g.starts))]
        firing = any(m.firing for m in g.members)
        ps = self.post("groups", alerts, group_key=g.group_key)
        if dup:
            self.post("groups", alerts, group_key=g.group_key)
        g.last = ps
        self.before_event("groups", REPO)
        k = self.keys[("groups", g.key)]
        what = apply_event(k, firing, g.starts, g.ends if not firing else None, self.dry, REPO)
        self.note("%sgroup %s %s [%s] -> %s" % (
            "dup " if dup else "", g.key[:12], "firing" if firing else "resolved",
            " ".join("%s:%s" % (m.fp[:6], "F" if m.firing else "R") for m in g.members
                     if m.starts is not None), what))

    # ----- quiet points and invariants -------------------------------------------------------
    def events(self, kind="bridge"):
        if self.uri:
            try:
                return [(int(r[0]), r[1], r[2], r[3], r[4], int(r[5]), r[6]) for r in
                        self.psql.rows("SELECT id, receiver, key, status, state, attempts, "
                                       "coalesce(last_error, '') FROM events "
                                       "WHERE kind = '%s'" % kind)]
            except RuntimeError as e:
                if "does not exist" in str(e):  # not migrated yet
                    return []
                raise
        if not os.path.exists(self.db):
            return []
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
        try:
            return con.execute("SELECT id, receiver, key, status, state, attempts, last_error "
                               "FROM events WHERE kind = ?", (kind,)).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            con.close()

    def map_rows(self):
        if self.uri:
            return [(r[0], r[1], r[2], int(r[3]), r[4]) for r in
                    self.psql.rows("SELECT receiver, key, repo, number, state FROM issues")]
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=5)
        try:
            return con.execute("SELECT receiver, key, repo, number, state FROM issues").fetchall()
        finally:
            con.close()

    def quiet(self):
        deadline = time.time() + self.quiet_s
        while True:
            if self.proc is None or self.proc.poll() is not None:
                self.fail("alertbridge died (exit %s)" % (self.proc and self.proc.returncode))
            pending = [e for e in self.events() + (self.events("silence") if self.am else [])
                       if e[4] == "pending"]
            if not pending:
                return
            if time.time() > deadline:
                self.fail("events stuck pending after %d s (none may be): %s" % (
                    self.quiet_s, "; ".join("event %d %s %s %s attempts=%d error=%s" % (
                        e[0], e[1], e[2][:16], e[3], e[5], e[6]) for e in pending[:5])))
            time.sleep(0.01)

    def check(self):
        self.quiet()
        with self.gh.lock:
            self.gh.faults = []
        problems = []
        bad_keys = {k.key for k in self.keys.values() if k.bad}
        for e in self.events():
            if e[4] == "dead":
                if not e[6]:
                    problems.append("event %d dead-lettered without a reason" % e[0])
                elif e[2] not in bad_keys:
                    problems.append("event %d (%s %s %s) dead-lettered: %s" % (
                        e[0], e[1], e[2][:16], e[3], e[6]))
        actual = {}
        ours = []
        for repo in (REPO, MOVED, REROUTED):
            for i in self.gh.issues(repo):
                m = MARK_RE.findall(i["body"] or "")
                if m:
                    actual.setdefault(m[-1], []).append((i["id"], repo, i))
                    ours.append((repo, i))
        for k in self.keys.values():
            exp = [i for i in k.issues if not i.deleted]
            act = [x[1:] for x in sorted(actual.get(k.key, []), key=lambda x: x[0])]
            if len(act) != len(exp):
                problems.append("%s %s: %d issue(s) on GitHub (%s), the model expects %d (%s)" % (
                    k.receiver, k.key[:16], len(act),
                    ", ".join("%s#%d %s" % (r, i["number"], i["state"]) for r, i in act),
                    len(exp), ", ".join(i.desc() for i in exp)))
                continue
            for want, (repo, got) in zip(exp, act):
                want.number = got["number"]
                where = "%s %s %s#%d" % (k.receiver, k.key[:16], repo, got["number"])
                if repo != want.repo:
                    problems.append("%s: the model expects it in %s" % (where, want.repo))
                    want.repo = repo
                problems += self.check_prev_link(where, want, got["body"])
                if (got["state"], got["state_reason"]) != (want.state, want.reason):
                    problems.append("%s: %s/%s on GitHub, the model expects %s/%s" % (
                        where, got["state"], got["state_reason"], want.state, want.reason))
                marks = []
                for c in self.gh.comments(repo, got["number"]):
                    marks += BOT_MARK_RE.findall(c["body"] or "")
                dups = sorted({m for m in marks if marks.count(m) > 1})
                if dups:
                    problems.append("%s: the same comment twice: %s" % (where, dups))
                if len(marks) != want.comments:
                    problems.append("%s: %d alertbridge comment(s), the model expects %d" % (
                        where, len(marks), want.comments))
            if k.bad and act:
                problems.append("an alert routed to %s got an issue" % MISSING)
        if not problems:
            problems += self.check_map() + self.check_silences() + self.check_logins(ours)
        if problems:
            self.fail("invariants broken at a quiet point:\n    " + "\n    ".join(problems))
        self.note("quiet point: invariants hold")

    def check_map(self):
        out = []
        rows = {(r[0], r[1]): r for r in self.map_rows()}
        for k in self.keys.values():
            r = rows.get((k.receiver, k.key))
            if k.bad:
                if r is not None and r[3] > 0:
                    out.append("map row of the alert routed to %s names an issue" % MISSING)
                continue
            if k.row == "live":
                i = k.current()
                if r is None:
                    out.append("%s %s: no map row, the model expects %s" % (
                        k.receiver, k.key[:16], i.desc()))
                    continue
                names = {(i.repo, i.number)}
                if i.old:
                    names.add(i.old)
                if (r[2], r[3]) not in names:
                    out.append("%s %s: the map names %s#%d, GitHub's issue is %s" % (
                        k.receiver, k.key[:16], r[2], r[3], i.desc()))
                elif not i.human and r[4] != i.state:
                    out.append("%s %s: the map says %s, GitHub %s (%s)" % (
                        k.receiver, k.key[:16], r[4], i.state, i.desc()))
            elif k.row == "dry":
                if r is None or r[3] != 0:
                    out.append("%s %s: the model expects a dry-run row (issue 0), map: %s" % (
                        k.receiver, k.key[:16], r))
            elif k.row is None and r is not None and r[3] > 0:
                out.append("%s %s: the map names %s#%d, the model knows no issue of it" % (
                    k.receiver, k.key[:16], r[2], r[3]))
            elif r is not None and r[3] == 0 and not self.dry:
                out.append("%s %s: a live map row with issue 0 (%s)" % (
                    k.receiver, k.key[:16], r))
        return out

    # ----- the steps -------------------------------------------------------------------------
    def tick(self):
        self.vt += self.rng.randint(1, 600) * 1000

    def live_issue(self, pred):
        """Keys whose current issue (bound at the last quiet point) matches pred."""
        return [k for k in self.keys.values()
                if k.row == "live" and k.current().number is not None and pred(k.current())]

    def choose(self):
        f = self.features
        rng = self.rng
        opts = []

        def add(name, w):
            opts.append((name, w))
        add("fire", 6)
        if "resolve" in f:
            add("resolve", 5)
        if "repeat" in f:
            add("repeat", 2)
        if "dup" in f:
            add("dup", 2)
        if "ooo" in f:
            add("ooo", 2)
        if "refire_past" in f and not self.dry:
            add("refire_past", 2)
        if "group" in f:
            add("group", 4)
        if not self.dry:
            for name, w in (("close", 1), ("wontfix", 1), ("reopen", 1), ("delete", 1),
                            ("transfer", 1), ("faults", 2), ("ratelimit", 0.3),
                            ("timeout", 0.3), ("lostdb", 0.5), ("refused", 0.5),
                            ("silence", 1), ("reroute", 1)):
                if name in f:
                    add(name, w)
        if "kill" in f:
            add("kill", 1)
        total = sum(w for _, w in opts)
        x = rng.random() * total
        for name, w in opts:
            x -= w
            if x <= 0:
                return name
        return opts[-1][0]

    def step(self):
        rng = self.rng
        f = self.features
        self.tick()
        if self.dry and self.step_no >= self.dry_until:
            self.check()
            self.stop()
            self.dry = False
            for k in self.keys.values():  # store_dry_rows_go_live: their next one is stored
                if k.row == "dry":
                    self.newest.pop((k.receiver, k.key), None)
            self.write_config()
            self.start()
            self.note("dry-run -> live: restarted with dry_run: false")
            return
        what = self.choose()
        if what == "fire":
            a = rng.choice(self.alerts)
            if not a.firing:
                if a.ends is not None and "refire" not in f:
                    what = "repeat"
                else:
                    a.firing, a.starts, a.ends = True, self.vt, None
                    a.sent.append((True, a.starts, None))
            if a.firing:
                self.deliver(a, True, a.starts, None)
                return
        if what == "resolve":
            fl = [a for a in self.alerts if a.firing]
            if fl:
                a = rng.choice(fl)
                a.firing, a.ends = False, self.vt
                a.sent.append((False, a.starts, a.ends))
                self.deliver(a, False, a.starts, a.ends)
                return
            what = "repeat"
        if what in ("repeat", "dup"):
            sent = [a for a in self.alerts if a.sent]
            if sent:
                a = rng.choice(sent)
                fi, s, e = a.sent[-1]
                self.deliver(a, fi, s, e, dup=(what == "dup"))
            return
        if what == "ooo":
            # An older notification arrives late, or the last two arrive swapped.
            cands = [a for a in self.alerts if len(a.sent) >= 2 and
                     not self.keys[(a.receiver, a.fp)].uncertain]
            if not cands:
                return
            a = rng.choice(cands)
            if rng.random() < 0.5 and "refire" in f:
                old = a.sent[-1]
                # the next transition happens at once and is delivered before `old` again
                if a.firing:
                    a.firing, a.ends = False, self.vt
                else:
                    a.firing, a.starts, a.ends = True, self.vt, None
                a.sent.append((a.firing, a.starts, a.ends))
                self.deliver(a, a.firing, a.starts, a.ends)
                self.deliver(a, *old)
            else:
                old = a.sent[rng.randrange(len(a.sent) - 1)]
                self.deliver(a, *old)
            return
        if what == "refire_past":
            # Only issues no person touched: the map caches a person's not_planned, and the
            # test can age GitHub's closed_at but not the map's.
            ks = self.live_issue(lambda i: i.state == "closed" and not i.aged and not i.human)
            ks = [k for k in ks if k.receiver != "groups"]
            if not ks:
                return
            k = rng.choice(ks)
            i = k.current()
            self.check()
            self.gh.age(i.repo, i.number, 2 * WINDOW_S)
            i.aged = True
            self.note("%s#%d closed 2 h ago now (past reopen_window)" % (i.repo, i.number))
            a = next((a for a in self.alerts if a.fp == k.key), None)
            if a is not None and not a.firing:
                a.firing, a.starts, a.ends = True, self.vt, None
                a.sent.append((True, a.starts, None))
                self.deliver(a, True, a.starts, None)
            return
        if what == "group":
            g = rng.choice(self.groups)
            m = rng.choice(g.members)
            if not m.firing:
                m.firing, m.starts, m.ends = True, self.vt, None
                if not g.active:
                    g.active, g.starts, g.ends = True, self.vt, None
            else:
                m.firing, m.ends = False, self.vt
                if not any(x.firing for x in g.members):
                    g.active, g.ends = False, self.vt
            self.deliver_group(g, dup=("dup" in f and rng.random() < 0.3))
            return
        if what in ("close", "wontfix", "reopen", "delete", "transfer"):
            self.check()
            if what in ("close", "wontfix", "delete", "transfer"):
                ks = self.live_issue(lambda i: i.state == "open" or what in (
                    "delete", "transfer"))
            else:
                ks = self.live_issue(lambda i: i.state == "closed")
            if what == "transfer":
                ks = [k for k in ks if not k.current().transferred]
            if not ks:
                return
            k = rng.choice(ks)
            i = k.current()
            if what in ("close", "wontfix"):
                reason = "completed" if what == "close" else "not_planned"
                self.gh.human_close(i.repo, i.number, reason)
                i.state, i.reason, i.aged = "closed", reason, False
            elif what == "reopen":
                self.gh.human_reopen(i.repo, i.number)
                i.state, i.reason, i.aged = "open", "reopened", False
            elif what == "delete":
                self.gh.delete(i.repo, i.number)
                i.deleted = True
                k.row = "gone"
            else:
                to, n = self.gh.transfer(i.repo, i.number, MOVED)
                i.old = (i.repo, i.number)
                i.repo, i.number, i.transferred = to, n, True
            i.human = True
            self.note("a person: %s %s %s" % (what, k.key[:16], i.desc()))
            return
        if what in ("faults", "ratelimit", "timeout"):
            path = r"/repos/acme/(alerts|moved|rerouted)/issues.*"
            method = rng.choice(["POST", "PATCH", "GET", ".*"])
            if what == "faults":
                action = rng.choice(["respond", "respond_after", "drop", "drop_after"])
                status = rng.choice([500, 502, 503])
                self.gh.add_fault(method=method, path=path, count=rng.randint(1, 2),
                                  status=status, action=action, body={"message": "boom"})
                self.note("fault: next %s %s -> %s %d" % (method, path, action, status))
            elif what == "ratelimit":
                if rng.random() < 0.5:
                    st, body = 429, {"message": "API rate limit exceeded"}
                else:
                    st, body = 403, {"message": "You have exceeded a secondary rate limit."}
                self.gh.add_fault(method=method, path=path, count=1, status=st, body=body,
                                  headers={"Retry-After": "1"})
                self.note("fault: next %s -> %d Retry-After: 1" % (method, st))
            else:
                self.gh.add_fault(method=method, path=path, count=1, action="delay_after",
                                  delay_ms=1300)
                self.note("fault: next %s answered after the 1 s timeout (done)" % method)
            return
        if what == "refused":
            self.refused()
            return
        if what == "silence":
            self.silence_step()
            return
        if what == "reroute":
            self.reroute()
            return
        if what == "kill":
            time.sleep(rng.random() * 0.03)
            self.kill()
            self.start()
            self.note("SIGKILL and restart")
            return
        if what == "lostdb":
            self.check()
            self.kill()
            if self.uri:
                self.psql.close()
                model_suite.PG.drop_database(self.uri)
                model_suite.PG.create_database(self.db_name)
            for suffix in ("", "-wal", "-shm", "-journal"):
                try:
                    os.unlink(self.db + suffix)
                except FileNotFoundError:
                    pass
            self.map_lost()
            self.start()
            self.note("database lost (SIGKILL, %s, restart)" % (
                "database dropped and created again" if self.uri else "files removed"))
            return

    def map_lost(self):
        """The model after the database was lost: no rows; each receiver's next event rebuilds
        its map from GitHub's markers (before_event)."""
        for k in self.keys.values():
            k.row, k.cur, k.ep, k.res_end = None, None, None, None
        self.rebuild_pending = self.all_scans()
        self.newest = {}
        self.silence_lost()

    def refused(self):
        """A firing alert whose issue is open resolves while GitHub refuses the comment for good
        (403: the issue locked, or its repository archived): dead-lettered at once with GitHub's
        message, nothing changed; the cause lifted, `map retry` applies the resolve then."""
        self.check()
        cands = []
        for a in self.alerts:
            k = self.keys[(a.receiver, a.fp)]
            if a.firing and k.row == "live" and k.current().state == "open" and \
                    k.current().number is not None:
                cands.append((a, k))
        if not cands:
            return
        a, k = self.rng.choice(cands)
        i = k.current()
        locked = self.rng.random() < 0.5
        if locked:
            self.gh.lock_issue(i.repo, i.number)
            message = "Unable to create comment because issue is locked."
        else:
            self.gh.archive(i.repo)
            message = "Repository was archived so is read-only."
        a.firing, a.ends = False, self.vt
        a.sent.append((False, a.starts, a.ends))
        self.post(a.receiver, [a.notification()])
        self.quiet()
        ev = max((e for e in self.events() if e[2] == a.fp), key=lambda e: e[0])
        if ev[4] != "dead" or not ev[6].endswith("403 forbidden: " + message):
            self.fail("a resolve refused by GitHub (%s) is %s, not dead-lettered with its "
                      "message: %s" % (message, ev[4], ev[6]))
        if locked:
            self.gh.lock_issue(i.repo, i.number, False)
        else:
            self.gh.archive(i.repo, False)
        out = subprocess.run([BIN, "map", "retry", a.fp, "--receiver=" + a.receiver,
                              "--config.file=alertbridge.yml"], cwd=self.dir,
                             capture_output=True, text=True, timeout=20)
        if out.returncode != 0:
            self.fail("map retry exited %d: %s" % (out.returncode, out.stderr.strip()))
        repo = self.route_of(a.receiver, a.fp, REPO)
        self.stored(a.receiver, a.fp, False, a.starts, a.ends)
        self.before_event(a.receiver, repo)
        what = apply_event(k, False, a.starts, a.ends, self.dry, repo)
        self.note("%s %s resolved, refused (%s), dead-lettered, then map retry -> %s" % (
            a.receiver, a.fp, "locked" if locked else "archived", what))

    def run(self):
        if ENGINE == "postgres":
            self.db_name = "model_%d_%s" % (self.seed, uuid.uuid4().hex[:8])
            self.uri = model_suite.PG.create_database(self.db_name)
            self.psql = Psql(self.uri)
        self.gh = FakeGitHub(token=GH_TOKEN, repos=[REPO, MOVED, REROUTED],
                             search_lag_s=60).start()
        self.credentials_setup(GH_TOKEN)
        # A SIGKILL resets the bridge's kept-alive connections: not worth a traceback.
        self.gh.server.handle_error = lambda request, address: None
        self.write_config()
        self.step_no = 0
        self.note("world: %d alerts, %d groups, dry-run until step %d, storms %s%s" % (
            len(self.alerts), len(self.groups), self.dry_until, "on" if self.storms else "off",
            self.credentials_desc()))
        self.start()
        walk_steps(self, 0.25)
        if self.dry:
            self.check()
        else:
            self.check()

    def figures(self):
        """What the world measured, for Suite.summarize (none here)."""
        return {}

    def close(self):
        try:
            self.stop()
        except Exception:  # noqa: BLE001
            self.kill()
        if self.gh:
            self.gh.stop()
        self.silence_close()
        if self.psql:
            self.psql.close()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
            if self.uri:
                model_suite.PG.drop_database(self.uri)




LIFECYCLE = Suite(World, FEATURES, "tests/model/lifecycle.py")


def main(suite=None):
    """Run the seeds of suite (default LIFECYCLE) the environment asks for (model_suite.py);
    the exit code."""
    return model_suite.main(suite or LIFECYCLE)


if __name__ == "__main__":
    sys.exit(main())
