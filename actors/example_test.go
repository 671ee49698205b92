package actors_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store/memstore"
)

// onePlan is a Planner with a fixed, final plan.
type onePlan struct{ ids []coordination.SplitID }

func (onePlan) Fingerprint() string { return "example:v1" }

func (p onePlan) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for _, id := range p.ids {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: id}})
	}
	return plan, nil
}

// ExampleSpawn runs one worker through a small bounded job: it gains the
// split, commits it completed, and receives the verdict.
func ExampleSpawn() {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	st := memstore.New(cfg.LeaseDuration)
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		panic(err)
	}
	w := coordination.NewWaker()
	c.SetWaker(w)
	if err := c.Start(onePlan{ids: []coordination.SplitID{"part-0"}}); err != nil {
		panic(err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case <-w.C():
		case <-deadline:
			panic("no verdict")
		}
		evs, err := c.Poll()
		if err != nil {
			panic(err)
		}
		for _, ev := range evs {
			switch ev := ev.(type) {
			case coordination.Gained:
				fmt.Println("gained", ev.Split.ID, "at epoch", ev.Epoch)
				if err := c.Commit(ev.Split.ID, coordination.SplitProgress{Watermark: 100, Completed: true}); err != nil {
					panic(err)
				}
			case coordination.AllComplete:
				fmt.Println("all complete")
				done = true
			}
		}
	}
	if err := c.Depart(); err != nil {
		panic(err)
	}
	// Output:
	// gained part-0 at epoch 1
	// all complete
}

// ExampleCoordinator_Healthy serves an orchestrator's readiness probe: 200
// while the worker holds its session and its watches are live, 503 with
// the reason otherwise.
func ExampleCoordinator_Healthy() {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	c, err := actors.Spawn(e, memstore.New(cfg.LeaseDuration), cfg)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := c.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	probe := func() {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	probe() // not started yet
	if err := c.Start(onePlan{ids: []coordination.SplitID{"part-0"}}); err != nil {
		panic(err)
	}
	for deadline := time.Now().Add(10 * time.Second); c.Healthy() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			panic(c.Healthy())
		}
	}
	probe()
	if err := c.Depart(); err != nil {
		panic(err)
	}
	probe()
	// Output:
	// 503 coordination error (fatal): coordinator used before Start
	// 200 ready
	// 503 coordination error (fatal): coordinator departed
}

// failer is a user's own actor: told a Gained, it fails that tenancy
// through the coordinator actor and hands the reply on.
type failer struct {
	coordinator *actor.PID
	replies     chan<- error
}

func (f failer) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case coordination.Gained:
		c.Send(f.coordinator, messages.FailSplit{Split: m.Split.ID, Epoch: m.Epoch, Reason: "poison record"})
	case messages.FailSplitReply:
		f.replies <- m.Err
	}
}

// ExampleCoordinator_PID has a user's actor fail a split by message: it
// sends FailSplit to the coordinator actor and receives FailSplitReply. A
// second FailSplit of the same tenancy finds it no longer held.
func ExampleCoordinator_PID() {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.MaxAttempts = 1 // the failed split is quarantined, never claimed again
	c, err := actors.Spawn(e, memstore.New(cfg.LeaseDuration), cfg)
	if err != nil {
		panic(err)
	}
	w := coordination.NewWaker()
	c.SetWaker(w)
	if err := c.Start(onePlan{ids: []coordination.SplitID{"part-0"}}); err != nil {
		panic(err)
	}
	replies := make(chan error, 1)
	user := e.Spawn(func() actor.Receiver { return failer{coordinator: c.PID(), replies: replies} }, "failer")
	var gained coordination.Gained
	for gained.Split.ID == "" {
		select {
		case <-w.C():
		case <-time.After(10 * time.Second):
			panic("nothing gained")
		}
		evs, err := c.Poll()
		if err != nil {
			panic(err)
		}
		for _, ev := range evs {
			if g, ok := ev.(coordination.Gained); ok {
				gained = g
			}
		}
	}
	for range 2 {
		e.Send(user, gained)
		fmt.Println("fail", gained.Split.ID, "at epoch", gained.Epoch, "->", <-replies)
	}
	<-e.Poison(user).Done()
	if err := c.Depart(); err != nil {
		panic(err)
	}
	// Output:
	// fail part-0 at epoch 1 -> <nil>
	// fail part-0 at epoch 1 -> coordination error (fenced): split part-0: not held here; nothing was written
}

// observer is a user's own actor that subscribes to a coordinator's events
// and prints them: a status page's or a metrics exporter's view.
type observer struct {
	coordinator *actor.PID
	done        chan<- struct{}
}

func (o observer) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		c.Send(o.coordinator, messages.Subscribe{})
	case messages.SubscribeReply:
		fmt.Println("observer: subscribed; held", len(m.Held))
		o.done <- struct{}{}
	case coordination.Gained:
		fmt.Println("observer: gained", m.Split.ID)
	case coordination.AllComplete:
		fmt.Println("observer: all complete")
		o.done <- struct{}{}
	}
}

// ExampleCoordinator_PID_subscribe has a user's actor observe the
// coordinator: after Subscribe it receives a copy of every event Poll
// hands out, while the driver (here, this loop) still acts on each.
func ExampleCoordinator_PID_subscribe() {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := actors.Spawn(e, memstore.New(cfg.LeaseDuration), cfg)
	if err != nil {
		panic(err)
	}
	w := coordination.NewWaker()
	c.SetWaker(w)
	done := make(chan struct{}, 2)
	e.Spawn(func() actor.Receiver { return observer{coordinator: c.PID(), done: done} }, "observer")
	<-done // subscribed before the job starts: it sees every event
	if err := c.Start(onePlan{ids: []coordination.SplitID{"part-0"}}); err != nil {
		panic(err)
	}
	for complete := false; !complete; {
		select {
		case <-w.C():
		case <-time.After(10 * time.Second):
			panic("no verdict")
		}
		evs, err := c.Poll()
		if err != nil {
			panic(err)
		}
		for _, ev := range evs {
			switch ev := ev.(type) {
			case coordination.Gained:
				if err := c.Commit(ev.Split.ID, coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
					panic(err)
				}
			case coordination.AllComplete:
				complete = true
			}
		}
	}
	<-done
	if err := c.Depart(); err != nil {
		panic(err)
	}
	// Output:
	// observer: subscribed; held 0
	// observer: gained part-0
	// observer: all complete
}
