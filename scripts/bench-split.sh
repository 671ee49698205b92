#!/usr/bin/env bash
# bench-split.sh measures what runtime splits (docs/protocol.md, "Runtime
# split") buy the example job (examples/backfill, embedded NATS, a 3 s
# lease, so a cut interval of 1 s; commits every 500ms; no crash): each
# configuration runs with -runtime-split=false (the behaviour before it:
# every split read as planned) and with it on, interleaved A B A B.
#
#   main        the default job: 4 workers x 8 lanes, 1M records in 64
#               uneven splits with correct weights, 2,000 records/s a lane
#   misestimate 8 workers x 4 lanes, 64 splits all weighed the same while
#               one holds a quarter of the records (-misestimate)
#   equal       the same shape with correct weights (-misestimate off)
#
# Usage: scripts/bench-split.sh [rounds] [records] [pace] [runs]
#   (defaults 3 rounds; misestimate/equal use 400,000 records at 2,000/s;
#   runs lists the configuration-mode pairs to run, default every one:
#   "main-off main-on misestimate-off misestimate-on equal-off equal-on".
#   At 2,000,000 records misestimate-off alone takes over 4 minutes a run
#   (its big split at one lane's pace), so a long series may leave it out.)
#
# For every run it prints elapsed, the ideal (records / (lanes x pace)),
# their ratio, the tail idle (lane-seconds idle while records remained),
# the runtime splits and the duplicates; then the medians per
# configuration and mode. A run that does not end "lost: 0" with exit
# status 0 fails the script.
set -euo pipefail

rounds="${1:-3}"
records="${2:-400000}"
pace="${3:-2000}"
runs="${4:-main-off main-on misestimate-off misestimate-on equal-off equal-on}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/backfill" ./examples/backfill

flags() {
	case "$1" in
	main) echo "" ;;
	misestimate) echo "-workers 8 -lanes 4 -splits 64 -misestimate -records $records -pace $pace" ;;
	equal) echo "-workers 8 -lanes 4 -splits 64 -records $records -pace $pace" ;;
	esac
}

failed=0
for r in $(seq 1 "$rounds"); do
	for c in main misestimate equal; do
		for mode in off on; do
			case " $runs " in *" $c-$mode "*) ;; *) continue ;; esac
			run="r$r-$c-$mode"
			split=true
			[ "$mode" = off ] && split=false
			# shellcheck disable=SC2046 # flags are words
			if ! "$tmp/backfill" -quiet -log off -crash-at 0 -runtime-split="$split" \
				-job "split-$run-$$" -data "$tmp/$run" $(flags "$c") >"$tmp/$run.out" 2>&1 ||
				! grep -q '^lost: *0$' "$tmp/$run.out"; then
				echo "run $run failed:" >&2
				cat "$tmp/$run.out" >&2
				failed=1
				continue
			fi
			elapsed=$(awk '/^elapsed:/ {sub("s","",$2); print $2}' "$tmp/$run.out")
			ideal=$(awk '/^ideal:/ {sub("s","",$2); print $2}' "$tmp/$run.out")
			idle=$(awk '/^tail idle:/ {print $3}' "$tmp/$run.out")
			cuts=$(awk '/^runtime splits:/ {print $3}' "$tmp/$run.out")
			dups=$(awk '/^duplicates:/ {print $2}' "$tmp/$run.out")
			ratio=$(echo "$elapsed/$ideal" | bc -l)
			printf '%-11s %-3s round %d: elapsed %6.1fs ideal %5.1fs ratio %5.2f  tail idle %7.1f lane-s  runtime splits %3d  duplicates %d  (load %s)\n' \
				"$c" "$mode" "$r" "$elapsed" "$ideal" "$ratio" "$idle" "$cuts" "$dups" "$(cut -d' ' -f1 /proc/loadavg)"
			echo "$c $mode $ratio $idle $elapsed $cuts $dups" >>"$tmp/results"
		done
	done
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) exit; if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "medians over $rounds rounds:"
for c in main misestimate equal; do
	for mode in off on; do
		grep -q "^$c $mode " "$tmp/results" 2>/dev/null || continue
		m() { awk -v c="$c" -v m="$mode" -v f="$1" '$1==c && $2==m {print $f}' "$tmp/results" | median; }
		printf '%-11s %-3s makespan/ideal %5.2f  tail idle %7.1f lane-s  elapsed %6.1fs  runtime splits %s  duplicates %s\n' \
			"$c" "$mode" "$(m 3)" "$(m 4)" "$(m 5)" "$(m 6)" "$(m 7)"
	done
	on=$(awk -v c="$c" '$1==c && $2=="on" {print $3}' "$tmp/results" | median)
	off=$(awk -v c="$c" '$1==c && $2=="off" {print $3}' "$tmp/results" | median)
	[ -n "$on" ] && [ -n "$off" ] && printf '%-11s on/off %.2f\n' "$c" "$(echo "$on/$off" | bc -l)"
done
exit "$failed"
