"""fake_github_issues.py - the issue endpoints of fake_github.py: GitHub's checks on a write
and its answers to the issue list and to search, plus the error shape every answer shares.

Follows GitHub REST API version 2022-11-28: "REST API endpoints for issues" (Create an issue,
Update an issue, List repository issues), "REST API endpoints for issue comments" (Create an
issue comment), "REST API endpoints for labels" (Add labels to an issue), "REST API endpoints
for search" (Search issues and pull requests) and "Using pagination in the REST API".  Titles
over 256 characters and bodies over 65,536 are 422 "Validation Failed" (the docs give the body
limit for comments; the fake applies both limits to every write, which is stricter).
IssueEndpoints is a mixin of FakeGitHub: its methods use the fake's state (repos, clock, ids,
JSON shapes) and run with the fake's lock held.
"""

import datetime
import json
import urllib.parse

from fake_base import Reply

DOCS = "https://docs.github.com/rest"
MAX_PER_PAGE = 100
STATE_REASONS = ("completed", "not_planned", "reopened")
TITLE_MAX = 256     # characters of an issue title
BODY_MAX = 65536    # characters of an issue's or a comment's body


def parse_iso(s):
    """Parse GitHub's `since` (YYYY-MM-DDTHH:MM:SSZ, fractions and offsets tolerated)."""
    s = s.strip().replace("Z", "+00:00")
    try:
        d = datetime.datetime.fromisoformat(s)
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return d.timestamp()


def error(status, message, **extra):
    """A GitHub error answer: {message, documentation_url, extra..., status}."""
    body = {"message": message, "documentation_url": DOCS}
    body.update(extra)
    body["status"] = str(status)
    return Reply(status, body)


def missing_field(resource, field):
    """One entry of a 422's errors: field was absent or empty."""
    return {"resource": resource, "code": "missing_field", "field": field}


def too_long(resource, field, limit):
    """One entry of a 422's errors: field is over limit characters, in GitHub's words."""
    return {"resource": resource, "code": "custom", "field": field,
            "message": "%s is too long (maximum is %d characters)" % (field, limit)}


def validation_failed(*errors):
    """The 422 "Validation Failed" answer with errors (dicts as GitHub lists them)."""
    return error(422, "Validation Failed", errors=list(errors))


class IssueEndpoints:
    """The issue, comment, label, list and search endpoints of FakeGitHub (caller holds the
    lock).  Each returns (status, body, headers) or raises Reply."""

    def _check_names(self, body, field):
        v = body.get(field, [])
        if v is None:
            return []
        if not isinstance(v, list):
            raise error(422, "Invalid request.\n\nFor '%s', %s is not an array." % (field,
                        json.dumps(v)))
        out = []
        for x in v:
            if isinstance(x, dict) and field == "labels" and isinstance(x.get("name"), str):
                x = x["name"]
            if not isinstance(x, str) or not x:
                raise error(422, "Validation Failed", errors=[{
                    "resource": "Issue", "code": "invalid", "field": field,
                    "value": x}])
            out.append(x)
        return out

    def _check_assignable(self, logins):
        """GitHub's answer to assignees who cannot be assigned (no access to the repository,
        no such user): 422 with one error per rejected login."""
        if self.assignable is None:
            return
        bad = [a for a in logins if a not in self.assignable]
        if bad:
            raise error(422, "Validation Failed", errors=[{
                "value": a, "resource": "Issue", "field": "assignees", "code": "invalid"}
                for a in bad])

    def _create(self, r, body):
        if not isinstance(body, dict):
            raise error(400, "Body should be a JSON object")
        title = body.get("title")
        if isinstance(title, (int, float)) and not isinstance(title, bool):
            title = str(title)
        if not isinstance(title, str) or not title.strip():
            raise validation_failed(missing_field("Issue", "title"))
        if len(title) > TITLE_MAX:
            raise validation_failed(too_long("Issue", "title", TITLE_MAX))
        text = body.get("body")
        if text is not None and not isinstance(text, str):
            raise error(422, "Invalid request.\n\nFor 'properties/body', %s is not a string "
                        "or null." % json.dumps(text))
        if text is not None and len(text) > BODY_MAX:
            raise validation_failed(too_long("Issue", "body", BODY_MAX))
        labels = self._check_names(body, "labels")
        assignees = self._check_names(body, "assignees")
        self._check_assignable(assignees)
        n = r["next_number"]
        r["next_number"] += 1
        now = self.now()
        merged = []
        for lab in labels:
            if lab.lower() not in [x.lower() for x in merged]:
                merged.append(lab)
        r["issues"][n] = {"id": self._id(), "number": n, "title": title, "body": text,
                          "labels": merged, "assignees": list(dict.fromkeys(assignees)),
                          "state": "open", "state_reason": None, "created_at": now,
                          "updated_at": now, "closed_at": None, "closed_by": None,
                          "creator": self.actor}
        return self._issue_answer(201, r, r["issues"][n], {
            "Location": "%s/repos/%s/issues/%d" % (self.url, r["full_name"], n)})

    def _update(self, r, i, body):
        if not isinstance(body, dict):
            raise error(400, "Body should be a JSON object")
        errors = []
        state = body.get("state")
        reason = body.get("state_reason")
        if "state" in body and state not in ("open", "closed"):
            errors.append({"resource": "Issue", "code": "invalid", "field": "state"})
        if "state_reason" in body and reason is not None and reason not in STATE_REASONS:
            errors.append({"resource": "Issue", "code": "invalid", "field": "state_reason"})
        if state == "closed" and reason == "reopened":
            errors.append({"resource": "Issue", "code": "invalid", "field": "state_reason"})
        if state == "open" and reason in ("completed", "not_planned"):
            errors.append({"resource": "Issue", "code": "invalid", "field": "state_reason"})
        if "title" in body and (not isinstance(body["title"], str) or not body["title"].strip()):
            errors.append(missing_field("Issue", "title"))
        elif "title" in body and len(body["title"]) > TITLE_MAX:
            errors.append(too_long("Issue", "title", TITLE_MAX))
        if isinstance(body.get("body"), str) and len(body["body"]) > BODY_MAX:
            errors.append(too_long("Issue", "body", BODY_MAX))
        if errors:
            raise validation_failed(*errors)
        labels = self._check_names(body, "labels") if "labels" in body else None
        assignees = self._check_names(body, "assignees") if "assignees" in body else None
        self._check_assignable(assignees or [])
        now = self.now()
        if "title" in body:
            i["title"] = body["title"]
        if "body" in body:
            i["body"] = body["body"]
        if labels is not None:
            i["labels"] = labels
        if assignees is not None:
            i["assignees"] = assignees
        # state_reason can only change alongside state (GitHub ignores it otherwise).
        if state == "closed":
            if i["state"] != "closed" or "state_reason" in body:
                i["state_reason"] = reason or "completed"
            if i["state"] != "closed":
                i["closed_at"] = now
                i["closed_by"] = self.actor
            i["state"] = "closed"
        elif state == "open":
            if i["state"] == "closed":
                i["state_reason"] = "reopened"
                i["closed_at"] = None
                i["closed_by"] = None
            elif "state_reason" in body:
                i["state_reason"] = reason
            i["state"] = "open"
        i["updated_at"] = now
        return self._issue_answer(200, r, i)

    def _comment(self, r, i, body):
        if i.get("locked"):
            raise error(403, "Unable to create comment because issue is locked.")
        if not isinstance(body, dict):
            raise error(400, "Body should be a JSON object")
        text = body.get("body")
        if not isinstance(text, str) or not text.strip():
            raise validation_failed(missing_field("IssueComment", "body"))
        if len(text) > BODY_MAX:
            raise validation_failed(too_long("IssueComment", "body", BODY_MAX))
        c = self._new_comment(r, i, text, self._user(self.actor), "OWNER")
        return 201, c, {"Location": c["url"]}

    def _labels_add(self, r, i, body):
        if isinstance(body, dict):
            if "labels" not in body:
                raise error(422, "Invalid request.\n\n\"labels\" wasn't supplied.")
            names = self._check_names(body, "labels")
        elif isinstance(body, list):
            names = self._check_names({"labels": body}, "labels")
        else:
            raise error(400, "Body should be a JSON object or array")
        have = [x.lower() for x in i["labels"]]
        for n in names:
            if n.lower() not in have:
                i["labels"].append(n)
                have.append(n.lower())
        i["updated_at"] = self.now()
        return 200, [self._label(r, n) for n in i["labels"]], {}

    def _list(self, r, path, query):
        q = {k: v[-1] for k, v in query.items()}
        state = q.get("state", "open")
        sort = q.get("sort", "created")
        direction = q.get("direction", "desc")
        if state not in ("open", "closed", "all") or sort not in ("created", "updated",
                                                                  "comments") \
                or direction not in ("asc", "desc"):
            raise error(422, "Validation Failed", errors=[{
                "resource": "Issue", "code": "invalid", "field": "state/sort/direction"}])
        try:
            per_page = int(q.get("per_page", "30"))
            page = int(q.get("page", "1"))
        except ValueError:
            raise error(422, "Validation Failed", errors=[{
                "resource": "Issue", "code": "invalid", "field": "per_page/page"}])
        per_page = min(max(per_page, 1), MAX_PER_PAGE)
        page = max(page, 1)
        since = None
        if "since" in q:
            since = parse_iso(q["since"])
            if since is None:
                raise error(422, "Validation Failed", errors=[{
                    "resource": "Issue", "code": "invalid", "field": "since"}])
        creator = q.get("creator")
        want = [x.strip().lower() for x in q.get("labels", "").split(",") if x.strip()]
        items = [i for i in r["issues"].values()
                 if not i.get("deleted") and not i.get("transferred_to")
                 and (state == "all" or i["state"] == state)
                 and (since is None or int(i["updated_at"]) >= since)
                 and (creator is None or (i.get("creator") or self.user).lower() ==
                      creator.lower())
                 and all(w in [x.lower() for x in i["labels"]] for w in want)]
        key = {"created": lambda i: (i["created_at"], i["number"]),
               "updated": lambda i: (i["updated_at"], i["number"]),
               "comments": lambda i: (len(r["comments"].get(i["number"], [])), i["number"])}
        items.sort(key=key[sort], reverse=(direction == "desc"))
        last = max(1, (len(items) + per_page - 1) // per_page)
        chunk = items[(page - 1) * per_page:page * per_page]
        headers = {}
        links = []

        def link(p, rel):
            qq = dict(q)
            qq["per_page"] = str(per_page)
            qq["page"] = str(p)
            links.append('<%s%s?%s>; rel="%s"' % (self.url, path, urllib.parse.urlencode(qq),
                                                   rel))
        if page > 1:
            link(page - 1, "prev")
        if page < last:
            link(page + 1, "next")
            link(last, "last")
        if page > 1:
            link(1, "first")
        if links:
            headers["Link"] = ", ".join(links)
        return 200, [self._issue_json(r, i) for i in chunk], headers

    def _search(self, query):
        """GET /search/issues?q=...: terms repo:o/r, is:issue, is:open|closed, in:body|title
        and free words (all must appear in title or body).  Sees the repositories as they were
        search_lag_s ago: issues created or changed since then are missing or stale (their
        newer state is not visible; a new one not at all)."""
        q = query.get("q", [""])[-1]
        if not q.strip():
            raise error(422, "Validation Failed", errors=[{
                "resource": "Search", "field": "q", "code": "missing"}])
        repo = None
        state = None
        words = []
        for t in q.split():
            if t.startswith("repo:"):
                repo = t[5:].lower()
            elif t in ("is:open", "is:closed"):
                state = t[3:]
            elif t in ("is:issue", "type:issue", "in:body", "in:title") or ":" in t:
                continue
            else:
                words.append(t.strip('"'))
        horizon = self.now() - self.search_lag_s
        items = []
        for r in self.repos.values():
            if repo is not None and r["full_name"].lower() != repo:
                continue
            for n, i in sorted(r["issues"].items()):
                if i.get("deleted") or i.get("transferred_to") or i["created_at"] > horizon:
                    continue
                if state and i["state"] != state and i["updated_at"] <= horizon:
                    continue
                text = "%s\n%s" % (i["title"], i["body"] or "")
                if all(w in text for w in words):
                    items.append(dict(self._issue_json(r, i), score=1.0))
        return 200, {"total_count": len(items), "incomplete_results": False,
                     "items": items[:MAX_PER_PAGE]}, {}
