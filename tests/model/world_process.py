"""world_process.py - the processes of a model-based test's world (lifecycle.py, campaign.py,
janitor_model.py): the alertbridge serve process (ServeProcess) and a psql session kept open
on a world's PostgreSQL database (Psql).
"""

import os
import select
import signal
import subprocess
import time

from harness import ALERTBRIDGE, http  # noqa: E402 - lifecycle.py set sys.path
import pg  # noqa: E402

BIN = ALERTBRIDGE             # the binary the worlds run
SECOND_MS = 5            # serve --test.second-ms


class Psql:
    """One psql session kept open on a database for the world's reads (the machine has no
    python driver for PostgreSQL; a psql per read would cost more than the bridge).  rows()
    runs one query: its rows as lists of strings (NULL reads as ""); an SQL error raises
    RuntimeError with psql's message; a session that died is opened again on the next query.
    Every read is bounded (timeout_s)."""

    END = b"__END__\n"

    def __init__(self, uri, timeout_s=10):
        self.uri = uri
        self.timeout_s = timeout_s
        self.proc = None

    def rows(self, query):
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self.proc = subprocess.Popen(
                [os.path.join(pg.bindir() or "/usr/bin", "psql"), "-X", "-q", "-A", "-t",
                 "-F", "\x1f", "-R", "\x1e", "-v", "ON_ERROR_STOP=0", "-d", self.uri],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            os.set_blocking(self.proc.stderr.fileno(), False)
        try:
            self.proc.stdin.write(query.encode() + b";\n\\echo __END__\n")
            self.proc.stdin.flush()
        except OSError as e:
            self.close()
            raise RuntimeError("psql: %s" % e) from e
        out = b""
        deadline = time.time() + self.timeout_s
        fd = self.proc.stdout.fileno()
        while not out.endswith(self.END):
            left = deadline - time.time()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                raise RuntimeError("psql: no answer to %r within %d s" % (query, self.timeout_s))
            chunk = os.read(fd, 65536)
            if not chunk:
                try:
                    err = os.read(self.proc.stderr.fileno(), 65536)
                except BlockingIOError:
                    err = b""
                self.close()
                raise RuntimeError("psql ended: %s" % err.decode("utf-8", "replace").strip())
            out += chunk
        try:  # psql wrote the query's error, if any, before it ran the echo
            err = os.read(self.proc.stderr.fileno(), 65536)
        except BlockingIOError:
            err = b""
        if err:
            raise RuntimeError("psql %r: %s" % (query, err.decode("utf-8", "replace").strip()))
        text = out[:-len(self.END)].decode("utf-8", "replace")
        text = text[:-1] if text.endswith("\n") else text
        return [r.split("\x1f") for r in text.split("\x1e")] if text else []

    def close(self):
        if self.proc:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=10)
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                f.close()
        self.proc = None


class ServeProcess:
    """A world's `alertbridge serve --test.second-ms=second_ms` process (its config
    alertbridge.yml in self.dir, its log at self.log_path, its URL self.url; a failure raised
    through self.fail): started and waited for until ready (self.starts: when each start
    began, time.time()), SIGKILLed, stopped, its log's tail.
    serve_flags: more flags of serve; ready_s: how long a start may take; stop_grace_s: how
    long stop() waits after SIGTERM before SIGKILL.  The janitor's model (janitor_model.py)
    runs its worlds' process with it too, and soak_month.py its one."""

    second_ms = SECOND_MS
    serve_flags = ()
    ready_s = 20
    stop_grace_s = 10

    def start(self):
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
        self.__dict__.setdefault("starts", []).append(time.time())
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BIN, "serve", "--config.file=alertbridge.yml",
                                      "--test.second-ms=%d" % self.second_ms] +
                                     list(self.serve_flags),
                                     stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.dir, env=env,
                                     start_new_session=True)
        log.close()
        deadline = time.time() + self.ready_s
        while True:
            if self.proc.poll() is not None:
                self.fail("alertbridge exited (%s) before it was ready" % self.proc.returncode)
            try:
                if http("GET", self.url + "/-/ready", timeout_s=2)[0] == 200:
                    return
            except OSError:
                pass
            if time.time() > deadline:
                self.fail("alertbridge not ready within %d s" % self.ready_s)
            time.sleep(0.01)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc:
            self.proc.wait(timeout=10)
        self.proc = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_grace_s)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None

    def tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
        except OSError:
            return "(no log)"
