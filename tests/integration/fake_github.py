#!/usr/bin/env python3
"""fake_github.py - a stateful fake of GitHub's REST API for issues, comments and labels.

Used by alertbridge's integration tests in place of api.github.com: it validates requests the
way GitHub does (token, User-Agent, Accept, X-GitHub-Api-Version, JSON bodies), answers with
GitHub's shapes and headers (rate-limit headers, Link pagination), records every request, and
offers a side door (/_fake/...) and a Python API for faults and "human" actions.
Follows GitHub REST API version 2022-11-28: "REST API endpoints for issues", "... for issue
comments", "... for labels", "Get a repository" (GET /repos/{owner}/{repo}; 404 for a repository
that does not exist or the token cannot see, as on every endpoint under it), "... for search" (GET /search/issues), "Rate limits for the REST
API", "Using pagination in the REST API".  Like GitHub's, the search index lags behind writes
(search_lag_s, default 60 s): an issue is found by search only that long after it was created
or changed, while the issues list is consistent at once.

Conditional requests: the issue answers (GET, create, PATCH) carry a weak ETag (W/"<sha1 of
the issue's JSON>") as GitHub's do; a GET of an issue with If-None-Match naming its current ETag
is answered 304 Not Modified without a body, and like GitHub the fake does not count a 304
against the rate limit (x-ratelimit-used stays).  The issues list filters by creator= (the login
that opened the issue) and labels= (comma-separated; an issue must carry every one, compared
case-insensitively).

Identities ("Get the authenticated user", GET /user; "Create an issue" / "Create an issue
comment": the answer's user is who made it): each token acts as its own login (set_login(token,
login); the main token's is user=, default alertbridge-bot), and every issue and comment keeps
its author (the "user" of its JSON), which creator= compares ignoring case ("List repository
issues": "creator: The user that created the issue").  A GitHub App's installation token acts as
"<slug>[bot]" and is refused on GET /user (fake_github_app.py).  add_issue() makes an issue as
another login would (a person's issue in the repository).

Refusals for good (403, each with GitHub's message; "Troubleshooting the REST API": a 403
without the rate-limit headers or message is about permission):
  - an archived repository ("About archiving repositories": it becomes read-only) answers every
    write (POST, PATCH, PUT, DELETE under /repos/{o}/{r}) 403 "Repository was archived so is
    read-only."; reads work, and its JSON says "archived": true;
  - a locked issue ("Locking conversations") answers a new comment 403 "Unable to create
    comment because issue is locked."  GitHub lets people with write access comment still; the
    fake is stricter and refuses every token; its JSON says "locked": true;
  - a read-only token (set_read_only(token); a fine-grained token with "Issues: read") answers
    every write 403 "Resource not accessible by personal access token".
Titles over 256 characters and bodies (issues and comments) over 65,536 are 422 "Validation
Failed" (on create and on update; the docs give the body limit for comments, the fake applies
both limits to every write, which is stricter).

Assignees: by default any login can be assigned.  Given a set of assignable logins
(assignable=[...], --assignable, or the side door), a create or update naming anyone else is
answered as GitHub answers it: 422 "Validation Failed" with one error per rejected login,
{"value": login, "resource": "Issue", "field": "assignees", "code": "invalid"}, and nothing
is made or changed.

As a script:  python3 fake_github.py --port 0 --port-file F --token T [--repo owner/name ...]
              [--assignable login ...] [--owner-token OWNER=TOKEN[=LOGIN] ...]
              (--owner-token: a personal token that reaches only OWNER's repositories, acting
              as LOGIN: one organisation's entry of github.credentials)
As a module:  fg = FakeGitHub(token="T", repos=["acme/alerts"]); fg.start(); ...; fg.stop()

Side door (no auth, never recorded), all JSON:
  GET  /_fake/requests[?clear=1]   recorded requests (method, path, query, headers, body, time,
                                   status)
  GET  /_fake/state                repos with their issues and comments
  POST /_fake/fault                {method, path (regex, full match), count, status, headers,
                                    body, action: "respond"|"respond_after"|"drop"|
                                    "drop_after"|"delay"|"delay_after", delay_ms}
  POST /_fake/token                {token}                        the token it accepts now
  POST /_fake/search_lag           {seconds}                      how far search lags writes
  POST /_fake/close                {repo, number, state_reason}   a person closes an issue
  POST /_fake/reopen               {repo, number}                 a person reopens an issue
  POST /_fake/age                  {repo, number, seconds}        the issue was closed (and
                                                                  last changed) that much earlier
  POST /_fake/transfer             {repo, number, to}             -> {repo, number}
  POST /_fake/delete               {repo, number}
  POST /_fake/repo                 {repo}                         create a repository
  POST /_fake/clock                {advance_s}                    move the fake's clock
  POST /_fake/assignable           {logins: [...] or null}        who can be assigned (null:
                                                                  anyone, the default)
  POST /_fake/archive              {repo, archived}               archive or unarchive
  POST /_fake/lock                 {repo, number, locked}         lock or unlock an issue
  POST /_fake/login                {token, login}                 the login a token acts as
  POST /_fake/read_only            {token, read_only}             a token that cannot write
  POST /_fake/owner_token          {token, owners, login}         a personal token reaching
                                                                  only those owners, as login
  POST /_fake/comment              {repo, number, login, body, association, user_type,
                                    deliver_to, secret}           a person's comment
                                   (human_comment); with deliver_to, its issue_comment event is
                                   POSTed there as GitHub delivers it (send_webhook, signed with
                                   secret) -> {status, body, delivery}: the receiver's answer
  POST /_fake/reset                forget everything but the repositories (logins, read-only
                                   tokens and archiving too)
"""

import copy
import datetime
import hashlib
import json
import re
import sys
import time
import urllib.parse

import fake_base
from fake_base import Reply
from fake_github_app import AppError, FakeApps
from fake_github_issues import DOCS, IssueEndpoints, error

SUPPORTED_API_VERSIONS = ("2022-11-28",)
ACCEPTABLE = ("application/vnd.github+json", "application/vnd.github.v3+json",
              "application/json", "*/*", "application/vnd.github.raw+json",
              "application/vnd.github.full+json", "application/vnd.github.text+json",
              "application/vnd.github.html+json")
RATE_LIMIT = 5000
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
FAULT_ACTIONS = ("respond", "respond_after", "drop", "drop_after", "delay", "delay_after")
MARKER_RE = re.compile(r"<!--\s*alertbridge:key=([A-Za-z0-9._-]{1,128})\s*-->")


def iso(ts):
    """ISO 8601 UTC with seconds, as GitHub writes timestamps."""
    return datetime.datetime.fromtimestamp(int(ts), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


class FakeGitHub(IssueEndpoints, fake_base.FakeServer):
    """The fake's state and its HTTP server.  All state is guarded by self.lock (reentrant).
    The endpoints for issues, comments, labels, the list and search: fake_github_issues.py."""

    thread_name = "fake-github"

    def __init__(self, token="test-token", repos=("acme/alerts",), host="127.0.0.1", port=0,
                 user="alertbridge-bot", search_lag_s=60.0, assignable=None,
                 rate_limit=RATE_LIMIT, path_prefix=""):
        fake_base.FakeServer.__init__(self, host, port)
        self.token = token
        # GitHub Enterprise Server serves the API under /api/v3: every path (side door too)
        # must start with path_prefix, which url includes.
        self.path_prefix = path_prefix.rstrip("/")
        self.rate_limit = rate_limit  # core requests an hour (GitHub: 5,000 for a token)
        self.assignable = None if assignable is None else set(assignable)
        self.search_lag_s = float(search_lag_s)
        self.user = user
        self.logins = {}         # token -> the login it acts as (default: user)
        self.read_only = set()   # tokens that may read but not write
        self.actor = None        # the login of the request being handled (under the lock)
        self.actor_token = None  # and its token
        self.clock_offset = 0.0
        self.started = time.time()
        self.repos = {}
        self.next_repo_id = 1000
        self.next_id = 5000
        self.used = 0
        self.apps = FakeApps(self.now)  # GitHub Apps (fake_github_app.py)
        for r in repos:
            self.add_repo(r)

    # ----- lifecycle (start, stop: fake_base.FakeServer) -------------------------------------
    @property
    def url(self):
        return "http://%s:%d%s" % (self.host, self.port, self.path_prefix)

    # ----- clock and ids ----------------------------------------------------------------------
    def now(self):
        return time.time() + self.clock_offset

    def advance(self, seconds):
        with self.lock:
            self.clock_offset += float(seconds)

    def _id(self):
        self.next_id += 1
        return self.next_id

    # ----- Python API for tests (each takes the lock) -----------------------------------------
    def add_repo(self, full_name):
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", full_name):
            raise ValueError("bad repository name %r" % full_name)
        with self.lock:
            if full_name.lower() not in self.repos:
                self.next_repo_id += 1
                self.repos[full_name.lower()] = {"full_name": full_name, "id": self.next_repo_id,
                                                 "issues": {}, "comments": {}, "labels": {},
                                                 "next_number": 1}

    def issues(self, repo):
        """All issues of repo (deleted ones excluded), ordered by number, as GitHub shows them."""
        with self.lock:
            r = self.repos[repo.lower()]
            return [self._issue_json(r, i) for n, i in sorted(r["issues"].items())
                    if not i.get("deleted") and not i.get("transferred_to")]

    def comments(self, repo, number):
        with self.lock:
            r = self.repos[repo.lower()]
            return copy.deepcopy(r["comments"].get(int(number), []))

    def set_token(self, token):
        """Accept only this token from now on (a rotated or revoked token: 401 for the old)."""
        with self.lock:
            self.token = token

    def set_login(self, token, login):
        """The token acts as login (GET /user, the author of what it makes)."""
        with self.lock:
            self.logins[token] = login

    def set_read_only(self, token, read_only=True):
        """The token can read but every write is 403 (a fine-grained token without write)."""
        with self.lock:
            (self.read_only.add if read_only else self.read_only.discard)(token)

    def archive(self, repo, archived=True):
        """Archive (or unarchive) the repository: every write is then 403."""
        with self.lock:
            self.repos[repo.lower()]["archived"] = bool(archived)

    def lock_issue(self, repo, number, locked=True):
        """Lock (or unlock) the issue's conversation: a new comment is then 403."""
        with self.lock:
            self._live_issue(self.repos[repo.lower()], int(number))["locked"] = bool(locked)

    def set_assignable(self, logins):
        """Only these logins can be assigned from now on (None: anyone)."""
        with self.lock:
            self.assignable = None if logins is None else set(logins)

    def marker_counts(self, repo):
        """{key: number of live issues whose body carries <!-- alertbridge:key=KEY -->}."""
        out = {}
        for i in self.issues(repo):
            keys = MARKER_RE.findall(i["body"] or "")
            if keys:
                out[keys[-1]] = out.get(keys[-1], 0) + 1
        return out

    def add_fault(self, method=".*", path=".*", count=1, status=500, headers=None, body=None,
                  action="respond", delay_ms=0):
        """The next `count` requests whose method and path (no query) fully match the regexes
        get this answer instead of the normal one.  action: "respond" (status/headers/body,
        nothing done), "respond_after" (do the request, then answer status/headers/body
        instead: a 5xx after the write, or a 2xx whose body is unreadable), "drop" (close the
        connection without an answer, nothing done), "drop_after" (do the request, then close
        without an answer), "delay" (sleep delay_ms, then do it and answer normally: a slow
        GitHub that finishes a write after the client's timeout, the client gone; GitHub
        documents no idempotency key or replay protection for POST, so a write a client gave
        up on may still land, and landing after a look for it is what duplicates),
        "delay_after" (do the request, sleep delay_ms, then answer: past the client's timeout
        the write is done and its answer lost).  A body that is a str is sent as text/plain."""
        if action not in FAULT_ACTIONS:
            raise ValueError("bad fault action %r" % action)
        with self.lock:
            self.faults.append({"method": method, "path": path, "count": int(count),
                                "status": int(status), "headers": headers or {}, "body": body,
                                "action": action, "delay_ms": int(delay_ms)})

    def add_issue(self, repo, title, body="", creator=None, labels=()):
        """An issue opened by creator (default: the token's own login) with labels; returns
        its number."""
        with self.lock:
            r = self.repos[repo.lower()]
            n = r["next_number"]
            r["next_number"] += 1
            now = self.now()
            r["issues"][n] = {"id": self._id(), "number": n, "title": title, "body": body,
                              "labels": list(labels), "assignees": [], "state": "open",
                              "state_reason": None, "created_at": now, "updated_at": now,
                              "closed_at": None, "closed_by": None,
                              "creator": creator or self.user}
            return n

    def human_close(self, repo, number, state_reason="completed"):
        """A person closes the issue in the web UI (not recorded as a request)."""
        if state_reason not in ("completed", "not_planned"):
            raise ValueError("bad state_reason %r" % state_reason)
        with self.lock:
            i = self._live_issue(self.repos[repo.lower()], int(number))
            now = self.now()
            i.update(state="closed", state_reason=state_reason, closed_at=now, updated_at=now,
                     closed_by="a-human")

    def human_comment(self, repo, number, login, body, association="MEMBER", user_type="User"):
        """A person's comment on issue number ("Create an issue comment" as login would): it is
        kept as GitHub keeps it, with author_association (OWNER, MEMBER, COLLABORATOR,
        CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, NONE: "Webhook events and payloads",
        issue_comment), and the issue_comment event GitHub would deliver for it is returned
        (action "created", comment, issue, repository, sender); send it with send_webhook()."""
        with self.lock:
            r = self.repos[repo.lower()]
            i = r["issues"][int(number)]
            user = dict(self._user(login), type=user_type)
            c = self._new_comment(r, i, body, user, association)
            return {"action": "created", "comment": c, "issue": self._issue_json(r, i),
                    "repository": self._repo_json(r), "sender": user}

    def human_reopen(self, repo, number):
        """A person reopens the closed issue in the web UI (not recorded as a request)."""
        with self.lock:
            i = self._live_issue(self.repos[repo.lower()], int(number))
            if i["state"] != "closed":
                raise ValueError("issue %s#%s is not closed" % (repo, number))
            i.update(state="open", state_reason="reopened", closed_at=None, closed_by=None,
                     updated_at=self.now())

    def age(self, repo, number, seconds):
        """Move the issue's closed_at and updated_at `seconds` into the past, as if it had been
        closed that much earlier (a reopen_window that has run out, without waiting)."""
        with self.lock:
            i = self._live_issue(self.repos[repo.lower()], int(number))
            if i["closed_at"]:
                i["closed_at"] -= float(seconds)
            i["updated_at"] -= float(seconds)

    def transfer(self, repo, number, to):
        """Transfer the issue to repository `to`; returns (to, new_number)."""
        with self.lock:
            src = self.repos[repo.lower()]
            dst = self.repos[to.lower()]
            i = self._live_issue(src, int(number))
            n = dst["next_number"]
            dst["next_number"] += 1
            moved = copy.deepcopy(i)
            moved["number"] = n
            moved["updated_at"] = self.now()
            dst["issues"][n] = moved
            dst["comments"][n] = src["comments"].get(int(number), [])
            i["transferred_to"] = (dst["full_name"], n)
            return dst["full_name"], n

    def delete(self, repo, number):
        with self.lock:
            i = self._live_issue(self.repos[repo.lower()], int(number))
            i["deleted"] = True

    def reset(self):
        with self.lock:
            for r in self.repos.values():
                r.update(issues={}, comments={}, labels={}, next_number=1, archived=False)
            self.logins = {}
            self.read_only = set()
            self.requests = []
            self.faults = []

    def state(self):
        with self.lock:
            out = {}
            for r in self.repos.values():
                out[r["full_name"]] = {
                    "issues": [self._issue_json(r, i) for n, i in sorted(r["issues"].items())
                               if not i.get("deleted") and not i.get("transferred_to")],
                    "comments": {str(n): c for n, c in sorted(r["comments"].items())},
                }
            return out

    # ----- internals (caller holds the lock) --------------------------------------------------
    def _live_issue(self, r, number):
        i = r["issues"].get(number)
        if i is None or i.get("deleted") or i.get("transferred_to"):
            raise KeyError("no live issue %s#%d" % (r["full_name"], number))
        return i

    def _new_comment(self, r, i, text, user, association):
        """Add a comment by user (its JSON) with author_association to issue i of repository
        r, as "Create an issue comment" keeps it (the issue's updated_at moves); a copy of the
        comment's JSON."""
        now = self.now()
        cid = self._id()
        c = {"id": cid, "node_id": "IC_%d" % cid,
             "url": "%s/repos/%s/issues/comments/%d" % (self.url, r["full_name"], cid),
             "html_url": "https://github.com/%s/issues/%d#issuecomment-%d" % (
                 r["full_name"], i["number"], cid),
             "issue_url": "%s/repos/%s/issues/%d" % (self.url, r["full_name"], i["number"]),
             "body": text, "user": user, "created_at": iso(now), "updated_at": iso(now),
             "author_association": association}
        r["comments"].setdefault(i["number"], []).append(c)
        i["updated_at"] = now
        return copy.deepcopy(c)

    def _user(self, login):
        uid = sum(ord(c) for c in login) + 100
        return {"login": login, "id": uid, "node_id": "U_%d" % uid, "type": "User",
                "url": "%s/users/%s" % (self.url, login),
                "html_url": "https://github.com/%s" % login, "site_admin": False}

    def _repo_json(self, r):
        owner, name = r["full_name"].split("/")
        return {"id": r["id"], "node_id": "R_%d" % r["id"], "name": name,
                "full_name": r["full_name"], "private": False, "owner": self._user(owner),
                "html_url": "https://github.com/%s" % r["full_name"],
                "url": "%s/repos/%s" % (self.url, r["full_name"]),
                "issues_url": "%s/repos/%s/issues{/number}" % (self.url, r["full_name"]),
                "has_issues": True, "archived": bool(r.get("archived")), "disabled": False,
                "open_issues_count": sum(1 for i in r["issues"].values()
                                         if i["state"] == "open" and not i.get("deleted")
                                         and not i.get("transferred_to")),
                "default_branch": "main"}

    def _label(self, r, name):
        lab = r["labels"].get(name.lower())
        if lab is None:
            lid = self._id()
            lab = {"id": lid, "node_id": "LA_%d" % lid, "name": name,
                   "url": "%s/repos/%s/labels/%s" % (self.url, r["full_name"],
                                                    urllib.parse.quote(name, safe="")),
                   "color": "ededed", "default": False, "description": None}
            r["labels"][name.lower()] = lab
        return dict(lab)

    def _issue_json(self, r, i):
        base = "%s/repos/%s/issues/%d" % (self.url, r["full_name"], i["number"])
        return {
            "id": i["id"], "node_id": "I_%d" % i["id"], "url": base,
            "repository_url": "%s/repos/%s" % (self.url, r["full_name"]),
            "labels_url": base + "/labels{/name}", "comments_url": base + "/comments",
            "events_url": base + "/events",
            "html_url": "https://github.com/%s/issues/%d" % (r["full_name"], i["number"]),
            "number": i["number"], "title": i["title"], "body": i["body"],
            "user": self._user(i.get("creator") or self.user),
            "labels": [self._label(r, n) for n in i["labels"]],
            "state": i["state"], "state_reason": i["state_reason"],
            "locked": bool(i.get("locked")),
            "active_lock_reason": "resolved" if i.get("locked") else None,
            "assignee": self._user(i["assignees"][0]) if i["assignees"] else None,
            "assignees": [self._user(a) for a in i["assignees"]],
            "milestone": None, "comments": len(r["comments"].get(i["number"], [])),
            "created_at": iso(i["created_at"]), "updated_at": iso(i["updated_at"]),
            "closed_at": iso(i["closed_at"]) if i["closed_at"] else None,
            "closed_by": self._user(i["closed_by"]) if i.get("closed_by") else None,
            "author_association": "OWNER",
        }

    def _take_fault(self, method, path):
        return self._pop_fault(lambda f: f["count"] > 0 and re.fullmatch(f["method"], method)
                               and re.fullmatch(f["path"], path))

    @staticmethod
    def etag(issue_json):
        """The weak ETag of an issue answer, as GitHub sends it: W/"<hash of the JSON>"."""
        data = json.dumps(issue_json, sort_keys=True).encode("utf-8")
        return 'W/"%s"' % hashlib.sha1(data).hexdigest()

    def _issue_answer(self, status, r, i, headers=None):
        body = self._issue_json(r, i)
        h = dict(headers or {})
        h["ETag"] = self.etag(body)
        return status, body, h

    def _rate_headers(self, count=True):
        if count:
            self.used += 1
        return {"x-ratelimit-limit": str(self.rate_limit),
                "x-ratelimit-remaining": str(max(0, self.rate_limit - self.used)),
                "x-ratelimit-used": str(self.used),
                "x-ratelimit-reset": str(int(self.started) + 3600),
                "x-ratelimit-resource": "core"}

    # ----- the API proper (caller holds the lock) ---------------------------------------------
    def handle_api(self, method, path, query, headers, raw):
        """Validate and execute one API request.  Returns (status, body, headers) or raises
        Reply."""
        if not headers.get("user-agent"):
            # GitHub answers this one in plain text, before anything else.
            raise Reply(403, "Request forbidden by administrative rules. Please make sure your "
                        "request has a User-Agent header (https://docs.github.com/en/rest/"
                        "overview/resources-in-the-rest-api#user-agent-required). Check "
                        "https://developer.github.com for other possible causes.\n")
        auth = headers.get("authorization", "")
        m = re.fullmatch(r"(?i)(bearer|token)\s+(\S+)", auth.strip())
        try:
            app_answer = self.apps.handle(method, path, m.group(2)) if m else None
            if app_answer is not None:
                return app_answer[0], app_answer[1], {}
            ok = m and (self.apps.check_token(m.group(2), path) or
                        (m.group(2) == self.token and self.token not in self.apps.scopes))
        except AppError as e:
            raise error(e.status, e.message)
        if not ok:
            raise error(401, "Bad credentials")
        token = m.group(2)
        self.actor = self.apps.login_of(token) or self.logins.get(token, self.user)
        self.actor_token = token
        ver = headers.get("x-github-api-version")
        if ver is not None and ver not in SUPPORTED_API_VERSIONS:
            raise error(400, "Unsupported 'X-GitHub-Api-Version': '%s'" % ver,
                        documentation_url="https://docs.github.com/rest/overview/api-versions")
        accept = headers.get("accept")
        if accept is not None:
            types = [a.split(";")[0].strip().lower() for a in accept.split(",")]
            if not any(t in ACCEPTABLE for t in types):
                raise error(415, "Unsupported 'Accept' header: %s" % accept,
                            documentation_url="https://docs.github.com/rest/overview/"
                            "media-types")
        body = None
        if method in ("POST", "PATCH", "PUT"):
            try:
                body = json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError):
                raise error(400, "Problems parsing JSON")
            if body is None:
                raise error(400, "Problems parsing JSON")
        return self._route(method, path, query, body, headers.get("if-none-match"))

    def _repo(self, owner, name, method="GET"):
        r = self.repos.get(("%s/%s" % (owner, name)).lower())
        if r is None:
            raise error(404, "Not Found")
        if method in MUTATING and r.get("archived"):
            raise error(403, "Repository was archived so is read-only.")
        if method in MUTATING and self.actor_token in self.read_only:
            raise error(403, "Resource not accessible by personal access token")
        return r

    def _issue_for(self, r, number, method, suffix=""):
        i = r["issues"].get(number)
        if i is None:
            raise error(404, "Not Found")
        if i.get("deleted"):
            raise error(410, "This issue was deleted")
        if i.get("transferred_to"):
            to, n = i["transferred_to"]
            dst = self.repos[to.lower()]
            loc = "%s/repositories/%d/issues/%d%s" % (self.url, dst["id"], n, suffix)
            raise Reply(301, {"message": "Moved Permanently", "url": loc,
                              "documentation_url": DOCS}, {"Location": loc})
        return i

    def _route(self, method, path, query, body, if_none_match=None):
        if path == "/search/issues" and method == "GET":
            return self._search(query)
        if path == "/user" and method == "GET":
            if self.apps.login_of(self.actor_token):
                raise error(403, "Resource not accessible by integration")
            return 200, self._user(self.actor), {}
        m = re.fullmatch(r"/repositories/(\d+)(/issues/.*)", path)
        if m:
            for r in self.repos.values():
                if r["id"] == int(m.group(1)):
                    path = "/repos/%s%s" % (r["full_name"], m.group(2))
                    break
            else:
                raise error(404, "Not Found")
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)", path)
        if m:
            # "Get a repository": 404 when it does not exist or the token cannot see it.
            r = self._repo(m.group(1), m.group(2))
            if method == "GET":
                return 200, self._repo_json(r), {}
            raise error(404, "Not Found")
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues", path)
        if m:
            r = self._repo(m.group(1), m.group(2), method)
            if method == "POST":
                return self._create(r, body)
            if method == "GET":
                return self._list(r, path, query)
            raise error(404, "Not Found")
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/(\d+)(/comments|/labels)?", path)
        if m:
            r = self._repo(m.group(1), m.group(2), method)
            number = int(m.group(3))
            sub = m.group(4) or ""
            i = self._issue_for(r, number, method, sub)
            if sub == "" and method == "GET":
                status, got, h = self._issue_answer(200, r, i)
                tags = [t.strip() for t in (if_none_match or "").split(",")]
                if h["ETag"] in tags or h["ETag"][2:] in tags or "*" in tags:
                    return 304, None, h
                return status, got, h
            if sub == "" and method == "PATCH":
                return self._update(r, i, body)
            if sub == "/comments" and method == "POST":
                return self._comment(r, i, body)
            if sub == "/comments" and method == "GET":
                return 200, copy.deepcopy(r["comments"].get(number, [])), {}
            if sub == "/labels" and method == "POST":
                return self._labels_add(r, i, body)
            if sub == "/labels" and method == "GET":
                return 200, [self._label(r, n) for n in i["labels"]], {}
            raise error(404, "Not Found")
        raise error(404, "Not Found")

    # ----- side door --------------------------------------------------------------------------
    def side_post(self, path, body):
        """The side-door POSTs of the header's list (fake_base.FakeServer.handle_side: the
        requests, the state, faults and reset)."""
        if path == "/_fake/close":
            self.human_close(body["repo"], body["number"],
                             body.get("state_reason", "completed"))
            return 200, {"ok": True}
        if path == "/_fake/reopen":
            self.human_reopen(body["repo"], body["number"])
            return 200, {"ok": True}
        if path == "/_fake/age":
            self.age(body["repo"], body["number"], body["seconds"])
            return 200, {"ok": True}
        if path == "/_fake/transfer":
            to, n = self.transfer(body["repo"], body["number"], body["to"])
            return 200, {"repo": to, "number": n}
        if path == "/_fake/delete":
            self.delete(body["repo"], body["number"])
            return 200, {"ok": True}
        if path == "/_fake/repo":
            self.add_repo(body["repo"])
            return 200, {"ok": True}
        if path == "/_fake/clock":
            self.advance(body.get("advance_s", 0))
            return 200, {"ok": True}
        if path == "/_fake/assignable":
            logins = body.get("logins")
            if logins is not None and not isinstance(logins, list):
                raise ValueError("logins: want a list or null")
            self.set_assignable(logins)
            return 200, {"ok": True}
        if path == "/_fake/token":
            self.set_token(body["token"])
            return 200, {"ok": True}
        if path == "/_fake/search_lag":
            with self.lock:
                self.search_lag_s = float(body["seconds"])
            return 200, {"ok": True}
        if path == "/_fake/archive":
            self.archive(body["repo"], body.get("archived", True))
            return 200, {"ok": True}
        if path == "/_fake/lock":
            self.lock_issue(body["repo"], body["number"], body.get("locked", True))
            return 200, {"ok": True}
        if path == "/_fake/login":
            self.set_login(body["token"], body["login"])
            return 200, {"ok": True}
        if path == "/_fake/owner_token":
            owners = body["owners"]
            if not isinstance(owners, list) or not owners:
                raise ValueError("owners: want a non-empty list")
            self.apps.scope_token(body["token"], owners)
            if body.get("login"):
                self.set_login(body["token"], body["login"])
            return 200, {"ok": True}
        if path == "/_fake/comment":
            payload = self.human_comment(body["repo"], body["number"], body["login"],
                                         body["body"], body.get("association", "MEMBER"),
                                         body.get("user_type", "User"))
            if not body.get("deliver_to"):
                return 200, {"event": payload}
            status, answer, delivery = send_webhook(body["deliver_to"], body.get("secret"),
                                                    "issue_comment", payload)
            return 200, {"status": status, "body": answer, "delivery": delivery}
        if path == "/_fake/read_only":
            self.set_read_only(body["token"], body.get("read_only", True))
            return 200, {"ok": True}
        return None


class FakeHandler(fake_base.FakeHandler):
    server_version = "GitHub.com"
    sys_version = ""

    def _send(self, status, body, headers):
        if isinstance(body, str):
            data = body.encode("utf-8")
            ctype = "text/plain; charset=utf-8"
        elif body is None:
            data = b""
            ctype = None
        else:
            data = json.dumps(body, indent=2).encode("utf-8")
            ctype = "application/json; charset=utf-8"
        self._write(status, data, ([("Content-Type", ctype)] if ctype else []) +
                    list(headers.items()) + [("X-GitHub-Media-Type", "github.v3; format=json")])

    def _handle(self):
        fake = self.fake
        path, query, _, raw = self._read()
        if fake.path_prefix:
            if not path.startswith(fake.path_prefix + "/"):
                self._send(404, {"message": "Not Found", "documentation_url": DOCS}, {})
                return
            path = path[len(fake.path_prefix):]
        if path.startswith("/_fake/"):
            status, body = fake.handle_side(self.command, path, query, raw)
            self._send(status, body, {})
            return
        headers = self._headers()
        rec = self._record(path, query, headers, raw)
        with fake.lock:
            fake.requests.append(rec)
            fault = fake._take_fault(self.command, path)
            rate = fake._rate_headers() if fault else None
        if fault and fault["action"] == "drop":
            rec["status"] = "dropped"
            self._drop()
            return
        if fault and fault["action"] == "delay":
            time.sleep(fault["delay_ms"] / 1000.0)
        if fault and fault["action"] == "respond":
            with fake.lock:
                rec["status"] = fault["status"]
            h = dict(rate)
            h.update(fault["headers"])
            self._send(fault["status"], fault["body"], h)
            return
        with fake.lock:
            try:
                status, body, extra = fake.handle_api(self.command, path, query, headers, raw)
            except Reply as r:
                status, body, extra = r.status, r.body, r.headers
            rec["status"] = status
            if rate is None:  # GitHub does not count a 304 against the rate limit
                rate = fake._rate_headers(count=status != 304)
        if fault and fault["action"] == "drop_after":
            rec["status"] = "dropped_after_%d" % status
            self._drop()
            return
        if fault and fault["action"] == "respond_after":
            with fake.lock:
                rec["status"] = "%d_after_%d" % (fault["status"], status)
            h = dict(rate)
            h.update(fault["headers"])
            self._send(fault["status"], fault["body"], h)
            return
        if fault and fault["action"] == "delay_after":
            rec["status"] = "delayed_after_%d" % status
            time.sleep(fault["delay_ms"] / 1000.0)
        h = dict(rate)
        h.update(extra)
        try:
            self._send(status, body, h)
        except OSError:  # the client gave up waiting (delay faults)
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _handle


FakeGitHub.handler = FakeHandler


def webhook_signature(secret, body):
    """X-Hub-Signature-256 of body (bytes): "sha256=" + the hex HMAC-SHA256 keyed with the
    webhook's secret (GitHub Docs, "Validating webhook deliveries")."""
    import hmac
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def send_webhook(url, secret, event, payload, delivery=None, signature=None, timeout_s=10):
    """POST one webhook delivery as GitHub sends it ("Webhook events and payloads", "Delivery
    headers"): JSON body, Content-Type application/json, User-Agent GitHub-Hookshot/<id>,
    X-GitHub-Event, X-GitHub-Delivery (a GUID; give the same one to redeliver),
    X-GitHub-Hook-ID, X-Hub-Signature-256 (secret None: no signature; signature given: that
    header as is).  Returns (status, parsed JSON body or text, delivery)."""
    import urllib.request
    import uuid
    body = json.dumps(payload).encode()
    delivery = delivery or str(uuid.uuid4())
    headers = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/044aadd",
               "X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
               "X-GitHub-Hook-ID": "292430182",
               "X-GitHub-Hook-Installation-Target-Type": "repository"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    elif secret is not None:
        headers["X-Hub-Signature-256"] = webhook_signature(secret, body)
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            status, text = resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text), delivery
    except ValueError:
        return status, text, delivery


def main(argv=None):
    ap = fake_base.arg_parser("a fake of GitHub's REST API for issues", "test-token")
    ap.add_argument("--repo", action="append", help="owner/name (repeatable); default "
                    "acme/alerts")
    ap.add_argument("--assignable", action="append",
                    help="a login that can be assigned (repeatable); default: anyone")
    ap.add_argument("--owner-token", action="append", default=[],
                    help="OWNER=TOKEN[=LOGIN]: a personal token that reaches only OWNER's "
                    "repositories, acting as LOGIN (repeatable)")
    ap.add_argument("--search-lag", type=float, default=60.0,
                    help="seconds the search index lags behind writes (default 60)")
    args = ap.parse_args(argv)
    fg = FakeGitHub(token=args.token, repos=args.repo or ["acme/alerts"], host=args.host,
                    port=args.port, search_lag_s=args.search_lag,
                    assignable=args.assignable).start()
    for spec in args.owner_token:
        parts = spec.split("=")
        if len(parts) not in (2, 3) or not all(parts):
            ap.error("--owner-token: want OWNER=TOKEN[=LOGIN], got %r" % spec)
        fg.apps.scope_token(parts[1], [parts[0]])
        if len(parts) == 3:
            fg.set_login(parts[1], parts[2])
    return fake_base.serve(fg, args.port_file, "fake github")


if __name__ == "__main__":
    sys.exit(main())
