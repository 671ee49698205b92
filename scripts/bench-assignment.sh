#!/usr/bin/env bash
# bench-assignment.sh times the assignment function (SPEC §14, §31.1) and
# compares it with franz-go's sticky group balancer on count-only input.
# It prints one line per case, each the median of RUNS runs (default 7):
#
#   assignment <shape> <n>x<m>: ours <ms> ms[, franz-go <ms> ms, ratio <r>]
#
# Shapes: unowned, settled, join (weights 1..100, ours only) and count-fresh,
# count-join (every weight 1, one topic with n partitions, side by side).
# Everything runs on one core (GOMAXPROCS=1). Times are process CPU time, so
# a busy machine does not inflate them; set CLOCK=wall for wall time. The
# franz-go figure is its Balance step alone (metadata parsing excluded);
# FRANZ=leader times the metadata parse too. QUICK=1 skips the 100k×1000
# cases.
#
# Runs from a clean clone; the comparison lives in the nested module bench/
# (franz-go never enters the library's go.mod) and downloads it on first use.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/bench"

bin="$(mktemp -d)/bench-assignment"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/bench-assignment

args=(-runs "${RUNS:-7}" -clock "${CLOCK:-cpu}" -franz "${FRANZ:-balance}")
if [[ "${QUICK:-0}" != "0" ]]; then
	args+=(-quick)
fi
GOMAXPROCS=1 "$bin" "${args[@]}"
