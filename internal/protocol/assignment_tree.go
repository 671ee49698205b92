package protocol

import (
	"slices"
	"strings"
)

// Each member's splits, once it is first used as a donor, live in a treap over
// the split table (aSplit.left/right/prio), ordered by (weight asc, splitHash
// desc, id asc): within a weight class the split that wins the gain tie-break
// comes first. Priorities are a fixed mix of the split's index, so the shape is
// deterministic; results never depend on the shape, only on the key order.

// keyCmp compares splits x and y in treap order.
func (a *assigner) keyCmp(x, y int32) int {
	sx, sy := &a.sp[x], &a.sp[y]
	if sx.w != sy.w {
		if sx.w < sy.w {
			return -1
		}
		return 1
	}
	if sx.hash != sy.hash {
		if sx.hash > sy.hash {
			return -1
		}
		return 1
	}
	return strings.Compare(string(a.in[sx.src].ID), string(a.in[sy.src].ID))
}

// build turns member m's list form into its treap, in O(c log c) for c splits.
func (a *assigner) build(m int32) {
	mb := &a.mem[m]
	if mb.built {
		return
	}
	mb.built = true
	a.tmp = a.tmp[:0]
	for x := mb.head; x >= 0; {
		s := &a.sp[x]
		a.hashOf(x)
		s.prio = uint32(mix64(uint64(x)) >> 32)
		a.tmp = append(a.tmp, x)
		x, s.left, s.right, s.next = s.next, -1, -1, -1
	}
	mb.head = -1
	slices.SortFunc(a.tmp, a.keyCmp)
	// Cartesian-tree construction over the sorted keys: O(c) with a stack
	// holding the right spine.
	stack := a.stack[:0]
	for _, x := range a.tmp {
		last := int32(-1)
		for len(stack) > 0 && a.sp[stack[len(stack)-1]].prio < a.sp[x].prio {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		a.sp[x].left = last
		if len(stack) > 0 {
			a.sp[stack[len(stack)-1]].right = x
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
			t = a.sp[t].left
		} else {
			lt = t
			t = a.sp[t].right
		}
	}
	return ge, lt
}

// treapInsert inserts node x (children cleared, hash and prio set) into t.
func (a *assigner) treapInsert(t, x int32) int32 {
	if t < 0 {
		return x
	}
	if a.keyCmp(x, t) < 0 {
		l := a.treapInsert(a.sp[t].left, x)
		a.sp[t].left = l
		if a.sp[l].prio > a.sp[t].prio { // rotate right
			a.sp[t].left = a.sp[l].right
			a.sp[l].right = t
			return l
		}
		return t
	}
	r := a.treapInsert(a.sp[t].right, x)
	a.sp[t].right = r
	if a.sp[r].prio > a.sp[t].prio { // rotate left
		a.sp[t].right = a.sp[r].left
		a.sp[r].left = t
		return r
	}
	return t
}

// treapDelete removes node x, which is in t, and returns the new root.
func (a *assigner) treapDelete(t, x int32) int32 {
	if t == x {
		return a.treapMerge(a.sp[t].left, a.sp[t].right)
	}
	if a.keyCmp(x, t) < 0 {
		a.sp[t].left = a.treapDelete(a.sp[t].left, x)
	} else {
		a.sp[t].right = a.treapDelete(a.sp[t].right, x)
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
	if a.sp[l].prio > a.sp[r].prio {
		a.sp[l].right = a.treapMerge(a.sp[l].right, r)
		return l
	}
	a.sp[r].left = a.treapMerge(l, a.sp[r].left)
	return r
}

// mix64 is the splitmix64 finalizer, used for treap priorities.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
