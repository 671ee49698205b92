package protocol

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/naming"
)

func TestResidualIDTable(t *testing.T) {
	long128 := strings.Repeat("a", 128)
	long122 := strings.Repeat("b", 122) // "_" + 123 bytes + "_1_1" = 128 bytes
	tests := []struct {
		name    string
		parent  coordination.SplitID
		epoch   uint64
		counter uint64
		want    coordination.SplitID
	}{
		{"short form", "orders-7", 3, 1, "_orders-7_3_1"},
		{"nested", "_orders-7_3_1", 5, 1, "__orders-7_3_1_5_1"},
		{"underscores in the parent", "a_1", 2, 10, "_a_1_2_10"},
		{"fits at the limit", coordination.SplitID(long122 + "x"), 1, 1, coordination.SplitID("_" + long122 + "x_1_1")},
		{"one byte over the limit", coordination.SplitID(long122 + "xx"), 1, 1, coordination.SplitID("_" + parentHash(coordination.SplitID(long122+"xx")) + "_1_1_h")},
		{"longest parent", coordination.SplitID(long128), math.MaxUint64 - 1, math.MaxUint64, coordination.SplitID("_" + parentHash(coordination.SplitID(long128)) + "_18446744073709551614_18446744073709551615_h")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ResidualID(tc.parent, tc.epoch, tc.counter)
			if got != tc.want {
				t.Fatalf("ResidualID(%q, %d, %d) = %q, want %q", tc.parent, tc.epoch, tc.counter, got, tc.want)
			}
			if len(got) > coordination.SplitIDMaxLen {
				t.Fatalf("%q is %d bytes", got, len(got))
			}
			if !IsResidualOf(got, tc.parent) {
				t.Fatalf("IsResidualOf(%q, %q) = false", got, tc.parent)
			}
		})
	}
	if got := len(ResidualID(coordination.SplitID(long128), math.MaxUint64-1, math.MaxUint64)); got != 77 {
		t.Fatalf("the longest long-form id is %d bytes, the protocol says 77", got)
	}
}

func TestParseResidualIDTable(t *testing.T) {
	hash := parentHash("p")
	tests := []struct {
		name string
		id   coordination.SplitID
		want ResidualName
		ok   bool
	}{
		{"short", "_orders-7_3_1", ResidualName{Parent: "orders-7", Epoch: 3, Counter: 1}, true},
		{"nested keeps its parent whole", "__orders-7_3_1_5_1", ResidualName{Parent: "_orders-7_3_1", Epoch: 5, Counter: 1}, true},
		{"long", coordination.SplitID("_" + hash + "_4_2_h"), ResidualName{ParentHash: hash, Epoch: 4, Counter: 2}, true},
		{"planner id", "orders-7", ResidualName{}, false},
		{"no leading underscore", "orders_3_1", ResidualName{}, false},
		{"leading zero", "_p_03_1", ResidualName{}, false},
		{"zero epoch", "_p_0_1", ResidualName{}, false},
		{"zero counter", "_p_1_0", ResidualName{}, false},
		{"empty parent", "__1_1", ResidualName{}, false},
		{"one number", "_p_1", ResidualName{}, false},
		{"epoch over uint64", "_p_18446744073709551616_1", ResidualName{}, false},
		{"long with a short hash", "_abc_1_1_h", ResidualName{}, false},
		{"long with upper-case hex", coordination.SplitID("_" + strings.ToUpper(hash) + "_1_1_h"), ResidualName{}, false},
		{"invalid byte", "_p.q_1_1", ResidualName{}, false},
		{"underscore alone", "_", ResidualName{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseResidualID(tc.id)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseResidualID(%q) = %+v, %v; want %+v, %v", tc.id, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// genCut draws the (parent, epoch, counter) of a cut: parents of any valid
// length (residual-form ones included), epochs and counters small or large.
func genCutName() *rapid.Generator[ResidualName] {
	return rapid.Custom(func(t *rapid.T) ResidualName {
		parent := rapid.OneOf(genSplitID(), rapid.Custom(func(t *rapid.T) coordination.SplitID {
			p := genSplitID().Draw(t, "grandparent")
			return ResidualID(p, rapid.Uint64Min(1).Draw(t, "pe"), rapid.Uint64Min(1).Draw(t, "pc"))
		})).Draw(t, "parent")
		n := rapid.OneOf(rapid.Uint64Range(1, 12), rapid.Uint64Min(1))
		return ResidualName{Parent: parent, Epoch: n.Draw(t, "epoch"), Counter: n.Draw(t, "counter")}
	})
}

// TestResidualIDProperties: every residual id is a valid split id of
// residual form that names its epoch and counter, parses back to its parent
// in the short form, and is used in the long form only when the short one
// would not fit.
func TestResidualIDProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCutName().Draw(t, "cut")
		id := ResidualID(c.Parent, c.Epoch, c.Counter)
		if reason := naming.Check("split id", string(id), coordination.SplitIDMaxLen); reason != "" {
			t.Fatalf("ResidualID(%q, %d, %d) = %q: %s", c.Parent, c.Epoch, c.Counter, id, reason)
		}
		n, ok := ParseResidualID(id)
		if !ok || n.Epoch != c.Epoch || n.Counter != c.Counter {
			t.Fatalf("ParseResidualID(%q) = %+v, %v; want epoch %d counter %d", id, n, ok, c.Epoch, c.Counter)
		}
		short := 1 + len(c.Parent) + 2 + len(decimal(c.Epoch)) + len(decimal(c.Counter))
		switch {
		case short <= coordination.SplitIDMaxLen && n.Parent != c.Parent:
			t.Fatalf("short-form %q parsed to parent %q, want %q", id, n.Parent, c.Parent)
		case short > coordination.SplitIDMaxLen && n.ParentHash != parentHash(c.Parent):
			t.Fatalf("long-form %q for a %d-byte short form: hash %q", id, short, n.ParentHash)
		}
		if !IsResidualOf(id, c.Parent) {
			t.Fatalf("IsResidualOf(%q, %q) = false", id, c.Parent)
		}
	})
}

// TestResidualIDInjective: distinct (parent, epoch, counter) give distinct
// ids, and an id is the residual of one parent only. Parents are drawn from
// a small alphabet so that near misses (shared prefixes, underscores that
// shift fields) are common.
func TestResidualIDInjective(t *testing.T) {
	small := rapid.Custom(func(t *rapid.T) coordination.SplitID {
		return coordination.SplitID(rapid.StringMatching(`[a_1]{1,6}|[a_1]{120,128}`).Draw(t, "p"))
	})
	num := rapid.Uint64Range(1, 12)
	rapid.Check(t, func(t *rapid.T) {
		p1, p2 := small.Draw(t, "p1"), small.Draw(t, "p2")
		e1, e2, c1, c2 := num.Draw(t, "e1"), num.Draw(t, "e2"), num.Draw(t, "c1"), num.Draw(t, "c2")
		id1, id2 := ResidualID(p1, e1, c1), ResidualID(p2, e2, c2)
		same := p1 == p2 && e1 == e2 && c1 == c2
		if same != (id1 == id2) {
			t.Fatalf("(%q,%d,%d) -> %q and (%q,%d,%d) -> %q", p1, e1, c1, id1, p2, e2, c2, id2)
		}
		if p1 != p2 && IsResidualOf(id1, p2) {
			t.Fatalf("%q, residual of %q, also passes as a residual of %q", id1, p1, p2)
		}
	})
}

// TestResidualFormCanonical: any id of residual form is spelled exactly as
// its parts derive it (short form) or re-spell (long form), so two spellings
// of one cut cannot exist; planner-style ids never have residual form.
func TestResidualFormCanonical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := coordination.SplitID(rapid.StringMatching(`_[a-f0-9_]{1,40}(_h)?|[a-z][a-z0-9_-]{0,20}`).Draw(t, "id"))
		n, ok := ParseResidualID(id)
		if !ok {
			return
		}
		if id[0] != '_' {
			t.Fatalf("%q has residual form without a leading underscore", id)
		}
		if n.Parent != "" {
			if got := ResidualID(n.Parent, n.Epoch, n.Counter); got != id {
				t.Fatalf("%q parses to %+v, which derives %q", id, n, got)
			}
			return
		}
		if got := residualForm(n.ParentHash, n.Epoch, n.Counter, residualLongSuffix); coordination.SplitID(got) != id {
			t.Fatalf("%q parses to %+v, which spells %q", id, n, got)
		}
	})
}

func TestResidualIDPanicsOnZero(t *testing.T) {
	for _, tc := range []struct {
		name           string
		epoch, counter uint64
	}{{"epoch 0", 0, 1}, {"counter 0", 1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			ResidualID("p", tc.epoch, tc.counter)
		})
	}
}

func decimal(v uint64) string { return strconv.FormatUint(v, 10) }
