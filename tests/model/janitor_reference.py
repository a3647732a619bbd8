"""janitor_reference.py - the reference model of tests/model/janitor_model.py: what the janitor
must (and may) do with a world's pods, after docs/janitor.md and DESIGN.md "Janitor semantics".

Pure data and functions (no I/O): the world feeds it what it did (alerts posted, pods replaced
or deleted, clicks made) and the fakes' records, and asks it
  - expected_click(...): the outcome a signed click must get (the set of acceptable ones);
  - pod_problems(...):   what is wrong with a pod's annotations at a quiet point;
  - trace_problems(...): what is wrong in the recorded Kubernetes writes and Slack messages:
        no pod deleted without a notice delivered notice_lead before (and after its last
        postpone); no pod touched whose uid no alert named; a deleted pod was expired (its
        postpones counted) and its alert not resolved before; postpones <= max_postpones and
        never past creationTimestamp + max_lifetime; a notice after the limit has no button.
"""

import calendar
import json
import time

JANITOR_KEYS = ("janitor/expires", "janitor/reason", "janitor/marked-at",
                "janitor/marked-expires", "janitor/notified-at")
SLOP_S = 1.0        # janitor/* times are whole seconds (floored): a second either way
NOTICE_SLOP_S = 0.05  # Slack's ts is taken before the outbox's sent_at, which the lead counts
RESOLVE_SLOP_S = 1.0  # a sweep already past its fresh GET when a resolve is stored


def parse_time(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


class Policy:
    def __init__(self, grace_s, lead_s, by_s, max_postpones, lifetime_s):
        self.grace_s, self.lead_s, self.by_s = grace_s, lead_s, by_s
        self.max_postpones, self.lifetime_s = max_postpones, lifetime_s


class PodModel:
    """One pod name: its pods over time (uids), their owners and creation, its alerts."""

    def __init__(self, ns, name, owner):
        self.ns, self.name, self.owner = ns, name, owner
        self.uid = None               # the current pod's uid; None while there is none
        self.created = {}             # uid -> creation time
        self.alerts = []              # (time sent, time answered, uid, "firing" | "resolved")
        self.used_buttons = set()     # (uid, notice id) of buttons that postponed

    def alert_state(self, uid, before=None):
        """The last alert's status for uid (answered before `before`), or None."""
        st = None
        for _, t, u, s in self.alerts:
            if u == uid and (before is None or t < before):
                st = s
        return st

    def alerted(self, uid, before=None):
        """Whether an alert named uid (sent before `before`)."""
        return any(u == uid and (before is None or t < before) for t, _, u, _ in self.alerts)


def button_values(msg):
    """[(uid, notice id, pod)] of the Keep buttons of a Slack message."""
    out = []
    for b in msg.get("blocks") or []:
        for el in b.get("elements") or []:
            if el.get("action_id") == "postpone":
                try:
                    v = json.loads(el["value"])
                    out.append((v["uid"], v["notice"], v["pod"], el["value"]))
                except (ValueError, KeyError, TypeError):
                    out.append((None, None, None, el.get("value")))
    return out


def expected_click(pod, button_uid, notice, user, ann, exists_uid, pol, now):
    """The acceptable outcomes of a click (a set of reasons, "done" for a postpone) given the
    pod's state when the janitor handles it: exists_uid the pod's uid then (None: gone), ann
    its annotations.  The janitor's order: dry-run, gone, uid, owner, second click of the
    button, then the rule (exempt, no expiry, limit, max_lifetime)."""
    if exists_uid is None:
        return {"gone"}
    if exists_uid != button_uid:
        return {"uid-changed"}
    if user != pod.owner:
        return {"not-owner"}
    if (button_uid, notice) in pod.used_buttons:
        return {"already"}
    if "janitor/expires" not in ann:
        return {"no-expiry"}
    count = int(ann.get("janitor/postponed") or 0)
    if count >= pol.max_postpones:
        return {"limit"}
    exp = parse_time(ann["janitor/expires"])
    cap = pod.created[button_uid] + pol.lifetime_s
    nxt = min(max(exp, now) + pol.by_s, cap)
    if int(nxt) <= exp:
        return {"max-lifetime"}
    if int(min(max(exp, now + SLOP_S) + pol.by_s, cap)) <= exp:  # now is a second off
        return {"max-lifetime", "done"}
    return {"done"}


REASON_TEXT = (("is another pod now", "uid-changed"),  # before "is gone": it says that too
               ("can be kept only by its owner", "not-owner"), ("is gone", "gone"),
               ("was kept already with this button", "already"),
               ("times already, the most its policy allows", "limit"),
               ("past its maximum lifetime", "max-lifetime"),
               ("has no janitor/expires", "no-expiry"), ("is exempt", "exempt"),
               ("dry-run", "dry-run"))


def reason_of(text):
    for needle, reason in REASON_TEXT:
        if needle in text:
            return reason
    return "unknown: %r" % text


def pod_problems(pod, obj, pol, postponed_uids):
    """What is wrong with the pod object obj (fake kube's, at a quiet point) of pod."""
    out = []
    uid = obj["metadata"]["uid"]
    ann = obj["metadata"].get("annotations") or {}
    mine = {k: v for k, v in ann.items() if k in JANITOR_KEYS}
    where = "%s/%s (uid %s)" % (pod.ns, pod.name, uid[:8])
    if not pod.alerted(uid):
        if mine or "janitor/postponed" in ann:
            out.append("%s: no alert named this pod, yet it carries %s" % (where, mine))
        return out
    st = pod.alert_state(uid)
    if st == "firing":
        for k in ("janitor/expires", "janitor/reason", "janitor/marked-at"):
            if k not in ann:
                out.append("%s: its alert fires, but it has no %s (%s)" % (where, k, ann))
        if uid not in postponed_uids and "janitor/notified-at" not in ann:
            out.append("%s: marked, the outbox empty, but no janitor/notified-at (%s)" % (
                where, ann))
        n = int(ann.get("janitor/postponed") or 0)
        if n > pol.max_postpones:
            out.append("%s: janitor/postponed %d > max_postpones %d" % (where, n,
                                                                       pol.max_postpones))
    elif st == "resolved" and mine:
        out.append("%s: its alert resolved (active again), yet it still carries %s" % (
            where, mine))
    return out


def trace_problems(pods, kube_reqs, messages, notice_uids, pol):
    """Problems in the whole record so far.  pods: name -> PodModel; kube_reqs: fake kube's
    requests; messages: fake Slack's messages; notice_uids: Slack ts -> set of uids the
    outbox says the message was a notice for (notices and digests)."""
    out = []
    by_uid = {}
    for p in pods.values():
        for u in p.created:
            by_uid[u] = p
    # the Slack notices per uid: (time posted, ts, has a button for uid)
    notices = {}
    for m in messages:
        if m.get("thread_ts"):
            continue
        buttons = {b[0] for b in button_values(m)}
        for u in buttons | notice_uids.get(m["ts"], set()):
            notices.setdefault(u, []).append((float(m["ts"]), m["ts"], u in buttons))
    expires = {}       # uid -> the janitor/expires value last written
    postponed_at = {}  # uid -> time of the last postpone
    limits = {}        # uid -> [[time the postpone limit was reached, time reset or None]]
    for r in kube_reqs:
        if r["method"] not in ("PATCH", "DELETE") or "/pods/" not in r["path"]:
            continue
        if not isinstance(r["status"], int) or r["status"] >= 300:
            continue
        name = r["path"].rsplit("/", 1)[-1]
        uid = r.get("pod_uid")
        pod = pods.get(name)
        t = r["time"]
        what = "%s %s at %.2f (uid %s)" % (r["method"], r["path"], t, (uid or "?")[:8])
        if pod is None or uid not in by_uid or not pod.alerted(uid, before=t):
            out.append("%s: a pod no alert named (a changed uid?)" % what)
            continue
        body = r["body"] if isinstance(r["body"], dict) else {}
        if r["method"] == "PATCH":
            md = body.get("metadata") or {}
            if md.get("uid") != uid:
                out.append("%s: the patch's uid precondition is %r" % (what, md.get("uid")))
            ann = md.get("annotations") or {}
            if "janitor/expires" in ann:
                expires[uid] = ann["janitor/expires"]
            if "janitor/postponed" in ann and ann["janitor/postponed"] is None:
                for span in limits.get(uid, []):  # a resolve: the next episode counts anew
                    if span[1] is None:
                        span[1] = t
            if ann.get("janitor/postponed") is not None:
                n = int(ann["janitor/postponed"])
                postponed_at[uid] = t
                if not md.get("resourceVersion"):
                    out.append("%s: a postpone without a resourceVersion precondition" % what)
                if n > pol.max_postpones:
                    out.append("%s: postpone %d > max_postpones %d" % (what, n,
                                                                        pol.max_postpones))
                if n >= pol.max_postpones:
                    limits.setdefault(uid, []).append([t, None])
                new = ann.get("janitor/expires")
                if new and parse_time(new) > pod.created[uid] + pol.lifetime_s:
                    out.append("%s: kept until %s, past creation + max_lifetime (%s)" % (
                        what, new, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(
                            pod.created[uid] + pol.lifetime_s))))
            continue
        pre = (body.get("preconditions") or {}).get("uid")
        if pre != uid:
            out.append("%s: the delete's uid precondition is %r" % (what, pre))
        after = postponed_at.get(uid, 0)
        ok = [n for n in notices.get(uid, []) if after < n[0] <= t - pol.lead_s + NOTICE_SLOP_S]
        if not ok:
            out.append("%s: no notice delivered notice_lead (%ds) before it%s (notices at %s)"
                       % (what, pol.lead_s, " and after its last postpone at %.2f" % after
                          if after else "", [round(n[0], 2) for n in notices.get(uid, [])]))
        if uid not in expires or expires[uid] is None:
            out.append("%s: deleted with no janitor/expires written" % what)
        elif parse_time(expires[uid]) > t + 0.05:
            out.append("%s: deleted before its expiry %s (postpones counted)" % (
                what, expires[uid]))
        if pod.alert_state(uid, before=t - RESOLVE_SLOP_S) != "firing":
            out.append("%s: deleted though its alert resolved (active again) before" % what)
    for u, spans in limits.items():
        for t, reset in spans:
            for posted, ts, has_button in notices.get(u, []):
                if posted > t + 0.5 and (reset is None or posted < reset) and has_button:
                    out.append("notice %s for uid %s, posted after the postpone limit was "
                               "reached (%.2f), still shows a Keep button" % (ts, u[:8], t))
    return out
