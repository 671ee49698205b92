package actors

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// rig is one engine, one memstore and one mock clock inside a bubble.
type rig struct {
	tb  testing.TB
	e   *actor.Engine
	st  *memstore.Store
	clk *clock.Mock
}

func newRig(tb testing.TB) *rig {
	tb.Helper()
	e, clk := workertest.NewEngine(tb)
	return &rig{tb: tb, e: e, st: memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), clk: clk}
}

// advance moves the mock clock by d in steps of at most lease/12, letting
// every goroutine of the bubble settle between steps.
func (r *rig) advance(d time.Duration) {
	step := 125 * time.Millisecond
	for d > 0 {
		s := min(step, d)
		r.clk.Add(s)
		settle()
		// Yield bubble (real) time so that real-time backoffs and I/O
		// bounds make progress between clock steps.
		time.Sleep(20 * time.Millisecond)
		settle()
		d -= s
	}
}

// settle waits until every goroutine of the bubble is durably blocked.
func settle() { synctest.Wait() }

// collect polls c, appending events to *evs, and fails on an error.
func collect(tb testing.TB, c *Coordinator, evs *[]coordination.Event) {
	tb.Helper()
	got, err := c.Poll()
	if err != nil {
		tb.Fatalf("Poll: %v", err)
	}
	*evs = append(*evs, got...)
}

type (
	storeKeyspace = store.Keyspace
	storeEntry    = store.Entry
)

// startOn starts worker id on st with the test configuration, changed by
// mut.
func (r *rig) startOn(st store.Store, id string, p coordination.Planner, mut ...func(*coordination.Config)) *member {
	r.tb.Helper()
	cfg := workertest.Config(r.tb, r.clk, id)
	for _, f := range mut {
		f(&cfg)
	}
	c, err := Spawn(r.e, st, cfg)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(c.Abort)
	if err := c.Start(p); err != nil {
		r.tb.Fatal(err)
	}
	return &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
}

// start starts worker id on the rig's store; see startOn.
func (r *rig) start(id string, p coordination.Planner, mut ...func(*coordination.Config)) *member {
	r.tb.Helper()
	return r.startOn(r.st, id, p, mut...)
}

// pump polls m and folds its events.
func (m *member) pump(tb testing.TB) {
	tb.Helper()
	got, err := m.c.Poll()
	if err != nil {
		tb.Fatalf("%s: Poll: %v", m.c.InstanceID(), err)
	}
	for _, ev := range got {
		switch e := ev.(type) {
		case coordination.Gained:
			m.held[e.Split.ID] = e
		case coordination.Lost:
			delete(m.held, e.Split)
		}
	}
	m.evs = append(m.evs, got...)
}

// until advances the clock until cond holds, pumping every member.
func (r *rig) until(what string, limit time.Duration, ms []*member, cond func() bool) {
	r.tb.Helper()
	for waited := time.Duration(0); ; waited += 125 * time.Millisecond {
		for _, m := range ms {
			m.pump(r.tb)
		}
		if cond() {
			return
		}
		if waited > limit {
			var s string
			for _, m := range ms {
				s += fmt.Sprintf("\n%s: %v", m.c.InstanceID(), m.evs)
			}
			r.tb.Fatalf("timed out waiting for %s:%s", what, s)
		}
		r.advance(125 * time.Millisecond)
	}
}

func verdictOf(m *member) coordination.Event {
	if len(m.evs) == 0 {
		return nil
	}
	switch e := m.evs[len(m.evs)-1].(type) {
	case coordination.AllComplete, coordination.Stalled:
		return e
	}
	return nil
}

func hasEvent[E coordination.Event](m *member) (E, bool) {
	for _, ev := range m.evs {
		if e, ok := ev.(E); ok {
			return e, true
		}
	}
	var zero E
	return zero, false
}

// member is one worker of a small in-package fleet with its event log.
type member struct {
	c    *Coordinator
	evs  []coordination.Event
	held map[coordination.SplitID]coordination.Gained
}
