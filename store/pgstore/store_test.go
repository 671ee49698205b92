package pgstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/pgtest"
)

// TestCloseLetsACatchUpInFlightFinish closes the store while a watch's
// catch-up is in flight: Close waits for it, and the pool keeps the
// connection. A cancelled statement would cost it, and a cancel request
// to the server that closing the pool waits for.
func TestCloseLetsACatchUpInFlightFinish(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	b := newBlockedCatchUp(t, s, opCtx(t), testTTL)
	closed := make(chan struct{})
	go func() {
		_ = b.st.Close()
		close(closed)
	}()
	<-b.st.done // Close began
	b.release()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s")
	}
	if err := endOf(t, b.w, 5*time.Second); err != nil {
		t.Fatalf("the watch ended with %v, want nil (the store was closed)", err)
	}
	if n := b.closed.Load(); n != 0 {
		t.Fatalf("the pool closed %d connections, want 0: Close aborted the catch-up", n)
	}
}
