package protocol

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/spate-go/coordination"
)

// MaxMoves bounds the improving moves of one evaluation of [Assign]. The next
// evaluation continues from the ownership the moves produce.
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
	// Status is the split record's status; only runnable splits are
	// assigned.
	Status Status
	// Owner is the split record's owner (or, while it has none, the member
	// the published assignment names); "" for none. It may name an instance
	// that is not a member.
	Owner string
}

// AssignInput is everything the assignment function depends on (docs/protocol.md, "Assignment and the rebalance delay").
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
	// Reserved holds the splits withheld by the rebalance delay (docs/protocol.md, "Assignment and the rebalance delay");
	// they are never assigned. Nil means none.
	Reserved map[coordination.SplitID]bool
}

// AssignOutput is the desired assignment (docs/protocol.md, "Assignment and the rebalance delay").
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

// Assign computes the desired assignment of docs/protocol.md "Assignment and the rebalance delay": a sticky pass, a fill
// pass in pool order, and an improve pass of at most [MaxMoves] moves. It is
// pure and deterministic, and its result does not depend on the order of
// in.Members or in.Splits.
//
// Cost, for n pool splits, m members and k moves: O(n log n)
// at most for ordering the pool (O(n) when the input is id-sorted, as a
// listing is, with weights below 256), O(n log m) for the fill pass and
// O(log n) amortised per move, plus O(n) for all first-time donor scans
// together; O(n + m) memory (24 bytes per pool split, 16 more per split once
// any treap is built, 16 for the output).
//
// How: the members with a spare lane sit in an indexed min-heap keyed by
// (load, memberHash, id), which yields both the fill target and the improve
// pass's receiver. Donors come from a max-heap keyed by (load desc,
// memberHash, id) with lazy deletion: because the receiver's load T never
// decreases, a member found inadmissible stays so until it receives a split,
// so it is dropped and pushed back only then. A member's splits start as a
// list; its first time as a donor is a linear scan (a joiner takes one split
// from each of many members), and from its second time on they live in a
// treap ordered by (weight asc, splitHash desc, id asc). The gain w·(D−w),
// D = load(d)−T, is concave in w, so the best split is the first of the
// weight class just above D/2 or the first of the class just below it: two
// O(log n) descents. The treap (array-backed, indices into the split table,
// priorities from a fixed mix of the index) was chosen over a sorted slice
// because a move must delete and insert in O(log n) even when one member
// holds 100k splits; over a skiplist or B-tree because it needs no
// allocation per node and little code.
func Assign(in AssignInput) AssignOutput { return assign(in, MaxMoves) }

// assign is Assign with the move bound as a parameter, so tests can reach it.
func assign(in AssignInput, maxMoves int) AssignOutput {
	a := newAssigner(in)
	if len(a.mem) == 0 {
		return AssignOutput{Assigned: map[string][]coordination.SplitID{}}
	}
	if !a.stuck {
		a.sticky()
	}
	a.fill()
	moves, bounded := a.improve(maxMoves)
	return AssignOutput{Assigned: a.output(), Moves: moves, Bounded: bounded}
}

// aMember is one member during an evaluation.
type aMember struct {
	id      string
	hash    uint64 // memberHash
	cap     int
	count   int
	load    uint64
	pos     int32  // index in the receiver heap, -1 if absent
	ver     uint32 // version of the member's live donor-heap entry
	head    int32  // first split of the list form (before the tree is built), -1 if none
	root    int32  // treap root once built, -1 if empty
	wmin    uint64 // lightest weight held, list form only
	scanned bool   // was a donor once in list form; the next time builds the treap
	built   bool   // the treap is authoritative
}

// aSplit is one pool split during an evaluation: 24 bytes and no pointers
// (the id is read from the input through src), so the table is cheap to
// allocate and costs the garbage collector nothing to scan.
type aSplit struct {
	w     uint64
	src   int32 // index in AssignInput.Splits
	owner int32 // member index of owner(s), -1 if none or not a member
	at    int32 // member holding it, -1 while unassigned
	next  int32 // next split of the same member's list form
}

type assigner struct {
	h0    uint64 // seedState(fp)
	in    []AssignSplit
	mem   []aMember   // sorted by id
	sp    []aSplit    // the pool, sorted by id
	node  []aNode     // treap nodes, indexed like sp; nil until the first treap
	order []int32     // pool order: weight desc, id asc
	recv  []recvEntry // min-heap of members with a spare lane
	donor []donorEntry
	stuck bool    // pass 1 already ran inside newAssigner
	scan  scanned // what scanBest learned about the list it scanned
	tmp   []int32 // scratch for building a treap: its sorted splits
	stack []int32 // scratch for building a treap: its right spine
}

// id is the id of pool split x.
func (a *assigner) id(x int32) coordination.SplitID { return a.in[a.sp[x].src].ID }

func newAssigner(in AssignInput) *assigner {
	a := &assigner{h0: seedState(in.FP), in: in.Splits}
	ids := slices.Clone(in.Members)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return a
	}
	a.mem = make([]aMember, len(ids))
	for i, id := range ids {
		c := in.DefaultCap
		if v, ok := in.Caps[id]; ok && v > 0 {
			c = v
		}
		a.mem[i] = aMember{id: id, hash: hashFrom(a.h0, id), cap: max(1, c), pos: -1, head: -1, root: -1, wmin: math.MaxUint64}
	}
	index := newMemberIndex(a.mem)

	// The pool, in input order; a strictly ascending input (the common case:
	// a listing) is already in id order and has no repeated id. While the
	// input is strictly ascending with equal weights, pool order is input
	// order, so pass 1 runs in this same loop; the first split that breaks
	// either condition undoes it (unstick) and pass 1 runs later.
	a.sp = make([]aSplit, len(in.Splits))
	a.stuck = true
	k := 0
	sorted := true
	var prev coordination.SplitID
	and, or := ^uint64(0), uint64(0) // over the weights, for poolOrder
	for i := range in.Splits {
		s := &in.Splits[i]
		if s.Status != StatusRunnable || !s.HasSpec || (len(in.Reserved) > 0 && in.Reserved[s.ID]) {
			continue
		}
		if k > 0 && s.ID <= prev {
			sorted = false
		}
		prev = s.ID
		owner := int32(-1)
		if s.Owner != "" {
			owner = index.lookup(s.Owner)
		}
		w := max(1, s.Weight)
		and &= w
		or |= w
		a.sp[k] = aSplit{w: w, src: int32(i), owner: owner, at: -1, next: -1}
		if a.stuck && (!sorted || w != a.sp[0].w) {
			a.unstick(k)
		}
		if a.stuck && owner >= 0 && a.mem[owner].count < a.mem[owner].cap {
			a.place(int32(k), owner)
		}
		k++
	}
	a.sp = a.sp[:k]
	if !sorted {
		// Id order; a repeated id keeps the greatest weight, then the lowest
		// owner index (-1, no member owner, first).
		slices.SortFunc(a.sp, func(x, y aSplit) int {
			if c := strings.Compare(string(in.Splits[x.src].ID), string(in.Splits[y.src].ID)); c != 0 {
				return c
			}
			if x.w != y.w {
				if x.w > y.w {
					return -1
				}
				return 1
			}
			return int(x.owner) - int(y.owner)
		})
		a.sp = slices.CompactFunc(a.sp, func(x, y aSplit) bool { return in.Splits[x.src].ID == in.Splits[y.src].ID })
	}
	a.order = poolOrder(a.sp, and^or)
	return a
}

// poolOrder returns the indices of sp (sorted by id) in pool order, weight
// descending then id ascending, or nil when that is sp's own order (all
// weights equal; diff is the OR of the weights XOR their AND). It is a stable
// LSD radix sort on the complemented weight, with one O(n) pass per byte in
// which the weights differ (one for weights below 256).
func poolOrder(sp []aSplit, diff uint64) []int32 {
	if diff == 0 {
		return nil
	}
	order := make([]int32, len(sp))
	type kv struct {
		k uint64 // ^weight, so ascending k is descending weight
		i int32
	}
	cur := make([]kv, len(sp))
	for i := range sp {
		cur[i] = kv{^sp[i].w, int32(i)}
	}
	next := make([]kv, len(sp))
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		clear(count[:])
		for _, e := range cur {
			count[(e.k>>shift)&0xff]++
		}
		sum := 0
		for b, c := range count {
			count[b] = sum
			sum += c
		}
		for _, e := range cur {
			b := (e.k >> shift) & 0xff
			next[count[b]] = e
			count[b]++
		}
		cur, next = next, cur
	}
	for i, e := range cur {
		order[i] = e.i
	}
	return order
}

// unstick undoes the speculative pass 1 over sp[:k].
func (a *assigner) unstick(k int) {
	a.stuck = false
	for i := range a.sp[:k] {
		a.sp[i].at, a.sp[i].next = -1, -1
	}
	for i := range a.mem {
		mb := &a.mem[i]
		mb.count, mb.load, mb.head, mb.wmin = 0, 0, -1, math.MaxUint64
	}
}

// nth is the n-th split in pool order.
func (a *assigner) nth(n int) int32 {
	if a.order == nil {
		return int32(n)
	}
	return a.order[n]
}

// sticky is pass 1 (docs/protocol.md, "Assignment and the rebalance delay"): in pool order, a split stays with its owner
// while the owner has a spare lane.
func (a *assigner) sticky() {
	for i := range a.sp {
		s := a.nth(i)
		if o := a.sp[s].owner; o >= 0 && a.mem[o].count < a.mem[o].cap {
			a.place(s, o)
		}
	}
}

// fill is pass 2 (docs/protocol.md, "Assignment and the rebalance delay"): each unplaced split, in pool order, goes to the
// lightest-first member with a spare lane, until no member has one.
func (a *assigner) fill() {
	a.recv = make([]recvEntry, 0, len(a.mem))
	for i := range a.mem {
		if mb := &a.mem[i]; mb.count < mb.cap {
			mb.pos = int32(len(a.recv))
			a.recv = append(a.recv, recvEntry{load: mb.load, hash: mb.hash, m: int32(i)})
		}
	}
	for i := len(a.recv)/2 - 1; i >= 0; i-- {
		a.recvDown(i)
	}
	for i := range a.sp {
		if len(a.recv) == 0 {
			return
		}
		s := a.nth(i)
		if a.sp[s].at >= 0 {
			continue
		}
		r := a.recv[0].m
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

// improve is pass 3 (docs/protocol.md, "Assignment and the rebalance delay"). It returns the moves made and whether the
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
		r := a.recv[0].m
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
	for a.node[x].left >= 0 {
		x = a.node[x].left
	}
	return a.sp[x].w
}

// bestSplit returns the admissible split of donor d maximizing
// gain = w·(dl − w) with dl = load(d) − T, ties to the higher splitHash, then
// the lower id. A member's first time as a donor is a linear scan of its list
// (a joiner usually takes one split from each of many members, and building a
// treap for each would cost O(c log c) instead of O(c)); from its second time
// on, its treap answers in O(log c): the gain is concave in w, so the
// candidates are the first of the weight class at or below dl/2 and the first
// of the class above it.
func (a *assigner) bestSplit(d int32, dl uint64) int32 {
	mb := &a.mem[d]
	if !mb.built && !mb.scanned {
		mb.scanned = true
		return a.scanBest(d, dl)
	}
	a.build(d)
	root := mb.root
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

// scanned is what scanBest learned about the list it scanned, so the move
// can unlink the chosen split in O(1).
type scanned struct {
	prev int32  // the chosen split's predecessor in the list, -1 if first
	wmin uint64 // lightest weight in the list without the chosen split
}

// scanBest is bestSplit by a linear scan of d's list form. It collects the
// splits of greatest gain, then breaks their tie by hash, four hashes at a
// time (FNV-1a is latency-bound, so interleaving four quadruples its
// throughput; a joiner's first moves tie every split of the donor). It
// records a.scan.
func (a *assigner) scanBest(d int32, dl uint64) int32 {
	cand, prevs := a.tmp[:0], a.stack[:0]
	var bh, bl uint64
	min1, min2, n1 := uint64(math.MaxUint64), uint64(math.MaxUint64), 0
	prev := int32(-1)
	for x := a.mem[d].head; x >= 0; prev, x = x, a.sp[x].next {
		w := a.sp[x].w
		switch {
		case w < min1:
			min1, min2, n1 = w, min1, 1
		case w == min1:
			n1++
		case w < min2:
			min2 = w
		}
		if w >= dl {
			continue
		}
		ch, cl := gain(w, dl)
		if len(cand) > 0 && (ch < bh || (ch == bh && cl < bl)) {
			continue
		}
		if len(cand) == 0 || ch > bh || cl > bl {
			cand, prevs, bh, bl = cand[:0], prevs[:0], ch, cl
		}
		cand = append(cand, x)
		prevs = append(prevs, prev)
	}
	a.tmp, a.stack = cand, prevs
	if len(cand) == 0 {
		return -1
	}
	bi := 0
	if len(cand) > 1 {
		var bhash uint64
		var h [4]uint64
		for i := 0; i < len(cand); i += 4 {
			n := min(4, len(cand)-i)
			a.hash4(cand[i:i+n], &h)
			for j := range n {
				x := cand[i+j]
				if i+j == 0 || h[j] > bhash || (h[j] == bhash && a.id(x) < a.id(cand[bi])) {
					bi, bhash = i+j, h[j]
				}
			}
		}
	}
	best := cand[bi]
	a.scan = scanned{prev: prevs[bi], wmin: min1}
	if a.sp[best].w == min1 && n1 == 1 {
		a.scan.wmin = min2
	}
	return best
}

// hash4 sets h[i] to the splitHash of xs[i] (len(xs) <= 4), interleaving
// the four FNV-1a chains over the bytes their ids have in common.
func (a *assigner) hash4(xs []int32, h *[4]uint64) {
	var ids [4]string
	for i, x := range xs {
		ids[i] = string(a.id(x))
		h[i] = a.h0
	}
	n := 0
	if len(xs) == 4 {
		n = min(len(ids[0]), len(ids[1]), len(ids[2]), len(ids[3]))
		for j := 0; j < n; j++ {
			h[0] = (h[0] ^ uint64(ids[0][j])) * fnvPrime
			h[1] = (h[1] ^ uint64(ids[1][j])) * fnvPrime
			h[2] = (h[2] ^ uint64(ids[2][j])) * fnvPrime
			h[3] = (h[3] ^ uint64(ids[3][j])) * fnvPrime
		}
	}
	for i := range xs {
		h[i] = hashFrom(h[i], ids[i][n:])
	}
}

// listUnlink removes s, just chosen by scanBest, from member m's list form.
func (a *assigner) listUnlink(m, s int32) {
	mb := &a.mem[m]
	if a.scan.prev < 0 {
		mb.head = a.sp[s].next
	} else {
		a.sp[a.scan.prev].next = a.sp[s].next
	}
	mb.wmin = a.scan.wmin
}

// splitHash is the splitHash of pool split x.
func (a *assigner) splitHash(x int32) uint64 { return hashFrom(a.h0, string(a.id(x))) }

// better reports whether split x beats split y on the gain tie-break; both
// are treap nodes.
func (a *assigner) better(x, y int32) bool {
	if hx, hy := a.node[x].hash, a.node[y].hash; hx != hy {
		return hx > hy
	}
	return a.id(x) < a.id(y)
}

// move gives split s from donor d to receiver r and updates both heaps.
func (a *assigner) move(s, d, r int32) {
	sp := &a.sp[s]
	dm, rm := &a.mem[d], &a.mem[r]
	if dm.built {
		dm.root = a.treapDelete(dm.root, s)
	} else {
		a.listUnlink(d, s)
	}
	dm.count--
	dm.load = subSat(dm.load, sp.w)
	sp.at = r
	if rm.built {
		a.node[s] = aNode{hash: a.splitHash(s), left: -1, right: -1}
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
			flat[next[m]] = a.in[a.sp[i].src].ID
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

// memberIndex maps an instance id to its member index: open addressing over
// a power-of-two table at most a quarter full. An id is summarised by its
// length and two words (its first and last 8 bytes, or 4, or 3 sampled bytes
// for short ids), which determine ids of up to 16 bytes completely, so most
// lookups compare three integers and no bytes; longer ids mix in their middle
// words for the hash and are compared in full. It never affects the result,
// and it is a few times cheaper than a Go map for the one lookup per split.
type memberIndex struct {
	slots []int32  // member index, -1 if empty
	keys  []idKey  // by member index
	ids   []string // by member index, for ids longer than 16 bytes
}

// idKey summarises an id; see memberIndex.
type idKey struct {
	a, b uint64
	n    int
}

func newMemberIndex(mem []aMember) memberIndex {
	size := 4
	for size < 4*len(mem) {
		size *= 2
	}
	x := memberIndex{slots: make([]int32, size), keys: make([]idKey, len(mem)), ids: make([]string, len(mem))}
	for i := range x.slots {
		x.slots[i] = -1
	}
	mask := uint64(size - 1)
	for i := range mem {
		key, h := summarise(mem[i].id)
		x.keys[i], x.ids[i] = key, mem[i].id
		j := h & mask
		for x.slots[j] >= 0 {
			j = (j + 1) & mask
		}
		x.slots[j] = int32(i)
	}
	return x
}

// lookup returns the index of member id, or -1.
func (x *memberIndex) lookup(id string) int32 {
	key, h := summarise(id)
	mask := uint64(len(x.slots) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		m := x.slots[j]
		if m < 0 {
			return -1
		}
		if x.keys[m] == key && (key.n <= 16 || x.ids[m] == id) {
			return m
		}
	}
}

// summarise returns id's key and its table hash.
func summarise(id string) (idKey, uint64) {
	const k = 0x9e3779b97f4a7c15
	n := len(id)
	var key idKey
	key.n = n
	h := uint64(n) * k
	switch {
	case n >= 8:
		key.a, key.b = load64(id, 0), load64(id, n-8)
		for i := 8; i < n-8; i += 8 {
			h = bits.RotateLeft64((h^load64(id, i))*k, 29)
		}
	case n >= 4:
		key.a, key.b = load32(id, 0), load32(id, n-4)
	case n > 0:
		key.a = uint64(id[0])<<16 | uint64(id[n/2])<<8 | uint64(id[n-1])
	}
	h = bits.RotateLeft64((h^key.a)*k, 29) ^ key.b
	return key, mix64(h) // multiplication only carries upwards: finalize
}

// load64 is the little-endian word of s at i.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// load32 is the little-endian half-word of s at i.
func load32(s string, i int) uint64 {
	s = s[i : i+4]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// seedState is the FNV-1a 64 state after hashing be64(seed), so an
// evaluation hashes the seed once, not once per id.
func seedState(seed uint64) uint64 {
	h := uint64(fnvOffset)
	for i := 7; i >= 0; i-- {
		h ^= (seed >> (8 * i)) & 0xff
		h *= fnvPrime
	}
	return h
}

// hashFrom continues FNV-1a 64 from state h over s.
func hashFrom(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

const (
	fnvOffset = 0xcbf29ce484222325
	fnvPrime  = 0x100000001b3
)
