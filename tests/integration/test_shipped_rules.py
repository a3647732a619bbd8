#!/usr/bin/env python3
"""test_shipped_rules.py - the shipped Prometheus rules and Alertmanager config are valid.

Runs promtool check rules and promtool test rules on deploy/prometheus/, amtool check-config on
deploy/alertmanager/alertmanager.yml, and amtool's route test to show janitor alerts reach the
janitor receiver and the rest the default one.  Prints one line per check and, last,
"N passed, N failed" (tests/run.sh reads it); exits 1 on any failure.  A missing promtool or
amtool is a failure naming the Debian package to install.
"""
import glob
import os
import shutil
import subprocess
import sys

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM_DIR = os.path.join(SRC, "deploy", "prometheus")
AM_CONFIG = os.path.join(SRC, "deploy", "alertmanager", "alertmanager.yml")
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

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
