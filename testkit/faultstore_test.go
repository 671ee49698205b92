package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

func newFaultStore(t *testing.T) (*FaultStore, *memstore.Store) {
	t.Helper()
	inner := memstore.New(time.Second, memstore.WithClock(clock.NewMock()))
	t.Cleanup(func() { _ = inner.Close() })
	return NewFaultStore(inner), inner
}

func wantRetryable(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *coordination.Error
	if !errors.As(err, &ce) || ce.Kind != coordination.Retryable || ce.Reason != reason {
		t.Fatalf("err = %v, want Retryable %q", err, reason)
	}
}

func TestFaultStoreDropNextWrite(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		match Match
		write func(s store.Store) error
	}{
		{"create", Match{Prefix: "split."}, func(s store.Store) error {
			_, _, err := s.Create(ctx, store.Durable, "split.a", []byte(`{"owner":null}`))
			return err
		}},
		{"update with value predicate", Match{Prefix: "split.", Ops: OpUpdate, Value: OwnerNull()}, func(s store.Store) error {
			_, _, err := s.Update(ctx, store.Durable, "split.b", []byte(`{"owner":null}`), 1)
			return err
		}},
		{"delete", Match{Keyspace: store.Ephemeral, Prefix: "split.", Ops: OpDelete}, func(s store.Store) error {
			_, err := s.Delete(ctx, store.Ephemeral, "split.c", 0)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, inner := newFaultStore(t)
			// Seed split.b (rev 1) and the ephemeral split.c.
			if _, ok, err := inner.Create(ctx, store.Durable, "split.b", []byte(`{"owner":"w1"}`)); !ok || err != nil {
				t.Fatalf("seed: %v %v", ok, err)
			}
			if _, ok, err := inner.Create(ctx, store.Ephemeral, "split.c", []byte(`x`)); !ok || err != nil {
				t.Fatalf("seed: %v %v", ok, err)
			}
			before, _ := inner.List(ctx, tt.match.Keyspace, "")
			f := fs.DropNextWrite(tt.match)
			wantRetryable(t, tt.write(fs), "injected: write dropped")
			if !f.Fired() {
				t.Fatal("fault did not report Fired")
			}
			after, _ := inner.List(ctx, tt.match.Keyspace, "")
			if !sameEntries(before, after) {
				t.Fatalf("a dropped write changed the store: %v -> %v", before, after)
			}
			// Disarmed: the same write now goes through.
			if err := tt.write(fs); err != nil {
				t.Fatalf("second write: %v, want nil (fault fires once)", err)
			}
		})
	}
}

func sameEntries(a, b []store.Entry) bool {
	m := make(map[string]store.Revision, len(a))
	for _, e := range a {
		m[e.Key] = e.Revision
	}
	if len(a) != len(b) {
		return false
	}
	for _, e := range b {
		if m[e.Key] != e.Revision {
			return false
		}
	}
	return true
}

func TestFaultStoreMaybeLandNextWrite(t *testing.T) {
	ctx := context.Background()
	fs, inner := newFaultStore(t)
	f := fs.MaybeLandNextWrite(Match{Prefix: "split."})
	_, _, err := fs.Create(ctx, store.Durable, "split.a", []byte("v1"))
	wantRetryable(t, err, "injected: reply lost after the write landed")
	e, ok, err := inner.Get(ctx, store.Durable, "split.a")
	if !ok || err != nil || string(e.Value) != "v1" {
		t.Fatalf("the write did not land: %v %v %q", ok, err, e.Value)
	}
	if !f.Fired() {
		t.Fatal("fault did not report Fired")
	}
	if _, _, err := fs.Update(ctx, store.Durable, "split.a", []byte("v2"), e.Revision); err != nil {
		t.Fatalf("second write: %v, want nil", err)
	}
}

func TestFaultStoreMatchSelects(t *testing.T) {
	ctx := context.Background()
	fs, _ := newFaultStore(t)
	f := fs.DropNextWrite(Match{Prefix: "split.", Value: OwnerIs("w2")})
	// Wrong keyspace, wrong prefix, wrong value: none fire.
	if _, _, err := fs.Create(ctx, store.Ephemeral, "split.a", []byte(`{"owner":"w2"}`)); err != nil {
		t.Fatalf("ephemeral write: %v", err)
	}
	if _, _, err := fs.Create(ctx, store.Durable, "spec.a", []byte(`{"owner":"w2"}`)); err != nil {
		t.Fatalf("spec write: %v", err)
	}
	if _, _, err := fs.Create(ctx, store.Durable, "split.a", []byte(`{"owner":"w1"}`)); err != nil {
		t.Fatalf("w1 write: %v", err)
	}
	if _, err := fs.Delete(ctx, store.Durable, "split.a", 0); err != nil {
		t.Fatalf("delete: %v (a value predicate never matches a delete)", err)
	}
	if f.Fired() {
		t.Fatal("fault fired on a write it does not match")
	}
	_, _, err := fs.Create(ctx, store.Durable, "split.b", []byte(`{"owner":"w2"}`))
	wantRetryable(t, err, "injected: write dropped")
}

func TestFaultStorePartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		fs, inner := newFaultStore(t)
		other := NewFaultStore(inner)
		w, err := fs.Watch(ctx, store.Durable, "")
		if err != nil {
			t.Fatal(err)
		}
		if ev := <-w.Events(); ev.Kind != store.SnapshotDone {
			t.Fatalf("first event = %v, want snapshot-done", ev.Kind)
		}
		fs.Partition()
		for range w.Events() {
		}
		wantRetryable(t, w.Err(), "injected: partitioned")

		ops := map[string]func(s store.Store) error{
			"create": func(s store.Store) error { _, _, err := s.Create(ctx, store.Durable, "k", nil); return err },
			"update": func(s store.Store) error { _, _, err := s.Update(ctx, store.Durable, "k", nil, 1); return err },
			"get":    func(s store.Store) error { _, _, err := s.Get(ctx, store.Durable, "k"); return err },
			"delete": func(s store.Store) error { _, err := s.Delete(ctx, store.Durable, "k", 0); return err },
			"list":   func(s store.Store) error { _, err := s.List(ctx, store.Ephemeral, ""); return err },
			"watch":  func(s store.Store) error { _, err := s.Watch(ctx, store.Ephemeral, ""); return err },
		}
		for name, op := range ops {
			if err := op(fs); coordination.KindOf(err) != coordination.Retryable {
				t.Errorf("%s while partitioned: %v, want Retryable", name, err)
			}
		}
		// Other members are unaffected.
		if _, ok, err := other.Create(ctx, store.Durable, "k", []byte("x")); !ok || err != nil {
			t.Fatalf("other member's create: %v %v", ok, err)
		}
		fs.Heal()
		if _, ok, err := fs.Get(ctx, store.Durable, "k"); !ok || err != nil {
			t.Fatalf("get after heal: %v %v", ok, err)
		}
	})
}

func TestFaultStoreHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := newFaultStore(t)
		fs.Hang()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := fs.Get(ctx, store.Durable, "k")
		if coordination.KindOf(err) != coordination.Retryable || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hung get: %v, want Retryable wrapping the deadline", err)
		}
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Fatalf("hung get returned after %v, want at its deadline", d)
		}
		done := make(chan error)
		go func() { _, _, err := fs.Create(t.Context(), store.Durable, "k", nil); done <- err }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("create returned %v while hung", err)
		default:
		}
		fs.Unhang()
		if err := <-done; err != nil {
			t.Fatalf("create after unhang: %v", err)
		}
	})
}

func TestFaultStorePanicNextWrite(t *testing.T) {
	fs, inner := newFaultStore(t)
	f := fs.PanicNextWrite(Match{Prefix: "split."})
	func() {
		defer func() {
			if r := recover(); r != "injected panic" {
				t.Fatalf("recovered %v, want the injected panic", r)
			}
		}()
		_, _, _ = fs.Create(context.Background(), store.Durable, "split.a", nil)
	}()
	if !f.Fired() {
		t.Fatal("fault did not report Fired")
	}
	if _, ok, _ := inner.Get(context.Background(), store.Durable, "split.a"); ok {
		t.Fatal("a panicking write landed")
	}
}

func TestFaultStoreBlockWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		fs, _ := newFaultStore(t)
		w, err := fs.Watch(ctx, store.Durable, "")
		if err != nil {
			t.Fatal(err)
		}
		<-w.Events() // snapshot-done
		fs.BlockWatches()
		for range w.Events() {
		}
		wantRetryable(t, w.Err(), "injected: watch broken")
		_, err = fs.Watch(ctx, store.Durable, "")
		wantRetryable(t, err, "injected: watch broken")
		if _, ok, err := fs.Create(ctx, store.Durable, "k", nil); !ok || err != nil {
			t.Fatalf("create during a watch outage: %v %v", ok, err)
		}
		fs.UnblockWatches()
		w, err = fs.Watch(ctx, store.Durable, "")
		if err != nil {
			t.Fatalf("watch after unblocking: %v", err)
		}
		w.Stop()
	})
}

// watchHook is a store whose Watch runs before first, then opens the inner
// watch: it lets a test act while FaultStore.Watch is between its checks.
type watchHook struct {
	store.Store
	before func()
}

func (h *watchHook) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	h.before()
	return h.Store.Watch(ctx, ks, prefix)
}

func TestFaultStoreBlockWatchesDuringWatchBreaksIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, inner := newFaultStore(t)
		hook := &watchHook{Store: inner}
		fs := NewFaultStore(hook)
		hook.before = fs.BlockWatches
		w, err := fs.Watch(t.Context(), store.Durable, "")
		if err != nil {
			t.Fatal(err)
		}
		for range w.Events() {
		}
		wantRetryable(t, w.Err(), "injected: watch broken")
	})
}

// bigPlan is a final plan of small splits and, last, one whose descriptor
// alone is above a 4 KiB value cap.
type bigPlan struct{}

func (bigPlan) Fingerprint() string { return "big:v1" }

func (bigPlan) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for _, id := range []coordination.SplitID{"s-0", "s-1", "s-2", "s-3"} {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: id, Descriptor: []byte("small")}})
	}
	plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: "s-big", Descriptor: make([]byte, 8<<10)}})
	return plan, nil
}

func TestFaultStoreForwardsTheValueCap(t *testing.T) {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	inner := memstore.New(cfg.LeaseDuration, memstore.WithMaxValueSize(4<<10))
	t.Cleanup(func() { _ = inner.Close() })
	fs := NewFaultStore(inner)
	if n, ok := store.MaxValueSize(fs); n != 4<<10 || !ok || fs.MaxValueSize() != 4<<10 {
		t.Fatalf("value cap through the fault store: MaxValueSize = (%d, %v), method %d; want 4096", n, ok, fs.MaxValueSize())
	}

	// An oversized plan through the wrapped store is refused whole: the
	// leader checks every split against the cap before seeding any.
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := actors.Spawn(e, fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abort)
	w := coordination.NewWaker()
	c.SetWaker(w)
	if err := c.Start(bigPlan{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for err == nil {
		select {
		case <-w.C():
		case <-deadline:
			t.Fatal("no Fatal within 10s for a plan above the value cap")
		}
		_, err = c.Poll()
	}
	want := "split s-big: spec record is"
	if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), want) {
		t.Errorf("latched error %v; want Fatal containing %q", err, want)
	}
	entries, lerr := inner.List(context.Background(), store.Durable, "")
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Key, "spec.") || strings.HasPrefix(e.Key, "split.") {
			t.Errorf("part of the refused plan was seeded: %s", e.Key)
		}
	}
}

func TestFaultStoreLandLateNextWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, inner := newFaultStore(t)
		f := fs.LandLateNextWrite(Match{Prefix: "split."})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := fs.Create(ctx, store.Durable, "split.a", []byte("v1"))
		wantRetryable(t, err, "injected: write landed after the caller's timeout")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want it to wrap the caller's context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 200*time.Millisecond {
			t.Fatalf("the write returned after %v, want at the caller's timeout (200ms)", took)
		}
		if e, ok, err := inner.Get(t.Context(), store.Durable, "split.a"); !ok || err != nil || string(e.Value) != "v1" {
			t.Fatalf("the late write did not land: %v %v %q", ok, err, e.Value)
		}
		if !f.Fired() {
			t.Fatal("fault did not report Fired")
		}
		if _, _, err := fs.Create(t.Context(), store.Durable, "split.b", []byte("v1")); err != nil {
			t.Fatalf("second write: %v, want nil (the fault fires once)", err)
		}
	})
}

func TestFaultStorePersistentFaultsUntilRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, inner := newFaultStore(t)
		late := fs.LandLateEveryWrite(Match{Prefix: "late."})
		maybe := fs.MaybeLandEveryWrite(Match{Prefix: "maybe."})
		for i := range 3 {
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			_, _, err := fs.Create(ctx, store.Durable, fmt.Sprintf("late.%d", i), nil)
			cancel()
			wantRetryable(t, err, "injected: write landed after the caller's timeout")
			_, _, err = fs.Create(t.Context(), store.Durable, fmt.Sprintf("maybe.%d", i), nil)
			wantRetryable(t, err, "injected: reply lost after the write landed")
		}
		if es, _ := inner.List(t.Context(), store.Durable, ""); len(es) != 6 {
			t.Fatalf("%d keys landed, want 6 (every faulted write lands)", len(es))
		}
		fs.Remove(late)
		if _, _, err := fs.Create(t.Context(), store.Durable, "late.x", nil); err != nil {
			t.Fatalf("after Remove: %v, want nil", err)
		}
		_, _, err := fs.Create(t.Context(), store.Durable, "maybe.x", nil)
		wantRetryable(t, err, "injected: reply lost after the write landed")
		fs.Remove(maybe)
		if _, _, err := fs.Create(t.Context(), store.Durable, "maybe.y", nil); err != nil {
			t.Fatalf("after Remove: %v, want nil", err)
		}
	})
}

func TestFaultStoreFailReads(t *testing.T) {
	ctx := context.Background()
	fs, _ := newFaultStore(t)
	for _, k := range []string{"job.a", "progress.a"} {
		if _, _, err := fs.Create(ctx, store.Durable, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	f := fs.FailReads(store.Durable, "job.")
	for _, tc := range []struct {
		name string
		read func() error
		fail bool
	}{
		{"get under the prefix", func() error { _, _, err := fs.Get(ctx, store.Durable, "job.a"); return err }, true},
		{"get elsewhere", func() error { _, _, err := fs.Get(ctx, store.Durable, "progress.a"); return err }, false},
		{"get in the other keyspace", func() error { _, _, err := fs.Get(ctx, store.Ephemeral, "job.a"); return err }, false},
		{"list of a wider prefix", func() error { _, err := fs.List(ctx, store.Durable, ""); return err }, true},
		{"list of a narrower prefix", func() error { _, err := fs.List(ctx, store.Durable, "job.a"); return err }, true},
		{"list of another prefix", func() error { _, err := fs.List(ctx, store.Durable, "progress."); return err }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			if tc.fail {
				wantRetryable(t, err, "injected: read failed")
			} else if err != nil {
				t.Fatalf("read: %v, want nil", err)
			}
		})
	}
	if _, ok, err := fs.Update(ctx, store.Durable, "job.a", []byte("v"), 1); !ok || err != nil {
		t.Fatalf("a write while reads fail: %v %v, want it to work", ok, err)
	}
	if !f.Fired() {
		t.Fatal("fault did not report Fired")
	}
	fs.Remove(f)
	if _, _, err := fs.Get(ctx, store.Durable, "job.a"); err != nil {
		t.Fatalf("after Remove: %v", err)
	}
}
