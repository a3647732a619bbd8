#!/usr/bin/env python3
# run.sh: weight 5
"""test_token_rotation.py - docs/operating.md's webhook token rotation, with a real Alertmanager.

webhook_token_rotation_loses_no_notification
    A real Alertmanager posts to alertbridge with a bearer token from a credentials_file.  The
    admin rotates as docs/operating.md says: alertbridge's webhook-token file first (then a reload),
    Alertmanager's credentials_file a little later.  An alert that fires in between is answered
    401 (counted in alertbridge's metrics); Alertmanager does not record it as delivered and
    sends it again at the group's next group_interval once its file has the new token, so the
    alert still gets its one issue.  The old token is refused after the rotation.

Env: ALERTBRIDGE_BIN, ALERTMANAGER_BIN.  Prints a timeline and, last, "N passed, N failed".
"""

import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (Alertbridge, Alertmanager, Runner, check, eq, event, http,  # noqa: E402
                     issues_by_key, iso_ms, poll, print_stack_tails)

REPO = "acme/rotation"
GH_TOKEN = "ghs_rotationToken0123456789"
OLD, NEW = "hook-old-0123456789", "hook-new-9876543210"

run = Runner()


def alert(name):
    return {"labels": {"alertname": name, "namespace": "ops", "pod": name.lower(),
                       "severity": "warning"},
            "annotations": {"summary": "%s fires" % name},
            "startsAt": iso_ms(time.time() - 5)}


def unauthorized(ab):
    st, _, text = http("GET", ab.url + "/metrics")
    n = sum(float(v) for v in re.findall(
        r'^alertbridge_http_requests_total\{[^}]*code="401"[^}]*\} (\S+)$', text, re.M))
    return n if st == 200 else -1


def reload_alertbridge(ab):
    """SIGHUP: alertbridge reads its config and token files again (docs/config-guide.md: Reload); done when
    the new token gets past authentication (an empty body: 400, not 401)."""
    ab.proc.p.send_signal(signal.SIGHUP)
    poll(lambda: http("POST", ab.url + "/v1/webhook", {},
                      headers={"Authorization": "Bearer " + NEW})[0] != 401,
         "the reloaded token is accepted", timeout_s=20)


@run.case
def webhook_token_rotation_loses_no_notification():
    tmp = tempfile.mkdtemp(prefix="ab-rotate-")
    gh = FakeGitHub(token=GH_TOKEN, repos=[REPO]).start()
    ab = Alertbridge(tmp, gh.url, GH_TOKEN, REPO, hook_token=OLD)
    am_token = os.path.join(tmp, "am-credentials")
    with open(am_token, "w") as f:
        f.write(OLD + "\n")
    am = Alertmanager(tmp, ab.url + "/v1/webhook", am_token)
    try:
        ab.start()
        am.start()
        am.post([alert("BeforeRotation")])
        poll(lambda: len(gh.issues(REPO)) == 1, "the first alert's issue", timeout_s=30)

        # 1. alertbridge gets the new token first.
        with open(ab.hook_file, "w") as f:
            f.write(NEW + "\n")
        ab.hook_token = NEW
        reload_alertbridge(ab)
        base401 = unauthorized(ab)
        event("alertbridge has the new token; Alertmanager still sends the old")
        # 2. An alert fires while Alertmanager still has the old token: 401.
        am.post([alert("DuringRotation")])
        poll(lambda: unauthorized(ab) > base401, "Alertmanager's post answered 401",
             timeout_s=30)
        time.sleep(2.5)  # past the new group's group_wait (1 s): its first send got 401 too
        eq(len(gh.issues(REPO)), 1, "nothing made with the old token")
        # 3. Alertmanager's credentials_file gets the new token (read on each request).
        with open(am_token, "w") as f:
            f.write(NEW + "\n")
        event("Alertmanager has the new token")
        poll(lambda: len(gh.issues(REPO)) == 2, "the alert sent during the rotation arrives",
             timeout_s=60)
        by = issues_by_key(gh.issues(REPO))
        eq(sorted(len(v) for v in by.values()), [1, 1], "one issue per alert")
        st, _, _ = http("POST", ab.url + "/v1/webhook", {},
                        headers={"Authorization": "Bearer " + OLD})
        eq(st, 401, "the old token is refused after the rotation")
    except BaseException:
        print_stack_tails(ab, am, 40)
        raise
    finally:
        am.stop()
        ab.stop()
        gh.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    return run.run()


if __name__ == "__main__":
    sys.exit(main())
