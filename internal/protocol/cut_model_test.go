package protocol

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// A model of "Runtime split" (docs/protocol.md) over this package's real
// transitions: one planned split of records [0, n), tenancies that read,
// cut, commit and create residuals, claimants that fence and roll forward,
// and faults at every step (a write that does not land, a reply that is
// lost, a crash, a takeover that leaves the old owner running as a fenced
// zombie). After every step the durable records must partition [0, n)
// among the splits and the cuts not yet materialised (no record lost), the
// tenancies of record must hold disjoint ranges, and a residual must only
// ever have been created from a durable cut; at the end, run without
// faults, every split completes and the records were all delivered.

// mRange is a range of records [lo, hi); descriptors spell it "lo-hi".
type mRange struct{ lo, hi int64 }

func (r mRange) bytes() []byte { return []byte(fmt.Sprintf("%d-%d", r.lo, r.hi)) }

func parseMRange(b []byte) mRange {
	a, c, _ := strings.Cut(string(b), "-")
	lo, _ := strconv.ParseInt(a, 10, 64)
	hi, _ := strconv.ParseInt(c, 10, 64)
	return mRange{lo, hi}
}

type mSplit struct {
	rec       SplitRecord
	completed bool
}

type mTenancy struct {
	split     coordination.SplitID
	epoch     uint64
	cell      ProgressRecord // what this tenancy last wrote (or fenced)
	cellRev   int
	rng       mRange // the lane's range in memory; hi narrows at a cut
	pos       int64  // next record to read; the watermark to commit
	pending   *Cut   // a cut made in memory whose residual is not confirmed
	landed    bool   // pending's cut commit is known to have landed
	zombie    bool   // fenced without knowing it: reads and tries to commit
	done      bool   // crashed, completed or dropped
	committed int64  // the last landed watermark
}

type cutModel struct {
	t         *rapid.T
	n         int64
	progress  map[coordination.SplitID]ProgressRecord
	rev       map[coordination.SplitID]int
	specs     map[coordination.SplitID]SpecRecord
	splits    map[coordination.SplitID]*mSplit
	durable   map[coordination.SplitID]bool // residual ids a durable progress record has named
	tens      []*mTenancy
	delivered map[int64]bool
}

func newCutModel(t *rapid.T, n int64) *cutModel {
	m := &cutModel{t: t, n: n, progress: map[coordination.SplitID]ProgressRecord{}, rev: map[coordination.SplitID]int{},
		specs: map[coordination.SplitID]SpecRecord{}, splits: map[coordination.SplitID]*mSplit{},
		durable: map[coordination.SplitID]bool{}, delivered: map[int64]bool{}}
	m.specs["s"] = SpecRecord{ID: "s", FP: testFP, Weight: uint64(n), Descriptor: mRange{0, n}.bytes()}
	m.splits["s"] = &mSplit{rec: SeedSplit("s", testFP, uint64(n), nil, 0)}
	return m
}

// writeProgress stores r as split id's progress record: a new revision.
func (m *cutModel) writeProgress(id coordination.SplitID, r ProgressRecord) int {
	// Every write goes through the codec, as in a store.
	back, err := DecodeProgress(ProgressKey(id), EncodeProgress(r), testFP)
	if err != nil {
		m.t.Fatalf("a written progress record does not decode: %v", err)
	}
	m.progress[id] = back
	m.rev[id]++
	if back.Cut != nil {
		m.durable[back.Cut.ID] = true
	}
	return m.rev[id]
}

// claim takes split id over: a new tenancy at the next epoch fences the
// progress record and rolls forward its cut; a current holder becomes a
// zombie (its session ended as the claimant saw it, but it runs on).
func (m *cutModel) claim(id coordination.SplitID) {
	s := m.splits[id]
	if s == nil || s.completed {
		return
	}
	for _, t := range m.tens {
		if t.split == id && !t.done {
			t.zombie = true
		}
	}
	epoch := s.rec.Epoch + 1
	if p, ok := m.progress[id]; ok && p.Epoch >= epoch {
		epoch = p.Epoch + 1
	}
	s.rec = s.rec.Claim("w", "n", epoch, false, 0)
	p, ok := m.progress[id]
	var fenced ProgressRecord
	if !ok {
		fenced = FreshProgress(id, testFP, "w", epoch, 0)
	} else {
		fenced = p.Fence("w", epoch, 0)
	}
	rev := m.writeProgress(id, fenced)
	m.rollForward(id, fenced)
	if fenced.Completed {
		s.completed = true
		return
	}
	rng := parseMRange(fenced.DescriptorOr(m.specs[id].Descriptor))
	pos := rng.lo
	if fenced.Watermark != nil {
		pos = *fenced.Watermark
	}
	m.tens = append(m.tens, &mTenancy{split: id, epoch: epoch, cell: fenced, cellRev: rev, rng: rng, pos: pos, committed: pos})
}

// rollForward creates the residual of the cut rec carries, if any.
func (m *cutModel) rollForward(id coordination.SplitID, rec ProgressRecord) {
	if rec.Cut != nil {
		m.createResidual(id, *rec.Cut, true)
	}
}

// createResidual runs step 3 for cut c of parent: the spec, then the split
// record, each create-if-absent; land is false for a write that fails.
func (m *cutModel) createResidual(parent coordination.SplitID, c Cut, land bool) bool {
	if !m.durable[c.ID] {
		m.t.Fatalf("residual %s created from a cut no durable record holds", c.ID)
	}
	if !land {
		return false
	}
	if s, ok := m.specs[c.ID]; ok {
		if !c.IsResidualSpec(s) {
			m.t.Fatalf("a lost create of %s found another spec", c.ID)
		}
	} else {
		m.specs[c.ID] = c.ResidualSpec(testFP, 0)
	}
	if s, ok := m.splits[c.ID]; ok {
		if !c.IsResidualSplit(parent, s.rec) {
			m.t.Fatalf("a lost create of %s found another split record", c.ID)
		}
		return true
	}
	rec := c.ResidualSplit(parent, testFP, 0)
	if back, err := DecodeSplit(SplitKey(c.ID), EncodeSplit(rec), testFP); err != nil || back.Parent != parent {
		m.t.Fatalf("a residual's split record does not decode: %v", err)
	}
	m.splits[c.ID] = &mSplit{rec: rec}
	return true
}

// read delivers the lane's next record.
func (m *cutModel) read(t *mTenancy) {
	if t.pos < t.rng.hi {
		m.delivered[t.pos] = true
		t.pos++
	}
}

// trySplit cuts the lane in memory at half of what remains (step 1).
func (m *cutModel) trySplit(t *mTenancy) {
	if t.pending != nil || t.rng.hi-t.pos < 2 { // a zombie cuts too: it does not know it is fenced
		return
	}
	cut := t.pos + (t.rng.hi-t.pos)/2
	c, ok := t.cell.NextCut(mRange{cut, t.rng.hi}.bytes(), uint64(t.rng.hi-cut))
	if !ok {
		return
	}
	t.pending, t.landed = &c, false
	t.rng.hi = cut
}

// fault says what happens to one write: it lands and its reply arrives,
// it lands and its reply is lost, or it does not land.
type fault int

const (
	faultNone fault = iota
	faultLostReply
	faultNotLanded
)

// commit writes the lane's progress (step 2 when a cut is pending).
func (m *cutModel) commit(t *mTenancy, f fault) {
	if t.pending != nil && t.landed {
		return // the residual first
	}
	p := coordination.SplitProgress{Watermark: t.pos, Completed: t.pos == t.rng.hi && t.pending == nil}
	var intended ProgressRecord
	if t.pending != nil {
		p.Completed = false
		intended = t.cell.CommitCut(p, mRange{t.rng.lo, t.rng.hi}.bytes(), *t.pending, 0)
	} else {
		intended = t.cell.Commit(p, 0)
	}
	landed := false
	if m.rev[t.split] == t.cellRev && f != faultNotLanded {
		if t.zombie {
			m.t.Fatalf("a fenced tenancy's commit landed")
		}
		m.writeProgress(t.split, intended)
		landed = f == faultNone
	}
	if !landed { // a lost CAS, an error or a lost reply: read back
		cur := m.progress[t.split]
		switch {
		case cur.SameProgress(intended):
			landed = true
		case cur.Epoch != t.epoch:
			t.done = true // fenced: Lost
			return
		default:
			return // not landed; the split stays held and commits again
		}
	}
	t.cell, t.cellRev, t.committed = intended, m.rev[t.split], t.pos
	if t.pending != nil {
		t.landed = true
	}
	if intended.Completed {
		for id := range m.durable {
			if n, ok := ParseResidualID(id); ok && IsResidualOf(id, t.split) && m.splits[id] == nil {
				m.t.Fatalf("%s completed before its residual %s (cut %d of epoch %d) exists", t.split, id, n.Counter, n.Epoch)
			}
		}
		m.splits[t.split].completed = true
		t.done = true
	}
}

// residual runs step 3 for the lane's landed cut.
func (m *cutModel) residual(t *mTenancy, f fault) {
	if t.pending == nil || !t.landed {
		return
	}
	if m.createResidual(t.split, *t.pending, f != faultNotLanded) && f == faultNone {
		t.pending, t.landed = nil, false
	}
}

// check holds the invariants that must hold after every step.
func (m *cutModel) check() {
	// No record lost: the splits' durable ranges (from their watermark on)
	// and the durable cuts not yet materialised partition what is left.
	var parts []mRange
	for id := range m.splits {
		rng := parseMRange(m.specs[id].Descriptor)
		if p, ok := m.progress[id]; ok {
			rng = parseMRange(p.DescriptorOr(m.specs[id].Descriptor))
			if p.Cut != nil && m.splits[p.Cut.ID] == nil {
				parts = append(parts, parseMRange(p.Cut.Descriptor))
			}
		}
		parts = append(parts, rng)
	}
	slices.SortFunc(parts, func(a, b mRange) int { return int(a.lo - b.lo) })
	at := int64(0)
	for _, r := range parts {
		if r.lo != at || r.hi < r.lo {
			m.t.Fatalf("durable ranges %v do not partition [0, %d)", parts, m.n)
		}
		at = r.hi
	}
	if at != m.n {
		m.t.Fatalf("durable ranges %v do not partition [0, %d)", parts, m.n)
	}
	// No record range held by two tenancies of record.
	var held []mRange
	for _, t := range m.tens {
		if !t.done && !t.zombie && m.progress[t.split].Epoch == t.epoch && t.pos < t.rng.hi {
			held = append(held, mRange{t.pos, t.rng.hi})
		}
	}
	slices.SortFunc(held, func(a, b mRange) int { return int(a.lo - b.lo) })
	for i := 1; i < len(held); i++ {
		if held[i].lo < held[i-1].hi {
			m.t.Fatalf("two tenancies of record hold overlapping ranges %v", held)
		}
	}
}

func (m *cutModel) live() []*mTenancy {
	var ts []*mTenancy
	for _, t := range m.tens {
		if !t.done {
			ts = append(ts, t)
		}
	}
	return ts
}

// finish runs the job to its end without faults: the tenancies of record
// make their cuts durable, read and complete; every split without one is
// claimed.
func (m *cutModel) finish() {
	for range 10_000 {
		open := false
		for _, id := range slices.Sorted(maps.Keys(m.splits)) {
			s := m.splits[id]
			if s.completed {
				continue
			}
			open = true
			var t *mTenancy
			for _, c := range m.live() {
				if c.split == id && !c.zombie {
					t = c
				}
			}
			if t == nil {
				m.claim(id)
				continue
			}
			m.residual(t, faultNone)
			m.read(t)
			m.commit(t, faultNone)
			m.check()
		}
		if !open {
			return
		}
	}
	m.t.Fatalf("the job did not finish")
}

// TestCutModel: the protocol of "Runtime split" loses no record, never
// lets two tenancies of record hold one record, creates residuals only
// from durable cuts and completes, whatever faults strike each step.
func TestCutModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newCutModel(t, rapid.Int64Range(2, 64).Draw(t, "records"))
		faults := rapid.SampledFrom([]fault{faultNone, faultNone, faultLostReply, faultNotLanded})
		// Claims and crashes are rarer than the lane's own steps, so that
		// tenancies live long enough to cut, commit and create.
		ops := rapid.SampledFrom([]int{0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 6})
		for range rapid.IntRange(0, 150).Draw(t, "steps") {
			live := m.live()
			ids := slices.Sorted(maps.Keys(m.splits))
			switch op := ops.Draw(t, "op"); {
			case op == 0 || len(live) == 0:
				m.claim(rapid.SampledFrom(ids).Draw(t, "claim"))
			default:
				tn := rapid.SampledFrom(live).Draw(t, "tenancy")
				switch op {
				case 1:
					m.read(tn)
				case 2:
					m.trySplit(tn)
				case 3:
					m.commit(tn, faults.Draw(t, "commit fault"))
				case 4:
					m.residual(tn, faults.Draw(t, "create fault"))
				case 5:
					tn.done = true // crash: the lane's memory is gone
				case 6:
					m.read(tn)
					m.read(tn)
				}
			}
			m.check()
		}
		m.finish()
		for r := range m.n {
			if !m.delivered[r] {
				t.Fatalf("record %d was never delivered", r)
			}
		}
	})
}
