package protocol

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

func TestGracePinned(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 3 * time.Second
	owned := []AssignSplit{{ID: "a", Owner: "w1"}, {ID: "b", Owner: "w2"}, {ID: "c"}}
	tests := []struct {
		name    string
		window  time.Duration
		observe func(g *Grace)
		at      time.Duration // after t0
		want    []coordination.SplitID
		next    time.Duration // after t0; 0 for none
	}{
		{name: "nothing observed", window: window, observe: func(*Grace) {}, at: 0},
		{name: "leading pins every owned split", window: window,
			observe: func(g *Grace) { g.Lead(t0) }, at: time.Second, want: []coordination.SplitID{"a", "b"}, next: window},
		{name: "leading window over", window: window,
			observe: func(g *Grace) { g.Lead(t0) }, at: window},
		{name: "a join pins the joiner's splits", window: window,
			observe: func(g *Grace) { g.Join("w1", t0.Add(time.Second)) }, at: 2 * time.Second, want: []coordination.SplitID{"a"}, next: time.Second + window},
		{name: "only the first observation of a member counts", window: window,
			observe: func(g *Grace) { g.Join("w1", t0); g.Join("w1", t0.Add(2*time.Second)) }, at: window},
		{name: "a member seen leaving and rejoining starts again", window: window,
			observe: func(g *Grace) { g.Join("w1", t0); g.Leave("w1"); g.Join("w1", t0.Add(2*time.Second)) }, at: window,
			want: []coordination.SplitID{"a"}, next: 2*time.Second + window},
		{name: "a claim pins the split", window: window,
			observe: func(g *Grace) { g.Claim("b", "w2", t0.Add(time.Second)) }, at: 2 * time.Second, want: []coordination.SplitID{"b"}, next: time.Second + window},
		{name: "a lease renewal is not a new claim", window: window,
			observe: func(g *Grace) { g.Claim("b", "w2", t0); g.Claim("b", "w2", t0.Add(2*time.Second)) }, at: window},
		{name: "a claim by another instance than the owner does not pin", window: window,
			observe: func(g *Grace) { g.Claim("b", "w9", t0) }, at: time.Second},
		{name: "a released split does not pin", window: window,
			observe: func(g *Grace) { g.Claim("b", "w2", t0); g.Release("b") }, at: time.Second},
		{name: "a record naming no owner releases", window: window,
			observe: func(g *Grace) { g.Claim("b", "w2", t0); g.Claim("b", "", t0) }, at: time.Second},
		{name: "the latest window wins", window: window,
			observe: func(g *Grace) { g.Lead(t0); g.Claim("a", "w1", t0.Add(2*time.Second)) }, at: window + time.Second,
			want: []coordination.SplitID{"a"}, next: 2*time.Second + window},
		{name: "zero window pins nothing", window: 0,
			observe: func(g *Grace) { g.Lead(t0); g.Join("w1", t0); g.Claim("a", "w1", t0) }, at: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGrace(tt.window)
			tt.observe(g)
			now := t0.Add(tt.at)
			got := slices.Sorted(maps.Keys(g.Pinned(now, owned)))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Pinned = %v, want %v", got, tt.want)
			}
			if tt.next == 0 {
				if g.Due(now.Add(time.Hour)) {
					t.Fatal("Due with nothing pinned")
				}
				return
			}
			if g.Due(t0.Add(tt.next - time.Millisecond)) {
				t.Fatal("Due before the earliest pin ended")
			}
			if !g.Due(t0.Add(tt.next)) {
				t.Fatal("not Due when the earliest pin ended")
			}
			if g.Due(t0.Add(tt.next)) {
				t.Fatal("Due twice for one pin end")
			}
		})
	}
}

func TestGraceHold(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 3 * time.Second // members must stop joining for 500ms
	in := AssignInput{
		Members:  []string{"w1", "w2"},
		Splits:   []AssignSplit{{ID: "mine", Owner: "w1"}, {ID: "dead", Owner: "gone"}, {ID: "free"}, {ID: "kept", Owner: "gone"}},
		Reserved: map[coordination.SplitID]bool{"kept": true},
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ms := time.Millisecond
	tests := []struct {
		name     string
		window   time.Duration
		lead     bool
		running  bool
		joins    []time.Duration // after t0
		at       time.Duration   // after t0
		wantHeld []coordination.SplitID
		wantEnd  time.Duration // after t0; 0: no hold
	}{
		{name: "a starting fleet keeps back what no live member owns", window: window, lead: true, joins: []time.Duration{400 * ms, 800 * ms}, at: time.Second,
			wantHeld: []coordination.SplitID{"dead", "free", "kept"}, wantEnd: 1300 * ms},
		{name: "members that all joined long before leading began: no hold", window: window, lead: true, joins: []time.Duration{-time.Minute, -time.Second}, at: 0},
		{name: "a member seen just before leading began counts from its join", window: window, lead: true, joins: []time.Duration{-time.Minute, -200 * ms}, at: 100 * ms,
			wantHeld: []coordination.SplitID{"dead", "free", "kept"}, wantEnd: 300 * ms},
		{name: "joins before and after leading began chain", window: window, lead: true, joins: []time.Duration{-200 * ms, 200 * ms}, at: 400 * ms,
			wantHeld: []coordination.SplitID{"dead", "free", "kept"}, wantEnd: 700 * ms},
		{name: "joins extend the hold, up to the window", window: window, lead: true,
			joins: []time.Duration{400 * ms, 800 * ms, 1200 * ms, 1600 * ms, 2000 * ms, 2400 * ms, 2800 * ms}, at: 2900 * ms,
			wantHeld: []coordination.SplitID{"dead", "free", "kept"}, wantEnd: window},
		{name: "no member joined for a sixth of the window", window: window, lead: true, joins: []time.Duration{100 * ms}, at: 600 * ms},
		{name: "a join after the hold ended does not reopen it", window: window, lead: true, joins: []time.Duration{100 * ms, 700 * ms}, at: 800 * ms},
		{name: "a running fleet holds nothing", window: window, lead: true, running: true, at: 100 * ms},
		{name: "not leading", window: window, at: 100 * ms},
		{name: "a zero window holds nothing", window: 0, lead: true, at: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGrace(tt.window)
			if tt.lead {
				g.Lead(t0)
			}
			for i, d := range tt.joins {
				g.Join(fmt.Sprintf("m%d", i), at(d))
			}
			asked := 0
			running := func() bool { asked++; return tt.running }
			for range 2 { // the second call must not ask again
				out, end := g.Hold(at(tt.at), in, running)
				held := slices.Sorted(maps.Keys(out.Reserved))
				if tt.wantEnd == 0 {
					if !end.IsZero() || !maps.Equal(out.Reserved, in.Reserved) {
						t.Fatalf("Hold = %v until %v, want no hold", held, end)
					}
					continue
				}
				if !slices.Equal(held, tt.wantHeld) || !end.Equal(at(tt.wantEnd)) {
					t.Fatalf("Hold = %v until %v, want %v until %v", held, end, tt.wantHeld, at(tt.wantEnd))
				}
			}
			if asked > 1 {
				t.Fatalf("running asked %d times in one leadership, want at most once", asked)
			}
			if len(in.Reserved) != 1 {
				t.Fatalf("Hold changed its input's Reserved: %v", in.Reserved)
			}
		})
	}
}

// TestGraceHoldIsOverForTheLeadership checks that a hold, once over, does
// not start again when a member joins later, and that a new leadership
// decides afresh.
func TestGraceHoldIsOverForTheLeadership(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGrace(3 * time.Second)
	in := AssignInput{Members: []string{"w1"}, Splits: []AssignSplit{{ID: "free"}}}
	starting := func() bool { return false }
	g.Lead(t0)
	if _, end := g.Hold(t0, in, starting); !end.Equal(t0.Add(500 * time.Millisecond)) {
		t.Fatalf("a starting fleet holds until %v", end)
	}
	g.Join("late", t0.Add(time.Second))
	if _, end := g.Hold(t0.Add(time.Second), in, starting); !end.IsZero() {
		t.Fatalf("a join after the hold ended held again until %v", end)
	}
	g.Lead(t0.Add(time.Minute))
	if _, end := g.Hold(t0.Add(time.Minute), in, func() bool { return true }); !end.IsZero() {
		t.Fatalf("a new leadership of a running fleet holds until %v", end)
	}
}

func TestKeepPinnedTable(t *testing.T) {
	split := func(id, owner string) AssignSplit {
		return AssignSplit{ID: coordination.SplitID(id), Weight: 1, HasSpec: true, Owner: owner}
	}
	tests := []struct {
		name   string
		in     AssignInput
		out    map[string][]coordination.SplitID
		pinned []coordination.SplitID
		want   map[string][]coordination.SplitID
	}{
		{
			name:   "a pinned split moved away comes back",
			in:     AssignInput{Members: []string{"w1", "w2"}, DefaultCap: 4, Splits: []AssignSplit{split("a", "w1"), split("b", "w1")}},
			out:    map[string][]coordination.SplitID{"w1": {"a"}, "w2": {"b"}},
			pinned: []coordination.SplitID{"b"},
			want:   map[string][]coordination.SplitID{"w1": {"a", "b"}, "w2": {}},
		},
		{
			name:   "the owner over budget gives up its new splits, highest id first",
			in:     AssignInput{Members: []string{"w1", "w2"}, DefaultCap: 2, Splits: []AssignSplit{split("a", "w1"), split("b", ""), split("c", ""), split("d", "w1")}},
			out:    map[string][]coordination.SplitID{"w1": {"a", "b"}, "w2": {"c", "d"}},
			pinned: []coordination.SplitID{"d"},
			want:   map[string][]coordination.SplitID{"w1": {"a", "d"}, "w2": {"c"}},
		},
		{
			name:   "an owner that is not a member keeps nothing",
			in:     AssignInput{Members: []string{"w2"}, DefaultCap: 2, Splits: []AssignSplit{split("a", "gone")}},
			out:    map[string][]coordination.SplitID{"w2": {"a"}},
			pinned: []coordination.SplitID{"a"},
			want:   map[string][]coordination.SplitID{"w2": {"a"}},
		},
		{
			name: "a reserved or completed split is not kept",
			in: AssignInput{Members: []string{"w1", "w2"}, DefaultCap: 2, Reserved: map[coordination.SplitID]bool{"a": true},
				Splits: []AssignSplit{split("a", "w1"), {ID: "b", HasSpec: true, Status: StatusCompleted, Owner: "w1"}}},
			out:    map[string][]coordination.SplitID{"w1": {}, "w2": {}},
			pinned: []coordination.SplitID{"a", "b"},
			want:   map[string][]coordination.SplitID{"w1": {}, "w2": {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinned := map[coordination.SplitID]bool{}
			for _, id := range tt.pinned {
				pinned[id] = true
			}
			got := KeepPinned(tt.in, AssignOutput{Assigned: tt.out}, pinned).Assigned
			if !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("KeepPinned = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestKeepPinnedProperties checks KeepPinned over Assign's own outputs: every
// keepable pinned split ends on its owner, nothing else moves, no split is
// named twice, lists stay sorted, and a member exceeds its budget only by
// splits it already owns.
func TestKeepPinnedProperties(t *testing.T) {
	checkAssignAtLeast(t, func(t *rapid.T) {
		in := assignInputGen(false, true).Draw(t, "in")
		seen := map[coordination.SplitID]bool{}
		in.Splits = slices.DeleteFunc(in.Splits, func(s AssignSplit) bool { // one entry per id
			dup := seen[s.ID]
			seen[s.ID] = true
			return dup
		})
		pinned := map[coordination.SplitID]bool{}
		for _, s := range in.Splits {
			if rapid.Bool().Draw(t, "pin") {
				pinned[s.ID] = true
			}
		}
		before := Assign(in)
		after := KeepPinned(in, before, pinned)

		at := func(out AssignOutput) map[coordination.SplitID]string {
			m := map[coordination.SplitID]string{}
			for inst, ids := range out.Assigned {
				if !slices.IsSorted(ids) {
					t.Fatalf("%s's list %v is not sorted", inst, ids)
				}
				for _, id := range ids {
					if other, ok := m[id]; ok {
						t.Fatalf("split %s named to %s and %s", id, other, inst)
					}
					m[id] = inst
				}
			}
			return m
		}
		was, now := at(before), at(after)
		if !slices.Equal(slices.Sorted(maps.Keys(after.Assigned)), slices.Sorted(maps.Keys(before.Assigned))) {
			t.Fatalf("members changed: %v -> %v", before.Assigned, after.Assigned)
		}
		for _, s := range in.Splits {
			_, member := after.Assigned[s.Owner]
			keepable := pinned[s.ID] && member && s.Status == StatusRunnable && s.HasSpec && !in.Reserved[s.ID]
			switch {
			case keepable && now[s.ID] != s.Owner:
				t.Fatalf("pinned split %s is on %q, want its owner %s", s.ID, now[s.ID], s.Owner)
			case !keepable && now[s.ID] != "" && now[s.ID] != was[s.ID]:
				t.Fatalf("split %s moved from %q to %q without a pin", s.ID, was[s.ID], now[s.ID])
			}
		}
		for inst, ids := range after.Assigned {
			var foreign int
			for _, id := range ids {
				for _, s := range in.Splits {
					if s.ID == id && s.Owner != inst {
						foreign++
					}
				}
			}
			if len(ids) > budget(in, inst) && foreign > 0 {
				t.Fatalf("%s holds %d splits over its budget %d, %d of them new", inst, len(ids), budget(in, inst), foreign)
			}
		}
		if len(pinned) == 0 && !maps.EqualFunc(after.Assigned, before.Assigned, slices.Equal) {
			t.Fatal("KeepPinned changed an output with nothing pinned")
		}
	})
}
