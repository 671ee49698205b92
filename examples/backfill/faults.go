package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spate-go/coordination"
)

// crashAtFraction waits until frac of the records are delivered, then crashes
// the worker holding the most splits. It returns after the crash, when done is
// closed, or when ctx ends.
func crashAtFraction(ctx context.Context, done <-chan struct{}, frac float64, ds *dataset, sink *ledger, workers []*worker, f *fleet, note func(string)) {
	var victim *worker
	var t tally
	if !waitUntil(ctx, done, func() bool {
		t = tallyOf(ds, sink.snapshot())
		victim = victimHolding(workers)
		return t.delivered >= int64(frac*float64(ds.records)) && victim != nil
	}) {
		return
	}
	victim.crashNow()
	held := f.crashed(victim.name)
	note(fmt.Sprintf("CRASH: %s aborted at %s delivered, holding %s (%s); its leases expire within %s",
		victim.name, percent(t.delivered, t.planned), count(len(held), "split"), joinIDs(held), leaseDuration))
}

// outageAtFraction waits until frac of the records are delivered, then
// stops the embedded server for d and restarts it on the same store. It
// returns after the restart, when done is closed, or when ctx ends.
func outageAtFraction(ctx context.Context, done <-chan struct{}, frac float64, d time.Duration, ds *dataset, sink *ledger, srv *embeddedServer, note func(string)) error {
	var t tally
	if !waitUntil(ctx, done, func() bool {
		t = tallyOf(ds, sink.snapshot())
		return t.delivered >= int64(frac*float64(ds.records))
	}) {
		return nil
	}
	note(fmt.Sprintf("OUTAGE: NATS stopped at %s delivered, for %s", percent(t.delivered, t.planned), d))
	if err := srv.outage(ctx, d); err != nil {
		return fmt.Errorf("restarting the embedded NATS server after the outage: %w", err)
	}
	note("OUTAGE over: NATS restarted on the same store")
	return nil
}

// waitUntil polls cond every 50ms until it holds (true), or done is closed
// or ctx ends first (false).
func waitUntil(ctx context.Context, done <-chan struct{}, cond func() bool) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-done:
			return false
		case <-tick.C:
		}
		if cond() {
			return true
		}
	}
}

// joinIDs renders split ids as a comma-separated list.
func joinIDs(ids []coordination.SplitID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
