#!/usr/bin/env python3
# run.sh: weight 3
"""test_reproducible.py - one commit built in two directories gives the same objects (the
Makefile's -ffile-prefix-map and its default SOURCE_DATE_EPOCH, the last commit's time; see the
Makefile's knobs).  The repository is cloned twice under paths of different lengths, the working
tree's build files copied over both (so that uncommitted Makefile changes are what is tested),
and a few objects built in each: core/version.o (the build identity and date), main.o and
core/log.o (__FILE__ users, debug information with the build directory), the embedded
templates, compared byte for byte.  The whole binary
is left to the other tests' build: building it twice here would cost two minutes.
Python stdlib only.  Prints one line per check and, last, "N passed, N failed".
"""

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OBJECTS = ["build/core/version.o", "build/main.o", "build/core/log.o", "build/gen/embed.o"]
COPIED = ["Makefile", "VERSION", "main.c", "cmd", "core", "store", "bridge", "janitor", "ha", "web", "templates"]

results = {"passed": 0, "failed": 0}


def check(ok, name, detail=""):
    results["passed" if ok else "failed"] += 1
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": %s" % detail))
    return ok


def run(cmd, cwd, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=300)
    return p.returncode, p.stdout.decode(errors="replace")


def prepare(where):
    rc, out = run(["git", "clone", "-q", "--local", "--no-hardlinks", SRC, where], cwd="/")
    if rc:
        return out
    for name in COPIED:
        src, dst = os.path.join(SRC, name), os.path.join(where, name)
        if os.path.isdir(src):
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)
        elif os.path.exists(src):
            shutil.copy2(src, dst)
    return None


def main():
    if not os.path.isdir(os.path.join(SRC, ".git")):
        print("SKIP test_reproducible: no .git (a tarball): the default date needs a commit")
        print("0 passed, 0 failed")
        return 0
    top = tempfile.mkdtemp(prefix="ab-repro-")
    dirs = [os.path.join(top, "a"), os.path.join(top, "a-much-longer-second-checkout")]
    env = dict(os.environ)
    env.pop("SOURCE_DATE_EPOCH", None)
    # MAKEFLAGS too: under `make check O=DIR` it carries O=DIR into the clones' make.
    for var in ("VERSION", "REVISION", "O", "CFLAGS", "SAN", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(var, None)
    try:
        for d in dirs:
            err = prepare(d)
            if not check(err is None, "clone into %s" % d, err):
                return 1
            rc, out = run(["make", "-j2", "NODEPS=1", "V=1"] + OBJECTS, cwd=d, env=env)
            if not check(rc == 0, "make %s in %s" % (" ".join(OBJECTS), d), out[-2000:]):
                return 1
        for obj in OBJECTS:
            a, b = (os.path.join(d, obj) for d in dirs)
            check(filecmp.cmp(a, b, shallow=False), "%s is the same in both builds" % obj,
                  "differs (cmp -l %s %s)" % (a, b))
        stamp = open(os.path.join(dirs[0], "build/gen/version-stamp")).read().split()
        rc, out = run(["git", "log", "-1", "--format=%ct"], cwd=dirs[0])
        check(len(stamp) == 3 and stamp[2] == out.strip(),
              "the build date defaults to the last commit's time", stamp)
        with open(os.path.join(dirs[0], "build/main.o"), "rb") as f:
            blob = f.read()
        check(top.encode() not in blob, "the build directory is not in main.o's debug information")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("%d passed, %d failed" % (results["passed"], results["failed"]))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
