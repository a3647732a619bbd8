"""fake_base.py - the HTTP server the fakes share (fake_github.py, fake_slack.py, fake_kube.py).

What every fake has in common, and only that: a ThreadingHTTPServer on a thread of its own
(start, stop, url), the lock that guards a fake's state, the requests it recorded and the
faults it was told to inject (counted down, gone at zero), a quiet HTTP/1.1 handler that reads
one request and writes one answer, and the life of a fake run as a script (port file, SIGTERM).
What a fake answers, and the public API documentation it follows, stays in the fake's own file.
(fake_github_app.py serves nothing itself: fake_github.py routes the App endpoints to it.)
"""

import argparse
import copy
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Reply(Exception):
    """Raised by handlers to answer with status, JSON body and extra headers."""

    def __init__(self, status, body=None, headers=None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def parse_body(raw):
    """A request body as the fakes record it: its JSON, else its text, None when empty."""
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        return raw.decode("utf-8", "replace")


class FakeServer:
    """A fake's HTTP server and the state every fake keeps.  All state is guarded by self.lock
    (reentrant).  A subclass names its handler (a FakeHandler subclass) and its thread."""

    handler = None        # the fake's FakeHandler subclass
    thread_name = "fake"

    def __init__(self, host, port):
        self.host = host
        self.port = port
        self.lock = threading.RLock()
        self.requests = []
        self.faults = []
        self.server = None
        self.thread = None

    # ----- lifecycle -------------------------------------------------------------------------
    def start(self):
        class Handler(self.handler):
            pass

        Handler.fake = self
        self.server = ThreadingHTTPServer((self.host, self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name=self.thread_name,
                                       kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    # ----- recorded requests and injected faults ----------------------------------------------
    def get_requests(self, clear=False):
        with self.lock:
            out = copy.deepcopy(self.requests)
            if clear:
                self.requests = []
        return out

    def _pop_fault(self, matches):
        """The first fault that matches(fault) says is for this request, counted down (gone
        when its count reaches zero); a copy of it, or None.  Caller holds the lock."""
        for f in self.faults:
            if matches(f):
                f["count"] -= 1
                if f["count"] <= 0:
                    self.faults.remove(f)
                return dict(f)
        return None


    # ----- the side door (no auth, never recorded) --------------------------------------------
    state = None  # a fake's state() for GET /_fake/state (None: the fake has no such call)

    def handle_side(self, method, path, query, raw):
        """One side-door call: GET /_fake/requests[?clear=1] and /_fake/state, POST /_fake/fault
        and /_fake/reset here, the fake's own GETs in side_get(path, query) and POSTs in
        side_post(path, body).  Returns (status, JSON body)."""
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            return 400, {"message": "bad json"}
        try:
            if method == "GET":
                answer = self.side_get(path, query)
                if answer is not None:
                    return answer
            if path == "/_fake/requests" and method == "GET":
                return 200, self.get_requests(clear=query.get("clear", ["0"])[-1] == "1")
            if path == "/_fake/state" and method == "GET" and self.state is not None:
                return 200, self.state()
            if method != "POST":
                return 404, {"message": "unknown side-door call"}
            if path == "/_fake/fault":
                self.add_fault(**body)
                return 200, {"ok": True}
            if path == "/_fake/reset":
                self.reset()
                return 200, {"ok": True}
            answer = self.side_post(path, body)
            if answer is not None:
                return answer
        except Reply as r:
            return r.status, r.body
        except (KeyError, TypeError, ValueError) as e:
            return 400, {"message": "bad side-door call: %s" % e}
        return 404, {"message": "unknown side-door call"}

    def side_get(self, path, query):
        """The fake's own side-door GET of path: (status, JSON body), or None: no such call."""
        return None

    def side_post(self, path, body):
        """The fake's own side-door POST to path: (status, JSON body), or None: no such call."""
        return None


class QuietHandler(BaseHTTPRequestHandler):
    """An HTTP/1.1 handler that logs nothing (the tests print what matters), without Nagle:
    the fakes', and the proxies' and small servers' of the tests."""
    protocol_version = "HTTP/1.1"
    # The headers and the body are two writes: with Nagle on, the body waits for the
    # client's delayed ACK of the headers (40 ms on Linux), one stall per answer.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass


class LocalServer:
    """A base for the tests' small servers (proxies, a fake Alertmanager): _serve(handler)
    serves it from a ThreadingHTTPServer on 127.0.0.1 at a port of the kernel's choice, on a
    daemon thread (self.server, self.port, self.url); stop() shuts it down."""

    def _serve(self, handler, quiet_errors=False):
        """quiet_errors: a connection reset by the client (a SIGKILLed bridge) is not worth a
        traceback."""
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        if quiet_errors:
            self.server.handle_error = lambda request, address: None
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.server.serve_forever, daemon=True,
                         kwargs={"poll_interval": 0.1}).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class FakeHandler(QuietHandler):
    fake = None  # set on the per-server subclass

    def _read(self):
        """The request being handled: (path, parsed query, raw query string, raw body)."""
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        return url.path, query, url.query, raw

    def _headers(self):
        return {k.lower(): v for k, v in self.headers.items()}

    def _side_door(self, path, query, raw):
        """When path is a side-door call (/_fake/...): answer it (FakeServer.handle_side, under
        the fake's lock) with self._send(status, body) and return True; else False."""
        if not path.startswith("/_fake/"):
            return False
        with self.fake.lock:
            status, body = self.fake.handle_side(self.command, path, query, raw)
        self._send(status, body)
        return True

    def _record(self, path, query, headers, raw, **extra):
        """The record of this request the side door's /_fake/requests shows."""
        rec = {"method": self.command, "path": path,
               "query": {k: v[-1] for k, v in query.items()}, "headers": headers,
               "body": parse_body(raw), "time": time.time(), "status": None}
        rec.update(extra)
        return rec

    def _write(self, status, data, headers):
        """Answer status with the headers (pairs, in order; Content-Length added) and the
        bytes data (not for HEAD)."""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _drop(self):
        """Close the connection without an answer."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def arg_parser(description, token):
    """The command line every fake takes: --host, --port, --port-file, --token."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--token", default=token)
    return ap


def serve(fake, port_file, what):
    """A started fake's life as a script: write its port to port_file (atomically), say where it
    listens, serve until SIGTERM or SIGINT, stop."""
    if port_file:
        tmp = port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % fake.port)
        os.replace(tmp, port_file)
    print("%s listening on %s" % (what, fake.url), file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    while not stop.wait(0.5):
        pass
    fake.stop()
    return 0
