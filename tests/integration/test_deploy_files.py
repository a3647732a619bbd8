#!/usr/bin/env python3
# run.sh: weight 15, asan skip
# (files and tools (kustomize, dpkg, systemd-analyze): no code of alertbridge's worth instrumenting again)
"""test_deploy_files.py - checks the deployment artefacts in deploy/ by reading them: the
kustomize base and overlays (files exist, RBAC exactly as DESIGN.md, pod spec, the ConfigMaps'
alertbridge.yml through `alertbridge check-config`: the base's, and postgres/'s on a PostgreSQL
URI with its password file), the Dockerfile's packages against apt-cache and the binary's shared
libraries, the systemd unit (text rules, systemd-analyze verify) and the systemd example for two
hosts on one PostgreSQL (deploy/systemd/alertbridge-postgres.yml through check-config).
Python stdlib only; YAML is read with simple line rules that the files are written to follow.
Prints one line per check and, last, "N passed, N failed"; exits 1 on any failure.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Checks  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("ALERTBRIDGE_BIN") or os.path.join(SRC, "alertbridge")
K8S = os.path.join(SRC, "deploy", "kubernetes")
BASE = os.path.join(K8S, "base")
LE = os.path.join(K8S, "leader-election")
PG = os.path.join(K8S, "postgres")
SYSTEMD_PG = os.path.join(SRC, "deploy", "systemd", "alertbridge-postgres.yml")
# The files postgres/ projects from the Secret "alertbridge-database" into /etc/alertbridge.
PG_FILES = ("database-password", "database-ca.crt")
CMD_TIMEOUT_S = 60

LABEL = "app.kubernetes.io/name: alertbridge"
CONFIG_ARG = "--config.file=/etc/alertbridge/alertbridge.yml"
# The ConfigMap's changes reach the mounted directory; the service polls the file (item 1 of
# issue 8) and reloads it without a restart.
RELOAD_ARG = "--config.auto-reload-interval=30s"

# Exactly the calls janitor/kube.c makes, as (apiGroup, resource) -> verbs: pods GET (one pod),
# list (the sweep), PATCH (annotations), DELETE; events POST; replicasets GET (a pod's
# Deployment, kube_pod_controller); deployments/scale and statefulsets/scale PATCH; jobs DELETE.
# No events.k8s.io (the Events are posted to core/v1), no get on deployments, statefulsets or
# jobs (never read).  The Lease's (ha/leader.c: GET, POST, PUT) are LEASE_RULES, in the
# leader-election overlay only.
CLUSTER_RULES = {
    ("", "pods"): {"get", "list", "patch", "delete"},
    ("", "events"): {"create"},
    ("apps", "replicasets"): {"get"},
    ("apps", "deployments/scale"): {"patch"},
    ("apps", "statefulsets/scale"): {"patch"},
    ("batch", "jobs"): {"delete"},
}
LEASE_RULES = {("coordination.k8s.io", "leases"): {"get", "create", "update"}}

# Packages every debian:12-slim image already has; the runtime stage need not install them.
BASE_IMAGE_PACKAGES = {"libc6", "libcrypt1", "libgcc-s1", "libstdc++6", "zlib1g"}
# Installed in the runtime stage though no library of the binary comes from it.
RUNTIME_EXTRA_PACKAGES = {"ca-certificates"}
# Issue 8: "runtime stage <= 40 MB of libraries" (decimal megabytes).
LIBRARY_BUDGET_BYTES = 40 * 1000 * 1000
# Libraries that only test or sanitizer builds link.
TEST_ONLY_PACKAGES = {"libcmocka0", "libasan8", "libubsan1"}

CHECKS = Checks()
report, skip = CHECKS.report, CHECKS.skip


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=CMD_TIMEOUT_S, **kw)


# ---- minimal YAML reading -----------------------------------------------------------------

def documents(text):
    """The documents of a multi-document YAML file, comment lines dropped."""
    docs, cur = [], []
    for line in text.splitlines():
        if line.strip() == "---":
            docs.append(cur)
            cur = []
        elif not line.lstrip().startswith("#"):
            cur.append(line)
    docs.append(cur)
    return ["\n".join(d) for d in docs if any(l.strip() for l in d)]


def unmatched(doc, rules):
    """The problem of each (regex, problem) of rules whose regex (re.M) is nowhere in doc."""
    return [problem for rx, problem in rules if not re.search(rx, doc, re.M)]


def top(doc, key):
    """The value of a top-level scalar key, or None."""
    m = re.search(r"^%s:\s*(.*?)\s*$" % re.escape(key), doc, re.M)
    return m.group(1) if m else None


def flow_list(value):
    """'[a, "b", c]' -> ['a', 'b', 'c']; None when value is not a flow list."""
    value = value.strip()
    if not (value.startswith("[") and value.endswith("]")):
        return None
    return [v.strip().strip('"\'') for v in value[1:-1].split(",") if v.strip()]


def list_block(doc, key):
    """Items of a top-level block list 'key:\\n  - item' (as strings)."""
    m = re.search(r"^%s:\s*\n((?:[ \t]+.*\n?|\s*\n)*)" % re.escape(key), doc, re.M)
    if not m:
        return []
    items, item_indent = [], None
    for line in m.group(1).splitlines():
        # "- file", "- path: file", or "path: file" as a key of an item's own mapping (a
        # patch with a target); an item that opens a mapping ("- target:") names no file, nor
        # does anything deeper (an inline "patch: |" and the paths of its operations).
        dash = re.match(r"^(\s*)-\s*(\S.*?)\s*$", line)
        if dash and item_indent is not None and len(dash.group(1)) > item_indent:
            continue  # a list inside an item (an inline patch's operations)
        if dash:
            item_indent = len(dash.group(1))
            im = re.match(r"^(?:path:\s*)?([^\s:]\S*)$", dash.group(2))
            if im and not im.group(1).endswith(":"):
                items.append(im.group(1))
            continue
        key = re.match(r"^(\s*)path:\s*(\S+)\s*$", line)
        if key and item_indent is not None and len(key.group(1)) == item_indent + 2:
            items.append(key.group(2))
    return items


def metadata_block(doc):
    m = re.search(r"^metadata:\s*\n((?:[ ]+.*\n?)*)", doc, re.M)
    return m.group(1) if m else ""


def rbac_rules(doc):
    """The rules: of a Role/ClusterRole as {(group, resource): verbs}; problems in a list."""
    rules, problems = {}, []
    m = re.search(r"^rules:\s*\n((?:[ ]+.*\n?)*)", doc, re.M)
    if not m:
        return rules, ["no rules:"]
    chunks = re.split(r"^\s*-\s+(?=apiGroups:)", m.group(1), flags=re.M)
    for chunk in chunks:
        if not chunk.strip():
            continue
        fields = {}
        for key in ("apiGroups", "resources", "verbs"):
            km = re.search(r"^\s*%s:\s*(.*)$" % key, chunk, re.M)
            vals = flow_list(km.group(1)) if km else None
            if vals is None:
                problems.append("rule without a flow list for %s: %r" % (key, chunk.strip()))
                break
            fields[key] = vals
        else:
            for g in fields["apiGroups"]:
                for r in fields["resources"]:
                    rules.setdefault((g, r), set()).update(fields["verbs"])
    return rules, problems


def compare_rules(got, want):
    problems = []
    for key in sorted(set(got) | set(want)):
        g, w = got.get(key, set()), want.get(key, set())
        if g != w:
            problems.append("%s %s: verbs %s, want %s" % (
                key[0] or "core", key[1], sorted(g), sorted(w)))
    return problems


def configmap_yml(path):
    """The alertbridge.yml block scalar of a ConfigMap file, dedented; None if absent."""
    lines = read(path).splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)alertbridge\.yml:\s*\|\s*$", line)
        if not m:
            continue
        out, indent = [], None
        for body in lines[i + 1:]:
            if body.strip() == "":
                out.append("")
                continue
            lead = len(body) - len(body.lstrip(" "))
            if indent is None:
                indent = lead
            if lead < indent or lead <= len(m.group(1)):
                break
            out.append(body[indent:])
        return "\n".join(out).rstrip("\n") + "\n"
    return None


# ---- kustomize ----------------------------------------------------------------------------

def kustomize_dirs():
    return sorted(os.path.dirname(p) for p in
                  glob.glob(os.path.join(K8S, "**", "kustomization.yaml"), recursive=True))


def listed_files(kdir):
    """Files named by a kustomization (resources and patches); directories are kustomizations."""
    doc = "\n".join(documents(read(os.path.join(kdir, "kustomization.yaml"))))
    return [os.path.normpath(os.path.join(kdir, p))
            for p in list_block(doc, "resources") + list_block(doc, "patches")]


def check_kustomizations():
    names = []
    for kdir in kustomize_dirs():
        rel = os.path.relpath(kdir, SRC)
        problems = []
        entries = listed_files(kdir)
        doc = read(os.path.join(kdir, "kustomization.yaml"))
        if not entries and not re.search(r"^patches:\s*\n\s+-", doc, re.M):
            problems.append("lists no resources and no patches")
        for p in entries:
            if os.path.isdir(p):
                if not os.path.isfile(os.path.join(p, "kustomization.yaml")):
                    problems.append("%s: a directory without kustomization.yaml" % p)
            elif not os.path.isfile(p):
                problems.append("%s: listed but missing" % os.path.relpath(p, SRC))
            if os.path.basename(p).startswith("secret.example"):
                problems.append("%s: placeholder secrets must not be applied" % p)
        report("%s: every listed file exists, no example secret" % rel, problems)
        names += [p for p in entries if os.path.isfile(p)]
    return names


def check_labels(files):
    problems = []
    for path in files:
        for doc in documents(read(path)):
            if "$patch: delete" in doc:
                continue
            if LABEL not in metadata_block(doc):
                problems.append("%s: %s %s lacks label %s" % (
                    os.path.relpath(path, SRC), top(doc, "kind"),
                    re.search(r"name:\s*(\S+)", metadata_block(doc) or "name: ?").group(1), LABEL))
    report("every object is labelled %s" % LABEL, problems)


def rbac_docs(path):
    docs = {}
    for doc in documents(read(path)):
        docs[top(doc, "kind")] = doc
    return docs


def check_binding(docs, kind, role):
    doc = docs[kind]
    role_name = re.search(r"name:\s*(\S+)", metadata_block(docs[role])).group(1)
    p = []
    if not re.search(r"kind: %s\s*\n\s*name: %s\s*$" % (role, re.escape(role_name)), doc, re.M):
        p.append("%s does not refer to %s %s" % (kind, role, role_name))
    if not re.search(r"kind: ServiceAccount\s*\n\s*name: alertbridge\s*\n\s*"
                     r"namespace: alertbridge", doc):
        p.append("%s does not bind ServiceAccount alertbridge/alertbridge" % kind)
    return p


def check_rbac():
    docs = rbac_docs(os.path.join(BASE, "rbac.yaml"))
    problems = ["base/rbac.yaml: no %s" % k for k in ("ClusterRole", "ClusterRoleBinding")
                if k not in docs]
    problems += ["base/rbac.yaml: a %s: the Lease's access belongs to leader-election/" % k
                 for k in ("Role", "RoleBinding") if k in docs]
    if problems:
        report("base/rbac.yaml: the ClusterRole and its binding only", problems)
        return
    got, p = rbac_rules(docs["ClusterRole"])
    report("ClusterRole: exactly the calls janitor/kube.c makes",
           p + compare_rules(got, CLUSTER_RULES))
    report("ClusterRoleBinding: to ServiceAccount alertbridge",
           check_binding(docs, "ClusterRoleBinding", "ClusterRole"))

    path = os.path.join(LE, "rbac-lease.yaml")
    docs = rbac_docs(path) if os.path.isfile(path) else {}
    p = ["leader-election/rbac-lease.yaml: no %s" % k for k in ("Role", "RoleBinding")
         if k not in docs]
    if not p:
        got, p = rbac_rules(docs["Role"])
        p += compare_rules(got, LEASE_RULES)
        if "namespace: alertbridge" not in metadata_block(docs["Role"]):
            p.append("Role is not in namespace alertbridge")
        p += check_binding(docs, "RoleBinding", "Role")
    if "rbac-lease.yaml" not in list_block("\n".join(documents(read(
            os.path.join(LE, "kustomization.yaml")))), "resources"):
        p.append("leader-election/kustomization.yaml does not list rbac-lease.yaml")
    report("leader-election: Role leases get/create/update in namespace alertbridge, bound", p)

    # The checker itself must notice a change: one extra verb.
    mutated = rbac_docs(os.path.join(BASE, "rbac.yaml"))["ClusterRole"].replace(
        "verbs: [get, list, patch, delete]", "verbs: [get, list, watch, patch, delete]")
    got, _ = rbac_rules(mutated)
    diff = compare_rules(got, CLUSTER_RULES)
    report("RBAC check rejects an extra verb (self-test)",
           [] if diff == ["core pods: verbs ['delete', 'get', 'list', 'patch', 'watch'], "
                          "want ['delete', 'get', 'list', 'patch']"]
           else ["mutated ClusterRole gave %r" % diff])


def pod_problems(doc, what):
    """Rules both the Deployment and the StatefulSet's pod templates must follow."""
    want = [
        ("runs serve with the config file, reloading it",
         r"args:\s*\[serve,\s*%s,\s*%s\]" % (re.escape(CONFIG_ARG), re.escape(RELOAD_ARG))),
        ("port 9095 named http", r"- name: http\s*\n\s*containerPort: 9095"),
        ("liveness on /-/healthy",
         r"livenessProbe:\s*\n\s*httpGet: \{path: /-/healthy, port: http\}"),
        ("readiness on /-/ready",
         r"readinessProbe:\s*\n\s*httpGet: \{path: /-/ready, port: http\}"),
        ("resources", r"resources:\s*\n\s*requests: \{cpu: \S+, memory: \S+\}\s*\n"
                      r"\s*limits: \{memory: \S+\}"),
        ("runAsNonRoot", r"runAsNonRoot: true"),
        ("non-root uid", r"runAsUser: [1-9][0-9]*"),
        ("read-only root filesystem", r"readOnlyRootFilesystem: true"),
        ("no privilege escalation", r"allowPrivilegeEscalation: false"),
        ("capabilities dropped", r"drop: \[ALL\]"),
        ("scrape annotation", r'prometheus\.io/scrape: "true"'),
        ("scrape port", r'prometheus\.io/port: "9095"'),
        ("scrape path", r"prometheus\.io/path: /metrics"),
        ("service account", r"serviceAccountName: alertbridge"),
        ("database volume mounted", r"- name: data\s*\n\s*mountPath: /var/lib/alertbridge"),
        ("writable /tmp", r"- name: tmp\s*\n\s*mountPath: /tmp"),
        ("config and secret projected", r"- name: config\s*\n\s*mountPath: /etc/alertbridge\s*\n"
                                        r"\s*readOnly: true"),
    ]
    return ["%s: %s" % (what, name) for name, rx in want if not re.search(rx, doc)]


def projected_paths(doc):
    """Paths the projected config volume provides in /etc/alertbridge -> 'configMap'|'secret'."""
    out = {}
    m = re.search(r"projected:\s*\n((?:\s{10,}.*\n)*)", doc)
    if not m:
        return out
    source = None
    for line in m.group(1).splitlines():
        sm = re.match(r"^\s*- (configMap|secret):", line)
        if sm:
            source = sm.group(1)
        im = re.search(r"\{key: (\S+), path: (\S+)\}", line)
        if im and source:
            out[im.group(2)] = source
    return out


def check_workloads():
    dep = "\n".join(documents(read(os.path.join(BASE, "deployment.yaml"))))
    p = pod_problems(dep, "deployment") + unmatched(dep, [
        (r"^  replicas: 1$", "deployment: replicas must be 1 (one sqlite writer)"),
        (r"strategy:\s*\n\s*type: Recreate",
         "deployment: strategy must be Recreate (ReadWriteOnce claim, one writer)"),
        (r"persistentVolumeClaim:\s*\n\s*claimName: alertbridge-data",
         "deployment: data volume is not the claim alertbridge-data")])
    pvc = "\n".join(documents(read(os.path.join(BASE, "pvc.yaml"))))
    if top(pvc, "kind") != "PersistentVolumeClaim" or "name: alertbridge-data" not in pvc:
        p.append("pvc.yaml: no PersistentVolumeClaim alertbridge-data")
    report("base deployment: one replica, probes, security, scrape, claim", p)

    sts = "\n".join(documents(read(os.path.join(LE, "statefulset.yaml"))))
    p = pod_problems(sts, "statefulset") + unmatched(sts, [
        (r"^  replicas: 2$", "statefulset: replicas must be 2"),
        (r"volumeClaimTemplates:\s*\n\s*- metadata:\s*\n\s*name: data",
         "statefulset: no volumeClaimTemplates 'data' (one database per replica)")])
    if projected_paths(sts) != projected_paths(dep):
        p.append("statefulset and deployment project different files: %r vs %r"
                 % (projected_paths(sts), projected_paths(dep)))
    report("leader-election statefulset: two replicas, same pod rules, claim per pod", p)

    svc = "\n".join(documents(read(os.path.join(BASE, "service.yaml"))))
    p = unmatched(svc, [(r"port: 9095\s*\n\s*targetPort: http", "service: port 9095 -> http"),
                        (r"selector:\s*\n\s*%s" % re.escape(LABEL),
                         "service: selector %s" % LABEL)])
    report("service: port 9095 to the pods' http port", p)
    return dep


def check_config_text(dep):
    base = configmap_yml(os.path.join(BASE, "configmap.yaml"))
    le = configmap_yml(os.path.join(LE, "configmap.yaml"))
    if base is None or le is None:
        report("configmaps hold alertbridge.yml", ["alertbridge.yml: | not found"])
        return None
    p = []
    provided = projected_paths(dep)
    for path in re.findall(r"_file:\s*(\S+)", base):
        name = path[len("/etc/alertbridge/"):] if path.startswith("/etc/alertbridge/") else None
        if name not in provided:
            p.append("%s is not provided by the projected volume (%s)" % (path, sorted(provided)))
    secret_keys = set(re.findall(r"^  ([a-z-]+):", read(os.path.join(K8S, "secret.example.yaml"))
                                 .split("stringData:")[1], re.M))
    wanted = {k for k, v in provided.items() if v == "secret"}
    if secret_keys != wanted:
        p.append("secret.example.yaml keys %s, deployment mounts %s"
                 % (sorted(secret_keys), sorted(wanted)))
    p += unmatched(base, [
        (r"^database: /var/lib/alertbridge/", "database is not on the volume /var/lib/alertbridge"),
        (r'^listen_address: "?:9095"?', 'listen_address is not ":9095"'),
        (r"^janitor:\s*\n(?:  .*\n)*?  dry_run: true", "janitor.dry_run is not true"),
        (r"^leader_election: \{enabled: false",
         "base: leader_election (top level, not the deprecated janitor.leader_election) "
         "must be disabled")])
    report("configmap: secrets, database path, listen address, janitor dry-run", p)

    p = []
    if "leader_election: {enabled: true" not in le:
        p.append("overlay: leader_election is not enabled")
    if le.replace("leader_election: {enabled: true", "leader_election: {enabled: false") != base:
        p.append("overlay's alertbridge.yml differs from the base's beyond leader_election")
    report("leader-election configmap = base config + leader election", p)
    return base


def check_postgres_config_text(base):
    """postgres/'s alertbridge.yml: the base's with database on PostgreSQL, nothing else."""
    pg = configmap_yml(os.path.join(PG, "configmap.yaml"))
    if base is None or pg is None:
        report("postgres configmap holds alertbridge.yml", ["alertbridge.yml: | not found"])
        return None
    p = []
    m = re.search(r'^database: "?(postgres(?:ql)?://[^"\s]*)"?\s*$', pg, re.M)
    if not m:
        p.append("database is not a PostgreSQL URI")
    elif re.search(r"://[^/@]*:[^/@]*@", m.group(1)) or "password=" in m.group(1):
        p.append("the URI holds a password")
    if not re.search(r"^database_password_file: /etc/alertbridge/database-password$", pg, re.M):
        p.append("database_password_file is not /etc/alertbridge/database-password")
    dep = "\n".join(documents(read(os.path.join(PG, "deployment.yaml"))))
    if not re.search(r"- secret:\s*\n\s*name: alertbridge-database\s*\n(?:\s+.*\n)*?"
                     r"\s*- \{key: password, path: database-password\}", dep):
        p.append("deployment.yaml does not project database-password from the Secret "
                 "alertbridge-database")
    ex = read(os.path.join(PG, "secret.example.yaml"))
    if "name: alertbridge-database" not in ex or not re.search(r"^  password:", ex, re.M):
        p.append("postgres/secret.example.yaml does not show the Secret's key password")
    strip = re.compile(r"^(database(_password_file)?:.*|# .*)\n", re.M)
    if strip.sub("", pg) != strip.sub("", base):
        p.append("postgres's alertbridge.yml differs from the base's beyond database")
    report("postgres configmap = base config + PostgreSQL URI and password file from a Secret", p)
    return pg


def config_accepted(name, text, files, refuse=()):
    """check-config accepts text with /etc/alertbridge/ files made in a tmp; each
    (what, edit, want, never) of refuse, a change of text it must refuse with want in its output
    and never not in it (self-tests)."""
    if not os.access(BIN, os.X_OK):
        skip(name, "no binary at %s (ALERTBRIDGE_BIN)" % BIN)
        return False
    with tempfile.TemporaryDirectory(prefix="deploy-files-") as tmp:
        etc = os.path.join(tmp, "etc") + "/"
        os.mkdir(etc)
        for secret in files:
            with open(os.path.join(etc, secret), "w") as f:
                f.write("test-%s\n" % secret)
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
        good = os.path.join(tmp, "alertbridge.yml")
        with open(good, "w") as f:
            f.write(text.replace("/etc/alertbridge/", etc))
        r = run([BIN, "check-config", good], env=env, cwd=tmp)
        if r.returncode == 2 and "usage" in r.stdout.lower():
            skip(name, "not yet: the binary has no check-config (%s)" % r.stdout.strip())
            return False
        report(name, [] if r.returncode == 0 else
               ["exit %d: %s" % (r.returncode, r.stdout.strip())])
        for what, edit, want, never in refuse:
            bad = os.path.join(tmp, "bad.yml")
            with open(bad, "w") as f:
                f.write(edit(text).replace("/etc/alertbridge/", etc))
            r = run([BIN, "check-config", bad], env=env, cwd=tmp)
            report("%s (self-test)" % what,
                   [] if r.returncode != 0 and want in r.stdout and
                   (never is None or never not in r.stdout) else
                   ["exit %d, output %r" % (r.returncode, r.stdout.strip())])
    return True


def postgres_refusals(what):
    """check-config's refusals a PostgreSQL config must show (config_accepted's refuse)."""
    return [
        ("check-config refuses %s with a password in the URI, not echoing it" % what,
         lambda t: t.replace("://alertbridge@", "://alertbridge:hunter2@"),
         "database: the URI holds a password: put it in a file named by "
         "database_password_file", "hunter2"),
        ("check-config refuses %s without its password file" % what,
         lambda t: t.replace("/etc/alertbridge/database-password", "/etc/alertbridge/nothing"),
         "database_password_file: cannot read", None),
    ]


def check_postgres_configs(pg):
    if pg is not None:
        config_accepted("check-config accepts postgres's ConfigMap alertbridge.yml", pg,
                        ("webhook-token", "github-token", "slack-token") + PG_FILES,
                        postgres_refusals("postgres's ConfigMap"))
    text = read(SYSTEMD_PG)
    p = unmatched(text, [
        (r'^database: "?postgres(ql)?://', "database is not a PostgreSQL URI"),
        (r"^database_password_file: /etc/alertbridge/\S+$",
         "no database_password_file in /etc/alertbridge")])
    report("systemd alertbridge-postgres.yml: PostgreSQL URI, password file", p)
    config_accepted("check-config accepts deploy/systemd/alertbridge-postgres.yml", text,
                    ("webhook-token", "github-token") + PG_FILES,
                    postgres_refusals("alertbridge-postgres.yml"))


def check_config_binary(base):
    if base is None:
        return
    config_accepted("check-config accepts the ConfigMap's alertbridge.yml", base,
                    ("webhook-token", "github-token", "slack-token"),
                    # check-config must be able to fail: an unknown key, named with its line.
                    [("check-config rejects an unknown key",
                      lambda t: t.replace("  max_body_bytes:", "  max_body_byte:"),
                      "max_body_byte", None)])


def check_kustomize_build():
    if shutil.which("kubectl"):
        cmd = ["kubectl", "kustomize"]
    elif shutil.which("kustomize"):
        cmd = ["kustomize", "build"]
    else:
        skip("kustomize build", "neither kubectl nor kustomize is installed")
        return
    for kdir, want, unwanted in (
            (K8S, {"Deployment", "PersistentVolumeClaim", "ConfigMap", "Service"},
             {"StatefulSet", "Secret"}),
            (LE, {"StatefulSet", "ConfigMap", "Service"},
             {"Deployment", "PersistentVolumeClaim", "Secret"}),
            (PG, {"Deployment", "ConfigMap", "Service", "PodDisruptionBudget"},
             {"StatefulSet", "PersistentVolumeClaim", "Secret"})):
        rel = os.path.relpath(kdir, SRC)
        r = run(cmd + [kdir])
        if r.returncode != 0:
            report("kustomize build %s" % rel, [r.stdout.strip()])
            continue
        p = []
        kinds = set()
        for doc in documents(r.stdout):
            kind = top(doc, "kind")
            kinds.add(kind)
            meta = metadata_block(doc)
            if kind not in ("Namespace", "ClusterRole", "ClusterRoleBinding") and \
                    "namespace: alertbridge" not in meta:
                p.append("%s is not in namespace alertbridge" % kind)
        p += ["no %s" % k for k in sorted(want - kinds)]
        p += ["unexpected %s" % k for k in sorted(kinds & unwanted)]
        if not re.search(r"image: alertbridge:\S+", r.stdout):
            p.append("image has no tag (images: in the kustomization)")
        report("kustomize build %s: kinds, namespace, image tag" % rel, p)


# ---- Dockerfile ---------------------------------------------------------------------------

def docker_stages(text):
    text = text.replace("\\\n", " ")
    stages = []
    for line in text.splitlines():
        if line.startswith("FROM "):
            stages.append([line])
        elif stages and line.strip() and not line.lstrip().startswith("#"):
            stages[-1].append(line.strip())
    return stages


def runtime_packages(stage):
    for line in stage:
        m = re.search(r"apt-get install -y --no-install-recommends\s+(.*?)(?:&&|$)", line)
        if m:
            return m.group(1).split()
    return []


def apt_lists_present():
    return bool(glob.glob("/var/lib/apt/lists/*_Packages*"))


_dpkg_owner = {}  # path -> the package dpkg -S names (None: no package), asked once a path


def dpkg_owner(path):
    """The Debian package that owns path (dpkg -S), or None; the 78 binaries share their
    libraries, and one dpkg -S costs 0.1-0.2 s, so each path is asked once."""
    if path not in _dpkg_owner:
        d = run(["dpkg", "-S", path])
        _dpkg_owner[path] = d.stdout.split(":")[0].strip() if d.returncode == 0 else None
    return _dpkg_owner[path]


def needed_packages(binary):
    """Debian packages of the shared libraries binary needs directly, or None if unknown."""
    if not (shutil.which("readelf") and shutil.which("ldd") and shutil.which("dpkg")):
        return None
    r = run(["readelf", "-d", binary])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", r.stdout)
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", run(["ldd", binary]).stdout, re.M))
    pkgs = {}
    for lib in needed:
        path = paths.get(lib)
        if not path:
            pkgs[lib] = None
            continue
        real = os.path.realpath(path)
        owner = None
        for candidate in (path, real, real.replace("/usr/lib/", "/lib/", 1),
                          path.replace("/lib/", "/usr/lib/", 1)):
            owner = dpkg_owner(candidate)
            if owner:
                break
        pkgs[lib] = owner
    return pkgs


def check_dockerfile():
    path = os.path.join(SRC, "deploy", "Dockerfile")
    stages = docker_stages(read(path))
    p = []
    if len(stages) != 2:
        report("Dockerfile: two stages", ["%d stages" % len(stages)])
        return
    build, runtime = stages
    # Pinned: an exact Debian 12 point release (or a dated bookworm tag), or a digest.
    pinned = r"debian:(12\.\d+-slim|bookworm-\d{8}-slim)(@sha256:[0-9a-f]{64})?"
    if not re.match(r"FROM %s AS build$" % pinned, build[0]):
        p.append("build stage: %r, want FROM debian:12.N-slim AS build (pinned)" % build[0])
    if not re.match(r"FROM %s$" % pinned, runtime[0]):
        p.append("runtime stage: %r, want FROM debian:12.N-slim (pinned)" % runtime[0])
    elif runtime[0].split()[1] != build[0].split()[1]:
        p.append("the stages' base images differ: %r, %r" % (build[0], runtime[0]))
    health = [l for l in runtime if l.startswith("HEALTHCHECK ")]
    if not health or not re.search(
            r'CMD \["/usr/local/bin/alertbridge", "healthcheck"(, "[^"]*")*\]$', health[-1]):
        p.append("no HEALTHCHECK CMD [\"/usr/local/bin/alertbridge\", \"healthcheck\", ...]: %r"
                 % health)
    if not any(re.search(r"sh deploy/deps.sh build\b", l) for l in build):
        p.append("build stage does not install deploy/deps.sh's build packages")
    if not any(re.search(r"\bmake\b.*NODEPS=1", l) for l in build):
        p.append("build stage does not run make")
    user = [l for l in runtime if l.startswith("USER ")]
    if not user or not re.match(r"USER [1-9][0-9]*(:[1-9][0-9]*)?$", user[-1]):
        p.append("runtime stage must end as a numeric non-root USER, got %r" % user)
    if "EXPOSE 9095" not in runtime:
        p.append("no EXPOSE 9095")
    if 'ENTRYPOINT ["/usr/local/bin/alertbridge"]' not in runtime:
        p.append("ENTRYPOINT is not /usr/local/bin/alertbridge")
    if 'CMD ["serve", "%s"]' % CONFIG_ARG not in runtime:
        p.append("CMD is not serve %s" % CONFIG_ARG)
    if not any(l.startswith("COPY --from=build /src/alertbridge /usr/local/bin/alertbridge")
               for l in runtime):
        p.append("the binary is not copied from the build stage")
    if not any(l.startswith("COPY --from=build /src/templates/") for l in runtime):
        p.append("the templates are not copied")
    report("Dockerfile: stages, deps.sh, user, port, entrypoint", p)

    pkgs = runtime_packages(runtime)
    name = "Dockerfile: runtime packages exist in Debian 12 (apt-cache show)"
    if not pkgs:
        report(name, ["no apt-get install line in the runtime stage"])
        return
    if not shutil.which("apt-cache") or not apt_lists_present():
        skip(name, "apt lists are empty (run apt-get update)")
    else:
        p = []
        for pkg in pkgs:
            r = run(["apt-cache", "show", "--no-all-versions", pkg])
            if r.returncode != 0 or not re.search(r"^Package: %s$" % re.escape(pkg),
                                                  r.stdout, re.M):
                p.append("%s: not in apt-cache" % pkg)
            elif pkg.endswith("-dev"):
                p.append("%s: a -dev package in the runtime image" % pkg)
        report(name + ": " + " ".join(pkgs), p)

    binaries = [b for b in [BIN] + sorted(glob.glob(os.path.join(SRC, "build", "tests", "test_*")))
                if os.access(b, os.X_OK) and not b.endswith(".d")]
    name = "Dockerfile: runtime packages cover the shared libraries linked"
    if not binaries:
        skip(name, "nothing built yet")
        return
    p, seen = [], set()
    for b in binaries:
        owners = needed_packages(b)
        if owners is None:
            skip(name, "readelf, ldd or dpkg missing")
            return
        for lib, owner in owners.items():
            if owner is None:
                p.append("%s: %s belongs to no package" % (os.path.basename(b), lib))
                continue
            seen.add(owner)
            if owner not in pkgs and owner not in BASE_IMAGE_PACKAGES | TEST_ONLY_PACKAGES:
                p.append("%s needs %s from %s, which the runtime stage lacks"
                         % (os.path.basename(b), lib, owner))
    report("%s (%d binaries; %s)" % (name, len(binaries), " ".join(sorted(seen))),
           sorted(set(p)))

    # One TLS stack: alertbridge itself needs exactly these packages, and no OpenSSL.
    owners = needed_packages(BIN) if os.access(BIN, os.X_OK) else None
    name = "Dockerfile: runtime packages are exactly what alertbridge needs, no libssl3"
    if owners is None:
        skip(name, "no binary, or readelf, ldd or dpkg missing")
    else:
        want = {o for o in owners.values() if o} - BASE_IMAGE_PACKAGES
        got = set(pkgs) - RUNTIME_EXTRA_PACKAGES
        p = []
        if want - got:
            p.append("missing: %s" % " ".join(sorted(want - got)))
        if got - want:
            p.append("not needed by %s: %s" % (os.path.basename(BIN), " ".join(sorted(got - want))))
        for banned in ("libssl3", "libcurl4", "libjwt0"):
            if banned in pkgs:
                p.append("%s installed (OpenSSL flavour)" % banned)
        for lib in owners:
            if re.match(r"lib(ssl|crypto)\.so", lib):
                p.append("alertbridge links %s itself" % lib)
        report("%s: %s" % (name, " ".join(sorted(pkgs))), p)
    guarded(check_library_size)


def ldd_libraries(binary):
    """The real paths of every shared library ldd resolves for binary (the loader too)."""
    out = run(["ldd", binary]).stdout
    paths = re.findall(r"=>\s+(/\S+)", out) + re.findall(r"^\s*(/\S+)\s+\(", out, re.M)
    return sorted({os.path.realpath(p) for p in paths})


def check_library_size():
    """Issue 8: the runtime stage carries at most 40 MB of shared libraries.  Without a
    Docker engine, measured as the sum of the files ldd resolves for the binary here (the same
    Debian 12 packages the runtime stage installs)."""
    name = "runtime libraries: the files ldd resolves for alertbridge sum to <= 40 MB"
    if not (os.access(BIN, os.X_OK) and shutil.which("ldd")):
        skip(name, "no binary or no ldd")
        return
    libs = ldd_libraries(BIN)
    total = sum(os.path.getsize(p) for p in libs)
    p = [] if total <= LIBRARY_BUDGET_BYTES else [
        "%.1f MB > 40 MB: %s" % (total / 1e6, ", ".join(
            "%s %.1f MB" % (os.path.basename(l), os.path.getsize(l) / 1e6)
            for l in sorted(libs, key=os.path.getsize, reverse=True)[:5]))]
    if not any("libgnutls" in l for l in libs):
        p.append("GnuTLS not among the libraries (ldd parsing?): %s" % libs)
    report("%s (%.1f MB in %d files)" % (name, total / 1e6, len(libs)), p)


# ---- systemd ------------------------------------------------------------------------------

def unit_sections(text):
    sections, cur = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            cur = sections.setdefault(m.group(1), [])
        elif cur is not None and "=" in line:
            k, v = line.split("=", 1)
            cur.append((k.strip(), v.strip()))
    return sections


def check_systemd():
    path = os.path.join(SRC, "deploy", "systemd", "alertbridge.service")
    text = read(path)
    sec = unit_sections(text)
    svc = sec.get("Service", [])
    values = {}
    for k, v in svc:
        values.setdefault(k, []).append(v)
    want = {
        "Type": "simple",
        "User": "alertbridge",
        "ExecStart": "/usr/local/bin/alertbridge serve " + CONFIG_ARG,
        "WorkingDirectory": "/var/lib/alertbridge",
        "StateDirectory": "alertbridge",
        "ProtectSystem": "strict",
        "PrivateTmp": "yes",
        "NoNewPrivileges": "yes",
        "Restart": "on-failure",
        "KillSignal": "SIGTERM",
        # systemctl reload: SIGHUP reloads the config (docs/config-guide.md "Reload").
        "ExecReload": "/bin/kill -HUP $MAINPID",
    }
    p = ["[Service] %s=%s, want %s" % (k, values.get(k), v)
         for k, v in want.items() if values.get(k) != [v]]
    if "/var/lib/alertbridge" not in " ".join(values.get("ReadWritePaths", [])).split():
        p.append("ReadWritePaths lacks /var/lib/alertbridge")
    if not values.get("TimeoutStopSec"):
        p.append("no TimeoutStopSec")
    if ("WantedBy", "multi-user.target") not in sec.get("Install", []):
        p.append("[Install] WantedBy=multi-user.target missing")
    report("systemd unit: service, user, paths, hardening, restart, reload", p)

    name = "systemd-analyze verify alertbridge.service"
    if not shutil.which("systemd-analyze"):
        skip(name, "systemd-analyze is not installed")
        return
    exe = BIN if os.access(BIN, os.X_OK) else "/bin/true"
    with tempfile.TemporaryDirectory(prefix="deploy-unit-") as tmp:
        copy = os.path.join(tmp, "alertbridge.service")
        with open(copy, "w") as f:
            f.write(text.replace("/usr/local/bin/alertbridge", exe))
        r = run(["systemd-analyze", "verify", "--man=no", copy])
        lines = [l for l in r.stdout.splitlines() if "alertbridge.service" in l]
        report(name, ([] if r.returncode == 0 else ["exit %d" % r.returncode]) + lines)


def check_docs():
    p = []
    for rel in ("deploy/README.md", "deploy/systemd/README.md",
                "deploy/kubernetes/secret.example.yaml",
                "deploy/kubernetes/postgres/secret.example.yaml",
                "deploy/systemd/alertbridge-postgres.yml"):
        if not os.path.isfile(os.path.join(SRC, rel)):
            p.append("%s missing" % rel)
    report("deployment READMEs and the example secret exist", p)


def check_public_routes():
    """components/public-endpoints' Ingress routes every endpoint serve puts on the public
    listener (route_public()'s table in cmd/serve_routes.c), and the public port the Ingress
    uses is the one the
    component's flag makes alertbridge listen on: a route added to the table and not to the
    Ingress would be unreachable once public_listen_address is set."""
    comp = os.path.join(K8S, "components", "public-endpoints")
    routes_c = read(os.path.join(SRC, "cmd", "serve_routes.c"))
    table = re.search(r"static int route_public\(.*?routes\[\] = \{(.*?)\n\t\};", routes_c, re.S)
    p = []
    if not table:
        report("serve's public routes are in the Ingress",
               ["no route_public() table in cmd/serve_routes.c"])
        return
    routes = set(re.findall(r'\{\s*"[A-Z]+",\s*"(/[^"]*)"', table.group(1)))
    ingress = set(re.findall(r"^\s*- path: (\S+)", read(os.path.join(comp, "ingress.yaml")), re.M))
    if not routes:
        p.append("route_public() lists no route")
    p += ["%s: served on the public listener but not routed by the Ingress" % r
          for r in sorted(routes - ingress)]
    kust = read(os.path.join(comp, "kustomization.yaml"))
    flag = re.search(r"--web\.public-listen-address=:(\d+)", kust)
    port = re.search(r"name: public, containerPort: (\d+)", kust)
    if not flag or not port or flag.group(1) != port.group(1):
        p.append("the flag's port %s is not the container port %s"
                 % (flag and flag.group(1), port and port.group(1)))
    report("serve's public routes are in the Ingress, on the flag's port", p)


def guarded(fn, *args):
    """Run one group of checks; a file it cannot read or parse fails that group, not the run."""
    return CHECKS.guarded((OSError, ValueError, AttributeError, IndexError, KeyError,
                           subprocess.TimeoutExpired), fn, *args)


def check_deps_check():
    """deploy/deps.sh --check names what is missing and never installs (README, Makefile: only
    make deps installs): with no command and no pkg-config on PATH, even as root, it exits 1
    and prints the apt-get line and 'make deps'; with every package there it exits 0."""
    p = []
    env = dict(os.environ, PATH="/nonexistent")
    r = subprocess.run(["/bin/sh", "deploy/deps.sh", "--check", "build"], cwd=SRC, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=CMD_TIMEOUT_S)
    if r.returncode != 1:
        p.append("--check with packages missing: exit %d, want 1" % r.returncode)
    if "missing packages:" not in r.stdout or "make deps" not in r.stdout:
        p.append("--check does not name the packages and make deps: %r" % r.stdout[-300:])
    if "installing" in r.stdout:
        p.append("--check installed: %r" % r.stdout[-300:])
    r = run(["sh", "deploy/deps.sh", "--check", "build", "test"], cwd=SRC)
    if r.returncode != 0:
        p.append("--check with everything installed: exit %d: %s" % (r.returncode, r.stdout[-300:]))
    report("deploy/deps.sh --check names what is missing, installs nothing", p)


def main():
    files = guarded(check_kustomizations) or []
    guarded(check_labels, [f for f in files if f.endswith(".yaml")])
    guarded(check_rbac)
    dep = guarded(check_workloads)
    base = guarded(check_config_text, dep) if dep is not None else None
    guarded(check_config_binary, base)
    pg = guarded(check_postgres_config_text, base)
    guarded(check_postgres_configs, pg)
    guarded(check_kustomize_build)
    guarded(check_dockerfile)
    guarded(check_systemd)
    guarded(check_docs)
    guarded(check_public_routes)
    guarded(check_deps_check)
    return CHECKS.end()


if __name__ == "__main__":
    sys.exit(main())
