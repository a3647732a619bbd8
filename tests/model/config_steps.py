"""config_steps.py - the world's configuration in the model-based lifecycle test (lifecycle.py;
issue 18): acme's credential (the default token, a token of its own, or a GitHub App), the
receivers' routes and the `reroute` feature class that rewrites them.

Credentials.  Seeds 0 and 2 mod 4 give the owner acme its own credential in
github.credentials (the default token then acts as another login, model-default-bot, so a
rebuild by the default's login would find none of the issues and duplicate them):
  - seeds 0 mod 4: a token that acts as model-acme-bot (the fake scopes it to acme);
  - seeds 2 mod 4: a GitHub App (app_id, private_key_file, installation_id; a key made for the
    world, its public half registered with the fake, which checks each JWT's RS256
    signature): its issues and comments are by "model-acme[bot]", GET /user is refused to
    its installation tokens (403, as GitHub does), so a rebuild must learn the login from
    GET /app with the JWT.
check_logins(), at each quiet point: every issue of the bridge is by the login of acme's
credential, and every listing of a rebuild (GET /repos/acme/*/issues with creator= or labels=)
asked creator= that login; in an App's world GET /user was never asked.

Reroutes.  A receiver with issue_per: alert ("alerts", "keep") may have one route, matching
some of its alerts by alertname, to acme/rerouted; the step rewrites the config (a new subset,
or none: the route flips back) at a quiet point and reloads (POST /-/reload, SIGHUP and the
"config reloaded" log line, or a restart).  Not for issue_per: group (the group's repository
comes from its first alert, and which alert is first depends on the payload's order; left to
tests/integration/test_routing.py).  The model (reference.py): an issue is made where the route
points when it is made, an alert with an issue keeps it, a linked issue's body links the one it
supersedes ("Previous issue: [#N](URL)", the URL of its repository).
"""

import os
import re
import signal
import subprocess
import time

from harness import http  # noqa: E402 - lifecycle.py set sys.path

REROUTED = "acme/rerouted"
ACME_TOKEN = "ghs_modelAcmeToken0123456789"   # seeds 0 mod 4: acme's own token
APP_ID = 4242
APP_INSTALLATION = 77
APP_SLUG = "model-acme"
PREV_RE = re.compile(r"Previous issue: \[#(\d+)\]\(([^)\s]*)\)")
LIST_RE = re.compile(r"/repos/acme/[^/]+/issues")


class ConfigSteps:
    """Mixed into lifecycle.World (self.seed, self.rng, self.dir, self.gh, self.alerts,
    self.url, self.proc, self.log_path, check(), note(), fail(), write_config(), start(),
    stop())."""

    def config_init(self, features):
        self.per_org = self.seed % 2 == 0  # no draw from rng: other seeds' worlds stay as they were
        self.app = self.seed % 4 == 2
        self.rerouted = {"alerts": set(), "keep": set()}   # receiver -> fps its route moves
        self.req_seen = 0         # fake GitHub requests check_logins() has read
        self.reloads = 0

    def credentials_setup(self, default_token):
        """Before the first config: the fake's logins and App; self.author, the login of the
        bridge's issues."""
        self.author = self.gh.user
        if not self.per_org:
            return
        self.gh.set_login(default_token, "model-default-bot")
        if self.app:
            key = os.path.join(self.dir, "app.pem")
            subprocess.run(["openssl", "genrsa", "-out", key, "2048"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            pub = subprocess.run(["openssl", "rsa", "-in", key, "-pubout"], check=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 timeout=60).stdout.decode()
            self.gh.apps.register(APP_ID, pub, {APP_INSTALLATION: ["acme"]}, slug=APP_SLUG)
            self.author = APP_SLUG + "[bot]"
        else:
            self.gh.apps.scope_token(ACME_TOKEN, ["acme"])
            self.gh.set_login(ACME_TOKEN, "model-acme-bot")
            self.author = "model-acme-bot"

    def credentials_config(self):
        """The github.credentials lines (and acme's token file)."""
        if not self.per_org:
            return ""
        if self.app:
            return ("  credentials:\n    - owner: acme\n      app:\n        app_id: %d\n"
                    "        private_key_file: app.pem\n        installation_id: %d\n"
                    % (APP_ID, APP_INSTALLATION))
        with open(os.path.join(self.dir, "acme-token"), "w") as f:
            f.write(ACME_TOKEN + "\n")
        return "  credentials:\n    - {owner: acme, token_file: acme-token}\n"

    def credentials_desc(self):
        return (", acme's own App" if self.app else ", acme's own token") if self.per_org else ""

    # ----- routes ----------------------------------------------------------------------------
    def routes_config(self, receiver):
        """The receiver's routes: lines (none when it moves no alert)."""
        fps = self.rerouted.get(receiver)
        if not fps:
            return ""
        names = sorted(a.labels["alertname"] for a in self.alerts if a.fp in fps)
        return ("    routes:\n      - matchers: ['alertname=~\"%s\"']\n        repo: %s\n"
                % ("|".join(names), REROUTED))

    def route_of(self, receiver, key, default):
        """The repository an event of (receiver, key) is routed to now."""
        return REROUTED if key in self.rerouted.get(receiver, ()) else default

    def configured_repos(self, receiver, default):
        """The repositories the receiver's configuration names now (default: its repo)."""
        return {default} | ({REROUTED} if self.rerouted.get(receiver) else set())

    def reroute(self):
        """The reroute step (the module's docstring)."""
        rng = self.rng
        self.check()
        rcvs = sorted({a.receiver for a in self.alerts if a.receiver in self.rerouted})
        r = rng.choice(rcvs)
        mine = [a for a in self.alerts if a.receiver == r]
        old = self.rerouted[r]
        if old and rng.random() < 0.4:
            new = set()
        else:
            new = {a.fp for a in rng.sample(mine, rng.randint(1, len(mine)))}
        self.rerouted[r] = new
        self.write_config()
        how = rng.choice(["http", "sighup", "restart"])
        self.reload(how)
        self.note("reroute (%s): %s sends %s to %s" % (
            how, r, " ".join(sorted(x[:6] for x in new)) or "nothing", REROUTED))

    def reload(self, how):
        """Make the running bridge take the config file: POST /-/reload, SIGHUP (waits for its
        "config reloaded" line in the log) or a restart."""
        if how == "restart":
            self.stop()
            self.start()
            return
        if how == "http":
            st, _, body = http("POST", self.url + "/-/reload", timeout_s=10,
                               headers={"Authorization": "Bearer " + self.hook_token})
            if st != 200:
                self.fail("POST /-/reload answered %s: %s" % (st, body))
            return
        before = self.reloaded_lines()
        os.kill(self.proc.pid, signal.SIGHUP)
        deadline = time.time() + 10
        while self.reloaded_lines() == before:
            if time.time() > deadline:
                self.fail("no \"config reloaded\" line within 10 s of SIGHUP:\n" + self.tail(5))
            time.sleep(0.01)

    def reloaded_lines(self):
        with open(self.log_path, "rb") as f:
            return f.read().count(b"config reloaded")

    # ----- invariants ------------------------------------------------------------------------
    def check_prev_link(self, where, want, body):
        """A linked issue's body links the issue it supersedes; a list of problems."""
        p = want.prev
        if p is None or p.number is None:
            return []
        m = PREV_RE.search(body or "")
        url = "/%s/issues/%d" % (p.repo, p.number)   # where it is now (a transfer followed)
        if not m or int(m.group(1)) != p.number or not m.group(2).endswith(url):
            return ["%s: its body links %s, the model expects #%d (...%s)" % (
                where, m.group(0) if m else "no previous issue", p.number, url)]
        return []

    def check_logins(self, issues):
        """Authors and the rebuild's listings (the module's docstring); issues: (repo, JSON)
        of the bridge's issues.  A list of problems."""
        out = []
        for repo, i in issues:
            login = (i.get("user") or {}).get("login")
            if login != self.author:
                out.append("%s#%d is by %s, acme's credential acts as %s" % (
                    repo, i["number"], login, self.author))
        with self.gh.lock:
            reqs = self.gh.requests[self.req_seen:]
            self.req_seen = len(self.gh.requests)
        for r in reqs:
            q = r["query"]
            if r["method"] != "GET":
                continue
            if r["path"] == "/user" and self.app:
                out.append("GET /user asked in an App's world (answered %s)" % r["status"])
            elif LIST_RE.fullmatch(r["path"]) and ("creator" in q or "labels" in q) and \
                    (q.get("creator") or "").lower() != self.author.lower():
                out.append("a rebuild listed %s by %s, the issues are by %s" % (
                    r["path"], "creator=" + q["creator"] if "creator" in q else
                    "labels=" + q["labels"], self.author))
        return out
