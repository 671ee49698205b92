package main

import (
	"context"
	"errors"
	"fmt"
)

// verify reads the job's ledger on -nats or -postgres and reports on it alone. It
// creates nothing: a job with no ledger there is "no such job", naming the
// job it looked for and how that name was chosen.
func verify(ctx context.Context, o *options) (*report, error) {
	ds := datasetOf(o)
	var sink *ledger
	var err error
	if o.postgres != "" {
		sink, err = openPGLedger(ctx, o.postgres, jobOf(o, planner{ds: ds}), false)
	} else {
		sink, err = readLedger(ctx, o.NATS, jobOf(o, planner{ds: ds}))
	}
	if errors.Is(err, errNoSuchJob) {
		how := "the -job given"
		if o.job == "" {
			how = fmt.Sprintf("the job of -splits %d -records %d; pass the -job, or the -splits and -records, of the run to verify", o.splits, o.records)
		}
		return nil, fmt.Errorf("-verify: %w; looked for %s", err, how)
	}
	if err != nil {
		return nil, err
	}
	defer sink.close()
	rep := newReport("", ds, tallyOf(ds, sink.snapshot()), nil, nil, 0, nil, false)
	rep.Verify = true
	if rep.Lost() > 0 {
		rep.Outcome = outcomeFailed
	}
	return rep, nil
}
