#!/bin/sh
# run.sh - run every libFuzzer harness of make fuzz for a bounded time and report, per harness,
# the executions and what it found; any crash, leak, timeout or out-of-memory fails the run
# with the reproducer's path (replay it: BUILD_DIR/fuzz/<harness> <reproducer>).
#
# usage: sh tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]
#   binaries:  BUILD_DIR/fuzz/fuzz_*        (built by make fuzz)
#   seeds:     tests/fuzz/corpus/<harness>/ (read only; see tests/fuzz/seed.py)
#   corpus:    BUILD_DIR/fuzz-corpus/<harness>/ (what the fuzzer learnt; kept between runs)
#   findings:  BUILD_DIR/fuzz-findings/<harness>-crash-<sha1> (and -leak-, -timeout-, -oom-)
#   dictionary: tests/fuzz/<harness>.dict when present
# SECONDS 0 replays the seeds and the learnt corpus once, without fuzzing (a regression run).
set -u
O=${1:?usage: run.sh BUILD_DIR SECONDS [HARNESS...]}
S=${2:?usage: run.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
names="$*"
if [ -z "$names" ]; then
	for b in "$O"/fuzz/fuzz_*; do
		case "$b" in *.d|*.o) continue ;; esac
		[ -x "$b" ] && names="$names $(basename "$b")"
	done
fi
[ -n "$names" ] || { echo "fuzz: no harnesses in $O/fuzz (run make fuzz)" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
mkdir -p "$O/fuzz-findings"
passed=0
failed=0
total=0
for name in $names; do
	bin="$O/fuzz/$name"
	work="$O/fuzz-corpus/$name"
	seeds="tests/fuzz/corpus/$name"
	mkdir -p "$work"
	dict=""
	[ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
	start=$(date +%s)
	limit="-max_total_time=$S"
	[ "$S" -eq 0 ] && limit="-runs=0"
	# -timeout: one input may take 10 s; -rss_limit_mb: 2 GiB; leaks are findings too.
	# shellcheck disable=SC2086
	ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
	UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
	timeout $((S + 120)) "$bin" $limit -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$O/fuzz-findings/$name-" $dict \
		"$work" $( [ -d "$seeds" ] && echo "$seeds" ) >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	execs=${execs:-0}
	total=$((total + execs))
	units=$(ls "$work" | wc -l)
	repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	if [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		grep -v '^#[0-9]' "$log" | tail -n 60
		echo "fuzz $name: FAILED (exit $rc) after $execs executions in ${secs}s;" \
			"reproducer: ${repro:-none written}"
		[ -n "$repro" ] && echo "  replay: $bin $repro"
	else
		passed=$((passed + 1))
		echo "fuzz $name: $execs executions in ${secs}s, corpus $units inputs, no findings"
	fi
done
echo "fuzz: $total executions in all"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
