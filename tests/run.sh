#!/bin/sh
# run.sh - run every unit test binary, then every integration test, and print
# one closing line "N passed, N failed".
#
# usage: sh tests/run.sh [--unit-only] BUILD_DIR BINARY
#   unit tests:        BUILD_DIR/tests/test_* (cmocka)
#   integration tests: tests/integration/test_*.py, each run with python3 and the
#                      binary's path in ALERTBRIDGE_BIN; the last line it prints
#                      must be "N passed, N failed".
set -u
unit_only=0
if [ "${1:-}" = "--unit-only" ]; then unit_only=1; shift; fi
O=${1:-build}
BIN=${2:-alertbridge}
export ALERTBRIDGE_BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
export ALERTBRIDGE_SRC="$(pwd)"
export CMOCKA_MESSAGE_OUTPUT=stdout

passed=0
failed=0
failed_names=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$O"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	"$t" >"$log" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	p=${p:-0}; f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p)); failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		cat "$log"
		failed_names="$failed_names $name"
		echo "unit $name: $p passed, $f failed (exit $rc)"
	else
		echo "unit $name: $p passed"
	fi
done

if [ "$unit_only" -eq 0 ]; then
	for t in tests/integration/test_*.py; do
		[ -f "$t" ] || continue
		name=$(basename "$t" .py)
		timeout 900 python3 "$t" >"$log" 2>&1
		rc=$?
		last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
		p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
		f=$(echo "$last" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		passed=$((passed + p)); failed=$((failed + f))
		if [ "$f" -ne 0 ]; then
			cat "$log"
			failed_names="$failed_names $name"
			echo "integration $name: $p passed, $f failed (exit $rc)"
		else
			echo "integration $name: $p passed"
		fi
	done
fi

[ -n "$failed_names" ] && echo "failing:$failed_names"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
