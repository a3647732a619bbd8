"""fake_github_app.py - GitHub Apps for fake_github.py: JWTs, installations, installation tokens.

Follows GitHub's "Generating a JSON Web Token (JWT) for a GitHub App", "Authenticating as a
GitHub App installation" and the REST endpoints "Create an installation access token for an
app" (POST /app/installations/{installation_id}/access_tokens, JWT auth, 201 {token,
expires_at, permissions, repository_selection}) and "Get a repository installation for the
authenticated app" (GET /repos/{owner}/{repo}/installation, JWT auth, 200 {id, account, ...};
404 when the App is not installed there), and "Get the authenticated app" (GET /app: "You must
use a JWT to access this endpoint"; 200 {id, slug, name, ...}; an installation token is refused
there, as the docs' token table says: 403 "Resource not accessible by integration").

Identity ("About authentication with a GitHub App" / "Authenticating as a GitHub App
installation": what an installation does "will be attributed to the app"): an installation
token acts as the login "<slug>[bot]" (slug: register(..., slug=), default "app-<id>"), which is
the author of the issues and comments it makes; it cannot read GET /user ("Get the authenticated
user" works with user tokens only): 403 "Resource not accessible by integration".

A JWT is accepted only when its header says RS256, its RS256 signature verifies against the
public key the test registered for the App (checked with `openssl dgst -sha256 -verify`: Python
has no RSA), iss is the App's ID, iat is not more than 60 s in the future, exp is in the future
and not more than 10 minutes after iat.  Anything else is 401 with GitHub's messages.

Installation tokens expire after token_lifetime_s (settable by the test, so renewal can be
tested); an expired or revoked one is 401 "Bad credentials".  A token reaches only the owners
its installation is on: another owner's repositories are 404, as GitHub answers.

Personal tokens can be scoped to owners too (scope_token): the fake's main token reaches every
repository unless scoped.
"""

import atexit
import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading

JWT_MAX_LIFETIME_S = 600
CLOCK_DRIFT_S = 60


def _b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class AppError(Exception):
    def __init__(self, status, message):
        Exception.__init__(self, message)
        self.status = status
        self.message = message


class FakeApps:
    """Apps registered by the test; the fake's lock guards every call."""

    def __init__(self, now):
        self.now = now                 # the fake's clock (seconds)
        self.apps = {}                 # app_id -> {"pub": path, "installations": {id: [owners]}}
        self.tokens = {}               # installation token -> {"inst", "owners", "expires"}
        self.scopes = {}               # personal token -> [owners] it reaches
        self.token_lifetime_s = 3600.0
        self.issued = []               # (app_id, installation_id, token) in order
        self.lock = threading.Lock()
        self.dir = tempfile.mkdtemp(prefix="fakegh-app-")
        atexit.register(shutil.rmtree, self.dir, True)  # the fake may be started again

    # ----- set up by the test ------------------------------------------------------------------
    def register(self, app_id, public_key_pem, installations, slug=None):
        """App app_id with this public key (PEM text), installed as {installation_id: [owner]};
        slug: its URL name (default "app-<id>"), whose "<slug>[bot]" authors what it makes."""
        path = os.path.join(self.dir, "app-%d.pub.pem" % int(app_id))
        with open(path, "w") as f:
            f.write(public_key_pem)
        self.apps[int(app_id)] = {"pub": path, "slug": slug or "app-%d" % int(app_id),
                                  "installations": {int(i): [o.lower() for o in owners]
                                                    for i, owners in installations.items()}}

    def login_of(self, token):
        """The login an installation token acts as ("<slug>[bot]"); None for other tokens."""
        t = self.tokens.get(token)
        return None if t is None else "%s[bot]" % self.apps[t["app"]]["slug"]

    def revoke_all(self):
        """Every installation token issued so far stops working (401), as after a revocation."""
        self.tokens.clear()

    def scope_token(self, token, owners):
        self.scopes[token] = [o.lower() for o in owners]

    # ----- checks ------------------------------------------------------------------------------
    def _verify_jwt(self, jwt):
        parts = jwt.split(".")
        if len(parts) != 3:
            raise AppError(401, "A JSON web token could not be decoded")
        try:
            header = json.loads(_b64url_decode(parts[0]))
            claims = json.loads(_b64url_decode(parts[1]))
            sig = _b64url_decode(parts[2])
        except ValueError:
            raise AppError(401, "A JSON web token could not be decoded")
        if header.get("alg") != "RS256":
            raise AppError(401, "A JSON web token could not be decoded")
        try:
            app_id = int(claims.get("iss"))
        except (TypeError, ValueError):
            raise AppError(401, "'Issuer' claim ('iss') must be an Integer")
        app = self.apps.get(app_id)
        if app is None:
            raise AppError(401, "Integration not found")
        with tempfile.NamedTemporaryFile(dir=self.dir, delete=False) as f:
            f.write(sig)
            sig_path = f.name
        try:
            p = subprocess.run(["openssl", "dgst", "-sha256", "-verify", app["pub"],
                                "-signature", sig_path],
                               input=("%s.%s" % (parts[0], parts[1])).encode(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        finally:
            os.unlink(sig_path)
        if p.returncode != 0:
            raise AppError(401, "A JSON web token could not be decoded")
        now = self.now()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or iat > now + CLOCK_DRIFT_S:
            raise AppError(401, "'Issued at' claim ('iat') must be an Integer representing "
                           "a time in the past")
        if not isinstance(exp, int) or exp <= now:
            raise AppError(401, "'Expiration time' claim ('exp') must be a numeric value "
                           "representing the future time at which the assertion expires")
        if exp - iat > JWT_MAX_LIFETIME_S:
            raise AppError(401, "'Expiration time' claim ('exp') is too far in the future")
        return app_id, app

    # ----- the API (called by fake_github with the fake's lock held) ---------------------------
    def handle(self, method, path, bearer):
        """(status, body) for an App endpoint, or None when path is not one."""
        if path == "/app" and method == "GET":
            if bearer in self.tokens:
                raise AppError(403, "Resource not accessible by integration")
            app_id, app = self._verify_jwt(bearer)
            return 200, {"id": app_id, "slug": app["slug"], "node_id": "A_%d" % app_id,
                         "name": app["slug"], "owner": {"login": "app-owner", "type": "User"},
                         "permissions": {"issues": "write", "metadata": "read"},
                         "installations_count": len(app["installations"])}
        m = re.fullmatch(r"/app/installations/(\d+)/access_tokens", path)
        if m and method == "POST":
            app_id, app = self._verify_jwt(bearer)
            inst = int(m.group(1))
            owners = app["installations"].get(inst)
            if owners is None:
                raise AppError(404, "Not Found")
            token = "ghs_" + secrets.token_hex(18)
            expires = self.now() + self.token_lifetime_s
            self.tokens[token] = {"app": app_id, "inst": inst, "owners": owners,
                                  "expires": expires}
            self.issued.append((app_id, inst, token))
            return 201, {"token": token, "expires_at": _iso(expires),
                         "permissions": {"issues": "write", "metadata": "read"},
                         "repository_selection": "all"}
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/installation", path)
        if m and method == "GET":
            app_id, app = self._verify_jwt(bearer)
            for inst, owners in app["installations"].items():
                if m.group(1).lower() in owners:
                    return 200, {"id": inst, "app_id": app_id,
                                 "account": {"login": m.group(1), "type": "Organization"},
                                 "target_type": "Organization"}
            raise AppError(404, "Not Found")
        return None

    def check_token(self, token, path):
        """None when token is not one of ours; else raises AppError or returns True."""
        owner = None
        m = re.match(r"/repos/([^/]+)/", path + "/")
        if m:
            owner = m.group(1).lower()
        t = self.tokens.get(token)
        if t is not None:
            if t["expires"] <= self.now():
                raise AppError(401, "Bad credentials")
            if owner is not None and owner not in t["owners"]:
                raise AppError(404, "Not Found")
            return True
        if token in self.scopes:
            if owner is not None and owner not in self.scopes[token]:
                raise AppError(404, "Not Found")
            return True
        return None


def _iso(ts):
    import datetime
    return datetime.datetime.fromtimestamp(int(ts), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
