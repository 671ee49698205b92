package bench

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spate-go/coordination/internal/protocol"
)

// countCases are the count-only comparison cases (splits, members).
var countCases = [][2]int{{10_000, 100}, {100_000, 1_000}}

// TestCountOnlyPlans checks both balancers place every partition exactly once
// and give a joiner at least half the average count.
func TestCountOnlyPlans(t *testing.T) {
	n, m := 10_000, 100
	for _, shape := range []string{"fresh", "join"} {
		t.Run(shape, func(t *testing.T) {
			in := CountOnly(shape, n, m)
			ours := protocol.Assign(in)
			theirs, err := FranzGo(ToKafka(in))
			if err != nil {
				t.Fatal(err)
			}
			oursTotal, seen := 0, make([]bool, n)
			for _, l := range ours.Assigned {
				oursTotal += len(l)
			}
			for _, ps := range theirs {
				for _, p := range ps {
					if seen[p] {
						t.Fatalf("franz-go assigned partition %d twice", p)
					}
					seen[p] = true
				}
			}
			for p, ok := range seen {
				if !ok {
					t.Fatalf("franz-go left partition %d unassigned", p)
				}
			}
			if oursTotal != n {
				t.Fatalf("ours placed %d of %d", oursTotal, n)
			}
			if shape == "join" {
				avg := n / len(in.Members)
				if got := len(ours.Assigned[Joiner]); got < avg/2 {
					t.Errorf("ours: joiner got %d, average %d", got, avg)
				}
				if got := len(theirs[Joiner]); got < avg/2 {
					t.Errorf("franz-go: joiner got %d, average %d", got, avg)
				}
			}
		})
	}
}

// BenchmarkCountOnly compares Assign with franz-go's sticky Balance step
// (metadata parsed outside the timed loop) and with its full leader path
// (MemberBalancer + Balance).
//
//	GOMAXPROCS=1 go test -run '^$' -bench CountOnly -benchmem
func BenchmarkCountOnly(b *testing.B) {
	for _, c := range countCases {
		n, m := c[0], c[1]
		for _, shape := range []string{"fresh", "join"} {
			in := CountOnly(shape, n, m)
			k := ToKafka(in)
			b.Run(fmt.Sprintf("%s/%dx%d/ours", shape, n, m), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					protocol.Assign(in)
				}
			})
			b.Run(fmt.Sprintf("%s/%dx%d/franz-go-balance", shape, n, m), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					mb, _, err := kgo.StickyBalancer().MemberBalancer(k.Members)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(k.Topics); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/%dx%d/franz-go-leader", shape, n, m), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := FranzGo(k); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWeighted is the SPEC §31.1 benchmark of the root module's
// internal/protocol, repeated here on the inputs the script times.
func BenchmarkWeighted(b *testing.B) {
	for _, sz := range [][2]int{{1_000, 10}, {10_000, 100}, {100_000, 1_000}} {
		for _, shape := range []string{"unowned", "settled", "join"} {
			in := Weighted(shape, sz[0], sz[1])
			b.Run(fmt.Sprintf("%s/%dx%d", shape, sz[0], sz[1]), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					protocol.Assign(in)
				}
			})
		}
	}
}
