#!/usr/bin/env python3
"""fake_slack.py - a stateful fake of the Slack Web API methods the janitor calls.

Follows docs.slack.dev/reference/methods: chat.postMessage (POST JSON or form; answers ok,
channel ID, ts and the message; thread_ts recorded), users.lookupByEmail (GET ?email=),
conversations.open (POST {"users": ID}: a DM channel "D..."), chat.update (channel, ts:
message_not_found for a message it does not hold, cant_update_message for one another
user posted; the message's text and blocks replaced), and an incoming webhook
(POST /services/T/B/X answers the text "ok").

Interactivity (docs.slack.dev/interactivity/handling-user-interaction): click() sends a
block_actions payload to the app's Request URL as Slack does - POST
application/x-www-form-urlencoded "payload=<JSON>", signed per "Verifying requests from
Slack" (X-Slack-Request-Timestamp, X-Slack-Signature "v0=" + hex HMAC-SHA256 of
"v0:{timestamp}:{body}" with the signing secret), with a response_url of this fake
(POST /actions/T0FAKE/N/TOKEN: JSON {"text", "response_type", "replace_original", ...},
answered {"ok": true}; used at most 5 times and for 30 minutes, then "used_url" /
"expired_url"; recorded in responses).  As Slack does, errors come back as HTTP 200
{"ok": false, "error": CODE} (not_authed without a token, invalid_auth with a wrong one,
channel_not_found, users_not_found, user_not_found, no_text, invalid_json, msg_too_long for a
text over 40,000 characters, invalid_blocks past Block Kit's limits), rate limits as
HTTP 429 {"ok": false, "error": "ratelimited"} with Retry-After (seconds).  Channels: "#name"
and any known ID are accepted (a "#name" is answered with a stable "C..." ID); "C..."/"G..."
IDs not known are channel_not_found.

As a module:  fs = FakeSlack(token="xoxb-T").start(); fs.api_url; ...; fs.stop()
As a script:  python3 fake_slack.py --port 0 --port-file F --token T

Side door (no auth, never recorded), JSON:
  GET  /_fake/messages            posted messages (channel, channel_id, text, thread_ts, ts,
                                  time)
  GET  /_fake/requests[?clear=1]  every API request (method, path, query, headers, body,
                                  status, answer, time)
  POST /_fake/user                {id, email}  a workspace member
  POST /_fake/channel             {id, name}   a channel
  POST /_fake/fault               {method (Slack method, regex), count, status (429: with
                                   retry_after_s), error (ok:false code), retry_after_s,
                                   delay_s (answer only after it: a client timeout)}
  GET  /_fake/responses           what was posted to response URLs (url, body, time)
  POST /_fake/reset               forget messages, requests, responses and faults
"""

import copy
import hashlib
import hmac
import json
import os
import re
import sys
import time
import urllib.parse

import fake_base

WEBHOOK_PATH = "/services/T0FAKE/B0FAKE/fakewebhooksecret"


# chat.postMessage limits (docs.slack.dev/reference/methods/chat.postMessage, Block Kit
# reference): text over 40,000 characters is msg_too_long; blocks as in blocks_problem().
TEXT_MAX_CHARS = 40000
BLOCKS_MAX = 50
SECTION_TEXT_MAX = 3000
HEADER_TEXT_MAX = 150

class FakeSlack(fake_base.FakeServer):
    """The fake's state and its HTTP server (start, stop, url, get_requests:
    fake_base.FakeServer).  All state is guarded by self.lock (reentrant)."""

    thread_name = "fake-slack"

    def __init__(self, token="xoxb-test-token", host="127.0.0.1", port=0):
        fake_base.FakeServer.__init__(self, host, port)
        self.token = token
        self.users = {}       # id -> email
        self.channels = {}    # id -> name
        self.dms = {}         # user id -> D... channel
        self.messages = []
        self.responses = []   # what was posted to response URLs (url, body, time)
        self.response_urls = {}  # path -> {"uses": n, "created": t}
        self.last_ts = 0.0

    @property
    def api_url(self):
        return self.url + "/api"

    @property
    def webhook_url(self):
        return self.url + WEBHOOK_PATH

    # ----- Python API --------------------------------------------------------------------------
    def add_user(self, user_id, email):
        with self.lock:
            self.users[user_id] = email

    def add_channel(self, channel_id, name):
        with self.lock:
            self.channels[channel_id] = name.lstrip("#")

    def add_fault(self, method=".*", count=1, status=200, error="internal_error",
                  retry_after_s=None, delay_s=0):
        """The next `count` calls of a Slack method (regex, full match, e.g.
        "chat.postMessage"; "webhook" for the incoming webhook) fail: status 429 answers
        {"ok": false, "error": "ratelimited"} with Retry-After retry_after_s (default 1); any
        other status answers {"ok": false, "error": error} with that HTTP status.  delay_s > 0
        holds the answer back that long (a client timeout); with error None the call is then
        served as usual (posted at once, answered late: what a client that gave up cannot
        know), else it fails as above (nothing posted)."""
        with self.lock:
            self.faults.append({"method": method, "count": int(count), "status": int(status),
                                "error": error, "retry_after_s": retry_after_s,
                                "delay_s": float(delay_s)})

    def get_messages(self):
        with self.lock:
            return copy.deepcopy(self.messages)

    def reset(self):
        with self.lock:
            self.messages = []
            self.requests = []
            self.faults = []
            self.responses = []

    # ----- side door (fake_base.FakeServer.handle_side: requests, faults, reset) ---------------
    def side_get(self, path, query):
        """GET /_fake/messages and /_fake/responses of the header's list."""
        if path == "/_fake/messages":
            return 200, self.get_messages()
        if path == "/_fake/responses":
            return 200, self.get_responses()
        return None

    def side_post(self, path, body):
        """POST /_fake/user and /_fake/channel of the header's list."""
        if path == "/_fake/user":
            self.add_user(body["id"], body["email"])
            return 200, {"ok": True}
        if path == "/_fake/channel":
            self.add_channel(body["id"], body["name"])
            return 200, {"ok": True}
        return None

    # ----- internals (caller holds the lock) --------------------------------------------------
    def _channel_id(self, name):
        name = name.lstrip("#")
        for cid, n in self.channels.items():
            if n == name:
                return cid
        cid = "C" + hashlib.sha1(name.encode()).hexdigest()[:9].upper()
        self.channels[cid] = name
        return cid

    def _ts(self):
        t = max(time.time(), self.last_ts + 0.000001)
        self.last_ts = t
        return "%.6f" % t

    # ----- interactivity ---------------------------------------------------------------------------
    def new_response_url(self):
        with self.lock:
            n = len(self.response_urls) + 1
            path = "/actions/T0FAKE/%d/%s" % (n, hashlib.sha256(str(n).encode()).hexdigest()[:24])
            self.response_urls[path] = {"uses": 0, "created": time.time()}
            return self.url + path

    def get_responses(self):
        with self.lock:
            return copy.deepcopy(self.responses)

    def message(self, ts):
        with self.lock:
            for m in self.messages:
                if m["ts"] == ts:
                    return copy.deepcopy(m)
            return None

    def click_request(self, message, value, signing_secret, user="U0ALICE",
                      action_id="postpone", timestamp=None, response_url=None):
        """(body bytes, headers) of a click on the button of value in message (a posted
        message, as get_messages() lists it), as Slack sends it (block_actions, form-encoded:
        urllib's quote_plus, spaces as '+', as Slack's bodies are)."""
        ts = str(int(time.time()) if timestamp is None else int(timestamp))
        payload = {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "name": user.lower(),
                     "team_id": "T0FAKE"},
            "api_app_id": "A0FAKE", "token": "legacy-verification-token",
            "container": {"type": "message", "message_ts": message["ts"],
                          "channel_id": message["channel_id"], "is_ephemeral": False},
            "trigger_id": "%d.%d.%s" % (time.time() * 1000, 42, os.urandom(8).hex()),
            "team": {"id": "T0FAKE", "domain": "fake"},
            "channel": {"id": message["channel_id"], "name": "fake"},
            "message": {"type": "message", "text": message["text"], "ts": message["ts"],
                        "user": "U0BOT", "blocks": message.get("blocks") or []},
            "response_url": response_url or self.new_response_url(),
            "actions": [{"action_id": action_id, "block_id": "keep", "type": "button",
                         "text": {"type": "plain_text", "text": "Keep"}, "value": value,
                         "action_ts": "%.6f" % time.time()}],
        }
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode("utf-8")
        sig = "v0=" + hmac.new(signing_secret.encode("utf-8"),
                               b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
        return body, {"Content-Type": "application/x-www-form-urlencoded",
                      "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
                      "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)"}

    def _respond(self, path, raw):
        """A POST to a response URL (docs.slack.dev/interactivity/handling-user-interaction
        #message_responses): JSON with text; 5 uses within 30 minutes."""
        r = self.response_urls.get(path)
        if r is None:
            return 404, {"ok": False, "error": "invalid_url"}, {}, "response_url"
        if time.time() - r["created"] > 1800:
            return 404, {"ok": False, "error": "expired_url"}, {}, "response_url"
        if r["uses"] >= 5:
            return 404, {"ok": False, "error": "used_url"}, {}, "response_url"
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return 400, {"ok": False, "error": "invalid_payload"}, {}, "response_url"
        if not isinstance(body, dict) or not (body.get("text") or body.get("blocks")):
            return 400, {"ok": False, "error": "no_text"}, {}, "response_url"
        r["uses"] += 1
        self.responses.append({"url": self.url + path, "body": body, "time": time.time()})
        return 200, {"ok": True}, {}, "response_url"

    def _update(self, args):
        """chat.update (docs.slack.dev/reference/methods/chat.update)."""
        channel, ts = args.get("channel"), args.get("ts")
        if not channel or channel.startswith("#"):
            return 200, {"ok": False, "error": "channel_not_found"}, {}
        for m in self.messages:
            if m["ts"] == ts and m["channel_id"] == channel:
                if not args.get("text") and not args.get("blocks"):
                    return 200, {"ok": False, "error": "no_text"}, {}
                bad = blocks_problem(args.get("blocks"))
                if bad:
                    return 200, {"ok": False, "error": "invalid_blocks", "errors": [bad]}, {}
                m["history"] = m.get("history", []) + [{"text": m["text"],
                                                        "blocks": m.get("blocks")}]
                m["text"] = args.get("text")
                m["blocks"] = args.get("blocks")
                m["edited"] = time.time()
                return 200, {"ok": True, "channel": channel, "ts": ts, "text": m["text"],
                             "message": {"text": m["text"], "user": "U0BOT"}}, {}
        return 200, {"ok": False, "error": "message_not_found"}, {}

    def _take_fault(self, method):
        return self._pop_fault(lambda f: re.fullmatch(f["method"], method))

    def handle(self, http_method, path, query, headers, raw):
        """Returns (status, body (dict or str), headers, method name)."""
        if path == WEBHOOK_PATH:
            return self._webhook(http_method, headers, raw)
        if path.startswith("/actions/") and http_method == "POST":
            return self._respond(path, raw)
        m = re.fullmatch(r"/api/([A-Za-z.]+)", path)
        if not m:
            return 404, "<html>404 Not Found</html>", {}, None
        method = m.group(1)
        fault = self._take_fault(method)
        if fault and fault.get("delay_s"):
            delay = {"_delay_s": fault["delay_s"]}   # the handler waits, without the lock
            if fault["error"] is None:
                st, body, extra, name = self.handle_normally(method, query, headers, raw)
                extra = dict(extra, **delay)
                return st, body, extra, name
            return fault["status"], {"ok": False, "error": fault["error"]}, delay, method
        if fault and fault["status"] == 429:
            ra = fault["retry_after_s"] if fault["retry_after_s"] is not None else 1
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(ra)}, method
        if fault:
            return fault["status"], {"ok": False, "error": fault["error"]}, {}, method
        return self.handle_normally(method, query, headers, raw)

    def handle_normally(self, method, query, headers, raw):
        """A Web API call without faults; returns as handle()."""
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        args = {k: v[-1] for k, v in query.items()}
        if raw:
            if ctype == "application/json":
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    return 200, {"ok": False, "error": "invalid_json"}, {}, method
                if not isinstance(body, dict):
                    return 200, {"ok": False, "error": "invalid_json"}, {}, method
                args.update(body)
            elif ctype == "application/x-www-form-urlencoded":
                args.update({k: v[-1] for k, v in urllib.parse.parse_qs(
                    raw.decode("utf-8", "replace")).items()})
            else:
                return 200, {"ok": False, "error": "invalid_form_data"}, {}, method
        auth = re.fullmatch(r"Bearer\s+(\S+)", headers.get("authorization", "").strip())
        token = auth.group(1) if auth else args.get("token")
        if not token:
            return 200, {"ok": False, "error": "not_authed"}, {}, method
        if token != self.token:
            return 200, {"ok": False, "error": "invalid_auth"}, {}, method
        if method == "chat.postMessage":
            return self._post(args) + (method,)
        if method == "chat.update":
            return self._update(args) + (method,)
        if method == "users.lookupByEmail":
            email = args.get("email", "")
            for uid, e in self.users.items():
                if e.lower() == email.lower():
                    return 200, {"ok": True, "user": {"id": uid, "name": e.split("@")[0],
                                                      "profile": {"email": e}}}, {}, method
            return 200, {"ok": False, "error": "users_not_found"}, {}, method
        if method == "conversations.open":
            users = args.get("users", "")
            if not users or "," in users:
                return 200, {"ok": False, "error": "not_enough_users" if not users
                             else "too_many_users"}, {}, method
            if users not in self.users:
                return 200, {"ok": False, "error": "user_not_found"}, {}, method
            dm = self.dms.setdefault(users, "D" + users[1:])
            return 200, {"ok": True, "channel": {"id": dm}}, {}, method
        return 200, {"ok": False, "error": "unknown_method"}, {}, method

    def _post(self, args):
        channel = args.get("channel")
        text = args.get("text")
        if not channel:
            return 200, {"ok": False, "error": "channel_not_found"}, {}
        if channel.startswith("#"):
            cid = self._channel_id(channel)
        elif channel.startswith("D") and channel in self.dms.values():
            cid = channel
        elif channel in self.channels:
            cid = channel
        elif channel in self.users:   # posting to a user ID lands in the DM (app's DM)
            cid = self.dms.setdefault(channel, "D" + channel[1:])
        else:
            return 200, {"ok": False, "error": "channel_not_found"}, {}
        if not text and not args.get("blocks") and not args.get("attachments"):
            return 200, {"ok": False, "error": "no_text"}, {}
        if text and len(text) > TEXT_MAX_CHARS:
            return 200, {"ok": False, "error": "msg_too_long"}, {}
        bad = blocks_problem(args.get("blocks"))
        if bad:
            return 200, {"ok": False, "error": "invalid_blocks",
                         "errors": [bad]}, {}
        ts = self._ts()
        msg = {"channel": channel, "channel_id": cid, "text": text,
               "thread_ts": args.get("thread_ts") or None, "ts": ts, "time": time.time(),
               "unfurl_links": args.get("unfurl_links"), "blocks": args.get("blocks")}
        self.messages.append(msg)
        answer = {"type": "message", "text": text, "user": "U0BOT", "bot_id": "B0BOT", "ts": ts}
        if msg["thread_ts"]:
            answer["thread_ts"] = msg["thread_ts"]
        return 200, {"ok": True, "channel": cid, "ts": ts, "message": answer}, {}

    def _webhook(self, http_method, headers, raw):
        fault = self._take_fault("webhook")
        if fault and fault["status"] == 429:
            ra = fault["retry_after_s"] if fault["retry_after_s"] is not None else 1
            return 429, "rate_limited", {"Retry-After": str(ra)}, "webhook"
        if fault:
            return fault["status"], fault["error"], {}, "webhook"
        if http_method != "POST":
            return 405, "invalid_request", {}, "webhook"
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return 400, "invalid_payload", {}, "webhook"
        if not isinstance(body, dict) or not body.get("text"):
            return 400, "no_text", {}, "webhook"
        self.messages.append({"channel": "(webhook)", "channel_id": "", "text": body["text"],
                              "thread_ts": None, "ts": "", "time": time.time()})
        return 200, "ok", {}, "webhook"


class SlackHandler(fake_base.FakeHandler):
    def _send(self, status, body, headers=None):
        if isinstance(body, str):
            data, ctype = body.encode("utf-8"), "text/html"
        else:
            data, ctype = json.dumps(body).encode("utf-8"), "application/json; charset=utf-8"
        self._write(status, data, [("Content-Type", ctype)] + list((headers or {}).items()))

    def _handle(self):
        fake = self.fake
        path, query, _, raw = self._read()
        if self._side_door(path, query, raw):
            return
        headers = self._headers()
        with fake.lock:
            st, body, extra, method = fake.handle(self.command, path, query, headers, raw)
            fake.requests.append(self._record(path, query, headers, raw, slack_method=method,
                                              status=st, answer=body,
                                              delayed_s=extra.get("_delay_s")))
        delay = extra.pop("_delay_s", None)
        if delay:
            time.sleep(delay)
        try:
            self._send(st, body, extra)
        except OSError:  # the client gave up waiting
            self.close_connection = True

    do_GET = do_POST = _handle


FakeSlack.handler = SlackHandler


def blocks_problem(blocks):
    """Why Slack would answer invalid_blocks for blocks (None: fine), as its Block Kit
    reference says: at most 50 blocks a message, a section's text and each of its fields at
    most 3,000 characters, a header's 150."""
    if blocks is None:
        return None
    if not isinstance(blocks, list):
        return "blocks must be an array"
    if len(blocks) > BLOCKS_MAX:
        return "no more than %d items allowed [json-pointer:/blocks]" % BLOCKS_MAX
    for i, b in enumerate(blocks):
        if not isinstance(b, dict) or "type" not in b:
            return "missing type [json-pointer:/blocks/%d]" % i
        texts = []
        if b["type"] == "section":
            texts = [(b.get("text") or {}).get("text") or ""] + [
                (f or {}).get("text") or "" for f in b.get("fields") or []]
            limit = SECTION_TEXT_MAX
        elif b["type"] == "header":
            texts, limit = [(b.get("text") or {}).get("text") or ""], HEADER_TEXT_MAX
        for t in texts:
            if len(t) > limit:
                return ("must be less than %d characters [json-pointer:/blocks/%d/text]"
                        % (limit + 1, i))
    return None


def main(argv=None):
    ap = fake_base.arg_parser("a fake of the Slack Web API for the janitor", "xoxb-test-token")
    args = ap.parse_args(argv)
    fs = FakeSlack(token=args.token, host=args.host, port=args.port).start()
    return fake_base.serve(fs, args.port_file, "fake slack")


if __name__ == "__main__":
    sys.exit(main())
