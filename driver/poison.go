package driver

import "github.com/spate-go/coordination"

// Fail reports split as poison: unprocessable by this tenancy. Lanes report
// poison through a side channel the embedder owns (never as a read error);
// the embedder drains those reports and calls Fail for each before calling
// PollEvents.
//
// If split is not held, Fail returns nil without calling the coordinator.
// Otherwise it calls Coordinator.Fail with the tenancy's epoch; on nil,
// Fenced or Retryable the split has left this worker in every case, so it is
// retired ([LanesRevoked]) and Fail returns nil. A Fatal (or
// non-coordination) answer is returned and the split stays held. Before
// Start it returns Fatal "driver used before Start"; after Shutdown, Fatal
// "driver is shut down".
func (d *Driver) Fail(split coordination.SplitID, reason string) error {
	if err := d.usable(); err != nil {
		return err
	}
	t, ok := d.held[split]
	if !ok {
		return nil
	}
	err := d.c.Fail(split, t.epoch, reason)
	if !leftWorker(err) {
		return err
	}
	if err != nil {
		d.log.Warn("split failure report returned an error; the split has left this worker anyway", "split", split, "err", err)
	}
	t.fenced = true
	d.retire(t)
	return nil
}

// PoisonReporter is an optional extension of [SourceReader]: lanes that
// find content no retry can read report it here, and [Run] fails each
// split it returns ([Driver.Fail]) after every poll, so the split is
// quarantined after Config.MaxAttempts attempts instead of ending the run.
type PoisonReporter interface {
	// TakePoisoned returns the splits reported as poison since the last
	// call (an edge, not a level). It must be safe against the lanes'
	// readers and must not block.
	TakePoisoned() []Poisoned
}

// Poisoned is one poison report of a [PoisonReporter].
type Poisoned struct {
	// Split is the split that cannot be read.
	Split coordination.SplitID
	// Reason says why, for the split's failure record and the log.
	Reason string
}

// failPoisoned fails every split src reports as poison, when src is a
// PoisonReporter. Only a Fatal (or non-coordination) answer is returned.
func (d *Driver) failPoisoned(src any) error {
	pr, ok := src.(PoisonReporter)
	if !ok {
		return nil
	}
	for _, p := range pr.TakePoisoned() {
		d.log.Warn("lane reported its split as poison", "split", p.Split, "reason", p.Reason)
		if err := d.Fail(p.Split, p.Reason); err != nil {
			return err
		}
	}
	return nil
}
