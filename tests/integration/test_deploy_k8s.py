#!/usr/bin/env python3
# run.sh: weight 2, asan skip
# (manifests: no code of alertbridge's worth instrumenting again)
"""test_deploy_k8s.py - the Kubernetes manifests as kustomize renders them, checked offline.

Every kustomization (deploy/kubernetes, leader-election/, postgres/) and every component of
deploy/kubernetes/components/ (each alone on the base - one that patches another, with it -, all
together on the base, and those that fit on the leader-election and postgres overlays) is rendered with `kubectl kustomize` (skipped when kubectl is
not installed) and each object is checked against a strict structural schema of the kinds we
ship: required fields, the fields each kind knows (for the parts we use: a typo'd or unknown
field fails), types and enums.  Then what must hold between them: workload, Service,
ServiceMonitor, NetworkPolicy and PodDisruptionBudget selectors match the pod template's labels,
the ServiceMonitor sends Basic credentials from the Secret alertbridge-scrape exactly when
components/service-monitor-basic-auth is on (for a /metrics behind web.auth),
ports match the container port, probes are on /-/healthy and /-/ready, the config directory is
mounted without subPath and reloaded (--config.auto-reload-interval), the Secret's keys are
optional, RBAC is exactly the calls the code makes with the Lease's Role only with leader
election, and the PrometheusRule is what components/prometheus-rule/generate.sh makes of
deploy/prometheus/*-rules.yml.  The postgres/ overlay (issue 10): a Deployment of two or more
replicas with no claim at all, a PodDisruptionBudget with minAvailable 1, and the rendered
alertbridge.yml on a PostgreSQL URI whose database_password_file is projected from a Secret and
which `alertbridge check-config` (ALERTBRIDGE_BIN) accepts.  Self-tests show the schema check
fails on a typo and the postgres checks on a claim or a password file from the ConfigMap.
Prints one line per check and, last, "N passed, N failed"; exits 1 on any failure.
"""

import copy
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # a Python of its own (pyenv) beside Debian's python3-yaml (deploy/deps.sh)
    sys.path.append("/usr/lib/python3/dist-packages")
    import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Checks  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
K8S = os.path.join(SRC, "deploy", "kubernetes")
BASE = os.path.join(K8S, "base")
LE = os.path.join(K8S, "leader-election")
PG = os.path.join(K8S, "postgres")
BIN = os.environ.get("ALERTBRIDGE_BIN") or os.path.join(SRC, "alertbridge")
COMPONENTS = os.path.join(K8S, "components")
RULE_FILES = [os.path.join(SRC, "deploy", "prometheus", f)
              for f in ("janitor-rules.yml", "alertbridge-rules.yml")]
GENERATE = os.path.join(COMPONENTS, "prometheus-rule", "generate.sh")
OPERATING = os.path.join(SRC, "docs", "operating.md")
CMD_TIMEOUT_S = 60

POD_LABELS = {"app.kubernetes.io/name": "alertbridge"}
CONFIG_DIR = "/etc/alertbridge"
RELOAD_ARG = "--config.auto-reload-interval=30s"
# What each component must add to a render.
COMPONENT_KINDS = {
    "service-monitor": "ServiceMonitor",
    "service-monitor-basic-auth": "ServiceMonitor",
    "prometheus-rule": "PrometheusRule",
    "network-policy": "NetworkPolicy",
    "pod-disruption-budget": "PodDisruptionBudget",
    "public-endpoints": "Ingress",
}
# Components that patch what another one adds: rendered after it (issue 18 item 12: the
# ServiceMonitor could not scrape a /metrics behind web.auth).
PATCHES = {"service-monitor-basic-auth": "service-monitor"}
# The Secret components/service-monitor-basic-auth makes Prometheus send, and its keys.
SCRAPE_SECRET = "alertbridge-scrape"
SCRAPE_KEYS = {"username": "username", "password": "password"}
# Components that do not belong on the leader-election overlay (see docs/high-availability.md: only the
# leader is ready, so any budget would block draining the leader's node).
NOT_WITH_LEADER_ELECTION = {"pod-disruption-budget"}
# postgres/ brings its own PodDisruptionBudget (minAvailable 1, for two or more ready replicas).
NOT_WITH_POSTGRES = {"pod-disruption-budget"}
# The pods the NetworkPolicy lets in, as docs/operating.md documents them.
NETPOL_PEERS = [{"app.kubernetes.io/name": "alertmanager"}, {"app.kubernetes.io/name": "prometheus"}]
NETPOL_NAMESPACE = {"kubernetes.io/metadata.name": "monitoring"}
# components/public-endpoints (issue 21): the paths the internet may reach, on the container
# port of this name (the flag below), opened to the ingress controller's pods only.
PUBLIC_PATHS = {"/v1/github/webhook", "/v1/slack/interactions"}
PUBLIC_PORT = "public"
PUBLIC_FLAG = "--web.public-listen-address=:%d"
INGRESS_PEER = ({"kubernetes.io/metadata.name": "ingress-nginx"},
                {"app.kubernetes.io/name": "ingress-nginx"})

# Exactly the calls janitor/kube.c and ha/leader.c make: test_deploy_files.py's.
from test_deploy_files import CLUSTER_RULES, LEASE_RULES  # noqa: E402

CHECKS = Checks()
report, skip = CHECKS.report, CHECKS.skip


# ---- the schema ---------------------------------------------------------------------------
# A spec is a type name ("str", "int", "bool", "intstr", "quantity", "labels": map of string to
# string), ("enum", values), ("list", item spec) or ("obj", {field: spec}, required fields).

def obj(fields, required=()):
    return ("obj", fields, set(required))


def lst(item):
    return ("list", item)


def enum(*values):
    return ("enum", values)


STRS = lst("str")
META = obj({"name": "str", "namespace": "str", "labels": "labels", "annotations": "labels"},
           ["name"])
SELECTOR = obj({"matchLabels": "labels", "matchExpressions": lst(obj(
    {"key": "str", "operator": enum("In", "NotIn", "Exists", "DoesNotExist"), "values": STRS},
    ["key", "operator"]))})
# core/v1 SecretKeySelector (the prometheus-operator's basicAuth references).
SECRET_KEY = obj({"name": "str", "key": "str", "optional": "bool"}, ["name", "key"])
KEY_PATHS = lst(obj({"key": "str", "path": "str", "mode": "int"}, ["key", "path"]))
PROBE = obj({"httpGet": obj({"path": "str", "port": "intstr", "scheme": enum("HTTP", "HTTPS")},
                            ["port"]),
             "initialDelaySeconds": "int", "periodSeconds": "int", "timeoutSeconds": "int",
             "failureThreshold": "int", "successThreshold": "int"})
CONTAINER = obj({
    "name": "str", "image": "str", "imagePullPolicy": enum("Always", "IfNotPresent", "Never"),
    "command": STRS, "args": STRS,
    "ports": lst(obj({"name": "str", "containerPort": "int",
                      "protocol": enum("TCP", "UDP", "SCTP")}, ["containerPort"])),
    "startupProbe": PROBE, "livenessProbe": PROBE, "readinessProbe": PROBE,
    "resources": obj({"requests": "labels", "limits": "labels"}),
    "securityContext": obj({"allowPrivilegeEscalation": "bool", "readOnlyRootFilesystem": "bool",
                            "runAsNonRoot": "bool", "runAsUser": "int",
                            "capabilities": obj({"drop": STRS, "add": STRS})}),
    "volumeMounts": lst(obj({"name": "str", "mountPath": "str", "readOnly": "bool",
                             "subPath": "str"}, ["name", "mountPath"])),
}, ["name", "image"])
VOLUME = obj({
    "name": "str",
    "projected": obj({"defaultMode": "int", "sources": lst(obj({
        "configMap": obj({"name": "str", "items": KEY_PATHS, "optional": "bool"}, ["name"]),
        "secret": obj({"name": "str", "items": KEY_PATHS, "optional": "bool"}, ["name"])}))},
        ["sources"]),
    "configMap": obj({"name": "str", "items": KEY_PATHS, "optional": "bool",
                      "defaultMode": "int"}, ["name"]),
    "secret": obj({"secretName": "str", "items": KEY_PATHS, "optional": "bool",
                   "defaultMode": "int"}, ["secretName"]),
    "persistentVolumeClaim": obj({"claimName": "str", "readOnly": "bool"}, ["claimName"]),
    "emptyDir": obj({"sizeLimit": "quantity", "medium": enum("", "Memory")}),
}, ["name"])
POD_SPEC = obj({
    "serviceAccountName": "str", "automountServiceAccountToken": "bool",
    "terminationGracePeriodSeconds": "int",
    "securityContext": obj({"runAsNonRoot": "bool", "runAsUser": "int", "runAsGroup": "int",
                            "fsGroup": "int",
                            "fsGroupChangePolicy": enum("OnRootMismatch", "Always"),
                            "seccompProfile": obj({"type": enum("RuntimeDefault", "Localhost",
                                                                "Unconfined")}, ["type"])}),
    "affinity": obj({"podAntiAffinity": obj({
        "preferredDuringSchedulingIgnoredDuringExecution": lst(obj({
            "weight": "int", "podAffinityTerm": obj({"topologyKey": "str",
                                                     "labelSelector": SELECTOR},
                                                    ["topologyKey"])},
            ["weight", "podAffinityTerm"]))})}),
    "containers": lst(CONTAINER), "volumes": lst(VOLUME),
}, ["containers"])
POD_TEMPLATE = obj({"metadata": obj({"labels": "labels", "annotations": "labels"}),
                    "spec": POD_SPEC}, ["metadata", "spec"])
PVC_SPEC = obj({"accessModes": lst(enum("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                        "ReadWriteOncePod")),
                "resources": obj({"requests": "labels"}, ["requests"]),
                "storageClassName": "str"}, ["accessModes", "resources"])
RULES = lst(obj({"apiGroups": STRS, "resources": STRS, "verbs": STRS, "resourceNames": STRS},
                ["apiGroups", "resources", "verbs"]))
SUBJECTS = lst(obj({"kind": enum("ServiceAccount", "User", "Group"), "name": "str",
                    "namespace": "str", "apiGroup": "str"}, ["kind", "name"]))
ROLE_REF = obj({"apiGroup": "str", "kind": enum("Role", "ClusterRole"), "name": "str"},
               ["apiGroup", "kind", "name"])

KINDS = {
    ("v1", "Namespace"): {},
    ("v1", "ServiceAccount"): {"automountServiceAccountToken": "bool"},
    ("v1", "ConfigMap"): {"data": "labels"},
    ("v1", "PersistentVolumeClaim"): {"spec": PVC_SPEC},
    ("v1", "Service"): {"spec": obj({
        "type": enum("ClusterIP", "NodePort", "LoadBalancer"), "selector": "labels",
        "ports": lst(obj({"name": "str", "port": "int", "targetPort": "intstr",
                          "protocol": enum("TCP", "UDP", "SCTP")}, ["port"]))},
        ["selector", "ports"])},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {"rules": RULES},
    ("rbac.authorization.k8s.io/v1", "Role"): {"rules": RULES},
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): {"roleRef": ROLE_REF,
                                                             "subjects": SUBJECTS},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): {"roleRef": ROLE_REF, "subjects": SUBJECTS},
    ("apps/v1", "Deployment"): {"spec": obj({
        "replicas": "int", "strategy": obj({
            "type": enum("Recreate", "RollingUpdate"),
            "rollingUpdate": obj({"maxUnavailable": "intstr", "maxSurge": "intstr"})}),
        "selector": SELECTOR, "template": POD_TEMPLATE}, ["selector", "template"])},
    ("apps/v1", "StatefulSet"): {"spec": obj({
        "replicas": "int", "serviceName": "str",
        "podManagementPolicy": enum("OrderedReady", "Parallel"),
        "updateStrategy": obj({"type": enum("OnDelete", "RollingUpdate")}),
        "persistentVolumeClaimRetentionPolicy": obj({"whenDeleted": enum("Retain", "Delete"),
                                                     "whenScaled": enum("Retain", "Delete")}),
        "selector": SELECTOR, "template": POD_TEMPLATE,
        "volumeClaimTemplates": lst(obj({"metadata": META, "spec": PVC_SPEC},
                                        ["metadata", "spec"]))},
        ["selector", "template", "serviceName"])},
    ("monitoring.coreos.com/v1", "ServiceMonitor"): {"spec": obj({
        "selector": SELECTOR, "jobLabel": "str",
        "namespaceSelector": obj({"matchNames": STRS, "any": "bool"}),
        "endpoints": lst(obj({"port": "str", "path": "str", "interval": "str",
                              "scrapeTimeout": "str", "scheme": enum("http", "https"),
                              "honorLabels": "bool",
                              "basicAuth": obj({"username": SECRET_KEY, "password": SECRET_KEY},
                                               ["username", "password"])}, ["port"]))},
        ["selector", "endpoints"])},
    ("monitoring.coreos.com/v1", "PrometheusRule"): {"spec": obj({"groups": lst(obj({
        "name": "str", "interval": "str",
        "rules": lst(obj({"alert": "str", "record": "str", "expr": "str", "for": "str",
                          "labels": "labels", "annotations": "labels"}, ["expr"]))},
        ["name", "rules"]))}, ["groups"])},
    ("networking.k8s.io/v1", "NetworkPolicy"): {"spec": obj({
        "podSelector": SELECTOR, "policyTypes": lst(enum("Ingress", "Egress")),
        "ingress": lst(obj({
            "from": lst(obj({"podSelector": SELECTOR, "namespaceSelector": SELECTOR})),
            "ports": lst(obj({"port": "intstr", "protocol": enum("TCP", "UDP", "SCTP")}))}))},
        ["podSelector"])},
    ("networking.k8s.io/v1", "Ingress"): {"spec": obj({
        "ingressClassName": "str",
        "tls": lst(obj({"hosts": STRS, "secretName": "str"})),
        "rules": lst(obj({"host": "str", "http": obj({"paths": lst(obj({
            "path": "str", "pathType": enum("Exact", "Prefix", "ImplementationSpecific"),
            "backend": obj({"service": obj({
                "name": "str", "port": obj({"name": "str", "number": "int"})},
                ["name", "port"])}, ["service"])},
            ["pathType", "backend"]))}, ["paths"])}))})},
    ("policy/v1", "PodDisruptionBudget"): {"spec": obj({
        "selector": SELECTOR, "maxUnavailable": "intstr", "minAvailable": "intstr",
        "unhealthyPodEvictionPolicy": enum("IfHealthyBudget", "AlwaysAllow")}, ["selector"])},
}
# Objects whose spec is required.
SPEC_REQUIRED = {"PersistentVolumeClaim", "Service", "Deployment", "StatefulSet", "ServiceMonitor",
                 "PrometheusRule", "NetworkPolicy", "PodDisruptionBudget", "Ingress"}


def validate(v, spec, path, problems):
    if isinstance(spec, tuple) and spec[0] == "obj":
        if not isinstance(v, dict):
            problems.append("%s: an object expected, got %r" % (path, v))
            return
        for k, sub in v.items():
            if k not in spec[1]:
                problems.append("%s.%s: unknown field" % (path, k))
            else:
                validate(sub, spec[1][k], "%s.%s" % (path, k), problems)
        for k in sorted(spec[2] - set(v)):
            problems.append("%s.%s: required" % (path, k))
    elif isinstance(spec, tuple) and spec[0] == "list":
        if not isinstance(v, list):
            problems.append("%s: a list expected, got %r" % (path, v))
            return
        for i, item in enumerate(v):
            validate(item, spec[1], "%s[%d]" % (path, i), problems)
    elif isinstance(spec, tuple) and spec[0] == "enum":
        if v not in spec[1]:
            problems.append("%s: %r is not one of %s" % (path, v, ", ".join(spec[1])))
    elif spec == "str":
        if not isinstance(v, str):
            problems.append("%s: a string expected, got %r" % (path, v))
    elif spec == "int":
        if not isinstance(v, int) or isinstance(v, bool):
            problems.append("%s: an integer expected, got %r" % (path, v))
    elif spec == "bool":
        if not isinstance(v, bool):
            problems.append("%s: true or false expected, got %r" % (path, v))
    elif spec == "intstr":
        if isinstance(v, bool) or not isinstance(v, (int, str)) or \
                (isinstance(v, str) and not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?|\d+%", v)):
            problems.append("%s: a port number, port name or percentage expected, got %r"
                            % (path, v))
    elif spec == "quantity":
        if not isinstance(v, str) or not re.fullmatch(r"\d+(\.\d+)?([KMGTPE]i?|m|)", v):
            problems.append("%s: a quantity expected, got %r" % (path, v))
    elif spec == "labels":
        if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, str)
                                              for k, x in v.items()):
            problems.append("%s: a map of strings expected, got %r" % (path, v))
    else:
        raise ValueError("bad spec %r" % (spec,))


def schema_problems(doc):
    """Structural problems of one rendered object."""
    if not isinstance(doc, dict):
        return ["not an object: %r" % (doc,)]
    key = (doc.get("apiVersion"), doc.get("kind"))
    where = "%s %s" % (doc.get("kind"), (doc.get("metadata") or {}).get("name"))
    if key not in KINDS:
        return ["%s: apiVersion/kind %s/%s is not one we ship" % (where, key[0], key[1])]
    fields = dict(KINDS[key], apiVersion="str", kind="str", metadata=META)
    required = ["apiVersion", "kind", "metadata"]
    if key[1] in SPEC_REQUIRED:
        required.append("spec")
    problems = []
    validate(doc, obj(fields, required), where, problems)
    return problems


# ---- relations between the objects ---------------------------------------------------------

def selects(selector, labels):
    """A LabelSelector (matchLabels only, as we use) selects labels."""
    ml = (selector or {}).get("matchLabels") or {}
    return bool(ml) and all(labels.get(k) == v for k, v in ml.items()) and \
        not (selector or {}).get("matchExpressions")


def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def workloads(docs):
    return by_kind(docs, "Deployment") + by_kind(docs, "StatefulSet")


def container_ports(w):
    c = w["spec"]["template"]["spec"]["containers"][0]
    return {p.get("name"): p["containerPort"] for p in c.get("ports", [])}


def port_matches(port, ports):
    """A port given by number or name is one of ports ({name: number})."""
    return port in ports.values() if isinstance(port, int) else port in ports


def workload_problems(w):
    p = []
    name = "%s %s" % (w["kind"], w["metadata"]["name"])
    tmpl = w["spec"]["template"]
    labels = tmpl["metadata"].get("labels") or {}
    if not selects(w["spec"]["selector"], labels):
        p.append("%s: selector %r does not select its pod labels %r"
                 % (name, w["spec"]["selector"], labels))
    spec = tmpl["spec"]
    c = spec["containers"][0]
    ports = container_ports(w)
    for probe, path in (("startupProbe", "/-/healthy"), ("livenessProbe", "/-/healthy"),
                        ("readinessProbe", "/-/ready")):
        g = (c.get(probe) or {}).get("httpGet") or {}
        if g.get("path") != path:
            p.append("%s: %s is not on %s (%r)" % (name, probe, path, g.get("path")))
        if not port_matches(g.get("port"), ports):
            p.append("%s: %s port %r is no container port %r" % (name, probe, g.get("port"),
                                                                  ports))
    args = c.get("args") or []
    if RELOAD_ARG not in args:
        p.append("%s: %s not in args %r (a changed ConfigMap must be reloaded)"
                 % (name, RELOAD_ARG, args))
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    claims = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
    for m in c.get("volumeMounts", []):
        if m["name"] not in volumes and m["name"] not in claims:
            p.append("%s: volumeMount %s has no volume" % (name, m["name"]))
        if "subPath" in m:
            p.append("%s: volumeMount %s uses subPath (its files never update)"
                     % (name, m["name"]))
    config = [m for m in c.get("volumeMounts", []) if m["mountPath"] == CONFIG_DIR]
    if len(config) != 1:
        p.append("%s: the config directory %s is not mounted once" % (name, CONFIG_DIR))
    else:
        v = volumes.get(config[0]["name"], {})
        sources = (v.get("projected") or {}).get("sources", [])
        if not any("configMap" in s for s in sources) and "configMap" not in v:
            p.append("%s: %s is not from the ConfigMap" % (name, CONFIG_DIR))
        for s in sources:
            if "secret" in s and s["secret"].get("optional") is not True:
                p.append("%s: the Secret's keys are not optional (a bridge-only install has "
                         "no Slack token)" % name)
    return p, labels, ports


def rbac_rules(role):
    out = {}
    for r in role.get("rules", []):
        for g in r["apiGroups"]:
            for res in r["resources"]:
                out.setdefault((g, res), set()).update(r["verbs"])
    return out


def basic_auth_problems(ep):
    """A ServiceMonitor endpoint's basicAuth, when it has one, names the scrape Secret's keys."""
    ba = ep.get("basicAuth")
    if ba is None:
        return []
    p = []
    for field, key in SCRAPE_KEYS.items():
        ref = ba.get(field) or {}
        if (ref.get("name"), ref.get("key")) != (SCRAPE_SECRET, key) or ref.get("optional"):
            p.append("ServiceMonitor basicAuth.%s is %r, want secret %s key %s (not optional)"
                     % (field, ref, SCRAPE_SECRET, key))
    return p


def netpol_problems(np, labels, ports, public):
    """A NetworkPolicy selects the pods for Ingress, every rule names its ports and peers (both
    selectors), the public port (when there is one) is open to the ingress controller only and
    every other port to Alertmanager and Prometheus only (as docs/operating.md documents)."""
    p = []
    s = np["spec"]
    name = "NetworkPolicy %s" % np["metadata"]["name"]
    if not selects(s["podSelector"], labels):
        p.append("%s: podSelector does not select the pods" % name)
    if s.get("policyTypes") != ["Ingress"]:
        p.append("%s: policyTypes %r, want [Ingress]" % (name, s.get("policyTypes")))
    peers = {}
    for rule in s.get("ingress", []):
        if not rule.get("ports"):
            p.append("%s: an ingress rule without ports opens every port" % name)
        if not rule.get("from"):
            p.append("%s: an ingress rule from everywhere" % name)
        for port in rule.get("ports", []):
            if not port_matches(port.get("port"), ports):
                p.append("%s: port %r is no container port %r" % (name, port.get("port"), ports))
            is_public = port.get("port") in (PUBLIC_PORT, public) and public is not None
            for f in rule.get("from", []):
                if not f.get("namespaceSelector") or not f.get("podSelector"):
                    p.append("%s: a peer without both namespaceSelector and podSelector: %r"
                             % (name, f))
                    continue
                peers.setdefault(is_public, []).append(
                    (f["namespaceSelector"].get("matchLabels"), f["podSelector"].get("matchLabels")))
    want = {False: [(NETPOL_NAMESPACE, x) for x in NETPOL_PEERS], True: [INGRESS_PEER]}
    for is_public, got in peers.items():
        if sorted(map(repr, got)) != sorted(map(repr, want[is_public])):
            p.append("%s: peers of the %s port %r, want %r (as docs/operating.md documents)"
                     % (name, "public" if is_public else "main", got, want[is_public]))
    return p


def ingress_problems(docs, services, w, ports):
    """An Ingress routes exactly PUBLIC_PATHS (pathType Exact) to a Service port that targets
    the container port "public", on which the workload's flag serves them: never the main
    port, where the Alertmanager webhook, the page and /metrics are."""
    p = []
    ingresses = by_kind(docs, "Ingress")
    if not ingresses:
        if PUBLIC_PORT in ports:
            p.append("a container port %r without an Ingress" % PUBLIC_PORT)
        return p
    public = ports.get(PUBLIC_PORT)
    args = w["spec"]["template"]["spec"]["containers"][0].get("args") or []
    if public is None or PUBLIC_FLAG % public not in args:
        p.append("the workload does not serve the public endpoints on their container port "
                 "(%s in %r, ports %r)" % (PUBLIC_FLAG % (public or 0), args, ports))
    svc_ports = {(s["metadata"]["name"], sp.get("name")): sp.get("targetPort", sp["port"])
                 for s in services for sp in s["spec"]["ports"]}
    svc_numbers = {(s["metadata"]["name"], sp["port"]): sp.get("targetPort", sp["port"])
                   for s in services for sp in s["spec"]["ports"]}
    for ing in ingresses:
        paths = set()
        for rule in ing["spec"].get("rules", []):
            for path in rule.get("http", {}).get("paths", []):
                paths.add(path.get("path"))
                if path["pathType"] != "Exact":
                    p.append("Ingress path %r: pathType %s, want Exact" % (path.get("path"),
                                                                          path["pathType"]))
                svc = path["backend"]["service"]
                port = svc["port"]
                target = svc_ports.get((svc["name"], port["name"])) if "name" in port else \
                    svc_numbers.get((svc["name"], port.get("number")))
                if target is None:
                    p.append("Ingress path %r: no Service port %s %r" % (path.get("path"),
                                                                        svc["name"], port))
                elif target not in (PUBLIC_PORT, public):
                    p.append("Ingress path %r: to container port %r, not %r"
                             % (path.get("path"), target, PUBLIC_PORT))
        if paths != PUBLIC_PATHS:
            p.append("Ingress %s: paths %r, want exactly %r"
                     % (ing["metadata"]["name"], sorted(paths, key=str), sorted(PUBLIC_PATHS)))
    return p


def relation_problems(docs, leader_election):
    p = []
    ws = workloads(docs)
    if len(ws) != 1:
        return ["%d workloads, want 1" % len(ws)]
    wp, labels, ports = workload_problems(ws[0])
    p += wp
    services = by_kind(docs, "Service")
    for s in services:
        if not selects({"matchLabels": s["spec"]["selector"]}, labels):
            p.append("Service %s: selector does not select the pods" % s["metadata"]["name"])
        for sp in s["spec"]["ports"]:
            if not port_matches(sp.get("targetPort", sp["port"]), ports):
                p.append("Service %s: targetPort %r is no container port"
                         % (s["metadata"]["name"], sp.get("targetPort")))
    for sm in by_kind(docs, "ServiceMonitor"):
        svc = [s for s in services if selects(sm["spec"]["selector"],
                                              s["metadata"].get("labels") or {})]
        if not svc:
            p.append("ServiceMonitor %s selects no Service" % sm["metadata"]["name"])
        names = {sp.get("name") for s in svc for sp in s["spec"]["ports"]}
        for ep in sm["spec"]["endpoints"]:
            if ep["port"] not in names:
                p.append("ServiceMonitor endpoint port %r is no Service port %r"
                         % (ep["port"], sorted(names)))
            if ep.get("path", "/metrics") != "/metrics":
                p.append("ServiceMonitor endpoint path %r" % ep.get("path"))
            p += basic_auth_problems(ep)
    public = ports.get(PUBLIC_PORT)
    for np in by_kind(docs, "NetworkPolicy"):
        p += netpol_problems(np, labels, ports, public)
    p += ingress_problems(docs, services, ws[0], ports)
    for pdb in by_kind(docs, "PodDisruptionBudget"):
        if not selects(pdb["spec"]["selector"], labels):
            p.append("PodDisruptionBudget: selector does not select the pods")
        if leader_election:
            p.append("PodDisruptionBudget with leader election: it would block draining the "
                     "leader's node")
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs
             if d["kind"] in ("ClusterRole", "Role")}
    cr = [d for (k, _), d in roles.items() if k == "ClusterRole"]
    if len(cr) != 1 or rbac_rules(cr[0]) != CLUSTER_RULES:
        p.append("ClusterRole rules %r, want %r" % ([rbac_rules(d) for d in cr], CLUSTER_RULES))
    lease = [d for (k, _), d in roles.items() if k == "Role"]
    if leader_election and (len(lease) != 1 or rbac_rules(lease[0]) != LEASE_RULES):
        p.append("Role rules %r, want %r" % ([rbac_rules(d) for d in lease], LEASE_RULES))
    if not leader_election and (lease or by_kind(docs, "RoleBinding")):
        p.append("a Role for the Lease without leader election")
    for b in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding"):
        ref = b["roleRef"]
        if (ref["kind"], ref["name"]) not in roles:
            p.append("%s %s refers to a missing %s %s" % (b["kind"], b["metadata"]["name"],
                                                          ref["kind"], ref["name"]))
    return p


# ---- rendering -----------------------------------------------------------------------------

def kustomize_cmd():
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return None


def render(cmd, resources, components, tmp):
    """Render a kustomization of resources and components (dirs) written in tmp."""
    k = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
         "resources": [os.path.relpath(r, tmp) for r in resources],
         "components": [os.path.relpath(c, tmp) for c in components]}
    with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
        yaml.safe_dump(k, f)
    r = subprocess.run(cmd + [tmp], capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip() or r.stdout.strip())
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def component_dirs():
    return sorted(d for d in glob.glob(os.path.join(COMPONENTS, "*"))
                  if os.path.isfile(os.path.join(d, "kustomization.yaml")))


def check_render(cmd, name, resources, components, leader_election):
    with tempfile.TemporaryDirectory(prefix="ab-k8s-") as tmp:
        try:
            docs = render(cmd, resources, components, tmp)
        except (RuntimeError, subprocess.TimeoutExpired, yaml.YAMLError) as e:
            report("kustomize %s" % name, [str(e)])
            return None
    p = []
    for d in docs:
        p += schema_problems(d)
    report("kustomize %s: %d objects match the schema" % (name, len(docs)), p)
    if p:
        return docs
    p = relation_problems(docs, leader_election)
    kinds = {d["kind"] for d in docs}
    for c in components:
        want = COMPONENT_KINDS.get(os.path.basename(c))
        if want not in kinds:
            p.append("component %s added no %s" % (os.path.basename(c), want))
    for d in docs:
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding") and \
                d["metadata"].get("namespace") != "alertbridge":
            p.append("%s %s is not in namespace alertbridge" % (d["kind"], d["metadata"]["name"]))
    report("kustomize %s: selectors, ports, probes, config mount, RBAC" % name, p)
    return docs


# ---- checks --------------------------------------------------------------------------------

def check_schema_self_test():
    """The schema check must fail on a typo, a wrong type, a missing field, a bad selector."""
    with open(os.path.join(BASE, "deployment.yaml"), encoding="utf-8") as f:
        dep = yaml.safe_load(f)
    p = []
    if schema_problems(dep):
        p.append("the base Deployment itself fails: %r" % schema_problems(dep))
    c = copy.deepcopy(dep)
    cont = c["spec"]["template"]["spec"]["containers"][0]
    cont["readinesProbe"] = cont.pop("readinessProbe")
    if "Deployment alertbridge.spec.template.spec.containers[0].readinesProbe: unknown field" \
            not in schema_problems(c):
        p.append("a typo'd readinessProbe passed: %r" % schema_problems(c))
    c = copy.deepcopy(dep)
    c["spec"]["selector"]["matchLabel"] = c["spec"]["selector"].pop("matchLabels")
    if not any("matchLabel: unknown field" in x for x in schema_problems(c)):
        p.append("a typo'd matchLabels passed")
    c = copy.deepcopy(dep)
    c["spec"]["replicas"] = "1"
    if not any("replicas: an integer expected" in x for x in schema_problems(c)):
        p.append("replicas as a string passed")
    c = copy.deepcopy(dep)
    del c["spec"]["template"]["spec"]["containers"][0]["image"]
    if not any("image: required" in x for x in schema_problems(c)):
        p.append("a container without image passed")
    c = copy.deepcopy(dep)
    c["spec"]["template"]["metadata"]["labels"] = {"app.kubernetes.io/name": "other"}
    if not workload_problems(c)[0]:
        p.append("a selector that misses its pods passed")
    report("schema check rejects a typo, a wrong type, a missing field, a bad selector "
           "(self-test)", p)


def check_components_are_components():
    p = []
    dirs = component_dirs()
    names = {os.path.basename(d) for d in dirs}
    if names != set(COMPONENT_KINDS):
        p.append("components %s, want %s" % (sorted(names), sorted(COMPONENT_KINDS)))
    for d in dirs:
        with open(os.path.join(d, "kustomization.yaml"), encoding="utf-8") as f:
            k = yaml.safe_load(f)
        if (k.get("apiVersion"), k.get("kind")) != ("kustomize.config.k8s.io/v1alpha1",
                                                    "Component"):
            p.append("%s: %s/%s, want kustomize.config.k8s.io/v1alpha1 Component"
                     % (os.path.basename(d), k.get("apiVersion"), k.get("kind")))
    report("components/: kind Component, each one known", p)


def check_prometheus_rule_generated():
    committed = os.path.join(COMPONENTS, "prometheus-rule", "prometheusrule.yaml")
    p = []
    r = subprocess.run(["sh", GENERATE], capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if r.returncode != 0:
        report("generate.sh runs", ["exit %d: %s" % (r.returncode, r.stderr)])
        return
    with open(committed, encoding="utf-8") as f:
        text = f.read()
    if r.stdout != text:
        p.append("prometheusrule.yaml differs from what generate.sh prints: run "
                 "sh deploy/kubernetes/components/prometheus-rule/generate.sh > "
                 "deploy/kubernetes/components/prometheus-rule/prometheusrule.yaml")
    rule = yaml.safe_load(text)
    groups = []
    for path in RULE_FILES:
        with open(path, encoding="utf-8") as f:
            groups += yaml.safe_load(f)["groups"]
    if rule["spec"]["groups"] != groups:
        p.append("its groups are not those of %s" % ", ".join(map(os.path.basename, RULE_FILES)))
    report("PrometheusRule = generate.sh of janitor-rules.yml and alertbridge-rules.yml", p)
    # The comparison must be able to fail: a changed rule file changes the output.
    with tempfile.TemporaryDirectory(prefix="ab-gen-") as tmp:
        changed = os.path.join(tmp, "alertbridge-rules.yml")
        with open(RULE_FILES[1], encoding="utf-8") as f:
            src = f.read()
        with open(changed, "w") as f:
            f.write(src.replace("severity: critical", "severity: page", 1))
        r = subprocess.run(["sh", GENERATE, RULE_FILES[0], changed], capture_output=True,
                           text=True, timeout=CMD_TIMEOUT_S)
        report("generate.sh follows the rule files (self-test)",
               [] if r.returncode == 0 and r.stdout != text and "severity: page" in r.stdout
               else ["exit %d; output unchanged" % r.returncode])


def check_operating_docs():
    with open(OPERATING, encoding="utf-8") as f:
        text = f.read()
    p = []
    for name in COMPONENT_KINDS:
        if "components/%s" % name not in text:
            p.append("docs/operating.md does not say how to enable components/%s" % name)
    for labels in NETPOL_PEERS + [NETPOL_NAMESPACE] + list(INGRESS_PEER):
        for k, v in labels.items():
            if "%s: %s" % (k, v) not in text:
                p.append("docs/operating.md does not name the label %s: %s the NetworkPolicy expects"
                         % (k, v))
    report("docs/operating.md: each component and the NetworkPolicy's labels", p)


def rendered_config(docs):
    """The alertbridge.yml of the rendered ConfigMap alertbridge-config, parsed, and its text."""
    cms = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] == "alertbridge-config"]
    if len(cms) != 1:
        raise ValueError("%d ConfigMaps alertbridge-config" % len(cms))
    text = cms[0]["data"]["alertbridge.yml"]
    return yaml.safe_load(text), text


def config_volume_files(w):
    """Files of the volume mounted at CONFIG_DIR: {path: (source kind, source name)}."""
    spec = w["spec"]["template"]["spec"]
    c = spec["containers"][0]
    mounts = [m for m in c.get("volumeMounts", []) if m["mountPath"] == CONFIG_DIR]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    out = {}
    for m in mounts:
        for src in (volumes.get(m["name"], {}).get("projected") or {}).get("sources", []):
            for kind, ref in src.items():
                for item in ref.get("items", []):
                    out[item["path"]] = (kind, ref["name"])
    return out


def postgres_problems(docs):
    """What the postgres/ overlay must be: shared store, no claim, budget, password file."""
    p = []
    deps = by_kind(docs, "Deployment")
    if by_kind(docs, "StatefulSet") or len(deps) != 1:
        return ["want one Deployment and no StatefulSet, got %d Deployments, %d StatefulSets"
                % (len(deps), len(by_kind(docs, "StatefulSet")))]
    w = deps[0]
    if not isinstance(w["spec"].get("replicas"), int) or w["spec"]["replicas"] < 2:
        p.append("replicas %r, want 2 or more" % w["spec"].get("replicas"))
    if by_kind(docs, "PersistentVolumeClaim"):
        p.append("a PersistentVolumeClaim: the store is PostgreSQL")
    if w["spec"].get("volumeClaimTemplates"):
        p.append("volumeClaimTemplates: the store is PostgreSQL")
    for v in w["spec"]["template"]["spec"].get("volumes", []):
        if "persistentVolumeClaim" in v:
            p.append("volume %s is a claim" % v["name"])
    pdbs = by_kind(docs, "PodDisruptionBudget")
    if len(pdbs) != 1 or pdbs[0]["spec"].get("minAvailable") != 1 or \
            "maxUnavailable" in pdbs[0]["spec"]:
        p.append("want one PodDisruptionBudget with minAvailable: 1, got %r"
                 % [d["spec"] for d in pdbs])
    cfg, _ = rendered_config(docs)
    db = cfg.get("database") or ""
    if not re.match(r"postgres(ql)?://", db):
        p.append("database %r is not a PostgreSQL URI" % db)
    if (cfg.get("leader_election") or {}).get("enabled") or \
            ((cfg.get("janitor") or {}).get("leader_election") or {}).get("enabled"):
        p.append("leader election on: only the leader would be ready (the budget would block "
                 "drains); the advisory lock chooses the worker")
    pw = cfg.get("database_password_file") or ""
    files = config_volume_files(w)
    if not pw.startswith(CONFIG_DIR + "/"):
        p.append("database_password_file %r is not in %s" % (pw, CONFIG_DIR))
    elif files.get(pw[len(CONFIG_DIR) + 1:], ("none",))[0] != "secret":
        p.append("database_password_file %s is not projected from a Secret (%r)" % (pw, files))
    return p


def check_config_accepted(docs, name):
    """alertbridge check-config accepts the rendered alertbridge.yml, its files made in a tmp."""
    what = "%s: check-config accepts the rendered alertbridge.yml" % name
    if not os.access(BIN, os.X_OK):
        skip(what, "no binary at %s (ALERTBRIDGE_BIN)" % BIN)
        return
    _, text = rendered_config(docs)
    files = config_volume_files(workloads(docs)[0])
    with tempfile.TemporaryDirectory(prefix="ab-k8s-cfg-") as tmp:
        for path in files:
            if path != "alertbridge.yml":
                with open(os.path.join(tmp, path), "w") as f:
                    f.write("test-%s\n" % path)
        cfg = os.path.join(tmp, "alertbridge.yml")
        with open(cfg, "w") as f:
            f.write(text.replace(CONFIG_DIR + "/", tmp + "/"))
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
        r = subprocess.run([BIN, "check-config", cfg], capture_output=True, text=True, env=env,
                           cwd=tmp, timeout=CMD_TIMEOUT_S)
        report(what, [] if r.returncode == 0 else
               ["exit %d: %s" % (r.returncode, (r.stdout + r.stderr).strip())])
        # It must be able to fail: the password file the config names, missing.
        os.unlink(os.path.join(tmp, "database-password"))
        r = subprocess.run([BIN, "check-config", cfg], capture_output=True, text=True, env=env,
                           cwd=tmp, timeout=CMD_TIMEOUT_S)
        out = r.stdout + r.stderr
        report("%s: check-config refuses it without the password file (self-test)" % name,
               [] if r.returncode != 0 and "database_password_file: cannot read" in out else
               ["exit %d: %s" % (r.returncode, out.strip())])


def check_postgres(docs):
    report("postgres: Deployment of 2+ replicas, no claim, minAvailable 1, password from a "
           "Secret", postgres_problems(docs))
    # The checks must be able to fail.
    p = []
    bad = copy.deepcopy(docs)
    w = by_kind(bad, "Deployment")[0]
    w["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}}]
    if not any("volumeClaimTemplates" in x for x in postgres_problems(bad)):
        p.append("a Deployment with volumeClaimTemplates passed")
    bad = copy.deepcopy(docs)
    for v in by_kind(bad, "Deployment")[0]["spec"]["template"]["spec"]["volumes"]:
        for src in (v.get("projected") or {}).get("sources", []):
            if "configMap" in src:
                src["configMap"].setdefault("items", []).append(
                    {"key": "pw", "path": "database-password"})
            if "secret" in src:
                src["secret"]["items"] = [i for i in src["secret"].get("items", [])
                                          if i["path"] != "database-password"]
    if not any("not projected from a Secret" in x for x in postgres_problems(bad)):
        p.append("a password file from the ConfigMap passed")
    report("postgres checks reject a claim and a password file not from a Secret (self-test)", p)
    check_config_accepted(docs, "postgres")


def check_renders():
    cmd = kustomize_cmd()
    if cmd is None:
        skip("kustomize renders", "neither kubectl nor kustomize is installed")
        return
    comps = component_dirs()
    check_render(cmd, "deploy/kubernetes", [K8S], [], False)
    check_render(cmd, "leader-election", [LE], [], True)
    pg = check_render(cmd, "postgres", [PG], [], False)
    if pg is not None:
        check_postgres(pg)
    for c in comps:
        name = os.path.basename(c)
        with_target = [os.path.join(COMPONENTS, PATCHES[name]), c] if name in PATCHES else [c]
        docs = check_render(cmd, "base + %s" % " + ".join(map(os.path.basename, with_target)),
                            [BASE], with_target, False)
        if docs is not None and name in PATCHES:
            check_basic_auth(docs, name)
        if docs is not None and name == "public-endpoints":
            check_public_self_test(docs)
    check_render(cmd, "base + every component", [BASE], comps, False)
    le_comps = [c for c in comps if os.path.basename(c) not in NOT_WITH_LEADER_ELECTION]
    check_render(cmd, "leader-election + %s" % " + ".join(map(os.path.basename, le_comps)),
                 [LE], le_comps, True)
    pg_comps = [c for c in comps if os.path.basename(c) not in NOT_WITH_POSTGRES]
    check_render(cmd, "postgres + %s" % " + ".join(map(os.path.basename, pg_comps)),
                 [PG], pg_comps, False)


def check_basic_auth(docs, name):
    """components/service-monitor-basic-auth gives every endpoint credentials, and its example
    Secret is the one they name, in the ServiceMonitor's namespace (where the operator reads it)."""
    p = []
    for sm in by_kind(docs, "ServiceMonitor"):
        for ep in sm["spec"]["endpoints"]:
            if "basicAuth" not in ep:
                p.append("ServiceMonitor endpoint %r has no basicAuth" % ep.get("port"))
    with open(os.path.join(COMPONENTS, name, "secret.example.yaml"), encoding="utf-8") as f:
        secret = yaml.safe_load(f)
    if (secret.get("kind"), secret["metadata"].get("name"),
            secret["metadata"].get("namespace")) != ("Secret", SCRAPE_SECRET, "alertbridge"):
        p.append("secret.example.yaml is not Secret %s in namespace alertbridge" % SCRAPE_SECRET)
    if set(secret.get("stringData") or {}) != set(SCRAPE_KEYS.values()):
        p.append("secret.example.yaml keys %s, want %s"
                 % (sorted(secret.get("stringData") or {}), sorted(SCRAPE_KEYS.values())))
    report("%s: the ServiceMonitor sends the Secret %s" % (name, SCRAPE_SECRET), p)


def check_public_self_test(docs):
    """The public-endpoints checks fail on an Ingress that also routes "/", one that routes to
    the main port, a workload without the flag, and a NetworkPolicy opening the public port to
    Alertmanager."""
    p = []
    if relation_problems(docs, False):
        p.append("the render itself fails: %r" % relation_problems(docs, False))

    def mutated(fn):
        c = copy.deepcopy(docs)
        fn(c)
        return relation_problems(c, False)

    def add_root(c):
        paths = by_kind(c, "Ingress")[0]["spec"]["rules"][0]["http"]["paths"]
        paths.append(dict(copy.deepcopy(paths[0]), path="/"))

    def to_main(c):
        paths = by_kind(c, "Ingress")[0]["spec"]["rules"][0]["http"]["paths"]
        paths[0]["backend"]["service"]["port"] = {"name": "http"}

    def no_flag(c):
        cont = workloads(c)[0]["spec"]["template"]["spec"]["containers"][0]
        cont["args"] = [a for a in cont["args"] if not a.startswith("--web.public-listen")]

    def open_public(c):
        np = [d for d in by_kind(c, "NetworkPolicy") if d["metadata"]["name"].endswith("public")]
        np[0]["spec"]["ingress"][1]["ports"].append({"port": 9096, "protocol": "TCP"})

    for what, fn in (("an Ingress path /", add_root), ("a path to the main port", to_main),
                     ("a workload without the flag", no_flag),
                     ("the public port open to Alertmanager", open_public)):
        if not mutated(fn):
            p.append("%s passed" % what)
    report("public-endpoints checks reject a wider exposure (self-test)", p)


def check_service_monitor_plain():
    """Without the basic-auth component the ServiceMonitor sends no credentials (web.auth is
    off by default), and the basicAuth check fails on a wrong reference (self-test)."""
    p = []
    with open(os.path.join(COMPONENTS, "service-monitor", "servicemonitor.yaml"),
              encoding="utf-8") as f:
        sm = yaml.safe_load(f)
    if any("basicAuth" in ep for ep in sm["spec"]["endpoints"]):
        p.append("components/service-monitor sends credentials")
    bad = {"port": "http", "basicAuth": {"username": {"name": SCRAPE_SECRET, "key": "user"},
                                         "password": {"name": "other", "key": "password"}}}
    if len(basic_auth_problems(bad)) != 2:
        p.append("basic_auth_problems() missed a wrong reference")
    report("service-monitor alone: no credentials; basicAuth check self-test", p)


def guarded(fn):
    CHECKS.guarded((OSError, ValueError, KeyError, TypeError, AttributeError, IndexError,
                    yaml.YAMLError, subprocess.TimeoutExpired), fn)


def main():
    for fn in (check_schema_self_test, check_components_are_components,
               check_service_monitor_plain,
               check_prometheus_rule_generated, check_operating_docs, check_renders):
        guarded(fn)
    return CHECKS.end()


if __name__ == "__main__":
    sys.exit(main())
