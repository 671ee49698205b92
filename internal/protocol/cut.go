package protocol

import (
	"bytes"
	"math"

	"github.com/spate-go/coordination"
)

// The cut of a running split, as its progress record carries it, and the
// records a cut's residual is made of (docs/protocol.md, "Runtime split"):
// pure transitions from the record a writer observed to the one it writes.

// Cut is a split's latest cut, the "cut" field of its progress record: a
// tenancy of the split cut off the rest of its range as a residual split.
// Decoding guarantees ID == ResidualID(split, Epoch, Counter), Epoch at most
// the record's epoch, and Epoch, Counter and Weight at least 1.
type Cut struct {
	// ID is the residual's split id.
	ID coordination.SplitID
	// Epoch is the epoch of the tenancy that made the cut.
	Epoch uint64
	// Counter numbers the cut within that tenancy, from 1.
	Counter uint64
	// Weight is the residual's weight, the source's estimate of its work in
	// the split's weight units; 0 is written as 1.
	Weight uint64
	// Descriptor is the residual's descriptor, read from its start by any
	// worker; nil is written as "".
	Descriptor []byte
}

// NextCut returns the cut the tenancy that fenced r (r.Epoch, at least 1)
// makes next, with the residual's descriptor and weight: counter 1, or one
// more than r's cut when this tenancy made it. The counter comes from the
// durable record, so the tenancy numbers its cuts the same way whatever
// it retried. ok is false only when this tenancy's counter is at the top of
// its range: it cuts no more. The descriptor is copied.
func (r ProgressRecord) NextCut(descriptor []byte, weight uint64) (c Cut, ok bool) {
	counter := uint64(1)
	if r.Cut != nil && r.Cut.Epoch == r.Epoch {
		if r.Cut.Counter == math.MaxUint64 {
			return Cut{}, false
		}
		counter = r.Cut.Counter + 1
	}
	return Cut{ID: ResidualID(r.ID, r.Epoch, counter), Epoch: r.Epoch, Counter: counter,
		Weight: max(weight, 1), Descriptor: nonNilCopy(descriptor)}, true
}

// CommitCut returns the record of a cut commit (step 2 of "The steps"): the
// commit of p, with primary as the split's descriptor and c as its latest
// cut. A cut commit is never completed: it panics when p.Completed is set,
// or when c is not a cut of this tenancy of this split (both are bugs). The
// descriptors are copied.
func (r ProgressRecord) CommitCut(p coordination.SplitProgress, primary []byte, c Cut, nowMs int64) ProgressRecord {
	if p.Completed {
		panic("protocol: a cut commit is never completed")
	}
	if c.Epoch != r.Epoch || c.Counter == 0 || c.ID != ResidualID(r.ID, c.Epoch, c.Counter) {
		panic("protocol: CommitCut of a cut that is not this tenancy's")
	}
	c.Descriptor = nonNilCopy(c.Descriptor)
	c.Weight = max(c.Weight, 1)
	r = r.Commit(p, nowMs)
	r.Descriptor = nonNilCopy(primary)
	r.Cut = &c
	return r
}

// DescriptorOr returns the descriptor a tenancy of the split reads: r's
// (the primary's, once the split was cut) or else spec, the spec record's.
func (r ProgressRecord) DescriptorOr(spec []byte) []byte {
	if r.Descriptor != nil {
		return r.Descriptor
	}
	return spec
}

// ResidualSpec returns the spec record of c's residual (step 3): the cut's
// id, weight and descriptor, under the job's fp and generation, the parent
// spec's, so that every writer of it writes the same record.
func (c Cut) ResidualSpec(fp, generation uint64) SpecRecord {
	return SpecRecord{ID: c.ID, FP: fp, Generation: generation, Weight: max(c.Weight, 1), Descriptor: nonNilCopy(c.Descriptor)}
}

// ResidualSplit returns the split record of c's residual, a cut of parent
// (step 3): never owned, runnable, the cut's weight, parent named.
func (c Cut) ResidualSplit(parent coordination.SplitID, fp uint64, nowMs int64) SplitRecord {
	r := SeedSplit(c.ID, fp, c.Weight, nil, nowMs)
	r.Parent = parent
	return r
}

// IsResidualSpec reports whether s, found by a lost create of c's spec, is
// the spec c's residual has: an earlier write of the same cut. Anything
// else is a collision or a write outside the library (Fatal).
func (c Cut) IsResidualSpec(s SpecRecord) bool {
	return s.ID == c.ID && s.Weight == max(c.Weight, 1) && bytes.Equal(s.Descriptor, c.Descriptor)
}

// IsResidualSplit reports whether r, found by a lost create of c's split
// record, is the residual of c cut from parent (whatever happened to it
// since: claimed, completed, cut again).
func (c Cut) IsResidualSplit(parent coordination.SplitID, r SplitRecord) bool {
	return r.ID == c.ID && r.Parent == parent
}

// sameCut reports whether two records' cut fields agree: a lost cut commit
// landed only if its cut is in the record read back, not merely its
// watermark.
func sameCut(a, b ProgressRecord) bool {
	if (a.Descriptor == nil) != (b.Descriptor == nil) || !bytes.Equal(a.Descriptor, b.Descriptor) {
		return false
	}
	if a.Cut == nil || b.Cut == nil {
		return a.Cut == b.Cut
	}
	return a.Cut.Equal(*b.Cut)
}

// Equal reports whether two recordings of a cut agree in every field: the
// same residual of the same tenancy's cut.
func (c Cut) Equal(d Cut) bool {
	return c.ID == d.ID && c.Epoch == d.Epoch && c.Counter == d.Counter && c.Weight == d.Weight &&
		bytes.Equal(c.Descriptor, d.Descriptor)
}

// cut reads the progress record's "cut" object of split id at epoch
// (docs/protocol.md, "Runtime split"), checking its id, epoch, counter
// and weight.
func (f *fields) cut(name string, id coordination.SplitID, epoch uint64) *Cut {
	if f.err != nil {
		return nil
	}
	o, pe := parseObject(f.raw(name), name, "id", "epoch", "counter", "weight", "descriptor")
	if pe != nil {
		f.fail(pe)
		return nil
	}
	c := &Cut{ID: coordination.SplitID(o.name("id")), Epoch: o.uint64("epoch"), Counter: o.uint64("counter"),
		Weight: o.uint64("weight"), Descriptor: o.bytes("descriptor")}
	switch {
	case o.err != nil:
	case c.Epoch == 0 || c.Epoch > epoch:
		o.fail(shapeErr("epoch is 0 or above the record's"))
	case c.Counter == 0:
		o.fail(shapeErr("counter is 0"))
	case c.Weight == 0:
		o.fail(shapeErr("weight is 0"))
	case c.ID != ResidualID(id, c.Epoch, c.Counter):
		o.fail(shapeErr("id is not the residual id of this split, epoch and counter"))
	}
	if pe := o.err; pe != nil {
		if pe.kind == errBase64 {
			pe.detail = name + "." + pe.detail
		} else {
			pe.detail = "field " + name + ": " + pe.detail
		}
		f.fail(pe)
		return nil
	}
	return c
}
