// Command backfill is the library's main example: a bounded job that
// backfills a generated data set of about a million records, divided among
// several workers coordinated through NATS JetStream, one of which crashes
// midway. It shows the guarantees the library makes: every record is
// delivered at least once (lost = 0), a crash replays at most one commit
// interval, and cooperative moves replay nothing.
//
// Run it with no arguments:
//
//	go run ./examples/backfill
//
// It starts an embedded NATS server, plans 64 splits of uneven sizes, runs 4
// workers (each with its own hollywood engine, NATS connection and
// coordinator, run by driver.Run), crashes one at 40 %, and ends with a
// report, whose last step audits the job's write history as coordctl audit
// does (-audit=false skips it). Every delivery is recorded in the job's ledger (a KV bucket on
// the same server) before it is acknowledged, so the report's counts are
// the whole job's, whichever process delivered them. The exit status is 0
// only when the job completed and no record was lost; 3 when SIGINT or
// SIGTERM interrupted it (run again to resume).
//
// A run holds its embedded server's store directory (a lock the system
// drops when the process ends): a second run of the same job started
// meanwhile uses a store of its own and says so, and -data naming a held
// directory is refused with the holder's pid. -timeout bounds the whole run,
// shutdown included: the work stops a fifth of it (at most 15 s) early so
// the workers depart and the server stops in time, and a shutdown that still
// overruns ends the process with a message naming what it was stuck in.
//
// To divide one job among processes, start a NATS server (2.11 or later,
// with JetStream; the README shows how with nothing but Go), build the
// example (so that kill -9 reaches the worker, not the go tool that go run
// leaves in front of it) and run it in several terminals; any of them, or a
// -verify run afterwards, proves from the ledger that nothing was lost, even
// if one was killed with kill -9 (each names its pid first):
//
//	go build -o backfill ./examples/backfill
//	./backfill -nats nats://127.0.0.1:4222 -instance a
//	./backfill -nats nats://127.0.0.1:4222 -instance b
//	./backfill -nats nats://127.0.0.1:4222 -verify
//
// To see what a NATS outage costs, -outage 2s stops the embedded server
// once -outage-at (half) of the records is delivered and restarts it on the
// same store 2 s later; lanes pause while their commits do not land
// (-pause-after), so the replay stays bounded. scripts/bench-outage.sh
// measures it against a run without an outage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/internal/tty"
)

func main() { examplekit.Main(run) }

// run is the whole program behind main: parse, run (or verify), report. It
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := examplekit.NewFlags("backfill", usageText, stderr)
	o, err := parseFlags(args, f)
	if code, done := examplekit.ParseStatus(err); done {
		return code
	}
	terminal := stdout == io.Writer(os.Stdout) && tty.Terminal(os.Stdout)
	var stage examplekit.Stage
	return examplekit.Bounded("backfill", o.Timeout, &stage, stderr, func() int {
		var rep *report
		var err error
		if o.verify {
			rep, err = verify(ctx, o)
		} else {
			rep, err = backfill(ctx, o, displayMode(o, terminal), stdout, stderr, &stage)
		}
		if err != nil {
			fmt.Fprintf(stderr, "backfill: %v\n", err)
			return examplekit.ExitFailed
		}
		rep.Color = terminal && tty.Color(os.Stdout)
		rep.write(stdout)
		return exitStatus(rep.Outcome)
	})
}
