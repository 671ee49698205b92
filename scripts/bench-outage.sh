#!/usr/bin/env bash
# bench-outage.sh measures what a NATS outage costs the example job
# (examples/backfill: 4 workers, 1M records in 64 splits, lanes at 2,000
# records/s, a 3 s lease, commits every 500ms): the embedded server is
# stopped at half the job and restarted on the same store directory after
# 2 s and after 10 s, beside a run without an outage, and each outage once
# more with -pause-after 1h (lanes never pause: the behaviour before
# driver.Pauser). The crash of the default run is off (-crash-at 0), so
# every duplicate is the outage's.
#
# Usage: scripts/bench-outage.sh [rounds]   (default 5)
#
# The configurations run interleaved, one of each per round, so machine
# noise spreads over all of them. For each it prints every run's duplicates
# as a fraction of the job and their median. Any run that does not end
# "lost: 0" with exit status 0 is reported and fails the script.
set -euo pipefail

rounds="${1:-5}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/backfill" ./examples/backfill

configs=("none" "2s" "10s" "2s-nopause" "10s-nopause")
flags() {
	case "$1" in
	none) echo "" ;;
	2s) echo "-outage 2s" ;;
	10s) echo "-outage 10s" ;;
	2s-nopause) echo "-outage 2s -pause-after 1h" ;;
	10s-nopause) echo "-outage 10s -pause-after 1h" ;;
	esac
}

records=1000000
failed=0
for r in $(seq 1 "$rounds"); do
	for c in "${configs[@]}"; do
		run="r$r-$c"
		# shellcheck disable=SC2046 # flags are words
		if ! "$tmp/backfill" -quiet -log off -crash-at 0 -records "$records" \
			-job "outage-$run-$$" -data "$tmp/$run" $(flags "$c") >"$tmp/$run.out" 2>&1 ||
			! grep -q '^lost: *0$' "$tmp/$run.out"; then
			echo "run $run failed:" >&2
			cat "$tmp/$run.out" >&2
			failed=1
			continue
		fi
		dups=$(awk '/^duplicates:/ {print $2}' "$tmp/$run.out")
		elapsed=$(awk '/^elapsed:/ {print $2}' "$tmp/$run.out")
		echo "$c $dups" >>"$tmp/results"
		printf '%-12s round %d: %7d duplicates (%.2f%% of the job), elapsed %s\n' \
			"$c" "$r" "$dups" "$(echo "100*$dups/$records" | bc -l)" "$elapsed"
	done
done

echo
echo "medians over $rounds rounds (duplicates as a fraction of the $records-record job):"
for c in "${configs[@]}"; do
	grep "^$c " "$tmp/results" | awk '{print $2}' | sort -n | awk -v c="$c" -v n="$records" '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { printf "%-12s no successful run\n", c; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%-12s median %8d duplicates (%.2f%%), min %d, max %d, runs %d\n", c, m, 100 * m / n, v[1], v[NR], NR
		}'
done
exit "$failed"
