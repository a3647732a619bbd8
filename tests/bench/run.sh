#!/bin/sh
# run.sh - `make bench`: wrk against alertbridge's POST /v1/webhook and against a bare
# libmicrohttpd responder with the same threading model, in one run, on loopback.
# Prints requests/s, p50 and p99 of both, the ratio ours/bare, and checks that every
# acknowledged alert is durable (events in sqlite >= 2xx answers x alerts per payload).
#
# usage: sh tests/bench/run.sh BUILD_DIR BINARY
# env:   BENCH_DURATION (default 10s), BENCH_THREADS (2), BENCH_CONNECTIONS (16),
#        BENCH_PAYLOAD (default $ALERTBRIDGE_SRC/tests/fixtures/alertmanager/03_group_of_3_firing.json),
#        CC (cc).
# Exit status: 0 when both runs had no non-2xx answer and no alert acknowledged by
# alertbridge is missing from its database; 1 otherwise; 2 for a setup problem.
set -u

O=${1:-build}
BIN=${2:-alertbridge}
SRC=${ALERTBRIDGE_SRC:-$(pwd)}
DURATION=${BENCH_DURATION:-10s}
THREADS=${BENCH_THREADS:-2}
CONNS=${BENCH_CONNECTIONS:-16}
CC=${CC:-cc}
LUA="$SRC/tests/bench/post.lua"

die() { echo "bench: $*" >&2; exit 2; }

case "$BIN" in /*) ;; *) BIN="$(pwd)/$BIN" ;; esac
[ -x "$BIN" ] || die "alertbridge binary not found: $BIN"
command -v wrk >/dev/null || die "wrk not installed (apt-get install wrk, or make deps)"
command -v sqlite3 >/dev/null || die "sqlite3 CLI not installed (apt-get install sqlite3)"
command -v curl >/dev/null || die "curl not installed"

PAYLOAD=${BENCH_PAYLOAD:-}
if [ -z "$PAYLOAD" ]; then
	PAYLOAD="$SRC/tests/fixtures/alertmanager/03_group_of_3_firing.json"
fi
[ -n "$PAYLOAD" ] && [ -f "$PAYLOAD" ] || die "payload not found (set BENCH_PAYLOAD)"
PAYLOAD=$(cd "$(dirname "$PAYLOAD")" && pwd)/$(basename "$PAYLOAD")
ALERTS_PER_REQUEST=$(grep -c '"fingerprint"' "$PAYLOAD")
RECEIVER=$(sed -n 's/^  "receiver": *"\([^"]*\)".*/\1/p' "$PAYLOAD" | head -n 1)
[ -n "$RECEIVER" ] || die "no receiver in $PAYLOAD"

# The bare responder, built with the project's warning flags.
mkdir -p "$O/bench" || die "cannot create $O/bench"
BARE="$O/bench/bare_responder"
$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -fno-common -Werror -O2 -g -I"$SRC" \
	$(pkg-config --cflags libmicrohttpd) -o "$BARE" "$SRC/tests/bench/bare_responder.c" \
	$(pkg-config --libs libmicrohttpd) -lpthread || die "cannot build $BARE"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/alertbridge-bench.XXXXXX") || die "mktemp failed"
AB_PID=""
BARE_PID=""

stop() { # stop PID: SIGTERM, SIGKILL after 5 s; prints the exit status
	pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$pid" 2>/dev/null; then
		echo "bench: pid $pid ignored SIGTERM for 5 s: SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
}

cleanup() {
	stop "$AB_PID"; AB_PID=""
	stop "$BARE_PID"; BARE_PID=""
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for() { # wait_for WHAT PID CMD...: poll CMD up to 30 s while PID lives
	what=$1; pid=$2; shift 2
	i=0
	while [ $i -lt 300 ]; do
		if "$@" >/dev/null 2>&1; then return 0; fi
		kill -0 "$pid" 2>/dev/null || { echo "bench: $what exited early" >&2; return 1; }
		sleep 0.1; i=$((i + 1))
	done
	echo "bench: $what not ready after 30 s" >&2
	return 1
}

TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$TOKEN" >"$TMP/webhook-token"
AB_PORT=$(free_port) || die "no free port"
DB="$TMP/alertbridge.db"
cat >"$TMP/alertbridge.yml" <<EOF
listen_address: 127.0.0.1:$AB_PORT
database: $DB
log: {level: warn, format: logfmt}
webhook:
  bearer_token_file: webhook-token
  max_body_bytes: 1048576
  threads: 16
github:
  api_url: http://127.0.0.1:9
  content_per_minute: 20
  timeout: 10s
  dry_run: true
receivers:
  - name: $RECEIVER
    repo: bench/alerts
    issue_per: alert
    labels: ["alert"]
    auto_close: true
    reopen_window: 7d
janitor:
  enabled: false
EOF

(cd "$TMP" && exec env -u GITHUB_TOKEN "$BIN" serve --config.file="$TMP/alertbridge.yml" \
	--web.listen-address="127.0.0.1:$AB_PORT" --database.path="$DB") \
	>"$TMP/alertbridge.log" 2>&1 &
AB_PID=$!
if ! wait_for alertbridge "$AB_PID" curl -fsS "http://127.0.0.1:$AB_PORT/-/ready"; then
	tail -n 30 "$TMP/alertbridge.log" >&2
	exit 2
fi

"$BARE" "$TMP/bare.port" >"$TMP/bare.log" 2>&1 &
BARE_PID=$!
wait_for bare_responder "$BARE_PID" test -s "$TMP/bare.port" || { cat "$TMP/bare.log" >&2; exit 2; }
BARE_PORT=$(cat "$TMP/bare.port")

# A single request first: fail fast on a config, auth or payload problem.
code=$(curl -s -o "$TMP/first.json" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
	-H 'Content-Type: application/json' --data-binary "@$PAYLOAD" \
	"http://127.0.0.1:$AB_PORT/v1/webhook")
if [ "$code" != 200 ]; then
	echo "bench: alertbridge answered $code to the payload: $(cat "$TMP/first.json")" >&2
	tail -n 30 "$TMP/alertbridge.log" >&2
	exit 2
fi

run_wrk() { # run_wrk NAME PORT: writes $TMP/NAME.out, prints its BENCH line
	echo "== wrk -t$THREADS -c$CONNS -d$DURATION --latency: $1 (127.0.0.1:$2/v1/webhook)" \
		>"$TMP/$1.out"
	BENCH_PAYLOAD=$PAYLOAD BENCH_TOKEN=$TOKEN wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" \
		--latency -s "$LUA" "http://127.0.0.1:$2/v1/webhook" >>"$TMP/$1.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { cat "$TMP/$1.out" >&2; echo "bench: wrk failed for $1 (exit $rc)" >&2; return 1; }
	grep '^BENCH ' "$TMP/$1.out" | tail -n 1
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

BARE_LINE=$(run_wrk bare "$BARE_PORT") || exit 2
OURS_LINE=$(run_wrk alertbridge "$AB_PORT") || exit 2

cat "$TMP/bare.out" "$TMP/alertbridge.out"

# Stop alertbridge gracefully before counting, so the count also covers shutdown.
stop "$AB_PID"; AB_PID=""
EVENTS=$(sqlite3 "$DB" 'SELECT count(*) FROM events;' 2>"$TMP/sqlite.err") ||
	{ cat "$TMP/sqlite.err" >&2; die "cannot count events in $DB"; }

OK=$(( $(field "$OURS_LINE" ok) + 1 ))   # + the single request sent first
WANT=$((OK * ALERTS_PER_REQUEST))
python3 - "$BARE_LINE" "$OURS_LINE" "$EVENTS" "$WANT" "$OK" "$ALERTS_PER_REQUEST" <<'EOF'
import sys
def parse(line):
    return {k: float(v) for k, v in (f.split("=", 1) for f in line.split()[1:])}
bare, ours = parse(sys.argv[1]), parse(sys.argv[2])
events, want, ok, per = (int(x) for x in sys.argv[3:7])
print()
print("%-22s %12s %12s %12s %8s %8s" % ("", "requests/s", "p50 ms", "p99 ms", "non-2xx",
                                        "errors"))
for name, r in (("bare libmicrohttpd", bare), ("alertbridge", ours)):
    errs = r["connect_errors"] + r["read_errors"] + r["write_errors"] + r["timeouts"]
    print("%-22s %12.0f %12.3f %12.3f %8d %8d" % (name, r["rps"], r["p50_us"] / 1000,
                                                  r["p99_us"] / 1000, r["non2xx"], errs))
ratio = lambda a, b: a / b if b else float("inf")
print("%-22s %12.3f %12.2f %12.2f" % ("ratio ours/bare", ratio(ours["rps"], bare["rps"]),
                                      ratio(ours["p50_us"], bare["p50_us"]),
                                      ratio(ours["p99_us"], bare["p99_us"])))
print()
print("durability: %d events in sqlite for %d acknowledged requests x %d alerts = %d -> %s"
      % (events, ok, per, want, "OK" if events >= want else "MISSING %d" % (want - events)))
if events > want:
    print("            (%d more: requests committed but still in flight when wrk stopped)"
          % (events - want))
EOF
status=0
[ "$(field "$BARE_LINE" non2xx)" = 0 ] || { echo "bench: non-2xx answers from bare"; status=1; }
[ "$(field "$OURS_LINE" non2xx)" = 0 ] || { echo "bench: non-2xx answers from alertbridge"; status=1; }
[ "$EVENTS" -ge "$WANT" ] || { echo "bench: acknowledged alerts missing from the database"; status=1; }
exit $status
