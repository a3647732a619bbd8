#!/usr/bin/env python3
# run.sh: weight 2, asan skip
# (the test PostgreSQL itself: no code of alertbridge's)
"""test_pg_cluster.py - the private PostgreSQL the tests start (tests/pg/pg.sh, pg.py).

private_cluster_lifecycle
    A cluster of its own (not the shared one): pg.sh prints a URI on 127.0.0.1 that answers;
    the server does not run as root (as root it is the postgres user); fsync is off; a
    database made per test is a separate one; a restart keeps the port and the data and cuts
    the sessions; stop closes the port and removes the directory.

shared_cluster_is_reused
    With AB_TEST_PG_URI set (tests/run.sh), Cluster().start() uses it and stop() leaves it
    running.

Prints a timeline and last "N passed, N failed"; a case with nothing to check (no server
installed, no shared cluster) says it was skipped.
"""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Runner, check, eq, event, port_open  # noqa: E402
import pg  # noqa: E402

run = Runner()


def port_of(uri):
    return int(uri.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


@run.case
def private_cluster_lifecycle():
    if not pg.installed():
        event("skipped: no PostgreSQL server installed")
        return
    c = pg.Cluster().start(share=False)
    try:
        event("started %s in %s" % (c.uri, c.dir))
        check(c.uri.startswith("postgres://") and "@127.0.0.1:" in c.uri, "a loopback URI",
              c.uri)
        port = port_of(c.uri)
        check(port_open(port), "the port answers")
        user = c.sql(c.uri, "SELECT current_user")[0][0]
        check(user != "root", "the server's superuser is not root", user)
        if os.geteuid() == 0:
            eq(user, "postgres", "as root, the postgres system user runs it")
        eq(c.sql(c.uri, "SHOW fsync")[0][0], "off", "fsync")
        eq(c.sql(c.uri, "SHOW listen_addresses")[0][0], "127.0.0.1", "listen_addresses")
        a, b = c.create_database(), c.create_database()
        check(a != b, "two databases", [a, b])
        c.sql(a, "CREATE TABLE t (v int); INSERT INTO t VALUES (1)")
        eq(c.sql(b, "SELECT count(*) FROM pg_tables WHERE tablename = 't'"), [["0"]],
           "the other database does not see the table")
        pid = c.sql(a, "SELECT pg_postmaster_start_time()")[0][0]
        c.restart()
        eq(port_of(c.uri), port, "same port after the restart")
        check(c.sql(a, "SELECT pg_postmaster_start_time()")[0][0] != pid, "a new server")
        eq(c.sql(a, "SELECT v FROM t"), [["1"]], "the data survive a restart")
        c.drop_database(b)
        d = c.dir
    finally:
        c.stop()
    check(not port_open(port), "stop closes the port")
    check(not os.path.exists(d), "stop removes the directory")


@run.case
def shared_cluster_is_reused():
    uri = os.environ.get("AB_TEST_PG_URI")
    if not uri:
        event("skipped: AB_TEST_PG_URI is unset (tests/run.sh sets it)")
        return
    c = pg.Cluster().start()
    eq(c.uri, uri, "the shared URI")
    check(not c.owned, "not owned")
    c.stop()
    with socket.create_connection(("127.0.0.1", port_of(uri)), timeout=5):
        pass  # still listening


sys.exit(run.run())
