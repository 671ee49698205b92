package driver

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/spate-go/coordination"
)

// Shutdown ends the run: the last call on a Driver. Close the stop channel
// given to [WithStop] and stop the lanes first, then pass the last
// acknowledged watermark per partition as final.
//
// It builds one final commit per held tenancy (live or draining, unfenced,
// not completed), in ascending partition order: from EncodeCommit of its
// watermark in final if present (Completed stripped for a draining split);
// else its deferred progress if nothing superseded it; else a non-nil Sweep
// result; else no entry. A non-empty batch goes to Coordinator.CommitFinal
// once. Then it always calls Coordinator.Depart with every still-held split
// sorted by id, even when none is held and even if the final commit failed,
// and finally CloseSplit for every remaining tenancy.
//
// It returns nil when every final entry landed (or was fenced: the split had
// already moved) and Depart returned nil. Otherwise it returns a
// *coordination.Error of the most severe kind collected (Fatal over
// Retryable; a plain source error counts as Fatal) whose reason names each
// split whose final commit did not land and any Depart failure, and whose Err
// joins the individual errors. Before Start it only calls Depart and returns
// its error; after Shutdown it returns Fatal "driver is shut down".
func (d *Driver) Shutdown(final []Watermark) error { return d.shutdown(final, nil) }

// shutdown is Shutdown at the end of a run whose outcome is known: a
// Depart failure that only repeats outcome (a coordinator that failed
// returns its failure again from every later call, Depart included) is
// left out, so that Run's error states the failure once.
func (d *Driver) shutdown(final []Watermark, outcome error) error {
	if d.shut {
		return errShutDown()
	}
	d.shut = true
	if !d.started {
		if err := d.c.Depart(); !repeats(err, outcome) {
			return err
		}
		return nil
	}

	var f failures
	batch, owners := d.finalBatch(final, &f)
	if len(batch) > 0 {
		results := d.c.CommitFinal(batch)
		for i, t := range owners {
			var err error
			if i < len(results) {
				err = results[i]
			} else {
				err = &coordination.Error{Kind: coordination.Retryable, Reason: "CommitFinal returned no result for this entry"}
			}
			switch coordination.KindOf(err) {
			case 0:
				if err != nil {
					f.split(t.id(), err)
					continue
				}
				d.landed(t, batch[i].Progress)
			case coordination.Fenced:
				d.fence(t, err)
			default:
				f.split(t.id(), err)
			}
		}
	}

	if err := d.c.Depart(slices.Sorted(maps.Keys(d.held))...); err != nil && !repeats(err, outcome) {
		f.add("depart failed: "+err.Error(), err)
	}
	for _, t := range d.byPartition() {
		d.retire(t)
	}
	d.toOpen, d.added, d.lost, d.retired = nil, nil, nil, nil
	clear(d.parts)
	return f.err()
}

// repeats reports whether err is outcome again: the same error value, or
// one with the same text.
func repeats(err, outcome error) bool {
	return err != nil && outcome != nil && (errors.Is(outcome, err) || err.Error() == outcome.Error())
}

// finalBatch builds the final commits and the tenancy of each entry; source
// errors are collected in f as that split's failure.
func (d *Driver) finalBatch(final []Watermark, f *failures) ([]coordination.Commit, []*tenancy) {
	marks := make(map[PartitionID]int64, len(final))
	for _, w := range mergeWatermarks(final) {
		marks[w.Partition] = w.Value
	}
	var batch []coordination.Commit
	var owners []*tenancy
	for _, t := range d.byPartition() {
		if !t.committable() {
			continue
		}
		var p *coordination.SplitProgress
		if w, ok := marks[t.partition]; ok {
			enc, err := d.encode(t, w)
			if err != nil {
				f.split(t.id(), err)
				continue
			}
			p = &enc
		} else if t.deferred {
			p = cloneProgressPtr(t.progress)
		} else if t.phase == live {
			swept, err := d.src.Sweep(t.id())
			if err != nil {
				f.split(t.id(), err)
				continue
			}
			p = cloneProgressPtr(swept)
		}
		if p == nil {
			continue
		}
		if t.pendingCut != nil {
			if !d.settleCut(t, *p, f) {
				continue
			}
			p.Completed = p.Completed && t.pendingCut == nil
		}
		batch = append(batch, coordination.Commit{Split: t.id(), Progress: *p})
		owners = append(owners, t)
	}
	return batch, owners
}

// settleCut commits t's cut in flight before its final commit p: a final
// commit never goes without it, nor completes the split before its
// residual exists. It reports whether p may still be committed: the cut
// landed and p completes the split (the cut commit carried everything
// else), or it did not and p, then committed as not completed, is a plain
// commit of the uncut split whose lane never read past the cut.
func (d *Driver) settleCut(t *tenancy, p coordination.SplitProgress, f *failures) bool {
	if err := d.commitCut(t, p); err != nil {
		f.split(t.id(), err)
		return false
	}
	if !t.committable() {
		return false // fenced
	}
	return t.pendingCut != nil || p.Completed
}

// failures collects what went wrong during Shutdown.
type failures struct {
	reasons []string
	errs    []error
	kind    coordination.ErrorKind
}

// split records that split's final commit did not land because of err.
func (f *failures) split(id coordination.SplitID, err error) {
	f.add("final commit of split "+string(id)+" did not land; its uncommitted tail will replay", err)
}

func (f *failures) add(reason string, err error) {
	f.reasons = append(f.reasons, reason)
	f.errs = append(f.errs, err)
	f.kind = max(f.kind, severity(err))
}

// severity ranks err's kind for the composed error: Retryable < Fenced <
// Fatal; anything that is not a coordination error counts as Fatal.
func severity(err error) coordination.ErrorKind {
	switch k := coordination.KindOf(err); k {
	case coordination.Retryable, coordination.Fenced, coordination.Fatal:
		return k
	}
	return coordination.Fatal
}

func (f *failures) err() error {
	if len(f.errs) == 0 {
		return nil
	}
	return &coordination.Error{Kind: f.kind, Reason: strings.Join(f.reasons, "; "), Err: errors.Join(f.errs...)}
}
