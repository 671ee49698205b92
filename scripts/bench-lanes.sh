#!/usr/bin/env bash
# bench-lanes.sh measures the lane kit's cost (package lanes,
# BenchmarkLane): one lane reading records with an empty body, the kit
# against the hand-written source of the README before it, at batch 1 and
# batch 256. Each round runs hand then kit (A B A B), one benchmark run
# each; the script prints every figure and the medians of records per
# second and their ratio kit/hand.
#
# Usage: scripts/bench-lanes.sh [rounds]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
go test -c -o /tmp/lanes.bench ./lanes
declare -A runs=([1]=50000000 [256]=2000000000)
for batch in 1 256; do
  hand=() kit=()
  for ((i = 1; i <= rounds; i++)); do
    for impl in hand kit; do
      ns=$(/tmp/lanes.bench -test.run '^$' -test.bench "Lane/batch=$batch/$impl\$" -test.benchtime "${runs[$batch]}x" |
        awk '/ns\/op/ {print $3}')
      echo "batch=$batch $impl round $i: $ns ns/record"
      if [ "$impl" = hand ]; then hand+=("$ns"); else kit+=("$ns"); fi
    done
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
  mh=$(median "${hand[@]}") mk=$(median "${kit[@]}")
  awk -v b="$batch" -v h="$mh" -v k="$mk" 'BEGIN {
    printf "batch=%s medians: hand %.0f records/s, kit %.0f records/s, kit/hand %.2f\n", b, 1e9/h, 1e9/k, h/k }'
done
