package memstore

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination/store"
)

func TestExpiryIsAtWriteTimePlusTTL(t *testing.T) {
	st, clk := newMock(t)
	mustCreate(t, st, store.Ephemeral, "k", "v")
	mustCreate(t, st, store.Durable, "k", "v")
	clk.Add(ttl - time.Nanosecond)
	if !isLive(t, st, store.Ephemeral, "k") {
		t.Fatal("expired before t+TTL")
	}
	clk.Add(time.Nanosecond)
	if isLive(t, st, store.Ephemeral, "k") {
		t.Fatal("live at exactly t+TTL; equality must count as expired")
	}
	if !isLive(t, st, store.Durable, "k") {
		t.Fatal("the durable key of the same name expired")
	}
	mustCreate(t, st, store.Ephemeral, "k", "again")
}

func TestUpdateRearmsTTL(t *testing.T) {
	st, clk := newMock(t)
	rev := mustCreate(t, st, store.Ephemeral, "k", "v")
	for range 5 { // renew every TTL/2 for 2.5 TTLs
		clk.Add(ttl / 2)
		rev = mustUpdate(t, st, store.Ephemeral, "k", "v", rev)
	}
	clk.Add(ttl - time.Nanosecond)
	if !isLive(t, st, store.Ephemeral, "k") {
		t.Fatal("expired before the last update's t+TTL")
	}
	clk.Add(time.Nanosecond)
	if isLive(t, st, store.Ephemeral, "k") {
		t.Fatal("live at the last update's t+TTL")
	}
}

// An untouched entry's expiry reaches a watcher as soon as the mock clock is
// advanced to the deadline: synctest.Wait is enough, nothing polls.
func TestExpiryReachesWatcherOnMockClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, clk := newMock(t)
		rev := mustCreate(t, st, store.Ephemeral, "k", "v")
		clk.Add(ttl / 2)
		mustCreate(t, st, store.Ephemeral, "later", "v")
		w, _ := mustWatch(t, st, store.Ephemeral, "")

		clk.Add(ttl/2 - time.Nanosecond)
		synctest.Wait()
		if evs, _ := pending(w); len(evs) != 0 {
			t.Fatalf("%d events before the deadline; want none", len(evs))
		}
		clk.Add(time.Nanosecond)
		synctest.Wait()
		evs, _ := pending(w)
		if len(evs) != 1 || evs[0].Kind != store.Delete || evs[0].Entry.Key != "k" || evs[0].Entry.Revision <= rev {
			t.Fatalf("events at the deadline %+v; want one Delete of k above revision %d", evs, rev)
		}
		clk.Add(ttl / 2) // the second key's deadline: the timer was re-armed
		synctest.Wait()
		if evs, _ := pending(w); len(evs) != 1 || evs[0].Entry.Key != "later" || evs[0].Kind != store.Delete {
			t.Fatalf("events at the second deadline %+v; want one Delete of later", evs)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// With the real clock, expiry runs on a time.AfterFunc timer; inside a
// bubble its time is fake, so this costs no real waiting.
func TestExpiryReachesWatcherOnRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := New(ttl)
		defer st.Close()
		mustCreate(t, st, store.Ephemeral, "k", "v")
		w, _ := mustWatch(t, st, store.Ephemeral, "")
		time.Sleep(ttl - time.Nanosecond)
		synctest.Wait()
		if evs, _ := pending(w); len(evs) != 0 {
			t.Fatalf("%d events before the deadline; want none", len(evs))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if evs, _ := pending(w); len(evs) != 1 || evs[0].Kind != store.Delete {
			t.Fatalf("events at the deadline %+v; want one Delete", evs)
		}
	})
}

// frozenTimers is a mock clock whose timers never fire, so that only the
// operations themselves can expire entries.
type frozenTimers struct {
	*clock.Mock
	idle *clock.Mock // never advanced
}

func (f frozenTimers) AfterFunc(d time.Duration, fn func()) *clock.Timer {
	return f.idle.AfterFunc(d, fn)
}

func TestOperationsExpireFirst(t *testing.T) {
	ctx := context.Background()
	ops := map[string]func(st *Store){
		"create": func(st *Store) { st.Create(ctx, store.Durable, "x", nil) },
		"update": func(st *Store) { st.Update(ctx, store.Durable, "x", nil, 1) },
		"get":    func(st *Store) { st.Get(ctx, store.Durable, "x") },
		"delete": func(st *Store) { st.Delete(ctx, store.Durable, "x", 0) },
		"list":   func(st *Store) { st.List(ctx, store.Durable, "") },
		"watch": func(st *Store) {
			w, snap := mustWatch(t, st, store.Ephemeral, "")
			if len(snap) != 0 {
				t.Errorf("snapshot holds expired %+v", snap)
			}
			w.Stop()
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewMock()
			st := New(ttl, WithClock(frozenTimers{clk, clock.NewMock()}))
			defer st.Close()
			rev := mustCreate(t, st, store.Ephemeral, "k", "v")
			w, _ := mustWatch(t, st, store.Ephemeral, "")
			clk.Add(ttl)
			if evs, _ := pending(w); len(evs) != 0 {
				t.Fatalf("frozen timers published %+v", evs)
			}
			op(st) // an operation on the other keyspace still expires first
			evs, _ := pending(w)
			if len(evs) != 1 || evs[0].Kind != store.Delete || evs[0].Entry.Key != "k" || evs[0].Entry.Revision <= rev {
				t.Fatalf("after %s the watcher has %+v; want the Delete of k", name, evs)
			}
		})
	}
}

// jumpyClock is a mock clock that another goroutine advances by jump just
// as the store arms its expiry timer, once.
type jumpyClock struct {
	*clock.Mock
	jump *time.Duration
}

func (j jumpyClock) AfterFunc(d time.Duration, fn func()) *clock.Timer {
	if *j.jump > 0 {
		by := *j.jump
		*j.jump = 0
		j.Mock.Add(by)
	}
	return j.Mock.AfterFunc(d, fn)
}

// The clock moving while the timer is armed must not delay the expiry past
// its deadline.
func TestExpiryTimerSurvivesClockJumpWhileArming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		jump := time.Duration(0)
		st := New(ttl, WithClock(jumpyClock{clk, &jump}))
		defer st.Close()
		w, _ := mustWatch(t, st, store.Ephemeral, "")
		jump = ttl / 2
		mustCreate(t, st, store.Ephemeral, "k", "v") // arms the timer; the clock jumps to ttl/2
		clk.Add(ttl/2 - time.Nanosecond)
		synctest.Wait()
		if evs, _ := pending(w); len(evs) != 1 || evs[0].Kind != store.Put {
			t.Fatalf("events before the deadline %+v; want only the Put", evs)
		}
		clk.Add(time.Nanosecond) // exactly the deadline
		synctest.Wait()
		if evs, _ := pending(w); len(evs) != 1 || evs[0].Kind != store.Delete {
			t.Fatalf("events at the deadline %+v; want the expiry's Delete", evs)
		}
	})
}
