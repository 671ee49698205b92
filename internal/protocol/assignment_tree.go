package protocol

import (
	"slices"
	"strings"
)

// Each member's splits, from its second time as a donor on, live in a treap
// over the node table (indexed like the split table, allocated at the first
// build), ordered by (weight asc, splitHash desc, id asc): within a weight
// class the split that wins the gain tie-break comes first. Priorities are a
// fixed mix of the split's index, so the shape is deterministic; results never
// depend on the shape, only on the key order.

// aNode is the treap node of a pool split.
type aNode struct {
	hash  uint64 // splitHash
	left  int32
	right int32
}

// prio is the treap priority of split x.
func prio(x int32) uint32 { return uint32(mix64(uint64(x)) >> 32) }

// keyCmp compares splits x and y in treap order.
func (a *assigner) keyCmp(x, y int32) int {
	if wx, wy := a.sp[x].w, a.sp[y].w; wx != wy {
		if wx < wy {
			return -1
		}
		return 1
	}
	if hx, hy := a.node[x].hash, a.node[y].hash; hx != hy {
		if hx > hy {
			return -1
		}
		return 1
	}
	return strings.Compare(string(a.id(x)), string(a.id(y)))
}

// build turns member m's list form into its treap, in O(c log c) for c splits.
func (a *assigner) build(m int32) {
	mb := &a.mem[m]
	if mb.built {
		return
	}
	mb.built = true
	if a.node == nil {
		a.node = make([]aNode, len(a.sp))
	}
	a.tmp = a.tmp[:0]
	for x := mb.head; x >= 0; {
		a.node[x] = aNode{hash: a.splitHash(x), left: -1, right: -1}
		a.tmp = append(a.tmp, x)
		x, a.sp[x].next = a.sp[x].next, -1
	}
	mb.head = -1
	slices.SortFunc(a.tmp, a.keyCmp)
	// Cartesian-tree construction over the sorted keys: O(c) with a stack
	// holding the right spine.
	stack := a.stack[:0]
	for _, x := range a.tmp {
		last := int32(-1)
		for len(stack) > 0 && prio(stack[len(stack)-1]) < prio(x) {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		a.node[x].left = last
		if len(stack) > 0 {
			a.node[stack[len(stack)-1]].right = x
		}
		stack = append(stack, x)
	}
	mb.root = -1
	if len(stack) > 0 {
		mb.root = stack[0]
	}
	a.stack = stack
}

// lowerBound returns the first split in t with weight >= w (the best of its
// weight class) and the last split with weight < w, each -1 if none.
func (a *assigner) lowerBound(t int32, w uint64) (int32, int32) {
	ge, lt := int32(-1), int32(-1)
	for t >= 0 {
		if a.sp[t].w >= w {
			ge = t
			t = a.node[t].left
		} else {
			lt = t
			t = a.node[t].right
		}
	}
	return ge, lt
}

// treapInsert inserts node x (children cleared, hash set) into t.
func (a *assigner) treapInsert(t, x int32) int32 {
	if t < 0 {
		return x
	}
	if a.keyCmp(x, t) < 0 {
		l := a.treapInsert(a.node[t].left, x)
		a.node[t].left = l
		if prio(l) > prio(t) { // rotate right
			a.node[t].left = a.node[l].right
			a.node[l].right = t
			return l
		}
		return t
	}
	r := a.treapInsert(a.node[t].right, x)
	a.node[t].right = r
	if prio(r) > prio(t) { // rotate left
		a.node[t].right = a.node[r].left
		a.node[r].left = t
		return r
	}
	return t
}

// treapDelete removes node x, which is in t, and returns the new root.
func (a *assigner) treapDelete(t, x int32) int32 {
	if t == x {
		return a.treapMerge(a.node[t].left, a.node[t].right)
	}
	if a.keyCmp(x, t) < 0 {
		a.node[t].left = a.treapDelete(a.node[t].left, x)
	} else {
		a.node[t].right = a.treapDelete(a.node[t].right, x)
	}
	return t
}

// treapMerge joins l and r, every key of l below every key of r.
func (a *assigner) treapMerge(l, r int32) int32 {
	if l < 0 {
		return r
	}
	if r < 0 {
		return l
	}
	if prio(l) > prio(r) {
		a.node[l].right = a.treapMerge(a.node[l].right, r)
		return l
	}
	a.node[r].left = a.treapMerge(l, a.node[r].left)
	return r
}

// mix64 is the splitmix64 finalizer, used for treap priorities.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
