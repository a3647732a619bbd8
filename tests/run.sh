#!/bin/sh
# run.sh - run every unit test binary, then every integration test, optionally again under
# ASan+UBSan and the bridge end-to-end test under valgrind memcheck, and print one closing
# line "N passed, N failed" that sums every stage.
#
# usage: sh tests/run.sh [--unit-only | --quick] [--asan ASAN_DIR ASAN_BINARY] [--valgrind]
#                        [--fuzz FUZZ_DIR SECONDS] BUILD_DIR BINARY
#   unit tests:        BUILD_DIR/tests/test_* (cmocka)
#   integration tests: tests/integration/test_*.py, each run with python3 and the
#                      binary's path in ALERTBRIDGE_BIN; the last line it prints
#                      must be "N passed, N failed".
#   model test:        tests/model/lifecycle.py (the model-based lifecycle test) with the
#                      integration tests: MODEL_SEEDS seeds (default 200; 25 under ASan unless
#                      MODEL_SEEDS is set), see the file for its other knobs; and
#                      tests/model/lifecycle_pg.py, the same on PostgreSQL with MODEL_PG_SEEDS
#                      seeds (default 20; not under ASan); tests/model/campaign.py, issue 19's
#                      fault campaign on the same model, its short run: CAMPAIGN_SEEDS seeds
#                      (default 6; not under ASan); tests/model/janitor_model.py, the janitor's
#                      model-based test with postpone steps: JANITOR_MODEL_SEEDS seeds
#                      (default 6; 3 in make check).
#   --quick:           `make check`, the check before every commit: the unit tests and the
#                      integration tests of the default weight (weight() below: the slow ones
#                      are left out), the model test on MODEL_SEEDS seeds (default 10).
#   --asan:            the same again with ASAN_DIR's unit tests and ASAN_BINARY (built with
#                      -fsanitize=address,undefined); any sanitizer report a test's processes
#                      write (leaks at exit included) fails that test.
#   --valgrind:        tests/integration/test_bridge_e2e.py once more with BINARY run under
#                      valgrind memcheck (ALERTBRIDGE_WRAPPER, see harness.py); one more test
#                      passes when every run ended with zero errors and zero definite leaks.
#   --fuzz:            every libFuzzer harness in FUZZ_DIR/fuzz/ for SECONDS (tests/fuzz/run.sh);
#                      a harness passes when it found nothing.
# Each stage prints its time; VALGRIND_SLOWDOWN (default 4) scales the e2e test's waits.
# TESTS (a shell pattern such as "test_bridge_e2e" or "test_*kube*") runs only the unit and
# integration tests whose names match it (the valgrind stage only if the e2e test does).
# PostgreSQL (issue 10): when a server is installed and AB_TEST_PG_URI is unset, one private
# cluster (tests/pg/pg.sh) serves every stage: its URI in AB_TEST_PG_URI, its directory in
# AB_TEST_PG_DIR; it is stopped and removed at the end.  Without a server the tests' PostgreSQL
# halves say they were skipped.  With it, the store's unit tests (STORE_UNITS) run a second
# time on PostgreSQL, counted as "unit NAME (postgres)".
set -u
unit_only=0
quick=0
asan_dir=""
asan_bin=""
valgrind=0
fuzz_dir=""
fuzz_s=60
while [ $# -gt 0 ]; do
	case "$1" in
	--unit-only) unit_only=1; shift ;;
	--quick) quick=1; export MODEL_SEEDS="${MODEL_SEEDS:-10}"; shift ;;
	--asan) asan_dir=$2; asan_bin=$3; shift 3 ;;
	--valgrind) valgrind=1; shift ;;
	--fuzz) fuzz_dir=$2; fuzz_s=$3; shift 3 ;;
	*) break ;;
	esac
done
O=${1:-build}
BIN=${2:-alertbridge}
abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
export ALERTBRIDGE_SRC="$(pwd)"
export CMOCKA_MESSAGE_OUTPUT=stdout

passed=0
failed=0
failed_names=""
log=$(mktemp)
why=$(mktemp)
san=$(mktemp -d)
pg_dir=""
trap 'rm -rf "$log" "$why" "$san"; [ -z "$pg_dir" ] || sh tests/pg/pg.sh stop "$pg_dir" >/dev/null' EXIT
# a signal (Ctrl-C, a closed pipe) ends the script through the EXIT trap: the cluster stops
trap 'exit 130' INT TERM HUP PIPE
stage=""     # "" for the plain build, else "asan " or "valgrind "
summary=""

# Count a finished test: $1 kind, $2 name, $3 passed, $4 failed, $5 exit code.
account() {
	p=$3; f=$4
	if [ "$5" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p)); failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		cat "$log"
		failed_names="$failed_names $stage$2"
		# why, again at the end: CI keeps only the output's tail
		{ echo "--- $stage$2:"
		  grep -E -A2 ' FAIL |^\[  (ERROR|FAILED)  \] [a-z_]|^----- sanitizer report|^[A-Za-z]*Error:' \
		    "$log" | cut -c1-300 | head -n 6 | grep . ||
			tail -n 4 "$log" | cut -c1-300; } >>"$why"  # no such line (a crash): its end
		echo "$stage$1 $2: $p passed, $f failed (exit $5)"
	else
		echo "$stage$1 $2: $p passed"
	fi
}

# 0 when test $1 is selected by $TESTS.
selected() {
	# shellcheck disable=SC2254
	case "$1" in ${TESTS:-*}) return 0 ;; esac
	return 1
}

# What an integration or model test declares of itself, in a line of its first 40:
#   # run.sh: weight N[, quick [M]][, asan skip]
# weight: the seconds it takes in the plain stage on 2 cores (default 15), so that the lanes
# get even loads (run_integration); quick: `make check` runs it although it weighs more than
# 15, M the seconds it takes there (a model test on fewer seeds); asan skip: the ASan+UBSan stage leaves it out (its
# file says why: no code of alertbridge's worth instrumenting again, or code the sanitizers
# run elsewhere), to keep `make test` within 25 minutes on 2 cores.  ASAN_SKIP (names)
# overrides the asan skips.
declared() { # $1 test file: its run.sh line's declarations, or nothing
	sed -n '1,40s/^# run\.sh: *//p' "$1" | head -n 1
}

weight() { # $1 test file
	if [ "$quick" -eq 1 ]; then
		w=$(declared "$1" | sed -n 's/.*quick \([0-9][0-9]*\).*/\1/p')
		[ -z "$w" ] || { echo "$w"; return; }
	fi
	w=$(declared "$1" | sed -n 's/.*weight \([0-9][0-9]*\).*/\1/p')
	echo "${w:-15}"
}

asan_skipped() { # $1 test file
	[ "$stage" = "asan " ] || return 1
	if [ "${ASAN_SKIP+set}" = set ]; then
		for s in $ASAN_SKIP; do [ "$s" = "$(basename "$1" .py)" ] && return 0; done
		return 1
	fi
	declared "$1" | grep -q 'asan skip'
}

# In make check (--quick), the tests that weigh more than the default and do not say quick.
quick_skipped() { # $1 test file
	[ "$quick" -eq 1 ] || return 1
	declared "$1" | grep -q 'quick' && return 1
	[ "$(weight "$1")" -gt 15 ]
}

# The store's unit tests, run a second time on PostgreSQL (AB_TEST_STORE=postgres, see
# tests/unit/helpers/store_fixture.h) when AB_TEST_PG_URI is set, and test_storm (the storm
# summaries' part of the store, store/store_groups.c, is tested there); test_store_copy and
# the test_db* files do both engines in one run.
STORE_UNITS="test_store test_store_events test_store_events_repeats test_store_events_commit \
test_store_map test_store_outbox test_store_digest test_store_groups test_store_budget test_storm \
test_intake_take"

# Move the sanitizer reports (report.*) of directory $1 to the end of log $2; print how many
# there were.
take_reports() {
	n=0
	for r in "$1"/report.*; do
		[ -f "$r" ] || continue
		{ echo "----- sanitizer report $(basename "$r") -----"; cat "$r"; } >>"$2"
		rm -f "$r"
		n=$((n + 1))
	done
	echo "$n"
}

# Run unit binary $1 named $2 (the rest of the arguments: the environment it runs in) with
# its output in directory $3; append "NAME|PASSED|FAILED|EXIT|LOG" to $3/results.  Under the
# sanitizers its reports (in $san: only the units write there, each lane of integration tests
# has a directory of its own) are moved into its log and count one failure.
run_unit() {
	t=$1; name=$2; dir=$3; shift 3
	out="$dir/$(echo "$name" | tr -c 'a-z0-9_\n' '_').log"
	env "$@" "$t" >"$out" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
	p=${p:-0}; f=${f:-0}
	[ -z "$stage" ] || f=$((f + $(take_reports "$san" "$out")))
	echo "$name|$p|$f|$rc|$out" >>"$dir/results"
}

# Run the selected unit binaries of build dir $1 one after the other, their results in
# directory $2 (run_unit); the stage runs this beside the lanes of integration tests: the
# unit tests mostly wait on timers (4 s of CPU in 62 s), so they cost the lanes little.
run_units() {
	for t in "$1"/tests/test_*; do
		[ -x "$t" ] || continue
		case "$t" in *.d|*.o) continue ;; esac
		name=$(basename "$t")
		selected "$name" || continue
		run_unit "$t" "$name" "$2"
	done
	[ -n "${AB_TEST_PG_URI:-}" ] || return 0
	for name in $STORE_UNITS; do
		[ -x "$1/tests/$name" ] && selected "$name" || continue
		run_unit "$1/tests/$name" "$name (postgres)" "$2" AB_TEST_STORE=postgres
	done
}

# Count the unit tests run_units ran into directory $1, in the order they ran.
account_units() {
	[ -f "$1/results" ] || return 0
	while IFS='|' read -r name p f rc out; do
		cp "$out" "$log"
		account unit "$name" "$p" "$f" "$rc"
	done <"$1/results"
}

# Run integration test $1 with its output in $2 and its sanitizer reports in directory $3;
# print "NAME PASSED FAILED EXIT" (sanitizer reports, moved into $2, count one failure).
integration_one() {
	name=$(basename "$1" .py)
	# The campaign's seeds are its own (MODEL_SEEDS is the lifecycle model's here).
	seeds=""
	[ "$name" != campaign ] || seeds="MODEL_SEEDS=${CAMPAIGN_SEEDS:-6}"
	[ "$name" != janitor_model ] ||
		seeds="MODEL_SEEDS=${JANITOR_MODEL_SEEDS:-$([ "$quick" -eq 1 ] && echo 3 || echo 6)}"
	if [ -n "$stage" ]; then
		# The model test's 200 seeds are the plain stage's; 25 under the sanitizers.
		[ "$name" = lifecycle ] && export MODEL_SEEDS="${MODEL_SEEDS:-25}"
		ASAN_OPTIONS="log_path=$3/report:detect_leaks=1" \
		UBSAN_OPTIONS="log_path=$3/report:print_stacktrace=1:halt_on_error=1" \
		timeout 900 env $seeds python3 "$1" >"$2" 2>&1
	else
		timeout 900 env $seeds python3 "$1" >"$2" 2>&1
	fi
	rc=$?
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
	p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
	f=$(echo "$last" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
	f=$((f + $(take_reports "$3" "$2")))
	echo "$name $p $f $rc"
}

# Run the selected integration tests ($@), INTEGRATION_JOBS (default 2) at a time: the tests
# are dealt into that many lanes, the longest first to the lane with the least work so far
# (weight(), declared by each test), each lane runs its tests one after the other, and the
# results are counted in the order of the files once every lane has finished.
run_integration() { # $@: test files
	jobs=${INTEGRATION_JOBS:-2}
	lanes="$san/lanes"
	rm -rf "$lanes"
	i=0
	for t in "$@"; do
		[ -f "$t" ] || continue
		selected "$(basename "$t" .py)" || continue
		asan_skipped "$t" && continue
		quick_skipped "$t" && continue
		echo "$(weight "$t") $t"
		i=$((i + 1))
	done | sort -k1,1nr -k2 | awk -v jobs="$jobs" -v dir="$lanes" '
		# longest first, each to the lane with the least work so far
		{ best = 0
		  for (l = 1; l < jobs; l++) if (load[l] < load[best]) best = l
		  load[best] += $1
		  system("mkdir -p \"" dir "/" best "/san\"")
		  print $2 >> (dir "/" best "/tests") }'
	[ -d "$lanes" ] || return 0
	for d in "$lanes"/*; do
		(
			while read -r t; do
				t0=$(date +%s)
				integration_one "$t" "$d/$(basename "$t" .py).log" "$d/san" >>"$d/results"
				# progress while the other lane runs; counted below, in file order
				echo "  ${stage}... $(tail -n 1 "$d/results" | cut -d' ' -f1) finished in" \
				     "$(( $(date +%s) - t0 ))s"
			done <"$d/tests"
		) &
	done
	wait
	for t in "$@"; do
		name=$(basename "$t" .py)
		for d in "$lanes"/*; do
			[ -f "$d/results" ] || continue
			line=$(grep "^$name " "$d/results") || continue
			# shellcheck disable=SC2086
			set -- $line
			cp "$d/$name.log" "$log"
			account integration "$1" "$2" "$3" "$4"
		done
	done
	rm -rf "$lanes"
}

# Run one stage: $1 label, $2 build dir, $3 binary.
run_stage() {
	start=$(date +%s)
	p0=$passed; f0=$failed
	export ALERTBRIDGE_BIN="$(abspath "$3")"
	units="$san/units"
	rm -rf "$units"; mkdir -p "$units"
	( t0=$(date +%s); run_units "$2" "$units"
	  echo "  ${stage}... unit tests finished in $(( $(date +%s) - t0 ))s" ) &
	[ "$unit_only" -eq 1 ] ||
		run_integration tests/integration/test_*.py tests/model/lifecycle.py \
			tests/model/lifecycle_pg.py tests/model/campaign.py tests/model/janitor_model.py
	wait
	account_units "$units"
	secs=$(( $(date +%s) - start ))
	line="stage $1: $((passed - p0)) passed, $((failed - f0)) failed in ${secs}s"
	echo "$line"
	summary="$summary
$line"
}

if [ -z "${AB_TEST_PG_URI:-}" ] && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/ab-pg.XXXXXX") &&
		AB_TEST_PG_URI=$(sh tests/pg/pg.sh start "$pg_dir") || {
		echo "tests/pg/pg.sh: cannot start PostgreSQL in $pg_dir"
		[ ! -f "$pg_dir/log" ] || tail -n 20 "$pg_dir/log"
		rm -rf "$pg_dir"; pg_dir=""
		failed=$((failed + 1)); failed_names="$failed_names postgresql"
	}
	[ -z "$pg_dir" ] || { export AB_TEST_PG_URI; export AB_TEST_PG_DIR="$pg_dir"
		echo "postgresql: $AB_TEST_PG_URI (tests/pg/pg.sh, in $pg_dir)"; }
fi

run_stage "${O}" "$O" "$BIN"

if [ -n "$asan_dir" ]; then
	stage="asan "
	# log_path: reports of every instrumented process (children of the integration tests
	# included) land in $san, where run_unit finds the units' (the integration lanes have
	# their own).
	export ASAN_OPTIONS="log_path=$san/report:detect_leaks=1"
	export UBSAN_OPTIONS="log_path=$san/report:print_stacktrace=1:halt_on_error=1"
	run_stage "$asan_dir (ASan+UBSan)" "$asan_dir" "$asan_bin"
	unset ASAN_OPTIONS UBSAN_OPTIONS
	stage=""
fi

if [ "$valgrind" -eq 1 ] && [ "$unit_only" -eq 0 ] && selected test_bridge_e2e; then
	stage="valgrind "
	start=$(date +%s)
	p0=$passed; f0=$failed
	vg="$san/vg"
	mkdir -p "$vg"
	export ALERTBRIDGE_BIN="$(abspath "$BIN")"
	export ALERTBRIDGE_WRAPPER="valgrind --tool=memcheck --leak-check=full \
--errors-for-leak-kinds=definite --error-exitcode=99 --track-origins=yes \
--log-file=$vg/vg.%p.log"
	export ALERTBRIDGE_SLOWDOWN="${VALGRIND_SLOWDOWN:-4}"
	run_integration tests/integration/test_bridge_e2e.py
	unset ALERTBRIDGE_WRAPPER ALERTBRIDGE_SLOWDOWN
	# The verdict: every run has an ERROR SUMMARY of 0 (it finished: a SIGKILL leaves none)
	# and no definitely lost bytes.
	runs=0; bad=0
	: >"$log"
	for v in "$vg"/vg.*.log; do
		[ -f "$v" ] || continue
		runs=$((runs + 1))
		if ! grep -q 'ERROR SUMMARY: 0 errors' "$v" ||
		   grep -Eq 'definitely lost: [1-9]' "$v"; then
			bad=$((bad + 1))
			{ echo "----- $(basename "$v") -----"; cat "$v"; } >>"$log"
		fi
	done
	if [ "$runs" -eq 0 ]; then
		echo "valgrind: no run of alertbridge was seen (ALERTBRIDGE_WRAPPER ignored?)" >>"$log"
		bad=1
	fi
	echo "valgrind memcheck: $runs runs of alertbridge, $bad with errors or definite leaks" \
		>>"$log"
	if [ "$bad" -eq 0 ]; then
		account memcheck "alertbridge ($runs runs, 0 errors, 0 definite leaks)" 1 0 0
	else
		account memcheck "alertbridge ($runs runs, $bad with errors or leaks)" 0 1 0
	fi
	secs=$(( $(date +%s) - start ))
	line="stage valgrind: $((passed - p0)) passed, $((failed - f0)) failed in ${secs}s"
	echo "$line"
	summary="$summary
$line"
	stage=""
fi

if [ -n "$fuzz_dir" ] && [ "$unit_only" -eq 0 ]; then
	start=$(date +%s)
	sh tests/fuzz/run.sh "$fuzz_dir" "$fuzz_s" >"$log" 2>&1
	rc=$?
	sed -n 's/^\(fuzz fuzz_[a-z_]*: [0-9]* executions.*\)/\1/p; s/^\(fuzz: .*\)/\1/p' "$log"
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
	f=$(echo "$last" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
	stage="fuzz "
	account libFuzzer "harnesses (${fuzz_s}s each)" "$p" "$f" "$rc"
	stage=""
	secs=$(( $(date +%s) - start ))
	line="stage fuzz: $p passed, $f failed in ${secs}s"
	echo "$line"
	summary="$summary
$line"
fi

[ -n "$summary" ] && echo "$summary" | sed '/^$/d'
if [ -n "$failed_names" ]; then
	echo "failing:$failed_names"
	echo "why (the first lines of each failing test's report; the whole one is above):"
	cat "$why"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
