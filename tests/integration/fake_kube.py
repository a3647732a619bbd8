#!/usr/bin/env python3
"""fake_kube.py - a stateful fake of the Kubernetes API server for the janitor's tests.

Serves the endpoints janitor/kube.h calls, answering as kube-apiserver does (Kubernetes API
reference, kubernetes.io/docs/reference/kubernetes-api/; "API Concepts": resource versions,
retrieving large results sets in chunks, receiving resources as Tables/metadata only):
  core/v1      pods (GET, LIST with limit/continue, merge PATCH, DELETE with DeleteOptions),
               namespaces (GET, LIST), events (POST, LIST)
  apps/v1      replicasets (GET), deployments and statefulsets (GET, /scale GET and PATCH)
  batch/v1     jobs (GET, DELETE with propagation to their pods)
  coordination.k8s.io/v1  leases (POST, GET, PUT with resourceVersion conflicts)
Errors are metav1.Status objects: 401 Unauthorized (no or wrong bearer token), 404 NotFound,
409 Conflict / AlreadyExists (also a DELETE whose preconditions.uid or resourceVersion does not
match, and a merge PATCH whose metadata.uid is not the pod's: the storage's UID precondition,
"Precondition failed: UID in precondition"), 410 Expired (stale continue token), 415 UnsupportedMediaType (PATCH that is not
application/merge-patch+json), 422 Invalid, 400 BadRequest.  Every change bumps one global
resourceVersion, as etcd's revision does.  LIST answers from the current state (not a snapshot
at the first page's revision).  Controllers are simulated only where the janitor's effects
show: scaling a Deployment/StatefulSet removes the pods beyond the new count, deleting a Job
with Background/Foreground propagation removes its pods, and a StatefulSet recreates a deleted
pod under the same name with a new uid.  None of that is recorded as a request.

As a script:  python3 fake_kube.py --port 0 --port-file F --token T
As a module:  fk = FakeKube(token="T").start(); fk.add_pod("ml", "train-0"); ...; fk.stop()

Side door (no auth, never recorded), all JSON:
  GET  /_fake/requests[?clear=1]  recorded requests (method, path, query, headers, body, time,
                                  status, answer_kind)
  GET  /_fake/state               every object by kind
  POST /_fake/pod                 {namespace, name, annotations, labels, owner: {kind, name},
                                   phase, finalizers, node, conditions, created_ago_s}
                                  add or replace (a replaced pod gets a new uid)
  POST /_fake/recreate            {namespace, name}  same name, new uid, fresh metadata
  POST /_fake/annotate            {namespace, name, annotations: {k: v or null}}  a person
  POST /_fake/deployment          {namespace, name, replicas}  with its ReplicaSet
  POST /_fake/statefulset         {namespace, name, replicas}
  POST /_fake/job                 {namespace, name}
  POST /_fake/fault               {method, path (regex, full match), count, status, body,
                                   headers, delay_s, query, action: "respond"|"drop"|
                                   "recreate_after"|"delay"}
  POST /_fake/lease               {namespace, name, holder, duration_s}  another replica
                                  takes (or creates) the Lease now: holder, renewTime now
  POST /_fake/expire-continue     every continue token handed out so far answers 410
  POST /_fake/finalize            {namespace, name}  drop a pod's finalizers (it then goes)
  POST /_fake/reset               forget every object but the namespaces, and the log
"""

import base64
import copy
import datetime
import json
import re
import sys
import time
import urllib.parse
import uuid

import fake_base
from fake_base import Reply

META_LIST_ACCEPT = "as=PartialObjectMetadataList"
MERGE_PATCH = "application/merge-patch+json"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")
DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# kind -> (group/version, plural, namespaced)
KINDS = {
    "Pod": ("v1", "pods"), "Namespace": ("v1", "namespaces"), "Event": ("v1", "events"),
    "ReplicaSet": ("apps/v1", "replicasets"), "Deployment": ("apps/v1", "deployments"),
    "StatefulSet": ("apps/v1", "statefulsets"), "Job": ("batch/v1", "jobs"),
    "Lease": ("coordination.k8s.io/v1", "leases"),
}
PLURAL_KIND = {v[1]: k for k, v in KINDS.items()}


def rfc3339(ts):
    """metav1.Time: RFC 3339 UTC with seconds."""
    return datetime.datetime.fromtimestamp(int(ts), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(ts):
    """metav1.MicroTime: RFC 3339 UTC with microseconds."""
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def resource_name(kind):
    """"pods", "deployments.apps", "leases.coordination.k8s.io", as Status messages name them."""
    gv, plural = KINDS[kind]
    return plural if "/" not in gv else "%s.%s" % (plural, gv.split("/")[0])


def status_error(code, reason, message, kind=None, name=None, causes=None):
    """A metav1.Status failure, as the API server writes them."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if kind is not None or name is not None:
        d = {}
        if name is not None:
            d["name"] = name
        if kind in KINDS:
            gv, plural = KINDS[kind]
            if "/" in gv:
                d["group"] = gv.split("/")[0]
            d["kind"] = plural
        elif kind is not None:
            d["kind"] = kind.lower()
        if causes:
            d["causes"] = causes
        body["details"] = d
    return Reply(code, body)


def not_found(kind, name):
    return status_error(404, "NotFound", '%s "%s" not found' % (resource_name(kind), name),
                        kind, name)


def bad_request(message):
    return status_error(400, "BadRequest", message)


def invalid(kind, name, field, message):
    return status_error(422, "Invalid", '%s "%s" is invalid: %s: %s' % (
        kind, name, field, message), kind, name,
        [{"reason": "FieldValueInvalid", "message": message, "field": field}])


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch: objects merge recursively, null deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class FakeKube(fake_base.FakeServer):
    """The fake's state and its HTTP server (start, stop, url: fake_base.FakeServer).  All
    state is guarded by self.lock (reentrant)."""

    thread_name = "fake-kube"

    def __init__(self, token="test-kube-token", host="127.0.0.1", port=0,
                 namespaces=("default", "kube-system")):
        fake_base.FakeServer.__init__(self, host, port)
        self.token = token
        self.rv = 1000
        self.objects = {}     # (kind, namespace or "", name) -> object
        self.continue_epoch = 0
        for ns in namespaces:
            self.add_namespace(ns)

    def write_kubeconfig(self, path, namespace="default"):
        """A kubeconfig (clientcmd v1) pointing at this fake with its bearer token."""
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\n"
                    "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
                    "users:\n- name: janitor\n  user:\n    token: %s\n"
                    "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
                    "    user: janitor\n    namespace: %s\n"
                    "current-context: fake\n" % (self.url, self.token, namespace))
        return path

    # ----- internals (caller holds the lock) --------------------------------------------------
    def _bump(self, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def _new_meta(self, ns, name, created=None):
        md = {"name": name, "uid": str(uuid.uuid4()),
              "creationTimestamp": rfc3339(created if created is not None else time.time())}
        if ns:
            md["namespace"] = ns
        return md

    def _store(self, kind, obj):
        md = obj["metadata"]
        self._bump(obj)
        self.objects[(kind, md.get("namespace", ""), md["name"])] = obj
        return obj

    def _get(self, kind, ns, name):
        obj = self.objects.get((kind, ns or "", name))
        if obj is None:
            raise not_found(kind, name)
        return obj

    def _owner_ref(self, kind, ns, name):
        o = self._get(kind, ns, name)
        return {"apiVersion": KINDS[kind][0], "kind": kind, "name": name,
                "uid": o["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}

    def _owned_pods(self, kind, ns, name, uid):
        return [o for (k, n, _), o in list(self.objects.items()) if k == "Pod" and n == ns and
                any(r.get("kind") == kind and r.get("name") == name and r.get("uid") == uid
                    for r in o["metadata"].get("ownerReferences", []))]

    def _remove_pod(self, pod):
        """Remove a pod, or start its graceful removal while it has finalizers; a StatefulSet's
        pod comes back under the same name with a new uid (its controller's doing)."""
        md = pod["metadata"]
        key = ("Pod", md["namespace"], md["name"])
        if md.get("finalizers"):
            if not md.get("deletionTimestamp"):
                md["deletionTimestamp"] = rfc3339(time.time())
                md["deletionGracePeriodSeconds"] = 30
                self._bump(pod)
            return pod
        self.objects.pop(key, None)
        self.rv += 1
        for ref in md.get("ownerReferences", []):
            if ref.get("kind") == "StatefulSet" and ref.get("controller"):
                sts = self.objects.get(("StatefulSet", md["namespace"], ref["name"]))
                ordinal = md["name"].rsplit("-", 1)[-1]
                if sts and ordinal.isdigit() and int(ordinal) < sts["spec"]["replicas"]:
                    self.recreate_pod(md["namespace"], md["name"], old=pod)
        return pod

    def _scale_pods(self, kind, obj, replicas):
        """The controllers' part of a scale: pods beyond replicas go (highest first)."""
        md = obj["metadata"]
        if kind == "Deployment":
            pods = []
            for (k, n, _), rs in list(self.objects.items()):
                if k == "ReplicaSet" and n == md["namespace"] and any(
                        r.get("uid") == md["uid"] for r in rs["metadata"].get(
                            "ownerReferences", [])):
                    rs["spec"]["replicas"] = replicas
                    self._bump(rs)
                    pods += self._owned_pods("ReplicaSet", n, rs["metadata"]["name"],
                                             rs["metadata"]["uid"])
        else:
            pods = self._owned_pods(kind, md["namespace"], md["name"], md["uid"])
        pods.sort(key=lambda p: p["metadata"]["name"], reverse=True)
        for p in pods[:max(0, len(pods) - replicas)]:
            p["metadata"].pop("finalizers", None)
            self.objects.pop(("Pod", p["metadata"]["namespace"], p["metadata"]["name"]), None)
            self.rv += 1

    # ----- Python API for tests (each takes the lock) -----------------------------------------
    def add_namespace(self, ns):
        with self.lock:
            if ("Namespace", "", ns) not in self.objects:
                self._store("Namespace", {"metadata": self._new_meta("", ns),
                                          "spec": {"finalizers": ["kubernetes"]},
                                          "status": {"phase": "Active"}})

    def add_pod(self, ns, name, annotations=None, labels=None, owner=None, phase="Running",
                finalizers=None, node="gpu-node-1", conditions=None, created_ago_s=0):
        """Add (or replace, with a new uid) a pod; owner is {"kind", "name"} of an object
        added before (ReplicaSet, StatefulSet, Job).  Returns a copy of the pod."""
        with self.lock:
            self.add_namespace(ns)
            md = self._new_meta(ns, name, time.time() - created_ago_s)
            md["labels"] = dict(labels or {})
            md["annotations"] = dict(annotations or {})
            if owner:
                md["ownerReferences"] = [self._owner_ref(owner["kind"], ns, owner["name"])]
            if finalizers:
                md["finalizers"] = list(finalizers)
            if conditions is None:
                conditions = [{"type": "PodScheduled", "status": "True",
                               "lastTransitionTime": md["creationTimestamp"]}]
            pod = {"metadata": md,
                   "spec": {"containers": [{"name": "main", "image": "pytorch/pytorch:2.3",
                                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30},
                   "status": {"phase": phase, "conditions": copy.deepcopy(conditions)}}
            if node:
                pod["spec"]["nodeName"] = node
            self._store("Pod", pod)
            return self._out("Pod", pod)

    def recreate_pod(self, ns, name, old=None):
        """The pod is deleted and created again under the same name (a StatefulSet's or a
        person's doing): new uid, fresh annotations (none), same labels and owner.  Returns
        the new uid."""
        with self.lock:
            old = old or self.objects.get(("Pod", ns, name))
            if old is None:
                raise KeyError("no pod %s/%s" % (ns, name))
            pod = copy.deepcopy(old)
            md = self._new_meta(ns, name)
            md["labels"] = dict(old["metadata"].get("labels", {}))
            md["annotations"] = {}
            if old["metadata"].get("ownerReferences"):
                md["ownerReferences"] = copy.deepcopy(old["metadata"]["ownerReferences"])
            pod["metadata"] = md
            self._store("Pod", pod)
            return md["uid"]

    def annotate(self, ns, name, annotations):
        """A person's `kubectl annotate`: values set, None removes.  Not recorded."""
        with self.lock:
            pod = self._get("Pod", ns, name)
            ann = pod["metadata"].setdefault("annotations", {})
            for k, v in annotations.items():
                if v is None:
                    ann.pop(k, None)
                else:
                    ann[k] = str(v)
            self._bump(pod)

    def finalize(self, ns, name):
        with self.lock:
            pod = self._get("Pod", ns, name)
            pod["metadata"].pop("finalizers", None)
            if pod["metadata"].get("deletionTimestamp"):
                self._remove_pod(pod)

    def add_deployment(self, ns, name, replicas=1, pod_hash="5d9c7b8f6"):
        """A Deployment and its ReplicaSet NAME-POD_HASH.  Returns the ReplicaSet's name."""
        with self.lock:
            self.add_namespace(ns)
            sel = {"matchLabels": {"app": name}}
            self._store("Deployment", {
                "metadata": dict(self._new_meta(ns, name), generation=1),
                "spec": {"replicas": replicas, "selector": sel},
                "status": {"replicas": replicas}})
            rs_name = "%s-%s" % (name, pod_hash)
            md = self._new_meta(ns, rs_name)
            md["ownerReferences"] = [self._owner_ref("Deployment", ns, name)]
            md["labels"] = {"app": name, "pod-template-hash": pod_hash}
            self._store("ReplicaSet", {"metadata": md, "spec": {"replicas": replicas,
                                                               "selector": sel},
                                       "status": {"replicas": replicas}})
            return rs_name

    def add_statefulset(self, ns, name, replicas=1):
        with self.lock:
            self.add_namespace(ns)
            self._store("StatefulSet", {
                "metadata": dict(self._new_meta(ns, name), generation=1),
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "serviceName": name},
                "status": {"replicas": replicas}})

    def add_job(self, ns, name):
        with self.lock:
            self.add_namespace(ns)
            self._store("Job", {"metadata": self._new_meta(ns, name),
                                "spec": {"parallelism": 1, "completions": 1},
                                "status": {"active": 1}})

    def add_lease(self, ns, name, holder=None, duration_s=15):
        with self.lock:
            self.add_namespace(ns)
            spec = {"leaseDurationSeconds": duration_s}
            if holder:
                spec.update(holderIdentity=holder, acquireTime=rfc3339_micro(time.time()),
                            renewTime=rfc3339_micro(time.time()), leaseTransitions=0)
            return self._out("Lease", self._store("Lease", {"metadata": self._new_meta(ns, name),
                                                            "spec": spec}))

    def get(self, kind, ns, name):
        """A copy of an object (kind "Pod", "Deployment", ...), or None when absent."""
        with self.lock:
            o = self.objects.get((kind, ns or "", name))
            return self._out(kind, o) if o is not None else None

    def pod(self, ns, name):
        return self.get("Pod", ns, name)

    def list(self, kind, ns=None):
        with self.lock:
            return [self._out(k, o) for (k, n, _), o in sorted(self.objects.items())
                    if k == kind and (ns is None or n == ns)]

    def mutating(self):
        return [r for r in self.get_requests() if r["method"] in MUTATING]

    def add_fault(self, method=".*", path=".*", count=1, status=500, headers=None, body=None,
                  action="respond", delay_s=0, query=None):
        """The next `count` requests whose method and path (no query) fully match get this
        instead: "respond" answers status/headers/body (body None: a Status object for the
        status), "drop" closes the connection unanswered, "recreate_after" serves the request
        and then recreates the pod it named (same name, new uid): the race the uid
        precondition guards against, "delay" waits delay_s (without holding the lock) and
        then serves the request as usual: past a client's timeout, the change still lands
        late, as on a slow API server.  query (a regex searched in the raw query string), when
        given, must match too: "continue=" fails only the pages after the first."""
        if action not in ("respond", "drop", "recreate_after", "delay"):
            raise ValueError("bad fault action %r" % action)
        with self.lock:
            self.faults.append({"method": method, "path": path, "count": int(count),
                                "status": int(status), "headers": headers or {}, "body": body,
                                "action": action, "delay_s": float(delay_s),
                                "query": query})

    def take_lease(self, ns, name, holder, duration_s=15):
        """Another replica holds the Lease from now on (an update that bumps its
        resourceVersion), or it is created so; returns the Lease."""
        with self.lock:
            cur = self.objects.get(("Lease", ns, name))
            if cur is None:
                return self.add_lease(ns, name, holder, duration_s)
            now = rfc3339_micro(time.time())
            spec = cur["spec"]
            if spec.get("holderIdentity") != holder:
                spec["leaseTransitions"] = spec.get("leaseTransitions", 0) + 1
                spec["acquireTime"] = now
            spec.update(holderIdentity=holder, renewTime=now, leaseDurationSeconds=duration_s)
            self._bump(cur)
            return self._out("Lease", cur)

    def expire_continue_tokens(self):
        """Every continue token handed out so far now answers 410 Expired (etcd compacted)."""
        with self.lock:
            self.continue_epoch += 1

    def reset(self):
        with self.lock:
            for key in [k for k in self.objects if k[0] != "Namespace"]:
                del self.objects[key]
            self.requests = []
            self.faults = []

    def state(self):
        with self.lock:
            out = {}
            for (k, n, name), o in sorted(self.objects.items()):
                out.setdefault(k, []).append(self._out(k, o))
            return out

    def _out(self, kind, obj):
        o = {"kind": kind, "apiVersion": KINDS[kind][0]}
        o.update(copy.deepcopy(obj))
        return o

    def _take_fault(self, method, path, query=""):
        return self._pop_fault(lambda f: re.fullmatch(f["method"], method) and re.fullmatch(
            f["path"], path) and (not f.get("query") or re.search(f["query"], query)))

    # ----- the API proper (caller holds the lock) ---------------------------------------------
    def handle_api(self, method, path, query, headers, raw, rec):
        """Validate and execute one request; returns (status, body) or raises Reply."""
        m = re.fullmatch(r"(?i)bearer\s+(\S+)", headers.get("authorization", "").strip())
        if not m or m.group(1) != self.token:
            raise status_error(401, "Unauthorized", "Unauthorized")
        accept = headers.get("accept", "application/json")
        if not any(a.split(";")[0].strip() in ("application/json", "*/*", "application/*")
                   for a in accept.split(",")):
            raise status_error(406, "NotAcceptable", "only the following media types are "
                               "accepted: application/json, application/yaml, "
                               "application/vnd.kubernetes.protobuf")
        body = None
        if method in ("POST", "PUT", "PATCH"):
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if method == "PATCH" and ctype != MERGE_PATCH:
                raise status_error(415, "UnsupportedMediaType", "the body of the request was "
                                   "in an unknown format - accepted media types include: "
                                   "application/json-patch+json, application/merge-patch+json,"
                                   " application/apply-patch+yaml")
            if method != "PATCH" and ctype not in ("application/json", ""):
                raise status_error(415, "UnsupportedMediaType", "the body of the request was "
                                   "in an unknown format - accepted media types include: "
                                   "application/json, application/yaml, "
                                   "application/vnd.kubernetes.protobuf")
            body = self._json(raw)
        elif method == "DELETE" and raw:
            body = self._json(raw)

        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            rest = parts[3:]
            group = "%s/%s" % (parts[1], parts[2])
        else:
            raise status_error(404, "NotFound", "the server could not find the requested "
                               "resource")
        gv = "v1" if parts[0] == "api" else group
        ns = None
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
            ns, rest = rest[1], rest[2:]
        if not rest or rest[0] not in PLURAL_KIND or KINDS[PLURAL_KIND[rest[0]]][0] != gv:
            raise status_error(404, "NotFound", "the server could not find the requested "
                               "resource")
        kind = PLURAL_KIND[rest[0]]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub and (sub != "scale" or kind not in ("Deployment",
                                                                      "StatefulSet"))):
            raise status_error(404, "NotFound", "the server could not find the requested "
                               "resource")
        if ns is not None and kind != "Namespace" and ("Namespace", "", ns) not in \
                self.objects and method == "POST":
            raise not_found("Namespace", ns)
        meta_only = META_LIST_ACCEPT in accept.replace(" ", "") or \
            "as=PartialObjectMetadata;" in accept.replace(" ", "") + ";"

        if name is None:
            if method == "GET":
                return self._list(kind, ns, query, meta_only, rec)
            if method == "POST":
                return self._create(kind, ns, body)
            raise status_error(405, "MethodNotAllowed", "the server does not allow this "
                               "method on the requested resource")
        if sub == "scale":
            return self._scale(kind, ns, name, method, body)
        if method == "GET":
            o = self._out(kind, self._get(kind, ns, name))
            if meta_only:
                rec["answer_kind"] = "PartialObjectMetadata"
                return 200, {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": o["metadata"]}
            return 200, o
        if method == "PATCH":
            return self._patch(kind, ns, name, body)
        if method == "PUT":
            return self._update(kind, ns, name, body)
        if method == "DELETE":
            return self._delete(kind, ns, name, body or {})
        raise status_error(405, "MethodNotAllowed", "the server does not allow this method "
                           "on the requested resource")

    def _json(self, raw):
        try:
            return json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError) as e:
            raise bad_request("json: cannot unmarshal the request body: %s" % e)

    def _list(self, kind, ns, query, meta_only, rec):
        limit = query.get("limit", ["0"])[-1]
        if not re.fullmatch(r"\d+", limit):
            raise bad_request("invalid value for limit: %r" % limit)
        limit = int(limit)
        keys = sorted(k for k in self.objects if k[0] == kind and (ns is None or k[1] == ns))
        start = 0
        cont = query.get("continue", [""])[-1]
        if cont:
            try:
                tok = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                after = (kind, tok["ns"], tok["name"])
                epoch = tok["epoch"]
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid: illegal base64 data")
            if epoch != self.continue_epoch:
                raise status_error(410, "Expired", "The provided continue parameter is too old "
                                   "to display a consistent list result. You can start a new "
                                   "list without the continue parameter.")
            start = next((i for i, k in enumerate(keys) if k > after), len(keys))
        page = keys[start:start + limit] if limit else keys[start:]
        more = limit and start + limit < len(keys)
        lmd = {"resourceVersion": str(self.rv)}
        if more:
            last = page[-1]
            lmd["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"ns": last[1], "name": last[2], "epoch": self.continue_epoch,
                 "rv": self.rv}).encode()).decode()
            lmd["remainingItemCount"] = len(keys) - start - limit
        if meta_only:
            rec["answer_kind"] = "PartialObjectMetadataList"
            items = [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                      "metadata": copy.deepcopy(self.objects[k]["metadata"])} for k in page]
            return 200, {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                         "metadata": lmd, "items": items}
        rec["answer_kind"] = kind + "List"
        return 200, {"kind": kind + "List", "apiVersion": KINDS[kind][0], "metadata": lmd,
                     "items": [copy.deepcopy(self.objects[k]) for k in page]}

    def _create(self, kind, ns, body):
        if kind not in ("Event", "Lease", "Pod"):
            raise status_error(405, "MethodNotAllowed", "the fake does not create %s" %
                               resource_name(kind))
        if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            raise bad_request("Object 'metadata' is missing in the request body")
        md = body["metadata"]
        name = md.get("name")
        if not name and md.get("generateName"):
            name = md["generateName"] + uuid.uuid4().hex[:5]
        if not isinstance(name, str) or not name:
            raise invalid(kind, "", "metadata.name", "Required value: name or generateName "
                          "is required")
        if md.get("namespace", ns) != ns:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        if kind == "Event":
            io = body.get("involvedObject") or {}
            if io.get("namespace", ns) != ns:
                raise invalid(kind, name, "involvedObject.namespace", "Invalid value: %r: "
                              "does not match event.namespace" % io.get("namespace"))
            if not body.get("reason"):
                raise invalid(kind, name, "reason", "Required value")
            if body.get("type") not in ("Normal", "Warning"):
                raise invalid(kind, name, "type", "Unsupported value: %r" % body.get("type"))
        if kind == "Lease" and not isinstance(body.get("spec", {}), dict):
            raise bad_request("spec: expected an object")
        if (kind, ns, name) in self.objects:
            raise status_error(409, "AlreadyExists", '%s "%s" already exists' % (
                resource_name(kind), name), kind, name)
        obj = copy.deepcopy(body)
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        new_md = self._new_meta(ns, name)
        for k in ("labels", "annotations", "ownerReferences"):
            if k in md:
                new_md[k] = copy.deepcopy(md[k])
        obj["metadata"] = new_md
        return 201, self._out(kind, self._store(kind, obj))

    def _update(self, kind, ns, name, body):
        cur = self._get(kind, ns, name)
        if kind != "Lease":
            raise status_error(405, "MethodNotAllowed", "the fake updates only leases")
        if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            raise bad_request("Object 'metadata' is missing in the request body")
        if body["metadata"].get("name") != name:
            raise bad_request("the name of the object (%s) does not match the name on the "
                              "URL (%s)" % (body["metadata"].get("name"), name))
        rv = body["metadata"].get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            raise self._modified(kind, name)
        cur["spec"] = copy.deepcopy(body.get("spec") or {})
        for k in ("labels", "annotations"):
            if k in body["metadata"]:
                cur["metadata"][k] = copy.deepcopy(body["metadata"][k])
        self._bump(cur)
        return 200, self._out(kind, cur)

    def _modified(self, kind, name):
        return status_error(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the '
                            'object has been modified; please apply your changes to the latest '
                            'version and try again' % (resource_name(kind), name), kind, name)

    def _patch(self, kind, ns, name, body):
        cur = self._get(kind, ns, name)
        if not isinstance(body, dict):
            raise bad_request("json: cannot unmarshal the patch into an object")
        want_uid = (body.get("metadata") or {}).get("uid") if isinstance(
            body.get("metadata"), dict) else None
        if want_uid and want_uid != cur["metadata"]["uid"]:
            # The storage's UID precondition (kubelet pod status patches rely on it).
            raise status_error(409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": "
                               "StorageError: invalid object, Code: 4, Key: /registry/%s/%s/%s,"
                               " ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
                               "UID in precondition: %s, UID in object meta: %s" % (
                                   resource_name(kind), name, KINDS[kind][1], ns, name,
                                   want_uid, cur["metadata"]["uid"]), kind, name)
        new = merge_patch(cur, body)
        md = new.get("metadata")
        if not isinstance(md, dict):
            raise invalid(kind, name, "metadata", "Required value")
        rv = md.get("resourceVersion")
        if rv != cur["metadata"]["resourceVersion"]:
            raise self._modified(kind, name)
        for k in ("uid", "name", "namespace", "creationTimestamp"):
            if md.get(k) != cur["metadata"].get(k):
                raise invalid(kind, name, "metadata." + k, "Invalid value: field is immutable")
        for k in ("annotations", "labels"):
            v = md.get(k, {})
            if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
                raise bad_request("json: cannot unmarshal into Go struct field ObjectMeta."
                                  "metadata.%s of type map[string]string" % k)
        if kind == "Pod" and new.get("spec") != cur.get("spec"):
            raise invalid(kind, name, "spec", "Forbidden: pod updates may not change fields "
                          "other than `spec.containers[*].image`, `spec.activeDeadlineSeconds`"
                          ", `spec.tolerations` (only additions to existing tolerations) or "
                          "`spec.terminationGracePeriodSeconds`")
        if new == cur:
            return 200, self._out(kind, cur)   # a no-op patch keeps the resourceVersion
        self.objects[(kind, ns, name)] = new
        self._bump(new)
        return 200, self._out(kind, new)

    def _delete(self, kind, ns, name, opts):
        cur = self._get(kind, ns, name)
        if not isinstance(opts, dict):
            raise bad_request("DeleteOptions: expected an object")
        pp = opts.get("propagationPolicy")
        if pp not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request("DeleteOptions.propagationPolicy: Unsupported value: %r" % pp)
        gps = opts.get("gracePeriodSeconds")
        if gps is not None and (not isinstance(gps, int) or gps < 0):
            raise invalid("Pod", name, "gracePeriodSeconds", "Invalid value: must be >= 0")
        pre = opts.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != cur["metadata"]["uid"]:
            raise status_error(409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": "
                               "Precondition failed: UID in precondition: %s, UID in object "
                               "meta: %s" % (resource_name(kind), name, pre["uid"],
                                             cur["metadata"]["uid"]), kind, name)
        if pre.get("resourceVersion") and pre["resourceVersion"] != \
                cur["metadata"]["resourceVersion"]:
            raise status_error(409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": "
                               "Precondition failed: ResourceVersion in precondition: %s, "
                               "ResourceVersion in object meta: %s" % (
                                   resource_name(kind), name, pre["resourceVersion"],
                                   cur["metadata"]["resourceVersion"]), kind, name)
        out = self._out(kind, cur)
        if kind == "Pod":
            self._remove_pod(cur)
            still = self.objects.get(("Pod", ns, name))
            if still is cur:
                return 200, self._out(kind, cur)
            return 200, out
        if kind not in ("Job", "Lease", "Event"):
            raise status_error(405, "MethodNotAllowed", "the fake deletes only pods, jobs, "
                               "leases and events")
        del self.objects[(kind, ns, name)]
        self.rv += 1
        if kind == "Job" and pp in ("Background", "Foreground"):
            for p in self._owned_pods("Job", ns, name, cur["metadata"]["uid"]):
                p["metadata"].pop("finalizers", None)
                self._remove_pod(p)
        return 200, out

    def _scale(self, kind, ns, name, method, body):
        obj = self._get(kind, ns, name)

        def scale_json():
            md = obj["metadata"]
            return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                    "metadata": {"name": name, "namespace": ns, "uid": md["uid"],
                                 "resourceVersion": md["resourceVersion"],
                                 "creationTimestamp": md["creationTimestamp"]},
                    "spec": {"replicas": obj["spec"]["replicas"]},
                    "status": {"replicas": obj["status"]["replicas"],
                               "selector": "app=%s" % name}}
        if method == "GET":
            return 200, scale_json()
        if method != "PATCH":
            raise status_error(405, "MethodNotAllowed", "the fake only GETs and PATCHes scale")
        if not isinstance(body, dict):
            raise bad_request("json: cannot unmarshal the patch into an object")
        new = merge_patch(scale_json(), body)
        replicas = (new.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid("Scale", name, "spec.replicas", "Invalid value: %r: must be greater "
                          "than or equal to 0" % replicas)
        if (new.get("metadata") or {}).get("resourceVersion") != obj["metadata"][
                "resourceVersion"]:
            raise self._modified(kind, name)
        if replicas != obj["spec"]["replicas"]:
            obj["spec"]["replicas"] = replicas
            obj["status"]["replicas"] = replicas
            obj["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
            self._bump(obj)
            self._scale_pods(kind, obj, replicas)
        return 200, scale_json()

    # ----- the side door ----------------------------------------------------------------------
    def side_post(self, path, b):
        """The side-door POSTs of the header's list (fake_base.FakeServer.handle_side: the
        requests, the state, faults and reset)."""
        if path == "/_fake/pod":
            return 200, self.add_pod(b["namespace"], b["name"], b.get("annotations"),
                                     b.get("labels"), b.get("owner"),
                                     b.get("phase", "Running"), b.get("finalizers"),
                                     b.get("node", "gpu-node-1"), b.get("conditions"),
                                     b.get("created_ago_s", 0))
        if path == "/_fake/recreate":
            return 200, {"uid": self.recreate_pod(b["namespace"], b["name"])}
        if path == "/_fake/annotate":
            self.annotate(b["namespace"], b["name"], b["annotations"])
            return 200, self.pod(b["namespace"], b["name"])
        if path == "/_fake/deployment":
            return 200, {"replicaset": self.add_deployment(b["namespace"], b["name"],
                                                           b.get("replicas", 1))}
        if path == "/_fake/statefulset":
            self.add_statefulset(b["namespace"], b["name"], b.get("replicas", 1))
            return 200, {"ok": True}
        if path == "/_fake/job":
            self.add_job(b["namespace"], b["name"])
            return 200, {"ok": True}
        if path == "/_fake/lease":
            return 200, self.take_lease(b["namespace"], b["name"], b["holder"],
                                        b.get("duration_s", 15))
        if path == "/_fake/expire-continue":
            self.expire_continue_tokens()
            return 200, {"ok": True}
        if path == "/_fake/finalize":
            self.finalize(b["namespace"], b["name"])
            return 200, {"ok": True}
        return None


class FakeHandler(fake_base.FakeHandler):
    server_version = "fake-kube-apiserver"
    sys_version = ""

    def _send(self, status, body, headers=None):
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        self._write(status, data, [("Content-Type", "application/json"),
                                   ("Audit-Id", str(uuid.uuid4()))] +
                    list((headers or {}).items()))

    def _handle(self):
        fake = self.fake
        path, query, raw_query, raw = self._read()
        if self._side_door(path, query, raw):
            return
        headers = self._headers()
        rec = self._record(path, query, headers, raw, answer_kind=None)
        with fake.lock:
            fake.requests.append(rec)
            fault = fake._take_fault(self.command, path, raw_query)
        if fault and fault["action"] == "drop":
            rec["status"] = "dropped"
            self._drop()
            return
        if fault and fault["action"] == "respond":
            body = fault["body"]
            if body is None:
                body = status_error(fault["status"], "InternalError" if fault["status"] >= 500
                                    else "BadRequest", "injected fault").body
            with fake.lock:
                rec["status"] = fault["status"]
            self._send(fault["status"], body, fault["headers"])
            return
        if fault and fault["action"] == "delay":
            time.sleep(fault["delay_s"])
            with fake.lock:
                rec["delayed_s"] = fault["delay_s"]
        with fake.lock:
            try:
                status, body = fake.handle_api(self.command, path, query, headers, raw, rec)
            except Reply as r:
                status, body = r.status, r.body
            except Exception as e:  # a bug of the fake: answer, and let the test see it
                status, body = 500, status_error(500, "InternalError", "fake_kube bug: %r" %
                                                 e).body
            rec["status"] = status
            rec["answered"] = time.time()
            if status < 300 and re.fullmatch(r"/api/v1/namespaces/[^/]+/pods/[^/]+", path) \
                    and self.command in MUTATING and isinstance(body, dict):
                rec["pod_uid"] = (body.get("metadata") or {}).get("uid")  # the pod it changed
            if fault and fault["action"] == "recreate_after":
                m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)", path)
                if m and ("Pod", m.group(1), m.group(2)) in fake.objects:
                    rec["recreated_uid"] = fake.recreate_pod(m.group(1), m.group(2))
        try:
            self._send(status, body)
        except OSError:  # the client gave up (a "delay" fault past its timeout)
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle


FakeKube.handler = FakeHandler


def main(argv=None):
    ap = fake_base.arg_parser("a fake Kubernetes API server for the janitor", "test-kube-token")
    ap.add_argument("--kubeconfig", help="also write a kubeconfig for this fake here")
    args = ap.parse_args(argv)
    fk = FakeKube(token=args.token, host=args.host, port=args.port).start()
    if args.kubeconfig:
        fk.write_kubeconfig(args.kubeconfig)
    return fake_base.serve(fk, args.port_file, "fake kube-apiserver")


if __name__ == "__main__":
    sys.exit(main())
