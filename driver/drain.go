package driver

import "github.com/spate-go/coordination"

// onRevokeRequested answers a revocation: a draining split needs
// nothing more; a live, opened split is offered to the source's BeginRevoke;
// a split the source refuses because its lane read its whole range (Sweep
// reports completed progress) commits that completion, which settles the
// revocation as drained (docs/protocol.md, "Revocation"): declining it would
// force the split away and its next owner would read it all again. Every
// other case (unheld, gained but not yet opened, refused by the source) is
// declined at once. Only a Fatal or non-coordination error is returned.
func (d *Driver) onRevokeRequested(id coordination.SplitID) error {
	t, ok := d.held[id]
	if ok && t.phase == draining && !t.fenced {
		return nil
	}
	if ok && t.phase == live && t.opened && t.committable() {
		if d.src.BeginRevoke(id) {
			t.phase = draining
			d.log.Debug("revocation accepted; draining", "split", id)
			return nil
		}
		p, err := d.src.Sweep(id)
		if err != nil {
			return err
		}
		if p != nil && p.Completed {
			d.log.Debug("revocation answered by the split's completion", "split", id)
			return d.commit(t, *cloneProgressPtr(p))
		}
	}
	d.log.Debug("revocation declined", "split", id)
	if err := d.c.DeclineRevoke(id); err != nil {
		d.log.Warn("could not decline revocation", "split", id, "err", err)
	}
	return nil
}

// advanceDrains asks the source for a drain cut of every draining tenancy,
// in ascending partition order, and commits it: a landed cut hands the split
// back through ReleaseDrained and retires it ([LanesRetired]); a fenced one
// retires it as lost; a Retryable one leaves it draining, to be asked again
// on the next poll.
func (d *Driver) advanceDrains() error {
	for _, t := range d.byPartition() {
		if t.phase != draining || t.fenced {
			continue
		}
		cut, err := d.src.DrainReady(t.id())
		if err != nil {
			return err
		}
		if cut == nil {
			continue
		}
		p := *cloneProgressPtr(cut)
		if p.Completed {
			d.log.Error("DrainReady returned completed progress; committing it as not completed", "split", t.id())
			p.Completed = false
		}
		if err := d.commit(t, p); err != nil {
			return err
		}
		if t.fenced || t.deferred {
			continue
		}
		t.handedOff = true
		if err := d.c.ReleaseDrained(t.id()); err != nil {
			d.log.Warn("drained split hand-back failed; its lease will expire", "split", t.id(), "err", err)
		}
		d.log.Debug("drain finished", "split", t.id())
		d.retire(t)
	}
	return nil
}
