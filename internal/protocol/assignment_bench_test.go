package protocol

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
)

// The three shapes of SPEC §31.1, at 1k×10, 10k×100 and 100k×1000 (splits ×
// members). Weights are 1..100, fixed pseudo-random; budgets never bind. Split
// ids are zero-padded and listed in id order, as a store listing returns them
// (an unsorted list adds one O(n log n) sort of the ids).
//
//	GOMAXPROCS=1 go test -run '^$' -bench Assign -benchmem ./internal/protocol/

// benchSizes are the (splits, members) pairs benchmarked.
var benchSizes = [][2]int{{1_000, 10}, {10_000, 100}, {100_000, 1_000}}

// unownedInput is n runnable splits, none owned, over m members.
func unownedInput(n, m int) AssignInput {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(m)))
	in := AssignInput{DefaultCap: 4*n/m + 1, FP: Fingerprint("bench"), Splits: make([]AssignSplit, n)}
	for i := range m {
		in.Members = append(in.Members, fmt.Sprintf("spate-%032x", i)) // as actors.Spawn generates
	}
	for i := range in.Splits {
		in.Splits[i] = AssignSplit{ID: coordination.SplitID(fmt.Sprintf("s%07d", i)), Weight: 1 + rng.Uint64N(100), HasSpec: true}
	}
	return in
}

// settledInput is unownedInput fed back until it is a fixpoint, and its output.
func settledInput(tb testing.TB, n, m int) (AssignInput, AssignOutput) {
	tb.Helper()
	in := unownedInput(n, m)
	out := Assign(in)
	for range 100 {
		in = asgFeedBack(in, out)
		next := Assign(in)
		if next.Moves == 0 && reflect.DeepEqual(next.Assigned, out.Assigned) {
			return in, out
		}
		out = next
	}
	tb.Fatalf("%dx%d: no fixpoint after 100 evaluations", n, m)
	return in, out
}

// joinInput is a settled fleet plus one member with nothing.
func joinInput(tb testing.TB, n, m int) AssignInput {
	tb.Helper()
	in, _ := settledInput(tb, n, m)
	in.Members = append(in.Members, "w-joiner")
	return in
}

// checkJoin asserts the joiner received at least half the average load.
func checkJoin(tb testing.TB, in AssignInput, out AssignOutput) {
	tb.Helper()
	loads := asgLoads(in, out)
	var total uint64
	for _, l := range loads {
		total += l
	}
	avg := total / uint64(len(out.Assigned))
	if got := loads["w-joiner"]; got < avg/2 {
		tb.Fatalf("joiner has load %d, want at least half the average %d", got, avg)
	}
}

// TestAssignShapes checks the benchmark shapes' promises at the smallest size:
// a settled fleet moves nothing and a joiner gets at least half the average.
func TestAssignShapes(t *testing.T) {
	for _, sz := range benchSizes[:2] {
		n, m := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", n, m), func(t *testing.T) {
			checkAssignShape(t, unownedInput(n, m), Assign(unownedInput(n, m)))
			in, want := settledInput(t, n, m)
			if got := Assign(in); got.Moves != 0 || !reflect.DeepEqual(got, want) {
				t.Fatalf("settled fleet: %d moves", got.Moves)
			}
			join := joinInput(t, n, m)
			out := Assign(join)
			checkAssignShape(t, join, out)
			checkAssignOptimal(t, join, out)
			checkJoin(t, join, out)
		})
	}
}

func BenchmarkAssign(b *testing.B) {
	for _, sz := range benchSizes {
		n, m := sz[0], sz[1]
		b.Run(fmt.Sprintf("unowned/%dx%d", n, m), func(b *testing.B) {
			in := unownedInput(n, m)
			b.ReportAllocs()
			for b.Loop() {
				Assign(in)
			}
		})
		b.Run(fmt.Sprintf("settled/%dx%d", n, m), func(b *testing.B) {
			in, _ := settledInput(b, n, m)
			b.ReportAllocs()
			for b.Loop() {
				if out := Assign(in); out.Moves != 0 {
					b.Fatalf("settled fleet moved %d splits", out.Moves)
				}
			}
		})
		b.Run(fmt.Sprintf("join/%dx%d", n, m), func(b *testing.B) {
			in := joinInput(b, n, m)
			checkJoin(b, in, Assign(in))
			b.ReportAllocs()
			for b.Loop() {
				Assign(in)
			}
		})
	}
}
