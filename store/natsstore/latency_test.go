package natsstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination/store"
)

// latencies measures n runs of op and returns them sorted.
func latencies(tb testing.TB, n int, op func(i int)) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		op(i)
		out[i] = time.Since(start)
	}
	slices.Sort(out)
	return out
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// measureOps measures Create, Update, Get and a watch round trip (write to
// event) n times each on st.
func measureOps(tb testing.TB, st *Store, n int) map[string][]time.Duration {
	tb.Helper()
	ctx := opCtx(tb)
	res := map[string][]time.Duration{}
	res["create"] = latencies(tb, n, func(i int) {
		if _, ok, err := st.Create(ctx, store.Durable, fmt.Sprintf("lat.c.%d", i), []byte("value")); !ok || err != nil {
			tb.Fatalf("create: ok=%v err=%v", ok, err)
		}
	})
	rev := mustCreate(tb, st, store.Ephemeral, "lat.u", "value")
	res["update"] = latencies(tb, n, func(int) {
		r, ok, err := st.Update(ctx, store.Ephemeral, "lat.u", []byte("value"), rev)
		if !ok || err != nil {
			tb.Fatalf("update: ok=%v err=%v", ok, err)
		}
		rev = r
	})
	// A durable key: the ephemeral one would expire a lease after the
	// last update while a loaded machine is still reading it.
	mustCreate(tb, st, store.Durable, "lat.g", "value")
	res["get"] = latencies(tb, n, func(int) {
		if _, ok, err := st.Get(ctx, store.Durable, "lat.g"); !ok || err != nil {
			tb.Fatalf("get: ok=%v err=%v", ok, err)
		}
	})
	w, err := st.Watch(tb.Context(), store.Ephemeral, "lat.rt")
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(tb, w, 5*time.Second); ev.Kind != store.SnapshotDone {
		tb.Fatalf("first event %v", ev.Kind)
	}
	rtRev := mustCreate(tb, st, store.Ephemeral, "lat.rt", "value")
	nextEvent(tb, w, 5*time.Second)
	res["watch round trip"] = latencies(tb, n, func(int) {
		r, ok, err := st.Update(ctx, store.Ephemeral, "lat.rt", []byte("value"), rtRev)
		if !ok || err != nil {
			tb.Fatalf("update: ok=%v err=%v", ok, err)
		}
		rtRev = r
		if ev := nextEvent(tb, w, 5*time.Second); ev.Entry.Revision != r {
			tb.Fatalf("event %+v, want revision %d", ev, r)
		}
	})
	return res
}

// TestLatencyBaseline reports p50 and p99 of each operation on a loopback
// server (the baseline later performance work compares against; run it
// without -race for real figures). It fails only on absurd latencies.
func TestLatencyBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("latency baseline skipped in -short mode")
	}
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync_always=%v", sync), func(t *testing.T) {
			st := storeFor(t, startServer(t, func(o *server.Options) { o.SyncAlways = sync }))
			logLatencies(t, measureOps(t, st, 300))
		})
	}
}

// logLatencies logs p50 and p99 of each operation and fails on absurd
// figures for loopback.
func logLatencies(t *testing.T, res map[string][]time.Duration) {
	t.Helper()
	for _, op := range []string{"create", "update", "get", "watch round trip"} {
		d := res[op]
		t.Logf("%-16s p50 %8s  p99 %8s  (n=%d)", op, percentile(d, 0.50).Round(time.Microsecond), percentile(d, 0.99).Round(time.Microsecond), len(d))
		if percentile(d, 0.50) > 250*time.Millisecond {
			t.Errorf("%s p50 %s on loopback", op, percentile(d, 0.50))
		}
	}
}

// BenchmarkOps reports p50 and p99 (microseconds) of each operation.
func BenchmarkOps(b *testing.B) {
	st := storeFor(b, startServer(b))
	n := max(b.N, 50)
	res := measureOps(b, st, n)
	for op, d := range res {
		unit := strings.ReplaceAll(op, " ", "-")
		b.ReportMetric(float64(percentile(d, 0.50).Microseconds()), unit+"-p50-µs")
		b.ReportMetric(float64(percentile(d, 0.99).Microseconds()), unit+"-p99-µs")
	}
}
