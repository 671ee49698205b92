package protocol

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/spate-go/coordination"
)

// The two values that carry the leader's decision of docs/protocol.md
// "Runtime split" ("Who decides") without a write of their own: an owner's
// remaining-work estimates ride on its presence renewal, the leader's cut
// requests on the owner's assignment record.

// EstimatesMax is the most remaining-work estimates a presence value
// carries: the owner's largest, enough for the leader to find the largest
// in the fleet.
const EstimatesMax = 4

// CutPartsMax is the most residuals one cut request asks for
// (docs/protocol.md, "Runtime split": an assignment's "cuts"): the leader
// never asks for more, and decoding rejects an entry that does, so no
// record a peer writes makes an owner cut a split into more than this many
// residuals at once (each one a cut commit and two creates). A fleet with
// more lanes idle divides a straggler further at once anyway: a claimed
// residual can be cut before its owner's first report.
const CutPartsMax = 64

// Estimate is one entry of a presence value's "remaining": an owner's
// estimate of a held split's remaining work.
type Estimate struct {
	// Split is the held split.
	Split coordination.SplitID
	// Epoch is the owner's tenancy of it; at least 1.
	Epoch uint64
	// Remaining is the estimate in the split's weight units; at least 1.
	Remaining uint64
}

// CutRequest is one entry of an assignment record's "cuts": the leader asks
// the member to make cut Counter of its tenancy Epoch of Split.
type CutRequest struct {
	// Split is a split the assignment names.
	Split coordination.SplitID
	// Epoch is the tenancy the request is for; at least 1.
	Epoch uint64
	// Counter is the number the cut will have in that tenancy; at least 1.
	Counter uint64
	// KeepPPM is the share of the remaining work the primary keeps, in
	// millionths: KeepPPMHalf..999999 for one residual, EqualKeepPPM(Parts)
	// for more.
	KeepPPM uint32
	// Parts is how many residuals to cut off, one after the other, the
	// rest divided equally among them; at least 1.
	Parts uint32
}

// LargestEstimates returns at most EstimatesMax of es, those with the most
// remaining work, in the order a presence value carries them: Remaining
// descending, ties by split id; entries with Remaining 0 (nothing left, or
// unknown) are left out, and a split listed twice keeps its first entry.
// nil when none is left.
func LargestEstimates(es []Estimate) []Estimate {
	out := make([]Estimate, 0, len(es))
	seen := map[coordination.SplitID]bool{}
	for _, e := range es {
		if e.Remaining > 0 && !seen[e.Split] {
			seen[e.Split] = true
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, compareEstimates)
	if len(out) == 0 {
		return nil
	}
	return out[:min(len(out), EstimatesMax)]
}

func compareEstimates(a, b Estimate) int {
	return cmp.Or(cmp.Compare(b.Remaining, a.Remaining), cmp.Compare(a.Split, b.Split))
}

type estimateWire struct {
	Split     string `json:"split"`
	Epoch     uint64 `json:"epoch"`
	Remaining uint64 `json:"remaining"`
}

type cutRequestWire struct {
	Split   string `json:"split"`
	Epoch   uint64 `json:"epoch"`
	Counter uint64 `json:"counter"`
	KeepPPM uint32 `json:"keep_ppm"`
	Parts   uint32 `json:"parts"`
}

// estimates reads a presence value's "remaining": 1..EstimatesMax entries
// of valid split ids, epochs and estimates of at least 1, in the order
// LargestEstimates gives (so each split once).
func (f *fields) estimates(name string) []Estimate {
	var es []Estimate
	f.objects(name, func(o *fields) {
		e := Estimate{Split: coordination.SplitID(o.name("split")), Epoch: o.uint64("epoch"), Remaining: o.uint64("remaining")}
		switch {
		case o.err != nil:
		case e.Epoch == 0 || e.Remaining == 0:
			o.fail(shapeErr("epoch or remaining is 0"))
		case len(es) > 0 && compareEstimates(es[len(es)-1], e) >= 0:
			o.fail(shapeErr("entries are not in descending remaining work, ties by split"))
		case len(es) == EstimatesMax:
			o.fail(shapeErr("more than 4 entries"))
		}
		es = append(es, e)
	}, "split", "epoch", "remaining")
	if f.err != nil {
		return nil
	}
	for i := range es { // a split twice with one estimate is caught above; with two, here
		for j := range i {
			if es[i].Split == es[j].Split {
				f.fail(shapeErr("field " + name + " names a split twice"))
				return nil
			}
		}
	}
	return es
}

// cutRequests reads an assignment's "cuts": entries in strictly ascending
// split order, each a split of splits (sorted), with epoch and counter of
// at least 1, parts in 1..CutPartsMax and keep_ppm in KeepPPMHalf..999999 for one part,
// EqualKeepPPM(parts) for more.
func (f *fields) cutRequests(name string, splits []coordination.SplitID) []CutRequest {
	var cs []CutRequest
	f.objects(name, func(o *fields) {
		c := CutRequest{Split: coordination.SplitID(o.name("split")), Epoch: o.uint64("epoch"), Counter: o.uint64("counter"),
			KeepPPM: o.uint32("keep_ppm"), Parts: o.uint32("parts")}
		_, assigned := slices.BinarySearch(splits, c.Split)
		switch {
		case o.err != nil:
		case c.Epoch == 0 || c.Counter == 0:
			o.fail(shapeErr("epoch or counter is 0"))
		case c.Parts == 0:
			o.fail(shapeErr("parts is 0"))
		case c.Parts > CutPartsMax:
			o.fail(shapeErr(fmt.Sprintf("parts is %d, above the most a request asks for (%d)", c.Parts, CutPartsMax)))
		case c.Parts == 1 && (c.KeepPPM < KeepPPMHalf || c.KeepPPM > keepPPMMax):
			o.fail(shapeErr("keep_ppm is outside 500000..999999"))
		case c.Parts > 1 && c.KeepPPM != EqualKeepPPM(c.Parts):
			o.fail(shapeErr("keep_ppm of a cut into several parts is not the equal share"))
		case !assigned:
			o.fail(shapeErr("split is not in the assignment's splits"))
		case len(cs) > 0 && cs[len(cs)-1].Split >= c.Split:
			o.fail(shapeErr("entries are not in strictly ascending split order"))
		}
		cs = append(cs, c)
	}, "split", "epoch", "counter", "keep_ppm", "parts")
	if f.err != nil {
		return nil
	}
	return cs
}

// objects calls each for every element of the array field name, an object
// with exactly the fields names, and fails the record at the first element
// that is not one or that each fails. An empty array fails too: the field
// is omitted when empty.
func (f *fields) objects(name string, each func(o *fields), names ...string) {
	if f.err != nil {
		return
	}
	raw := f.raw(name)
	if len(raw) == 0 || raw[0] != '[' {
		f.fail(shapeErr("field " + name + " is not an array of objects"))
		return
	}
	i, n := skipSpace(raw, 1), 0
	for i < len(raw) && raw[i] != ']' {
		end, _ := scanValue(raw, i, 0) // the record's scan already validated raw
		o, pe := parseObject(raw[i:end], name, names...)
		if pe == nil {
			each(&o)
			if o.err != nil {
				pe = o.err
				pe.detail = "field " + name + ": " + pe.detail
			}
		}
		if pe != nil {
			f.fail(pe)
			return
		}
		n++
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if n == 0 {
		f.fail(shapeErr("field " + name + " is empty; it is omitted when empty"))
	}
}
