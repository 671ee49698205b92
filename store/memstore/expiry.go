package memstore

import (
	"container/heap"
	"time"

	"github.com/spate-go/coordination/store"
)

// expiry is the deadline of one ephemeral write. It is stale, and ignored,
// once the key has been rewritten or deleted (its live revision is no longer
// rev).
type expiry struct {
	deadline time.Time
	key      string
	rev      store.Revision
}

// expiryHeap is a min-heap of expiries by deadline (container/heap).
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// pushExpiryLocked records the deadline of an ephemeral write and makes sure
// the timer fires by the earliest deadline.
func (s *Store) pushExpiryLocked(now time.Time, e expiry) {
	heap.Push(&s.expiries, e)
	s.rearmLocked(now)
}

// expireLocked deletes every ephemeral entry whose deadline is at or before
// now (equality counts as expired), publishing each Delete, then re-arms the
// timer for the next deadline.
func (s *Store) expireLocked(now time.Time) {
	s.popExpiredLocked(now)
	s.rearmLocked(now)
}

// popExpiredLocked is expireLocked without re-arming.
func (s *Store) popExpiredLocked(now time.Time) {
	sp := s.space(store.Ephemeral)
	for len(s.expiries) > 0 && !now.Before(s.expiries[0].deadline) {
		x := heap.Pop(&s.expiries).(expiry)
		if e, live := sp.entries[x.key]; live && e.rev == x.rev {
			s.deleteLocked(store.Ephemeral, x.key)
		}
	}
}

// rearmLocked keeps one clock timer armed for the earliest pending deadline,
// or none when nothing is pending. now is the clock time the caller read under
// s.mu, and every deadline before or at now has been popped.
//
// A clock timer is armed relative to the clock's time when it is created. A
// hand-advanced clock (one with an Add method, such as *clock.Mock) can be
// advanced by another goroutine between our reading of now and the timer's
// creation, which would make the timer fire late, possibly after the test
// stopped advancing; for such a clock the time is therefore read again after
// arming, and if it moved, the due entries are expired and the timer is armed
// afresh. A real clock's drift of a few microseconds is harmless.
func (s *Store) rearmLocked(now time.Time) {
	for {
		if len(s.expiries) == 0 {
			s.disarmLocked()
			return
		}
		next := s.expiries[0].deadline
		if s.timer != nil && s.timerAt.Equal(next) {
			return
		}
		s.disarmLocked()
		s.timerGen++
		gen := s.timerGen
		s.timer = s.clock.AfterFunc(next.Sub(now), func() { s.sweep(gen) })
		s.timerAt = next
		if !s.exactTimers {
			return
		}
		later := s.clock.Now()
		if later.Equal(now) {
			return
		}
		s.disarmLocked()
		now = later
		s.popExpiredLocked(now)
	}
}

// disarmLocked stops the expiry timer, if any.
func (s *Store) disarmLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// sweep is the expiry timer's callback: it publishes the Delete of every
// entry that expired untouched and re-arms the timer. gen identifies the timer
// that fired, so that a callback of a timer stopped too late to be cancelled
// does not forget the timer armed after it.
func (s *Store) sweep(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if gen == s.timerGen {
		s.timer = nil
	}
	s.expireLocked(s.clock.Now())
}
