package protocol

// The two member heaps of the assignment function.
//
// recv is an indexed min-heap of the members with a spare lane, keyed
// "lightest first" (load asc, memberHash asc, id asc); aMember.pos tracks each
// member's index so a load change is fixed in O(log m). Members are numbered in
// id order, so the index breaks the final tie.
//
// donor is a max-heap keyed (load desc, memberHash asc, id asc) with lazy
// deletion: every push bumps the member's version, and only the entry
// carrying the current version is live.

// recvEntry is a receiver-heap entry; it carries its key so comparisons do
// not chase into the member table.
type recvEntry struct {
	load uint64
	hash uint64
	m    int32
}

// recvLess orders members lightest first.
func recvLess(x, y recvEntry) bool {
	if x.load != y.load {
		return x.load < y.load
	}
	if x.hash != y.hash {
		return x.hash < y.hash
	}
	return x.m < y.m
}

func (a *assigner) recvUp(i int) {
	h := a.recv
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !recvLess(e, h[p]) {
			break
		}
		h[i] = h[p]
		a.mem[h[i].m].pos = int32(i)
		i = p
	}
	h[i] = e
	a.mem[e.m].pos = int32(i)
}

func (a *assigner) recvDown(i int) {
	h := a.recv
	n := len(h)
	e := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && recvLess(h[r], h[l]) {
			c = r
		}
		if !recvLess(h[c], e) {
			break
		}
		h[i] = h[c]
		a.mem[h[i].m].pos = int32(i)
		i = c
	}
	h[i] = e
	a.mem[e.m].pos = int32(i)
}

// recvPush adds member m, which has a spare lane and is not in the heap.
func (a *assigner) recvPush(m int32) {
	mb := &a.mem[m]
	a.recv = append(a.recv, recvEntry{load: mb.load, hash: mb.hash, m: m})
	a.recvUp(len(a.recv) - 1)
}

// recvFix restores the heap after member m's load or count changed, removing
// it once its lanes are full.
func (a *assigner) recvFix(m int32) {
	mb := &a.mem[m]
	i := int(mb.pos)
	if mb.count >= mb.cap {
		mb.pos = -1
		last := len(a.recv) - 1
		if i != last {
			mv := a.recv[last].m
			a.recv[i] = a.recv[last]
			a.recv = a.recv[:last]
			a.recvUp(i)
			a.recvDown(int(a.mem[mv].pos))
			return
		}
		a.recv = a.recv[:last]
		return
	}
	a.recv[i].load = mb.load
	a.recvUp(i)
	a.recvDown(int(mb.pos))
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
