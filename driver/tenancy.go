package driver

import (
	"cmp"
	"slices"

	"github.com/spate-go/coordination"
)

// phase is where a tenancy is in its life.
type phase int

const (
	live     phase = iota // reading (or staged to open)
	draining              // intake stopped for a revocation; still committed, never swept
	retired               // ownership over; kept only to absorb late watermarks
)

// tenancy is one continuous span of ownership of one split.
type tenancy struct {
	spec      coordination.SplitSpec
	epoch     coordination.LeaseEpoch
	partition PartitionID
	lane      LaneID // the open lane; meaningful only when opened
	opened    bool
	phase     phase

	progress *coordination.SplitProgress // last progress committed durably or deferred; nil if none
	deferred bool                        // progress was deferred by a Retryable commit and not superseded
	landed   *coordination.SplitProgress // last progress this tenancy committed durably; nil if none

	fenced    bool // a commit was fenced, or the tenancy was lost, failed or quarantined
	completed bool // a completed progress landed
	handedOff bool // drained and handed back through ReleaseDrained

	pendingCut *coordination.Cut // a cut TrySplit made whose CommitCut has not returned nil yet
}

// id returns the tenancy's split id.
func (t *tenancy) id() coordination.SplitID { return t.spec.ID }

// gain creates a live tenancy for a gained split with a fresh partition and
// stages it for opening.
func (d *Driver) gain(g coordination.Gained) *tenancy {
	d.lastPartition++
	t := &tenancy{
		spec:      cloneSpec(g.Split),
		epoch:     g.Epoch,
		partition: d.lastPartition,
		phase:     live,
		progress:  cloneProgressPtr(g.Progress),
	}
	d.held[t.id()] = t
	d.parts[t.partition] = t
	d.toOpen = append(d.toOpen, t)
	d.everHeld = true
	return t
}

// openStaged opens every staged tenancy that is still live, minting a fresh
// LaneID per attempt. Tenancies whose open fails stay staged; the first
// failure is returned after every staged tenancy was tried.
func (d *Driver) openStaged() error {
	var firstErr error
	keep := d.toOpen[:0]
	for _, t := range d.toOpen {
		if t.phase == retired || t.opened {
			continue
		}
		d.lastLane++
		o := Opening{
			Split:     cloneSpec(t.spec),
			Resume:    cloneProgressPtr(t.progress),
			Epoch:     t.epoch,
			Lane:      d.lastLane,
			Partition: t.partition,
			Waker:     d.waker,
		}
		if err := d.src.OpenSplit(o); err != nil {
			d.log.Warn("could not open split; will retry", "split", t.id(), "err", err)
			keep = append(keep, t)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		t.lane, t.opened = o.Lane, true
		d.added = append(d.added, Lane{ID: t.lane, Partition: t.partition, Split: cloneSpec(t.spec), Epoch: t.epoch})
	}
	clear(d.toOpen[len(keep):])
	d.toOpen = keep
	return firstErr
}

// retire ends t (idempotent): it stops taking commits and, if a lane was
// open, its lane is staged as retired (completed or handed off) or lost
// (anything else). CloseSplit is always called, even if no lane was opened.
func (d *Driver) retire(t *tenancy) {
	if t.phase == retired {
		return
	}
	t.phase = retired
	if d.held[t.id()] == t {
		delete(d.held, t.id())
	}
	if t.opened {
		if t.completed || t.handedOff {
			d.retired = append(d.retired, t.lane)
		} else {
			d.lost = append(d.lost, t.lane)
		}
	}
	d.src.CloseSplit(t.id())
}

// pruneRetired forgets retired tenancies; later watermarks for their
// partitions are unknown and ignored.
func (d *Driver) pruneRetired() {
	for p, t := range d.parts {
		if t.phase == retired {
			delete(d.parts, p)
		}
	}
}

// byPartition returns the non-retired tenancies in ascending partition order.
func (d *Driver) byPartition() []*tenancy {
	out := make([]*tenancy, 0, len(d.held))
	for _, t := range d.held {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *tenancy) int { return cmp.Compare(a.partition, b.partition) })
	return out
}

func cloneSpec(s coordination.SplitSpec) coordination.SplitSpec {
	s.Descriptor = slices.Clone(s.Descriptor)
	return s
}

func cloneProgressPtr(p *coordination.SplitProgress) *coordination.SplitProgress {
	if p == nil {
		return nil
	}
	cp := *p
	cp.State = slices.Clone(p.State)
	return &cp
}
