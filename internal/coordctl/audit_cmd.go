package coordctl

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/spate-go/coordination/store"
)

var auditCommand = command{
	name:  "audit",
	about: "Reads the history the store keeps of the job's records in revision order (NATS: the state\nbucket's natsstore.Config.History revisions per key, 1 unless the job was created with more, at\nmost 64; PostgreSQL: the change log, pgstore.Config.Retention of every write, 10m by default) and\nchecks, per split: epochs never decrease, no write under a superseded epoch landed, the\nwatermark never decreased, terminal states never reverted (a requeue excepted). Prints each\nviolation with the revisions involved and exits 3 on any. With -follow it then watches every\nwrite live until interrupted, so a whole run is checked whatever the history depth.",
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		follow := fs.Bool("follow", false, "after the history, check every write live until interrupted")
		asJSON := fs.Bool("json", false, "print the report as JSON (violations included) at the end")
		return func(ctx context.Context, e *env) int {
			if len(e.args) > 0 {
				return e.failf("audit takes no arguments, got %q", e.args[0])
			}
			st, err := e.conn.open(ctx)
			if err != nil {
				return e.failf("%v", err)
			}
			defer st.Close()
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			setup, cancelSetup := context.WithTimeout(wctx, e.conn.timeout)
			defer cancelSetup()
			if _, err := readJob(setup, st, false); err != nil {
				return e.failf("reading %s: %v", e.conn.where(), err)
			}
			w, err := st.WatchHistory(wctx, store.Durable, "")
			if err != nil {
				return e.failf("reading the history of %s: %v", e.conn.where(), err)
			}
			defer w.Stop()
			a := newAuditor()
			if !*asJSON {
				a.onViolation = func(v violation) { fmt.Fprintln(e.stdout, v) }
			}
			if err := feed(ctx, w, a, *follow, e.conn.timeout, e.stderr); err != nil {
				return e.failf("auditing %s: %v", e.conn.where(), err)
			}
			rep := a.report(e.conn.job)
			if *asJSON {
				if err := writeJSON(e.stdout, rep); err != nil {
					return e.failf("writing the report: %v", err)
				}
			} else {
				rep.Followed = *follow
				rep.writeText(e.stdout, len(a.found))
			}
			if len(rep.Violations) > 0 {
				return ExitViolations
			}
			return ExitOK
		}
	},
}

// feed passes the watch's events to a: the history, then with follow the
// live writes until ctx ends. Without follow, idle bounds the wait for each
// event.
func feed(ctx context.Context, w store.Watcher, a *auditor, follow bool, idle time.Duration, notes io.Writer) error {
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		var wait <-chan time.Time
		if !follow {
			wait = timer.C
		}
		select {
		case <-ctx.Done():
			if follow {
				return nil
			}
			return ctx.Err()
		case <-wait:
			return fmt.Errorf("no history event within -timeout %s", idle)
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil {
					return err
				}
				if follow && ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("the history watch ended early")
			}
			timer.Reset(idle)
			if ev.Kind == store.SnapshotDone {
				if !follow {
					return nil
				}
				fmt.Fprintln(notes, "coordctl audit: history checked; following every write live until interrupted")
				continue
			}
			a.add(ev)
		}
	}
}

// writeText writes the report's summary after the violations not printed
// yet (the first printed were printed as they were found).
func (r auditReport) writeText(w io.Writer, printed int) {
	for _, v := range r.Violations[printed:] {
		fmt.Fprintln(w, v)
	}
	what := "history"
	if r.Followed {
		what = "history and live writes"
	}
	fmt.Fprintf(w, "audit of job %q (%s): %d revisions of %d keys, %d splits, %d requeues; deepest key history %d revisions\n",
		r.Job, what, r.Revisions, r.Keys, r.Splits, r.Requeues, r.Deepest)
	if r.Truncated > 0 {
		fmt.Fprintf(w, "note: the kept history of %d splits starts after their first write (NATS keeps natsstore.Config.History revisions per key, 1 unless set, at most 64; PostgreSQL keeps pgstore.Config.Retention of the change log), so their older writes were not checked; run audit -follow during a run to check every write\n", r.Truncated)
	}
	checks := "epochs never decrease, no write under a superseded epoch, watermarks never decrease, terminal states final"
	if len(r.Violations) == 0 {
		fmt.Fprintf(w, "violations: 0 (%s)\n", checks)
		return
	}
	fmt.Fprintf(w, "violations: %d\n", len(r.Violations))
}
