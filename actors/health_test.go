package actors_test

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store/memstore"
	"github.com/spate-go/coordination/testkit"
)

// TestHealthyFollowsSessionAndWatches walks a worker through every state
// Healthy reports: before Start, joined, partitioned (watches broken, then
// the session starved), healed, departed.
func TestHealthyFollowsSessionAndWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, _, fs, c := faultedWorker(t)
		defer c.Abort()
		wantHealth(t, c, coordination.Fatal, "used before Start")
		if err := c.Start(onePlan{ids: []coordination.SplitID{"a"}}); err != nil {
			t.Fatal(err)
		}
		until(t, clk, "healthy after joining", func() bool { return c.Healthy() == nil })

		fs.Partition()
		synctest.Wait()
		wantHealth(t, c, coordination.Retryable, "watches are not live")
		until(t, clk, "session starved", func() bool {
			err := c.Healthy()
			return err != nil && strings.Contains(err.Error(), "holds no session")
		})
		fs.Heal()
		until(t, clk, "healthy after the partition healed", func() bool { return c.Healthy() == nil })

		if err := c.Depart(); err != nil {
			t.Fatal(err)
		}
		wantHealth(t, c, coordination.Fatal, "departed")
	})
}

// wantHealth fails unless Healthy returns an error of kind k containing
// fragment.
func wantHealth(t *testing.T, c *actors.Coordinator, k coordination.ErrorKind, fragment string) {
	t.Helper()
	err := c.Healthy()
	if coordination.KindOf(err) != k || err == nil || !strings.Contains(err.Error(), fragment) {
		t.Fatalf("Healthy() = %v, want %v containing %q", err, k, fragment)
	}
}

// until advances the mock clock in 100ms steps, letting the bubble settle
// after each, until cond holds; it gives up after 30s of clock time.
func until(t *testing.T, clk *clock.Mock, what string, cond func() bool) {
	t.Helper()
	for waited := time.Duration(0); !cond(); waited += 100 * time.Millisecond {
		if waited > 30*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
		clk.Add(100 * time.Millisecond)
		synctest.Wait()
		time.Sleep(20 * time.Millisecond) // bubble time: lets real-time backoffs run
		synctest.Wait()
	}
}

// faultedWorker spawns the worker w1, not started, over a FaultStore on a
// memstore, both on a mock clock; the caller aborts it.
func faultedWorker(t *testing.T) (*clock.Mock, *memstore.Store, *testkit.FaultStore, *actors.Coordinator) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := testkit.HarnessConfig()
	cfg.InstanceID = "w1"
	cfg.Clock = clk
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	mem := memstore.New(cfg.LeaseDuration, memstore.WithClock(clk))
	fs := testkit.NewFaultStore(mem)
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := actors.Spawn(e, fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clk, mem, fs, c
}
