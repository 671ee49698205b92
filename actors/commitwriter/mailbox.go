package commitwriter

import (
	"context"
	"sync"
)

// mailbox is the inbox of an actor that runs outside the hollywood engine:
// a shard of the commit writer (commitwriter.go). Messages are processed
// one at a time, in the order they were posted, by whoever holds the turn:
// the shard's own goroutine, or a sender that found the mailbox idle and
// empty and processes its one message on its own goroutine (tryTurn). The
// second way is why the commit writer is not a hollywood actor: a hop to
// another goroutine and back costs two thread wake-ups on every commit
// (docs/architecture.md, "The commit path").
type mailbox struct {
	mu    sync.Mutex
	queue []any
	busy  bool          // someone holds the turn
	bell  chan struct{} // capacity 1: wakes the shard's goroutine
}

func newMailbox() *mailbox { return &mailbox{bell: make(chan struct{}, 1)} }

// post appends msg for the shard's goroutine.
func (m *mailbox) post(msg any) {
	m.mu.Lock()
	m.queue = append(m.queue, msg)
	m.mu.Unlock()
	m.ring()
}

func (m *mailbox) ring() {
	select {
	case m.bell <- struct{}{}:
	default:
	}
}

// tryTurn takes the turn if the mailbox is idle and empty, so that nothing
// posted earlier is overtaken. The caller then processes one message and
// calls endTurn.
func (m *mailbox) tryTurn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy || len(m.queue) > 0 {
		return false
	}
	m.busy = true
	return true
}

// endTurn gives the turn back; what was posted meanwhile goes to the
// shard's goroutine.
func (m *mailbox) endTurn() {
	m.mu.Lock()
	m.busy = false
	more := len(m.queue) > 0
	m.mu.Unlock()
	if more {
		m.ring()
	}
}

// next waits until it holds the turn with messages to process and returns
// them, oldest first; the caller calls endTurn once it processed them. It
// returns nil when ctx ends.
func (m *mailbox) next(ctx context.Context) []any {
	for {
		m.mu.Lock()
		if !m.busy && len(m.queue) > 0 {
			batch := m.queue
			m.queue, m.busy = nil, true
			m.mu.Unlock()
			return batch
		}
		m.mu.Unlock()
		select {
		case <-m.bell:
		case <-ctx.Done():
			return nil
		}
	}
}
