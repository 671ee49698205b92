package natsstore

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/storetest"
)

// TestConformance runs the store conformance suite against one embedded
// server with a 2s lease TTL. Each store gets a job of its own, so its
// buckets start empty.
func TestConformance(t *testing.T) {
	conform(t, 0)
}

// TestConformanceWithHistory runs the suite on state buckets that keep 64
// revisions per key (Config.History), as audited jobs do: a deeper history
// must not change what the store contract promises.
func TestConformanceWithHistory(t *testing.T) {
	conform(t, 64)
}

// conform runs the suite with the given history depth.
func conform(t *testing.T, history int) {
	srv := startServer(t)
	var jobs atomic.Int64
	storetest.Run(t, func(t *testing.T, leaseTTL time.Duration) store.Store {
		st, err := New(Config{Servers: []string{srv.ClientURL()}, Job: fmt.Sprintf("conf%d", jobs.Add(1)), History: history}, leaseTTL)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
}
