package driver

import (
	"errors"
	"maps"
	"slices"

	"github.com/spate-go/coordination"
)

// The driver's side of runtime splits (docs/protocol.md, "Runtime split"):
// it reports the lanes' remaining work, and when the leader asks for a cut
// of a held split, it has the source cut the lane (Splitter.TrySplit) and
// commits the cut (coordination.Cutter.CommitCut). Both need a source that
// implements Splitter and a coordinator that implements Cutter; without
// either, requests are dropped and nothing is reported.

// splitting returns the source's Splitter and the coordinator's Cutter, or
// ok false when the run cannot cut.
func (d *Driver) splitting() (Splitter, coordination.Cutter, bool) {
	sp, ok := d.src.(Splitter)
	if !ok {
		return nil, nil, false
	}
	cu, ok := d.c.(coordination.Cutter)
	return sp, cu, ok
}

// onCutRequested stages a cut request for Cut; the latest request of a
// split replaces an earlier one. The poll that staged it returns without
// parking, so the request is acted on when it arrives.
func (d *Driver) onCutRequested(ev coordination.CutRequested) {
	if _, _, ok := d.splitting(); !ok {
		return
	}
	if d.asks == nil {
		d.asks = make(map[coordination.SplitID]coordination.CutRequested)
	}
	d.asks[ev.Split] = ev
	d.asked = true
}

// ReportRemaining hands the coordinator the source's estimate of every open
// live lane's remaining work (Splitter.Remaining), which the leader reads
// to decide cuts. [Run] calls it once per commit interval; it does nothing
// unless the source implements [Splitter] and the coordinator
// coordination.Cutter.
func (d *Driver) ReportRemaining() {
	sp, cu, ok := d.splitting()
	if !ok || d.usable() != nil {
		return
	}
	for _, t := range d.byPartition() {
		if t.phase == live && t.opened && t.committable() && !d.uncuttable[t.id()] {
			cu.ReportRemaining(t.id(), t.epoch, sp.Remaining(t.lane))
		}
	}
}

// Cut acts on the cut requests polled since the last call: for each split
// still held live at the request's epoch, with an open lane and no cut in
// flight, it asks the source to cut the lane (Splitter.TrySplit) and, when
// it did, commits the cut with the lane's progress at its acknowledged
// watermark in acked (or its last commit) through
// coordination.Cutter.CommitCut; a request for several parts repeats that,
// each cut confirmed before the next, the last residuals cut off first, so
// that the primary and every residual get about an equal share of what
// remained. It returns the number of cuts that became durable. A refusal
// (!ok) or a source error changes nothing; a Retryable CommitCut keeps the
// cut in flight: every later commit of the lane carries it until it lands,
// and none completes the split before; a CommitCut that refused the cut
// for good (coordination.ErrCutRefused: descriptors over the store's value
// cap, a residual equal to its primary) commits the lane's progress without
// the cut, hands the split back un-cut and retires the lane, and the split
// is never cut again by this driver (docs/protocol.md, "Runtime split",
// "Refused cuts"). [Run] calls it
// after every poll; it does nothing unless the source implements
// [Splitter] and the coordinator coordination.Cutter. Only a Fatal or
// non-coordination error, or an EncodeCommit error, is returned.
func (d *Driver) Cut(acked []Watermark) (int, error) {
	if err := d.usable(); err != nil {
		return 0, err
	}
	sp, _, ok := d.splitting()
	if !ok || len(d.asks) == 0 {
		return 0, nil
	}
	marks := make(map[PartitionID]int64)
	for _, w := range mergeWatermarks(acked) {
		marks[w.Partition] = w.Value
	}
	landed := 0
	for _, id := range slices.Sorted(maps.Keys(d.asks)) {
		ask := d.asks[id]
		delete(d.asks, id)
		t, ok := d.held[id]
		if !ok || t.epoch != ask.Epoch || t.phase != live || !t.opened || !t.committable() || t.pendingCut != nil || d.uncuttable[id] {
			continue
		}
		w, ok := marks[t.partition]
		if !ok && t.progress == nil {
			continue // nothing to commit the cut with yet; the leader asks again
		}
		if t.progress != nil {
			w = max(w, t.progress.Watermark)
		}
		for i := 1; i <= ask.Cuts(); i++ {
			cut, ok, err := sp.TrySplit(t.lane, ask.KeepAt(i))
			if err != nil {
				d.log.Warn("source could not cut the split; it reads on uncut", "split", id, "epoch", t.epoch, "err", err)
				break
			}
			if !ok {
				break
			}
			t.pendingCut = &coordination.Cut{Primary: slices.Clone(cut.Primary), Residual: slices.Clone(cut.Residual), ResidualWeight: cut.ResidualWeight}
			p, err := d.encode(t, w)
			if err != nil {
				return landed, err
			}
			if err := d.commitCut(t, p); err != nil {
				return landed, err
			}
			if t.pendingCut != nil || !t.committable() {
				break // not confirmed: the next commit carries it; or the split is gone or handed back
			}
			landed++
		}
	}
	return landed, nil
}

// commitCut commits t's pending cut with p (never as completed) and triages
// the answer like commit: nil clears the cut, Fenced retires the tenancy,
// Retryable keeps the cut in flight and p deferred, a refusal hands the
// split back (refused). Only a Fatal or non-coordination error is returned.
func (d *Driver) commitCut(t *tenancy, p coordination.SplitProgress) error {
	p.Completed = false
	_, cu, _ := d.splitting()
	residual, err := cu.CommitCut(t.id(), p, *t.pendingCut)
	if errors.Is(err, coordination.ErrCutRefused) {
		return d.refused(t, p, err)
	}
	landed, err := d.triage(t, p, err, "cut not confirmed; the lane's next commit carries it again")
	if landed {
		d.log.Info("split cut at runtime; its residual is a new split", "split", t.id(), "epoch", t.epoch, "residual", residual)
		t.pendingCut = nil
	}
	return err
}

// refused settles a cut the coordinator refused for good (err matches
// coordination.ErrCutRefused; docs/protocol.md, "Runtime split", "Refused
// cuts"): nothing of it was written, but the lane stopped reading at the
// cut (Splitter.TrySplit's contract) and no source can undo a cut, so the
// split is handed back un-cut rather than read on: p is committed without
// the cut (never as completed: the rest of the range was not read), the
// split is released (no attempt charged) and its lane retired. Its next
// tenancy, usually this worker's again, reads the rest of the range from
// the last landed commit, as after a crash between TrySplit and the cut
// commit. The split is never cut again by this driver (its estimates are
// no longer reported, its requests ignored): the same cut would be refused
// again. The refusal is logged once, with the coordinator's reason. Only a
// Fatal or non-coordination error is returned.
func (d *Driver) refused(t *tenancy, p coordination.SplitProgress, refusal error) error {
	t.pendingCut = nil
	if d.uncuttable == nil {
		d.uncuttable = make(map[coordination.SplitID]bool)
	}
	d.uncuttable[t.id()] = true
	d.log.Warn("cut refused; the lane stopped at the cut, so the split is handed back un-cut and its next tenancy reads the rest of its range; it is not cut again",
		"split", t.id(), "epoch", t.epoch, "err", refusal)
	if _, err := d.triage(t, p, d.c.Commit(t.id(), p), "commit before the hand-back of a refused cut not confirmed; the split's next tenancy replays from its last landed commit"); err != nil || !t.committable() {
		return err
	}
	if err := d.c.Release(t.id()); err == nil {
		t.handedOff = true
	} else {
		d.log.Warn("hand-back after a refused cut did not confirm; the split is handed back again later or taken once this worker's session ends", "split", t.id(), "err", err)
	}
	d.retire(t)
	return nil
}
