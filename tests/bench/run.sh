#!/bin/sh
# run.sh - `make bench`: builds the bare libmicrohttpd responder (the baseline) with the
# project's warning flags, then runs tests/bench/bench.py: wrk against alertbridge's
# POST /v1/webhook and the bare responder in one run for three workloads (new alerts, the same
# payload repeated, 90% repeats), CPU and callgrind instructions per request, the durability
# check, and the GitHub calls per transition against the fake GitHub.
#
# usage: sh tests/bench/run.sh BUILD_DIR BINARY
# env:   see tests/bench/bench.py (BENCH_DURATION, BENCH_MODES, BENCH_CALLGRIND_REQUESTS, ...);
#        CC (cc).
set -u

O=${1:-build}
BIN=${2:-alertbridge}
SRC=${ALERTBRIDGE_SRC:-$(pwd)}
CC=${CC:-cc}

die() { echo "bench: $*" >&2; exit 2; }

case "$BIN" in /*) ;; *) BIN="$(pwd)/$BIN" ;; esac
[ -x "$BIN" ] || die "alertbridge binary not found: $BIN"
command -v wrk >/dev/null || die "wrk not installed (apt-get install wrk, or make deps)"

mkdir -p "$O/bench" || die "cannot create $O/bench"
BARE="$O/bench/bare_responder"
$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -fno-common -Werror -O2 -g -I"$SRC" \
	$(pkg-config --cflags libmicrohttpd) -o "$BARE" "$SRC/tests/bench/bare_responder.c" \
	$(pkg-config --libs libmicrohttpd) -lpthread || die "cannot build $BARE"

exec python3 "$SRC/tests/bench/bench.py" "$BARE" "$BIN"
