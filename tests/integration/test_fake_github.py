#!/usr/bin/env python3
# run.sh: weight 2, asan skip
# (the fake itself: no code of alertbridge's)
"""test_fake_github.py - self-test of fake_github.py over real HTTP (urllib, 127.0.0.1).

The integration tests trust the fake to behave like GitHub; this checks the answers that
alertbridge's client depends on: create/get/patch/comment, label merging, list filters and
Link pagination, 401/403/400/415/422/404/410/301, rate-limit headers, recording, faults.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import Runner, check, eq, event, http, poll  # noqa: E402

TOKEN = "ghp_selftest"
REPO = "acme/alerts"
HDRS = {"Authorization": "Bearer " + TOKEN, "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "alertbridge-selftest/1"}

fg = FakeGitHub(token=TOKEN, repos=[REPO, "acme/other"])
run = Runner()


def api(method, path, body=None, headers=None, raw=None):
    h = dict(HDRS)
    h.update(headers or {})
    for k in [k for k, v in h.items() if v is None]:
        del h[k]
    return http(method, fg.url + path, body=body, headers=h, raw=raw)


def create(title="t", **kw):
    body = {"title": title}
    body.update(kw)
    st, h, j = api("POST", "/repos/%s/issues" % REPO, body)
    eq(st, 201, "create status")
    return j


@run.case
def create_and_get():
    fg.reset()
    st, h, j = api("POST", "/repos/%s/issues" % REPO, {
        "title": "DiskFull on node-1", "body": "text\n<!-- alertbridge:key=abc -->",
        "labels": ["alert", "severity:critical"], "assignees": ["oncall"]})
    eq(st, 201, "create status")
    eq(j["number"], 1, "first issue number")
    eq(j["title"], "DiskFull on node-1", "title")
    eq(j["state"], "open", "state")
    eq(j["state_reason"], None, "state_reason")
    eq([x["name"] for x in j["labels"]], ["alert", "severity:critical"], "labels as objects")
    check(all(isinstance(x["id"], int) and "color" in x for x in j["labels"]),
          "label objects carry id and color", j["labels"])
    eq([a["login"] for a in j["assignees"]], ["oncall"], "assignees")
    for k in ("id", "node_id", "url", "repository_url", "html_url", "created_at",
              "updated_at", "closed_at", "comments", "body", "user"):
        check(k in j, "issue JSON has %s" % k, sorted(j))
    eq(j["html_url"], "https://github.com/acme/alerts/issues/1", "html_url")
    eq(j["url"], fg.url + "/repos/acme/alerts/issues/1", "url")
    eq(h.get("location"), fg.url + "/repos/acme/alerts/issues/1", "Location of created issue")
    check(h["content-type"].startswith("application/json"), "JSON content type",
          h["content-type"])
    st, h, g = api("GET", "/repos/%s/issues/1" % REPO)
    eq(st, 200, "get status")
    eq(g, j, "GET returns what POST returned")
    eq(create(title="second")["number"], 2, "numbers increase")


@run.case
def rate_limit_headers_on_every_answer():
    fg.reset()
    st1, h1, _ = api("GET", "/repos/%s/issues/99" % REPO)
    st2, h2, _ = api("GET", "/repos/%s/issues" % REPO, headers={"Authorization": "Bearer x"})
    eq((st1, st2), (404, 401), "statuses")
    for h in (h1, h2):
        for k in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-used",
                  "x-ratelimit-reset", "x-ratelimit-resource"):
            check(k in h, "header %s present" % k, h)
    eq(h1["x-ratelimit-limit"], "5000", "limit")
    eq(int(h2["x-ratelimit-used"]), int(h1["x-ratelimit-used"]) + 1, "used counts up")
    eq(int(h2["x-ratelimit-remaining"]), int(h1["x-ratelimit-remaining"]) - 1,
       "remaining counts down")
    eq(h1["x-ratelimit-resource"], "core", "resource")
    check(int(h1["x-ratelimit-reset"]) > time.time(), "reset in the future", h1)


@run.case
def auth_and_header_validation():
    fg.reset()
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO, headers={"Authorization": None})
    eq(st, 401, "missing token")
    eq(j["message"], "Bad credentials", "401 message")
    check(j["documentation_url"].startswith("https://docs.github.com"), "401 docs url", j)
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO, headers={"Authorization": "Bearer no"})
    eq((st, j["message"]), (401, "Bad credentials"), "wrong token")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO, headers={"Authorization": "token " +
                                                                  TOKEN})
    eq(st, 404, "'token' scheme accepted too (then the issue is missing)")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO, headers={"User-Agent": ""})
    eq(st, 403, "missing User-Agent")
    check(isinstance(j, str) and "User-Agent" in j, "403 names the User-Agent", j)
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO,
                   headers={"X-GitHub-Api-Version": "2021-01-01"})
    eq(st, 400, "unsupported API version")
    eq(j["message"], "Unsupported 'X-GitHub-Api-Version': '2021-01-01'", "400 message")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO, headers={"Accept": "text/html"})
    eq(st, 415, "unacceptable Accept")
    check("Accept" in j["message"], "415 names Accept", j)
    st, _, j = api("POST", "/repos/%s/issues" % REPO, raw=b"{not json",
                   headers={"Content-Type": "application/json"})
    eq((st, j["message"]), (400, "Problems parsing JSON"), "bad JSON body")


@run.case
def validation_failed_422():
    fg.reset()
    st, _, j = api("POST", "/repos/%s/issues" % REPO, {"body": "no title"})
    eq(st, 422, "missing title")
    eq(j["message"], "Validation Failed", "422 message")
    eq(j["errors"], [{"resource": "Issue", "code": "missing_field", "field": "title"}],
       "422 errors for missing title")
    st, _, j = api("POST", "/repos/%s/issues" % REPO, {"title": "x" * 257})
    eq(st, 422, "title over 256")
    eq(j["errors"][0]["field"], "title", "names title")
    create()
    st, _, j = api("PATCH", "/repos/%s/issues/1" % REPO, {"state": "shut"})
    eq((st, j["errors"]), (422, [{"resource": "Issue", "code": "invalid", "field": "state"}]),
       "bad state")
    st, _, j = api("PATCH", "/repos/%s/issues/1" % REPO, {"state": "closed",
                                                          "state_reason": "wontfix"})
    eq((st, j["errors"]), (422, [{"resource": "Issue", "code": "invalid",
                                  "field": "state_reason"}]), "bad state_reason")
    st, _, j = api("POST", "/repos/%s/issues/1/comments" % REPO, {"text": "x"})
    eq((st, j["errors"][0]["field"]), (422, "body"), "comment without body")
    st, _, j = api("POST", "/repos/%s/issues" % REPO, {"title": "t", "labels": "alert"})
    eq(st, 422, "labels not an array")
    eq(len(fg.issues(REPO)), 1, "no issue made by rejected requests")


@run.case
def unassignable_assignees_422():
    fg.reset()
    try:
        st, _, j = api("POST", "/_fake/assignable", {"logins": ["oncall"]})
        eq(st, 200, "side door sets the assignable logins")
        st, _, j = api("POST", "/repos/%s/issues" % REPO, {
            "title": "t", "assignees": ["oncall", "ghost", "nobody"]})
        eq(st, 422, "an assignee who cannot be assigned")
        eq(j["message"], "Validation Failed", "message")
        eq(j["errors"], [{"value": v, "resource": "Issue", "field": "assignees",
                          "code": "invalid"} for v in ("ghost", "nobody")],
           "one error per rejected login, as GitHub answers")
        eq(fg.issues(REPO), [], "nothing made")
        eq([a["login"] for a in create(assignees=["oncall"])["assignees"]], ["oncall"],
           "an assignable login is accepted")
        st, _, _ = api("PATCH", "/repos/%s/issues/1" % REPO, {"assignees": ["ghost"]})
        eq(st, 422, "an update naming one is rejected too")
        eq([a["login"] for a in fg.issues(REPO)[0]["assignees"]], ["oncall"], "unchanged")
    finally:
        fg.set_assignable(None)
    eq([a["login"] for a in create(assignees=["anyone"])["assignees"]], ["anyone"],
       "by default anyone can be assigned")


@run.case
def patch_close_and_reopen():
    fg.reset()
    create()
    st, _, j = api("PATCH", "/repos/%s/issues/1" % REPO, {"state": "closed",
                                                          "state_reason": "completed"})
    eq(st, 200, "close status")
    eq((j["state"], j["state_reason"]), ("closed", "completed"), "closed completed")
    check(j["closed_at"] is not None, "closed_at set", j)
    st, _, j = api("PATCH", "/repos/%s/issues/1" % REPO, {"state": "open",
                                                          "state_reason": "reopened"})
    eq((st, j["state"], j["state_reason"], j["closed_at"]), (200, "open", "reopened", None),
       "reopened")
    st, _, j = api("PATCH", "/repos/%s/issues/1" % REPO, {"state": "closed"})
    eq(j["state_reason"], "completed", "close without reason defaults to completed")
    fg.human_close(REPO, 1, "not_planned")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    eq((j["state"], j["state_reason"]), ("closed", "not_planned"), "human close as not planned")


@run.case
def comments_and_labels_merge():
    fg.reset()
    create(labels=["alert", "sev:warning"])
    st, h, c = api("POST", "/repos/%s/issues/1/comments" % REPO, {"body": "resolved at X"})
    eq(st, 201, "comment status")
    eq(c["body"], "resolved at X", "comment body")
    check(c["issue_url"].endswith("/repos/acme/alerts/issues/1"), "issue_url", c)
    check("location" in h, "comment Location", h)
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    eq(j["comments"], 1, "comments count")
    eq([x["body"] for x in fg.comments(REPO, 1)], ["resolved at X"], "stored comments")
    st, _, labs = api("POST", "/repos/%s/issues/1/labels" % REPO,
                      {"labels": ["SEV:warning", "team:gpu"]})
    eq(st, 200, "labels status")
    eq([x["name"] for x in labs], ["alert", "sev:warning", "team:gpu"],
       "labels merged, case-insensitively, never replaced")
    st, _, labs = api("POST", "/repos/%s/issues/1/labels" % REPO, ["extra"])
    eq([x["name"] for x in labs][-1], "extra", "array body accepted")


@run.case
def list_filters_and_pagination():
    fg.reset()
    for n in range(1, 8):
        create(title="issue %d" % n)
        fg.advance(10)  # distinct created_at, no sleeping
    fg.human_close(REPO, 3)
    path = "/repos/%s/issues" % REPO
    st, h, j = api("GET", path + "?state=all&sort=created&direction=desc&per_page=3")
    eq(st, 200, "list status")
    eq([i["number"] for i in j], [7, 6, 5], "page 1 newest first")
    link = h.get("link", "")
    check('rel="next"' in link and 'rel="last"' in link, "Link next and last", link)
    nxt = [p.split(";")[0].strip()[1:-1] for p in link.split(",") if 'rel="next"' in p][0]
    check(nxt.startswith(fg.url + path + "?"), "next link is absolute", nxt)
    seen = [i["number"] for i in j]
    for _ in range(5):  # bounded walk over the Link chain
        st, h, j = http("GET", nxt, headers=HDRS)
        seen += [i["number"] for i in j]
        nl = [p for p in h.get("link", "").split(",") if 'rel="next"' in p]
        if not nl:
            break
        nxt = nl[0].split(";")[0].strip()[1:-1]
    eq(seen, [7, 6, 5, 4, 3, 2, 1], "all pages in order")
    check('rel="prev"' in h["link"] and 'rel="next"' not in h["link"], "last page links",
          h["link"])
    st, h, j = api("GET", path)
    eq([i["number"] for i in j], [7, 6, 5, 4, 2, 1], "default: open only, newest first")
    check("link" not in h, "no Link when one page", h)
    st, _, j = api("GET", path + "?state=closed")
    eq([i["number"] for i in j], [3], "state=closed")
    st, _, j = api("GET", path + "?state=all&direction=asc&per_page=2&page=2")
    eq([i["number"] for i in j], [3, 4], "asc page 2")
    st, _, one = api("GET", path + "/5")
    st, _, j = api("GET", path + "?state=all&since=" + one["created_at"])
    eq([i["number"] for i in j], [7, 6, 5, 3], "since filters on updated_at (3 was closed "
       "later)")
    st, _, j = api("GET", path + "?since=yesterday")
    eq(st, 422, "bad since")
    st, _, j = api("GET", path + "?per_page=500")
    eq(len(j), 6, "per_page capped at 100")


@run.case
def etags_304_and_uncounted_reads():
    fg.reset()
    j = create(title="etag")
    path = "/repos/%s/issues/%d" % (REPO, j["number"])
    st, h, got = api("GET", path)
    tag = h.get("etag", "")
    check(tag.startswith('W/"') and tag.endswith('"'), "a weak ETag as GitHub sends", tag)
    used = int(h["x-ratelimit-used"])
    st, h2, body = api("GET", path, headers={"If-None-Match": tag})
    eq(st, 304, "unchanged issue answers 304")
    eq(body, None, "no body on 304")
    eq(h2.get("etag"), tag, "the 304 names the ETag")
    st, h3, _ = api("GET", path)
    eq(int(h3["x-ratelimit-used"]), used + 1, "the 304 was not counted, the 200 was")
    st, h4, _ = api("POST", path + "/comments", {"body": "c"})
    st, h5, _ = api("GET", path, headers={"If-None-Match": tag})
    eq(st, 200, "a comment changes the issue: 200")
    check(h5["etag"] != tag, "and its ETag", h5["etag"])
    st, h6, p = api("PATCH", path, {"state": "closed"})
    st, h7, _ = api("GET", path, headers={"If-None-Match": h6["etag"]})
    eq(st, 304, "the PATCH answer's ETag is the issue's")


@run.case
def list_filters_creator_and_labels():
    fg.reset()
    mine = create(title="mine", labels=["alert", "sev:1"])["number"]
    create(title="mine, other labels", labels=["alert"])
    theirs = fg.add_issue(REPO, "a person's", creator="octocat", labels=["alert", "sev:1"])
    path = "/repos/%s/issues?state=all" % REPO
    st, _, j = api("GET", path + "&creator=alertbridge-bot")
    eq(sorted(i["number"] for i in j), [mine, mine + 1], "creator= keeps the login's issues")
    eq({i["user"]["login"] for i in j}, {"alertbridge-bot"}, "user is the creator")
    st, _, j = api("GET", path + "&labels=ALERT,sev:1")
    eq(sorted(i["number"] for i in j), [mine, theirs], "labels=: every label, any case")
    st, _, j = api("GET", path + "&creator=octocat&labels=alert")
    eq([i["number"] for i in j], [theirs], "both filters")
    st, _, u = api("GET", "/user")
    eq(u["login"], "alertbridge-bot", "GET /user names the token's login")


@run.case
def each_token_its_login_and_every_issue_its_author():
    fg.reset()
    fg.set_login("ghp_beta", "beta-bot")
    fg.apps.scope_token("ghp_beta", ["acme"])
    beta = {"Authorization": "Bearer ghp_beta"}
    st, _, u = api("GET", "/user", headers=beta)
    eq((st, u["login"]), (200, "beta-bot"), "GET /user names the login of the token sent")
    st, _, u = api("GET", "/user")
    eq(u["login"], "alertbridge-bot", "the main token keeps its own login")
    mine = create(title="by the main token")
    st, _, theirs = api("POST", "/repos/%s/issues" % REPO, {"title": "by beta"}, headers=beta)
    eq((mine["user"]["login"], theirs["user"]["login"]), ("alertbridge-bot", "beta-bot"),
       "each issue's author is the token's login")
    st, _, c = api("POST", "/repos/%s/issues/%d/comments" % (REPO, mine["number"]),
                   {"body": "hi"}, headers=beta)
    eq(c["user"]["login"], "beta-bot", "a comment's author is its token's login")
    path = "/repos/%s/issues?state=all" % REPO
    st, _, j = api("GET", path + "&creator=BETA-bot")
    eq([i["number"] for i in j], [theirs["number"]], "creator= any case, whoever reads")
    st, _, j = api("PATCH", "/repos/%s/issues/%d" % (REPO, mine["number"]),
                   {"state": "closed"}, headers=beta)
    eq(j["closed_by"]["login"], "beta-bot", "closed_by is who closed it")


@run.case
def archived_locked_read_only_are_403():
    fg.reset()
    n = create(title="x")["number"]
    fg.archive(REPO)
    st, _, r = api("GET", "/repos/%s" % REPO)
    eq((st, r["archived"]), (200, True), "an archived repository reads, says archived")
    st, _, j = api("GET", "/repos/%s/issues/%d" % (REPO, n))
    eq(st, 200, "its issues read")
    for method, path, body in (("POST", "/repos/%s/issues" % REPO, {"title": "y"}),
                               ("POST", "/repos/%s/issues/%d/comments" % (REPO, n),
                                {"body": "b"}),
                               ("PATCH", "/repos/%s/issues/%d" % (REPO, n), {"state": "closed"}),
                               ("POST", "/repos/%s/issues/%d/labels" % (REPO, n),
                                {"labels": ["a"]})):
        st, h, j = api(method, path, body)
        eq((st, j["message"]), (403, "Repository was archived so is read-only."),
           "%s %s on an archived repository" % (method, path))
        check(h.get("x-ratelimit-remaining") not in (None, "0") and "retry-after" not in h,
              "no rate-limit sign on a refusal for good", h)
    fg.archive(REPO, False)
    eq(fg.issues(REPO)[0]["state"], "open", "nothing was changed")
    st, _, j = api("POST", "/_fake/lock", {"repo": REPO, "number": n, "locked": True})
    st, _, j = api("POST", "/repos/%s/issues/%d/comments" % (REPO, n), {"body": "b"})
    eq((st, j["message"]), (403, "Unable to create comment because issue is locked."),
       "a comment on a locked issue")
    st, _, j = api("GET", "/repos/%s/issues/%d" % (REPO, n))
    eq(j["locked"], True, "the issue says locked")
    st, _, j = api("PATCH", "/repos/%s/issues/%d" % (REPO, n), {"state": "closed"})
    eq(st, 200, "a locked issue can still be closed")
    fg.lock_issue(REPO, n, False)
    st, _, j = api("POST", "/repos/%s/issues/%d/comments" % (REPO, n), {"body": "b"})
    eq(st, 201, "unlocked: the comment is made")
    fg.set_read_only(TOKEN)
    st, _, j = api("POST", "/repos/%s/issues" % REPO, {"title": "y"})
    eq((st, j["message"]), (403, "Resource not accessible by personal access token"),
       "a read-only token cannot write")
    st, _, j = api("GET", "/repos/%s/issues?state=all" % REPO)
    eq(st, 200, "but reads")
    fg.set_read_only(TOKEN, False)


def app_jwt(key, app_id):
    """An RS256 JWT for app_id signed with the PEM key file (openssl: Python has no RSA)."""
    def b64(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    now = int(fg.now())
    signing = "%s.%s" % (b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()),
                         b64(json.dumps({"iat": now - 60, "exp": now + 540,
                                         "iss": str(app_id)}).encode()))
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=signing.encode(),
                         stdout=subprocess.PIPE, check=True, timeout=60).stdout
    return signing + "." + b64(sig)


@run.case
def app_identity_slug_bot():
    fg.reset()
    with tempfile.TemporaryDirectory() as d:
        key = os.path.join(d, "app.pem")
        subprocess.run(["openssl", "genrsa", "-out", key, "2048"], check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pub = subprocess.run(["openssl", "rsa", "-in", key, "-pubout"], check=True, timeout=60,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
        fg.apps.register(99, pub, {7: ["acme"]}, slug="octo-alerts")
        jwt = app_jwt(key, 99)
    st, _, app = api("GET", "/app", headers={"Authorization": "Bearer " + jwt})
    eq((st, app["id"], app["slug"]), (200, 99, "octo-alerts"), "GET /app with the JWT")
    st, _, j = api("GET", "/app")
    eq(st, 401, "GET /app with a personal token")
    st, _, t = api("POST", "/app/installations/7/access_tokens",
                   headers={"Authorization": "Bearer " + jwt})
    eq(st, 201, "installation token")
    inst = {"Authorization": "Bearer " + t["token"]}
    st, _, j = api("GET", "/user", headers=inst)
    eq((st, j["message"]), (403, "Resource not accessible by integration"),
       "an installation token cannot read GET /user")
    st, _, j = api("GET", "/app", headers=inst)
    eq(st, 403, "nor GET /app")
    st, _, i = api("POST", "/repos/%s/issues" % REPO, {"title": "by the app"}, headers=inst)
    eq(i["user"]["login"], "octo-alerts[bot]", "the App's issues are <slug>[bot]'s")
    st, _, j = api("GET", "/repos/%s/issues?state=all&creator=octo-alerts%%5Bbot%%5D" % REPO)
    eq([x["number"] for x in j], [i["number"]], "creator=<slug>[bot]")


@run.case
def over_long_titles_and_bodies_are_422():
    fg.reset()
    n = create(title="t" * 256, body="b" * 65536)["number"]
    for method, path, body, field in (
            ("POST", "/repos/%s/issues" % REPO, {"title": "t" * 257}, "title"),
            ("POST", "/repos/%s/issues" % REPO, {"title": "t", "body": "b" * 65537}, "body"),
            ("PATCH", "/repos/%s/issues/%d" % (REPO, n), {"title": "t" * 257}, "title"),
            ("PATCH", "/repos/%s/issues/%d" % (REPO, n), {"body": "b" * 65537}, "body"),
            ("POST", "/repos/%s/issues/%d/comments" % (REPO, n), {"body": "b" * 65537},
             "body")):
        st, _, j = api(method, path, body)
        eq((st, j["message"], j["errors"][0]["field"]), (422, "Validation Failed", field),
           "%s %s: %s one character too long" % (method, path, field))


@run.case
def not_found_gone_moved():
    fg.reset()
    create(title="a")
    create(title="b")
    st, _, j = api("GET", "/repos/acme/nope/issues/1")
    eq((st, j["message"]), (404, "Not Found"), "unknown repo")
    st, _, j = api("POST", "/repos/acme/nope/issues", {"title": "x"})
    eq(st, 404, "create in unknown repo")
    st, _, j = api("GET", "/repos/acme/nope")
    eq((st, j["message"]), (404, "Not Found"), "get an unknown repository")
    st, _, j = api("GET", "/repos/%s" % REPO.upper())
    eq((st, j["full_name"], j["owner"]["login"], j["has_issues"]), (200, REPO, "acme", True),
       "get a repository (names are case-insensitive)")
    st, _, j = api("GET", "/repos/%s/issues/42" % REPO)
    eq((st, j["message"]), (404, "Not Found"), "unknown issue")
    fg.delete(REPO, 1)
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    eq((st, j["message"]), (410, "This issue was deleted"), "deleted issue")
    st, _, j = api("PATCH", "/repos/%s/issues/1" % REPO, {"state": "closed"})
    eq(st, 410, "patch on deleted issue")
    to, n = fg.transfer(REPO, 2, "acme/other")
    eq((to, n), ("acme/other", 1), "transfer target")
    st, h, j = api("GET", "/repos/%s/issues/2" % REPO)
    eq(st, 301, "transferred issue")
    eq(j["message"], "Moved Permanently", "301 message")
    eq(h.get("location"), j["url"], "Location equals url")
    st, _, j = http("GET", h["location"], headers=HDRS)
    eq((st, j["number"], j["title"]), (200, 1, "b"), "following Location")
    check(j["url"].endswith("/repos/acme/other/issues/1"), "moved issue url", j["url"])
    st, _, j = http("POST", h["location"] + "/comments", {"body": "hi"}, headers=HDRS)
    eq(st, 201, "comment via /repositories/{id} path")
    st, _, j = api("GET", "/repos/%s/issues?state=all" % REPO)
    eq(j, [], "deleted and transferred issues are not listed")


@run.case
def recording_and_faults():
    fg.reset()
    create(title="rec", labels=["a"])
    reqs = fg.get_requests()
    eq(len(reqs), 1, "one recorded request")
    r = reqs[0]
    eq((r["method"], r["path"], r["status"]), ("POST", "/repos/acme/alerts/issues", 201),
       "recorded method, path, status")
    eq(r["body"], {"title": "rec", "labels": ["a"]}, "recorded JSON body")
    eq(r["headers"]["x-github-api-version"], "2022-11-28", "recorded headers (lower-case)")
    fg.add_fault(method="POST", path=r"/repos/[^/]+/[^/]+/issues", count=2, status=502,
                 body={"message": "Server Error"}, headers={"Retry-After": "1"})
    for _ in range(2):
        st, h, j = api("POST", "/repos/%s/issues" % REPO, {"title": "x"})
        eq((st, j, h.get("retry-after")), (502, {"message": "Server Error"}, "1"),
           "injected answer")
    eq(create(title="after")["number"], 2, "fault used up, nothing created by faults")
    # drop: no answer and nothing done; drop_after: done, but the answer is lost.
    fg.add_fault(method="POST", path=".*/issues", action="drop")
    st = None
    try:
        api("POST", "/repos/%s/issues" % REPO, {"title": "dropped"})
    except Exception as e:  # urllib raises on a closed connection
        st = type(e).__name__
    check(st is not None, "dropped connection raises on the client", st)
    eq(len(fg.issues(REPO)), 2, "drop made nothing")
    fg.add_fault(method="POST", path=".*/issues", action="drop_after")
    try:
        api("POST", "/repos/%s/issues" % REPO, {"title": "lost answer"})
    except Exception:
        pass
    eq([i["title"] for i in fg.issues(REPO)][-1], "lost answer", "drop_after made the issue")
    # side door: fault, close and state over HTTP
    st, _, _ = http("POST", fg.url + "/_fake/fault", {"method": "GET", "path": ".*/issues/1",
                                                      "status": 503, "body": {"m": 1}})
    eq(st, 200, "side-door fault")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    eq((st, j), (503, {"m": 1}), "side-door fault applied")
    st, _, _ = http("POST", fg.url + "/_fake/close", {"repo": REPO, "number": 1,
                                                      "state_reason": "not_planned"})
    st, _, s = http("GET", fg.url + "/_fake/state")
    eq(s[REPO]["issues"][0]["state_reason"], "not_planned", "side-door close and state")
    st, _, reqs = http("GET", fg.url + "/_fake/requests?clear=1")
    check(all(not r["path"].startswith("/_fake") for r in reqs), "side door not recorded")
    eq(fg.get_requests(), [], "cleared")
    st, _, j = http("POST", fg.url + "/_fake/close", {"repo": REPO})
    eq(st, 400, "bad side-door call")
    check("number" in j["message"], "names the missing field", j)
    # a person reopens; an issue closed long ago (age moves closed_at back)
    st, _, _ = http("POST", fg.url + "/_fake/age", {"repo": REPO, "number": 1,
                                                    "seconds": 7200})
    eq(st, 200, "side-door age")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    check(j["closed_at"] <= time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                          time.gmtime(time.time() - 7100)),
          "closed_at two hours back", j["closed_at"])
    st, _, _ = http("POST", fg.url + "/_fake/reopen", {"repo": REPO, "number": 1})
    eq(st, 200, "side-door reopen")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    eq((j["state"], j["state_reason"], j["closed_at"]), ("open", "reopened", None),
       "reopened by a person")
    st, _, _ = http("POST", fg.url + "/_fake/reopen", {"repo": REPO, "number": 1})
    eq(st, 400, "reopening an open issue is refused")


@run.case
def search_lags_behind_the_list():
    fg.reset()
    with fg.lock:
        fg.search_lag_s = 30
    create(title="fresh", body="b\n<!-- alertbridge:key=k1 -->")
    st, _, j = api("GET", "/search/issues?q=%s" % urllib.parse.quote(
        "repo:%s is:issue in:body alertbridge:key=k1" % REPO))
    eq((st, j["total_count"], j["items"]), (200, 0, []), "a new issue is not found yet")
    st, _, j = api("GET", "/repos/%s/issues?state=all" % REPO)
    eq([i["title"] for i in j], ["fresh"], "the list has it at once")
    fg.advance(31)
    st, _, j = api("GET", "/search/issues?q=%s" % urllib.parse.quote(
        "repo:%s alertbridge:key=k1" % REPO))
    eq([i["title"] for i in j["items"]], ["fresh"], "found once the lag passed")
    st, _, j = api("GET", "/search/issues")
    eq(st, 422, "search without q")
    eq(fg.marker_counts(REPO), {"k1": 1}, "issues per marker key")
    with fg.lock:
        fg.search_lag_s = 60


@run.case
def faults_after_the_write_and_token_rotation():
    fg.reset()
    fg.add_fault(method="POST", path=".*/issues", action="respond_after", status=502,
                 body={"message": "Server Error"})
    st, _, j = api("POST", "/repos/%s/issues" % REPO, {"title": "made anyway"})
    eq((st, j), (502, {"message": "Server Error"}), "respond_after answers the fault")
    eq([i["title"] for i in fg.issues(REPO)], ["made anyway"], "respond_after did the write")
    eq(fg.get_requests()[-1]["status"], "502_after_201", "recorded as done, then 502")
    fg.add_fault(method="POST", path=".*/issues", action="respond_after", status=201,
                 body="not json")
    st, _, j = api("POST", "/repos/%s/issues" % REPO, {"title": "unreadable"})
    eq((st, j), (201, "not json"), "a 201 whose body is not JSON")
    eq(len(fg.issues(REPO)), 2, "and the issue exists")
    fg.add_fault(method="POST", path=".*/issues", action="delay_after", delay_ms=1500)
    t = time.time()
    try:
        http("POST", fg.url + "/repos/%s/issues" % REPO, {"title": "slow"}, headers=HDRS,
             timeout_s=0.5)
        got = "answer"
    except OSError:
        got = "timeout"
    eq(got, "timeout", "delay_after outlasts the client's timeout")
    check(time.time() - t < 1.4, "the client gave up before the answer")
    eq([i["title"] for i in fg.issues(REPO)][-1], "slow", "delay_after did the write first")
    fg.set_token("rotated")
    st, _, j = api("GET", "/repos/%s/issues/1" % REPO)
    eq((st, j["message"]), (401, "Bad credentials"), "old token refused after rotation")
    st, _, _ = http("POST", fg.url + "/_fake/token", {"token": TOKEN})
    eq(api("GET", "/repos/%s/issues/1" % REPO)[0], 200, "side door restores the token")


@contextlib.contextmanager
def fake_script(*args):
    """fake_github.py run as a script with args (and --port 0 --port-file in a temp dir):
    yields (its Popen, its base URL) once the port file is there; after the block it is sent
    SIGTERM (SIGKILL if it has not exited within 5 s) and the temp dir removed."""
    d = tempfile.mkdtemp(prefix="fakegh-")
    pf = os.path.join(d, "port")
    p = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "fake_github.py"), "--port", "0", "--port-file", pf] +
        list(args), stderr=subprocess.DEVNULL)
    try:
        poll(lambda: os.path.exists(pf), "port file", timeout_s=10)
        yield p, "http://127.0.0.1:%d" % int(open(pf).read())
    finally:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


@run.case
def script_mode_port_file():
    with fake_script("--token", "T2", "--repo", "o/r", "--assignable", "oncall") as (p, base):
        h = dict(HDRS, Authorization="Bearer T2")
        st, _, j = http("POST", base + "/repos/o/r/issues", {"title": "s"}, headers=h)
        eq((st, j["number"]), (201, 1), "script serves the API")
        st, _, j = http("POST", base + "/repos/o/r/issues",
                        {"title": "s", "assignees": ["ghost"]}, headers=h)
        eq((st, j["errors"][0]["value"]), (422, "ghost"), "--assignable limits the assignees")
    eq(p.returncode, 0, "script exits 0 on SIGTERM")


@run.case
def script_mode_two_owners_and_a_delivered_comment():
    """A new user's walk runs the fake as a script: github.credentials needs a token per
    organisation (each its own login, reaching only its owner's repositories), and /silence
    needs a person's comment delivered as GitHub's signed issue_comment event."""
    import hashlib
    import hmac
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    got = []

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            got.append(({k.lower(): v for k, v in self.headers.items()}, raw))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

    hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        with fake_script("--token", "T-acme", "--repo", "acme/a", "--repo", "beta/b",
                         "--owner-token", "beta=T-beta=bob") as (_, base):
            st, _, j = http("POST", base + "/repos/beta/b/issues", {"title": "x"},
                            headers=dict(HDRS, Authorization="Bearer T-beta"))
            eq((st, j["user"]["login"]), (201, "bob"), "beta's token creates as bob")
            st, _, _ = http("POST", base + "/repos/acme/a/issues", {"title": "x"},
                            headers=dict(HDRS, Authorization="Bearer T-beta"))
            eq(st, 404, "beta's token does not reach acme (404, as GitHub answers)")
            st, _, j = http("GET", base + "/user",
                            headers=dict(HDRS, Authorization="Bearer T-beta"))
            eq((st, j["login"]), (200, "bob"), "GET /user")
            http("POST", base + "/_fake/owner_token", {"token": "T-gamma", "owners": ["gamma"],
                                                       "login": "carol"})
            http("POST", base + "/_fake/repo", {"repo": "gamma/c"})
            st, _, j = http("POST", base + "/repos/gamma/c/issues", {"title": "x"},
                            headers=dict(HDRS, Authorization="Bearer T-gamma"))
            eq((st, j["user"]["login"]), (201, "carol"), "a token added by the side door")
            st, _, j = http("POST", base + "/_fake/comment", {
                "repo": "beta/b", "number": 1, "login": "octocat", "body": "/silence 2h",
                "association": "MEMBER", "deliver_to": "http://127.0.0.1:%d/hook" %
                hook.server_address[1], "secret": "s3"})
            eq(st, 200, "side-door comment (%s)" % j)
            eq(j["status"], 202, "the receiver's answer is returned")
            eq(len(got), 1, "one delivery")
            h, raw = got[0]
            eq(h["x-github-event"], "issue_comment", "event header")
            eq(h["x-hub-signature-256"],
               "sha256=" + hmac.new(b"s3", raw, hashlib.sha256).hexdigest(),
               "signed with the secret")
            ev = json.loads(raw)
            eq((ev["action"], ev["comment"]["body"], ev["comment"]["author_association"],
                ev["issue"]["number"], ev["sender"]["login"]),
               ("created", "/silence 2h", "MEMBER", 1, "octocat"), "the event")
            st, _, j = http("GET", base + "/repos/beta/b/issues/1/comments",
                            headers=dict(HDRS, Authorization="Bearer T-beta"))
            eq([c["user"]["login"] for c in j], ["octocat"], "the comment is kept on the issue")
    finally:
        hook.shutdown()


def main():
    socket.setdefaulttimeout(10)
    fg.start()
    event("fake github on %s" % fg.url)
    try:
        return run.run()
    finally:
        fg.stop()


if __name__ == "__main__":
    sys.exit(main())
