package actors

import (
	"context"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/store/memstore"
)

func TestSpawnValidates(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(30 * time.Second)
	tests := []struct {
		name   string
		e      *actor.Engine
		st     *memstore.Store
		mutate func(*coordination.Config)
		want   string
	}{
		{"config rule passes through", e, st, func(c *coordination.Config) { c.OpTimeout = time.Millisecond }, "OpTimeout must be >= 50ms, got 1ms"},
		{"instance id rule passes through", e, st, func(c *coordination.Config) { c.InstanceID = "pod.1" }, `InstanceID may only contain [A-Za-z0-9_-], got '.' at byte 3 in "pod.1" (replace dots in pod names, for example with '-')`},
		{"lease TTL must match", e, memstore.New(20 * time.Second), func(c *coordination.Config) {}, "store lease TTL 20s differs from Config.LeaseDuration 30s; build the store with the same duration"},
		{"nil engine", nil, st, func(c *coordination.Config) {}, "Spawn needs an actor engine, got nil"},
		{"nil store", e, nil, func(c *coordination.Config) {}, "Spawn needs a store, got nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := coordination.DefaultConfig()
			tt.mutate(&cfg)
			var c *Coordinator
			var err error
			if tt.st == nil {
				c, err = Spawn(tt.e, nil, cfg)
			} else {
				c, err = Spawn(tt.e, tt.st, cfg)
			}
			if c != nil || coordination.KindOf(err) != coordination.Fatal {
				t.Fatalf("got %v, %v; want Fatal", c, err)
			}
			if got := err.(*coordination.Error).Reason; got != tt.want {
				t.Fatalf("reason %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSpawnResolvesInstanceID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		cfg := workertest.Config(t, r.clk, "")
		c, err := Spawn(r.e, r.st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Abort()
		if !regexp.MustCompile(`^spate-[0-9a-f]{32}$`).MatchString(c.InstanceID()) {
			t.Fatalf("generated id %q", c.InstanceID())
		}
		c2, err := Spawn(r.e, r.st, workertest.Config(t, r.clk, "w-7"))
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Abort()
		if c2.InstanceID() != "w-7" {
			t.Fatalf("id %q", c2.InstanceID())
		}
		if c.v.Nonce == c2.v.Nonce || len(c.v.Nonce) != 32 {
			t.Fatalf("nonces %q %q", c.v.Nonce, c2.v.Nonce)
		}
	})
}

// countingStore counts store calls, to prove Spawn and misuse do no I/O.
type countingStore struct {
	*memstore.Store
	calls int
}

func (s *countingStore) Get(ctx context.Context, ks storeKeyspace, key string) (storeEntry, bool, error) {
	s.calls++
	return s.Store.Get(ctx, ks, key)
}

func TestMisuse(t *testing.T) {
	fatal := func(t *testing.T, err error, reason string) {
		t.Helper()
		var ce *coordination.Error
		if err == nil || coordination.KindOf(err) != coordination.Fatal {
			t.Fatalf("got %v, want Fatal %q", err, reason)
		}
		ce = err.(*coordination.Error)
		if ce.Reason != reason {
			t.Fatalf("reason %q, want %q", ce.Reason, reason)
		}
	}
	calls := func(t *testing.T, c *Coordinator, reason string) {
		t.Helper()
		fatal(t, c.Commit("a", coordination.SplitProgress{}), reason)
		fatal(t, c.Fail("a", 1, "x"), reason)
		fatal(t, c.Release("a"), reason)
		fatal(t, c.ReleaseDrained("a"), reason)
		fatal(t, c.DeclineRevoke("a"), reason)
		errs := c.CommitFinal([]coordination.Commit{{Split: "a"}, {Split: "b"}})
		if len(errs) != 2 {
			t.Fatalf("CommitFinal returned %d results", len(errs))
		}
		for _, err := range errs {
			fatal(t, err, reason)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		c, err := Spawn(r.e, r.st, workertest.Config(t, r.clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Poll()
		fatal(t, err, "Poll called before Start")
		calls(t, c, "coordinator used before Start")
		fatal(t, c.Start(nil), "Start needs a planner")
		fatal(t, c.Start(&workertest.Planner{}), "the planner fingerprint must not be empty")
		if err := c.Start(workertest.FinalPlan()); err != nil {
			t.Fatal(err)
		}
		fatal(t, c.Start(workertest.FinalPlan()), "Start called twice")
		if err := c.Depart(); err != nil {
			t.Fatalf("Depart: %v", err)
		}
		calls(t, c, "coordinator departed")
		fatal(t, c.Depart(), "coordinator departed")
		fatal(t, c.Start(workertest.FinalPlan()), "coordinator departed")
		if evs, err := c.Poll(); evs != nil || err != nil {
			t.Fatalf("Poll after Depart: %v, %v", evs, err)
		}
		c.SetWaker(coordination.NewWaker())
		c.SetStop(nil)

		a, err := Spawn(r.e, r.st, workertest.Config(t, r.clk, "w2"))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(workertest.FinalPlan()); err != nil {
			t.Fatal(err)
		}
		a.Abort()
		_, err = a.Poll()
		fatal(t, err, "coordinator aborted")
		calls(t, a, "coordinator aborted")
		fatal(t, a.Depart(), "coordinator aborted")
	})
}

func TestDepartBeforeStartDoesNoIO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		e, _ := actor.NewEngine(actor.NewEngineConfig())
		st := &countingStore{Store: memstore.New(1500*time.Millisecond, memstore.WithClock(clk))}
		c, err := Spawn(e, st, workertest.Config(t, clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Depart(); err != nil {
			t.Fatal(err)
		}
		if st.calls != 0 {
			t.Fatalf("%d store calls", st.calls)
		}
	})
}
