package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// A schema setup that takes longer than the operation that started it
// (here: another session holds the job's setup lock) goes on once that
// operation gave up, and the store is ready without another operation; a
// setup cancelled with each short operation never got there on a loaded
// server.
func TestASlowSetupOutlivesTheOperationThatStartedIt(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	st := newStore(t, s, Config{}, 4*time.Second)
	release := holdInTx(t, s, st.sc.sql("SELECT pg_catalog.pg_advisory_xact_lock({lock})"))

	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := st.List(short, store.Durable, ""); coordination.KindOf(err) != coordination.Retryable {
		t.Fatalf("List while the setup waits for the lock: %v, want Retryable", err)
	}
	release()
	waitFor(t, 10*time.Second, "the setup to finish with no operation waiting", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.ready
	})
	if _, err := st.List(opCtx(t), store.Durable, ""); err != nil {
		t.Fatalf("List once the setup finished: %v", err)
	}
}
