package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestLatchFirstFailureWins: a latch is not halted until it fires, then
// halted for good with the first failure; a later one changes nothing.
func TestLatchFirstFailureWins(t *testing.T) {
	l := NewLatch()
	if l.Halted() || l.Failure() != nil {
		t.Fatalf("new latch: halted %v, failure %v", l.Halted(), l.Failure())
	}
	first := coordination.Errorf(coordination.Fatal, "first")
	l.Fire(first)
	l.Fire(coordination.Errorf(coordination.Fatal, "second"))
	if !l.Halted() || l.Failure() != first {
		t.Fatalf("fired: halted %v, failure %v; want halted with %v", l.Halted(), l.Failure(), first)
	}
	v := &Env{Latch: l}
	if !v.Halted() || v.Failure() != first {
		t.Fatalf("Env reads halted %v, failure %v; want its latch's", v.Halted(), v.Failure())
	}
}

// TestGuardedStoreRefusesWritesOnceTheLatchFired: no write slips out after
// a failure: the guarded store checks the latch before each write and
// refuses it (Retryable, "write not issued"), while reads still go.
func TestGuardedStoreRefusesWritesOnceTheLatchFired(t *testing.T) {
	ctx := context.Background()
	raw := memstore.New(coordination.DefaultConfig().LeaseDuration)
	l := NewLatch()
	g := &GuardedStore{Store: raw, Latch: l}
	rev, ok, err := g.Create(ctx, store.Durable, "k", []byte("1"))
	if err != nil || !ok {
		t.Fatalf("create before the failure: %v, %v", ok, err)
	}
	l.Fire(coordination.Errorf(coordination.Fatal, "boom"))
	writes := map[string]func() error{
		"create": func() error { _, _, err := g.Create(ctx, store.Durable, "k2", []byte("1")); return err },
		"update": func() error { _, _, err := g.Update(ctx, store.Durable, "k", []byte("2"), rev); return err },
		"delete": func() error { _, err := g.Delete(ctx, store.Durable, "k", rev); return err },
		"update tx": func() error {
			_, _, err := g.UpdateTx(ctx, store.Durable, "k", []byte("2"), rev, nil)
			return err
		},
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, errHalted) {
			t.Errorf("%s after the failure: %v, want %v", name, err, errHalted)
		}
	}
	e, ok, err := g.Get(ctx, store.Durable, "k")
	if err != nil || !ok || string(e.Value) != "1" || e.Revision != rev {
		t.Fatalf("read after the failure: %+v, %v, %v; want the record unchanged", e, ok, err)
	}
}

// TestOutboxReportsTheFailureAfterEveryEarlierEvent (E8): the events
// queued before the latch fired are taken first, then the failure; an
// event pushed after it is dropped; the driver is woken when it fires.
func TestOutboxReportsTheFailureAfterEveryEarlierEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLatch()
		o := NewOutbox(l)
		w := coordination.NewWaker()
		o.SetWaker(w)
		o.Push(coordination.Lost{Split: "a"})
		<-w.C()
		boom := coordination.Errorf(coordination.Fatal, "boom")
		l.Fire(boom)
		<-w.C() // woken by the latch (AfterFire), not by an event
		o.Push(coordination.Lost{Split: "b"})
		evs, err := o.Take()
		if err != nil || len(evs) != 1 || evs[0] != (coordination.Lost{Split: "a"}) {
			t.Fatalf("first take: %v, %v; want the event queued before the failure", evs, err)
		}
		if evs, err := o.Take(); len(evs) != 0 || err != boom {
			t.Fatalf("second take: %v, %v; want the failure alone", evs, err)
		}
	})
}

// TestOutboxNoEventAfterTheFailureWhileFiring: with pushes racing the
// latch, once Take reported the failure no event is ever taken after it.
func TestOutboxNoEventAfterTheFailureWhileFiring(t *testing.T) {
	boom := coordination.Errorf(coordination.Fatal, "boom")
	for range 50 {
		l := NewLatch()
		o := NewOutbox(l)
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 200 {
				o.Push(coordination.Lost{Split: "a"})
			}
		})
		wg.Go(func() { l.Fire(boom) })
		for {
			if _, err := o.Take(); err != nil {
				break
			}
		}
		wg.Wait()
		if evs, err := o.Take(); len(evs) > 0 || err != boom {
			t.Fatalf("after the failure was reported: %v, %v; want the failure alone", evs, err)
		}
	}
}
