#!/bin/sh
# deps.sh - check, and as root install, the Debian packages alertbridge needs.
#
# usage: sh deploy/deps.sh [--check] [build] [test] [bench] [fuzz]
# Without root, prints the exact apt-get command and exits 1.  --check never installs: it
# names what is missing and exits 1 (what make's build and test targets run; installing is
# `make deps`' alone, and .ci/run's).
set -u

check_only=0
if [ "${1:-}" = "--check" ]; then
	check_only=1
	shift
fi

want_build="build-essential pkg-config libmicrohttpd-dev libcurl4-gnutls-dev libjansson-dev libsqlite3-dev libyaml-dev libjwt-gnutls-dev nettle-dev libgnutls28-dev libcrypt-dev libpq-dev libpcre2-dev"
want_test="libcmocka-dev prometheus-alertmanager prometheus python3 python3-yaml sqlite3 curl valgrind chromium wrk time postgresql"
want_fuzz="clang libclang-rt-dev"
want_bench="wrk time valgrind"

missing=""
need() { missing="$missing $1"; }

have_pc() { pkg-config --exists "$1" 2>/dev/null; }
have_cmd() { command -v "$1" >/dev/null 2>&1; }

for set in "$@"; do
	case "$set" in
	build)
		have_cmd cc || need build-essential
		have_cmd pkg-config || need pkg-config
		have_pc libmicrohttpd || need libmicrohttpd-dev
		have_pc libcurl || need libcurl4-gnutls-dev
		have_pc jansson || need libjansson-dev
		have_pc sqlite3 || need libsqlite3-dev
		have_pc yaml-0.1 || need libyaml-dev
		have_pc libjwt-gnutls || need libjwt-gnutls-dev
		have_pc nettle || need nettle-dev
		have_pc gnutls || need libgnutls28-dev
		have_pc libxcrypt || need libcrypt-dev
		have_pc libpq || need libpq-dev
		have_pc libpcre2-8 || need libpcre2-dev
		;;
	test)
		have_pc cmocka || need libcmocka-dev
		[ -x /usr/bin/prometheus-alertmanager ] || need prometheus-alertmanager
		have_cmd promtool || need prometheus
		have_cmd python3 || need python3
		python3 -c 'import yaml' 2>/dev/null || need python3-yaml
		have_cmd sqlite3 || need sqlite3
		have_cmd curl || need curl
		have_cmd valgrind || need valgrind
		have_cmd chromium || need chromium
		have_cmd wrk || need wrk            # test_bench_smoke.py
		[ -x /usr/bin/time ] || need time
		# the private cluster of tests/pg/pg.sh (initdb, pg_ctl)
		ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need postgresql
		;;
	fuzz)
		have_cmd clang || need clang
		# libFuzzer's runtime (libclang_rt.fuzzer-<arch>.a) is in libclang-rt-dev
		rt="$(clang --print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-$(uname -m).a"
		[ -f "$rt" ] || need libclang-rt-dev
		;;
	bench)
		have_cmd wrk || need wrk
		[ -x /usr/bin/time ] || need time
		have_cmd valgrind || need valgrind
		;;
	*)
		echo "deps.sh: unknown set '$set' (build, test, bench, fuzz)" >&2
		exit 2
		;;
	esac
done

[ -z "$missing" ] && exit 0
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$check_only" = 1 ]; then
	echo "alertbridge: missing packages:$missing" >&2
	echo "run: make deps (as root), or apt-get update && $cmd" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "alertbridge: missing packages:$missing" >&2
	echo "run as root: apt-get update && $cmd" >&2
	exit 1
fi
echo "alertbridge: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2 || exit 1
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >&2 || exit 1
