package protocol

import (
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/spate-go/coordination"
)

// referenceAssign is a literal, slow transcription of SPEC §14: linear scans
// for every choice, math/big for gains, explicit saturating sums. The fast
// Assign must produce exactly its output (including Moves and Bounded).
func referenceAssign(in AssignInput, maxMoves int) AssignOutput {
	members := slices.Clone(in.Members)
	slices.Sort(members)
	members = slices.Compact(members)
	out := AssignOutput{Assigned: map[string][]coordination.SplitID{}}
	if len(members) == 0 {
		return out
	}
	isMember := map[string]bool{}
	capOf := map[string]int{}
	mhash := map[string]uint64{}
	for _, m := range members {
		isMember[m] = true
		c := in.DefaultCap
		if v, ok := in.Caps[m]; ok && v > 0 {
			c = v
		}
		capOf[m] = max(1, c)
		mhash[m] = MemberHash(in.FP, m)
	}
	type ps struct {
		id    coordination.SplitID
		w     uint64
		owner string // "" unless a member
	}
	var pool []ps
	for _, s := range in.Splits {
		if s.Status != StatusRunnable || !s.HasSpec || in.Reserved[s.ID] {
			continue
		}
		o := ""
		if isMember[s.Owner] {
			o = s.Owner
		}
		w := s.Weight
		if w == 0 {
			w = 1
		}
		pool = append(pool, ps{s.ID, w, o})
	}
	// Collapse repeated ids: greatest weight, then no member owner, then the
	// lowest owner id.
	slices.SortFunc(pool, func(x, y ps) int {
		if c := strings.Compare(string(x.id), string(y.id)); c != 0 {
			return c
		}
		if x.w != y.w {
			if x.w > y.w {
				return -1
			}
			return 1
		}
		if (x.owner == "") != (y.owner == "") {
			if x.owner == "" {
				return -1
			}
			return 1
		}
		return strings.Compare(x.owner, y.owner)
	})
	pool = slices.CompactFunc(pool, func(x, y ps) bool { return x.id == y.id })
	// Pool order.
	slices.SortStableFunc(pool, func(x, y ps) int {
		if x.w != y.w {
			if x.w > y.w {
				return -1
			}
			return 1
		}
		return strings.Compare(string(x.id), string(y.id))
	})
	weight := map[coordination.SplitID]uint64{}
	held := map[string][]coordination.SplitID{}
	load := map[string]uint64{}
	sat := func(a, b uint64) uint64 {
		if a > math.MaxUint64-b {
			return math.MaxUint64
		}
		return a + b
	}
	give := func(m string, p ps) {
		held[m] = append(held[m], p.id)
		load[m] = sat(load[m], p.w)
	}
	var unplaced []ps
	for _, p := range pool {
		weight[p.id] = p.w
		if p.owner != "" && len(held[p.owner]) < capOf[p.owner] {
			give(p.owner, p)
		} else {
			unplaced = append(unplaced, p)
		}
	}
	lighter := func(x, y string) bool {
		if load[x] != load[y] {
			return load[x] < load[y]
		}
		if mhash[x] != mhash[y] {
			return mhash[x] < mhash[y]
		}
		return x < y
	}
	receiver := func() string {
		r := ""
		for _, m := range members {
			if len(held[m]) < capOf[m] && (r == "" || lighter(m, r)) {
				r = m
			}
		}
		return r
	}
	for _, p := range unplaced {
		r := receiver()
		if r == "" {
			break
		}
		give(r, p)
	}
	for {
		r := receiver()
		if r == "" {
			break
		}
		t := load[r]
		donor := ""
		for _, d := range members {
			admissible := false
			for _, id := range held[d] {
				if sum := sat(t, weight[id]); sum != math.MaxUint64 && load[d] > sum {
					admissible = true
				}
			}
			if !admissible {
				continue
			}
			if donor == "" || load[d] > load[donor] ||
				(load[d] == load[donor] && (mhash[d] < mhash[donor] || (mhash[d] == mhash[donor] && d < donor))) {
				donor = d
			}
		}
		if donor == "" {
			break
		}
		if out.Moves >= maxMoves {
			out.Bounded = true
			break
		}
		best := -1
		var bestGain *big.Int
		for i, id := range held[donor] {
			w := weight[id]
			if sum := sat(t, w); sum == math.MaxUint64 || load[donor] <= sum {
				continue
			}
			g := new(big.Int).SetUint64(load[donor])
			g.Sub(g, new(big.Int).SetUint64(t))
			g.Sub(g, new(big.Int).SetUint64(w))
			g.Mul(g, new(big.Int).SetUint64(w))
			if best < 0 {
				best, bestGain = i, g
				continue
			}
			switch c := g.Cmp(bestGain); {
			case c > 0:
				best, bestGain = i, g
			case c == 0:
				bid := held[donor][best]
				h, bh := SplitHash(in.FP, string(id)), SplitHash(in.FP, string(bid))
				if h > bh || (h == bh && id < bid) {
					best, bestGain = i, g
				}
			}
		}
		id := held[donor][best]
		held[donor] = slices.Delete(held[donor], best, best+1)
		if load[donor] < weight[id] {
			load[donor] = 0
		} else {
			load[donor] -= weight[id]
		}
		held[r] = append(held[r], id)
		load[r] = sat(load[r], weight[id])
		out.Moves++
	}
	for _, m := range members {
		l := slices.Clone(held[m])
		if l == nil {
			l = []coordination.SplitID{}
		}
		slices.Sort(l)
		out.Assigned[m] = l
	}
	return out
}
