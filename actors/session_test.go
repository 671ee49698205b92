package actors

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
)

func TestLiveTwinsAreFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a")
		w := r.start("w1", p)
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		twin := r.start("w1", p)
		var err error
		for i := 0; i < 80 && err == nil; i++ {
			r.advance(125 * time.Millisecond)
			if _, err = w.c.Poll(); err == nil {
				_, err = twin.c.Poll()
			}
		}
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), `InstanceID "w1" is in use by another live worker`) {
			t.Fatalf("twins: %v", err)
		}
	})
}

func TestStoreOutageSelfFencesAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		hs := &hangingStore{Store: r.st}
		c, err := Spawn(r.e, hs, workertest.Config(t, r.clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Abort)
		w := &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		if err := c.Start(workertest.FinalPlan("a")); err != nil {
			t.Fatal(err)
		}
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		first := w.held["a"].Epoch
		hs.hang.Store(true)
		r.until("self-fenced", 5*time.Second, []*member{w}, func() bool { return len(w.held) == 0 })
		if _, ok := hasEvent[coordination.Lost](w); !ok {
			t.Fatalf("no Lost: %v", w.evs)
		}
		hs.hang.Store(false)
		r.until("re-gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		if g := w.held["a"]; g.Epoch <= first {
			t.Fatalf("re-gained %+v after epoch %d", g, first)
		}
		if err := c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
