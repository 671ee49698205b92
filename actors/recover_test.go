package actors

import (
	"testing"
	"testing/synctest"

	"github.com/anthdm/hollywood/actor"
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
)

type panicky struct{}

func TestActorPanicSurfacesAsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		pid := r.e.Spawn(func() actor.Receiver { return panicky{} }, "panicky", actor.WithMiddleware(recoverMiddleware(w.c.v, "panicky")))
		for range 5 { // hollywood would kill the process on the fourth restart
			r.e.Send(pid, "please panic")
		}
		settle()
		evs, err := w.c.Poll()
		for err == nil && len(evs) > 0 {
			evs, err = w.c.Poll()
		}
		if coordination.KindOf(err) != coordination.Fatal || err.(*coordination.Error).Reason != "internal error: boom" {
			t.Fatalf("Poll: %v, %v", evs, err)
		}
		<-r.e.Poison(pid).Done()
		w.c.Abort()
	})
}

func (panicky) Receive(c *actor.Context) {
	if _, ok := c.Message().(string); ok {
		panic("boom")
	}
}
