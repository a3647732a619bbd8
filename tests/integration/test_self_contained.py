#!/usr/bin/env python3
# run.sh: weight 2, asan skip
# (the tree's files: no code of alertbridge's worth instrumenting again)
"""test_self_contained.py - the repository stands alone: a user who clones only it can build and
run every test.  Fails when a tracked file names a path outside the repository (the parent
folder's shared/ directory, or an absolute path of the machine it was written on), and when the
data the tests read (the Mustache spec, the Alertmanager fixtures) is not inside it.
Python stdlib only.  Prints one line per check and, last, "N passed, N failed"; exits 1 on any
failure.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Checks  # noqa: E402

SRC = os.environ.get("ALERTBRIDGE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Built from pieces so that this file does not match itself.
OUTSIDE = [
    re.compile(re.escape("../" + "shared")),
    re.compile(re.escape("/" + "work/")),
    # a path joined from parts: os.path.join(ROOT, "..", <the shared folder>, ...).
    re.compile(r"""['"]\.\.['"]\s*,\s*['"]""" + "shared" + r"""['"]"""),
]
SPEC_FILES = ["comments.json", "delimiters.json", "interpolation.json", "inverted.json",
              "partials.json", "sections.json", "~dynamic-names.json", "LICENSE"]
FIXTURES = ["01_single_firing.json", "02_single_resolved.json", "03_group_of_3_firing.json",
            "04_group_partially_resolved.json", "04b_group_all_resolved.json",
            "05_truncated_max_alerts_2.json", "06_repeat_firing_after_repeat_interval.json",
            "README.md"]

CHECKS = Checks(max_problems=40)
report = CHECKS.report


def tracked_files():
    """The files git tracks (plus untracked, not ignored ones: what the next commit may add);
    without git, every file under SRC outside build folders."""
    try:
        out = subprocess.run(["git", "-C", SRC, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=60, check=True).stdout
        return sorted(set(p for p in out.decode().split("\0") if p))
    except (OSError, subprocess.SubprocessError):
        files = []
        for root, dirs, names in os.walk(SRC):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(root, n), SRC) for n in names]
        return sorted(files)


def check_no_outside_paths():
    problems = []
    # .ci/ is the CI machine's entry point, which describes that machine's layout.
    files = [f for f in tracked_files() if not f.startswith(".ci/")]
    for rel in files:
        path = os.path.join(SRC, rel)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(4 << 20)
        except OSError as e:
            problems.append("%s: %s" % (rel, e))
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                problems.append("%s:%d: %s" % (rel, lineno, line.strip()[:120]))
    if len(files) < 50:
        problems.append("only %d files listed: is SRC=%s the repository?" % (len(files), SRC))
    report("no tracked file names a path outside the repository (%d files)" % len(files),
           problems)


def check_vendored(folder, names, what):
    d = os.path.join(SRC, folder)
    missing = [n for n in names if not os.path.isfile(os.path.join(d, n))]
    report("%s is in %s" % (what, folder), ["missing: %s/%s" % (folder, n) for n in missing])


def main():
    check_no_outside_paths()
    check_vendored("tests/mustache-spec", SPEC_FILES, "the Mustache spec (with its licence)")
    check_vendored("tests/fixtures/alertmanager", FIXTURES, "the Alertmanager fixtures")
    return CHECKS.end()


if __name__ == "__main__":
    sys.exit(main())
