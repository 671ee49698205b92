package worker

import (
	"context"
	"testing"
)

// TestBacklogPendingCountsCreditsOut checks the watch backlog's count: a
// pump's taken credits and a route's added ones are out until an actor
// handled them.
func TestBacklogPendingCountsCreditsOut(t *testing.T) {
	var b Backlog
	if !b.Take(context.Background(), 3) {
		t.Fatal("Take refused with every credit free")
	}
	b.add(2)
	if got := b.Pending(); got != 5 {
		t.Fatalf("Pending = %d after taking 3 and adding 2, want 5", got)
	}
	b.done(4)
	if got := b.Pending(); got != 1 {
		t.Fatalf("Pending = %d after 4 were handled, want 1", got)
	}
}
