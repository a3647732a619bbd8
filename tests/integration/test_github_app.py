#!/usr/bin/env python3
# run.sh: weight 17, quick
"""test_github_app.py - GitHub App authentication and per-owner credentials, with the real
binary against the fake GitHub (fake_github_app.py checks each JWT's RS256 signature against the
public key registered here, its claims, and expires installation tokens).

app_installation_files_an_issue
    github.app with installation_id: the service signs a JWT, gets an installation token at
    POST /app/installations/{id}/access_tokens and files the issue with it; the renewal counter
    says 1.
token_renewed_before_expiry
    Installation tokens that live 5 min + 5 s: 5.5 s later the next call first gets a new token
    (5 minutes before expires_at), so no request is ever answered 401, and every create
    carries the newest token.
token_renewed_once_after_401
    The fake revokes every token: the next create is answered 401, the service gets a new token
    once and the create succeeds with it.
installation_found_per_owner
    No installation_id: GET /repos/{owner}/{repo}/installation (with the JWT) once per owner,
    each owner's repositories filed with its own installation's token.
two_organisations_two_credentials
    github.token_file (a token that reaches acme only) is the default; github.credentials gives
    the owner "Beta" (any case) an App: both organisations get their issue.
enterprise_server_paths
    api_url http://host/api/v3 (GitHub Enterprise Server): the token exchange and the create go
    under /api/v3 (the fake answers 404 to anything else).
jwt_of_another_key_is_refused
    The fake has another public key for the App: the exchange is answered 401, counted as a
    token failure, and no create is sent.
lost_database_each_organisation_by_its_login
    github.credentials: acme's token acts as alice, beta's as bob.  After the database is lost,
    the rebuild of each repository lists creator= the login of the credential that acts on it
    (GET /user with that token): beta's resolve closes bob's issue, no duplicate (issue 18
    item 1: it listed creator=alice in beta and made a second issue).
lost_database_app_rebuilds_by_its_bot_login
    An App (slug octo-alerts): its issues are by octo-alerts[bot]; a person removed the issue's
    labels.  After the database is lost the rebuild learns the login from GET /app (JWT), never
    GET /user (403 for an installation token), lists creator=octo-alerts[bot], and the resolve
    closes that issue (issue 18 item 2: it fell back to labels= and duplicated it).
wrong_installation_is_unauthorized
    installation_id names no installation of the App (404 on the token exchange): counted in
    alertbridge_github_unauthorized_total and the token failures.
check_config_refuses_bad_keys
    check-config exits 1 naming alertbridge.yml:LINE of private_key_file when the key cannot be
    read or is not an RSA private key, and refuses a duplicate owner.

Env: ALERTBRIDGE_BIN.  Needs the openssl command (test keys are made at test time).  Prints
"N passed, N failed" last.
"""

import contextlib
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_github import FakeGitHub  # noqa: E402
from harness import (ALERTBRIDGE, Alertbridge, Runner, check, eq, event, http,  # noqa: E402
                     iso_ms, poll, print_tail, webhook_payload)
from harness import delete_database, temp_dir  # noqa: E402

APP_ID = 4242
# Installation tokens of token_renewed_before_expiry live 5 min + this; a slow first create
# (ASan, a loaded machine) may already renew, which the test allows.
RENEW_WINDOW_S = 5
run = Runner()
live = []  # services of the current case, for logs on failure


def make_key(tmp, name="app.pem"):
    """A fresh 2048-bit RSA key pair (OpenSSL writes PKCS#8); (private key path, public PEM)."""
    path = os.path.join(tmp, name)
    subprocess.run(["openssl", "genrsa", "-out", path, "2048"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    pub = subprocess.run(["openssl", "rsa", "-in", path, "-pubout"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60).stdout
    return path, pub.decode()


def service(tmp, gh, github_yaml, receivers):
    """alertbridge with the github section github_yaml (lines under github:) and receivers
    [(name, repo)]."""
    ab = Alertbridge(tmp, gh.url, "unused", receivers[0][1], receiver=receivers[0][0])
    with open(ab.config) as f:
        text = f.read()
    text = text.replace("  token_file: github-token\n", github_yaml)
    extra = "".join("  - name: %s\n    repo: %s\n" % r for r in receivers[1:])
    text = text.replace("janitor:\n", extra + "janitor:\n")
    with open(ab.config, "w") as f:
        f.write(text)
    live.append(ab)
    return ab


def post_alert(ab, name, receiver=None, ends_ago_s=None):
    """Post one alert named name to ab: firing, or resolved ends_ago_s seconds ago."""
    a = {"fingerprint": "%016x" % (abs(hash(name)) % (1 << 63)), "status": "firing",
         "labels": {"alertname": name, "severity": "critical"},
         "annotations": {"summary": name + " fires"}, "startsAt": iso_ms(time.time() - 5)}
    if ends_ago_s is not None:
        a.update(status="resolved", endsAt=iso_ms(time.time() - ends_ago_s))
    st, _, body = ab.post(webhook_payload(receiver or ab.receiver, [a]))
    check(st in (200, 202), "webhook accepted", (st, body))


def fire(ab, name, receiver=None):
    post_alert(ab, name, receiver)


def fire_and_file(ab, gh, name, count, what, receiver=None, repo="acme/alerts"):
    """fire(ab, name, receiver), then wait (30 s at most) until repo holds count issues."""
    fire(ab, name, receiver)
    poll(lambda: len(gh.issues(repo)) == count, what, 30)


def fire_acme_and_beta(ab, gh):
    """An alert of receiver acme and one of beta; wait for one issue in each organisation's
    repository."""
    fire(ab, "AcmeAlert", "acme")
    fire(ab, "BetaAlert", "beta")
    poll(lambda: len(gh.issues("acme/alerts")) == 1 and len(gh.issues("beta/alerts")) == 1,
         "one issue in each organisation", 30)


def metric(ab, name):
    st, _, text = http("GET", ab.url + "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if st == 200 and m else -1


def app_yaml(key, installation_id=None, indent="  "):
    s = "%sapp:\n%s  app_id: %d\n%s  private_key_file: %s\n" % (indent, indent, APP_ID, indent,
                                                                 key)
    if installation_id:
        s += "%s  installation_id: %d\n" % (indent, installation_id)
    return s


def reqs(gh, method=None, path_re=".*"):
    return [r for r in gh.get_requests() if (method is None or r["method"] == method) and
            re.fullmatch(path_re, r["path"])]


def auth(r):
    return r["headers"].get("authorization", "")


def creates(gh, repo):
    return reqs(gh, "POST", "/repos/%s/issues" % repo)


def stop_all():
    while live:
        ab = live.pop()
        if ab.alive():
            ab.stop()


def app_github(tmp, installations, repos=("acme/alerts",), slug=None, **fake):
    """A key pair in tmp and the fake GitHub (no personal token works: "no-pat-here") serving
    repos, with the App registered under its public key, installed as installations
    ({installation_id: [owner]}); (private key path, fake)."""
    key, pub = make_key(tmp)
    gh = FakeGitHub(token="no-pat-here", repos=list(repos), **fake).start()
    gh.apps.register(APP_ID, pub, installations, slug=slug)
    return key, gh


def app_service(installation_id=77, **fake):
    """The App installed on acme as installation 77 (app_github(), fake's options) and a
    service filing into acme/alerts as installation installation_id, not started; (gh, ab)."""
    tmp = temp_dir("ab-app-")
    key, gh = app_github(tmp, {77: ["acme"]}, **fake)
    return gh, service(tmp, gh, app_yaml(key, installation_id), [("bridge", "acme/alerts")])


@contextlib.contextmanager
def running(ab, gh):
    """ab started for the block; every service of the case and gh stopped after it."""
    try:
        ab.start()
        yield
    finally:
        stop_all()
        gh.stop()


@run.case
def app_installation_files_an_issue():
    gh, ab = app_service()
    with running(ab, gh):
        fire_and_file(ab, gh, "AppFiles", 1, "the issue filed as the App")
        ex = reqs(gh, "POST", r"/app/installations/77/access_tokens")
        eq(len(ex), 1, "one token exchange")
        eq(ex[0]["status"], 201, "the fake accepted the JWT (signature and claims)")
        check(auth(ex[0]).startswith("Bearer ey"), "the exchange sends the JWT", auth(ex[0]))
        token = gh.apps.issued[0][2]
        c = creates(gh, "acme/alerts")
        eq([auth(r) for r in c], ["Bearer " + token], "the create uses the installation token")
        eq(metric(ab, "alertbridge_github_app_token_renewals_total"), 1.0, "renewals counter")
        eq(metric(ab, "alertbridge_github_app_token_failures_total"), 0.0, "failures counter")


@run.case
def token_renewed_before_expiry():
    gh, ab = app_service()
    gh.apps.token_lifetime_s = 300 + RENEW_WINDOW_S
    with running(ab, gh):
        fire_and_file(ab, gh, "RenewFirst", 1, "the first issue")
        first = len(gh.apps.issued)
        time.sleep(RENEW_WINDOW_S + 0.5)  # now within 5 minutes of the newest expires_at
        fire_and_file(ab, gh, "RenewSecond", 2, "the second issue")
        check(len(gh.apps.issued) > first, "a new token was got before the second create",
              gh.apps.issued)
        eq(tokens_in_use(gh), [t for _, _, t in gh.apps.issued][-1:],
           "the second create used the newest token")
        eq([r for r in gh.get_requests() if r["status"] == 401], [], "no request answered 401")
        eq(metric(ab, "alertbridge_github_app_token_renewals_total"),
           float(len(gh.apps.issued)), "renewals counter: one per token")


def tokens_in_use(gh):
    """Walk the fake's request log in order: each create must carry the token of the newest
    exchange before it (else Failure); the token of the last create."""
    issued = iter(t for _, _, t in gh.apps.issued)
    current, last = None, None
    for r in gh.get_requests():
        if re.fullmatch(r"/app/installations/\d+/access_tokens", r["path"]) and \
                r["status"] == 201:
            current = next(issued)
        elif r["method"] == "POST" and re.fullmatch(r"/repos/[^/]+/[^/]+/issues", r["path"]):
            eq(auth(r), "Bearer %s" % current, "a create carries the newest token")
            last = current
    return [last]


@run.case
def token_renewed_once_after_401():
    gh, ab = app_service()
    with running(ab, gh):
        fire_and_file(ab, gh, "BeforeRevoke", 1, "the first issue")
        with gh.lock:
            gh.apps.revoke_all()
        fire_and_file(ab, gh, "AfterRevoke", 2, "the issue after the revocation")
        c = creates(gh, "acme/alerts")
        eq([r["status"] for r in c], [201, 401, 201], "the create after revocation: 401 then 201")
        eq(len(gh.apps.issued), 2, "one renewal after the 401")
        eq(auth(c[2]), "Bearer " + gh.apps.issued[1][2], "the repeat uses the new token")


@run.case
def installation_found_per_owner():
    tmp = temp_dir("ab-app-")
    key, gh = app_github(tmp, {11: ["acme"], 12: ["beta"]}, repos=["acme/alerts", "beta/alerts"])
    ab = service(tmp, gh, app_yaml(key), [("acme", "acme/alerts"), ("beta", "Beta/alerts")])
    with running(ab, gh):
        fire_and_file(ab, gh, "AcmeOne", 1, "acme's issue", "acme")
        fire_and_file(ab, gh, "BetaOne", 1, "beta's issue", "beta", repo="beta/alerts")
        fire_and_file(ab, gh, "AcmeTwo", 2, "acme's second issue", "acme")
        eq([r["path"] for r in reqs(gh, "GET", r"/repos/[^/]+/[^/]+/installation")],
           ["/repos/acme/alerts/installation", "/repos/Beta/alerts/installation"],
           "one installation look-up per owner")
        eq([i for _, i, _ in gh.apps.issued], [11, 12], "one token per installation")
        tok = {i: t for _, i, t in gh.apps.issued}
        eq([auth(r) for r in creates(gh, "acme/alerts")], ["Bearer " + tok[11]] * 2,
           "acme's creates use installation 11's token")
        eq([auth(r) for r in creates(gh, "Beta/alerts")], ["Bearer " + tok[12]],
           "beta's create uses installation 12's token")


@run.case
def two_organisations_two_credentials():
    tmp = temp_dir("ab-app-")
    key, pub = make_key(tmp)
    gh = FakeGitHub(token="tok-acme-only", repos=["acme/alerts", "beta/alerts"]).start()
    gh.apps.scope_token("tok-acme-only", ["acme"])
    gh.apps.register(APP_ID, pub, {12: ["beta"]})
    with open(os.path.join(tmp, "acme-token"), "w") as f:
        f.write("tok-acme-only\n")
    yaml = ("  token_file: acme-token\n  credentials:\n    - owner: Beta\n" +
            app_yaml(key, indent="      "))
    ab = service(tmp, gh, yaml, [("acme", "acme/alerts"), ("beta", "beta/alerts")])
    with running(ab, gh):
        fire_acme_and_beta(ab, gh)
        eq([auth(r) for r in creates(gh, "acme/alerts")], ["Bearer tok-acme-only"],
           "acme: the default token")
        eq([auth(r) for r in creates(gh, "beta/alerts")], ["Bearer " + gh.apps.issued[0][2]],
           "beta: the App's installation token")
        eq([r for r in gh.get_requests() if r["status"] in (401, 404)], [],
           "no credential was sent where it does not reach")


@run.case
def enterprise_server_paths():
    gh, ab = app_service(path_prefix="/api/v3")
    check(gh.url.endswith("/api/v3"), "the fake serves under /api/v3", gh.url)
    with running(ab, gh):
        fire_and_file(ab, gh, "EnterpriseAlert", 1, "the issue on GHES")
        eq([r["status"] for r in reqs(gh, "POST", "/app/installations/77/access_tokens")], [201],
           "the token exchange under /api/v3")
        eq([r["status"] for r in creates(gh, "acme/alerts")], [201], "the create under /api/v3")


@run.case
def jwt_of_another_key_is_refused():
    tmp = temp_dir("ab-app-")
    key, _ = make_key(tmp)
    _, other_pub = make_key(tmp, "other.pem")
    gh = FakeGitHub(token="no-pat-here", repos=["acme/alerts"]).start()
    gh.apps.register(APP_ID, other_pub, {77: ["acme"]})
    ab = service(tmp, gh, app_yaml(key, 77), [("bridge", "acme/alerts")])
    with running(ab, gh):
        fire(ab, "WrongKey")
        poll(lambda: metric(ab, "alertbridge_github_app_token_failures_total") >= 1,
             "a token failure counted", 30)
        ex = reqs(gh, "POST", r"/app/installations/77/access_tokens")
        check(ex and all(r["status"] == 401 for r in ex), "the fake refuses the signature",
              [r["status"] for r in ex])
        eq(gh.issues("acme/alerts"), [], "no issue without a token")
        eq(creates(gh, "acme/alerts"), [], "no create sent without a token")


def lose_database(ab):
    ab.stop()
    delete_database(ab.db)
    ab.start()


def resolve(ab, name, receiver=None):
    post_alert(ab, name, receiver, ends_ago_s=1)


@run.case
def lost_database_each_organisation_by_its_login():
    tmp = temp_dir("ab-app-")
    gh = FakeGitHub(token="unused", repos=["acme/alerts", "beta/alerts"]).start()
    for tok, owner, login in (("tok-acme", "acme", "alice"), ("tok-beta", "beta", "bob")):
        gh.apps.scope_token(tok, [owner])
        gh.set_login(tok, login)
        with open(os.path.join(tmp, owner + "-token"), "w") as f:
            f.write(tok + "\n")
    yaml = ("  token_file: acme-token\n  credentials:\n"
            "    - {owner: beta, token_file: beta-token}\n")
    ab = service(tmp, gh, yaml, [("acme", "acme/alerts"), ("beta", "beta/alerts")])
    with running(ab, gh):
        fire_acme_and_beta(ab, gh)
        eq([i["user"]["login"] for i in gh.issues("beta/alerts")], ["bob"], "beta's by bob")
        lose_database(ab)
        gh.get_requests(clear=True)
        resolve(ab, "BetaAlert", "beta")
        poll(lambda: gh.issues("beta/alerts")[0]["state"] == "closed", "bob's issue closed", 30)
        eq(len(gh.issues("beta/alerts")), 1, "no second issue in beta")
        lists = [r for r in reqs(gh, "GET", "/repos/beta/alerts/issues")
                 if "creator" in r["query"]]
        eq([(r["query"]["creator"], auth(r)) for r in lists], [("bob", "Bearer tok-beta")],
           "beta's rebuild lists creator=bob with beta's token")
        eq([auth(r) for r in reqs(gh, "GET", "/user")], ["Bearer tok-beta"],
           "GET /user with beta's own token")


@run.case
def lost_database_app_rebuilds_by_its_bot_login():
    gh, ab = app_service(slug="octo-alerts")
    with running(ab, gh):
        fire_and_file(ab, gh, "AppAlert", 1, "the App's issue")
        eq(gh.issues("acme/alerts")[0]["user"]["login"], "octo-alerts[bot]",
           "made by <slug>[bot]")
        with gh.lock:  # a person removes the issue's labels in the web UI
            gh.repos["acme/alerts"]["issues"][1]["labels"] = []
        lose_database(ab)
        gh.get_requests(clear=True)
        resolve(ab, "AppAlert")
        poll(lambda: gh.issues("acme/alerts")[0]["state"] == "closed", "the issue closed", 30)
        eq(len(gh.issues("acme/alerts")), 1, "no duplicate")
        eq(reqs(gh, "GET", "/user"), [], "GET /user is never asked with an App")
        apps = reqs(gh, "GET", "/app")
        eq([r["status"] for r in apps], [200], "GET /app once")
        check(auth(apps[0]).startswith("Bearer ey"), "with the JWT", auth(apps[0])[:12])
        eq([r["query"].get("creator") for r in reqs(gh, "GET", "/repos/acme/alerts/issues")
            if "labels" in r["query"] or "creator" in r["query"]], ["octo-alerts[bot]"],
           "the rebuild lists creator=<slug>[bot]")


@run.case
def wrong_installation_is_unauthorized():
    gh, ab = app_service(78)
    with running(ab, gh):
        fire(ab, "WrongInstallation")
        poll(lambda: metric(ab, "alertbridge_github_unauthorized_total") >= 1,
             "the wrong installation counted as unauthorized", 30)
        check(metric(ab, "alertbridge_github_app_token_failures_total") >= 1,
              "and as a token failure")
        eq([r["status"] for r in reqs(gh, "POST", "/app/installations/78/access_tokens")][:1],
           [404], "GitHub answers 404 for an installation the App does not have")
        eq(creates(gh, "acme/alerts"), [], "no create without a token")


def check_config(tmp, github_yaml):
    path = os.path.join(tmp, "alertbridge.yml")
    with open(path, "w") as f:
        f.write("listen_address: 127.0.0.1:9\ndatabase: ab.db\ngithub:\n%s"
                "receivers:\n  - name: r\n    repo: acme/alerts\n" % github_yaml)
    p = subprocess.run([ALERTBRIDGE, "check-config", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    return p.returncode, p.stderr.decode()


@run.case
def check_config_refuses_bad_keys():
    tmp = temp_dir("ab-app-")
    key, _ = make_key(tmp)
    subprocess.run(["openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out",
                    os.path.join(tmp, "ec.pem")], check=True, timeout=60)
    with open(os.path.join(tmp, "tok"), "w") as f:
        f.write("a-token\n")
    rc, err = check_config(tmp, app_yaml(key))
    eq(rc, 0, "an RSA key (PKCS#8) passes: " + err)
    rc, err = check_config(tmp, app_yaml("ec.pem"))
    eq(rc, 1, "an EC key is refused")
    check("alertbridge.yml:6: github.app.private_key_file: " in err and
          "not an RSA private key" in err, "names file:line and says why", err)
    rc, err = check_config(tmp, app_yaml("missing.pem"))
    eq(rc, 1, "a missing key is refused")
    check("alertbridge.yml:6: github.app.private_key_file: cannot read" in err,
          "names file:line of the unreadable key", err)
    rc, err = check_config(tmp, "  credentials:\n    - {owner: acme, token_file: tok}\n"
                           "    - {owner: ACME, token_file: tok}\n")
    eq(rc, 1, "a duplicate owner is refused")
    check("duplicate owner" in err, "says duplicate owner", err)


def on_failure(name):
    for ab in live:
        print_tail("alertbridge log (%s)" % name, ab.tail(80))
    stop_all()


if __name__ == "__main__":
    event("alertbridge binary: %s" % ALERTBRIDGE)
    sys.exit(run.run(on_failure=on_failure))
