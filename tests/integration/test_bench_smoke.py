#!/usr/bin/env python3
# run.sh: weight 36, asan skip
# (the benchmarks' scripts: no code of alertbridge's worth instrumenting again)
"""test_bench_smoke.py - `make bench` and `make bench-janitor` still run and say what they claim.

A short run of each (1 s of wrk per workload, 5 requests under callgrind; 1,000 and 2,000 pods)
so the benchmarks do not rot between the runs that measure: exit 0, every workload's line and
its durability verdict, the GitHub calls per transition (create 1 mutation, repeat 0 calls), and
the janitor's table with every annotated pod planned.  No figure is asserted: figures come from
a quiet machine, never from a test.

Env: ALERTBRIDGE_BIN.  Prints the outputs and, last, "N passed, N failed".
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import ALERTBRIDGE  # noqa: E402
from harness import Runner, check, eq  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
run = Runner()


def need(*tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        print("SKIP: %s not installed (deploy/deps.sh test installs them)" % ", ".join(missing))
    return not missing


@run.case
def intake_bench_runs_every_workload():
    if not need("wrk", "valgrind", "cc"):
        return
    env = dict(os.environ, BENCH_DURATION="1s", BENCH_CALLGRIND_REQUESTS="5",
               BENCH_CONNECTIONS="4")
    build = os.path.join(SRC, "build")
    r = subprocess.run(["sh", os.path.join(SRC, "tests", "bench", "run.sh"), build, ALERTBRIDGE],
                       env=env, capture_output=True, text=True, timeout=600, cwd=SRC)
    print(r.stdout + r.stderr[-3000:], flush=True)
    eq(r.returncode, 0, "make bench's script exits 0")
    for mode in ("new", "repeat", "mix"):
        check(re.search(r"^%s +ratio +\d" % mode, r.stdout, re.M), "a ratio line for " + mode)
        check(re.search(r"^%s +alertbridge +\d+  \(" % mode, r.stdout, re.M),
              "instructions per request for " + mode)
    check("OK, repeats not stored" in r.stdout, "repeats are not stored")
    rows = {m.group(1): m.group(2).split() for m in
            re.finditer(r"^(create|repeat|resolve|re-fire) +(.*)$", r.stdout, re.M)}
    eq(sorted(rows), ["create", "re-fire", "repeat", "resolve"], "a row per transition")
    eq(rows["create"][1], "1", "a create is one mutation")
    eq(rows["repeat"][0], "0", "a repeat costs no call")


@run.case
def janitor_bench_plans_every_annotated_pod():
    if not need("valgrind") or not os.path.exists("/usr/bin/time"):
        return
    env = dict(os.environ, JANITOR_BENCH_SIZES="1000,2000", JANITOR_BENCH_CALLGRIND_PODS="500")
    r = subprocess.run([sys.executable, os.path.join(SRC, "tests", "bench", "janitor_bench.py"),
                        ALERTBRIDGE], env=env, capture_output=True, text=True, timeout=600)
    print(r.stdout + r.stderr[-3000:], flush=True)
    eq(r.returncode, 0, "janitor_bench.py exits 0")
    rows = re.findall(r"^ +(\d+) +[\d.]+ +[\d.]+ +(\d+) +(\d+) +(\d+)$", r.stdout, re.M)
    eq([(n, req, planned) for n, req, _, planned in rows],
       [("1000", "2", "100"), ("2000", "4", "200")], "pods, requests per pass, planned")
    check(re.search(r"^callgrind: \d+ instructions per pod", r.stdout, re.M),
          "instructions per pod")


def main():
    return run.run()


if __name__ == "__main__":
    sys.exit(main())
