#!/usr/bin/env python3
# run.sh: weight 2, asan skip
# (the fake itself: no code of alertbridge's)
"""test_fake_kube.py - self-test of fake_kube.py and fake_slack.py over real HTTP (127.0.0.1).

The janitor's end-to-end test trusts both fakes to answer like kube-apiserver and Slack; this
checks the answers janitor/kube.c and janitor/slack.c depend on: auth, Status objects (401, 404,
409, 410, 415, 422), merge-patch semantics and resourceVersions, paged and metadata-only lists,
DELETE preconditions, owners and scale, Events, Leases, faults and the request log; Slack's
methods, ok:false errors, 429 with Retry-After, and the recorded messages and threads.
Prints a timeline and, last, "N passed, N failed"; exits non-zero on failure.
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_kube import FakeKube  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from harness import Failure, Runner, check, eq, event, http, poll  # noqa: E402

TOKEN = "kube-selftest-token"
SLACK_TOKEN = "xoxb-selftest"
META = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
MP = "application/merge-patch+json"

fk = FakeKube(token=TOKEN)
fs = FakeSlack(token=SLACK_TOKEN)
run = Runner()


def api(method, path, body=None, headers=None, raw=None, token=TOKEN):
    h = {"Accept": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    if method == "PATCH":
        h["Content-Type"] = MP
    h.update(headers or {})
    return http(method, fk.url + path, body=body, headers=h, raw=raw)


def pod_path(ns, name):
    return "/api/v1/namespaces/%s/pods/%s" % (ns, name)


def expect_status(got, code, reason, message_part):
    st, _, j = got
    eq(st, code, "HTTP status")
    check(isinstance(j, dict) and j.get("kind") == "Status", "a Status object", j)
    eq((j["status"], j["code"], j["reason"]), ("Failure", code, reason), "Status fields")
    check(message_part in j["message"], "Status message mentions %r" % message_part,
          j["message"])


def slack(method, body=None, token=SLACK_TOKEN, get=False, headers=None, raw=None):
    h = {"Authorization": "Bearer " + token} if token else {}
    h.update(headers or {})
    if body is not None:
        h["Content-Type"] = "application/json; charset=utf-8"
    return http("GET" if get else "POST", fs.api_url + "/" + method, body=body, headers=h,
                raw=raw)


# ----- fake_kube ------------------------------------------------------------------------------
@run.case
def kube_auth_required():
    fk.reset()
    fk.add_pod("ml", "p")
    expect_status(api("GET", pod_path("ml", "p"), token=None), 401, "Unauthorized",
                  "Unauthorized")
    expect_status(api("GET", pod_path("ml", "p"), token="wrong"), 401, "Unauthorized",
                  "Unauthorized")
    eq(api("GET", pod_path("ml", "p"))[0], 200, "with the token")


@run.case
def kube_get_pod_and_404():
    fk.reset()
    p = fk.add_pod("ml", "train-0", annotations={"team/note": "x"}, labels={"owner": "U1"},
                   created_ago_s=60)
    st, h, j = api("GET", pod_path("ml", "train-0"))
    eq(st, 200, "status")
    eq((j["kind"], j["apiVersion"]), ("Pod", "v1"), "kind")
    eq(j["metadata"]["uid"], p["metadata"]["uid"], "uid")
    check(j["metadata"]["resourceVersion"].isdigit(), "resourceVersion", j["metadata"])
    check(j["metadata"]["creationTimestamp"].endswith("Z"), "creationTimestamp RFC 3339",
          j["metadata"])
    eq(j["metadata"]["annotations"], {"team/note": "x"}, "annotations")
    eq(j["status"]["phase"], "Running", "phase")
    eq(j["spec"]["nodeName"], "gpu-node-1", "node")
    eq(h["content-type"], "application/json", "content type")
    expect_status(api("GET", pod_path("ml", "nope")), 404, "NotFound",
                  'pods "nope" not found')
    eq(api("GET", pod_path("ml", "nope"))[2]["details"], {"name": "nope", "kind": "pods"},
       "details")
    expect_status(api("GET", "/api/v1/namespaces/ml/widgets/x"), 404, "NotFound",
                  "could not find the requested resource")


@run.case
def kube_merge_patch_annotations():
    fk.reset()
    fk.add_pod("ml", "p", annotations={"keep": "me", "janitor/expires": "2030-01-01T00:00:00Z"})
    rv0 = int(fk.pod("ml", "p")["metadata"]["resourceVersion"])
    st, _, j = api("PATCH", pod_path("ml", "p"), {"metadata": {"annotations": {
        "janitor/expires": None, "janitor/reason": "idle"}}})
    eq(st, 200, "patch status")
    eq(j["metadata"]["annotations"], {"keep": "me", "janitor/reason": "idle"},
       "null removed, new set, others kept")
    check(int(j["metadata"]["resourceVersion"]) > rv0, "resourceVersion bumped", j["metadata"])
    eq(fk.pod("ml", "p")["metadata"]["annotations"], j["metadata"]["annotations"], "stored")
    # a no-op patch changes nothing, not even the resourceVersion
    rv1 = j["metadata"]["resourceVersion"]
    st, _, j = api("PATCH", pod_path("ml", "p"), {"metadata": {"annotations": {
        "janitor/reason": "idle"}}})
    eq((st, j["metadata"]["resourceVersion"]), (200, rv1), "no-op patch")


@run.case
def kube_patch_errors():
    fk.reset()
    fk.add_pod("ml", "p")
    body = {"metadata": {"annotations": {"a": "b"}}}
    expect_status(api("PATCH", pod_path("ml", "p"), body,
                      headers={"Content-Type": "application/json"}), 415,
                  "UnsupportedMediaType", "application/merge-patch+json")
    expect_status(api("PATCH", pod_path("ml", "p"), body,
                      headers={"Content-Type": "application/strategic-merge-patch+json"}), 415,
                  "UnsupportedMediaType", "unknown format")
    expect_status(api("PATCH", pod_path("ml", "p"), {"metadata": {
        "resourceVersion": "1", "annotations": {"a": "b"}}}), 409, "Conflict",
        "the object has been modified")
    expect_status(api("PATCH", pod_path("ml", "p"), {"spec": {"nodeName": "other"}}), 422,
                  "Invalid", "pod updates may not change fields")
    expect_status(api("PATCH", pod_path("ml", "p"), {"metadata": {"uid": "x"}}), 409,
                  "Conflict", "Precondition failed: UID in precondition: x, UID in object meta")
    uid = fk.pod("ml", "p")["metadata"]["uid"]
    st, _, j = api("PATCH", pod_path("ml", "p"), {"metadata": {"uid": uid,
                                                                "annotations": {"k": "v"}}})
    eq((st, j["metadata"]["annotations"]), (200, {"k": "v"}), "the same uid patches")
    eq(fk.get_requests()[-1]["pod_uid"], uid, "the changed pod's uid recorded")
    fk.annotate("ml", "p", {"k": None})
    expect_status(api("PATCH", pod_path("ml", "p"), {"metadata": {"annotations": {"a": 1}}}),
                  400, "BadRequest", "map[string]string")
    expect_status(api("PATCH", pod_path("ml", "p"), raw=b"{not json"), 400, "BadRequest",
                  "json")
    expect_status(api("PATCH", pod_path("ml", "gone"), body), 404, "NotFound", '"gone"')
    eq(fk.pod("ml", "p")["metadata"]["annotations"], {}, "nothing changed")


@run.case
def kube_list_paged_and_metadata_only():
    fk.reset()
    names = ["p%02d" % i for i in range(7)]
    for n in names:
        fk.add_pod("ml", n, annotations={"i": n})
    fk.add_pod("other", "q")
    seen, cont, pages = [], None, 0
    while pages < 10:
        path = "/api/v1/namespaces/ml/pods?limit=3" + ("&continue=" + cont if cont else "")
        st, _, j = api("GET", path, headers={"Accept": META})
        eq(st, 200, "page status")
        eq((j["kind"], j["apiVersion"]), ("PartialObjectMetadataList", "meta.k8s.io/v1"),
           "metadata-only list kind")
        for it in j["items"]:
            eq((it["kind"], sorted(it)), ("PartialObjectMetadata",
                                          ["apiVersion", "kind", "metadata"]),
               "items carry metadata only")
            seen.append(it["metadata"]["name"])
        pages += 1
        cont = j["metadata"].get("continue")
        if not cont:
            break
    eq(seen, names, "every pod once, in order")
    eq(pages, 3, "pages of 3")
    st, _, j = api("GET", "/api/v1/pods")
    eq((j["kind"], len(j["items"])), ("PodList", 8), "all namespaces, full objects")
    check("spec" in j["items"][0] and "continue" not in j["metadata"], "full items, one page",
          j["metadata"])
    reqs = [r for r in fk.get_requests() if r["path"].endswith("/pods")]
    eq([r["answer_kind"] for r in reqs], ["PartialObjectMetadataList"] * 3 + ["PodList"],
       "request log says what was served")
    eq(reqs[1]["query"]["limit"], "3", "query recorded")


@run.case
def kube_continue_expired_410_and_bad_token_400():
    fk.reset()
    for i in range(4):
        fk.add_pod("ml", "p%d" % i)
    st, _, j = api("GET", "/api/v1/pods?limit=2")
    cont = j["metadata"]["continue"]
    eq(j["metadata"]["remainingItemCount"], 2, "remainingItemCount")
    fk.expire_continue_tokens()
    expect_status(api("GET", "/api/v1/pods?limit=2&continue=" + cont), 410, "Expired",
                  "too old")
    expect_status(api("GET", "/api/v1/pods?limit=2&continue=%%%%"), 400, "BadRequest",
                  "continue key is not valid")
    expect_status(api("GET", "/api/v1/pods?limit=x"), 400, "BadRequest", "limit")
    st, _, j = api("GET", "/api/v1/pods?limit=2")
    eq((st, len(j["items"])), (200, 2), "a fresh list works")


@run.case
def kube_delete_preconditions():
    fk.reset()
    uid = fk.add_pod("ml", "p")["metadata"]["uid"]
    opts = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
            "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
    expect_status(api("DELETE", pod_path("ml", "p"), opts), 409, "Conflict",
                  "Precondition failed: UID in precondition: 00000000-0000-0000-0000-"
                  "000000000000, UID in object meta: %s" % uid)
    check(fk.pod("ml", "p") is not None, "still there")
    expect_status(api("DELETE", pod_path("ml", "p"), dict(opts, propagationPolicy="Sometimes")),
                  400, "BadRequest", "propagationPolicy")
    opts["preconditions"]["uid"] = uid
    st, _, j = api("DELETE", pod_path("ml", "p"), opts)
    eq((st, j["metadata"]["uid"]), (200, uid), "deleted, answer is the pod")
    eq(fk.pod("ml", "p"), None, "gone")
    expect_status(api("DELETE", pod_path("ml", "p"), opts), 404, "NotFound", '"p" not found')
    d = [r for r in fk.get_requests() if r["method"] == "DELETE"]
    eq(d[-2]["body"]["preconditions"], {"uid": uid}, "DELETE body recorded")


@run.case
def kube_finalizers_and_recreate():
    fk.reset()
    uid = fk.add_pod("ml", "f", finalizers=["example.com/hold"])["metadata"]["uid"]
    st, _, j = api("DELETE", pod_path("ml", "f"), {"preconditions": {"uid": uid}})
    eq(st, 200, "delete accepted")
    check(j["metadata"].get("deletionTimestamp"), "being deleted", j["metadata"])
    check(fk.pod("ml", "f")["metadata"].get("deletionTimestamp"), "still there, terminating")
    fk.finalize("ml", "f")
    eq(fk.pod("ml", "f"), None, "gone once finalized")
    old = fk.add_pod("ml", "r", annotations={"janitor/expires": "2030-01-01T00:00:00Z"},
                     labels={"owner": "U1"})["metadata"]
    new = fk.recreate_pod("ml", "r")
    md = fk.pod("ml", "r")["metadata"]
    check(new != old["uid"] and md["uid"] == new, "new uid", md)
    eq((md["annotations"], md["labels"]), ({}, {"owner": "U1"}), "fresh annotations")


@run.case
def kube_events():
    fk.reset()
    uid = fk.add_pod("ml", "p")["metadata"]["uid"]
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "p.17a0", "namespace": "ml"},
          "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": "ml", "name": "p",
                             "uid": uid}, "reason": "JanitorMarked", "message": "m",
          "type": "Normal", "source": {"component": "alertbridge"}, "count": 1}
    st, _, j = api("POST", "/api/v1/namespaces/ml/events", ev)
    eq((st, j["kind"], j["reason"]), (201, "Event", "JanitorMarked"), "created")
    expect_status(api("POST", "/api/v1/namespaces/ml/events", ev), 409, "AlreadyExists",
                  'events "p.17a0" already exists')
    bad = dict(ev, metadata={"name": "p.2"}, involvedObject=dict(ev["involvedObject"],
                                                                 namespace="x"))
    expect_status(api("POST", "/api/v1/namespaces/ml/events", bad), 422, "Invalid",
                  "does not match event.namespace")
    expect_status(api("POST", "/api/v1/namespaces/ml/events", dict(ev, metadata={"name": "p3"},
                                                                   type="Info")),
                  422, "Invalid", "type")
    expect_status(api("POST", "/api/v1/namespaces/nowhere/events", ev), 404, "NotFound",
                  'namespaces "nowhere" not found')
    eq(len(fk.list("Event", "ml")), 1, "one stored")


@run.case
def kube_deployment_scale_and_replicaset():
    fk.reset()
    rs = fk.add_deployment("ml", "nb", replicas=2)
    fk.add_pod("ml", rs + "-aaaaa", owner={"kind": "ReplicaSet", "name": rs})
    fk.add_pod("ml", rs + "-bbbbb", owner={"kind": "ReplicaSet", "name": rs})
    st, _, j = api("GET", "/apis/apps/v1/namespaces/ml/replicasets/" + rs)
    eq(st, 200, "GET replicaset")
    ref = j["metadata"]["ownerReferences"][0]
    eq((ref["kind"], ref["name"], ref["controller"]), ("Deployment", "nb", True), "RS owner")
    pref = fk.pod("ml", rs + "-aaaaa")["metadata"]["ownerReferences"][0]
    eq((pref["apiVersion"], pref["kind"], pref["uid"]), ("apps/v1", "ReplicaSet",
                                                         j["metadata"]["uid"]), "pod owner")
    path = "/apis/apps/v1/namespaces/ml/deployments/nb/scale"
    st, _, j = api("GET", path)
    eq((st, j["kind"], j["spec"]["replicas"]), (200, "Scale", 2), "GET scale")
    expect_status(api("PATCH", path, {"spec": {"replicas": -1}}), 422, "Invalid",
                  "spec.replicas")
    expect_status(api("PATCH", path, {"spec": {"replicas": 0}},
                      headers={"Content-Type": "application/json"}), 415,
                  "UnsupportedMediaType", "merge-patch")
    st, _, j = api("PATCH", path, {"spec": {"replicas": 0}})
    eq((st, j["spec"]["replicas"]), (200, 0), "scaled")
    eq(fk.get("Deployment", "ml", "nb")["spec"]["replicas"], 0, "stored")
    eq(fk.list("Pod", "ml"), [], "the controller removed the pods")
    eq([r["method"] for r in fk.get_requests() if "/pods" in r["path"]], [],
       "not as requests")
    expect_status(api("PATCH", "/apis/apps/v1/namespaces/ml/deployments/zz/scale",
                      {"spec": {"replicas": 0}}), 404, "NotFound",
                  'deployments.apps "zz" not found')


@run.case
def kube_statefulset_recreates_and_job_delete():
    fk.reset()
    fk.add_statefulset("ml", "db", replicas=1)
    uid = fk.add_pod("ml", "db-0", owner={"kind": "StatefulSet", "name": "db"})["metadata"]["uid"]
    st, _, _ = api("DELETE", pod_path("ml", "db-0"), {"preconditions": {"uid": uid}})
    eq(st, 200, "delete")
    p = fk.pod("ml", "db-0")
    check(p is not None and p["metadata"]["uid"] != uid, "recreated with a new uid", p)
    st, _, j = api("PATCH", "/apis/apps/v1/namespaces/ml/statefulsets/db/scale",
                   {"spec": {"replicas": 0}})
    eq((st, fk.pod("ml", "db-0")), (200, None), "scaled to 0: pod gone")
    fk.add_job("ml", "train")
    fk.add_pod("ml", "train-x", owner={"kind": "Job", "name": "train"})
    juid = fk.get("Job", "ml", "train")["metadata"]["uid"]
    expect_status(api("DELETE", "/apis/batch/v1/namespaces/ml/jobs/train",
                      {"propagationPolicy": "Background", "preconditions": {"uid": "x"}}), 409,
                  "Conflict", "Precondition failed")
    st, _, _ = api("DELETE", "/apis/batch/v1/namespaces/ml/jobs/train",
                   {"propagationPolicy": "Background", "preconditions": {"uid": juid}})
    eq((st, fk.get("Job", "ml", "train"), fk.pod("ml", "train-x")), (200, None, None),
       "job and its pod gone")


@run.case
def kube_leases():
    fk.reset()
    base = "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases"
    fk.add_namespace("alertbridge")
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "ab", "namespace": "alertbridge"},
             "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15}}
    st, _, j = api("POST", base, lease)
    eq((st, j["spec"]["holderIdentity"]), (201, "pod-a"), "created")
    rv = j["metadata"]["resourceVersion"]
    expect_status(api("POST", base, lease), 409, "AlreadyExists",
                  'leases.coordination.k8s.io "ab" already exists')
    upd = dict(lease, metadata={"name": "ab", "namespace": "alertbridge",
                                "resourceVersion": rv},
               spec={"holderIdentity": "pod-b", "leaseDurationSeconds": 15})
    st, _, j = api("PUT", base + "/ab", upd)
    eq((st, j["spec"]["holderIdentity"]), (200, "pod-b"), "updated")
    check(j["metadata"]["resourceVersion"] != rv, "new resourceVersion", j["metadata"])
    expect_status(api("PUT", base + "/ab", upd), 409, "Conflict",
                  "the object has been modified")
    eq(api("GET", base + "/ab")[2]["spec"]["holderIdentity"], "pod-b", "GET")
    expect_status(api("GET", base + "/zz"), 404, "NotFound", '"zz" not found')
    # another replica takes it (side door): a new holder, resourceVersion and transition
    cur = api("GET", base + "/ab")[2]
    st, _, j = http("POST", fk.url + "/_fake/lease", {"namespace": "alertbridge", "name": "ab",
                                                      "holder": "pod-c", "duration_s": 30})
    eq((st, j["spec"]["holderIdentity"], j["spec"]["leaseDurationSeconds"]),
       (200, "pod-c", 30), "taken over")
    check(j["metadata"]["resourceVersion"] != cur["metadata"]["resourceVersion"] and
          j["spec"]["leaseTransitions"] == cur["spec"].get("leaseTransitions", 0) + 1,
          "bumped", j)
    upd["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
    expect_status(api("PUT", base + "/ab", upd), 409, "Conflict",
                  "the object has been modified")
    eq(fk.take_lease("alertbridge", "new", "pod-d")["spec"]["holderIdentity"], "pod-d",
       "created by a take-over")


@run.case
def kube_faults_and_side_door():
    fk.reset()
    uid = fk.add_pod("ml", "p")["metadata"]["uid"]
    fk.add_fault("GET", r"/api/v1/namespaces/ml/pods/p", status=503)
    expect_status(api("GET", pod_path("ml", "p")), 503, "InternalError", "injected")
    eq(api("GET", pod_path("ml", "p"))[0], 200, "fault used up")
    fk.add_fault("GET", r"/api/v1/namespaces/ml/pods/p", action="recreate_after")
    st, _, j = api("GET", pod_path("ml", "p"))
    eq((st, j["metadata"]["uid"]), (200, uid), "answered with the old pod")
    new = fk.pod("ml", "p")["metadata"]["uid"]
    check(new != uid, "then recreated", new)
    expect_status(api("DELETE", pod_path("ml", "p"), {"preconditions": {"uid": uid}}), 409,
                  "Conflict", "UID in object meta: %s" % new)
    fk.add_fault("DELETE", r"/api/v1/namespaces/ml/pods/p", action="delay", delay_s=1.0)
    t0 = time.time()
    try:
        st = http("DELETE", fk.url + pod_path("ml", "p"), body={}, timeout_s=0.3,
                  headers={"Authorization": "Bearer " + TOKEN})[0]
    except OSError:
        st = "timed out"
    eq(st, "timed out", "the client gave up")
    check(fk.pod("ml", "p") is not None, "not deleted before the delay ends")
    ok = poll(lambda: fk.pod("ml", "p") is None, "the late delete", timeout_s=5)
    check(ok and time.time() - t0 >= 1.0, "deleted late, after the delay", time.time() - t0)
    fk.add_pod("ml", "p")
    fk.add_fault("GET", "/api/v1/pods", query="continue=", status=410, body={"kind": "Status"})
    eq(api("GET", "/api/v1/pods?limit=1")[0], 200, "a first page is not matched")
    eq(api("GET", "/api/v1/pods?limit=1&continue=x")[0], 410, "a later page is")
    fk.add_fault("GET", ".*", action="drop")
    try:
        st = api("GET", pod_path("ml", "p"))[0]
    except OSError:
        st = "dropped"
    eq(st, "dropped", "connection dropped")
    # side door over HTTP
    st, _, j = http("POST", fk.url + "/_fake/pod", {"namespace": "ml", "name": "s",
                                                    "annotations": {"a": "b"}})
    eq((st, j["metadata"]["annotations"]), (200, {"a": "b"}), "side door pod")
    st, _, j = http("POST", fk.url + "/_fake/annotate", {"namespace": "ml", "name": "s",
                                                         "annotations": {"a": None, "c": "d"}})
    eq(j["metadata"]["annotations"], {"c": "d"}, "a person annotates")
    st, _, j = http("GET", fk.url + "/_fake/requests?clear=1")
    eq([r["status"] for r in j], [503, 200, 200, 409, 200, 200, 410, "dropped"], "request log")
    eq(j[4].get("delayed_s"), 1.0, "the delay recorded")
    check(not any(r["path"].startswith("/_fake") for r in j), "side door not recorded")
    eq(http("GET", fk.url + "/_fake/requests")[2], [], "cleared")
    eq(http("POST", fk.url + "/_fake/nope", {})[0], 404, "unknown side-door call")


@run.case
def kube_script_mode_and_kubeconfig():
    d = tempfile.mkdtemp(prefix="fk-selftest-")
    pf, kc = os.path.join(d, "port"), os.path.join(d, "kubeconfig")
    p = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "fake_kube.py"), "--port-file", pf, "--token", "tk",
        "--kubeconfig", kc], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        poll(lambda: os.path.exists(pf), "port file", timeout_s=10)
        port = int(open(pf).read())
        st, _, j = http("GET", "http://127.0.0.1:%d/api/v1/namespaces/kube-system" % port,
                        headers={"Authorization": "Bearer tk"})
        eq((st, j["kind"], j["metadata"]["name"]), (200, "Namespace", "kube-system"),
           "served")
        text = open(kc).read()
        check("server: http://127.0.0.1:%d" % port in text and "token: tk" in text,
              "kubeconfig names the fake", text)
    finally:
        p.terminate()
        p.wait(timeout=10)


# ----- fake_slack -----------------------------------------------------------------------------
@run.case
def slack_post_and_thread():
    fs.reset()
    st, _, j = slack("chat.postMessage", {"channel": "#gpu", "text": "hello &amp; bye",
                                          "unfurl_links": False})
    eq((st, j["ok"]), (200, True), "posted")
    check(j["channel"].startswith("C") and j["ts"], "channel ID and ts", j)
    st, _, r = slack("chat.postMessage", {"channel": j["channel"], "text": "reply",
                                          "thread_ts": j["ts"]})
    eq((r["ok"], r["message"]["thread_ts"]), (True, j["ts"]), "reply in thread")
    check(float(r["ts"]) > float(j["ts"]), "ts increase", r)
    msgs = fs.get_messages()
    eq([(m["channel"], m["text"], m["thread_ts"]) for m in msgs],
       [("#gpu", "hello &amp; bye", None), (j["channel"], "reply", j["ts"])], "recorded")
    eq(http("GET", fs.url + "/_fake/messages")[2][0]["channel_id"], j["channel"], "side door")


@run.case
def slack_errors():
    fs.reset()
    eq(slack("chat.postMessage", {"channel": "#x", "text": "t"}, token=None)[2],
       {"ok": False, "error": "not_authed"}, "no token")
    eq(slack("chat.postMessage", {"channel": "#x", "text": "t"}, token="xoxb-wrong")[2],
       {"ok": False, "error": "invalid_auth"}, "wrong token")
    eq(slack("chat.postMessage", {"channel": "C0NOPE", "text": "t"})[2]["error"],
       "channel_not_found", "unknown channel")
    eq(slack("chat.postMessage", {"channel": "#x"})[2]["error"], "no_text", "no text")
    eq(slack("chat.postMessage", raw=b"{bad", headers={"Content-Type": "application/json"})[2],
       {"ok": False, "error": "invalid_json"}, "bad JSON")
    eq(fs.get_messages(), [], "nothing posted")


@run.case
def slack_lookup_and_dm():
    fs.reset()
    fs.add_user("U0ALICE", "alice@example.com")
    st, _, j = slack("users.lookupByEmail?email=alice%40example.com", get=True)
    eq((j["ok"], j["user"]["id"]), (True, "U0ALICE"), "lookup")
    eq(slack("users.lookupByEmail?email=bob%40example.com", get=True)[2]["error"],
       "users_not_found", "unknown e-mail")
    st, _, j = slack("conversations.open", {"users": "U0ALICE"})
    eq((j["ok"], j["channel"]["id"]), (True, "D0ALICE"), "DM opened")
    eq(slack("conversations.open", {"users": "U0BOB"})[2]["error"], "user_not_found",
       "unknown user")
    st, _, j = slack("chat.postMessage", {"channel": "D0ALICE", "text": "hi"})
    eq((j["ok"], j["channel"]), (True, "D0ALICE"), "posted to the DM")
    st, _, j = slack("chat.postMessage", raw=b"channel=%23gpu&text=form",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    eq(j["ok"], True, "form-encoded post")


@run.case
def slack_faults():
    fs.reset()
    fs.add_fault("chat.postMessage", status=429, retry_after_s=2)
    st, h, j = slack("chat.postMessage", {"channel": "#gpu", "text": "t"})
    eq((st, h.get("retry-after"), j), (429, "2", {"ok": False, "error": "ratelimited"}),
       "429 with Retry-After")
    fs.add_fault("chat.postMessage", error="not_in_channel")
    eq(slack("chat.postMessage", {"channel": "#gpu", "text": "t"})[2],
       {"ok": False, "error": "not_in_channel"}, "ok:false injected")
    http("POST", fs.url + "/_fake/fault", {"method": "conversations.open", "status": 503,
                                           "error": "service_unavailable"})
    st, _, j = slack("conversations.open", {"users": "U1"})
    eq((st, j["error"]), (503, "service_unavailable"), "side-door fault")
    eq(slack("chat.postMessage", {"channel": "#gpu", "text": "t"})[2]["ok"], True,
       "faults used up")
    reqs = fs.get_requests()
    eq([r["status"] for r in reqs], [429, 200, 503, 200], "request log")
    eq(reqs[0]["headers"]["authorization"], "Bearer " + SLACK_TOKEN, "headers recorded")
    eq(len(fs.get_messages()), 1, "only the last one posted")
    # a timeout: the answer held back past the client's patience, nothing posted
    fs.add_fault("chat.postMessage", delay_s=1.0, error="request_timeout", status=504)
    t0 = time.time()
    try:
        st = http("POST", fs.api_url + "/chat.postMessage", body={"channel": "#gpu",
                                                               "text": "late"},
                  headers={"Authorization": "Bearer " + SLACK_TOKEN}, timeout_s=0.3)[0]
    except OSError:
        st = "timed out"
    eq(st, "timed out", "the client gave up")
    eq(len(fs.get_messages()), 1, "a failing delayed call posts nothing")
    # a late answer to a call that was served: the message is there
    fs.add_fault("chat.postMessage", delay_s=0.5, error=None)
    t1 = time.time()
    st, _, j = slack("chat.postMessage", {"channel": "#gpu", "text": "slow"})
    check(st == 200 and j["ok"] and time.time() - t1 >= 0.5, "served, answered late", j)
    eq([m["text"] for m in fs.get_messages()], ["t", "slow"], "posted once")
    eq([r.get("delayed_s") for r in fs.get_requests()][-2:], [1.0, 0.5], "delays recorded")


@run.case
def slack_incoming_webhook():
    fs.reset()
    st, _, j = http("POST", fs.webhook_url, {"text": "notice"})
    eq((st, j), (200, "ok"), "webhook answers ok")
    eq(http("POST", fs.webhook_url, {"x": 1})[0:3:2], (400, "no_text"), "no text")
    eq([m["text"] for m in fs.get_messages()], ["notice"], "recorded")


def main():
    fk.start()
    fs.start()
    event("fake kube on %s, fake slack on %s" % (fk.url, fs.url))
    try:
        return run.run(only=set(os.environ.get("E2E_ONLY", "").split(",")) - {""} or None)
    finally:
        fk.stop()
        fs.stop()


if __name__ == "__main__":
    sys.exit(main())
