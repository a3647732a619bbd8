"""reference.py - the reference model of the model-based lifecycle test (lifecycle.py): what
GitHub must show for each alert or group after each event, as DESIGN.md ("Bridge semantics")
says.  apply_event() applies one event to a Key and names the bridge's action; rebuild() is the
map after a lost database, rebuilt from GitHub's markers.  Pure: no process, no I/O.

Repositories (issue 18, reroutes): a new issue is made in the repository the alert's route names
when it is made (apply_event's repo); an alert with an issue keeps it whatever its route says
now (DESIGN.md "Routing": the map wins), and a new issue of a new episode links the one it
supersedes, wherever that one is (Issue.prev).
"""



class Issue:
    """An issue the model expects on GitHub."""

    def __init__(self, ep, repo=None, prev=None):
        self.state = "open"
        self.reason = None
        self.comments = 0         # alertbridge comments
        self.create_ep = ep       # episode marker of the body
        self.marker_ep = ep       # newest episode marker (body or comments)
        self.marker_res = None    # endsAt of its newest "resolved" comment
        self.pending_res = None   # a group's resolve met this issue closed: no comment; the
                                  # paced body rewrite carries it (may not have happened yet)
        self.aged = False         # closed longer ago than reopen_window
        self.deleted = False
        self.transferred = False
        self.human = False        # a person changed it (the map may lag behind)
        self.repo = repo          # where it is made (its route's); moved by a transfer
        self.number = None        # bound at a quiet point
        self.old = None           # (repo, number) before a transfer
        self.prev = prev          # the Issue a linked create supersedes (its link)

    def desc(self):
        return "%s#%s %s/%s %d comments%s%s" % (
            self.repo, self.number, self.state, self.reason, self.comments,
            " (aged)" if self.aged else "", " (deleted)" if self.deleted else "")


class Key:
    """One map identity (receiver, key): an alert, or a group with issue_per: group."""

    def __init__(self, receiver, key, auto_close=True, bad=False):
        self.receiver = receiver
        self.key = key
        self.auto_close = auto_close
        self.bad = bad            # routed to a repository that does not exist
        self.row = None           # None, "dry", "live" (-> issues[cur]) or "gone" (deleted)
        self.cur = None
        self.ep = None            # applied episode (startsAt ms)
        self.res_end = None       # applied resolve (endsAt ms)
        self.issues = []
        self.uncertain = False    # its deleted issue was noticed: no old deliveries any more
        self.continues = False    # a group rebuilt without its resolve: the next firing
                                  # continues the row's episode (bridge/group.h)
        self.members_known = True  # a group: the bridge remembers its members (not after a
                                   # rebuild, until its next event)

    def current(self):
        return self.issues[self.cur] if self.row == "live" else None

    def create(self, s, repo=None, prev=None):
        self.issues.append(Issue(s, repo, prev))
        self.cur = len(self.issues) - 1
        self.row = "live"
        self.ep = s
        self.res_end = None


def apply_event(k, firing, s, e, dry, repo=None):
    """What the bridge must do with one event of k (DESIGN.md, Bridge semantics); returns a
    short name of the action for the step log.  repo: the repository the alert's route names
    now, where an issue this event creates is made."""
    if k.bad:
        return "dead-letter"
    k.members_known = True
    if k.row is not None:
        if k.ep is not None and s < k.ep:
            return "stale"
        if firing and k.res_end is not None and s < k.res_end:
            return "stale"
        if not firing and k.res_end is not None and e < k.res_end:
            return "stale"
    if dry:
        if firing:
            if k.row is None:
                k.row = "dry"
            k.ep = s
        else:
            k.res_end = e
        return "dry-run"
    if firing:
        if k.row in (None, "dry"):
            k.create(s, repo)
            return "create"
        if s == k.ep:
            return "same episode"
        if k.continues and k.res_end is None:
            k.ep, k.continues = s, False
            return "same episode (a group rebuilt without its resolve continues its row)"
        if k.row == "gone":
            k.create(s, repo)
            return "create (issue deleted)"
        cur = k.current()
        cur.pending_res = None    # the body is rewritten for the new episode
        if cur.state == "open":
            cur.comments += 1
            cur.marker_ep = s
            k.ep = s
            return "comment firing again"
        if cur.aged:
            k.create(s, repo, prev=cur)
            return "create linked"
        k.ep = s
        if cur.reason == "not_planned":
            return "nothing (not planned)"
        cur.state, cur.reason, cur.aged = "open", "reopened", False
        cur.comments += 1
        cur.marker_ep = s
        return "reopen"
    # resolved
    if k.row is None:
        return "nothing (no issue)"
    if k.res_end is not None and e <= k.res_end:
        return "nothing (resolve already applied)"
    k.res_end = e
    k.continues = False
    if k.row == "dry":
        return "nothing (no issue)"
    if k.row == "gone":
        k.uncertain = True
        return "nothing (issue deleted)"
    cur = k.current()
    if cur.state != "open":
        if k.receiver == "groups":
            cur.pending_res = e
        return "nothing (closed)"
    cur.comments += 1
    cur.marker_res = e
    if not k.auto_close:
        return "comment resolved"
    cur.state, cur.reason, cur.aged = "closed", "completed", False
    return "close"


def rebuild(keys, body_of=None, repos=None):
    """The map after the bridge rebuilt it from GitHub's markers (a lost database): each key
    without a row gets its newest live issue in repos (the repositories the bridge scans
    together, once each, before the first event of the receiver its route sends to one of them
    not scanned yet: that one and the others the receiver's configuration names then; None: in
    any repository), with the
    newest episode marker (of the body only for an issue closed longer ago than
    reopen_window).  A group's resolve that met its issue closed is known only if the paced
    body rewrite that carries it ("event=resolved-<endsAt>") reached GitHub before the loss:
    body_of(issue) tells; without it the group's next firing continues the row's episode."""
    for k in keys:
        if k.row not in (None, "dry") or k.bad:
            continue
        for idx in range(len(k.issues) - 1, -1, -1):
            i = k.issues[idx]
            if not i.deleted and not i.transferred and (repos is None or i.repo in repos):
                k.row, k.cur = "live", idx
                k.members_known = k.receiver != "groups"
                if i.pending_res is not None and body_of is not None:
                    if "event=resolved-%d" % i.pending_res in (body_of(i) or ""):
                        i.marker_res = i.pending_res
                    else:
                        k.continues = True
                    i.pending_res = None
                if i.state == "closed" and i.aged:
                    k.ep, k.res_end = i.create_ep, None
                else:
                    k.ep, k.res_end = i.marker_ep, i.marker_res
                break
