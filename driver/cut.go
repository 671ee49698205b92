package driver

import (
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
// split replaces an earlier one.
func (d *Driver) onCutRequested(ev coordination.CutRequested) {
	if _, _, ok := d.splitting(); !ok {
		return
	}
	if d.asks == nil {
		d.asks = make(map[coordination.SplitID]coordination.CutRequested)
	}
	d.asks[ev.Split] = ev
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
		if t.phase == live && t.opened && t.committable() {
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
// remained. It returns the number of cuts that became durable. A refusal (!ok) or a source error changes nothing; a Retryable
// CommitCut keeps the cut in flight: every later commit of the lane carries
// it until it lands, and none completes the split before. [Run] calls it
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
		if !ok || t.epoch != ask.Epoch || t.phase != live || !t.opened || !t.committable() || t.pendingCut != nil {
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
			if t.pendingCut != nil || t.fenced {
				break // not confirmed: the next commit carries it; or the split is gone
			}
			landed++
		}
	}
	return landed, nil
}

// commitCut commits t's pending cut with p (never as completed) and triages
// the answer like commit: nil clears the cut, Fenced retires the tenancy,
// Retryable keeps the cut in flight and p deferred. Only a Fatal or
// non-coordination error is returned.
func (d *Driver) commitCut(t *tenancy, p coordination.SplitProgress) error {
	p.Completed = false
	_, cu, _ := d.splitting()
	residual, err := cu.CommitCut(t.id(), p, *t.pendingCut)
	landed, err := d.triage(t, p, err, "cut not confirmed; the lane's next commit carries it again")
	if landed {
		d.log.Info("split cut at runtime; its residual is a new split", "split", t.id(), "epoch", t.epoch, "residual", residual)
		t.pendingCut = nil
	}
	return err
}
