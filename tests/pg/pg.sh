#!/bin/sh
# pg.sh - a private PostgreSQL cluster for the tests (issue 10): initdb + pg_ctl in a
# directory of the caller's (a fresh temporary one), listening on 127.0.0.1 and a free port.
#
# usage: sh tests/pg/pg.sh start DIR     initdb DIR/data, start it, print the URI on stdout
#        sh tests/pg/pg.sh restart DIR   stop (-m fast) and start it again, same port
#        sh tests/pg/pg.sh stop DIR      stop it (-m fast) and remove DIR
#
# The URI is postgres://USER@127.0.0.1:PORT/postgres, also written to DIR/uri.  USER is the
# cluster's superuser: PostgreSQL refuses to run as root, so as root the server runs as the
# `postgres` system user (runuser; DIR is chowned to it), else as the current user.  Logins
# over TCP are trusted, except role `pwuser` (which a test may create) whose password is
# checked (scram-sha-256).  fsync is off (a test cluster needs no durability) unless
# PG_DURABLE=1 (make bench: commits cost what they cost in production).  The server's
# log is DIR/log.  Every wait is bounded (PG_WAIT_S, default 60 s).  The server binaries are
# found in PG_BINDIR or /usr/lib/postgresql/*/bin (Debian's postgresql package).
set -u

die() { echo "pg.sh: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: pg.sh start|restart|stop DIR"
cmd=$1
dir=$2
wait_s=${PG_WAIT_S:-60}

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && bindir=$d  # the glob sorts: the newest version wins
	done
fi
[ -n "$bindir" ] && [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] ||
	die "no PostgreSQL server found (install Debian's postgresql, or set PG_BINDIR)"

if [ "$(id -u)" = 0 ]; then
	user=postgres
	id "$user" >/dev/null 2>&1 || die "running as root needs the postgres system user"
	as() { runuser -u "$user" -- "$@"; }
else
	user=$(id -un)
	as() { "$@"; }
fi

# A port nothing listens on now, below the kernel's ephemeral range as the integration tests
# draw theirs (tests/integration/harness.py, free_port: no outgoing connection takes it while
# the cluster restarts on it); pg_ctl start is retried on another one when the port is taken
# in between.
harness_dir=$(cd "$(dirname "$0")/../integration" && pwd)
free_port() {
	python3 -c 'import sys
sys.path.insert(0, sys.argv[1])
import harness
print(harness.free_port())' "$harness_dir"
}

pg_start() { # the port is in DIR/data/postgresql.conf
	as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t "$wait_s" start >/dev/null
}

case "$cmd" in
start)
	[ -d "$dir" ] || die "no directory $dir"
	[ -e "$dir/data" ] && die "$dir/data exists already"
	[ "$(id -u)" = 0 ] && { chown "$user" "$dir" || die "cannot chown $dir to $user"; }
	as "$bindir/initdb" -D "$dir/data" -U "$user" -E UTF8 --no-locale --no-sync \
		--auth-local=trust --auth-host=trust >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; die "initdb failed in $dir/data"; }
	# pg_hba.conf is read top down: the first line that matches a connection decides.
	hba="$dir/data/pg_hba.conf"
	{ echo "host all pwuser 127.0.0.1/32 scram-sha-256"; cat "$hba"; } >"$hba.new" &&
		as sh -c "cat '$hba.new' >'$hba'" && rm -f "$hba.new" || die "cannot write $hba"
	fsync=off
	[ "${PG_DURABLE:-0}" = 1 ] && fsync=on  # the benchmark: durable, as in production
	tries=0
	while :; do
		tries=$((tries + 1))
		port=$(free_port) || die "cannot find a free port"
		as sh -c "cat >>'$dir/data/postgresql.conf'" <<EOF || die "cannot write postgresql.conf"
# tests/pg/pg.sh (try $tries)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = $fsync
full_page_writes = $fsync
max_connections = 200
shared_buffers = 32MB
EOF
		pg_start && break
		[ "$tries" -lt 5 ] || { tail -n 20 "$dir/log" >&2; die "cannot start the cluster"; }
	done
	uri="postgres://$user@127.0.0.1:$port/postgres"
	echo "$uri" >"$dir/uri"
	echo "$uri"
	;;
restart)
	[ -f "$dir/uri" ] || die "$dir holds no cluster of pg.sh"
	as "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t "$wait_s" stop >/dev/null ||
		die "cannot stop the cluster in $dir"
	pg_start || { tail -n 20 "$dir/log" >&2; die "cannot start the cluster in $dir again"; }
	;;
stop)
	# Only a directory this script made is removed.
	[ -f "$dir/uri" ] || [ -f "$dir/initdb.log" ] || die "$dir holds no cluster of pg.sh"
	rc=0
	if [ -f "$dir/data/postmaster.pid" ]; then
		as "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t "$wait_s" stop >/dev/null || rc=1
	fi
	rm -rf "$dir"
	exit $rc
	;;
*)
	die "unknown command '$cmd' (start, restart, stop)"
	;;
esac
