#!/usr/bin/env python3
# run.sh: weight 4, asan skip
# (promtool on the shipped rules: no code of alertbridge's worth instrumenting again)
"""test_shipped_rules.py - the shipped Prometheus rules and Alertmanager config are valid, and
agree with the shipped alertbridge configs.

Runs promtool check rules and promtool test rules on deploy/prometheus/, amtool check-config on
deploy/alertmanager/alertmanager.yml, and amtool's route test to show janitor alerts reach the
janitor receiver and the rest the default one.  Then: every alert of the shipped rules that the
shipped Alertmanager config routes to a janitor receiver (a webhook to /v1/janitor/webhook) has a
janitor policy in every shipped alertbridge config (deploy/examples/*.yml and the alertbridge.yml
of every ConfigMap under deploy/kubernetes), as `alertbridge check-config` reads it; otherwise
the janitor skips that alert as "no-policy".  Each of those configs must pass check-config.
Prints one line per check and, last, "N passed, N failed" (tests/run.sh reads it); exits 1 on
any failure.  A missing promtool or amtool is a failure naming the Debian package to install.
Env: ALERTBRIDGE_BIN (default ./alertbridge).
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_deploy_files import configmap_yml  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM_DIR = os.path.join(SRC, "deploy", "prometheus")
AM_CONFIG = os.path.join(SRC, "deploy", "alertmanager", "alertmanager.yml")
BIN = os.path.abspath(os.environ.get("ALERTBRIDGE_BIN", os.path.join(SRC, "alertbridge")))
JANITOR_PATH = "/v1/janitor/webhook"
TIMEOUT_S = 120

TOOLS = {"promtool": "prometheus", "amtool": "prometheus-alertmanager"}

passed = 0
failed = 0


def report(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}")
        if detail:
            for line in detail.rstrip().splitlines():
                print(f"     {line}")


def run(name, argv, want_in_output=None):
    """Run argv; pass when it exits 0 (and, if given, its output holds want_in_output)."""
    try:
        p = subprocess.run(argv, cwd=SRC, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        report(name, False, f"timed out after {TIMEOUT_S}s: {' '.join(argv)}")
        return
    out = p.stdout + p.stderr
    ok = p.returncode == 0 and (want_in_output is None or want_in_output in out)
    detail = f"$ {' '.join(argv)}\nexit {p.returncode}\n{out}"
    if want_in_output is not None and want_in_output not in out:
        detail += f"\nexpected in output: {want_in_output!r}"
    report(name, ok, detail)


def rule_alerts(path):
    """{alertname: {label: value}} of every alerting rule in a rule file (its static labels)."""
    alerts, current, in_labels, indent = {}, None, False, 0
    for line in open(path, encoding="utf-8").read().splitlines():
        m = re.match(r"^(\s*)- alert:\s*(\S+)\s*$", line)
        if m:
            current, in_labels = m.group(2), False
            alerts[current] = {}
            continue
        if re.match(r"^\s*- ", line):
            current = None
        if current is None:
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        lead = len(line) - len(line.lstrip())
        m = re.match(r"^\s*labels:\s*$", line)
        if m:
            in_labels, indent = True, lead
            continue
        in_labels = in_labels and lead > indent
        m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*):\s*(.*?)\s*$", line)
        if in_labels and m:
            alerts[current][m.group(1)] = m.group(2).strip("\"'")
    return alerts


def janitor_receivers(am_text):
    """Names of the Alertmanager receivers with a webhook to alertbridge's janitor."""
    names, current = set(), None
    for line in am_text.splitlines():
        m = re.match(r"^\s*- name:\s*['\"]?([^'\"\s]+)", line)
        if m:
            current = m.group(1)
        m = re.match(r"^\s*-?\s*url:\s*['\"]?(\S+?)['\"]?\s*$", line)
        if m and current and m.group(1).endswith(JANITOR_PATH):
            names.add(current)
    return names


def routed_receivers(labels):
    """The receivers amtool's route test picks for an alert with these labels."""
    argv = ["amtool", "config", "routes", "test", f"--config.file={AM_CONFIG}"] + [
        f"{k}={v}" for k, v in sorted(labels.items())]
    p = subprocess.run(argv, cwd=SRC, capture_output=True, text=True, timeout=TIMEOUT_S)
    if p.returncode != 0:
        raise RuntimeError(f"$ {' '.join(argv)}\nexit {p.returncode}\n{p.stdout}{p.stderr}")
    return set(p.stdout.split())


def shipped_configs():
    """(name, alertbridge.yml text) of every shipped alertbridge config."""
    out = []
    for f in sorted(glob.glob(os.path.join(SRC, "deploy", "examples", "*.yml"))):
        out.append((os.path.relpath(f, SRC), open(f, encoding="utf-8").read()))
    for f in sorted(glob.glob(os.path.join(SRC, "deploy", "kubernetes", "**", "*.yaml"),
                              recursive=True)):
        text = configmap_yml(f)
        if text is not None:
            out.append((os.path.relpath(f, SRC) + ":alertbridge.yml", text))
    return out


def check_config(name, text, tmp):
    """Run alertbridge check-config on text (its /etc/alertbridge/ secrets made up in tmp);
    return its output, or None after reporting the failure."""
    etc = os.path.join(tmp, "etc") + "/"
    os.makedirs(etc, exist_ok=True)
    for ref in set(re.findall(r"/etc/alertbridge/([A-Za-z0-9._-]+)", text)):
        with open(os.path.join(etc, ref), "w") as f:
            f.write("test-%s\n" % ref)
    path = os.path.join(tmp, "alertbridge.yml")
    with open(path, "w") as f:
        f.write(text.replace("/etc/alertbridge/", etc))
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    p = subprocess.run([BIN, "check-config", path], cwd=tmp, capture_output=True, text=True,
                       timeout=TIMEOUT_S, env=env)
    report(f"alertbridge check-config {name}", p.returncode == 0,
           f"exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout if p.returncode == 0 else None


def effective_policies(out):
    """The janitor.policies[].alertname values of check-config's effective configuration."""
    m = re.search(r"^janitor:\n((?:  .*\n|\n)*)", out, re.M)
    block = m.group(1) if m else ""
    return set(re.findall(r"^  - alertname: \"([^\"]+)\"", block, re.M))


def check_janitor_policies(rule_files):
    """Every alert the shipped rules route to the janitor has a policy in every config."""
    am_text = open(AM_CONFIG, encoding="utf-8").read()
    receivers = janitor_receivers(am_text)
    report("alertmanager.yml has a receiver for " + JANITOR_PATH, bool(receivers),
           "no webhook_configs url ends with " + JANITOR_PATH)
    routed = set()
    for f in rule_files:
        for alertname, labels in sorted(rule_alerts(f).items()):
            labels = dict(labels, alertname=alertname, namespace="ml", pod="p", uid="u")
            try:
                if routed_receivers(labels) & receivers:
                    routed.add(alertname)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                report(f"route of {alertname}", False, str(e))
    report("the shipped rules route alerts to the janitor", bool(routed),
           f"none of the rules' alerts reach {sorted(receivers)}")
    print(f"     janitor alerts of the shipped rules: {', '.join(sorted(routed))}")
    if not os.access(BIN, os.X_OK):
        report("alertbridge binary for check-config", False,
               f"no binary at {BIN} (set ALERTBRIDGE_BIN)")
        return
    configs = shipped_configs()
    report("shipped alertbridge configs found", len(configs) >= 3,
           f"found {[n for n, _ in configs]}")
    for name, text in configs:
        with tempfile.TemporaryDirectory(prefix="shipped-rules-") as tmp:
            out = check_config(name, text, tmp)
        if out is None:
            continue
        have = effective_policies(out)
        missing = sorted(routed - have)
        report(f"{name}: a janitor policy for every alert routed to the janitor", not missing,
               f"no policy for {', '.join(missing)} (the janitor would skip them as "
               f"no-policy); policies: {', '.join(sorted(have)) or 'none'}")


def main():
    missing = [t for t in TOOLS if shutil.which(t) is None]
    for tool in missing:
        report(f"{tool} installed", False,
               f"{tool} not found: apt-get install -y {TOOLS[tool]}")

    rule_files = sorted(glob.glob(os.path.join(PROM_DIR, "*.yml")))
    test_files = sorted(glob.glob(os.path.join(PROM_DIR, "tests", "*.yml")))
    report("deploy/prometheus has rule files", bool(rule_files), f"none in {PROM_DIR}")
    report("deploy/prometheus/tests has test files", bool(test_files),
           f"none in {PROM_DIR}/tests")

    if "promtool" not in missing and rule_files:
        for f in rule_files:
            run(f"promtool check rules {os.path.relpath(f, SRC)}",
                ["promtool", "check", "rules", f])
    if "promtool" not in missing and test_files:
        for f in test_files:
            run(f"promtool test rules {os.path.relpath(f, SRC)}",
                ["promtool", "test", "rules", f])

    if "amtool" not in missing:
        run("amtool check-config deploy/alertmanager/alertmanager.yml",
            ["amtool", "check-config", AM_CONFIG])
        for alertname in ("JanitorIdleGPUPod", "JanitorIdleCPUPod",
                          "JanitorPodPendingTooLong", "JanitorPodUnschedulable"):
            run(f"route {alertname} -> janitor",
                ["amtool", "config", "routes", "test", f"--config.file={AM_CONFIG}",
                 "--verify.receivers=janitor", f"alertname={alertname}",
                 "namespace=ml", "pod=p"])
        run("route KubePodCrashLooping -> default",
            ["amtool", "config", "routes", "test", f"--config.file={AM_CONFIG}",
             "--verify.receivers=default", "alertname=KubePodCrashLooping", "namespace=ml"])

    if "amtool" not in missing and rule_files:
        check_janitor_policies(rule_files)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
