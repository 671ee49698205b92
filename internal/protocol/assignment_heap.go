package protocol

// The two member heaps of the assignment function (SPEC §31.1).
//
// recv is an indexed min-heap of the members with a spare lane, keyed
// "lightest first" (load asc, memberHash asc, id asc); aMember.pos tracks each
// member's index so a load change is fixed in O(log m). Members are numbered in
// id order, so the index breaks the final tie.
//
// donor is a max-heap keyed (load desc, memberHash asc, id asc) with lazy
// deletion: every push bumps the member's version, and only the entry
// carrying the current version is live.

// recvLess orders members lightest first.
func (a *assigner) recvLess(x, y int32) bool {
	mx, my := &a.mem[x], &a.mem[y]
	if mx.load != my.load {
		return mx.load < my.load
	}
	if mx.hash != my.hash {
		return mx.hash < my.hash
	}
	return x < y
}

func (a *assigner) recvSwap(i, j int) {
	a.recv[i], a.recv[j] = a.recv[j], a.recv[i]
	a.mem[a.recv[i]].pos = int32(i)
	a.mem[a.recv[j]].pos = int32(j)
}

func (a *assigner) recvUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !a.recvLess(a.recv[i], a.recv[p]) {
			return
		}
		a.recvSwap(i, p)
		i = p
	}
}

func (a *assigner) recvDown(i int) {
	n := len(a.recv)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && a.recvLess(a.recv[r], a.recv[l]) {
			c = r
		}
		if !a.recvLess(a.recv[c], a.recv[i]) {
			return
		}
		a.recvSwap(i, c)
		i = c
	}
}

// recvPush adds member m, which has a spare lane and is not in the heap.
func (a *assigner) recvPush(m int32) {
	a.mem[m].pos = int32(len(a.recv))
	a.recv = append(a.recv, m)
	a.recvUp(len(a.recv) - 1)
}

// recvFix restores the heap after member m's load or count changed, removing
// it once its lanes are full.
func (a *assigner) recvFix(m int32) {
	i := int(a.mem[m].pos)
	if a.mem[m].count >= a.mem[m].cap {
		last := len(a.recv) - 1
		if i != last {
			a.recvSwap(i, last)
		}
		a.recv = a.recv[:last]
		a.mem[m].pos = -1
		if i < last {
			a.recvUp(i)
			a.recvDown(i)
		}
		return
	}
	a.recvUp(i)
	a.recvDown(int(a.mem[m].pos))
}

// donorEntry is one donor-heap entry: the member's load and version when pushed.
type donorEntry struct {
	load uint64
	hash uint64
	m    int32
	ver  uint32
}

// donorEntry returns a live entry for member m, bumping its version.
func (a *assigner) donorEntry(m int32) donorEntry {
	mb := &a.mem[m]
	mb.ver++
	return donorEntry{load: mb.load, hash: mb.hash, m: m, ver: mb.ver}
}

// donorLess orders the heaviest member first, ties to the lower (memberHash, id).
func donorLess(x, y donorEntry) bool {
	if x.load != y.load {
		return x.load > y.load
	}
	if x.hash != y.hash {
		return x.hash < y.hash
	}
	return x.m < y.m
}

func (a *assigner) donorDown(i int) {
	h := a.donor
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && donorLess(h[r], h[l]) {
			c = r
		}
		if !donorLess(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// donorPush pushes a live entry for member m, superseding any older one.
func (a *assigner) donorPush(m int32) {
	a.donor = append(a.donor, a.donorEntry(m))
	h := a.donor
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !donorLess(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// donorPop removes the top entry.
func (a *assigner) donorPop() {
	last := len(a.donor) - 1
	a.donor[0] = a.donor[last]
	a.donor = a.donor[:last]
	a.donorDown(0)
}
