#!/bin/sh
# run_fuzzer.sh FUZZER CORPUS SEED_CORPUS SECONDS: runs a libFuzzer target for SECONDS on CORPUS
# (created from SEED_CORPUS), and prints the executions it ran. Exit status: the fuzzer's.
set -e
fuzzer=$1 corpus=$2 seeds=$3 seconds=$4
mkdir -p "$corpus"
cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
log=$(mktemp)
status=0
"$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$corpus/../$(basename "$fuzzer")-" "$corpus" >"$log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|ERROR|SUMMARY|crash-|timeout-" "$log" || true
[ $status -eq 0 ] || tail -40 "$log"
rm -f "$log"
exit $status
