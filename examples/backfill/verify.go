package main

import "context"

// verify reads the job's ledger on -nats and reports on it alone.
func verify(ctx context.Context, o *options) (*report, error) {
	ds := newDataset(o.splits, o.records)
	sink, err := openLedger(ctx, o.NATS, jobOf(o, planner{ds: ds}))
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
