package driver

import (
	"github.com/spate-go/coordination"
)

// Commit commits the acknowledged watermarks ws, each for one partition
// (a partition passed twice counts once, at its highest value). In order, it
// skips unknown, retired, fenced and completed tenancies; for the rest,
// draining ones included, it asks the source to encode the progress
// (EncodeCommit) and commits it.
//
// The coordinator's answer is triaged: nil caches the progress and retires a
// completed split ([LanesRetired]); Fenced retires the split ([LanesRevoked])
// and is not returned; Retryable caches the progress as deferred and is not
// returned (the split's next commit supersedes it; the driver never re-sends
// it on its own, but Shutdown includes it if nothing superseded it). A Fatal
// or non-coordination error, and any EncodeCommit error, is returned at once
// and the rest of ws is skipped. Before Start it returns Fatal "driver used
// before Start"; after Shutdown, Fatal "driver is shut down".
func (d *Driver) Commit(ws []Watermark) error {
	if err := d.usable(); err != nil {
		return err
	}
	for _, w := range mergeWatermarks(ws) {
		t, ok := d.parts[w.Partition]
		if !ok || !t.committable() {
			continue
		}
		p, err := d.encode(t, w.Value)
		if err != nil {
			return err
		}
		if err := d.commit(t, p); err != nil {
			return err
		}
	}
	return nil
}

// committable reports whether the tenancy still takes commits: not retired,
// not fenced, not completed.
func (t *tenancy) committable() bool {
	return t.phase != retired && !t.fenced && !t.completed
}

// mergeWatermarks keeps one watermark per partition, at its highest value,
// in the order of each partition's first appearance.
func mergeWatermarks(ws []Watermark) []Watermark {
	out := make([]Watermark, 0, len(ws))
	at := make(map[PartitionID]int, len(ws))
	for _, w := range ws {
		if i, ok := at[w.Partition]; ok {
			out[i].Value = max(out[i].Value, w.Value)
			continue
		}
		at[w.Partition] = len(out)
		out = append(out, w)
	}
	return out
}

// encode asks the source for t's progress at watermark, stripping Completed
// for a draining tenancy.
func (d *Driver) encode(t *tenancy, watermark int64) (coordination.SplitProgress, error) {
	p, err := d.src.EncodeCommit(t.id(), watermark)
	if err != nil {
		return coordination.SplitProgress{}, err
	}
	if t.phase == draining && p.Completed {
		d.log.Error("completed progress for a draining split; committing it as not completed", "split", t.id())
		p.Completed = false
	}
	return p, nil
}

// commit writes p for t and triages the answer: only a Fatal or
// non-coordination error is returned. A tenancy with a cut not yet
// committed commits it first (commitCut): until it lands, no commit of the
// tenancy goes without it, and none completes the split.
func (d *Driver) commit(t *tenancy, p coordination.SplitProgress) error {
	if t.pendingCut != nil {
		if err := d.commitCut(t, p); err != nil || t.pendingCut != nil || !p.Completed || !t.committable() {
			return err
		}
	}
	_, err := d.triage(t, p, d.c.Commit(t.id(), p), "commit not confirmed; the next commit supersedes it")
	return err
}

// triage applies the answer err to a commit of p for t: nil records it
// landed, Fenced retires t, Retryable (logged as retryable) keeps p
// deferred. It reports whether p landed; only a Fatal or non-coordination
// error is returned.
func (d *Driver) triage(t *tenancy, p coordination.SplitProgress, err error, retryable string) (bool, error) {
	switch coordination.KindOf(err) {
	case 0:
		if err != nil {
			return false, err
		}
		d.landed(t, p)
		return true, nil
	case coordination.Fenced:
		d.fence(t, err)
	case coordination.Retryable:
		d.log.Warn(retryable, "split", t.id(), "err", err)
		t.progress = cloneProgressPtr(&p)
		t.deferred = true
	default:
		return false, err
	}
	return false, nil
}

// landed records a durable commit of p for t and retires t when p completed
// the split.
func (d *Driver) landed(t *tenancy, p coordination.SplitProgress) {
	t.progress = cloneProgressPtr(&p)
	t.landed = cloneProgressPtr(&p)
	t.deferred = false
	if p.Completed {
		t.completed = true
		d.retire(t)
	}
}

// fence records a fenced commit: another worker owns the split.
func (d *Driver) fence(t *tenancy, err error) {
	d.log.Warn("commit fenced; another worker owns the split", "split", t.id(), "err", err)
	t.fenced = true
	d.retire(t)
}

// sweep commits terminal progress the source reports for live tenancies
// that got no new watermark, in ascending partition order.
func (d *Driver) sweep() error {
	for _, t := range d.byPartition() {
		if t.phase != live || !t.committable() {
			continue
		}
		p, err := d.src.Sweep(t.id())
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		if err := d.commit(t, *cloneProgressPtr(p)); err != nil {
			return err
		}
	}
	return nil
}
