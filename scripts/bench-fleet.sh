#!/usr/bin/env bash
# bench-fleet.sh runs the fleet scale benchmark of issue #11 (bench/fleet)
# against an embedded NATS server on loopback and prints one line per
# figure, each beside its raw-store baseline measured in the same run:
#
#   F1 plan + seed N splits          vs as many raw creates, same concurrency
#   F2 W workers claim N splits      vs the raw writes those claims need
#   F3 that fleet idle               writes/worker/heartbeat, process CPU
#   F4 events per worker per second  others holding few vs many splits
#   F5 Commit p50/p99                vs a raw KV Update, interleaved, and the
#                                    store's own Update (its share of the ratio)
#   F6 heap per split in view        vs the store's bytes per split
#   F7 restart on an existing job    W workers claim N seeded splits vs the raw
#                                    writes those claims need, and vs those
#                                    writes under W plain watchers (the floor)
#   F8 W workers started together    balanced when every split is first held,
#                                    0 moves afterwards, in -f8runs runs
#
# Every argument goes to the program (see `go run ./fleet -h` in bench/):
# -splits (default 100000), -workers (8), -idle (1m), -lease (30s), -grace
# (StartupGrace, 3s), -f8runs (20), -f8splits (1000), -cpuprofile FILE,
# -timeout (15m per figure), -only F1,F5, -store nats|postgres|nats,postgres
# (postgres: a throwaway PostgreSQL server; F3 then adds the server's CPU
# and the rows its sweeps and change log write and remove per hour; F5's
# baseline is a raw UPDATE ... WHERE rev = $1), ... A figure that does not finish
# in time prints "timeout after X"; the run goes on.
#
# Runs from a clean clone; the program lives in the nested module bench/,
# so its dependencies never enter the library's go.mod. The server's store
# directory is temporary and removed at exit.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/bench"

bin="$(mktemp -d)/bench-fleet"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./fleet
"$bin" "$@"
