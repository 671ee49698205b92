package pgstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/storetest"
)

// TestConformance runs the store conformance suite, the linearizability
// check included, on the shared server with the suite's 2s lease TTL. Each
// store gets a job (a schema) of its own, so it starts empty.
func TestConformance(t *testing.T) {
	s := pgtest.Need(t, srv)
	storetest.Run(t, func(t *testing.T, leaseTTL time.Duration) store.Store {
		st, err := New(Config{DSN: s.DSN("postgres"), Job: pgtest.UniqueName("conf")}, leaseTTL)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
}
