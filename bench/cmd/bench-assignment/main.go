// Command bench-assignment times the assignment function in the benchmark
// shapes (unowned, settled, join), and against franz-go's sticky balancer on
// count-only input, printing one line per case with the median of several runs (the
// franz-go part only on the count-only cases):
//
//	assignment <shape> <n>x<m>: ours <ms> ms[, franz-go <ms> ms, ratio <r>]
//
// Times are process CPU time by default (-clock=cpu): on one core
// (GOMAXPROCS=1) that is the evaluation's cost on one core, and unlike wall
// time it does not depend on what else the machine runs. -clock=wall measures
// wall time instead. By default (-franz=balance) the franz-go figure is its
// Balance step only, excluding the join-group metadata parse
// (MemberBalancer), which favours franz-go; -franz=leader times both.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/spate-go/coordination/bench"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	runs := flag.Int("runs", 7, "timed runs per case; the median is printed")
	clock := flag.String("clock", "cpu", "what to measure: cpu (process CPU time) or wall")
	quick := flag.Bool("quick", false, "skip the 100k×1000 cases")
	franz := flag.String("franz", "balance", "franz-go step to time: balance (Balance alone) or leader (MemberBalancer + Balance)")
	flag.Parse()
	now := cpuTime
	switch *clock {
	case "cpu":
	case "wall":
		start := time.Now()
		now = func() time.Duration { return time.Since(start) }
	default:
		fmt.Fprintf(os.Stderr, "bench-assignment: -clock must be cpu or wall, got %q\n", *clock)
		os.Exit(2)
	}
	if *franz != "balance" && *franz != "leader" {
		fmt.Fprintf(os.Stderr, "bench-assignment: -franz must be balance or leader, got %q\n", *franz)
		os.Exit(2)
	}
	if *runs < 1 {
		*runs = 1
	}
	sizes := [][2]int{{1_000, 10}, {10_000, 100}, {100_000, 1_000}}
	if *quick {
		sizes = sizes[:2]
	}
	for _, sz := range sizes {
		n, m := sz[0], sz[1]
		for _, shape := range []string{"unowned", "settled", "join"} {
			in := bench.Weighted(shape, n, m)
			ours := median(*runs, now, func() { protocol.Assign(in) })
			fmt.Printf("assignment %s %dx%d: ours %s ms\n", shape, n, m, ms(ours))
		}
	}
	for _, sz := range sizes[1:] {
		n, m := sz[0], sz[1]
		for _, shape := range []string{"fresh", "join"} {
			in := bench.CountOnly(shape, n, m)
			k := bench.ToKafka(in)
			if err := check(in, k); err != nil {
				fmt.Fprintf(os.Stderr, "bench-assignment: count-%s %dx%d: %v\n", shape, n, m, err)
				os.Exit(1)
			}
			ours := median(*runs, now, func() { protocol.Assign(in) })
			theirs := medianFranz(*runs, now, k, *franz == "leader")
			fmt.Printf("assignment count-%s %dx%d: ours %s ms, franz-go %s ms, ratio %.2f\n",
				shape, n, m, ms(ours), ms(theirs), float64(ours)/float64(theirs))
		}
	}
}

// check verifies both sides place every partition exactly once and, in the
// join shape, give the joiner at least half the average count.
func check(in protocol.AssignInput, k bench.Kafka) error {
	ours := protocol.Assign(in)
	theirs, err := bench.FranzGo(k)
	if err != nil {
		return err
	}
	n := len(in.Splits)
	total, joiner := 0, len(ours.Assigned[bench.Joiner])
	for _, l := range ours.Assigned {
		total += len(l)
	}
	seen := make([]bool, n)
	for _, ps := range theirs {
		for _, p := range ps {
			if seen[p] {
				return fmt.Errorf("franz-go assigned partition %d twice", p)
			}
			seen[p] = true
		}
	}
	if total != n || slices.Contains(seen, false) {
		return fmt.Errorf("not every split placed: ours %d of %d", total, n)
	}
	if slices.Contains(in.Members, bench.Joiner) {
		avg := n / len(in.Members)
		if joiner < avg/2 || len(theirs[bench.Joiner]) < avg/2 {
			return fmt.Errorf("joiner got %d (franz-go %d), average %d", joiner, len(theirs[bench.Joiner]), avg)
		}
	}
	return nil
}

// median times f runs times (after a GC each) and returns the median.
func median(runs int, now func() time.Duration, f func()) time.Duration {
	ds := make([]time.Duration, runs)
	for i := range ds {
		runtime.GC()
		start := now()
		f()
		ds[i] = now() - start
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// medianFranz times franz-go's Balance step, on a fresh balancer each run;
// with leader, the metadata parse before it (MemberBalancer) is timed too.
func medianFranz(runs int, now func() time.Duration, k bench.Kafka, leader bool) time.Duration {
	ds := make([]time.Duration, runs)
	for i := range ds {
		runtime.GC()
		parse := now()
		mb, _, err := kgo.StickyBalancer().MemberBalancer(k.Members)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-assignment: franz-go: %v\n", err)
			os.Exit(1)
		}
		b := mb.(kgo.GroupMemberBalancerOrError)
		start := now()
		if _, err := b.BalanceOrError(k.Topics); err != nil {
			fmt.Fprintf(os.Stderr, "bench-assignment: franz-go: %v\n", err)
			os.Exit(1)
		}
		ds[i] = now() - start
		if leader {
			ds[i] = now() - parse
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
