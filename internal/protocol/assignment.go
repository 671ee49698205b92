package protocol

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/spate-go/coordination"
)

// MaxMoves bounds the improving moves of one evaluation of [Assign] (SPEC
// §14.5). The next evaluation continues from the ownership the moves produce.
const MaxMoves = 4096

// AssignSplit is one split of the leader's view as the assignment function
// sees it.
type AssignSplit struct {
	// ID names the split.
	ID coordination.SplitID
	// Weight is the spec weight; 0 is treated as 1.
	Weight uint64
	// HasSpec reports whether the split's spec record is in the view; a
	// spec-less split is never assigned.
	HasSpec bool
	// Status is the progress record's status; only runnable splits are
	// assigned.
	Status Status
	// Owner is the live lease's owner if a lease is live, else the record's
	// owner; "" for none. It may name an instance that is not a member.
	Owner string
}

// AssignInput is everything the assignment function depends on (SPEC §14.1).
// It never includes the leader's identity, so a failover does not re-break
// ties. Assign does not modify it.
type AssignInput struct {
	// Members are the instance ids with a presence key, in any order;
	// duplicates are ignored.
	Members []string
	// Caps maps a member to its advertised budget; an absent entry or one
	// <= 0 means DefaultCap.
	Caps map[string]int
	// DefaultCap is the leader's own MaxInFlight; a member's budget is never
	// below 1.
	DefaultCap int
	// FP is fp = H(fingerprint), the seed of every tie-break hash.
	FP uint64
	// Splits is the view's splits in any order. Ids should be distinct; a
	// repeated id (a caller bug) is collapsed deterministically: among its
	// pool entries the greatest weight wins, then an entry without a member
	// owner, then the owner with the lowest id.
	Splits []AssignSplit
	// Reserved holds the splits withheld by the rebalance delay (SPEC §15.3);
	// they are never assigned. Nil means none.
	Reserved map[coordination.SplitID]bool
}

// AssignOutput is the desired assignment (SPEC §14.6).
type AssignOutput struct {
	// Assigned has an entry for every member, possibly empty (never nil),
	// each sorted bytewise. An empty member set yields an empty map.
	Assigned map[string][]coordination.SplitID
	// Moves counts the improving moves made by pass 3.
	Moves int
	// Bounded reports that the MaxMoves bound stopped pass 3 while another
	// improving move was still possible; invariants A3 and A4 hold only when
	// it is false.
	Bounded bool
}

// Assign computes the desired assignment of SPEC §14: a sticky pass, a fill
// pass in pool order, and an improve pass of at most [MaxMoves] moves. It is
// pure and deterministic, and its result does not depend on the order of
// in.Members or in.Splits.
//
// Cost (SPEC §31.1), for n pool splits, m members and k moves: O(n log n)
// for sorting the pool, O(n log m) for the fill pass, and O(log n) amortised
// per move; O(n + m) memory. How: the members with a spare lane sit in an
// indexed min-heap keyed by (load, memberHash, id), which yields both the fill
// target and the improve pass's receiver. Donors come from a max-heap keyed by
// (load desc, memberHash, id) with lazy deletion: because the receiver's load
// T never decreases, a member found inadmissible stays so until it receives a
// split, so it is dropped and pushed back only then. Each member's splits are
// kept in a treap ordered by (weight asc, splitHash desc, id asc), built on
// first use as a donor (a settled fleet builds none); the gain w·(D−w) with
// D = load(d)−T is concave in w, so the best split is the first of the weight
// class just above D/2 or the first of the class just below it, two O(log n)
// descents. The treap (array-backed, indices into the split table, priorities
// from a fixed mix of the index) was chosen over a sorted slice because a move
// must delete and insert in O(log n) even when one member holds 100k splits.
func Assign(in AssignInput) AssignOutput { return assign(in, MaxMoves) }

// assign is Assign with the move bound as a parameter, so tests can reach it.
func assign(in AssignInput, maxMoves int) AssignOutput {
	a := newAssigner(in)
	if len(a.mem) == 0 {
		return AssignOutput{Assigned: map[string][]coordination.SplitID{}}
	}
	a.sticky()
	a.fill()
	moves, bounded := a.improve(maxMoves)
	return AssignOutput{Assigned: a.output(), Moves: moves, Bounded: bounded}
}

// aMember is one member during an evaluation.
type aMember struct {
	id    string
	hash  uint64 // memberHash
	cap   int
	count int
	load  uint64
	pos   int32  // index in the receiver heap, -1 if absent
	ver   uint32 // version of the member's live donor-heap entry
	head  int32  // first split of the list form (before the tree is built), -1 if none
	root  int32  // treap root once built, -1 if empty
	wmin  uint64 // lightest weight held, list form only
	built bool   // the treap is authoritative
}

// aSplit is one pool split during an evaluation; it doubles as a treap node.
type aSplit struct {
	id    coordination.SplitID
	w     uint64
	hash  uint64 // splitHash, set when the holder's treap is built
	owner int32  // member index of owner(s), -1 if none or not a member
	at    int32  // member holding it, -1 while unassigned
	next  int32  // next split of the same member's list form
	left  int32
	right int32
	prio  uint32
}

type assigner struct {
	fp    uint64
	mem   []aMember // sorted by id
	sp    []aSplit  // the pool, sorted by id
	order []int32   // pool order: weight desc, id asc
	recv  []int32   // min-heap of members with a spare lane
	donor []donorEntry
	tmp   []int32 // scratch for building a treap: its sorted splits
	stack []int32 // scratch for building a treap: its right spine
}

func newAssigner(in AssignInput) *assigner {
	a := &assigner{fp: in.FP}
	ids := slices.Clone(in.Members)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return a
	}
	a.mem = make([]aMember, len(ids))
	index := make(map[string]int32, len(ids))
	for i, id := range ids {
		c := in.DefaultCap
		if v, ok := in.Caps[id]; ok && v > 0 {
			c = v
		}
		a.mem[i] = aMember{id: id, hash: hashString(in.FP, id), cap: max(1, c), pos: -1, head: -1, root: -1, wmin: math.MaxUint64}
		index[id] = int32(i)
	}

	a.sp = make([]aSplit, 0, len(in.Splits))
	for i := range in.Splits {
		s := &in.Splits[i]
		if s.Status != StatusRunnable || !s.HasSpec || (len(in.Reserved) > 0 && in.Reserved[s.ID]) {
			continue
		}
		owner := int32(-1)
		if s.Owner != "" {
			if o, ok := index[s.Owner]; ok {
				owner = o
			}
		}
		a.sp = append(a.sp, aSplit{id: s.ID, w: max(1, s.Weight), owner: owner, at: -1, next: -1, left: -1, right: -1})
	}
	byID := func(x, y aSplit) int {
		if c := strings.Compare(string(x.id), string(y.id)); c != 0 {
			return c
		}
		if x.w != y.w {
			if x.w > y.w {
				return -1
			}
			return 1
		}
		return int(x.owner) - int(y.owner)
	}
	if !slices.IsSortedFunc(a.sp, byID) {
		slices.SortFunc(a.sp, byID)
	}
	a.sp = slices.CompactFunc(a.sp, func(x, y aSplit) bool { return x.id == y.id })

	type ow struct {
		w uint64
		i int32
	}
	byWeight := func(x, y ow) int {
		if x.w != y.w {
			if x.w > y.w {
				return -1
			}
			return 1
		}
		return int(x.i) - int(y.i)
	}
	tmp := make([]ow, len(a.sp))
	for i := range a.sp {
		tmp[i] = ow{a.sp[i].w, int32(i)}
	}
	if !slices.IsSortedFunc(tmp, byWeight) {
		slices.SortFunc(tmp, byWeight)
	}
	a.order = make([]int32, len(tmp))
	for i, t := range tmp {
		a.order[i] = t.i
	}
	return a
}

// sticky is pass 1 (SPEC §14.3): in pool order, a split stays with its owner
// while the owner has a spare lane.
func (a *assigner) sticky() {
	for _, s := range a.order {
		if o := a.sp[s].owner; o >= 0 && a.mem[o].count < a.mem[o].cap {
			a.place(s, o)
		}
	}
}

// fill is pass 2 (SPEC §14.4): each unplaced split, in pool order, goes to the
// lightest-first member with a spare lane, until no member has one.
func (a *assigner) fill() {
	a.recv = make([]int32, 0, len(a.mem))
	for i := range a.mem {
		if a.mem[i].count < a.mem[i].cap {
			a.mem[i].pos = int32(len(a.recv))
			a.recv = append(a.recv, int32(i))
		}
	}
	for i := len(a.recv)/2 - 1; i >= 0; i-- {
		a.recvDown(i)
	}
	for _, s := range a.order {
		if len(a.recv) == 0 {
			return
		}
		if a.sp[s].at >= 0 {
			continue
		}
		r := a.recv[0]
		a.place(s, r)
		a.recvFix(r)
	}
}

// place gives unassigned split s to member m in list form, with saturating load.
func (a *assigner) place(s, m int32) {
	sp, mb := &a.sp[s], &a.mem[m]
	sp.at = m
	sp.next = mb.head
	mb.head = s
	mb.count++
	mb.load = addSat(mb.load, sp.w)
	mb.wmin = min(mb.wmin, sp.w)
}

// improve is pass 3 (SPEC §14.5). It returns the moves made and whether the
// bound stopped it while another move was admissible.
func (a *assigner) improve(maxMoves int) (int, bool) {
	a.donor = make([]donorEntry, 0, len(a.mem))
	for i := range a.mem {
		if a.mem[i].count > 0 {
			a.donor = append(a.donor, a.donorEntry(int32(i)))
		}
	}
	for i := len(a.donor)/2 - 1; i >= 0; i-- {
		a.donorDown(i)
	}
	moves := 0
	for len(a.recv) > 0 {
		r := a.recv[0]
		t := a.mem[r].load
		d := a.nextDonor(t)
		if d < 0 {
			return moves, false
		}
		if moves >= maxMoves {
			return moves, true
		}
		a.donorPop() // d is on top
		s := a.bestSplit(d, a.mem[d].load-t)
		a.move(s, d, r)
		moves++
	}
	return moves, false
}

// nextDonor returns the admissible donor with the greatest load, leaving it on
// top of the donor heap, or -1. Inadmissible members are dropped from the heap.
func (a *assigner) nextDonor(t uint64) int32 {
	for len(a.donor) > 0 {
		e := a.donor[0]
		m := &a.mem[e.m]
		if e.ver == m.ver && m.count > 0 && m.load > t && a.minWeight(e.m) < m.load-t {
			// load(d) > T + w, saturating: T + w < load(d) <= MaxUint64.
			return e.m
		}
		a.donorPop()
	}
	return -1
}

// minWeight is the lightest weight member m holds.
func (a *assigner) minWeight(m int32) uint64 {
	mb := &a.mem[m]
	if !mb.built {
		return mb.wmin
	}
	x := mb.root
	for a.sp[x].left >= 0 {
		x = a.sp[x].left
	}
	return a.sp[x].w
}

// bestSplit returns the admissible split of donor d maximizing
// gain = w·(dl − w) with dl = load(d) − T, ties to the higher splitHash, then
// the lower id. The gain is concave in w, so the candidates are the first of
// the weight class at or below dl/2 and the first of the class above it.
func (a *assigner) bestSplit(d int32, dl uint64) int32 {
	a.build(d)
	root := a.mem[d].root
	above, below := a.lowerBound(root, dl/2+1)
	best := int32(-1)
	var bh, bl uint64
	if above >= 0 && a.sp[above].w < dl {
		best = above
		bh, bl = gain(a.sp[above].w, dl)
	}
	if below >= 0 {
		c, _ := a.lowerBound(root, a.sp[below].w)
		ch, cl := gain(a.sp[c].w, dl)
		if best < 0 || ch > bh || (ch == bh && (cl > bl || (cl == bl && a.better(c, best)))) {
			best = c
		}
	}
	return best
}

// better reports whether split x beats split y on the gain tie-break.
func (a *assigner) better(x, y int32) bool {
	if a.sp[x].hash != a.sp[y].hash {
		return a.sp[x].hash > a.sp[y].hash
	}
	return a.sp[x].id < a.sp[y].id
}

// move gives split s from donor d to receiver r and updates both heaps.
func (a *assigner) move(s, d, r int32) {
	sp := &a.sp[s]
	dm, rm := &a.mem[d], &a.mem[r]
	dm.root = a.treapDelete(dm.root, s)
	dm.count--
	dm.load = subSat(dm.load, sp.w)
	sp.left, sp.right = -1, -1
	sp.at = r
	if rm.built {
		rm.root = a.treapInsert(rm.root, s)
	} else {
		sp.next = rm.head
		rm.head = s
		rm.wmin = min(rm.wmin, sp.w)
	}
	rm.count++
	rm.load = addSat(rm.load, sp.w)

	a.recvFix(r)
	if dm.pos >= 0 {
		a.recvFix(d)
	} else {
		a.recvPush(d) // it has just freed a lane
	}
	if dm.count > 0 {
		a.donorPush(d)
	}
	a.donorPush(r)
}

// output lists every member's splits, each sorted by id, in one backing array.
func (a *assigner) output() map[string][]coordination.SplitID {
	total := 0
	for i := range a.mem {
		total += a.mem[i].count
	}
	flat := make([]coordination.SplitID, total)
	next := make([]int, len(a.mem))
	off := 0
	for i := range a.mem {
		next[i] = off
		off += a.mem[i].count
	}
	out := make(map[string][]coordination.SplitID, len(a.mem))
	for i := range a.mem {
		out[a.mem[i].id] = flat[next[i] : next[i]+a.mem[i].count : next[i]+a.mem[i].count]
	}
	for i := range a.sp { // id order, so every list comes out sorted
		if m := a.sp[i].at; m >= 0 {
			flat[next[m]] = a.sp[i].id
			next[m]++
		}
	}
	return out
}

// gain is w·(dl − w) as a 128-bit (high, low) pair; w < dl.
func gain(w, dl uint64) (uint64, uint64) { return bits.Mul64(w, dl-w) }

// addSat is a + b, saturating at MaxUint64.
func addSat(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return math.MaxUint64
	}
	return s
}

// subSat is a − b, saturating at 0.
func subSat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// hashString is Hs(seed, s) (FNV-1a 64 over be64(seed) ‖ s) without
// allocating; it equals MemberHash and SplitHash.
func hashString(seed uint64, s string) uint64 {
	const (
		offset = 0xcbf29ce484222325
		prime  = 0x100000001b3
	)
	h := uint64(offset)
	for i := 7; i >= 0; i-- {
		h ^= (seed >> (8 * i)) & 0xff
		h *= prime
	}
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}
