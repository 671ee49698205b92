package natsstore

import (
	"fmt"
	"path"
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
	srv := startServer(t)
	var jobs atomic.Int64
	storetest.Run(t, func(t *testing.T, leaseTTL time.Duration) store.Store {
		switch path.Base(t.Name()) {
		case "WatchNoGapRacingStart", "PropertyWatchReplayMatchesList":
			// These two checks require every revision written after a
			// watch started to be delivered. A NATS KV bucket keeps one
			// message per key (history 1, SPEC §25.3), so a revision
			// superseded before the watch's consumer reaches it is gone
			// from the stream and only the later one arrives.
			// TestWatchNoGapForLatestState checks what NATS does promise.
			t.Skip("NATS KV with history 1 skips revisions superseded before delivery; see TestWatchNoGapForLatestState")
		}
		st, err := New(Config{Servers: []string{srv.ClientURL()}, Job: fmt.Sprintf("conf%d", jobs.Add(1))}, leaseTTL)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
}
