"""silence_steps.py - the `silence` feature class of the model-based lifecycle test
(lifecycle.py; issue 21, section 1): silences asked for on the issue, and a fake Alertmanager
API v2 for them.

The step (SilenceSteps.silence_step), at a quiet point, picks a key whose issue the bridge
tracks (the map names it, the bridge holds an event of the key: its labels) and sends the
issue_comment GitHub would deliver, signed with github.webhook_secret_file:
  - `/silence 1h model reason` by an OWNER, MEMBER or COLLABORATOR on an open issue of a key
    with no active silence (202 queued), sometimes delivered twice with the same
    X-GitHub-Delivery (200 duplicate);
  - the same by a CONTRIBUTOR or NONE (200 not_allowed);
  - `/unsilence` by a member on a key that was silenced (202 queued);
  - sometimes followed at once by SIGKILL and restart (the command may be in flight).
The model (per key): the silences the bridge made and keeps in its store, and those made
before a lost database (Alertmanager keeps them, the bridge no longer knows them: an
`/unsilence` expires only the former); per issue: the replies expected.  At every quiet point
(check_silences): each key has exactly its expected number of active silences, each with the
alert's labels (issue_per: group: groupLabels) as equality matchers, createdBy the member and
a comment naming the issue; no other active silence; each commanded issue has exactly one
reply (marker alertbridge:silence=) per accepted command, none twice, none for a non-member;
and no silence event is pending (lifecycle's quiet point waits for them) or dead.
"""

import json
import re
import threading
import time
import urllib.parse
import uuid

from fake_base import LocalServer, QuietHandler  # noqa: E402 - lifecycle.py set sys.path
from fake_github import send_webhook  # noqa: E402 - lifecycle.py set sys.path

SECRET = "model-github-webhook-secret"
MEMBER = "octocat"
REPLY_RE = re.compile(r"<!--\s*alertbridge:silence=(\d+)\s*-->")
# One matcher of a ?filter= (Alertmanager's matcher grammar, equality only: the bridge sends
# no other): NAME="VALUE" with \" and \\ escaped.
FILTER_RE = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"$')


def group_labels(group_key):
    """A group's groupLabels, as Alertmanager sends them: the labels of its groupKey (the
    silence of a group matches them)."""
    return dict(re.findall(r'(\w+)="([^"]*)"', group_key.split(":", 1)[1]))


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int(t % 1 * 1000)


def parse_time(s):
    """RFC 3339 with optional fraction and Z or an offset; None if it is not one."""
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", s or "")
    if not m:
        return None
    t = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) - time.timezone
    t += float(m.group(2) or 0)
    if m.group(3) != "Z":
        sign = 1 if m.group(3)[0] == "+" else -1
        t -= sign * (int(m.group(3)[1:3]) * 3600 + int(m.group(3)[4:6]) * 60)
    return t


class FakeAlertmanager(LocalServer):
    """The silence endpoints of Alertmanager's API v2 (prometheus/alertmanager,
    api/v2/openapi.yaml), on 127.0.0.1, as strict as Alertmanager:
      POST /api/v2/silences      a postableSilence (matchers [{name, value, isRegex,
                                 isEqual?}] not empty, startsAt, endsAt, createdBy, comment
                                 required; endsAt after startsAt and not past; at least one
                                 matcher not matching "" - silence.go validateSilence) ->
                                 200 {"silenceID"}; an "id" of no silence -> 404; a refused
                                 silence -> 400 with the reason as a JSON string
      GET /api/v2/silences       gettableSilences (id, status.state active|pending|expired,
                                 updatedAt, and the posted fields), ?filter=NAME="VALUE"
                                 (repeatable): silences with an equal matcher of each; a
                                 filter it cannot parse -> 400
      GET /api/v2/silence/{id}   one gettableSilence, 404 for an unknown id
      DELETE /api/v2/silence/{id}  expires it (endsAt = now) -> 200; 404 for an unknown id;
                                 500 for one already expired (silences.Expire's error)
    Everything else: 404.  Time is the wall clock (the bridge's silences last an hour)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.silences = {}        # id -> the stored silence (postable fields + updatedAt)
        fake = self

        class Handler(QuietHandler):
            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def handle_any(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n > 0 else b""
                u = urllib.parse.urlsplit(self.path)
                with fake.lock:
                    self.answer(*fake.route(self.command, u.path,
                                            urllib.parse.parse_qs(u.query), raw))

            do_GET = do_POST = do_DELETE = do_PUT = handle_any

        self._serve(Handler, quiet_errors=True)  # a SIGKILLed bridge resets its connections

    @staticmethod
    def state(s, now):
        if s["endsAt_t"] <= now:
            return "expired"
        return "pending" if s["startsAt_t"] > now else "active"

    def gettable(self, sid, now):
        s = self.silences[sid]
        out = {k: v for k, v in s.items() if not k.endswith("_t")}
        out.update(id=sid, status={"state": self.state(s, now)})
        return out

    def route(self, method, path, query, raw):
        now = time.time()
        if path == "/api/v2/silences" and method == "POST":
            return self.post(raw, now)
        if path == "/api/v2/silences" and method == "GET":
            want = []
            for f in query.get("filter", []):
                m = FILTER_RE.match(f)
                if not m:
                    return 400, "bad matcher format: %s" % f
                want.append((m.group(1), re.sub(r"\\(.)", r"\1", m.group(2))))
            return 200, [self.gettable(sid, now) for sid, s in self.silences.items()
                         if all(any(x["name"] == n and x["value"] == v and not x["isRegex"]
                                    and x.get("isEqual", True) for x in s["matchers"])
                                for n, v in want)]
        m = re.match(r"^/api/v2/silence/([^/]+)$", path)
        if m and method in ("GET", "DELETE"):
            sid = urllib.parse.unquote(m.group(1))
            if sid not in self.silences:
                return 404, "silence %s not found" % sid
            if method == "GET":
                return 200, self.gettable(sid, now)
            s = self.silences[sid]
            if self.state(s, now) == "expired":
                return 500, "silence %s already expired" % sid
            s["endsAt_t"] = max(now, s["startsAt_t"])
            s["endsAt"], s["updatedAt"] = iso(s["endsAt_t"]), iso(now)
            return 200, None
        return 404, "not found"

    def post(self, raw, now):
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            return 400, "parsing postableSilence body: not JSON"
        if not isinstance(body, dict):
            return 400, "parsing postableSilence body: not an object"
        for f in ("matchers", "startsAt", "endsAt", "createdBy", "comment"):
            if f not in body:
                return 422, "%s in body is required" % f
        ms = body["matchers"]
        if not isinstance(ms, list) or not ms:
            return 400, "silence invalid: at least one matcher required"
        for x in ms:
            if not isinstance(x, dict) or not isinstance(x.get("name"), str) or \
                    not isinstance(x.get("value"), str) or \
                    not isinstance(x.get("isRegex"), bool) or \
                    not isinstance(x.get("isEqual", True), bool):
                return 422, "matchers: name, value and isRegex are required"
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", x["name"]):
                return 400, "silence invalid: invalid label name %r" % x["name"]
        if all(not x["isRegex"] and x.get("isEqual", True) and x["value"] == "" for x in ms):
            return 400, "silence invalid: at least one matcher must not match the empty string"
        starts, ends = parse_time(body["startsAt"]), parse_time(body["endsAt"])
        if starts is None or ends is None:
            return 400, "silence invalid: startsAt and endsAt must be RFC 3339 times"
        if ends <= starts:
            return 400, "silence invalid: end time must not be before start time"
        if ends <= now:
            return 400, "silence invalid: end time can't be in the past"
        if not body["createdBy"] or not body["comment"]:
            return 400, "silence invalid: creator and comment must not be empty"
        sid = body.get("id")
        if sid and sid not in self.silences:
            return 404, "silence %s not found" % sid
        sid = sid or str(uuid.uuid4())
        starts = max(starts, now)  # a start in the past is now
        self.silences[sid] = {"matchers": ms, "startsAt": iso(starts), "endsAt": body["endsAt"],
                              "createdBy": body["createdBy"], "comment": body["comment"],
                              "updatedAt": iso(now), "startsAt_t": starts, "endsAt_t": ends}
        return 200, {"silenceID": sid}

    def active(self):
        with self.lock:
            now = time.time()
            return [self.gettable(sid, now) for sid, s in self.silences.items()
                    if self.state(s, now) == "active"]


class SilenceSteps:
    """The silence step and its invariants, mixed into lifecycle.World (self.rng, self.keys,
    self.alerts, self.groups, self.gh, self.url, events(), check(), note(), fail())."""

    am = None

    def silence_config(self):
        """The config lines of a world with the silence class: the webhook secret (its file
        written here) and the fake Alertmanager (started here, once)."""
        if "silence" not in self.features:
            return "", ""
        if self.am is None:
            self.am = FakeAlertmanager()
            self.sil = {}         # (receiver, key) -> [kept by the bridge, lost with the db]
            with open(self.dir + "/github-secret", "w") as f:
                f.write(SECRET + "\n")
        return ("  webhook_secret_file: github-secret\n", "alertmanager:\n  url: %s\n" % self.am.url)

    def silence_close(self):
        if self.am:
            self.am.stop()

    def silence_lost(self):
        """The database was lost: the bridge no longer knows the silences it made."""
        for v in self.sil.values() if self.am else ():
            v[1] += v[0]
            v[0] = 0

    def labels_of(self, k):
        if k.receiver == "groups":
            return next(g.labels for g in self.groups if g.key == k.key)
        return next(a.labels for a in self.alerts if (a.receiver, a.fp) == (k.receiver, k.key))

    def silence_step(self):
        self.check()
        known = {(e[1], e[2]) for e in self.events()}
        ks = self.live_issue(lambda i: not i.transferred and not i.deleted)
        ks = [k for k in ks if not k.bad and (k.receiver, k.key) in known]
        if not ks:
            return
        rng = self.rng
        on = [k for k in ks if sum(self.sil.get((k.receiver, k.key), ()))]
        if on and rng.random() < 0.5:
            k = rng.choice(on)
            text, member = "/unsilence", True
        else:
            ks = [k for k in ks if k not in on and k.current().state == "open"]
            if not ks:
                return
            k = rng.choice(ks)
            text, member = "/silence 1h model reason %d" % self.step_no, rng.random() < 0.8
        i = k.current()
        v = self.sil.setdefault((k.receiver, k.key), [0, 0])
        assoc = rng.choice(["OWNER", "MEMBER", "COLLABORATOR"] if member else
                           ["CONTRIBUTOR", "NONE"])
        payload = self.gh.human_comment(i.repo, i.number, MEMBER if member else "drive-by",
                                        text, assoc)
        hook = self.url + "/v1/github/webhook"
        st, body, delivery = send_webhook(hook, SECRET, "issue_comment", payload)
        want = (202, {"status": "queued"}) if member else (200, {"status": "not_allowed"})
        if (st, body) != want:
            self.fail("%s by a %s on %s#%d answered %s %s, not %s" % (
                text, assoc, i.repo, i.number, st, body, want))
        again = rng.random() < 0.3
        if again:
            st, body, _ = send_webhook(hook, SECRET, "issue_comment", payload, delivery=delivery)
            want = (200, {"status": "duplicate" if member else "not_allowed"})
            if (st, body) != want:
                self.fail("a redelivery of %s answered %s %s, not %s" % (text, st, body, want))
        i.silence_replies = getattr(i, "silence_replies", 0) + (1 if member else 0)
        if member and text == "/unsilence":
            v[0] = 0
        elif member:
            v[0] = 1
        killed = "kill" in self.features and rng.random() < 0.25
        if killed:
            time.sleep(rng.random() * 0.03)
            self.kill()
            self.start()
        self.note("%s %s: %r by a %s on %s#%d%s%s" % (
            k.receiver, k.key[:16], text, assoc, i.repo, i.number,
            ", redelivered" if again else "", ", then SIGKILL and restart" if killed else ""))

    def check_silences(self):
        """The silence invariants at a quiet point (the module's docstring); a list of
        problems."""
        if not self.am:
            return []
        out = []
        active = self.am.active()
        for (receiver, key), (kept, lost) in self.sil.items():
            k = self.keys[(receiver, key)]
            want = sorted(self.labels_of(k).items())
            mine = [s for s in active if sorted((m["name"], m["value"]) for m in s["matchers"])
                    == want]
            for s in mine:
                active.remove(s)
                if any(m["isRegex"] or not m.get("isEqual", True) for m in s["matchers"]) or \
                        s["createdBy"] != MEMBER or "/issues/" not in s["comment"]:
                    out.append("%s %s: silence %s is not the one asked for: %s" % (
                        receiver, key[:16], s["id"], s))
            if len(mine) != kept + lost:
                out.append("%s %s: %d active silence(s) in Alertmanager, the model expects "
                           "%d (%d made since the database was lost)" % (
                               receiver, key[:16], len(mine), kept + lost, kept))
        if active:
            out.append("active silences the model knows nothing of: %s" % active)
        for e in self.events("silence"):
            if e[4] == "dead":
                out.append("silence event %d (%s %s) dead-lettered: %s" % (
                    e[0], e[1], e[2][:16], e[6]))
        for k in self.keys.values():
            for i in k.issues:
                if i.deleted or i.transferred or not hasattr(i, "silence_replies"):
                    continue
                marks = [m for c in self.gh.comments(i.repo, i.number)
                         for m in REPLY_RE.findall(c["body"] or "")]
                if len(marks) != i.silence_replies or len(set(marks)) != len(marks):
                    out.append("%s#%d: silence replies %s, the model expects %d, each once" % (
                        i.repo, i.number, marks, i.silence_replies))
        return out
