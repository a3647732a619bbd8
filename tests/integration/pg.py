"""pg.py - PostgreSQL for the integration tests (issue 10), over tests/pg/pg.sh.

Cluster.start() uses the cluster tests/run.sh shares (AB_TEST_PG_URI, AB_TEST_PG_DIR) or, when
there is none or share=False, starts a private one in a fresh temporary directory (pg.sh: initdb +
pg_ctl on 127.0.0.1 and a free port, as the postgres user under root); stop() stops and removes
only a cluster it started.  create_database() gives each test a database of its own, so tests
sharing a cluster do not see each other's rows.  Every command is bounded (timeout_s).

    from pg import Cluster
    pg = Cluster().start()
    uri = pg.create_database()      # postgres://postgres@127.0.0.1:PORT/t_...
    pg.sql(uri, "SELECT count(*) FROM issues")
    pg.restart()                    # needs AB_TEST_PG_DIR or a private cluster
    pg.stop()

Integration tests run two at a time: a test that restarts or stops the server should start a
private cluster (start(share=False)), or it cuts the sessions of the test running alongside.
"""

import glob
import os
import subprocess
import tempfile
import uuid

PG_SH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pg",
                                      "pg.sh"))


def bindir():
    """The newest server's bin directory (PG_BINDIR wins), or None when none is installed."""
    if os.environ.get("PG_BINDIR"):
        return os.environ["PG_BINDIR"]
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[-3]) if p.split("/")[-3].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def installed():
    return bindir() is not None


def with_database(uri, name):
    """uri with its database replaced by name (query string kept)."""
    base, q, query = uri.partition("?")
    head = base.split("://", 1)
    host_part = head[1].split("/", 1)[0]
    return "%s://%s/%s%s%s" % (head[0], host_part, name, q, query)


class Cluster:
    def __init__(self, timeout_s=120):
        self.dir = None
        self.uri = None
        self.owned = False
        self.timeout_s = timeout_s

    def _pg_sh(self, *args):
        r = subprocess.run(["sh", PG_SH] + list(args), capture_output=True, text=True,
                           timeout=self.timeout_s)
        if r.returncode != 0:
            raise RuntimeError("pg.sh %s failed: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout.strip()

    def start(self, share=True):
        if share and os.environ.get("AB_TEST_PG_URI"):
            self.uri = os.environ["AB_TEST_PG_URI"]
            self.dir = os.environ.get("AB_TEST_PG_DIR")
            return self
        # Not under a directory only our user may enter: the server may run as postgres.
        self.dir = tempfile.mkdtemp(prefix="ab-pg.", dir=os.environ.get("TMPDIR") or "/tmp")
        try:
            self.uri = self._pg_sh("start", self.dir)
        except Exception:
            subprocess.run(["rm", "-rf", self.dir], timeout=60)
            self.dir = None
            raise
        self.owned = True
        return self

    def restart(self):
        """Stop (-m fast: every session is cut) and start again on the same port."""
        if not self.dir:
            raise RuntimeError("restart needs the cluster's directory (AB_TEST_PG_DIR)")
        self._pg_sh("restart", self.dir)

    def stop(self):
        if self.owned and self.dir:
            self._pg_sh("stop", self.dir)
        self.dir = None
        self.owned = False

    def sql(self, uri, query):
        """Run query with psql on uri; its rows as lists of strings ('|' separated columns)."""
        r = subprocess.run([os.path.join(bindir() or "/usr/bin", "psql"), "-X", "-q", "-A",
                            "-t", "-v", "ON_ERROR_STOP=1", "-d", uri, "-c", query],
                           capture_output=True, text=True, timeout=self.timeout_s)
        if r.returncode != 0:
            raise RuntimeError("psql %r failed: %s" % (query, r.stderr.strip()))
        return [line.split("|") for line in r.stdout.splitlines() if line]

    def create_database(self, name=None):
        """A new empty database (named t_<random> unless name); its URI."""
        name = name or "t_" + uuid.uuid4().hex[:12]
        self.sql(self.uri, 'CREATE DATABASE "%s"' % name)
        return with_database(self.uri, name)

    def drop_database(self, uri):
        name = uri.partition("?")[0].rsplit("/", 1)[1]
        self.sql(self.uri, 'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)
