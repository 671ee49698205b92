#!/usr/bin/env bash
# bench-ab.sh compares the library at two revisions on the fleet benchmark
# (bench/fleet), same run, interleaved: base, new, base, new, ... and prints
# each round's figures, then their medians and new/base:
#
#   F2  Start -> all held (s): W workers claim N splits of a new job
#   F7  Start -> all held (s): a restart on an existing job
#   F5  Commit p50 and p99 as ratios to a raw KV update of the same run
#
# Usage: scripts/bench-ab.sh BASE_REV [ROUNDS] [-- fleet flags]
#   BASE_REV  the library revision to compare against (for example 56def03)
#   ROUNDS    rounds of the pair (default 5)
#   flags     passed to both runs (default: -only F2,F7,F5 -splits 20000
#             -workers 4 -samples 2000)
#
# Both binaries are built from this tree's bench/ program; the base one
# with its library replaced by BASE_REV's (a temporary clone), so only the
# library differs. "new" is the working tree.
set -euo pipefail

base_rev="${1:?usage: scripts/bench-ab.sh BASE_REV [ROUNDS] [-- fleet flags]}"
shift
rounds=5
if [[ $# -gt 0 && "$1" != "--" ]]; then
	rounds="$1"
	shift
fi
[[ $# -gt 0 && "$1" == "--" ]] && shift
flags=("$@")
[[ ${#flags[@]} -eq 0 ]] && flags=(-only F2,F7,F5 -splits 20000 -workers 4 -samples 2000)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

git clone -q "$root" "$tmp/base"
git -C "$tmp/base" checkout -q "$base_rev"
rm -rf "$tmp/base/bench"
cp -r "$root/bench" "$tmp/base/bench"
(cd "$tmp/base/bench" && go build -o "$tmp/fleet-base" ./fleet)
(cd "$root/bench" && go build -o "$tmp/fleet-new" ./fleet)

# figures prints "F2 F7 F5p50 F5p99" of one run's output (- where absent).
figures() {
	awk '
		/^F2 / { if (match($0, /Start -> all held [0-9.]+ s/)) { split(substr($0, RSTART, RLENGTH), a, " "); f2 = a[5] } }
		/^F7 / { if (match($0, /Start -> all held [0-9.]+ s/)) { split(substr($0, RSTART, RLENGTH), a, " "); f7 = a[5] } }
		/^F5 / { if (match($0, /ratio p50 [0-9.]+ \(target <= 1.3\) p99 [0-9.]+/)) { split(substr($0, RSTART, RLENGTH), a, " "); p50 = a[3]; p99 = a[8] } }
		END { printf "%s %s %s %s\n", (f2 == "" ? "-" : f2), (f7 == "" ? "-" : f7), (p50 == "" ? "-" : p50), (p99 == "" ? "-" : p99) }
	'
}

printf '%-6s %-5s %8s %8s %8s %8s\n' round lib F2_s F7_s F5_p50 F5_p99
for ((r = 1; r <= rounds; r++)); do
	for lib in base new; do
		line="$("$tmp/fleet-$lib" "${flags[@]}" 2>&1 | figures)"
		echo "$lib $line" >>"$tmp/results"
		# shellcheck disable=SC2086
		printf '%-6s %-5s %8s %8s %8s %8s\n' "$r" "$lib" $line
	done
done

# median of column c (2..5) for lib.
median() {
	awk -v lib="$1" -v c="$2" '$1 == lib && $c != "-" { print $c }' "$tmp/results" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "medians of $rounds rounds (base $base_rev; new = working tree)"
printf '%-8s %8s %8s %10s\n' figure base new new/base
for c in 2 3 4 5; do
	name=$(echo "F2_s F7_s F5_p50 F5_p99" | cut -d' ' -f$((c - 1)))
	b="$(median base "$c")"
	n="$(median new "$c")"
	ratio="$(awk -v b="$b" -v n="$n" 'BEGIN { if (b + 0 > 0 && n != "-") printf "%.2f", n / b; else print "-" }')"
	printf '%-8s %8s %8s %10s\n' "$name" "$b" "$n" "$ratio"
done
